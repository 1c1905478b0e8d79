"""`build_source`: the source `cfg.source` names by `_target_`, given the live objects it needs.

A builder, not a bare `instantiate` in train.py, because those objects — OPD's teacher and, for sources of live
turns, the judges — are built from the policy and the engine first, and which ones a source takes depends on
the source (`source.conversational`) and the mode.
"""

from __future__ import annotations

from dataclasses import asdict

from hydra.utils import instantiate
from omegaconf import DictConfig

from claw.engine.base import Engine
from claw.judge.build import build_judges
from claw.judge.teacher import build_teacher
from claw.judge.teacher_served import served_options
from claw.modes import Mode
from claw.rollout.source import Source


def build_source(cfg: DictConfig, policy, engine: Engine) -> Source:
    """The run's source on the rollout side of `engine` (rank 0 only)."""
    mode = Mode.from_cfg(cfg.mode)
    # OPD's teacher: the frozen initial policy (its own copy, never synced), the current policy, or a checkpoint.
    # mode.teacher may also be the URL of a served teacher, with its mode.teacher_* keys.
    teacher = build_teacher(
        mode.teacher,
        policy,
        engine,
        max_batch_size=cfg.engine.max_batch_size,
        served=served_options(cfg.mode),
        **asdict(mode.hinting),
    )
    extra = {}
    if cfg.source.get("conversational"):  # sources of live turns: judged by cfg.judge, stored in the run directory
        judges = build_judges(cfg.judge, engine, policy.tokenizer)
        # the mode's name: which judges run follows from it (`Mode.named`)
        extra = {"judges": judges, "mode": mode.name, "run_dir": str(cfg.run_dir), "fsync": cfg.fsync}
    # the config's keys through `instantiate`, the live objects as they are (an `instantiate` keyword that is a
    # dataclass, such as `Judges`, would be merged into the config and arrive as a DictConfig)
    make = instantiate(cfg.source, _partial_=True)
    return make(engine=engine, tokenizer=policy.tokenizer, teacher=teacher, topk=mode.topk, **extra)
