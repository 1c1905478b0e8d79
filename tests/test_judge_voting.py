"""Reading votes out of crafted judge outputs, majority voting, hint acceptance, prompts, append_hint."""

import asyncio
import itertools

import pytest

from claw.judge import HintJudge, PRMJudge, PromptTemplate, Turn, append_hint, load_prompt, majority, parse_score
from claw.judge.hint import parse_hint_vote, select_hint


@pytest.mark.parametrize(
    "text,score",
    [
        ("The user moved on. \\boxed{1}", 1),
        ("\\boxed{-1}", -1),
        ("\\boxed{+1}", 1),
        ("\\boxed{\u22121}", -1),  # unicode minus
        ("\\boxed{0}", 0),
        ("\\boxed{ 1 }", 1),
        ("first \\boxed{-1}, on reflection \\boxed{1}", 1),  # last box wins
        ("\\boxed{1} then \\boxed{2}", 1),  # the last box that holds a score
        ("no box at all", None),
        ("\\boxed{2}", None),
        ("\\boxed{yes}", None),
        ("\\boxed{}", None),
        ("\\boxed{1.0}", None),
        ("", None),
        ("<think>maybe \\boxed{-1}</think> The user thanked. \\boxed{1}", 1),
        ("<think>surely \\boxed{1}</think> I cannot tell.", None),  # a box inside reasoning doesn't count
        ("<think>draft \\boxed{1} and then the output was cut", None),  # unterminated reasoning abstains
        ("reasoning from a template that opened <think> \\boxed{-1}</think>\\boxed{0}", 0),
    ],
)
def test_parse_score(text, score):
    assert parse_score(text) == score


@pytest.mark.parametrize(
    "votes,score,n_valid,agreement",
    [
        ([1, None, None], 1, 1, 1.0),
        ([1, -1, 0], 0, 3, 1 / 3),  # three-way tie
        ([1, 1, -1], 1, 3, 2 / 3),
        ([1, -1, None], 0, 2, 0.0),  # tie, and no valid vote is 0
        ([-1, -1, 0, 0, 1], 0, 5, 2 / 5),  # tie at the top → 0, which agrees with the two 0 votes
        ([None, None, None], 0, 0, 0.0),
        ([], 0, 0, 0.0),
    ],
)
def test_majority(votes, score, n_valid, agreement):
    verdict = majority(votes)
    assert (verdict.score, verdict.n_valid, verdict.n_abstain) == (score, n_valid, len(votes) - n_valid)
    assert verdict.agreement == pytest.approx(agreement)
    assert verdict.votes == votes


def test_parse_hint_vote():
    assert parse_hint_vote("\\boxed{1}\n[HINT_START] Use metric units. [HINT_END]") == (1, "Use metric units.")
    assert parse_hint_vote("[HINT_START]old[HINT_END] \\boxed{1} [HINT_START]new one[HINT_END]") == (1, "new one")
    assert parse_hint_vote("\\boxed{-1} [HINT_START]ignored[HINT_END]") == (-1, None)
    assert parse_hint_vote("\\boxed{1}") == (1, None)
    assert parse_hint_vote("\\boxed{0} [HINT_START]a hint[HINT_END]") == (None, None)  # not a hint vote
    assert parse_hint_vote("<think>[HINT_START]draft[HINT_END]</think>\\boxed{1}") == (1, None)


LONG = "Answer in metric units, not imperial."
LONGER = "Answer in metric units and round to one decimal place."


@pytest.mark.parametrize(
    "votes,hints,expected",
    [
        ([1, -1, -1], [LONGER, None, None], None),  # 1 of 3: no majority, however good the hint
        ([1, 1, -1], [LONG, LONGER, None], LONGER),  # majority; the longest hint wins
        ([1, 1, -1], ["Be short.", "  metric  ", None], None),  # majority, but no hint over 10 chars
        ([1, 1, None, None], [LONG, LONG, None, None], None),  # 2 of 4 is not a majority: abstentions count against
        ([1, 1, 1, None], [None, "tiny", LONG], LONG),
        ([1], [f"  {LONG}  "], LONG),
    ],
)
def test_select_hint(votes, hints, expected):
    assert select_hint(votes, hints, min_hint_chars=10) == expected


class Scripted:
    """An in-process backend that answers with scripted texts in turn
    (voting logic only; HTTP is in test_judge_openai)."""

    kind = "scripted"

    def __init__(self, texts):
        self.texts = itertools.cycle(texts)
        self.prompts = []

    async def complete(self, messages, temperature, max_tokens):
        self.prompts.append(messages)
        return next(self.texts)


