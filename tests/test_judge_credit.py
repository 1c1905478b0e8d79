"""`judge.credit`: binary (the majority, ±1) against graded (how much the feedback approves)."""

from __future__ import annotations

import asyncio

import pytest

from claw.judge.backends import build_backend
from claw.judge.build import Judges
from claw.judge.hint import HintJudge
from claw.judge.prm import PRMJudge
from claw.judge.reading import read_reply
from claw.judge.rule import graded_credit
from claw.judge.turn import Turn
from claw.judge.verdict import judge_turn


def _turn(reply: str) -> Turn:
    return Turn(
        messages=[{"role": "user", "content": "A box holds 6 rows of 4 eggs. How many eggs?"}],
        response_text="To solve this problem, we multiply: 6 × 4 = 24. The answer is 24 eggs.",
        next_state=[{"role": "user", "content": reply}],
    )


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Thanks, that's perfect!", 1.0),
        ("What about 7 x 8?", 0.0),
        ("It's too long, keep it under 40 words.", -1 / 2),
        ("It's too long, keep it under 40 words. Don't start with 'To solve this problem'.", -2 / 3),
        ("Good that the working is there. It's too long, keep it under 40 words.", 0.0),
        (
            "Don't open with a stock phrase. Too long. You forgot the working. That's wrong, check the arithmetic.",
            -4 / 5,
        ),
    ],
)
def test_graded_credit_counts_complaints_and_approvals(reply: str, expected: float) -> None:
    assert graded_credit(read_reply(reply)) == pytest.approx(expected)


def test_fewer_complaints_earn_more_and_any_complaint_less_than_thanks() -> None:
    one, two, four = (graded_credit(read_reply(r)) for r in (
        "Too long.",
        "Too long. You forgot the working.",
        "Too long. You forgot the working. Don't say 'Sure'. The answer is wrong.",
    ))  # fmt: skip
    assert 1.0 > one > two > four > -1.0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Thanks, that's perfect!", 1.0),  # an approval stays +1
        ("It's too long, keep it under 40 words.", -1 / 4),
        ("Too long. You forgot the working.", -2 / 4),
        ("Too long. You forgot the working. Don't say 'Sure'. The answer is wrong.", -4 / 4),
        ("Too long. No working. Don't say 'Sure'. Wrong answer. Too formal.", -1.0),  # five: clipped at -1
        ("Good that the working is there. It's too long, keep it under 40 words.", 0.0),
    ],
)
def test_linear_credit_costs_one_kth_per_complaint(reply: str, expected: float) -> None:
    assert graded_credit(read_reply(reply), points=4) == pytest.approx(expected)


def test_without_a_floor_each_complaint_past_the_fourth_still_costs() -> None:
    """`judge.credit_floor=null`: five complaints earn less than four, where the default floor gives both -1; fewer
    than four, and any approval, read the same either way."""
    four = read_reply("Too long. You forgot the working. Don't say 'Sure'. The answer is wrong.")
    five = read_reply("Too long. No working. Don't say 'Sure'. Wrong answer. Too formal.")
    assert graded_credit(four, points=4) == graded_credit(five, points=4) == -1.0
    assert graded_credit(four, points=4, floor=None) == pytest.approx(-1.0)
    assert graded_credit(five, points=4, floor=None) == pytest.approx(-1.25)
    for reply in ("Too long. You forgot the working.", "Perfect, thanks!", "Good that the working's there. Too long."):
        assert graded_credit(read_reply(reply), points=4, floor=None) == graded_credit(read_reply(reply), points=4)


def test_credit_points_reach_the_rule_backend_from_the_config() -> None:
    from omegaconf import OmegaConf

    from claw.judge.build import build_judges

    cfg = OmegaConf.load("conf/judge/rule.yaml")
    cfg.reader_head = None  # the rules alone: the default learned head loads the real SmolLM2 (slow tests only)
    turn = _turn("Too long. You forgot the working.")
    assert build_judges(cfg).backend.credit_points == 4  # the default: linear, a quarter per complaint
    assert asyncio.run(build_judges(cfg).prm.judge(turn)).reward == pytest.approx(-0.5)
    cfg.credit_points = None  # the ratio form: (a - k) / (a + k + 1)
    assert build_judges(cfg).backend.credit_points is None
    assert asyncio.run(build_judges(cfg).prm.judge(turn)).reward == pytest.approx(-2 / 3)
    with pytest.raises(ValueError, match="judge.credit_points must be a positive integer"):
        build_backend("rule", credit_points=0)
    cfg.credit_points, cfg.credit_floor = 4, None  # no lower clip: five complaints cost 5/4
    five = _turn("Too long. No working. Don't say 'Sure'. Wrong answer. Too formal.")
    assert asyncio.run(build_judges(cfg).prm.judge(five)).reward == pytest.approx(-1.25)
    with pytest.raises(ValueError, match="judge.credit_floor must be <= 0 or null"):
        build_backend("rule", credit_points=4, credit_floor=0.5)


def _judge(credit: str) -> PRMJudge:
    return PRMJudge(build_backend("rule"), m=1, credit=credit)


def test_binary_credit_is_the_majority_and_graded_the_net_approval() -> None:
    turn = _turn("It's too long, keep it under 40 words. You forgot to show the working.")
    binary, graded = (asyncio.run(_judge(c).judge(turn)) for c in ("binary", "graded"))
    assert (binary.score, binary.reward) == (-1, -1.0)
    assert (graded.score, graded.reward) == (-1, pytest.approx(-2 / 3))
    neutral = asyncio.run(_judge("graded").judge(_turn("What about 7 x 8?")))
    assert neutral.reward is None  # no feedback: no RL signal, in either credit


def test_a_correction_that_nets_zero_still_trains_under_graded_credit() -> None:
    """A compliment and one complaint net 0: under graded credit that is a reward of 0 (a signal relative to
    the baseline), not 'no feedback'."""
    verdict = asyncio.run(
        judge_turn(
            Judges(prm=_judge("graded"), hint=HintJudge(build_backend("rule"), m=1), backend=build_backend("rule")),
            _turn("Good that the working is there. It's too long, keep it under 40 words."),
            "combine",
        )
    )
    assert verdict.reward == 0.0 and verdict.trainable
    assert verdict.hint is not None and "too long" in verdict.hint.lower()


def test_graded_credit_of_an_llm_judge_is_its_mean_valid_vote() -> None:
    judge = PRMJudge(build_backend("rule"), m=3, credit="graded")
    judge.backend = type("Votes", (), {"kind": "openai"})()  # only _reward's branch on the kind is under test
    assert judge._reward(_turn("x"), 1, [1, 1, -1]) == pytest.approx(1 / 3)
    assert judge._reward(_turn("x"), 0, [0, 0]) is None
    assert judge._reward(_turn("x"), 0, []) is None


def test_unknown_credit_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="judge.credit must be one of binary, graded"):
        _judge("partial")
