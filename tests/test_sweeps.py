"""A two-job multirun on the tiny model produces two comparable runs; claw.compare turns them into a
table and a PNG; every shipped sweep config composes."""

import json
import subprocess
import sys

import pytest

from claw.compare import main as compare_main
from tests.conftest import ROOT, TINY, make_cfg

SWEEPS = sorted(p.stem for p in (ROOT / "sweeps").glob("*.yaml"))


def test_two_job_multirun_then_compare(tmp_path, capsys):
    sweep_dir = tmp_path / "sweep"
    args = [a for a in TINY if not a.startswith("logger=")] + [
        "logger=csv",
        "steps=2",
        "optim.lr=1e-4,3e-4",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    out = subprocess.run(
        [sys.executable, "train.py", "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted(p for p in sweep_dir.iterdir() if (p / "summary.json").exists())
    assert len(runs) == 2
    for r in runs:
        assert json.loads((r / "summary.json").read_text())["steps"] == 2
        assert (r / "csv" / "0" / "metrics.csv").exists()

    png, table = tmp_path / "compare.png", tmp_path / "compare.json"
    compare_main([str(sweep_dir), "--out", str(png), "--json", str(table)])
    printed = capsys.readouterr().out
    assert "optim.lr=0.0001" in printed and "optim.lr=0.0003" in printed
    rows = json.loads(table.read_text())
    assert len(rows) == 2 and all(r["n"] == 1 for r in rows)
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_config_composes_and_varies_the_seed(name):
    if name.startswith("optuna"):
        pytest.importorskip("hydra_plugins.hydra_optuna_sweeper", reason="the optuna extra is not installed")
    cfg = make_cfg([f"+sweep={name}"])
    assert cfg.name == name
    # the sweep's parameters live in hydra.sweeper.params; every sweep varies the seed
    text = (ROOT / "sweeps" / f"{name}.yaml").read_text()
    assert "seed:" in text.split("params:")[1]
