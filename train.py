"""The composition root: `python train.py [group=option ...] [key=value ...]`.

Builds, in this order: policy → engine → source → datamodule → objective → module →
callbacks → logger → trainer, then fits. `run(cfg)` is the same thing without Hydra's CLI
(the tests call it in-process).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import hydra
import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from claw.callbacks import HeldOutEval, PublishAndCommit, SampleTable, WandbArtifacts
from claw.checkpoint import AtomicCheckpointIO
from claw.clock import PolicyClock
from claw.config import check_hardware, resolve_resume, trainer_processes, validate
from claw.console import quiet_console
from claw.distributed import is_leader, make_strategy
from claw.engine import build_engine
from claw.guard import build_guard
from claw.guard.state import request_rollback
from claw.judge.build import build_judges
from claw.judge.teacher import build_teacher
from claw.lora import apply_lora
from claw.module import ClawModule
from claw.progress import ClawProgressBar
from claw.redaction import save_config
from claw.rollout.datamodule import RolloutDataModule
from claw.tracking import build_logger, finish_logger

# claw's training_step pulls its own rollout batch on purpose (no prefetch); Lightning warns about it.
warnings.filterwarnings("ignore", message=".*dataloader_iter.*")


def run(cfg: DictConfig, extra_callbacks: list[L.Callback] | None = None) -> dict:
    t_start = time.perf_counter()
    validate(cfg)
    check_hardware(cfg.layout)  # before the model, the engine and a server start
    # Under DDP (layout.devices > 1) this runs once per rank; only rank 0, the leader, builds the
    # engine, the judges and the sources and writes the run directory (claw/distributed.py).
    leader = is_leader()
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    quiet_console(run_dir, verbose=bool(cfg.get("verbose", False)))  # library logs -> <run dir>/engine.log
    if leader and not (run_dir / "config.yaml").exists():
        save_config(cfg, run_dir / "config.yaml")  # API keys redacted (claw/redaction.py)
    if cfg.layout.torch_threads:
        torch.set_num_threads(int(cfg.layout.torch_threads))
    L.seed_everything(cfg.seed, verbose=False)

    policy = instantiate(cfg.model)
    engine = None
    if leader:
        options = OmegaConf.to_container(cfg.engine.options, resolve=True) if "options" in cfg.engine else {}
        kind = (
            "hf" if cfg.engine.kind == "auto" and trainer_processes(cfg.layout) > 1 else cfg.engine.kind
        )  # DDP: no in-process vLLM
        engine = build_engine(kind, policy, seed=cfg.seed, max_batch_size=cfg.engine.max_batch_size, **options)
    try:
        module, evaluation = fit(cfg, run_dir, policy, engine, extra_callbacks)
    finally:
        if engine is not None:
            engine.close()  # a vLLM engine or server process never outlives the run
    summary = {
        "run_dir": str(run_dir),
        "engine": engine_kind(engine),
        "steps": module.policy_version,
        "wall_min": (time.perf_counter() - t_start) / 60,
        "eval": evaluation.results,
    }
    if leader:
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def engine_kind(engine) -> str | None:
    """The engine a run really used (`engine=auto` resolves at start-up): hf, vllm or vllm_server."""
    return (
        None
        if engine is None
        else {"HFEngine": "hf", "VLLMEngine": "vllm", "VLLMServerEngine": "vllm_server"}.get(
            type(engine).__name__, type(engine).__name__
        )
    )


def fit(
    cfg: DictConfig, run_dir: Path, policy, engine, extra_callbacks: list[L.Callback] | None
) -> tuple[ClawModule, HeldOutEval]:
    """Sources, datamodule, module, callbacks, trainer; then `trainer.fit`. `engine` is None on a DDP follower rank."""
    leader = engine is not None
    source = build_source(cfg, policy, engine, run_dir) if leader else None
    if cfg.lora.enabled:
        policy.model = apply_lora(
            policy.model, cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout, list(cfg.lora.target_modules)
        )
    clock = PolicyClock()  # the one policy-version counter: the module counts, the datamodule reads, the sync stamps
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
    )
    module = ClawModule.from_cfg(cfg, policy.model, clock)

    evaluation = HeldOutEval(source, run_dir, every=cfg.eval_every)
    guard = build_guard(
        cfg, run_dir, engine, policy.tokenizer.pad_token_id, source, policy.tokenizer
    )  # claw/guard; None with guard=none
    if guard is not None and hasattr(source, "serve_admin"):  # the proxy's POST /admin/rollback (API key required)
        source.serve_admin(rollback=lambda version: request_rollback(run_dir, version))
    if guard is not None and guard.canary is not None:  # the proxy routes new sessions by the guard's canary
        source.serve_canary(guard.traffic)
    callbacks = [
        PublishAndCommit(
            engine,
            run_dir,
            steps=cfg.steps,
            checkpoint_every=cfg.checkpoint_every,
            checkpoint_interval_s=cfg.get("checkpoint_interval_s", 0),
            guard=guard,
        ),
        evaluation,
        ClawProgressBar(cfg.steps, evaluation),
        SampleTable(
            run_dir, every=cfg.logger.get("sample_table_every", 0), rows=cfg.logger.get("sample_table_rows", 8)
        ),
        WandbArtifacts(run_dir),
    ]
    if guard is not None:
        callbacks.insert(1, guard)  # before HeldOutEval: its on_fit_start puts the promoted version in the engine
    callbacks += extra_callbacks or []
    logger = build_logger(cfg, run_dir)
    trainer = L.Trainer(
        accelerator=cfg.layout.accelerator,
        devices=cfg.layout.devices,
        precision=cfg.layout.precision,
        strategy=make_strategy(cfg.layout.strategy, cfg.layout.get("collective_timeout_min", 120)),
        num_nodes=cfg.layout.get("num_nodes", 1),
        max_epochs=1,
        max_steps=-1,
        logger=logger,
        callbacks=callbacks,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        limit_val_batches=0,
        log_every_n_steps=1,
        default_root_dir=str(run_dir),
        plugins=[AtomicCheckpointIO(background=cfg.get("checkpoint_async", True))],
    )
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=str(ckpt) if ckpt.exists() else None)
    finally:
        datamodule.stop()
        finish_logger(logger)  # a sweep runs its jobs in one process: each W&B run must end with its job
    return module, evaluation


def build_source(cfg: DictConfig, policy, engine, run_dir: Path):
    """The rollout side around the engine (rank 0 only): OPD's teacher, the judges and the source."""
    # OPD's teacher: the frozen initial policy (its own copy, never synced), the current policy, or a checkpoint.
    teacher = build_teacher(
        cfg.mode.get("teacher"), policy, engine, cfg.mode.get("hint_format", ""), cfg.engine.max_batch_size
    )
    extra = {}
    if cfg.source.get("conversational"):  # sources of live turns: judged by cfg.judge, stored in the run directory
        extra = {
            "judges": build_judges(cfg.judge, engine, policy.tokenizer),
            "mode": cfg.mode.name,
            "run_dir": str(run_dir),
            "fsync": cfg.fsync,
        }
    return instantiate(
        cfg.source, engine=engine, tokenizer=policy.tokenizer, teacher=teacher, topk=cfg.mode.get("topk", 0), **extra
    )


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    if cfg.run_dir is None:
        cfg.run_dir = HydraConfig.get().runtime.output_dir
    cfg = resolve_resume(cfg, list(HydraConfig.get().overrides.task))
    summary = run(cfg)
    after = summary["eval"].get("after")
    return after["headline"] if after else None  # the objective an Optuna sweep maximises


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
