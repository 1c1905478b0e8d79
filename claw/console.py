"""A quiet console: a run prints claw's lines, one progress bar and the final table.

Everything else — vLLM's INFO/WARNING lines on every weight reload, library deprecation warnings,
Lightning's start-up notes and tips — goes to `<run dir>/engine.log`. `verbose=true` leaves them
on the console. Call `quiet_console` before vLLM is imported: vLLM installs its own stdout
handler at import unless `VLLM_CONFIGURE_LOGGING=0`.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

# Loggers whose records go to engine.log: the engines and the libraries around the trainer.
LIBRARY_LOGGERS = (
    "vllm",
    "lightning",
    "lightning.pytorch",
    "lightning.fabric",
    "pytorch_lightning",
    "transformers",
    "py.warnings",
    "httpx",
)


def quiet_console(run_dir: str | Path, verbose: bool = False) -> Path | None:
    """Send library logging and Python warnings to `<run_dir>/engine.log` (unless `verbose`).

    Returns the log's path."""
    if verbose:
        return None
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")  # no stdout handler of vLLM's own; its records reach ours
    path = Path(run_dir) / "engine.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.claw_engine_log = True  # type: ignore[attr-defined]  # a later run in this process replaces it
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, logging.StreamHandler)]:
            if not isinstance(h := old, logging.FileHandler) or getattr(h, "claw_engine_log", False):
                logger.removeHandler(old)
                if isinstance(old, logging.FileHandler):
                    old.close()
        logger.addHandler(handler)
        if name == "vllm":
            logger.setLevel(logging.INFO)  # without its own configuration vLLM's logger would inherit WARNING
        logger.propagate = False
    logging.captureWarnings(True)  # warnings.warn(...) -> the "py.warnings" logger -> engine.log
    # The categories the interpreter hides by default (library deprecations, unclosed resources) are shown once
    # per location. Only these: a catch-all "default" put first would override every filter set before it (a
    # test runner's, train.py's own), for the rest of the process.
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("default", category=category)
    return path
