"""`judge=rule`: a deterministic lexical judge for scripted users and tests — not an LLM.

It reads the feedback the next state carries: the last user message if there is one, else the
tool results. Corrections win over approvals ("thanks, but that's wrong" is a correction),
because a user who complains and is polite about it still wants a redo. The lexicon is general
and persona-agnostic: it must work for any scripted user, so it names no task or persona.

Matching is case-insensitive on whole words. Before matching, dashes become commas and spaces
before punctuation go, so "No — …" and "no , …" both read as the cue "no,".
"""

from __future__ import annotations

import re

from claw.judge.turn import Message, Turn, message_text

# The user approves or moves on with thanks.
APPROVAL = (
    "thanks", "thank you", "thx", "cheers", "great", "perfect", "that works", "works now", "got it",
    "makes sense", "awesome", "exactly", "helpful", "nice", "good job", "well done", "excellent",
    "looks good", "lgtm", "love it", "brilliant", "fantastic", "spot on", "appreciate", "👍", "🙏",
)  # fmt: skip

# The user corrects, re-requests or complains: the response did not do what was asked.
CORRECTION = (
    "no,", "no.", "no!", "nope", "not what", "not quite", "wrong", "incorrect", "instead", "please don't",
    "don't", "do not", "stop", "too long", "too short", "too verbose", "shorter", "simpler", "again",
    "redo", "rewrite", "rephrase", "try again", "i asked", "i said", "i meant", "that's not", "that is not",
    "can you change", "could you change", "should be", "should not", "shouldn't", "why did you",
    "you forgot", "you missed", "you ignored", "doesn't work", "didn't work", "not working", "mistake",
)  # fmt: skip

# Phrases that contain a correction cue but are not corrections; removed before matching.
NOT_CORRECTION = ("thanks again", "thank you again", "don't worry", "do not worry", "no problem", "no worries")

# A tool result with one of these failed; any other tool output counts as success.
TOOL_ERROR = ("error", "exception", "traceback", "not found", "failed", "permission denied", "no such file", "timed out")
# Exception class names (FileNotFoundError, KeyError, RuntimeException) are errors too.
_EXCEPTION_NAME = r"\w+(?:error|exception)(?!\w)"

# "Hmm, no —" / "Nope." at the start of a correction: the hint keeps what follows.
_LEADING_NO = re.compile(r"^\s*(?:(?:hmm+|um+|uh+|well|oh|ah)\W+)*(?:no+\s*[,.;:!—–-]|nope\b|nah\b)[\s,.;:!—–-]*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_HINT_CHARS = 10  # a shorter remainder ("No, redo.") carries no instruction worth distilling


def _lexicon(phrases: tuple[str, ...], extra: str | None = None) -> re.Pattern[str]:
    """One regex for a phrase list: whole words (no word character on either side), spaces flexible."""

    def one(phrase: str) -> str:
        body = r"\s+".join(re.escape(word) for word in phrase.split())
        return (r"(?<!\w)" if phrase[0].isalnum() else "") + body + (r"(?!\w)" if phrase[-1].isalnum() else "")

    alternatives = [one(p) for p in phrases] + ([extra] if extra else [])
    return re.compile("|".join(alternatives), re.IGNORECASE)


_APPROVAL = _lexicon(APPROVAL)
_CORRECTION = _lexicon(CORRECTION)
_NOT_CORRECTION = _lexicon(NOT_CORRECTION)
_TOOL_ERROR = _lexicon(TOOL_ERROR, _EXCEPTION_NAME)


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'")
    text = re.sub(r"\s+[—–-]+\s+|[—–]", ", ", text)
    return re.sub(r"\s+([,.;!?])", r"\1", text)


def _correction_cue(text: str) -> str | None:
    found = _CORRECTION.search(_NOT_CORRECTION.sub(" ", _normalise(text)))
    return found.group(0) if found else None


def _feedback(turn: Turn) -> tuple[str, list[Message]]:
    """("user", [last user message]) or ("tool", tool messages) or ("none", [])."""
    users = [m for m in turn.next_state if m.get("role") == "user"]
    if users:
        return "user", users[-1:]
    tools = [m for m in turn.next_state if m.get("role") == "tool"]
    return ("tool", tools) if tools else ("none", [])


def _first_error(tools: list[Message]) -> str | None:
    """The telling line of the first failed tool result: a Python traceback's last line (the exception),
    else the first non-empty line."""
    for message in tools:
        text = message_text(message)
        if _TOOL_ERROR.search(text):
            lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
            return lines[-1] if lines[0].lower().startswith("traceback") and len(lines) > 1 else lines[0]
    return None


class RuleBackend:
    kind = "rule"

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str:
        raise NotImplementedError("the rule backend judges turns, not prompts: judges call score_turn / hint_for when backend.kind == 'rule'")

    def score_turn(self, turn: Turn) -> tuple[int, str]:
        """(score, rationale): +1 approval or tool success, −1 correction or tool error, 0 otherwise."""
        source, messages = _feedback(turn)
        if source == "tool":
            error = _first_error(messages)
            return (-1, f"tool error: {error}") if error is not None else (1, "tool succeeded")
        if source == "user":
            text = message_text(messages[0])
            cue = _correction_cue(text)
            if cue is not None:
                return -1, f"user correction cue {cue!r}"
            found = _APPROVAL.search(_normalise(text))
            if found:
                return 1, f"user approval cue {found.group(0)!r}"
        return 0, "no feedback cue in the next state"

    def hint_for(self, turn: Turn) -> str | None:
        """The corrective sentence(s) of a user correction, or the failed tool's error; None otherwise."""
        source, messages = _feedback(turn)
        if source == "tool":
            error = _first_error(messages)
            return f"The previous tool call failed: {error}" if error is not None else None
        if source != "user":
            return None
        sentences = [s.strip() for s in _SENTENCE_END.split(message_text(messages[0])) if s.strip()]
        corrective = [s for s in sentences if _correction_cue(s) is not None]
        hint = _LEADING_NO.sub("", " ".join(corrective)).strip()
        return hint if len(hint) >= MIN_HINT_CHARS else None
