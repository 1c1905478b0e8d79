from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

# A small, fast end-to-end configuration on the tiny random model.
TINY = [
    "model=tiny",
    "logger=none",
    "steps=2",
    "batch_size=8",
    "source.n=4",
    "source.prompts_per_generate=2",
    "source.max_new_tokens=8",
    "source.eval_size=4",
    "source.eval_max_new_tokens=8",
    "optim.micro_batch_size=4",
    "fsync=false",
]


def make_cfg(overrides: list[str], run_dir: Path | None = None):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="train", overrides=overrides)
    if run_dir is not None:
        cfg.run_dir = str(run_dir)
    return cfg


@pytest.fixture(scope="session")
def tiny_policy():
    from claw.policy import load_tiny

    return load_tiny()
