"""What a run reports and where: `logger=csv|wandb|none` builds a `Tracking` — the Lightning logger and the
callbacks that report through it (the sample table, W&B artifacts).

Each conf/logger/*.yaml names its function here with `_target_`; train.py calls it with its group's keys and
`run`, the whole run config (the W&B run's name, tags and recorded hyper-parameters come from it). Your own: a
function with that signature returning a `Tracking`, named by `logger._target_`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import lightning as L
from lightning.pytorch.loggers import Logger
from omegaconf import DictConfig

from claw.checkpoint import last_checkpoint, wait_for_checkpoint
from claw.provenance import command_overrides, setting_name
from claw.redaction import for_logger


@dataclass
class Tracking:
    logger: Logger | bool  # False: no logger (Lightning's own default would be a TensorBoard one)
    callbacks: list[L.Callback] = field(default_factory=list)

    def finish(self) -> None:
        """End the logger's run: a sweep runs its jobs in one process, and each W&B run must end with its job."""
        from lightning.pytorch.loggers import WandbLogger

        if isinstance(self.logger, WandbLogger):
            import wandb

            wandb.finish()


def csv_tracking(run: DictConfig, sample_table_every: int = 1, sample_table_rows: int = 8) -> Tracking:
    """`<run dir>/csv/<launch>/metrics.csv` and `samples_table.jsonl`."""
    from lightning.pytorch.loggers import CSVLogger

    # One CSV per launch (csv/0, csv/1 after a resume...): appending rows with new columns to an
    # earlier launch's file is not something Lightning's CSV writer supports.
    run_dir = Path(run.run_dir)
    launches = len(list((run_dir / "csv").glob("*"))) if (run_dir / "csv").exists() else 0
    logger = CSVLogger(save_dir=str(run_dir), name="csv", version=str(launches))
    return Tracking(logger, [SampleTable(run_dir, sample_table_every, sample_table_rows)])


def wandb_tracking(
    run: DictConfig,
    project: str = "claw",
    group: str | None = None,
    tags: list[str] | None = None,
    job_type: str | None = None,
    sample_table_every: int = 1,
    sample_table_rows: int = 8,
) -> Tracking:
    """A W&B run (offline unless WANDB_API_KEY is set or WANDB_MODE=online) with the config, API keys redacted."""
    from lightning.pytorch.loggers import WandbLogger

    online = bool(os.environ.get("WANDB_API_KEY")) or os.environ.get("WANDB_MODE") == "online"
    logger = WandbLogger(
        project=project,
        name=run_name(run),
        # the setting (the overrides given, less seed and paths): its seeds share a group, as in claw.compare
        group=group or (setting_name(given) if (given := command_overrides()) is not None else run.get("name")),
        tags=run_tags(run) + [str(t) for t in tags or []],
        job_type=job_type or run.source.name,
        save_dir=str(run.run_dir),
        offline=not online,
    )
    logger.log_hyperparams(for_logger(run))  # API keys redacted
    return Tracking(
        logger, [SampleTable(run.run_dir, sample_table_every, sample_table_rows), WandbArtifacts(run.run_dir)]
    )


def no_tracking(run: DictConfig, sample_table_every: int = 0, sample_table_rows: int = 0) -> Tracking:
    """No logger (metrics only on the progress bar); `samples_table.jsonl` only if `sample_table_every` > 0."""
    return Tracking(False, [SampleTable(run.run_dir, sample_table_every, sample_table_rows)])


def run_name(cfg: DictConfig) -> str:
    """`<experiment or mode-algo>-<source>-s<seed>`: readable in a dashboard, unique within a sweep by seed and dir."""
    stem = cfg.get("name") or f"{cfg.mode.name}-{cfg.algo.name}"
    return f"{stem}-{cfg.source.name}-s{cfg.seed}-{Path(cfg.run_dir).name}"


def run_tags(cfg: DictConfig) -> list[str]:
    return [
        f"mode={cfg.mode.name}",
        f"algo={cfg.algo.name}",
        f"source={cfg.source.name}",
        f"model={cfg.model._target_.rsplit('_', 1)[-1]}",
    ]


class SampleTable(L.Callback):
    """Every `every` rollout batches, a table of sample turns a researcher can read: prompt, response,
    reward, hint, next state, votes. Appended to `samples_table.jsonl`; also a W&B table with logger=wandb."""

    COLUMNS = [
        "step",
        "prompt",
        "response",
        "reward",
        "hint",
        "next_state",
        "votes",
        "policy_version",
        "sample_id",
        "user",
    ]

    def __init__(self, run_dir: str | Path, every: int = 1, rows: int = 8) -> None:
        self.path = Path(run_dir) / "samples_table.jsonl"
        self.every, self.rows = every, rows

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        step = module.policy_version
        if not self.every or step % self.every or not batch.infos or not trainer.is_global_zero:
            return
        rows = []
        for info in batch.infos[: self.rows]:
            rows.append(
                [
                    step,
                    str(info.get("question") or info.get("prompt") or ""),
                    str(info.get("response", "")),
                    info.get("reward"),
                    info.get("hint"),
                    json.dumps(info.get("next_state")) if info.get("next_state") is not None else None,
                    json.dumps(info.get("votes")) if info.get("votes") is not None else None,
                    info.get("policy_version"),
                    info.get("sample_id"),
                    info.get("user") or None,
                ]
            )
        with open(self.path, "a") as f:
            for r in rows:
                f.write(json.dumps(dict(zip(self.COLUMNS, r))) + "\n")
        from lightning.pytorch.loggers import WandbLogger

        if isinstance(trainer.logger, WandbLogger):
            trainer.logger.log_table(key="rollout/samples", columns=self.COLUMNS, data=rows, step=trainer.global_step)


class WandbArtifacts(L.Callback):
    """At the end of a W&B run: the checkpoint (and the run's plot, when one exists) as artifacts."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)

    def on_train_end(self, trainer, module) -> None:
        from lightning.pytorch.loggers import WandbLogger

        if not isinstance(trainer.logger, WandbLogger):
            return
        import wandb

        run = trainer.logger.experiment
        wait_for_checkpoint(trainer)
        ckpt = last_checkpoint(self.run_dir)
        if ckpt.exists():
            art = wandb.Artifact(
                f"checkpoint-{run.id}", type="model", metadata={"policy_version": module.policy_version}
            )
            if ckpt.is_dir():  # layout=fsdp: the sharded checkpoint's directory
                art.add_dir(str(ckpt))
            else:
                art.add_file(str(ckpt))
            run.log_artifact(art)
        for png in self.run_dir.glob("*.png"):
            art = wandb.Artifact(f"plot-{run.id}-{png.stem}", type="plot")
            art.add_file(str(png))
            run.log_artifact(art)
