"""`judge=rule`: a deterministic judge that reads feedback the way a person does — not an LLM.

It reads the feedback the next state carries: the last user message if there is one, else the
tool results (any error → −1 with the error line as the hint, else +1).

A user's message is read clause by clause (`claw.judge.reading`): each clause gets a *reading
class* from its form — a request aimed at the reply ("Use metric units.", "Just tell me the number
first, please."), a comparative ("shorter", "more concise"), a corrected value ("42, not 24"), a
negated approval ("not great", "doesn't look right"), a question that implies a fault ("Why is it in
French?"), a partial acceptance ("good, but drop the intro"), an approval, brief or not ("Sounds
good.", "yep") — built from word classes (`claw.judge.lexicon`), not from a list of phrases, and
general and persona-agnostic: it names no task or persona. Corrections win over approvals ("thanks,
but that's wrong" is a correction), because a user who complains politely still wants a redo; a new
question or "what about 7 x 8?" is neutral (0, no training signal).

The hint (OPD) is the corrective part of the message, quoted: from the first clause that is not an
approval, without a leading "no" / "but", plus any request that follows it. A bare verdict ("Nope.",
"Not great.") says nothing to distil and gives no hint; a short one with content ("Too wordy.") is
framed as an instruction so it clears `judge.min_hint_chars`.

Measure it (or any judge backend) on your own feedback lines or proxy logs:

    python -m claw.judge.evaluate data/feedback/dev.jsonl [--judge rule|policy] [--votes m] [--json out.json]

(`claw/judge/evaluate.py`: reading accuracy, confusion matrix, accuracy per kind, hint rate.)
"""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import TYPE_CHECKING

from claw.judge.reading import ReplyReading, read_reply
from claw.judge.reading.reask import repeats_request
from claw.judge.reading.tone import without_emoji
from claw.judge.turn import Message, Turn, message_text

if TYPE_CHECKING:
    from claw.judge.prompts import VotePrompt

# A tool result with one of these failed; any other tool output counts as success.
TOOL_ERROR = (
    "error", "exception", "traceback", "not found", "failed", "permission denied", "no such file", "timed out",
)  # fmt: skip
# Exception class names (FileNotFoundError, KeyError, RuntimeException) are errors too.
_EXCEPTION_NAME = r"\w+(?:error|exception)(?!\w)"

MIN_HINT_CHARS = 10  # a hint this short is framed as an instruction (judge.min_hint_chars rejects hints not longer)
# Words of a bare verdict: a corrective sentence made only of these says no, not what to change.
VERDICT_WORDS = {
    "no", "nope", "nah", "not", "wrong", "incorrect", "quite", "really", "at", "all", "that", "that's", "this", "it",
    "it's", "is", "isn't", "doesn't", "don't", "didn't", "i", "a", "fan", "great", "good", "helpful", "right",
    "correct", "work", "works", "like", "try", "again", "redo", "please", "hmm", "so", "very", "just", "totally",
    "completely", "look", "looks", "sound", "sounds", "seem", "seems", "exactly", "what", "asked", "for", "wanted",
    "had", "in", "mind", "the", "one", "still", "there", "yet", "close", "almost", "nearly", "bad", "of", "well", "me",
    "you", "useful", "ideal", "sure", "am", "i'm", "oh", "um", "ugh", "meh", "hm", "nop", "sorry", "but", "thanks",
    "thank", "ok", "okay", "was", "wasn't", "think", "even", "lol", "haha", "ha", "lmao", "wait", "no-one", "nothing",
}  # fmt: skip
# What opens a corrective piece without saying anything: "Hmm, no —", "Nope.", "but", "though".
_LEAD_IN = re.compile(
    r"^(?:(?:hmm+|um+|uh+|well|oh|ah|ok|okay|so|and|but|though|although|however|yeah|yes|lol|haha|wait)\b"
    r"[\s,.;:!—–-]*"
    r"|(?:no+|nope|nah)(?:[\s]*[,.;:!—–-]+\s*|$))+",
    re.IGNORECASE,
)


def _lexicon(phrases: tuple[str, ...], extra: str | None = None) -> re.Pattern[str]:
    """One regex for a phrase list: whole words (no word character on either side), spaces flexible."""

    def one(phrase: str) -> str:
        body = r"\s+".join(re.escape(word) for word in phrase.split())
        return (r"(?<!\w)" if phrase[0].isalnum() else "") + body + (r"(?!\w)" if phrase[-1].isalnum() else "")

    alternatives = [one(p) for p in phrases] + ([extra] if extra else [])
    return re.compile("|".join(alternatives), re.IGNORECASE)


