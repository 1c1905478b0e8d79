"""`build_source`: the source `cfg.source` names by `_target_`, given the live objects it needs.

A builder, not a bare `instantiate` in train.py, because those objects — OPD's teacher and, for sources of live
turns, the judges — are built from the policy and the engine first, and which ones a source takes depends on
the source (`source.conversational`) and the mode.
"""

from __future__ import annotations

from hydra.utils import instantiate
from omegaconf import DictConfig

from claw.engine.base import Engine
from claw.judge.build import build_judges
from claw.judge.teacher import build_teacher
from claw.rollout.source import Source


def build_source(cfg: DictConfig, policy, engine: Engine) -> Source:
    """The run's source on the rollout side of `engine` (rank 0 only)."""
    # OPD's teacher: the frozen initial policy (its own copy, never synced), the current policy, or a checkpoint.
    teacher = build_teacher(
        cfg.mode.get("teacher"),
        policy,
        engine,
        cfg.mode.get("hint_format", ""),
        cfg.engine.max_batch_size,
        cfg.mode.get("hint_role", "user"),
        cfg.mode.get("hint_contrast"),
        cfg.mode.get("hint_contrast_scale", 1.0),
        cfg.mode.get("hint_gate"),
    )
    extra = {}
    if cfg.source.get("conversational"):  # sources of live turns: judged by cfg.judge, stored in the run directory
        judges = build_judges(cfg.judge, engine, policy.tokenizer)
        extra = {"judges": judges, "mode": cfg.mode.name, "run_dir": str(cfg.run_dir), "fsync": cfg.fsync}
    return instantiate(
        cfg.source, engine=engine, tokenizer=policy.tokenizer, teacher=teacher, topk=cfg.mode.get("topk", 0), **extra
    )
