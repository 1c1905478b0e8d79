"""python -m claw.compare on run directories written the way train.py writes them (config.yaml, summary.json with
provenance.overrides, eval.json, csv/<launch>/metrics.csv; .hydra/overrides.yaml for a Hydra output directory):
a 3-setting x 2-seed sweep, the main job run twice under different directories, a mixed set of simulated-user runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from matplotlib.text import Text
from omegaconf import OmegaConf

from claw.compare import _curve, compare, default_metric, group_settings, load_runs, main, plot
from claw.provenance import setting, setting_name

# A real CSVLogger file's columns for a simulated-user run (sorted, most cells empty on any one row).
HEADER = [
    "engine/sync_s",
    "engine/version",
    "epoch",
    "eval/ci_high",
    "eval/ci_low",
    "eval/pass/short",
    "eval/score",
    "rollout/reward_mean",
    "step",
    "train/loss",
]

# The sweep `python train.py +sweep=modes steps=3 model=tiny engine=hf`: Hydra job number -> (mode, seed,
# rewards per rollout batch 1..3, rating before, rating after). Job 1 was killed after batch 2 and resumed.
SWEEP = {
    0: ("rl", 0, [0.1, 0.2, 0.3], 0.25, 0.5),
    1: ("rl", 1, [0.2, 0.3, 0.5], 0.25, 0.625),
    2: ("opd", 0, [0.0, 0.1, 0.1], 0.25, 0.25),
    3: ("opd", 1, [0.1, 0.1, 0.2], 0.25, 0.375),
    4: ("combine", 0, [0.3, 0.4, 0.6], 0.25, 0.75),
    5: ("combine", 1, [0.4, 0.5, 0.7], 0.25, 1.0),
}
COMMAND = ["+sweep=modes", "steps=3", "model=tiny", "engine=hf"]


def _entry(score: float, version: int) -> dict:
    """One eval.json entry of a simulated user (claw/evaluation.py): the rating is the headline."""
    return {
        "persona": "student",
        "score": score,
        "n": 8,
        "ci_low": 0.0,
        "ci_high": 1.0,
        "policy_version": version,
        "pass_rates": {"short": score},
        "headline": score,
        "apology_rate": 0.0,
    }


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=HEADER, restval="")
        writer.writeheader()
        writer.writerows(rows)


def write_run(
    run: Path,
    overrides: list[str],
    *,
    seed: int = 0,
    config: dict | None = None,
    rewards: tuple[float, ...] = (0.1, 0.2, 0.3),
    before: float | None = 0.25,
    after: float | None = 0.5,
    hydra_dir: bool = False,
    summary: bool = True,
    resumed_after: int | None = None,
) -> Path:
    """A run directory as train.py leaves it. `hydra_dir`: the run is Hydra's output directory, so
    .hydra/overrides.yaml is there too; `summary` False: killed before the end (no summary.json, and no final
    evaluation); `resumed_after`: a second launch's csv/1 from that batch on."""
    run.mkdir(parents=True)
    cfg = {  # paths and a group's copy of the seed differ run to run, as in a real config.yaml
        "seed": seed,
        "steps": len(rewards),
        "run_dir": str(run),
        "resume": None,
        "mode": {"name": "combine", "w_rl": 1.0, "w_opd": 0.1},
        "engine": {"_target_": "claw.engine.build_engine", "kind": "vllm"},
        "source": {"name": "simulated_user", "seed": seed, "persona": "personas/student.yaml"},
        "optim": {"lr": 3e-5},
        "trainer": {"default_root_dir": str(run), "max_epochs": 1},
        **(config or {}),
    }
    OmegaConf.save(OmegaConf.create(cfg), run / "config.yaml")
    train = [
        {"engine/sync_s": 0.5, "engine/version": float(v), "epoch": 0, "rollout/reward_mean": r, "step": v - 1}
        for v, r in enumerate(rewards, start=1)
    ]
    evals: dict = {}
    first = last = []
    if before is not None:
        evals["before"] = _entry(before, 0)
        first = [{"eval/score": before, "eval/pass/short": before, "eval/ci_high": 1.0, "eval/ci_low": 0.0}]
    if after is not None and summary:
        evals["after"] = _entry(after, len(rewards))
        last = [{"eval/score": after, "eval/pass/short": after, "eval/ci_high": 1.0, "eval/ci_low": 0.0}]
    if resumed_after is None:
        _write_csv(run / "csv" / "0" / "metrics.csv", [*first, *train, *last])
    else:
        _write_csv(run / "csv" / "0" / "metrics.csv", [*first, *train[:resumed_after]])
        _write_csv(run / "csv" / "1" / "metrics.csv", [*train[resumed_after:], *last])
    if evals:
        (run / "eval.json").write_text(json.dumps(evals))
    if hydra_dir:
        (run / ".hydra").mkdir()
        (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    if summary:
        provenance = {"commit": "0" * 40, "dirty": False, "engine": "hf", "overrides": overrides}
        summary_json = {"run_dir": str(run), "steps": len(rewards), "provenance": provenance, "eval": evals}
        (run / "summary.json").write_text(json.dumps(summary_json))
    return run


def make_sweep(root: Path) -> Path:
    """`python train.py +sweep=modes ...`: runs <root>/<job>, each a Hydra output directory; the config each
    mode composes differs in derived values (mode.w_rl, mode.w_opd), which must not name the settings."""
    weights = {"rl": (1.0, 0.0), "opd": (0.0, 1.0), "combine": (1.0, 0.1)}
    for job, (mode, seed, rewards, before, after) in SWEEP.items():
        w_rl, w_opd = weights[mode]
        write_run(
            root / str(job),
            [f"mode={mode}", f"seed={seed}", *COMMAND],
            seed=seed,
            config={"mode": {"name": mode, "w_rl": w_rl, "w_opd": w_opd}},
            rewards=tuple(rewards),
            before=before,
            after=after,
            hydra_dir=True,
            resumed_after=2 if job == 1 else None,
        )
    return root


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    return make_sweep(tmp_path / "multirun" / "2026-12-07" / "10-00-00")


def test_setting_is_the_overrides_less_seed_and_paths() -> None:
    given = ["mode=rl", "seed=1", "run_dir=runs/x", "resume=runs/x", "+sweep=modes", "optim.lr=1e-4"]
    given += ["source.seed=3", "trainer.default_root_dir=runs/x", "hydra.job.chdir=true", "hydra/launcher=basic"]
    assert setting(given) == {"mode": "rl", "optim.lr": "0.0001", "sweep": "modes"}
    # Hydra reads the values: 1e-4 and 0.0001 are one setting; the order given does not matter
    assert setting_name(["optim.lr=0.0001", "mode=rl", "seed=2", "+sweep=modes"]) == setting_name(given)
    assert setting_name(given) == "mode=rl optim.lr=0.0001 sweep=modes"
    assert setting_name(["seed=0", "run_dir=a"]) == "default"
    assert setting(["~guard", "source.habits={preset:oracle,silence:0.3}"]) == {
        "source.habits": "{preset:oracle,silence:0.3}",
        "~guard": "",
    }
    long = setting_name([f"source.persona=personas/{'x' * 200}.yaml"])
    assert len(long) == 128 and long != setting_name([f"source.persona=personas/{'x' * 199}.yaml"])


def test_sweep_of_three_settings_by_two_seeds_gives_three_rows(sweep: Path, tmp_path: Path) -> None:
    runs = load_runs(sweep)
    assert [r.name for r in runs] == ["0", "1", "2", "3", "4", "5"]
    assert {label: [r.name for r in members] for label, members in group_settings(runs).items()} == {
        "mode=rl": ["0", "1"],
        "mode=opd": ["2", "3"],
        "mode=combine": ["4", "5"],
    }
    assert default_metric(runs) == "eval/headline"
    out, js = tmp_path / "cmp.png", tmp_path / "cmp.json"
    rows = compare(sweep, out=out, json_path=js)
    assert [r["label"] for r in rows] == ["mode=combine", "mode=rl", "mode=opd"]  # best mean first
    combine, rl, opd = rows
    assert all(r["n"] == 2 and r["seeds"] == [0, 1] and r["missing"] == [] for r in rows)
    # mean ± sample sd of two seeds: |a - b| / sqrt(2)
    assert (combine["mean"], combine["std"]) == pytest.approx((0.875, 0.125 * 2**0.5))
    assert (rl["mean"], rl["std"]) == pytest.approx((0.5625, 0.0625 * 2**0.5))
    assert (opd["mean"], opd["std"]) == pytest.approx((0.3125, 0.0625 * 2**0.5))
    assert (opd["min"], opd["max"], opd["before_mean"]) == pytest.approx((0.25, 0.375, 0.25))
    assert rl["setting"] == {"engine": "hf", "mode": "rl", "model": "tiny", "steps": "3", "sweep": "modes"}
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")

    saved = json.loads(js.read_text())
    assert [(r["label"], r["n"], r["metric"]) for r in saved] == [
        ("mode=combine", 2, "eval/headline"),
        ("mode=rl", 2, "eval/headline"),
        ("mode=opd", 2, "eval/headline"),
    ]
    assert saved[1]["runs"] == [{"run": "0", "seed": 0, "score": 0.5}, {"run": "1", "seed": 1, "score": 0.625}]
    # The resumed job's launches are concatenated in order, so its curve has all three batches.
    assert _curve(runs[1], "rollout/reward_mean") == {1.0: 0.2, 2.0: 0.3, 3.0: 0.5}


def test_same_config_under_different_run_dirs_is_one_setting(tmp_path: Path) -> None:
    """The main job run twice (run_dir= given, so the directory and trainer.default_root_dir differ), one run
    still going (no summary.json; its run_dir outside Hydra's output: no record of its overrides), and a Hydra
    output directory killed before its final evaluation (only .hydra/overrides.yaml)."""
    root = tmp_path / "runs"
    write_run(root / "monday" / "main", ["run_dir=runs/monday/main"], after=0.5)
    write_run(root / "tuesday" / "main_s1", ["run_dir=runs/tuesday/main_s1", "seed=1"], seed=1, after=0.75)
    write_run(root / "tuesday" / "main_s2", ["run_dir=runs/tuesday/main_s2", "seed=2"], seed=2, summary=False)
    write_run(root / "wednesday" / "rl", ["mode=rl"], config={"mode": {"name": "rl"}}, after=0.25)
    rl = {"mode": {"name": "rl"}}
    write_run(root / "thursday" / "rl_s1", ["mode=rl", "seed=1"], seed=1, config=rl, hydra_dir=True, summary=False)
    runs = load_runs(root)
    assert [r.overrides for r in runs if r.name == "thursday/rl_s1"] == [["mode=rl", "seed=1"]]
    assert {label: [r.name for r in members] for label, members in group_settings(runs).items()} == {
        "default": ["monday/main", "tuesday/main_s1", "tuesday/main_s2"],
        "mode=rl": ["thursday/rl_s1", "wednesday/rl"],
    }
    rows = compare(root)
    main_job = rows[0]
    assert (main_job["label"], main_job["n"], main_job["seeds"]) == ("default", 2, [0, 1])
    assert (main_job["mean"], main_job["std"]) == pytest.approx((0.625, 0.125 * 2**0.5))
    assert main_job["missing"] == ["tuesday/main_s2"]
    assert (rows[1]["n"], rows[1]["missing"]) == (1, ["thursday/rl_s1"])

    # a resumed run: summary.json keeps the resume command's overrides, .hydra/ its first launch's
    write_run(root / "friday", ["resume=runs/friday", "steps=3"], after=0.25)
    (root / "friday" / ".hydra").mkdir()
    (root / "friday" / ".hydra" / "overrides.yaml").write_text("- mode=rl\n- seed=3\n")
    assert [r["label"] for r in compare(root)][1:] == ["mode=rl steps=3", "mode=rl"]


def test_simulated_user_runs_default_to_the_headline(tmp_path: Path, capsys) -> None:
    """The main job twice, engine=hf, two personas, a guarded and an unguarded run; the configs differ in
    dozens of derived keys (guard.*, engine.options.*, present in some runs only) that must not name rows."""
    root = tmp_path / "runs"
    guard_keys = {"guard": {f"check_{i}": i for i in range(20)}}
    engine_keys = {"engine": {"_target_": "x", "options": {f"opt_{i}": i for i in range(20)}}}
    write_run(root / "main_s0", [], after=0.5)
    write_run(root / "main_s1", ["seed=1"], seed=1, after=0.625)
    write_run(root / "hf", ["engine=hf"], config=engine_keys, after=0.25)
    for name in ("bookkeeper", "phone_dad"):
        persona = f"personas/heldout/{name}.yaml"
        write_run(root / name, [f"source.persona={persona}"], config={"source": {"persona": persona}}, after=0.375)
    write_run(root / "guarded", ["guard=canary"], config=guard_keys, after=0.75)
    write_run(root / "unguarded", ["guard=none"], config={"guard": None}, after=0.125)
    main([str(root), "--out", str(tmp_path / "c.png")])
    lines = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["setting", "n", "eval/headline mean ± sd", "min", "max", "before", "seeds", "missing"]
    assert len({len(line) for line in lines[:8]}) == 1  # aligned
    table = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:8]]
    assert [(row[0], row[1], row[2], row[6]) for row in table] == [
        ("guard=canary", "1", "0.75 ± 0", "0"),
        ("default", "2", "0.5625 ± 0.08839", "0, 1"),
        ("source.persona=personas/heldout/bookkeeper.yaml", "1", "0.375 ± 0", "0"),
        ("source.persona=personas/heldout/phone_dad.yaml", "1", "0.375 ± 0", "0"),
        ("engine=hf", "1", "0.25 ± 0", "0"),
        ("guard=none", "1", "0.125 ± 0", "0"),
    ]
    assert lines[8] == ""
    assert compare(root, "eval/score")[1]["mean"] == pytest.approx(0.5625)


