from __future__ import annotations

import os
from pathlib import Path

import pytest

from claw.config import compose_config

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

# The dataset path (what most tests exercise); `python train.py`'s defaults are the personal-agent job.
DATASET = ["mode=rl", "algo=grpo", "source=dataset", "judge=verifier"]

# A small, fast end-to-end configuration on the tiny random model (a later override of a group wins).
TINY = [
    *DATASET,
    "model=tiny",
    "logger=none",
    "steps=2",
    "batch_size=8",
    "source.n=4",
    "source.prompts_per_generate=2",
    "source.max_new_tokens=8",
    "source.eval_size=4",
    "source.eval_max_new_tokens=8",
    "optim.micro_batch_size=4",
    "fsync=false",
]


def make_cfg(overrides: list[str], run_dir: Path | None = None):
    """Compose like `python train.py <overrides>`, on the dataset groups unless the test picks a group or
    an experiment."""
    picked = {o.split("=", 1)[0] for o in overrides}
    base = (
        []
        if any(k.lstrip("+").startswith(("experiment", "sweep")) for k in picked)
        else [g for g in DATASET if g.split("=")[0] not in picked]
    )
    cfg = compose_config(base + overrides, run_dir)
    if cfg.judge.kind == "rule" and "judge.reader_head" not in picked:
        # The fast suite reads feedback with the rules alone: the default learned head loads the real SmolLM2,
        # which only the slow tests do (tests/test_judge_reader_head.py covers the head and its override logic)
        cfg.judge.reader_head = None
    return cfg


@pytest.fixture(scope="session")
def tiny_policy():
    from claw.models import load_tiny

    return load_tiny()


@pytest.fixture
def deadline():
    """`with deadline(s, what):` fails the test when the block runs past `s` seconds.

    SIGALRM, not a thread: a regex holds the GIL for as long as it backtracks, so a watching thread's `join` cannot
    return until the regex does, while the regex engine checks for signals as it runs and the alarm stops it."""
    import contextlib
    import signal

    @contextlib.contextmanager
    def within(seconds: int, what: str):
        def expire(*_):
            raise TimeoutError(f"{what} ran past {seconds} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return within
