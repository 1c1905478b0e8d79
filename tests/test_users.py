"""Simulated users: the check library, personas as data, scripted and llm users, and how the rule judge reads them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from claw.judge.rule import RuleBackend
from claw.judge.turn import Turn
from claw.tasks import word_problems
from claw.users import (
    CHECKS,
    CheckError,
    LLMUser,
    Persona,
    PersonaError,
    ScriptedUser,
    UserReply,
    make_check,
    make_user,
)
from claw.users.checks import Response
from claw.users.persona import PERSONA_DIR, strip_think

SHIPPED = sorted(p.stem for p in PERSONA_DIR.glob("*.yaml"))
RULE = RuleBackend()


def judge(reply: str) -> tuple[int, str | None]:
    turn = Turn(
        messages=[{"role": "user", "content": "q"}], response_text="a", next_state=[{"role": "user", "content": reply}]
    )
    return RULE.score_turn(turn)[0], RULE.hint_for(turn)


def ok(kind: str, text: str, task: dict | None = None, calls: tuple = (), **params) -> bool:
    return make_check(kind, params)(Response(text, calls), task or {"answer": 12})


# ---- the check library ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, params, good, bad",
    [
        ("matches", {"pattern": r"\byou\b"}, "You did well.", "The student did well."),
        ("not_matches", {"pattern": r"\*\*"}, "plain text", "**bold**"),
        ("max_words", {"n": 3}, "one two three", "one two three four"),
        ("min_words", {"n": 3}, "one two three", "one two"),
        ("max_sentences", {"n": 2}, "It is 12. Done.", "It is 12. Really. Done."),
        ("answer_correct", {}, "3 × 4 = 12, so the answer is 12.", "The answer is 13."),
        ("first_sentence_states_answer", {}, "It is 12. Because 3 × 4 = 12.", "Multiply 3 by 4. You get 12."),
        ("mentions_number", {}, "you wrote 11 but it is 12", "you wrote 11"),
        ("shows_working", {}, "6 km/h * 2 hours = 12 km", "The answer is 12."),
        ("no_markdown", {}, "The answer is 12.", "**Answer:** 12"),
        ("starts_with_not", {}, "12 pencils: 3 × 4 = 12.", "To solve this problem, multiply."),
    ],
)
def test_every_text_check_passes_and_fails(kind, params, good, bad):
    assert ok(kind, good, **params)
    assert not ok(kind, bad, **params)


def test_shows_working_ends_on_a_long_reply_with_no_result(deadline) -> None:
    """A reply of many operands and no "=" (what a policy wrote in an evaluation) is not working, and the check ends.

    The unit words' old pattern split one word many ways, so this took time exponential in the operands (14 of them
    took 90 s; the real reply hung the run): under `deadline`, a hang fails the test instead of CI."""
    reply = "Lena puts shells in 2 rows * 5 shells per row" + " * 2 rows" * 40
    with deadline(60, "shows_working on a reply of 41 operands"):
        assert not ok("shows_working", reply)
    assert ok("shows_working", reply + " = 2")  # the same operands with a result are working
    assert ok("shows_working", "Dan spends $5/pen * 4 = $20.") and ok("shows_working", "1000m * 5km/1km = 50km")


def test_checks_cover_the_registry():
    assert set(CHECKS) == {
        "matches", "not_matches", "max_words", "min_words", "max_sentences", "answer_correct",
        "first_sentence_states_answer", "mentions_number", "shows_working", "no_markdown", "starts_with_not",
        "if_field", "all_of", "called_tool",
    }  # fmt: skip


def test_check_details():
    assert ok("starts_with_not", "  **Sure**, here") is False  # markup before the stock phrase does not hide it
    assert ok("starts_with_not", "Sure thing", phrases=["to solve"])  # custom list replaces the default
    assert not ok("max_words", "", n=5)  # an empty answer is not "short"
    assert ok("max_sentences", "The price is 2.50 dollars. Done.", n=2)  # a decimal point does not end a sentence
    assert ok("matches", "YOU", pattern="you") and not ok("matches", "YOU", pattern="you", flags="")
    assert (
        ok("no_markdown", "Cost: 3 - 1 = 2")
        and not ok("no_markdown", "- item\n- item")
        and not ok("no_markdown", "1. first\n2. second")
    )
    assert ok("answer_correct", "The answer is 1,200.", {"answer": 1200})


def test_all_of():
    params = {
        "criteria": [
            {"kind": "matches", "params": {"pattern": "right"}},
            {"kind": "not_matches", "params": {"pattern": "wrong"}},
        ]
    }
    assert (
        ok("all_of", "right", **params)
        and not ok("all_of", "right, no, wrong", **params)
        and not ok("all_of", "fine", **params)
    )


def test_if_field_and_called_tool():
    params = {
        "field": "right",
        "then": {"kind": "matches", "params": {"pattern": "correct"}},
        "otherwise": {"kind": "matches", "params": {"pattern": "mistake"}},
    }
    assert ok("if_field", "correct", {"right": True}, **params) and not ok(
        "if_field", "correct", {"right": False}, **params
    )
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    assert ok("called_tool", "", calls=(call,), name="read_file") and not ok("called_tool", "", name="read_file")


@pytest.mark.parametrize(
    "kind, params, message",
    [
        ("nope", {}, "unknown check kind 'nope'"),
        ("max_words", {}, "check 'max_words' got params"),
        ("max_words", {"n": 3, "m": 4}, "check 'max_words' got params"),
        ("matches", {"pattern": "("}, "bad regex"),
        ("matches", {"pattern": "a", "flags": "q"}, "unknown regex flags"),
        (
            "if_field",
            {"field": "f", "then": {"kind": "nope"}, "otherwise": {"kind": "matches", "params": {"pattern": "a"}}},
            "unknown check kind",
        ),
    ],
)
def test_bad_checks_fail_at_build_time(kind, params, message):
    with pytest.raises(CheckError, match=message):
        make_check(kind, params)


# ---- tasks ----------------------------------------------------------------------------------


def test_word_problems_are_deterministic_and_splits_disjoint():
    a = word_problems.generate("train", 50, seed=3)
    assert a == word_problems.generate("train", 50, seed=3)
    assert a != word_problems.generate("train", 50, seed=4)
    train = {t["question"] for seed in range(3) for t in word_problems.generate("train", 200, seed)}
    held_out = {t["question"] for seed in range(3) for t in word_problems.generate("eval", 100, seed)}
    assert not train & held_out
    assert all(
        isinstance(t["answer"], int) and t["answer"] >= 0 and set(t) >= {"id", "question", "answer", "kind"} for t in a
    )
    assert len({t["id"] for t in a}) == 50
    assert {t["steps"] for t in word_problems.generate("eval", 40, max_steps=1)} == {1}
    with pytest.raises(ValueError, match="split"):
        word_problems.generate("test", 3)


def test_evaluation_problems_share_no_number_set_with_training_problems():
    """Split by the set of numbers a problem states, not its wording: no evaluation problem can be passed by recalling
    a training problem with the same numbers (the wording split let 52 of 64 evaluation tasks share one)."""
    for params in ({}, {"kinds": ["shopping", "distance", "rows"], "max_steps": 1}):
        train = {word_problems.number_set(t["question"]) for seed in range(3)
                 for t in word_problems.generate("train", 300, seed, **params)}  # fmt: skip
        held_out = {word_problems.number_set(t["question"]) for seed in range(3)
                    for t in word_problems.generate("eval", 64, seed, **params)}  # fmt: skip
        assert not train & held_out and len(held_out) >= 8
    graded = word_problems.graded_solutions("eval", 64, seed=0)
    trained = {word_problems.number_set(t["question"]) for t in word_problems.graded_solutions("train", 300, seed=0)}
    assert not trained & {word_problems.number_set(t["question"]) for t in graded}


def test_graded_solutions_carry_a_checkable_verdict():
    tasks = word_problems.graded_solutions("eval", 60, seed=0)
    assert all(t["solution_correct"] == (t["student_answer"] == t["answer"]) for t in tasks)
    assert all(f"The answer is {t['student_answer']}." in t["student_solution"] for t in tasks)
    assert 0.3 < sum(t["solution_correct"] for t in tasks) / 60 < 0.7


# ---- personas as data -----------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_persona_round_trips(name, tmp_path):
    persona = Persona.load(name)
    assert Persona.from_dict(yaml.safe_load(persona.to_yaml())) == persona
    persona.dump(tmp_path / "copy.yaml")
    assert Persona.load(tmp_path / "copy.yaml") == persona
    assert Persona.load(f"personas/{name}.yaml") == persona  # a relative path resolves from the repo root too


def test_shipped_personas_are_the_three_of_the_issue():
    assert {"student", "teacher", "student_file"} <= set(SHIPPED)


def _minimal(**overrides) -> dict:
    data = {
        "name": "tiny",
        "tasks": {"generator": "word_problems", "params": {"kinds": ["shopping"], "max_steps": 1}},
        "opening": ["Help: {question}"],
        "criteria": [
            {
                "id": "short",
                "kind": "max_words",
                "params": {"n": 5},
                "fail_phrases": ["Too long, keep it under 5 words."],
            }
        ],
        "thanks": ["Thanks!"],
    }
    return data | overrides


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"criteria": [{"id": "c1", "kind": "max_wordz", "fail_phrases": ["No."]}]},
            r"criterion 'c1': unknown check kind 'max_wordz'",
        ),
        (
            {"criteria": [{"id": "c2", "kind": "max_words", "params": {"words": 3}, "fail_phrases": ["No."]}]},
            r"criterion 'c2': check 'max_words' got params",
        ),
        (
            {"criteria": [{"id": "c3", "kind": "max_words", "params": {"n": 3}}]},
            r"criterion 'c3': needs `fail_phrases`",
        ),
        ({"opening": ["Help: {questoin}"]}, r"opening: template 'Help: \{questoin\}' does not format"),
        ({"turn_limt": 3}, r"unknown keys \['turn_limt'\]"),
        ({"tasks": {"generator": "gsm8k"}}, r"unknown task generator 'gsm8k'"),
        ({"tasks": {"generator": "word_problems", "params": {"difficulty": 3}}}, r"bad params for task generator"),
        (
            {"tools": [], "tool_env": {"read_file": {"kind": "file_reader", "files": {}}}},
            r"tool_env serves 'read_file'",
        ),
    ],
)
def test_bad_persona_files_name_file_and_criterion(tmp_path, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_minimal(**change)))
    with pytest.raises(PersonaError, match=message) as err:
        Persona.load(path)
    assert str(path) in str(err.value)


def test_missing_persona_lists_the_shipped_ones():
    with pytest.raises(PersonaError, match="shipped personas"):
        Persona.load("no_such_persona")


def test_persona_tasks_opening_and_rating():
    persona = Persona.load("student")
    train, held_out = persona.tasks("train", 20, seed=0), persona.tasks("eval", 20, seed=0)
    assert not {t["id"] for t in train} & {t["id"] for t in held_out}
    task = held_out[0]
    assert task["question"] in persona.opening(task, random.Random(0))
    a = task["answer"]
    good = persona.rate(f"{a} + 0 = {a}, so the answer is {a}.", task)
    assert good.score == 1.0 and all(good.passed.values())
    bad = persona.rate("To solve this problem, " + "we think hard. " * 20 + f"The answer is {a + 1}.", task)
    assert bad.score == 0.0 and set(bad.passed) == {c.id for c in persona.criteria}


def test_rating_strips_think_and_reads_message_lists():
    persona = Persona.load("student")
    task = persona.tasks("eval", 1)[0]
    a = task["answer"]
    assert (
        persona.rate(f"<think>To solve this problem, long musing</think>{a} + 0 = {a}. It is {a}.", task).score == 1.0
    )
    assert persona.rate({"role": "assistant", "content": f"{a} + 0 = {a}."}, task).score == 1.0


# ---- the tool persona -------------------------------------------------------------------------


def test_tool_persona_serves_the_file_and_errors_on_a_wrong_path():
    persona = Persona.load("student_file")
    task = persona.tasks("eval", 1)[0]
    assert task["question"] in persona.run_tool("read_file", json.dumps({"path": "homework.txt"}), task)
    assert task["question"] in persona.run_tool("read_file", json.dumps({"path": "./homework.txt"}), task)
    for name, args in [
        ("read_file", '{"path": "hw.txt"}'),
        ("read_file", "{not json"),
        ("read_file", "{}"),
        ("delete_file", '{"path": "homework.txt"}'),
    ]:
        result = persona.run_tool(name, args, task)
        assert result.startswith("Error:")
        turn = Turn(messages=[], response_text="(call)", next_state=[{"role": "tool", "content": result}])
        assert RULE.score_turn(turn)[0] == -1 and RULE.hint_for(turn)  # the rule judge reads the environment's errors


def test_tool_persona_rates_the_transcript_and_the_user_serves_tools():
    persona = Persona.load("student_file")
    task = persona.tasks("eval", 1)[0]
    user = ScriptedUser(persona, task, seed=0)
    assert "homework.txt" in user.open()
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "homework.txt"}'},
    }
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    results = user.tool_results(asked)
    assert results == [
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": persona.run_tool("read_file", '{"path": "homework.txt"}', task),
        }
    ]
    with pytest.raises(ValueError, match="tool_results"):
        user.respond(asked)
    a = task["answer"]
    final = {"role": "assistant", "content": f"{a} + 0 = {a}, so it is {a}."}
    assert persona.rate([asked, *results, final], task).score == 1.0
    assert not persona.rate(final, task).passed["read_the_file"]  # the same answer without reading the file
    reply = user.respond([asked, *results, final])
    assert reply.done and judge(reply.text)[0] == 1


# ---- the scripted user ----------------------------------------------------------------------


def _perfect(persona: Persona, task: dict) -> str:
    """A response meeting every criterion of the shipped personas (a fixture, not a model)."""
    a = task["answer"]
    if persona.name == "teacher":
        verdict = "you got it right" if task["solution_correct"] else "there is a small mistake in your last step"
        return f"Good effort, {verdict}: the answer is {a}."
    working = f"{a} + 0 = {a}, so the answer is {a}."
    if persona.name == "explainer":  # at least 60 words
        return (
            "Start from what the question gives us and keep every number in view as we go. "
            "We combine the amounts in one line so the arithmetic is easy to follow and check, and we write "
            "each part of it out in full so that nothing is skipped or hidden along the way. "
            f"Adding nothing changes nothing, so the line reads {a} + 0 = {a}. "
            f"Checking it once more, the total stays the same, so the answer is {a}."
        )
    if persona.name == "plain":  # 30 to 55 words, no markdown
        return (
            "We only need one line of arithmetic here, and it is short enough to check by eye. "
            f"Adding nothing leaves the amount unchanged, which gives {a} + 0 = {a}, so the answer is {a}."
        )
    return working


@pytest.mark.parametrize("name", SHIPPED)
def test_scripted_user_thanks_a_perfect_response(name):
    persona = Persona.load(name)
    for task in persona.tasks("eval", 8):
        user = ScriptedUser(persona, task, seed=1)
        user.open()
        calls = (
            [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "homework.txt"}'},
                }
            ]
            if persona.tools
            else []
        )
        transcript = ([{"role": "assistant", "content": None, "tool_calls": calls}] if calls else []) + [
            {"role": "assistant", "content": _perfect(persona, task)}
        ]
        assert persona.rate(transcript, task).score == 1.0, (name, transcript)
        reply = user.respond(transcript)
        assert reply.done and reply.text in {t.format(**task) for t in persona.thanks}


def test_scripted_user_names_the_one_unmet_criterion():
    persona = Persona.load("student")
    task = persona.tasks("eval", 1)[0]
    a = task["answer"]
    user = ScriptedUser(persona, task, seed=0)
    reply = user.respond({"role": "assistant", "content": f"Sure! {a} + 0 = {a}, so the answer is {a}."})
    assert not reply.done
    opener = next(c for c in persona.criteria if c.id == "no_stock_opener")
    others = [p for c in persona.criteria if c.id != "no_stock_opener" for p in c.fail_phrases]
    assert any(p in reply.text for p in opener.fail_phrases) and not any(p in reply.text for p in others)


def test_scripted_user_closes_at_the_turn_limit_and_is_deterministic():
    persona = Persona.load("student")
    task = persona.tasks("eval", 1)[0]
    bad = {"role": "assistant", "content": "To solve this problem, " + "we think. " * 30}

    def session(seed: int) -> list[UserReply]:
        user = ScriptedUser(persona, task, seed=seed)
        replies = [UserReply(user.open(), False)]
        while not replies[-1].done:
            replies.append(user.respond(bad))
        return replies

    replies = session(7)
    assert len(replies) == persona.turn_limit + 1 and [r.done for r in replies[1:]] == [False] * (
        persona.turn_limit - 1
    ) + [True]
    assert any(replies[-1].text.endswith(c.format(**task)) for c in persona.closing)
    assert session(7) == replies
    assert any(session(s) != replies for s in range(8, 14))


def test_user_reply_carries_only_what_the_user_says():
    """The hidden rating must not ride along with the reply: the driver passes replies to the agent and the judge."""
    assert [f.name for f in dataclasses.fields(UserReply)] == ["text", "done"]
    persona = Persona.load("student")
    user = make_user("scripted", "student", persona.tasks("eval", 1)[0], seed=0)
    reply = user.respond({"role": "assistant", "content": "Sure."})
    assert "score" not in reply.text.lower() and "0." not in reply.text


# ---- the rule judge reads every shipped persona -----------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_rule_judge_reads_every_phrase_of_the_persona(name):
    """Shipped personas: thanks approve, acknowledgements never correct, every fail phrase corrects with a hint the
    judge accepts (longer than its floor) quoted from the phrase. The held-out personas (personas/heldout/) and the
    independent wordings (personas/phrasings/) are read by no test of the judge: they measure it, once."""
    persona = Persona.load(name)
    task = persona.tasks("eval", 1)[0]
    for thanks in persona.thanks:
        assert judge(thanks.format(**task))[0] == 1, thanks
    for c in persona.criteria:
        for phrase in c.pass_phrases:
            assert judge(phrase.format(**task))[0] >= 0, (c.id, phrase)  # an acknowledgement is never a correction
        for phrase in c.fail_phrases:
            score, hint = judge(phrase.format(**task))
            assert score == -1 and hint and len(hint) >= 15, (c.id, phrase, hint)
            assert hint.removeprefix("Revise the answer: ") in phrase.format(**task), (c.id, phrase, hint)


@pytest.mark.parametrize("name", SHIPPED)
def test_rule_judge_reads_the_scripted_user(name):
    """Over real sessions of bad and good responses: corrections → −1 with the instruction as hint, thanks → +1."""
    persona = Persona.load(name)
    responses = [
        "To solve this problem, " + "we think. " * 30,
        "Sure! The answer is 3.",
        "**Answer**: 7",
        "Here is it.",
    ]
    for i, task in enumerate(persona.tasks("eval", 6)):
        user = ScriptedUser(persona, task, seed=i)
        user.open()
        for text in responses:
            reply = user.respond({"role": "assistant", "content": text})
            score, hint = judge(reply.text)
            assert score == -1 and hint, (reply.text, hint)
            if reply.done:
                break
        reply = ScriptedUser(persona, task, seed=i).respond(
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                    ],
                }
            ]
            * bool(persona.tools)
            + [{"role": "assistant", "content": _perfect(persona, task)}]
        )
        assert judge(reply.text)[0] == 1


def test_a_persona_with_unseen_wording_still_yields_signal(tmp_path):
    """A persona written only for this test: none of its sentences is shipped persona text."""
    data = _minimal(
        name="pirate_editor",
        criteria=[
            {
                "id": "brief",
                "kind": "max_words",
                "params": {"n": 12},
                "fail_phrases": ["Arr, that is not what I asked for: trim it to a dozen words."],
            },
            {
                "id": "no_hello",
                "kind": "not_matches",
                "params": {"pattern": "^hello"},
                "fail_phrases": ["Please don't greet me, matey, get straight to the number."],
            },
            {
                "id": "numbers",
                "kind": "answer_correct",
                "fail_phrases": ["That figure is incorrect, recount the doubloons."],
            },
        ],
        thanks=["Brilliant, cheers matey!", "Spot on, much appreciated."],
    )
    path = tmp_path / "pirate.yaml"
    path.write_text(yaml.safe_dump(data))
    persona = Persona.load(path)
    task = persona.tasks("train", 1, seed=5)[0]
    shipped = " ".join(Path(p).read_text() for p in PERSONA_DIR.glob("*.yaml"))
    assert not any(s in shipped for c in data["criteria"] for s in c["fail_phrases"])
    user = make_user("scripted", persona, task, seed=0)
    wrong = user.respond(
        {"role": "assistant", "content": "Hello there, let me tell you a very long story about the number 1 and more."}
    )
    score, hint = judge(wrong.text)
    assert score == -1 and "dozen words" in hint and "greet" in hint and "recount" in hint
    right = make_user("scripted", persona, task, seed=0).respond(
        {"role": "assistant", "content": f"It is {task['answer']}."}
    )
    assert right.done and judge(right.text)[0] == 1


# ---- the llm user -------------------------------------------------------------------------------


class FakeCompletions:
    """Records what the simulator is sent and answers from a script: isolates the user's message plumbing."""

    def __init__(self, replies: list[str], is_async: bool) -> None:
        self.replies, self.sent, self.is_async = list(replies), [], is_async

    def create(self, **request):
        self.sent.append(request)
        completion = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=self.replies.pop(0)))])
        if not self.is_async:
            return completion

        async def later():
            return completion

        return later()