def test_without_a_final_evaluation_the_first_common_metric(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    write_run(root / "a", ["mode=rl"], before=None, after=None)
    write_run(root / "b", ["mode=opd"], before=None, after=None)
    assert default_metric(load_runs(root)) == "rollout/reward_mean"
    assert [r["metric"] for r in compare(root)] == ["rollout/reward_mean"] * 2

    # runs that share no metric at all: the error says what each one has
    for name in ("a", "b"):
        (root / name / "csv" / "0" / "metrics.csv").write_text(f"step,rollout/{name}_only,system/{name}\n0,0.5,1\n")
    with pytest.raises(SystemExit) as exc:
        main([str(root)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no metric is common to all 2 runs" in err
    assert "a: rollout/a_only, system/a; b: rollout/b_only, system/b" in err


def test_legend_outside_the_axes_and_title_inside_the_image(sweep: Path, tmp_path: Path) -> None:
    runs = load_runs(sweep)
    groups = group_settings(runs)
    title = "a sweep with a long name " * 8
    fig = plot(groups, "rollout/reward_mean", tmp_path / "c.png", title)
    renderer = fig.canvas.get_renderer()
    ax_curve, ax_eval = fig.axes
    legend = ax_eval.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [f"{label} (2 runs)" for label in groups]
    box = legend.get_window_extent(renderer)
    for ax in (ax_curve, ax_eval):
        assert not box.overlaps(ax.get_window_extent(renderer))
    assert box.x0 > ax_eval.get_window_extent(renderer).x1
    # saved with bbox_inches="tight": the image is the box around every artist (legend and whole title
    # included) plus 0.1 inch of padding each side
    saved = fig.get_tightbbox(renderer)  # inches
    header = (tmp_path / "c.png").read_bytes()[16:24]
    size = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")
    assert size == pytest.approx(((saved.width + 0.2) * 100, (saved.height + 0.2) * 100), abs=2)
    suptitle = next(t for t in fig.findobj(Text) if t.get_text() == fig.get_suptitle())
    for artist in (legend, suptitle):
        extent = artist.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert saved.x0 <= extent.x0 and extent.x1 <= saved.x1 and saved.y0 <= extent.y0 and extent.y1 <= saved.y1
    assert max(len(line) for line in fig.get_suptitle().splitlines()) <= 110


def test_csv_metric_uses_every_launch(sweep: Path) -> None:
    rows = {r["label"]: r for r in compare(sweep, "rollout/reward_mean", "train/loss")}
    assert (rows["mode=rl"]["mean"], rows["mode=rl"]["std"]) == pytest.approx((0.4, 0.2 / 2**0.5))  # 0.5 from csv/1
    assert "before_mean" not in rows["mode=rl"]
    assert (sweep / "compare.png").read_bytes().startswith(b"\x89PNG")  # default output path
    before = {r["label"]: r["mean"] for r in compare(sweep, "eval/score@before")}
    assert before == pytest.approx({"mode=combine": 0.25, "mode=rl": 0.25, "mode=opd": 0.25})


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


def test_wandb_run_grouped_by_the_setting(tmp_path: Path, monkeypatch) -> None:
    """An offline W&B run of `python train.py <overrides>`: group = the setting's name (the seed left out, as
    claw.compare leaves it out), job_type = the source."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    from claw.config import CONF_DIR, compose_config
    from claw.tracking import wandb_tracking

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    overrides = ["model=tiny", "engine=hf", "seed=1", "optim.lr=1e-4", "logger=wandb"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        hydra_cfg = compose(config_name="train", overrides=overrides, return_hydra_config=True)
    cfg = compose_config(overrides, tmp_path)
    HydraConfig.instance().set_config(hydra_cfg)  # as inside `python train.py`
    try:
        tracking = wandb_tracking(cfg)
        run = tracking.logger.experiment
        group, job_type = run.group, run.job_type
        tracking.finish()
    finally:
        HydraConfig.instance().cfg = None
    assert group == "engine=hf logger=wandb model=tiny optim.lr=0.0001"
    assert job_type == cfg.source.name == "simulated_user"
    write_run(tmp_path / "runs" / "a", overrides, seed=1)
    write_run(tmp_path / "runs" / "b", [o for o in overrides if o != "seed=1"], seed=0)
    write_run(tmp_path / "runs" / "c", ["model=tiny", "logger=wandb"])
    rows = {r["label"]: r for r in compare(tmp_path / "runs")}
    assert rows["engine=hf optim.lr=0.0001"]["n"] == 2
    assert setting_name(overrides) == group  # the same name compare groups by