_TOOL_ERROR = _lexicon(TOOL_ERROR, _EXCEPTION_NAME)


def _feedback(turn: Turn) -> tuple[str, list[Message]]:
    """("user", [last user message]) or ("tool", tool messages) or ("none", [])."""
    users = [m for m in turn.next_state or [] if m.get("role") == "user"]
    if users:
        return "user", users[-1:]
    tools = [m for m in turn.next_state or [] if m.get("role") == "tool"]
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


def _request(turn: Turn) -> str:
    users = [m for m in turn.messages if m.get("role") == "user"]
    return message_text(users[-1]) if users else ""


def corrective_hint(reading: ReplyReading) -> str | None:
    """The corrective part of a correction as an instruction for the teacher, or None when it says
    nothing beyond "no" (a bare verdict such as "Nope." or "Not great." teaches nothing to distil).

    Per corrective sentence, the text from its first clause that is not an approval, without a leading
    no / but / hmm ("Thanks, but that's wrong: …" → "that's wrong: …"); a partial acceptance whose tail is
    no correction by itself keeps the whole sentence ("Looks good except for the title."). After a
    correction, a request that follows joins it ("Too blunt. Can you explain why?"), and after a bare
    one any sentence that is not an approval ("Nope. Think about the units."); sarcasm and emoji count as bare
    verdicts ("Sure, much shorter 🙄 Cut the intro." → "Cut the intro."); a bare one that opens the
    correction keeps the neutral statement just before it, the reason it rests on ("I get a different total.
    Please look again."). A hint too short to pass
    the judge's length floor but with content ("Too wordy.") is framed as an instruction: "Revise the
    answer: Too wordy."
    """
    if reading.score != -1:
        return None
    pieces: list[str] = []
    after_bare = False
    reason = ""  # the statement just before, if neutral: what a bare verdict after it rests on
    for sentence, group in itertools.groupby(reading.readings, key=lambda pair: pair[0]):
        rs = [r for _, r in group]
        corrective = [r for r in rs if r.score == -1]
        if not corrective:
            if pieces and not any(r.score == 1 for r in rs) and (after_bare or any(r.request for r in rs)):
                pieces.append(sentence)
            neutral_statement = not any(r.score == 1 or r.request for r in rs) and not sentence.endswith("?")
            reason = _LEAD_IN.sub("", sentence).strip() if neutral_statement else ""
            after_bare = False
            continue
        whole_sentence = corrective[0].kind == "partial" and not any(r.score == -1 and r.kind != "partial" for r in rs)
        start = next(r for r in rs if r.score != 1)
        piece = sentence if whole_sentence else sentence[max(sentence.find(start.clause), 0) :]
        piece = _LEAD_IN.sub("", without_emoji(piece)).strip()
        if all(r.kind == "sarcasm" for r in corrective):
            piece = ""  # "Oh sure, much better 🙄": praise not meant says no, not what to change
        if _bare(piece) and reason and not pieces:
            pieces.append(reason)  # "I get a different total. Please look again.": the reason is the hint
        pieces.append(piece)
        after_bare = _bare(piece)
        reason = ""
    hint = " ".join(p for p in pieces if p and not _bare(p)).strip()
    if not hint:
        return None
    return hint if len(hint) > MIN_HINT_CHARS else f"Revise the answer: {hint}"


