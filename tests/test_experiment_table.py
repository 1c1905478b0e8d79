"""experiments/personal_agent: table.py's variant labels (the levers a run changes) and gap_by_position.py."""

import importlib.util
import json

import pytest


def _script(name: str):
    """experiments/personal_agent/<name>.py as a module (the folder is no package)."""
    spec = importlib.util.spec_from_file_location(name, f"experiments/personal_agent/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table():
    return _script("table")


def test_variant_names_each_changed_lever_by_its_label():
    table = _table()
    cfg = {
        "mode": {"name": "combine", "w_opd": 0.1, "topk": 8, "topk_coef": 1.0, "opd_skip_end": False},
        "optim": {"lr": 1e-4},
        "algo": {"name": "reinforce", "overlong": {"mode": "penalty", "penalty": 0.5}},
        "lora": {"enabled": True},
    }
    assert table.variant(cfg) == "w_opd=0.1 lr=0.0001 overlong.mode=penalty topk=8 topk_coef=1.0 lora=True"


def test_variant_names_a_path_inside_the_repository_from_its_root():
    # run.sh passes mode.teacher=$PWD/runs/...: results.json must not carry the machine's directory
    table = _table()
    inside = {"mode": {"name": "combine", "teacher": str(table.ROOT / "runs" / "headroom" / "imitated_teacher_s0")}}
    assert table.variant(inside) == "teacher=runs/headroom/imitated_teacher_s0"
    outside = {"mode": {"name": "combine", "teacher": "/elsewhere/ckpt"}}
    assert table.variant(outside) == "teacher=/elsewhere/ckpt"


def test_variant_ignores_levers_the_mode_does_not_use():
    table = _table()
    cfg = {"mode": {"name": "rl", "w_opd": 0.0, "opd_skip_end": True}, "judge": {"credit": "binary"}}
    assert table.variant(cfg) == ""
    assert table.variant({"mode": {"name": "combine", "opd_skip_end": True}}) == "opd_skip_end=True"
    assert table.variant({"mode": {"name": "rl", "hint_role": "system"}}) == ""  # rl shows no hint
    assert table.variant({"mode": {"name": "combine", "hint_role": "system"}}) == "hint_role=system"
    contrast = {"name": "combine", "hint_contrast": "Please try again."}
    assert table.variant({"mode": contrast}) == "contrast=Please try again."
    assert table.variant({"mode": {**contrast, "hint_contrast": None}}) == ""
    half = {**contrast, "hint_contrast_scale": 0.5}
    assert table.variant({"mode": half}) == "contrast=Please try again. contrast_scale=0.5"


def test_batch_size_is_a_lever():
    table = _table()
    assert table.variant({"mode": {"name": "rl"}, "batch_size": 16, "steps": 16}) == "steps=16 batch_size=16"
    assert table.variant({"mode": {"name": "rl"}, "batch_size": 8, "steps": 8}) == ""


def test_merge_keeps_recorded_runs_and_replaces_a_run_read_again():
    table = _table()
    recorded = [{"run": "b", "p": 0.1}, {"run": "a", "p": 0.2}]
    merged = table.merge(recorded, [{"run": "b", "p": 0.01}, {"run": "c", "p": 0.3}])
    assert [(r["run"], r["p"]) for r in merged] == [("a", 0.2), ("b", 0.01), ("c", 0.3)]
    assert table.merge([], []) == []


def test_the_gate_and_ppo_epochs_are_levers_and_rl_shows_no_gate():
    table = _table()
    assert table.variant({"mode": {"name": "combine", "hint_gate": "apology"}}) == "hint_gate=apology"
    assert table.variant({"mode": {"name": "rl", "hint_gate": "apology"}}) == ""
    assert table.variant({"mode": {"name": "rl"}, "algo": {"ppo_epochs": 4}}) == "ppo_epochs=4"


def test_an_entry_keeps_the_apology_rate_and_drops_the_replies(tmp_path):
    import json

    table = _table()
    ev = {"score": 0.5, "pass_rates": {"you": 1.0}, "examples": [{"response": "x"}], "responses": ["You're right."],
          "apology_rate": 1.0, "scores": [0.5]}  # fmt: skip
    (tmp_path / "eval.json").write_text(json.dumps({"before": ev, "after": ev, "paired_t_p": 0.5}))
    entry = table._entry(tmp_path)
    assert entry["eval"]["after"]["apology_rate"] == 1.0
    assert "responses" not in entry["eval"]["after"] and "examples" not in entry["eval"]["before"]


def test_sampling_temperature_is_a_lever():
    table = _table()
    assert table.variant({"mode": {"name": "rl"}, "source": {"temperature": 1.0}}) == "temperature=1.0"
    assert table.variant({"mode": {"name": "rl"}, "source": {"temperature": 0.7}}) == ""


def test_the_credit_role_and_a_hint_left_out_are_levers():
    table = _table()
    default = {"name": "combine", "opd_role": "term", "hint_format": "{content}\n\n[hint] {hint}"}
    assert table.variant({"mode": default}) == ""
    assert table.variant({"mode": {**default, "opd_role": "credit"}}) == "opd_role=credit"
    assert table.variant({"mode": {**default, "hint_format": "{content}"}}) == "hint_format={content}"
    assert table.variant({"mode": {"name": "rl", "opd_role": "credit", "hint_format": "{content}"}}) == ""


def test_gap_by_position_reads_the_first_tokens_apart_and_leaves_the_end_out(tmp_path):
    import sys

    sys.path.insert(0, "experiments/personal_agent")  # the script imports its sibling end_of_turn_gap
    try:
        spec = importlib.util.spec_from_file_location("gbp", "experiments/personal_agent/gap_by_position.py")
        gbp = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gbp)
    finally:
        sys.path.remove("experiments/personal_agent")
    rows = [  # gaps (teacher - behaviour): [-1, -0.5, -0.2, -0.2, -0.2, -0.1, -3 (its end-of-turn token)]
        {"teacher_logprobs": [-2.0, -1.5, -1.2, -1.2, -1.2, -1.1, -4.0], "rollout_logprobs": [-1.0] * 7,
         "finished": True},
        {"teacher_logprobs": [-1.0, -1.0], "rollout_logprobs": [-1.0, -1.0], "finished": False},  # cut: both count
        {"teacher_logprobs": None, "rollout_logprobs": [-1.0], "finished": True},  # no hint: skipped
    ]  # fmt: skip
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = gbp.gap_by_position(path)
    # token 1: mean(-1, 0) = -0.5; token 2: mean(-0.5, 0) = -0.25; 3-5: -0.2 x 3; rest: -0.1 (the -3 left out)
    assert got["n"] == 2
    assert got["1"] == pytest.approx(-0.5) and got["2"] == pytest.approx(-0.25)
    assert got["3-5"] == pytest.approx(-0.2) and got["rest"] == pytest.approx(-0.1)


