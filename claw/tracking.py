"""Loggers from `logger=csv|wandb|none`."""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig

from claw.redaction import for_logger


def run_name(cfg: DictConfig) -> str:
    """`<experiment or mode-algo>-<source>-s<seed>`: readable in a dashboard, unique within a sweep by seed and dir."""
    stem = cfg.get("name") or f"{cfg.mode.name}-{cfg.algo.name}"
    return f"{stem}-{cfg.source.name}-s{cfg.seed}-{Path(cfg.run_dir).name}"


def run_tags(cfg: DictConfig) -> list[str]:
    tags = [
        f"mode={cfg.mode.name}",
        f"algo={cfg.algo.name}",
        f"source={cfg.source.name}",
        f"model={cfg.model._target_.rsplit('_', 1)[-1]}",
    ]
    return tags + [str(t) for t in cfg.logger.get("tags", [])]


def build_logger(cfg: DictConfig, run_dir: Path):
    kind = cfg.logger.kind
    if kind == "none":
        return False
    if kind == "csv":
        from lightning.pytorch.loggers import CSVLogger

        # One CSV per launch (csv/0, csv/1 after a resume...): appending rows with new columns to an
        # earlier launch's file is not something Lightning's CSV writer supports.
        launches = len(list((run_dir / "csv").glob("*"))) if (run_dir / "csv").exists() else 0
        return CSVLogger(save_dir=str(run_dir), name="csv", version=str(launches))
    if kind == "wandb":
        from lightning.pytorch.loggers import WandbLogger

        online = bool(os.environ.get("WANDB_API_KEY")) or os.environ.get("WANDB_MODE") == "online"
        logger = WandbLogger(
            project=cfg.logger.project,
            name=run_name(cfg),
            group=cfg.logger.group or cfg.get("name") or None,  # the sweep or experiment: runs that compare
            tags=run_tags(cfg),
            job_type=cfg.logger.get("job_type") or "train",
            save_dir=str(run_dir),
            offline=not online,
        )
        logger.log_hyperparams(for_logger(cfg))  # API keys redacted
        return logger
    raise ValueError(f"unknown logger {kind!r}; choose csv, wandb or none")


def finish_logger(logger) -> None:
    from lightning.pytorch.loggers import WandbLogger

    if isinstance(logger, WandbLogger):
        import wandb

        wandb.finish()