def graded_credit(reading: ReplyReading, points: int | None = None, floor: float | None = -1.0) -> float:
    """The reply's net approval over the points it makes, in [-1, 1] (`judge.credit=graded`).

    A point is a sentence: corrective if any of its clauses corrects, approving if one approves and none
    corrects. An approval without correction is +1, a neutral reply 0; a correction with k corrective
    and a approving sentences is (a - k) / (a + k + 1): one complaint -0.5, two -0.67, four -0.8, one
    complaint after a compliment 0. So a reply the user finds one fault with earns more than one they
    find four with, where binary credit gives both -1. It reads how much the user objects, not what a
    persona checks: nothing here names a criterion.

    `points=K` (`judge.credit_points`) makes it linear instead: (a - k) / K, clipped to [`floor`, 1] — each
    complaint costs 1/K, so two complaints and four differ by 2/K (0.5 at K=4) where the ratio form
    separates them by 0.13 (-0.67 vs -0.8), less than the spread of one rollout batch. `floor` None
    (`judge.credit_floor=null`): no lower clip, so five complaints cost more than four (-1.25 at K=4);
    the top stays 1, what an approval without a complaint earns.
    """
    if reading.score != -1:
        return float(reading.score)
    corrective = approving = 0
    for _, group in itertools.groupby(reading.readings, key=lambda pair: pair[0]):
        scores = [r.score for _, r in group]
        corrective += -1 in scores
        approving += 1 in scores and -1 not in scores
    return counted_credit(approving, corrective, points, floor)


def counted_credit(approving: int, corrective: int, points: int | None = None, floor: float | None = -1.0) -> float:
    """`graded_credit` from the counts of approving and corrective sentences (the ratio form, or linear at K)."""
    if points is not None:
        linear = min(1.0, (approving - corrective) / points)
        return linear if floor is None else max(floor, linear)
    return (approving - corrective) / (approving + corrective + 1)


def whole_hint(feedback: str) -> str | None:
    """A correction only the learned head saw: the whole message is the hint, without its lead-in and emoji, unless it
    is a bare verdict."""
    hint = _LEAD_IN.sub("", without_emoji(feedback)).strip()
    if not hint or _bare(hint):
        return None
    return hint if len(hint) > MIN_HINT_CHARS else f"Revise the answer: {hint}"


def read_feedback(request: str, response: str, reply: str) -> tuple[int, str | None]:
    """What the rule judge makes of one user reply to `response` (which answered `request`): its score (+1 / −1 / 0)
    and its hint (None when it gives none). The reading `RuleBackend` applies to a turn, for a REPL or a test."""
    reading = read_reply(reply, request, response)
    return reading.score, corrective_hint(reading)


def _bare(text: str) -> bool:
    return all(w in VERDICT_WORDS for w in re.findall(r"[\w']+", text.lower()))