TURN = Turn(
    messages=[{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Convert 5 miles."}],
    response_text="5 miles is 8.05 km.",
    next_state=[{"role": "user", "content": "and in feet?"}],
)


@pytest.mark.parametrize(
    "texts,accepted,hint,n_positive",
    [
        (["\\boxed{1} [HINT_START]" + LONGER + "[HINT_END]", "\\boxed{-1}", "\\boxed{-1}"], False, None, 1),
        (
            [
                "\\boxed{1} [HINT_START]" + LONG + "[HINT_END]",
                "\\boxed{1} [HINT_START]" + LONGER + "[HINT_END]",
                "\\boxed{-1}",
            ],
            True,
            LONGER,
            2,
        ),
        (
            ["\\boxed{1} [HINT_START]short[HINT_END]", "\\boxed{1} [HINT_START]tiny[HINT_END]", "\\boxed{-1}"],
            False,
            None,
            2,
        ),
        (
            ["\\boxed{1} [HINT_START]" + LONG + "[HINT_END]", "garbage", "\\boxed{0}"],
            False,
            None,
            1,
        ),  # abstentions count against
    ],
)
def test_hint_judge_acceptance(texts, accepted, hint, n_positive):
    result = asyncio.run(HintJudge(Scripted(texts), m=3).extract(TURN))
    assert (result.accepted, result.hint, result.n_positive, result.error) == (accepted, hint, n_positive, None)
    assert len(result.votes) == 3


def test_prm_judge_rationale_is_a_vote_that_agrees():
    result = asyncio.run(
        PRMJudge(Scripted(["moved on \\boxed{1}", "hmm \\boxed{-1}", "thanks \\boxed{1}"]), m=3).judge(TURN)
    )
    assert (result.score, result.votes, result.n_abstain, result.error) == (1, [1, -1, 1], 0, None)
    assert result.agreement == pytest.approx(2 / 3)
    assert result.rationale == "moved on \\boxed{1}"
    tie = asyncio.run(PRMJudge(Scripted(["\\boxed{1}", "\\boxed{-1}"]), m=2).judge(TURN))
    assert (tie.score, tie.rationale) == (0, "")


def test_config_prompts_render_the_whole_turn():
    backend = Scripted(["\\boxed{1}"])
    asyncio.run(PRMJudge(backend, m=1).judge(TURN))
    [messages] = backend.prompts
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "[user] Convert 5 miles." in user and "5 miles is 8.05 km." in user and "[user] and in feet?" in user
    assert "\\boxed{1}" in messages[0]["content"]  # literal braces in the template survive
    hint = load_prompt("hint.yaml").render(TURN)
    assert "[HINT_START]" in hint[0]["content"] and "[user] and in feet?" in hint[1]["content"]


def test_render_fills_once_and_shows_tool_calls():
    template = PromptTemplate(system="", user="C:\n{conversation}\nR: {response}\nN:\n{next_state}")
    turn = Turn(
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "list files"}, {"type": "image_url", "image_url": {"url": "x"}}],
            }
        ],
        response_text="I will write {next_state} literally",
        next_state=[
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
            },
            {"role": "tool", "content": "a.txt"},
        ],
    )
    [message] = template.render(turn)  # an empty system prompt is left out
    assert "R: I will write {next_state} literally" in message["content"]  # pasted text is never expanded
    assert "[user] list files" in message["content"]
    assert '[assistant] (tool call) [{"id": "1"' in message["content"]
    assert "[tool] a.txt" in message["content"]


def test_prompt_templates_are_checked(tmp_path):
    with pytest.raises(ValueError, match="next_state"):
        PromptTemplate(system="judge", user="{response}")
    (tmp_path / "p.yaml").write_text("system: s\nuser: '{response} {next_state}'\nextra: 1\n")
    with pytest.raises(ValueError, match="exactly the keys"):
        load_prompt(tmp_path / "p.yaml")


def test_append_hint_string_content():
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "second"},
        {"role": "tool", "content": "t"},
    ]
    out = append_hint(messages, "Use metric units.")
    assert out[2]["content"] == "second\n\n[hint] Use metric units."
    assert out[0]["content"] == "first" and out[3] == {"role": "tool", "content": "t"}
    assert messages[2]["content"] == "second"  # the original is not mutated
    assert append_hint(messages, "h", fmt="{content} ({hint})")[2]["content"] == "second (h)"


def test_append_hint_list_content():
    parts = [
        {"type": "text", "text": "look at this"},
        {"type": "image_url", "image_url": {"url": "u"}},
        {"type": "text", "text": "what is it?"},
    ]
    messages = [{"role": "user", "content": parts}]
    out = append_hint(messages, "It is a cat.")
    assert out[0]["content"][2]["text"] == "what is it?\n\n[hint] It is a cat."
    assert out[0]["content"][0]["text"] == "look at this"
    assert parts[2]["text"] == "what is it?"
    image_only = append_hint(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}], "It is a cat."
    )
    assert image_only[0]["content"][-1] == {"type": "text", "text": "[hint] It is a cat."}


def test_append_hint_needs_a_user_message():
    with pytest.raises(ValueError, match="user message"):
        append_hint([{"role": "system", "content": "s"}, {"role": "tool", "content": "t"}], "hint")


def test_append_hint_to_the_system_message():
    messages = [{"role": "user", "content": "Grade this."}]
    out = append_hint(messages, "Speak to the student.", fmt="{content}\n\n{hint}", role="system")
    assert out == [{"role": "system", "content": "Speak to the student."}, {"role": "user", "content": "Grade this."}]
    assert messages == [{"role": "user", "content": "Grade this."}]  # the original is not mutated
    with_system = [{"role": "system", "content": "You are a tutor."}, *messages]
    out = append_hint(with_system, "Be brief.", fmt="{content}\n\n{hint}", role="system")
    assert [m["content"] for m in out] == ["You are a tutor.\n\nBe brief.", "Grade this."]
    with pytest.raises(ValueError, match="hint_role"):
        append_hint(messages, "h", role="assistant")
    with pytest.raises(ValueError, match="user message"):  # a hint still needs something the user asked
        append_hint([{"role": "system", "content": "s"}], "h", role="system")
