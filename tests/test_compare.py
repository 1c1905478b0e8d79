"""python -m claw.compare on a synthetic sweep: 2 settings (optim.lr) x 2 seeds, written as train.py writes them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from claw.compare import _curve, compare, group_settings, load_runs, main, setting_keys

# The columns of a real CSVLogger file (sorted, most cells empty on any one row).
HEADER = [
    "engine/sync_s",
    "engine/version",
    "epoch",
    "eval/accuracy",
    "eval/ci_high",
    "eval/ci_low",
    "rollout/reward_mean",
    "step",
    "train/loss",
]

# name -> (lr, seed, rewards per rollout batch 1..3, train/loss per batch, before accuracy, after accuracy)
RUNS = {
    "a_s0": (1e-5, 0, [0.1, 0.2, 0.3], [0.9, 0.8, 0.7], 0.25, 0.5),
    "a_s1": (1e-5, 1, [0.2, 0.3, 0.5], [0.8, 0.6, 0.4], 0.125, 0.375),  # resumed after batch 2: csv/0 + csv/1
    "b_s0": (2e-5, 0, [0.3, 0.4, 0.6], [0.7, 0.5, 0.3], 0.25, 0.625),
    "b_s1": (2e-5, 1, [0.4, 0.5, 0.7], [0.6, 0.4, 0.2], 0.25, 0.875),
}


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=HEADER, restval="")
        writer.writeheader()
        writer.writerows(rows)


def _entry(acc: float, version: int) -> dict:
    return {
        "accuracy": acc,
        "n": 8,
        "ci_low": 0.0,
        "ci_high": 1.0,
        "policy_version": version,
        "correct": [1] * int(acc * 8) + [0] * (8 - int(acc * 8)),
    }


def make_sweep(root: Path) -> Path:
    for name, (lr, seed, rewards, losses, before, after) in RUNS.items():
        run = root / "multirun" / name
        run.mkdir(parents=True)
        cfg = {
            "seed": seed,
            "steps": 3,
            "run_dir": str(run),
            "resume": None,
            "mode": {"name": "rl", "w_rl": 1.0},
            "algo": {"name": "grpo", "clip_high": 0.28},
            "optim": {"lr": lr, "micro_batch_size": 4},
            "source": {"n": 4, "seed": 0},
            "logger": {"kind": "csv"},
        }
        OmegaConf.save(OmegaConf.create(cfg), run / "config.yaml")
        train = [
            {
                "engine/sync_s": 0.5,
                "engine/version": float(v),
                "epoch": 0,
                "rollout/reward_mean": r,
                "step": v - 1,
                "train/loss": loss,
            }
            for v, (r, loss) in enumerate(zip(rewards, losses), start=1)
        ]
        first = {"eval/accuracy": before, "eval/ci_high": 1.0, "eval/ci_low": 0.0, "step": 0}
        last = {"eval/accuracy": after, "eval/ci_high": 1.0, "eval/ci_low": 0.0, "step": 3}
        if name == "a_s1":  # killed after batch 2, resumed: a second launch file
            _write_csv(run / "csv" / "0" / "metrics.csv", [first, *train[:2]])
            _write_csv(run / "csv" / "1" / "metrics.csv", [train[2], last])
        else:
            _write_csv(run / "csv" / "0" / "metrics.csv", [first, *train, last])
        evals = {"before": _entry(before, 0), "after": _entry(after, 3), "mcnemar_p": 1.0}
        if name == "b_s0":
            evals["step_2"] = _entry(0.5, 2)
        (run / "eval.json").write_text(json.dumps(evals))
        (run / "summary.json").write_text(json.dumps({"run_dir": str(run), "steps": 3, "eval": evals}))
    return root


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    return make_sweep(tmp_path / "sweep")


def test_settings_from_the_differing_key_only(sweep: Path) -> None:
    runs = load_runs(sweep)
    assert [r.name for r in runs] == ["multirun/a_s0", "multirun/a_s1", "multirun/b_s0", "multirun/b_s1"]
    assert setting_keys(runs) == ["optim.lr"]  # seed and run_dir differ too, but are ignored
    groups = group_settings(runs)
    assert {label: [r.name[-4:] for r in members] for label, members in groups.items()} == {
        "optim.lr=1e-05": ["a_s0", "a_s1"],
        "optim.lr=2e-05": ["b_s0", "b_s1"],
    }
    assert list(group_settings(runs[:2])) == ["all"]  # seeds of one setting only
    # The resumed run's launches are concatenated in order, so its curve has all three batches.
    assert _curve(runs[1], "rollout/reward_mean") == {1.0: 0.2, 2.0: 0.3, 3.0: 0.5}


def test_eval_accuracy_table_png_and_json(sweep: Path, tmp_path: Path) -> None:
    out, js = tmp_path / "cmp.png", tmp_path / "cmp.json"
    rows = compare(sweep, "eval/accuracy", "rollout/reward_mean", out, js)
    assert [r["label"] for r in rows] == ["optim.lr=2e-05", "optim.lr=1e-05"]  # best mean first
    b, a = rows
    assert b["n"] == 2 and b["mean"] == pytest.approx(0.75) and b["std"] == pytest.approx(0.1767766952966369)
    assert (b["min"], b["max"], b["before_mean"]) == pytest.approx((0.625, 0.875, 0.25))
    assert a["n"] == 2 and a["mean"] == pytest.approx(0.4375) and a["std"] == pytest.approx(0.08838834764831845)
    assert (a["min"], a["max"], a["before_mean"]) == pytest.approx((0.375, 0.5, 0.1875))
    assert a["missing"] == [] and b["missing"] == []

    data = out.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000

    saved = json.loads(js.read_text())
    assert [r["label"] for r in saved] == ["optim.lr=2e-05", "optim.lr=1e-05"]
    assert saved[0]["setting"] == {"optim.lr": 2e-05}
    assert {k: saved[1][k] for k in ("n", "mean", "min", "max")} == {"n": 2, "mean": 0.4375, "min": 0.375, "max": 0.5}
    assert saved[1]["std"] == pytest.approx(0.08838834764831845)
    assert saved[1]["runs"] == [{"run": "multirun/a_s0", "score": 0.5}, {"run": "multirun/a_s1", "score": 0.375}]


def test_csv_metric_uses_every_launch(sweep: Path) -> None:
    rows = compare(sweep, "rollout/reward_mean", "train/loss")
    by_label = {r["label"]: r for r in rows}
    a, b = by_label["optim.lr=1e-05"], by_label["optim.lr=2e-05"]
    assert a["mean"] == pytest.approx(0.4) and a["std"] == pytest.approx(
        0.1414213562373095
    )  # 0.3 and 0.5 (from csv/1)
    assert b["mean"] == pytest.approx(0.65) and b["std"] == pytest.approx(0.07071067811865475)
    assert [r["label"] for r in rows] == ["optim.lr=2e-05", "optim.lr=1e-05"]
    assert "before_mean" not in a
    assert (sweep / "compare.png").read_bytes().startswith(b"\x89PNG")  # default output path

    before = {r["label"]: r["mean"] for r in compare(sweep, "eval/accuracy@before")}
    assert before == pytest.approx({"optim.lr=2e-05": 0.25, "optim.lr=1e-05": 0.1875})


def test_main_prints_a_markdown_table(sweep: Path, tmp_path: Path, capsys) -> None:
    main([str(sweep), "--out", str(tmp_path / "c.png"), "--json", str(tmp_path / "c.json")])
    lines = capsys.readouterr().out.splitlines()
    table = lines[:4]
    assert all(line.startswith("| ") and line.endswith(" |") for line in table)
    assert len({len(line) for line in table}) == 1  # aligned
    assert [c.strip() for c in table[0].strip("|").split("|")] == [
        "setting",
        "n",
        "eval/accuracy mean ± std",
        "min",
        "max",
        "before",
        "missing",
    ]
    assert set(table[1]) <= set("|-: ")
    assert [c.strip() for c in table[2].strip("|").split("|")] == [
        "optim.lr=2e-05",
        "2",
        "0.75 ± 0.1768",
        "0.625",
        "0.875",
        "0.25",
        "0",
    ]
    assert [c.strip() for c in table[3].strip("|").split("|")] == [
        "optim.lr=1e-05",
        "2",
        "0.4375 ± 0.08839",
        "0.375",
        "0.5",
        "0.1875",
        "0",
    ]
    assert (tmp_path / "c.png").exists() and (tmp_path / "c.json").exists()


def test_no_runs_exits_2(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.yaml").write_text("seed: 0\n")  # a config alone is not a run
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "empty")])
    assert exc.value.code == 2
    assert "no runs found" in capsys.readouterr().err


def test_unknown_metric_exits_2_naming_it(sweep: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(sweep), "--metric", "eval/nonexistent"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "'eval/nonexistent'" in err and "rollout/reward_mean" in err  # names it and what exists


def test_run_without_eval_json_is_reported_missing(sweep: Path, capsys) -> None:
    run = sweep / "multirun" / "b_s1"
    (run / "eval.json").unlink()
    (run / "summary.json").unlink()  # a run killed before its final eval: csv only
    main([str(sweep)])
    out = capsys.readouterr().out
    assert "missing eval/accuracy: multirun/b_s1 (optim.lr=2e-05)" in out
    rows = json.loads(json.dumps(compare(sweep)))
    b = next(r for r in rows if r["label"] == "optim.lr=2e-05")
    assert (b["n"], b["mean"], b["std"], b["missing"]) == (1, 0.625, 0.0, ["multirun/b_s1"])
    assert [r["label"] for r in rows] == ["optim.lr=2e-05", "optim.lr=1e-05"]