class RuleBackend:
    """The judge backend that reads the turn itself (`judge=rule`): its votes are its reading, written in the judges'
    answer format, and its graded credit the reply's net approval. It completes no prompt.

    A vote is read in a worker thread: with judge.reader_head the reading is a forward pass, and the judge's event
    loop may be the proxy's, which must keep serving meanwhile.
    """

    # The rules (and judge.reader_head's forward pass) run locally and always end; under load they wait for the CPU
    # and for the reader's lock, and a 5 s limit then dropped a hint or a vote depending on what else ran, so one
    # config and seed trained on different hints (experiments/personal_agent/log.md, measured 2026-12-04). A
    # deterministic judge must give the same verdict however busy the machine is: no timeout.
    needs_timeout = False

    def __init__(
        self,
        credit_points: int | None = None,
        credit_floor: float | None = -1.0,
        reader_head: str | None = None,
        reader_head_min_p: float = 0.8,
        reader_head_flips: bool = False,
        reask_credit: float = -0.25,
    ) -> None:
        if credit_points is not None and credit_points < 1:
            raise ValueError(f"judge.credit_points must be a positive integer or null (got {credit_points!r})")
        if not 0.0 < reader_head_min_p <= 1.0:
            raise ValueError(f"judge.reader_head_min_p must be in (0, 1] (got {reader_head_min_p!r})")
        if credit_floor is not None and credit_floor > 0:
            raise ValueError(f"judge.credit_floor must be <= 0 or null (got {credit_floor!r}): it clips complaints")
        self.credit_points = credit_points  # graded credit: null = the ratio form, K = linear, 1/K per point
        self.credit_floor = credit_floor  # linear credit's lower clip; null: none
        # judge.reader_head: the learned head (claw.judge.reading.head) overrides the rules where it is min_p sure
        self.reader = None
        if reader_head is not None:
            from claw.judge.reading.head import LearnedReader

            self.reader = LearnedReader(reader_head)
        self.reader_head_min_p = reader_head_min_p
        # False: the head moves a reading to or from "neither" only; it never turns the rules' approval into a
        # correction or back, the one kind of error that inverts a reward (experiments/personal_agent/log.md)
        self.reader_head_flips = reader_head_flips
        if not -1.0 <= reask_credit <= 0.0:
            raise ValueError(f"judge.reask_credit must be in [-1, 0] (got {reask_credit!r}): a re-ask is no approval")
        self.reask_credit = reask_credit  # the request asked again, no cue of its own (claw/judge/reading/reask.py)

    def _read(self, turn: Turn, message: Message) -> tuple[ReplyReading, int | None]:
        """The rules' reading, and the head's score where it is at least min_p sure of another and allowed to
        override it (else None)."""
        feedback = message_text(message)
        reading = read_reply(feedback, _request(turn), turn.response_text)
        if self.reader is None:
            return reading, None
        from claw.judge.reading.head import SCORES

        label, p = self.reader.reading(feedback)
        score = SCORES[label]
        overrides = p >= self.reader_head_min_p and score != reading.score
        if not self.reader_head_flips and score * reading.score < 0:
            overrides = False
        return reading, (score if overrides else None)

    async def score_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        """`score_turn` as a PRM vote: the rationale, then the score boxed. The prompt is no question for the rules."""
        score, why = await asyncio.to_thread(self.score_turn, turn)
        return f"{why}\n\\boxed{{{score}}}"

    async def hint_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        """`hint_for` as a hint vote: the hint between the markers, or a vote against when there is none."""
        hint = await asyncio.to_thread(self.hint_for, turn)
        return f"\\boxed{{1}}\n[HINT_START]{hint}[HINT_END]" if hint else "\\boxed{-1}"

    async def own_credit(self, turn: Turn) -> float | None:
        """`graded_score`: the reply's net approval, read off the loop like a vote."""
        return await asyncio.to_thread(self.graded_score, turn)

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str:
        """A chat prompt has no turn to read: the rules vote through score_vote / hint_vote."""
        raise NotImplementedError(
            "the rule backend reads turns, not prompts: its votes come from score_turn / hint_for (score_vote, "
            "hint_vote)"
        )

    def score_turn(self, turn: Turn) -> tuple[int, str]:
        """(score, rationale): +1 approval or tool success, −1 correction or tool error, 0 otherwise."""
        source, messages = _feedback(turn)
        if source == "tool":
            error = _first_error(messages)
            return (-1, f"tool error: {error}") if error is not None else (1, "tool succeeded")
        if source == "user":
            reading, learned = self._read(turn, messages[0])
            if learned is not None and learned != 0:
                return learned, f"learned reading (judge.reader_head, over the rules' {reading.score:+d})"
            if reading.score != 0 and learned is None:
                return (
                    reading.score,
                    f"user {'correction' if reading.score < 0 else 'approval'} ({reading.kind}): {reading.cue!r}",
                )
            # neutral, whichever reader said so: a message with no cue of its own may still ask the request again
            if self._reasked(turn, messages[0]):
                return -1, "the user asked the same request again (a re-ask: the reply did not serve)"
        return 0, "no feedback cue in the next state"

    def _reasked(self, turn: Turn, message: Message) -> bool:
        return self.reask_credit < 0 and repeats_request(message_text(message), _request(turn))

    def graded_score(self, turn: Turn) -> float:
        """`judge.credit=graded`: the reply's net approval (`graded_credit`); a tool error -1, success +1."""
        source, messages = _feedback(turn)
        if source == "tool":
            return float(self.score_turn(turn)[0])
        if source == "user":
            reading, learned = self._read(turn, messages[0])
            if learned == -1:  # one complaint the rules did not see
                return counted_credit(0, 1, self.credit_points, self.credit_floor)
            neutral = learned == 0 or (learned is None and reading.score == 0)
            if neutral and self._reasked(turn, messages[0]):  # whichever reader found no cue
                return self.reask_credit
            if learned is not None:
                return float(learned)
            return graded_credit(reading, self.credit_points, self.credit_floor)
        return 0.0

    def hint_for(self, turn: Turn) -> str | None:
        """The corrective sentence(s) of a user correction, or the failed tool's error; None otherwise."""
        source, messages = _feedback(turn)
        if source == "tool":
            error = _first_error(messages)
            return f"The previous tool call failed: {error}" if error is not None else None
        if source != "user":
            return None
        reading, learned = self._read(turn, messages[0])
        if learned is None:
            return corrective_hint(reading)
        if learned != -1:
            return None
        return corrective_hint(reading) or whole_hint(message_text(messages[0]))
