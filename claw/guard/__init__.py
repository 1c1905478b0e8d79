"""Guarded online updates: the engine serves the last *promoted* version; every new
candidate is checked (off-policy evaluation on logged judged turns, a drift bound) before it is
promoted, held, or the served version is rolled back. `guard=none` (the default) leaves the plain
weight sync untouched. `guard.checks` composes the checks (ope, kl, probe, canary: live traffic on
engine=hf, claw/guard/canary.py). docs/guard.md says what is built and what is not."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from claw.guard.callback import GuardCallback
from claw.guard.canary import CanarySettings, CanaryTest
from claw.guard.decision import CHECKS, Decision, Evidence, LiveReward, Thresholds, decide
from claw.guard.probe import build_probe

__all__ = ["GuardCallback", "Decision", "Evidence", "LiveReward", "Thresholds", "build_guard", "decide"]


def build_guard(
    cfg: DictConfig, run_dir: Path, engine, pad_id: int, source=None, tokenizer=None
) -> GuardCallback | None:
    """The guard for `cfg.guard`, or None when it is off. Refuses what is not built, naming the fix.
    `source` and `tokenizer` are needed by the probe check (guard.checks has probe); `engine`, by canary (the
    engine must hold a second weight set: engine=hf)."""
    g = cfg.get("guard")
    if g is None or not g.enabled:
        return None
    from claw.config import ConfigError, canary_problems, trainer_processes

    checks = tuple(g.get("checks", ("ope", "kl")))
    if unknown := [c for c in checks if c not in CHECKS]:
        raise ConfigError(f"guard.checks: unknown {unknown}; choose from {list(CHECKS)}")
    kind = cfg.engine.kind  # the engine actually built (engine=auto picks one) must hold two weight sets for canary
    if engine is not None and not hasattr(engine, "load_canary"):
        name = type(engine).__name__
        kind = {"VLLMEngine": "vllm", "VLLMServerEngine": "vllm_server"}.get(name, name)
    if problems := canary_problems(cfg, kind):
        raise ConfigError("; ".join(problems))

    if cfg.lora.enabled:
        raise ConfigError(
            "guard with lora.enabled=true is not built (resetting a LoRA trainer from merged weights); use guard=none"
        )
    if trainer_processes(cfg.layout) > 1:
        raise ConfigError(
            "guard with DDP (layout.devices > 1) is not built: a trainer reset would have to reach every rank; "
            "use guard=none"
        )
    if g.max_lag > cfg.max_staleness:
        raise ConfigError(
            f"guard.max_lag={g.max_lag} > max_staleness={cfg.max_staleness}: turns of a held version would be "
            "dropped as stale; lower guard.max_lag or raise max_staleness"
        )
    return GuardCallback(
        run_dir,
        engine,
        pad_id,
        Thresholds(**OmegaConf.to_container(g.thresholds, resolve=True)),
        window=g.ope.window,
        estimator=g.ope.estimator,
        clip=g.ope.clip,
        weight=g.ope.weight,
        max_lag=g.max_lag,
        after_rollback=g.after_rollback,
        keep_promoted=g.keep_promoted,
        micro_batch_size=cfg.optim.micro_batch_size,
        checks=checks,
        probe=build_probe(cfg, source, tokenizer) if "probe" in checks else None,
        tokenizer=tokenizer,
        canary=canary_settings(g.canary) if "canary" in checks else None,
        observe=bool(g.get("observe", False)),
    )


def canary_settings(c: DictConfig) -> CanarySettings:
    """`guard.canary` → the canary's settings and its sequential test (claw/guard/canary.py)."""
    return CanarySettings(
        fraction=c.fraction,
        test=CanaryTest(alpha=c.alpha, margin=c.margin, max_turns=c.max_turns),
        timeout_s=c.timeout_s,
        after_reject=c.after_reject,
    )
