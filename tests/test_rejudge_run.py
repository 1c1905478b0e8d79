"""scripts/rejudge_run.py: a run's recorded verdicts judged again by the judge as it is now (real rule judge)."""

from __future__ import annotations

import importlib.util
import json

from omegaconf import OmegaConf

from claw.config import compose_config
from claw.judge.turn import Turn


def _script():
    spec = importlib.util.spec_from_file_location("rejudge_run", "scripts/rejudge_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_dir(path, reward):
    """A run directory with the default config and one judged turn whose recorded reward is `reward`."""
    path.mkdir(parents=True, exist_ok=True)
    # the default config with the rules alone (the default learned head loads the real SmolLM2: slow tests only)
    OmegaConf.save(compose_config(["judge.reader_head=null"]), path / "config.yaml")
    turn = Turn(
        turn_id="t-1",
        session_id="s-1",
        messages=[{"role": "user", "content": "What is 6 x 7?"}],
        prompt_ids=[1],
        response_ids=[2],
        rollout_logprobs=[-0.1],
        response_text="To solve this problem, we multiply. 6 x 7 = 42.",
    )
    feedback = "Don't start with 'To solve this problem'."
    records = [
        turn.to_json(),
        {"kind": "next_state", "turn_id": "t-1", "messages": [{"role": "user", "content": feedback}]},
        {"kind": "verdict", "turn_id": "t-1", "sample": True, "reason": "queued",
         "verdict": {"status": "judged", "reward": reward, "hint": feedback}},
    ]  # fmt: skip
    (path / "proxy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_rejudge_finds_no_change_in_a_faithful_log_and_the_one_changed_reward(tmp_path, capsys):
    rejudge = _script()
    # the default judge's graded credit for one complaint and no praise is -0.25: recorded so, nothing differs
    n, changed = rejudge.rejudge(_run_dir(tmp_path / "a", -0.25))
    assert (n, changed) == (1, [])
    # the same log with its reward altered: that one turn reads differently, and the command exits 1
    bad = _run_dir(tmp_path / "b", 0.5)
    n, changed = rejudge.rejudge(bad)
    assert n == 1 and len(changed) == 1 and changed[0].startswith("t-1: 0.5 ")
    assert rejudge.main([str(bad)]) == 1
    assert "1 read differently now" in capsys.readouterr().out


def test_rejudge_refuses_a_path_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "run.log").write_text("not a run")
    assert _script().main([str(tmp_path / "run.log")]) == 2
    assert "not a run directory" in capsys.readouterr().err
