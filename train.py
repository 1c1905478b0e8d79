"""The composition root: `python train.py [group=option ...] [key=value ...]`.

Builds, in this order: policy → engine → source (teacher, judges) → datamodule → module → guard → logger →
callbacks → trainer, then fits. What conf/ names by `_target_` (model, engine, source, logger, trainer, callbacks)
Hydra builds, given the live objects it needs. `run(cfg)` is the same thing without Hydra's CLI (the tests call
it in-process); claw/config.py validates, prepares the run directory and resumes.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig

from claw.callbacks import HeldOutEval, PublishAndCommit
from claw.checkpoint import resume_from
from claw.clock import PolicyClock
from claw.config import build, prepare_run, resolve_resume, trainer_processes
from claw.distributed import is_leader
from claw.engine import engine_kind
from claw.guard import GuardCallback, build_guard
from claw.guard.state import request_rollback
from claw.lora import apply_lora
from claw.module import ClawModule
from claw.progress import ClawProgressBar
from claw.provenance import provenance
from claw.rollout.datamodule import RolloutDataModule
from claw.rollout.source import ServesAdmin, ServesCanary, Source
from claw.shutdown import StopRequested, StopSignal
from claw.sources.build import build_source

# claw's training_step pulls its own rollout batch on purpose (no prefetch); Lightning warns about it.
warnings.filterwarnings("ignore", message=".*dataloader_iter.*")


def run(cfg: DictConfig, extra_callbacks: list[L.Callback] | None = None, overrides: list[str] | None = None) -> dict:
    t_start = time.perf_counter()
    stop_signal = StopSignal()  # SIGTERM / SIGINT during fit: stop the sources, checkpoint, exit 0 (claw/shutdown.py)
    # DDP: one process per rank; only rank 0, the leader, builds the engine and the source (claw/distributed.py)
    leader = is_leader()
    run_dir = prepare_run(cfg, leader)
    policy = instantiate(cfg.model)
    ddp = trainer_processes(cfg.layout) > 1
    engine = build(cfg.engine, policy=policy, seed=cfg.seed, ddp=ddp) if leader else None
    if leader:  # what this launch runs: the code, the date, the engine, the overrides (summary.json repeats it)
        origin = provenance(engine_kind(engine), overrides)
        (run_dir / "provenance.json").write_text(json.dumps(origin, indent=1))
    try:
        source = build_source(cfg, policy, engine) if leader else None
        adapters = None
        if cfg.get("personalize") is not None:  # an adapter per user over the frozen base (claw/users/adapters.py)
            adapters = build(cfg.personalize, model=policy.model, run_dir=run_dir)
            policy.model = adapters.model
        if cfg.lora.enabled:
            lora = cfg.lora
            targets = list(lora.target_modules)  # seeded adapters: the same on every rank and in a replay
            policy.model = apply_lora(policy.model, lora.r, lora.alpha, lora.dropout, targets, seed=cfg.seed)
        # the one policy-version counter: the module counts, the datamodule reads, the sync stamps
        clock = PolicyClock()
        datamodule = RolloutDataModule(
            run_dir,
            sources=[source] if source is not None else [],
            pad_id=policy.tokenizer.pad_token_id,
            batch_size=cfg.batch_size,
            max_queue_size=cfg.max_queue_size,
            max_staleness=cfg.max_staleness,
            fsync=cfg.fsync,
            leader=leader,
            clock=clock,
            stop_signal=stop_signal,
            version_of=None if adapters is None else adapters.version,
            lane=getattr(engine, "lane", None),
        )
        module = ClawModule.from_cfg(cfg, policy.model, clock, adapters)
        guard = build_guard(cfg, run_dir, engine, policy.tokenizer.pad_token_id, source, policy.tokenizer)
        if guard is not None:
            connect_guard(guard, source, run_dir)
        evaluation = HeldOutEval(source, run_dir, every=cfg.eval_every, stop_signal=stop_signal)
        tracking = build(cfg.logger, run=cfg)  # `logger=`: the Lightning logger and its callbacks (claw/tracking.py)
        callbacks = [
            PublishAndCommit(
                engine,
                run_dir,
                cfg.steps,
                cfg.checkpoint_every,
                cfg.checkpoint_interval_s,
                guard,
                release_memory=cfg.release_memory,
                stop_signal=stop_signal,
                adapters=adapters,
            ),
            *([guard] if guard is not None else []),  # before HeldOutEval: it puts the promoted version in the engine
            evaluation,
            ClawProgressBar(cfg.steps, evaluation),
            *tracking.callbacks,
            *instantiate(cfg.callbacks, _convert_="all").values(),
            *(extra_callbacks or []),
        ]
        trainer = build(cfg.trainer, logger=tracking.logger, callbacks=callbacks)
        stop_signal.install()
        try:
            trainer.fit(module, datamodule=datamodule, ckpt_path=resume_from(run_dir))
        except StopRequested:  # asked while the trainer waited for a batch; PublishAndCommit.on_exception checkpointed
            pass
        finally:
            datamodule.stop()
            tracking.finish()
    finally:
        if engine is not None:
            engine.close()  # a vLLM engine or server process never outlives the run
        stop_signal.restore()
    summary = {
        "run_dir": str(run_dir),
        "engine": engine_kind(engine),
        "provenance": origin if leader else None,
        "steps": module.policy_version,
        "wall_min": (time.perf_counter() - t_start) / 60,
        "eval": evaluation.results,
    }
    if leader:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def connect_guard(guard: GuardCallback, source: Source | None, run_dir: str | Path) -> None:
    """What the guard reaches through a source of live sessions, when the source can (claw/rollout/source.py)."""
    if isinstance(source, ServesAdmin):  # the proxy's POST /admin/rollback (API key)
        source.serve_admin(rollback=lambda version: request_rollback(run_dir, version))
    if guard.canary is not None:  # the proxy routes new sessions by the guard's canary
        if not isinstance(source, ServesCanary):  # canary_problems refuses such a config before this
            raise TypeError(f"guard.checks has canary: {type(source).__name__} serves no live sessions")
        source.serve_canary(guard.traffic)


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    if cfg.run_dir is None:
        cfg.run_dir = HydraConfig.get().runtime.output_dir
    overrides = list(HydraConfig.get().overrides.task)
    cfg = resolve_resume(cfg, overrides)
    if cfg.get("resume"):  # a resumed run keeps the overrides it was launched with (its setting), then this command's
        earlier = Path(cfg.resume) / "provenance.json"  # written when the earlier launch started
        launched = json.loads(earlier.read_text()).get("overrides", []) if earlier.is_file() else []
        overrides = [*launched, *(o for o in overrides if not o.startswith("resume="))]
    summary = run(cfg, overrides=overrides)
    after = summary["eval"].get("after")
    return after["headline"] if after else None  # the objective an Optuna sweep maximises


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
