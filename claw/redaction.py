"""No secret leaves the process: the run's `config.yaml` and the logger's config hold API keys redacted.

A secret is the value of any key named `api_key` (or ending in `_api_key`), at any depth. On disk,
a secret that came from the environment (`${oc.env:CLAW_API_KEY,null}`) keeps that interpolation,
so `resume=` reads the environment again; one given literally (`source.api_key=...`) is written as
`REDACTED`, and `resume=` asks for it again. The logger (W&B) gets `REDACTED` for every set secret.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

REDACTED = "<redacted>"


def is_secret(key: Any) -> bool:
    return isinstance(key, str) and (key == "api_key" or key.endswith("_api_key"))


def _redact(resolved: Any, raw: Any) -> Any:
    """`resolved` with each set secret replaced by its env interpolation from `raw` (unresolved), else REDACTED."""
    if isinstance(resolved, dict):
        out = {}
        for key, value in resolved.items():
            raw_value = raw.get(key) if isinstance(raw, dict) else None
            if is_secret(key) and value is not None:
                env = isinstance(raw_value, str) and raw_value.startswith("${oc.env:")
                out[key] = raw_value if env else REDACTED
            else:
                out[key] = _redact(value, raw_value)
        return out
    if isinstance(resolved, list):
        raws = raw if isinstance(raw, list) and len(raw) == len(resolved) else [None] * len(resolved)
        return [_redact(v, r) for v, r in zip(resolved, raws)]
    return resolved


def for_disk(cfg: DictConfig) -> DictConfig:
    """The resolved config with secrets as their env interpolations (or REDACTED): what `config.yaml` holds."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    return OmegaConf.create(_redact(resolved, OmegaConf.to_container(cfg, resolve=False)))


def for_logger(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as a plain dict with every set secret REDACTED (W&B's run config)."""
    return _redact(OmegaConf.to_container(cfg, resolve=True), None)


def save_config(cfg: DictConfig, path: str | Path) -> None:
    OmegaConf.save(for_disk(cfg), path)


def redacted_left(cfg: DictConfig) -> list[str]:
    """Dotted keys whose secret is still REDACTED (a resumed run needs them passed again)."""
    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{prefix}{key}"
                if is_secret(key) and value == REDACTED:
                    found.append(path)
                walk(value, path + ".")

    walk(OmegaConf.to_container(cfg, resolve=False), "")
    return found
