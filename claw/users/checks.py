"""The check library: the criterion kinds a persona's hidden preference is built from.

A check is a pure function ``(text, task, **params) -> bool`` over the agent's response text and
the task dict; a few (`called_tool`) read the response's tool calls instead of its text. Checks
are registered by name so a persona file can name them, and `make_check` validates a criterion's
parameters against the function's signature up front, so a typo in a YAML file fails at load
time, not halfway through a run.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from claw.tasks.arithmetic import parse_answer


@dataclass(frozen=True)
class Response:
    """What a criterion is evaluated on: the final text, and the tool calls made on the way to it."""

    text: str
    tool_calls: tuple[dict, ...] = ()  # OpenAI-style {"id", "type": "function", "function": {"name", "arguments"}}


class CheckError(ValueError):
    """A criterion names an unknown kind or passes bad parameters."""


CHECKS: dict[str, Callable[..., bool]] = {}
_READS_CALLS: set[str] = set()


def check(kind: str, reads_calls: bool = False) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    def register(fn: Callable[..., bool]) -> Callable[..., bool]:
        CHECKS[kind] = fn
        if reads_calls:
            _READS_CALLS.add(kind)
        return fn

    return register


_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’.,][A-Za-z0-9]+)*")
# A sentence ends at . ! ? followed by space/end, or at a line break; decimals ("2.5") do not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?=\s|$)|\n+")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
# "3 × 4 = 12", "12 - 5 = 7", "3*4=12", "$4 x 3 = $12", "6 km/h * 4 hours = 24 km": an operation with its result
# (up to two unit words may follow each operand). A unit word is a whole run of letters ("km/h", "/pen"): the lookahead
# stops the engine from splitting one ("ro" + "ws"), which made a reply of many operands and no "=" ("2 rows * 2 rows *
# ...") take exponential time, and hung an evaluation (2026-12-05).
_UNITS = r"(?:\s*/?[A-Za-z]+(?:/[A-Za-z]+)*(?![A-Za-z]|/[A-Za-z])){0,2}"
# An expression starts where a number does (`(?<![\d,.])`): tried from every digit, a long run of digits cost quadratic
# time (3,000 digits: 0.4 s). A long chain of operands with no "=" is still rescanned from each operand (quadratic:
# 3,000 characters, 0.06 s; a reply of 96 tokens is far below that).
_EXPRESSION = re.compile(rf"(?<![\d,.])[,.]*\d[\d,.]*{_UNITS}\s*(?:[-+×x*/÷−]\s*\$?\d[\d,.]*{_UNITS}\s*)+=\s*\$?-?\d")
_MARKDOWN = re.compile(r"\*\*|__|^\s{0,3}#{1,6}\s|^\s*[-*+]\s+\S|^\s*\d+[.)]\s+\S|`|\\\(|\\\[|\\boxed", re.MULTILINE)
STOCK_OPENERS = (
    "to solve", "to find", "to determine", "to calculate", "to figure", "to answer", "sure", "certainly", "of course",
    "alright", "all right", "okay", "ok,", "great question", "let's", "let us", "first,", "step 1", "here is",
    "here's", "i'd be happy", "i would be happy", "absolutely", "in this problem", "this problem", "the problem",
    "we need", "we are given", "we can", "given that",
)  # fmt: skip


def _compile(pattern: str, flags: str) -> re.Pattern[str]:
    bad = set(flags) - set(_FLAGS)
    if bad:
        raise CheckError(f"unknown regex flags {sorted(bad)}; use any of {sorted(_FLAGS)}")
    value = 0
    for f in flags:
        value |= _FLAGS[f]
    try:
        return re.compile(pattern, value)
    except re.error as e:
        raise CheckError(f"bad regex {pattern!r}: {e}") from e


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def numbers(text: str) -> list[float]:
    out = []
    for raw in _NUMBER.findall(text):
        try:
            out.append(float(raw.replace(",", "")))
        except ValueError:
            continue
    return out


def _field(task: dict, name: str) -> Any:
    if name not in task:
        raise CheckError(f"the task has no field {name!r} (it has {sorted(task)})")
    return task[name]


@check("matches")
def matches(text: str, task: dict, pattern: str, flags: str = "i") -> bool:
    """The response contains the pattern."""
    return _compile(pattern, flags).search(text) is not None


@check("not_matches")
def not_matches(text: str, task: dict, pattern: str, flags: str = "i") -> bool:
    """The response does not contain the pattern."""
    return _compile(pattern, flags).search(text) is None


@check("max_words")
def max_words(text: str, task: dict, n: int) -> bool:
    return 0 < len(words(text)) <= n


@check("min_words")
def min_words(text: str, task: dict, n: int) -> bool:
    return len(words(text)) >= n


@check("max_sentences")
def max_sentences(text: str, task: dict, n: int) -> bool:
    return 0 < len(sentences(text)) <= n


@check("answer_correct")
def answer_correct(text: str, task: dict, field: str = "answer") -> bool:
    """The response's final answer (after the last "answer is", else its last number) equals the task's."""
    value = parse_answer(text)
    return value is not None and abs(value - float(_field(task, field))) < 1e-9


@check("first_sentence_states_answer")
def first_sentence_states_answer(text: str, task: dict, field: str = "answer") -> bool:
    """The task's answer is among the numbers of the first sentence: the answer leads, the working follows."""
    first = sentences(text)[:1]
    target = float(_field(task, field))
    return bool(first) and any(abs(v - target) < 1e-9 for v in numbers(first[0]))


