"""Loggers from `logger=csv|wandb|none`."""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf


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
            group=cfg.logger.group,
            tags=list(cfg.logger.tags),
            save_dir=str(run_dir),
            offline=not online,
            name=Path(run_dir).name,
        )
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))
        return logger
    raise ValueError(f"unknown logger {kind!r}; choose csv, wandb or none")
