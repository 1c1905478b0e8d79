"""experiments/guarded_updates: Spearman's rank correlation by hand, OPE/rating pairs from run directories,
and the decisions plot written as a PNG."""

import importlib
import json
import math
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "experiments" / "guarded_updates"))
validation = importlib.import_module("ope_validation")
plot = importlib.import_module("plot")


def test_spearman_by_hand():
    assert validation.ranks([10.0, 30.0, 20.0, 20.0]) == [1.0, 4.0, 2.5, 2.5]  # the tie shares ranks 2 and 3
    assert validation.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert validation.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x = 1,2,3,4 and y = 2,1,4,3: Σd² = 4, ρ = 1 − 6·4 / (4·15) = 0.6
    assert validation.spearman([0.1, 0.2, 0.3, 0.4], [0.5, 0.4, 0.9, 0.8]) == pytest.approx(0.6)
    # with a tie: rx = 1, 2.5, 2.5, 4 and ry = 1, 2, 3, 4 (means 2.5); dx = -1.5, 0, 0, 1.5; dy = -1.5, -0.5, 0.5, 1.5
    # Σ dx·dy = 2.25 + 2.25 = 4.5, Σ dx² = 4.5, Σ dy² = 5 → ρ = 4.5 / sqrt(4.5 · 5) = 0.94868
    assert validation.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.948683, abs=1e-6)
    assert math.isnan(validation.spearman([1, 2], [1, 2])) and math.isnan(validation.spearman([1, 1, 1], [1, 2, 3]))


def fake_run(path, decisions, ratings, steps):
    """A run directory as train.py leaves it: guard.jsonl, eval.json (before, step_k, after), summary.json."""
    path.mkdir(parents=True)
    lines = []
    for step, (action, ope, served) in enumerate(decisions, start=1):
        ev = {"candidate": None if ope is None else {"value": ope}}
        lines.append(
            json.dumps({"step": step, "action": action, "served_version": served, "evidence": ev, "reasons": []})
        )
    (path / "guard.jsonl").write_text("\n".join(lines) + "\n")
    ev = {"before": {"headline": ratings[0], "ci_low": ratings[0] - 0.1, "ci_high": ratings[0] + 0.1}}
    for k, r in enumerate(ratings[1:-1], start=1):
        ev[f"step_{k}"] = {"headline": r, "ci_low": r - 0.1, "ci_high": r + 0.1}
    ev["after"] = {"headline": ratings[-1], "ci_low": ratings[-1] - 0.1, "ci_high": ratings[-1] + 0.1}
    ev["paired_t_p"] = 0.5
    (path / "eval.json").write_text(json.dumps(ev))
    (path / "summary.json").write_text(json.dumps({"steps": steps}))


def test_pairs_and_table_from_run_directories(tmp_path, capsys):
    # steps 1..4; step 2 held (not paired), step 4's rating is eval.json's "after"
    a = tmp_path / "a"
    fake_run(
        a,
        [("promote", 0.1, 1), ("hold", 0.9, 1), ("promote", 0.3, 3), ("promote", 0.2, 4)],
        [0.5, 0.4, 0.45, 0.6, 0.55],
        steps=4,
    )
    assert validation.pairs(a) == [(1, 0.1, 0.4), (3, 0.3, 0.6), (4, 0.2, 0.55)]
    b = tmp_path / "b"
    fake_run(b, [("promote", 0.5, 1), ("promote", 0.4, 2), ("promote", 0.6, 3)], [0.5, 0.7, 0.6, 0.8], steps=3)
    t = validation.table([str(a), str(b)])
    assert [r["n"] for r in t["runs"]] == [3, 3] and t["runs"][0]["spearman"] == pytest.approx(1.0)
    assert t["runs"][1]["spearman"] == pytest.approx(1.0) and t["pooled"]["n"] == 6
    assert validation.main([str(a), str(b), "--json", str(tmp_path / "v.json")]) == 0
    assert (
        "| pooled | 6 |" in capsys.readouterr().out
        and json.loads((tmp_path / "v.json").read_text())["pooled"]["n"] == 6
    )


def test_plot_writes_a_png(tmp_path):
    g, u = tmp_path / "guarded", tmp_path / "unguarded"
    fake_run(g, [("promote", 0.1, 1), ("hold", None, 1), ("rollback", 0.2, 0)], [0.5, 0.55, 0.55, 0.5], steps=3)
    u.mkdir()
    (u / "eval.json").write_text(
        json.dumps(
            {
                "before": {"headline": 0.5, "ci_low": 0.4, "ci_high": 0.6},
                "step_1": {"headline": 0.2, "ci_low": 0.1, "ci_high": 0.3},
            }
        )
    )
    out = plot.plot(str(g), str(u), str(tmp_path / "d.png"))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_changes_pair_the_summed_ope_gain_with_the_rating_change(tmp_path):
    """Steps 1-4 promoted; evaluations before (0), at 2 and at 4. OPE gains (candidate - served on the same
    turns): +0.1, +0.2 (sum +0.3 over 0..2) and -0.05, -0.05 (sum -0.1 over 2..4); ratings 0.4 -> 0.6 -> 0.5."""
    run = tmp_path / "r"
    run.mkdir()
    gains = [(0.1, 0.0), (-0.3, -0.5), (0.2, 0.25), (0.0, 0.05)]  # (candidate value, served value) per step
    lines = [
        {"step": s, "action": "promote", "evidence": {"candidate": {"value": c}, "served": {"value": v}}}
        for s, (c, v) in enumerate(gains, start=1)
    ]
    (run / "guard.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    evals = {"before": {"headline": 0.4}, "step_2": {"headline": 0.6}, "after": {"headline": 0.5}}
    (run / "eval.json").write_text(json.dumps(evals))
    (run / "summary.json").write_text(json.dumps({"steps": 4}))
    got = validation.changes(run)
    assert [(j, k) for j, k, *_ in got] == [(0, 2), (2, 4)]
    assert got[0][2:] == pytest.approx((0.3, 0.2)) and got[1][2:] == pytest.approx((-0.1, -0.1))
    assert validation.sign_agreement([(0.3, 0.2), (-0.1, -0.1), (0.2, -0.3)]) == pytest.approx(2 / 3)
    t = validation.table([str(run)])
    assert t["changes"][0]["n"] == 2 and t["changes_pooled"]["sign_agreement"] == 1.0