def fake_client(replies: list[str], is_async: bool = True) -> SimpleNamespace:
    return SimpleNamespace(chat=SimpleNamespace(completions=FakeCompletions(replies, is_async)))


def test_llm_user_flips_roles_and_strips_think():
    persona = Persona.load("student")
    task = persona.tasks("eval", 1)[0]
    client = fake_client(
        [
            "<think>too long, and an opener</think>Too long, keep it short. Don't say 'Sure'.",
            "<think>fine</think>Thanks! [DONE]",
        ]
    )
    user = make_user("llm", persona, task, seed=0, client=client, model="sim")
    assert isinstance(user, LLMUser)
    opening = user.open()
    first = asyncio.run(user.arespond({"role": "assistant", "content": "<think>plan</think>Sure! It is 12."}))
    assert first == UserReply("Too long, keep it short. Don't say 'Sure'.", done=False)
    sent = client.chat.completions.sent[0]
    assert sent["model"] == "sim" and sent["messages"][0] == {
        "role": "system",
        "content": persona.llm.prompt.format(**task),
    }
    assert sent["messages"][1:] == [
        {"role": "assistant", "content": opening},
        {"role": "user", "content": persona.llm.reply_prefix + "Sure! It is 12."},
    ]
    second = asyncio.run(user.arespond({"role": "assistant", "content": "12."}))
    assert second == UserReply("Thanks!", done=True)
    roles = [m["role"] for m in client.chat.completions.sent[1]["messages"]]
    assert roles == ["system", "assistant", "user", "assistant", "user"]
    assert client.chat.completions.sent[1]["messages"][3]["content"] == "Too long, keep it short. Don't say 'Sure'."