@check("mentions_number")
def mentions_number(text: str, task: dict, field: str = "answer") -> bool:
    """The task field's number appears anywhere in the response (e.g. a grading comment names the right answer)."""
    target = float(_field(task, field))
    return any(abs(v - target) < 1e-9 for v in numbers(text))


@check("shows_working")
def shows_working(text: str, task: dict, min_expressions: int = 1) -> bool:
    """At least `min_expressions` arithmetic lines with a result, like "3 × 4 = 12"."""
    return len(_EXPRESSION.findall(text)) >= min_expressions


@check("no_markdown")
def no_markdown(text: str, task: dict) -> bool:
    """No bold, headings, bullet or numbered lists, code or LaTeX: the look of a chatbot answer."""
    return _MARKDOWN.search(text) is None


@check("starts_with_not")
def starts_with_not(text: str, task: dict, phrases: list[str] | None = None) -> bool:
    """The response does not open with a stock phrase (`phrases`, default `STOCK_OPENERS`)."""
    opening = re.sub(r"^[\s\"'*#>_-]+", "", text).lower().replace("’", "'")
    return bool(opening) and not any(opening.startswith(p.lower()) for p in (phrases or STOCK_OPENERS))


@check("if_field")
def if_field(text: str, task: dict, field: str, then: dict, otherwise: dict) -> bool:
    """Branch on a boolean task field: `then` / `otherwise` are criteria ({kind, params}) — e.g. a
    grading comment must call a right solution right and a wrong one wrong."""
    branch = then if _field(task, field) else otherwise
    return make_check(branch.get("kind", ""), branch.get("params", {}))(Response(text), task)


@check("all_of")
def all_of(text: str, task: dict, criteria: list[dict]) -> bool:
    """Every one of `criteria` ({kind, params}) holds: e.g. says "correct" and never "wrong"."""
    return all(make_check(c.get("kind", ""), c.get("params", {}))(Response(text), task) for c in criteria)


@check("called_tool", reads_calls=True)
def called_tool(calls: tuple[dict, ...], task: dict, name: str) -> bool:
    """The agent called the tool `name` before answering."""
    return any((c.get("function") or {}).get("name") == name for c in calls)


def make_check(kind: str, params: dict | None = None) -> Callable[[Response, dict], bool]:
    """A ready-to-call criterion ``(response, task) -> bool``; raises CheckError for an unknown kind or bad params."""
    if kind not in CHECKS:
        raise CheckError(f"unknown check kind {kind!r}; known: {sorted(CHECKS)}")
    fn, params = CHECKS[kind], dict(params or {})
    try:
        inspect.signature(fn).bind("text", {}, **params)
    except TypeError as e:
        accepted = [p for p in inspect.signature(fn).parameters if p not in ("text", "task", "calls")]
        raise CheckError(f"check {kind!r} got params {sorted(params)}: {e}; it accepts {accepted}") from e
    if "pattern" in params:  # fail at load time, not at the first response
        _compile(params["pattern"], params.get("flags", "i"))
    if "phrases" in params and not (
        isinstance(params["phrases"], list) and all(isinstance(p, str) for p in params["phrases"])
    ):
        raise CheckError(
            f"check {kind!r}: `phrases` must be a list of strings "
            f"(quote YAML items containing ':'), got {params['phrases']!r}"
        )
    if "n" in params and not isinstance(params["n"], int):
        raise CheckError(f"check {kind!r}: `n` must be an integer, got {params['n']!r}")
    nested = (
        [params["then"], params["otherwise"]] if kind == "if_field" else params["criteria"] if kind == "all_of" else []
    )
    if kind == "all_of" and not isinstance(nested, list):
        raise CheckError(f"all_of needs `criteria`: a list of {{kind, params}} mappings, got {nested!r}")
    if nested:
        for branch in nested:
            if not isinstance(branch, dict):
                raise CheckError(f"{kind} takes {{kind, params}} mappings, got {branch!r}")
            make_check(branch.get("kind", ""), branch.get("params", {}))
    reads_calls = kind in _READS_CALLS
    return lambda response, task: bool(fn(response.tool_calls if reads_calls else response.text, task, **params))
