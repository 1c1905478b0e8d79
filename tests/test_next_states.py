"""What each next state of a real user is worth to the rule judge (conf/judge/rule.yaml says why): a new request
on another task is neutral, a re-ask is a weak correction with no hint, an approval with a reservation is at most
neutral and its reservation is the hint, a vague complaint is a correction with no hint. (A session that ends without
a word closes its turn unjudged: tests/test_proxy.py, `session_ended_without_reply`.)"""

from __future__ import annotations

import asyncio

from omegaconf import OmegaConf

from claw.judge.build import build_judges
from claw.judge.reading.reask import repeats_request
from claw.judge.turn import Turn
from claw.judge.verdict import judge_turn
from claw.modes import Mode

REQUEST = "Homework question: Mia buys 3 pens. Each pen costs $4. How many dollars does Mia spend?"
REPLY = "To solve this problem, we multiply 3 by 4. 3 × 4 = 12. So Mia spends 12 dollars in total on the pens."
JUDGE = OmegaConf.create({"kind": "rule", "m": 1, "credit": "graded", "credit_points": 4, "credit_floor": -1.0,
                          "reask_credit": -0.25, "timeout_s": 5.0, "max_concurrency": 8, "min_hint_chars": 10,
                          "prm_prompt": "prm.yaml", "hint_prompt": "hint.yaml"})  # fmt: skip


def verdict(feedback: str, judge=JUDGE):
    turn = Turn(messages=[{"role": "user", "content": REQUEST}], response_text=REPLY,
                next_state=[{"role": "user", "content": feedback}])  # fmt: skip
    return asyncio.run(judge_turn(build_judges(judge), turn, Mode.named("combine")))


def test_a_new_request_on_another_task_is_neutral():
    v = verdict("Homework question: Leo puts cards in 5 rows with 2 cards in each row. How many cards are there?")
    assert v.reward is None and v.hint is None and not v.trainable


def test_a_reask_is_a_weak_correction_without_a_hint():
    v = verdict("let me ask it another way: Mia buys 3 pens, each costing $4. How many dollars does she spend?")
    assert v.reward == -0.25 and v.hint is None
    off = OmegaConf.merge(JUDGE, {"reask_credit": 0.0})
    assert (
        verdict(
            "let me ask it another way: Mia buys 3 pens, each costing $4. How many dollars does she spend?", off
        ).reward
        is None
    )


def test_an_approval_with_a_reservation_is_at_most_neutral_and_its_reservation_is_the_hint():
    v = verdict("Thanks, that works, though it's a bit long.")
    assert v.reward is not None and -0.5 <= v.reward <= 0.0
    assert v.hint and "long" in v.hint


def test_a_vague_complaint_is_a_correction_with_nothing_to_distil():
    v = verdict("hmm, not quite")
    assert v.reward is not None and v.reward < 0 and v.hint is None


def test_repeats_request_needs_the_numbers_and_most_of_the_words():
    assert repeats_request("again: Mia buys 3 pens at $4 each, how many dollars does Mia spend?", REQUEST)
    assert not repeats_request("what about 7 x 8?", REQUEST)
    assert not repeats_request("Mia buys 5 pens. Each pen costs $4. How many dollars does Mia spend?", REQUEST)
    assert not repeats_request("Leo buys 3 cakes at $4 each. How much does Leo pay?", REQUEST)  # same numbers only
    assert not repeats_request("thanks", REQUEST)


def test_a_reask_is_read_when_the_learned_head_is_the_one_that_finds_no_cue():
    """The head may move the rules' reading to neutral; a neutral message that asks the request again is still a
    re-ask (the head's verdict 0 and the rules' 0 are the same reading)."""
    from claw.judge.rule import RuleBackend

    class Neutral:  # a head that is sure every message is neutral
        def reading(self, text):
            return "neutral", 0.99

    backend = RuleBackend(reask_credit=-0.25)
    backend.reader = Neutral()
    reask = "ok but simply: Mia buys 3 pens. Each pen costs $4. How many dollars does Mia spend?"  # rules: -1
    turn = Turn(messages=[{"role": "user", "content": REQUEST}], response_text=REPLY,
                next_state=[{"role": "user", "content": reask}])  # fmt: skip
    assert backend.score_turn(turn)[0] == -1 and backend.graded_score(turn) == -0.25
    other = Turn(messages=[{"role": "user", "content": REQUEST}], response_text=REPLY,
                 next_state=[{"role": "user", "content": "What is the capital of Peru?"}])  # fmt: skip
    assert backend.score_turn(other)[0] == 0 and backend.graded_score(other) == 0.0
