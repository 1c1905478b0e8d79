"""The rule backend on realistic replies written for this test (not lexicon entries), alone and inside the judges."""

import asyncio

import pytest

from claw.config import compose_config
from claw.judge import HintJudge, PRMJudge, RuleBackend, Turn, build_backend, build_judges

REQUEST = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Summarise this article for me."}]
RESPONSE = "- point one\n- point two"


def user_turn(reply: str) -> Turn:
    return Turn(messages=REQUEST, response=RESPONSE, next_state=[{"role": "user", "content": reply}])


def tool_turn(*outputs: str) -> Turn:
    return Turn(messages=REQUEST, response='<tool_call>{"name": "read_file"}</tool_call>', next_state=[{"role": "tool", "content": o} for o in outputs])


CASES = [
    (user_turn("Perfect, that's exactly what I needed, cheers!"), 1),
    (user_turn("Hmm, no — I wanted it without the bullet points, please redo it."), -1),
    (user_turn("ok what's the weather tomorrow"), 0),
    (user_turn("Thanks, but that's wrong: the article is about 2019, not 2021."), -1),  # a correction wins over thanks
    (user_turn("Great stuff. Now can you draft a reply to the author?"), 1),
    (user_turn("That is way too long. Give me three sentences at most."), -1),
    (user_turn("Thanks again, no worries if it takes a while."), 1),  # "again"/"no" inside polite phrases are not corrections
    (tool_turn("Traceback (most recent call last): FileNotFoundError"), -1),
    (tool_turn("total 3\n-rw-r--r-- notes.md\n-rw-r--r-- todo.md"), 1),
    (tool_turn("ok: 12 rows", "bash: rg: command not found"), -1),
    (Turn(messages=REQUEST, response=RESPONSE, next_state=[]), 0),
]


@pytest.mark.parametrize("turn,score", CASES)
def test_rule_scores(turn, score):
    got, rationale = RuleBackend().score_turn(turn)
    assert got == score, rationale
    assert rationale


def test_rule_hint_is_the_corrective_sentence():
    backend = RuleBackend()
    hint = backend.hint_for(user_turn("Hmm, no — I wanted it without the bullet points, please redo it."))
    assert hint is not None and "without the bullet points" in hint and not hint.lower().startswith(("hmm", "no"))
    multi = backend.hint_for(user_turn("I read it twice. You forgot the conclusion. Also, the author's name is misspelled."))
    assert multi == "You forgot the conclusion."  # only sentences with a correction cue
    assert backend.hint_for(user_turn("Nope.")) is None  # nothing left to teach
    assert backend.hint_for(user_turn("Perfect, that's exactly what I needed, cheers!")) is None
    assert (
        backend.hint_for(tool_turn("Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: 'title'"))
        == "The previous tool call failed: KeyError: 'title'"
    )
    assert backend.hint_for(tool_turn("Traceback (most recent call last): FileNotFoundError")).startswith("The previous tool call failed: Traceback")
    assert backend.hint_for(tool_turn("2 files")) is None


@pytest.mark.parametrize("turn,score", CASES)
def test_prm_judge_with_rules(turn, score):
    result = asyncio.run(PRMJudge(RuleBackend(), m=3).judge(turn))
    assert (result.score, result.votes, result.agreement, result.n_abstain, result.error) == (score, [score] * 3, 1.0, 0, None)
    assert result.rationale.endswith(f"\\boxed{{{score}}}")


def test_hint_judge_with_rules():
    judge = HintJudge(RuleBackend(), m=3)
    accepted = asyncio.run(judge.extract(user_turn("Hmm, no — I wanted it without the bullet points, please redo it.")))
    assert accepted.accepted and "without the bullet points" in accepted.hint and accepted.votes == [1, 1, 1]
    rejected = asyncio.run(judge.extract(user_turn("ok what's the weather tomorrow")))
    assert (rejected.accepted, rejected.hint, rejected.votes, rejected.n_positive) == (False, None, [-1, -1, -1], 0)


def test_rule_backend_is_not_a_chat_model():
    with pytest.raises(NotImplementedError, match="score_turn"):
        asyncio.run(RuleBackend().complete([{"role": "user", "content": "hi"}], 0.6, 8))
    with pytest.raises(ValueError, match="rule, openai or policy"):
        build_backend("verifier")


def test_build_judges_from_config():
    judges = build_judges(compose_config(["judge=rule", "judge.m=3", "judge.min_hint_chars=5"]).judge)
    assert isinstance(judges.backend, RuleBackend) and judges.prm.m == 3 and judges.hint.min_hint_chars == 5
    assert asyncio.run(judges.prm.judge(user_turn("Perfect, that's exactly what I needed, cheers!"))).score == 1
    with pytest.raises(ValueError, match="no LLM judge"):
        build_judges(compose_config(["judge=verifier"]).judge)
    with pytest.raises(ValueError, match="engine="):
        build_judges(compose_config(["judge=policy"]).judge)
