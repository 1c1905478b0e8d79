"""Text that claw scans — a model's output, a user's feedback — ends its scan in time linear in its length.

Each case below was super-linear before its fix (times on 2 idle cores): the tool-call pattern on an unclosed tag
followed by spaces (4,000 spaces: 51 s, cubic), the arithmetic answer after "answer" and spaces (4,000: 7 min,
cubic), the judge's normalisation and unit reading on a reply of spaces or digits (6,000 characters: ~3 s,
quadratic), and the working check on a long number (3,000 digits: 0.4 s, quadratic). At 20,000 characters each now
takes under 0.1 s; the old forms took from a minute to hours, so a 10 s deadline tells them apart on any machine."""

from __future__ import annotations

import json

import pytest

from claw.judge.reading.reply import MAX_READ_CHARS, bounded
from claw.judge.reading.text import normalise, units
from claw.judge.rule import read_feedback
from claw.sources.proxy.render import parse_tool_calls
from claw.tasks.arithmetic import parse_answer
from claw.users.checks import shows_working

LONG = 20_000
CORRECTION = "No, it should say 42, not 24."

SCANS = {
    "an unclosed tool call before spaces": lambda: parse_tool_calls("<tool_call>" + " " * LONG),
    "an answer after a run of spaces": lambda: parse_answer("The answer" + " " * LONG),
    "a reply of spaces, judged": lambda: read_feedback("What is 6*7?", " " * LONG, CORRECTION),
    "a reply of line breaks, judged": lambda: read_feedback("What is 6*7?", "\n" * LONG, CORRECTION),
    "a reply of one long number, judged": lambda: read_feedback("What is 6*7?", "1" * LONG, CORRECTION),
    "feedback of spaces": lambda: read_feedback("What is 6*7?", "The answer is 42.", "Thanks," + " " * LONG),
    "a long number's units": lambda: units("1" * LONG),
    "a run of spaces, normalised": lambda: normalise("a" + " " * LONG + "b"),
    "a long number as working": lambda: shows_working("1" * LONG, {}),
    # the reply reader: a rescan of the later sentences per sentence, and of the earlier readings per approval, were
    # quadratic in the sentence count (6,000 characters of "ok. ": 5 s); shapes still quadratic in one sentence's
    # length ("it's it's …": 24,000 characters, ~5 s) are held off by reading a long reply's head and tail only
    "feedback of many short sentences": lambda: read_feedback("What is 6*7?", "42.", "ok. " * (5 * LONG // 4)),
    "feedback of many approvals": lambda: read_feedback("What is 6*7?", "42.", "thanks! " * (5 * LONG // 8)),
    "feedback of one long sentence": lambda: read_feedback("What is 6*7?", "42.", "it's " * LONG),
    "feedback of short numbers": lambda: read_feedback("What is 6*7?", "42.", "1 2 " * (5 * LONG // 4)),
}


@pytest.mark.parametrize("what", list(SCANS))
def test_a_long_text_is_scanned_in_time(what, deadline):
    with deadline(10, what):
        SCANS[what]()


def test_the_rewritten_scans_read_as_before():
    """The faster forms keep their readings: answers, spaced dashes, space before punctuation, units, working."""
    assert parse_answer("So the answer is 1,250.") == 1250.0
    assert parse_answer("Answer:  $\\boxed{ 42}") == 42.0
    assert parse_answer("answer is -3.5 and then 7") == -3.5
    assert parse_answer("no marker, last number 9") == 9.0
    assert normalise("Too long  —  cut it ,please !") == "too long, cut it,please!"
    assert normalise("use .env and 2 .5") == "use .env and 2 .5"
    assert units("It is 38.5°F, about 12 km away in 5h") == {
        ("fahrenheit", "temperature"), ("kilometre", "length"), ("hour", "time")
    }  # fmt: skip
    assert units("1,000.5 km") == units("12.5km") == {("kilometre", "length")}
    assert (
        shows_working("3 × 4 = 12", {}) and shows_working(".5 * 4 = 2", {}) and shows_working("1,000 + 5 = 1,005", {})
    )
    assert not shows_working("1" * 50 + " + ", {})


def test_tool_calls_are_taken_and_the_rest_is_kept():
    call = {"name": "read_file", "arguments": {"path": "a.txt"}}
    text = f"Let me look.\n<tool_call>\n {json.dumps(call)} \n</tool_call> then <tool_call>not json</tool_call> done"
    content, calls = parse_tool_calls(text)
    assert [c["function"]["name"] for c in calls] == ["read_file"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "a.txt"}
    assert content == "Let me look.\n then <tool_call>not json</tool_call> done"  # a malformed call stays as written

    two = parse_tool_calls(
        '<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b", "arguments": "x"}</tool_call>'
    )
    assert two[0] is None and [c["function"]["arguments"] for c in two[1]] == ["{}", "x"]

    unclosed = 'Here: <tool_call>{"name": "a"}'
    assert parse_tool_calls(unclosed) == (unclosed, [])  # nothing taken: the text comes back whole
    assert parse_tool_calls("plain text") == ("plain text", [])
    assert parse_tool_calls('<tool_call>["name"]</tool_call>') == ('<tool_call>["name"]</tool_call>', [])


def test_a_long_reply_is_read_by_its_head_and_tail():
    """Feedback around a pasted document keeps its reading; a reply within the bound is read whole."""
    paste = "line of a pasted log with words and 12 numbers " * 2_000  # 94,000 characters
    assert read_feedback("What is 6*7?", "The answer is 24.", f"Wrong, it should be 42, not 24. {paste}")[0] == -1
    assert read_feedback("What is 6*7?", "The answer is 42.", f"{paste} Perfect, thank you!")[0] == 1
    short = "Thanks! " * (MAX_READ_CHARS // 8)
    assert bounded(short) == short
    head, tail = bounded("ab " * MAX_READ_CHARS).split("\n")  # cut at spaces: no half words either side
    assert len(head) + len(tail) <= MAX_READ_CHARS and head.endswith("ab") and tail.startswith("ab ")
    assert bounded("x" * (2 * MAX_READ_CHARS)) == "x" * (MAX_READ_CHARS // 2) + "\n" + "x" * (MAX_READ_CHARS // 2)