def test_summary_counts_seeds_not_runs():
    # seed 0 run twice under two names (0.8 and 0.9: one seed, mean 0.85), seed 1 once (0.5), a _final check left out
    def row(run, seed, after, p=0.01):
        key = {"persona": "student", "mode": "combine", "engine": "vllm", "schedule": "lockstep", "variant": ""}
        return {"run": run, "seed": seed, "p": p, "eval": {"before": {"score": 0.4}, "after": {"score": after}}, **key}

    rows = [row("a_s0", 0, 0.8), row("main_s0_s19", 0, 0.9, 0.2), row("a_s1", 1, 0.5), row("a_s1_final", 1, 0.0)]
    [(key, seeds, before, after, worst)] = _table().summarise(rows)
    assert key == ("student", "combine", "vllm", "lockstep", "") and seeds == 2
    assert before == pytest.approx(0.4) and after == pytest.approx((0.85 + 0.5) / 2) and worst == 0.2


def test_a_lever_set_to_null_is_a_variant_and_a_key_an_older_run_lacks_is_not():
    """`judge.credit_floor=null` changes the credit, so it must not count as a seed of the default; a run from before
    the key existed ran at the floor it had, -1."""
    table = _table()
    cfg = {"mode": {"name": "rl"}, "judge": {"credit": "graded", "credit_points": 4, "credit_floor": None}}
    assert table.variant(cfg) == "credit=graded credit_points=4 credit_floor=None"
    del cfg["judge"]["credit_floor"]
    assert table.variant(cfg) == "credit=graded credit_points=4"


def _report():
    return _script("report")


def test_report_pools_a_settings_seeds_and_names_every_code():
    report = _report()
    assert report.setting(["seed=1", "run_dir=runs/x", "mode=rl", "source.habits=oracle"]) == (
        "mode=rl source.habits=oracle"
    )
    assert report.setting(["seed=2"]) == "default"

    def run(seed, before, after, commit, dirty):
        test = {"ttest_rel_p": 0.001, "gain_ci_low": after - before - 0.1, "gain_ci_high": after - before + 0.1}
        return {"run": f"r{seed}", "setting": "default", "persona": "student", "mode": "combine", "seed": seed,
                "provenance": {"commit": commit, "dirty": dirty}, "before": {"score": before},
                "after": {"score": after}, "test": test, "repair": {"before": None, "after": None}}  # fmt: skip

    [row] = report.settings([run(1, 0.4, 0.8, "abcdef123", False), run(0, 0.4, 0.6, "1234567aa", True)])
    assert row["seeds"] == [0, 1] and row["gains"] == pytest.approx([0.2, 0.4])
    assert row["gain"] == pytest.approx([0.3, 0.1414213], rel=1e-5)  # mean and sample sd over seeds
    assert row["codes"] == ["1234567+", "abcdef1"]
    assert "1234567+, abcdef1" in report.markdown([row])


def test_a_seed_run_again_stands_for_its_seed_and_the_earlier_run_is_marked():
    report = _script("report")

    def run(name, seed, date, gain):
        score = {"score": 0.4, "ci": [0, 1], "pass": {}}
        return {
            "run": name, "persona": "student", "mode": "combine", "setting": "default", "seed": seed,
            "provenance": {"commit": name * 7, "date": date}, "before": score,
            "after": {**score, "score": 0.4 + gain}, "repair": {"before": None, "after": None},
            "test": {"ttest_rel_p": 0.01, "gain_ci_low": 0, "gain_ci_high": 1},
        }  # fmt: skip

    old, new, other = run("a", 0, "2026-12-06", 0.1), run("b", 0, "2026-12-07", 0.3), run("c", 1, "2026-12-06", 0.2)
    (row,) = report.settings([new, old, other])
    assert row["seeds"] == [0, 1] and row["runs"] == ["b", "c"]
    assert [round(g, 6) for g in row["gains"]] == [0.3, 0.2]
    assert old["superseded_by"].startswith("b") and "superseded_by" not in new
