"""`python -m claw.judge.evaluate`: the numbers on a small labelled file, worked out by hand, and a proxy log."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from claw.judge.evaluate import main

ROOT = Path(__file__).resolve().parents[1]
# The rules alone: the default judge adds the learned head, which loads the real SmolLM2 (the slow test at the end)
RULES_ALONE = ["--set", "reader_head=null"]

# (id, reading a person gives, kind, feedback) — the rule judge's reading in the comment.
LINES = [
    ("a1", "approve", "approval", "Thanks, that's perfect!"),  # +1
    ("a2", "approve", "brief", "Sounds good."),  # +1
    ("a3", "approve", "brief", "Hmm."),  # 0: misread
    ("c1", "correct", "request", "Please be more concise."),  # -1, hint
    ("c2", "correct", "value", "It should say 42, not 24."),  # -1, hint
    ("c3", "correct", "value", "Wrong."),  # -1, no hint (a bare verdict)
    ("n1", "neutral", "follow_up", "what about 7 x 8?"),  # 0
    ("n2", "neutral", "follow_up", "Great, now what's 9 x 9?"),  # +1: misread (the thanks counts)
]


@pytest.fixture
def lines_file(tmp_path):
    path = tmp_path / "lines.jsonl"
    rows = [
        {"id": i, "request": "What is 6 x 7?", "response": "6 x 7 = 24.", "feedback": f, "reading": r, "kind": k}
        for i, r, k, f in LINES
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_evaluate_rules_alone_numbers(lines_file, tmp_path, capsys):
    out = tmp_path / "report.json"
    summary = main([str(lines_file), "--json", str(out), *RULES_ALONE])
    assert summary["n_labelled"] == 8 and summary["accuracy"] == 6 / 8
    assert summary["confusion"] == {
        "approve": {"+1": 2, "-1": 0, "0": 1},
        "correct": {"+1": 0, "-1": 3, "0": 0},
        "neutral": {"+1": 1, "-1": 0, "0": 1},
    }
    assert summary["per_kind"] == {
        "approval": {"n": 1, "accuracy": 1.0},
        "brief": {"n": 2, "accuracy": 0.5},
        "follow_up": {"n": 2, "accuracy": 0.5},
        "request": {"n": 1, "accuracy": 1.0},
        "value": {"n": 2, "accuracy": 1.0},
    }
    assert summary["hint_rate"] == 2 / 3 and summary["hint_rate_not_correct"] == 0.0
    report = json.loads(out.read_text())
    assert report["summary"]["accuracy"] == 0.75 and [r["id"] for r in report["lines"]] == [i for i, *_ in LINES]
    by_id = {r["id"]: r for r in report["lines"]}
    assert by_id["c1"]["hint"] == "Please be more concise." and by_id["c3"]["hint"] is None
    assert (by_id["n2"]["score"], by_id["a3"]["score"]) == (1, 0)
    printed = capsys.readouterr().out
    assert "reading accuracy   75.0%" in printed and "hint from corrections   66.7%" in printed


def test_evaluate_limit_and_command_line(lines_file):
    """The real command, as a user runs it: --limit takes the first lines."""
    cmd = [
        sys.executable,
        "-m",
        "claw.judge.evaluate",
        str(lines_file),
        "--limit",
        "3",
        "--show-errors",
        "5",
        *RULES_ALONE,
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "reading accuracy   66.7%  (3 lines)" in done.stdout and "[approve → 0] brief: 'Hmm.'" in done.stdout


def test_evaluate_reads_a_proxy_log(tmp_path):
    """proxy.jsonl: turn records with the next state that arrived; no labels, so the report is what the judge reads."""
    log = tmp_path / "proxy.jsonl"
    records = []
    for turn_id, reply in (
        ("t1", "Thanks, perfect!"),
        ("t2", "Use metric units."),
        ("t3", "what about 7 x 8?"),
        ("t4", None),
    ):
        records.append({"kind": "turn", "turn_id": turn_id, "messages": [{"role": "user", "content": "How far?"}],
                        "response_text": "About 3 miles.", "prompt_ids": [1], "response_ids": [2]})  # fmt: skip
        if reply is not None:  # t4 never got a next state: nothing to judge
            records.append(
                {"kind": "next_state", "turn_id": turn_id, "messages": [{"role": "user", "content": reply}]}
            )
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = main([str(log), *RULES_ALONE])
    assert summary["n"] == 3 and "accuracy" not in summary
    assert summary["score_share"] == {"+1": 1 / 3, "-1": 1 / 3, "0": 1 / 3}
    assert summary["hint_rate_of_judged_corrections"] == 1.0


def test_evaluate_rejects_an_unknown_reading(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"request": "q", "response": "a", "feedback": "ok", "reading": "positive"}) + "\n")
    with pytest.raises(ValueError, match="reading must be one of"):
        main([str(path), *RULES_ALONE])


def test_bare_corrections_marked_fix_false_get_their_own_hint_rate(tmp_path, capsys):
    path = tmp_path / "lines.jsonl"
    rows = [
        {"id": i, "request": "What is 6 x 7?", "response": "6 x 7 = 24.", "feedback": f, "reading": r, "kind": k}
        for i, r, k, f in LINES
    ]
    rows[5]["fix"] = False  # c3 "Wrong.": a bare verdict, nothing to extract
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    summary = main([str(path), *RULES_ALONE])
    assert summary["hint_rate"] == 2 / 3 and summary["n_fixable"] == 2 and summary["hint_rate_fixable"] == 1.0
    assert "hint from corrections with a fix  100.0%  (2;" in capsys.readouterr().out
    rows[5]["fix"] = "no"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ValueError, match="fix must be true or false"):
        main([str(path), *RULES_ALONE])


@pytest.mark.slow
def test_the_default_judge_reads_with_the_learned_head(lines_file, tmp_path):
    """The default `judge=rule` adds the shipped head: it reads the thanks in a follow-up question as neither (the
    rules read +1), and leaves the rules' other readings and hints as they were."""
    out = tmp_path / "report.json"
    summary = main([str(lines_file), "--json", str(out)])
    assert summary["accuracy"] == 7 / 8 and summary["hint_rate"] == 2 / 3
    by_id = {r["id"]: r for r in json.loads(out.read_text())["lines"]}
    assert (by_id["n2"]["score"], by_id["a3"]["score"]) == (0, 0)
    assert by_id["c1"]["hint"] == "Please be more concise." and by_id["c3"]["hint"] is None
