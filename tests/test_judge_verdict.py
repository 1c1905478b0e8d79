"""judge_turn: the signal a mode needs, and a failing judge records the turn as unjudged instead of raising."""

import asyncio
import socket

from claw.judge import HintJudge, OpenAIBackend, PRMJudge, RuleBackend, Turn
from claw.judge.build import Judges
from claw.judge.metrics import JudgeStats
from claw.judge.verdict import judge_turn

TURN = Turn(
    messages=[{"role": "user", "content": "Summarise this paragraph for me."}],
    response_text="Here is a summary in five bullet points: ...",
    next_state=[{"role": "user", "content": "Hmm, no - I wanted a single plain sentence without the bullet points."}],
)


def rule_judges(m=1):
    b = RuleBackend()
    return Judges(prm=PRMJudge(b, m=m), hint=HintJudge(b, m=m), backend=b)


def test_combine_gets_reward_and_hint_and_stats():
    stats = JudgeStats()
    v = asyncio.run(judge_turn(rule_judges(3), TURN, "combine", stats))
    assert v.status == "judged" and v.reward == -1.0 and v.trainable
    assert v.hint is not None and "bullet points" in v.hint
    assert v.prm["votes"] == [-1, -1, -1]
    s = stats.summary()
    assert s["judge/score_neg_frac"] == 1.0 and s["judge/hint_accept_rate"] == 1.0


def test_mode_selects_the_judges():
    rl = asyncio.run(judge_turn(rule_judges(), TURN, "rl"))
    opd = asyncio.run(judge_turn(rule_judges(), TURN, "opd"))
    assert rl.reward == -1.0 and rl.hint is None and rl.hint_result is None
    assert opd.reward is None and opd.prm is None and opd.hint is not None


def test_neutral_turn_is_not_trainable():
    turn = Turn(
        messages=TURN.messages,
        response_text="Done.",
        next_state=[{"role": "user", "content": "ok, what's the weather tomorrow"}],
    )
    v = asyncio.run(judge_turn(rule_judges(), turn, "combine"))
    assert v.status == "judged" and v.reward is None and v.hint is None and not v.trainable


def test_unreachable_judge_records_the_turn_as_unjudged():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIBackend(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", model="m", timeout_s=2, max_retries=0)
    judges = Judges(
        prm=PRMJudge(backend, m=2, timeout_s=2), hint=HintJudge(backend, m=2, timeout_s=2), backend=backend
    )
    v = asyncio.run(judge_turn(judges, TURN, "combine"))
    assert v.status == "unjudged" and not v.trainable and len(v.errors) == 2
    assert v.to_json()["status"] == "unjudged"  # stored with the turn for re-judging