def test_llm_user_turn_limit_sync_client_and_errors():
    persona = Persona.load("student")
    task = persona.tasks("eval", 1)[0]
    user = LLMUser(
        persona,
        task,
        seed=0,
        client=fake_client(["Shorter please."] * persona.turn_limit, is_async=False),
        model="sim",
    )
    user.open()
    replies = [user.respond({"role": "assistant", "content": "x"}) for _ in range(persona.turn_limit)]
    assert [r.done for r in replies] == [False] * (persona.turn_limit - 1) + [True]
    only_marker = LLMUser(persona, task, client=fake_client(["[DONE]"], is_async=False), model="sim")
    assert only_marker.respond({"role": "assistant", "content": "x"}) == UserReply(None, done=True)
    with pytest.raises(TypeError, match="arespond"):
        LLMUser(persona, task, client=fake_client(["x"]), model="sim").respond({"role": "assistant", "content": "x"})
    with pytest.raises(ValueError, match="client"):
        make_user("llm", persona, task)
    with pytest.raises(ValueError, match="scripted"):
        make_user("robot", persona, task)
    assert strip_think("<think>a</think> b <think>unclosed") == "b"


def test_scripted_arespond_matches_respond():
    persona = Persona.load("teacher")
    task = persona.tasks("eval", 1)[0]
    message = {"role": "assistant", "content": "Sure, here is a comment."}
    assert asyncio.run(ScriptedUser(persona, task, seed=3).arespond(message)) == ScriptedUser(
        persona, task, seed=3
    ).respond(message)


