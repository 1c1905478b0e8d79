"""Every experiment config composes and runs one step on the tiny model, so configs cannot rot."""

import pytest

from claw.config import validate
from tests.conftest import CONF, TINY, make_cfg

EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


def test_there_are_experiments():
    assert EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_runs_one_step(name, tmp_path):
    from train import run

    # The experiment first, then the tiny-model budget on top of it.
    cfg = make_cfg([f"experiment={name}", *TINY, "steps=1"], tmp_path)
    validate(cfg)
    assert run(cfg)["steps"] == 1
