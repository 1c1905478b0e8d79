"""Start-up validation: impossible combinations fail before any model loads, naming the fix."""

from __future__ import annotations

from omegaconf import DictConfig

from claw.advantages import ADVANTAGES
from claw.losses import AGGREGATIONS, LOSSES


class ConfigError(ValueError):
    pass


def validate(cfg: DictConfig) -> None:
    problems = []
    if cfg.algo.advantage not in ADVANTAGES:
        problems.append(f"algo.advantage={cfg.algo.advantage!r} is not registered; choose one of {ADVANTAGES.names()}")
    if cfg.algo.loss not in LOSSES:
        problems.append(f"algo.loss={cfg.algo.loss!r} is not registered; choose one of {LOSSES.names()}")
    if cfg.algo.loss_agg not in AGGREGATIONS:
        problems.append(f"algo.loss_agg={cfg.algo.loss_agg!r}; choose one of {list(AGGREGATIONS)}")
    if cfg.mode.name != "rl":
        problems.append(f"mode={cfg.mode.name} is not implemented yet; use mode=rl")
    if cfg.source.name == "dataset" and cfg.judge.kind != "verifier":
        problems.append(f"source=dataset scores samples with its verifier; use judge=verifier (got judge={cfg.judge.kind})")
    if cfg.algo.advantage == "grpo" and cfg.source.get("n", 1) < 2:
        problems.append("GRPO needs groups of at least 2 samples: set source.n>=2")
    if cfg.steps < 1:
        problems.append("steps must be >= 1")
    if cfg.batch_size < 1 or cfg.optim.micro_batch_size < 1:
        problems.append("batch_size and optim.micro_batch_size must be >= 1")
    if cfg.algo.minibatches > cfg.batch_size:
        problems.append(f"algo.minibatches={cfg.algo.minibatches} exceeds batch_size={cfg.batch_size}")
    if problems:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems))