@pytest.mark.parametrize(
    "reply, to_student",
    [
        ("Great job! You got 24, which is correct.", True),
        ("I like how you set it out, but check the last step: it's 24, not 42.", True),
        ("You're right, I should add that the correct answer is 24.", False),  # RL learnt it under the first check
        ("You're right, the student's answer is 24.", False),
        ("Your student did well: the answer is 24.", False),
        ("Here's a comment you could use: well done, it's 24.", False),
        ("The correct answer is 24.", False),
    ],
)
def test_teacher_addresses_student_means_written_to_the_student(reply, to_student):
    """A comment to the student says "you"; a reply to the teacher who asked says "you" as well and must not pass.
    When it fails, the scripted teacher says so, and the rule judge reads a correction with a hint."""
    persona = Persona.load("teacher")
    task = persona.tasks("eval", 1)[0]
    assert persona.rate(reply, task).passed["addresses_student"] is to_student
    if not to_student:
        complaint = ScriptedUser(persona, task, seed=0).respond({"role": "assistant", "content": reply})
        score, hint = judge(complaint.text)
        assert score < 0 and hint


@pytest.mark.parametrize(
    "reply, verdict",
    [
        ("You're right, the answer is {answer}.", False),  # a concession to the teacher (RL learnt it)
        ("You are absolutely right! The answer is {answer}.", False),
        ("You're right, {answer} is correct. Well done!", True),  # a verdict word after the opening still counts
        ("Great work, you got {answer}, which is correct!", True),
        ("Well done, you're right: it's {answer}.", True),  # "you're right" to the student, not as an opening
        ("The answer is {answer}.", False),
    ],
)
def test_teacher_right_verdict_ignores_a_conceding_opening(reply, verdict):
    """On a right solution the verdict needs a verdict word; the "right" of "You're right, ..." opening the reply is
    the concession addresses_student fails, so it is no verdict to the student either."""
    persona = Persona.load("teacher")
    task = next(t for t in persona.tasks("eval", 16) if t["solution_correct"])
    assert persona.rate(reply.format(answer=task["answer"]), task).passed["right_verdict"] is verdict
