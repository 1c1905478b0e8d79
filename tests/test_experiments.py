"""Every experiment config composes and runs one step on the tiny model, so configs cannot rot (those for GPUs:
tests/test_gpu_configs.py composes and validates them)."""

import pytest

from claw.config import validate
from tests.conftest import CONF, DATASET, TINY, make_cfg

# The tiny-model budget for each kind of source an experiment may use (its own groups are kept).
BUDGET = {
    "dataset": [o for o in TINY if o not in DATASET],
    "simulated_user": [
        "model=tiny",
        "logger=none",
        "batch_size=8",
        "optim.micro_batch_size=8",
        "source.max_new_tokens=12",
        "source.eval_size=4",
        "fsync=false",
    ],
}

EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


def test_there_are_experiments():
    assert EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_one_step(name, tmp_path):
    from train import run

    # The experiment first, then the tiny-model budget for its source on top of it.
    composed = make_cfg([f"experiment={name}"])
    if composed.layout.accelerator == "gpu":
        pytest.skip("needs GPUs: tests/test_gpu_configs.py composes and validates it")
    source = composed.source.name
    cfg = make_cfg([f"experiment={name}", *BUDGET[source], "steps=1"], tmp_path)
    validate(cfg)
    assert run(cfg)["steps"] == 1
