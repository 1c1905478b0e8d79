"""Guarded online updates (issue 17): the engine serves the last *promoted* version; every new
candidate is checked (off-policy evaluation on logged judged turns, a drift bound) before it is
promoted, held, or the served version is rolled back. `guard=none` (the default) leaves the plain
weight sync untouched. `guard.checks` composes the checks (ope, kl, probe). README "Guarded updates"
says what is built and what is not."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from claw.guard.callback import GuardCallback
from claw.guard.decision import CHECKS, Decision, Evidence, LiveReward, Thresholds, decide
from claw.guard.probe import build_probe

__all__ = ["GuardCallback", "Decision", "Evidence", "LiveReward", "Thresholds", "build_guard", "decide"]


def build_guard(
    cfg: DictConfig, run_dir: Path, engine, pad_id: int, source=None, tokenizer=None
) -> GuardCallback | None:
    """The guard for `cfg.guard`, or None when it is off. Refuses what is not built, naming the fix.
    `source` and `tokenizer` are needed by the probe check (guard.checks has probe)."""
    g = cfg.get("guard")
    if g is None or not g.enabled:
        return None
    from claw.config import ConfigError, trainer_processes

    checks = tuple(g.get("checks", ("ope", "kl")))
    if unknown := [c for c in checks if c not in (*CHECKS, "canary")]:
        raise ConfigError(f"guard.checks: unknown {unknown}; choose from {[*CHECKS, 'canary']}")
    if "canary" in checks:
        if cfg.source.name != "proxy":
            raise ConfigError(
                "guard.checks has canary: canary traffic splits live proxy sessions; "
                f"source={cfg.source.name} has none (use probe)"
            )
        raise NotImplementedError(
            "guard.checks has canary: serving a fraction of sessions with the candidate needs two weight sets "
            "served side by side, and the proxy has one engine holding one "
            "(claw/sources/proxy/service.py Proxy.engine, "
            "claw/sources/proxy/batcher.py). Missing: a second engine (or per-request adapters) for the candidate "
            "and per-session routing by claw.guard.canary.canary_arm. The sequential test and decision rule are built "
            "(claw/guard/canary.py); use guard.checks=[ope,kl] or add probe"
        )

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
    )
