"""A whole reply read: each clause by the first class whose shape it has (`CORRECTIONS` in order, then
`APPROVALS`, then brief approval), and the reply's score from its clauses — any correction, else any approval, a
brief one only when the reply holds nothing else. The reply-level guards live here too: a topic changed on purpose
drops its marker, a bare name is set against a short reply's, "no X" beside an approval lists what the reply is free
of, and a clause after an approval that opens with a contrast reads partial."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from claw.judge.lexicon import APPROVING, BRIEF, CALENDAR, FAILINGS, FAULT, FILLER, NEGATORS
from claw.judge.reading import edits, faults, questions, values
from claw.judge.reading.approvals import APPRECIATION, APPROVALS, THANKS
from claw.judge.reading.clause import NOT_CUES, Clause, TurnContext, about_elsewhere
from claw.judge.reading.questions import asks_anew
from claw.judge.reading.text import INTERJECTION, clauses, normalise, sentences, words_of
from claw.judge.reading.tone import emoji_tone as tone_of
from claw.judge.reading.tone import sarcastic, without_emoji
from claw.judge.reading.values import value_contrast

# Contrast words that open the corrective half of a partial acceptance.
_CONTRAST = (
    "but",
    "though",
    "although",
    "however",
    "except",
    "only",
    "just",
    "apart",
    "aside",
    "other than",
    "save for",
)
# A topic changed on purpose ("Unrelated, but …", "Random question: …", "Side note: …"): what follows is no
# feedback on the reply, and the marker itself finds no fault.
_TOPIC_CHANGE = re.compile(
    r"^(?:(?:totally|completely|slightly|kinda|somewhat|a bit|bit) )?(?:(?:unrelated|off[- ]topic)"
    r"(?: (?:question|topic|thing|note|q))?|(?:random|different|side|separate|quick|other|unrelated|new) (?:question"
    r"|topic|thing|note|q))(?:[,:.]| -|(?= but\b))\s*(?:but\s+)?(?=\w)"
    r"|^on (?:an?|another) (?:unrelated|different|separate|side|other) note[,:]?\s*"
    r"|^(?:changing|to change) (?:the )?(?:subject|topic)[,:]?\s*",
    re.IGNORECASE,
)
# An affirmative opening a clause: with only the reply's own words after it, it takes the reply up ("ok yeah 12").
_AFFIRMATIVE = re.compile(r"^(?:yes|yeah|yep|yup|ya|yea|ok|okay|right|sure|alright|correct|exactly|indeed)\b")

# The user's own plan ("I'll probably tweak the ending myself"): after an approval and a contrast it takes the reply
# from there, it asks nothing of it (but "I'd need …", "I'll have to …" say what it lacks).
_OWN_PLAN = re.compile(
    r"^(?:i|we)(?:'ll| will| might| may| can| could|'m going to| am going to|'re going to)"
    r"(?: probably| maybe| just| still| likely| also| definitely)* (?!(?:need|want|have|has|must|wish)\b)[a-z]"
    # the user's motive for asking: "(I) just wanted to make sure", "only asked to be sure"
    r"|^(?:(?:i|we) )?(?:just |only )?(?:wanted|needed|meant|was trying|asked) to (?:double[- ]?check|check|confirm"
    r"|verify|make sure|be sure|sanity[- ]?check)\b"
)
# An approval restated after a contrast, its verb elided: "no idea why that worked, but it did".
_AFFIRMED = re.compile(
    r"^(?:it|that|this|they|he|she)(?: really| still| actually| totally| definitely)? (?:did|does|do|is|was|were|has"
    r"|works|worked|helps|helped)$"
)
# A question about a case of the user's own, put as a supposition: "what if I want two loaves, just double it?" — the
# requests in it are asked about that case, not made of the reply (but "what if you cut the intro?" suggests a change).
_SUPPOSED = re.compile(r"^(?:and |but |so |ok |okay )?(?:what if|if|suppose|supposing|say|assuming) (?:i|we|my|our)\b")
_ASKED_FOR_CASE = {"edit_request", "comparative", "modal", "redo"}
# The corrections, in the order they are tried (the package docstring lists them): the first that fits reads
# the clause, so the order is the meaning.
CORRECTIONS: tuple[tuple[str, Callable[[Clause], bool]], ...] = (
    ("denial", faults.denial),
    ("near_miss", faults.near_miss),
    ("negated_approval", faults.negated_approval),
    ("fault", faults.fault),
    ("excess", faults.excess),
    ("value", values.value),
    ("value", values.language),
    ("value", values.unit),
    ("value", values.starred),
    ("prohibition", faults.prohibition),
    ("preference", faults.preference),
    ("your_fault", faults.your_fault),
    ("comparative", edits.comparative),
    ("modal", edits.modal),
    ("edit_request", edits.edit_request),
    ("fault_question", questions.fault_question),
    ("emphasis", faults.emphasis),
    ("redo", edits.redo),
    ("value", values.actually),
)


@dataclass(frozen=True)
class Reading:
    score: int  # +1 approval, -1 correction, 0 neutral
    kind: str  # the reading class ("comparative", "approval", …); "" when neutral
    clause: str  # the clause read that way, as written
    request: bool = False  # a neutral clause that asks for something ("Can you explain why?")


def _appreciated(c: Clause) -> bool:
    """An approving verb over a clause ("I like that you didn't pad it", "appreciate that you kept it short",
    "thanks for not lecturing me"): the clause is what the user approves, a negation in it included. A failing or a
    fault said there without a negation keeps the clause's reading ("love how you ignored the limit" is sarcasm)."""
    frame = APPRECIATION.match(c.body)
    if not frame:
        return False
    inner = words_of(c.body[frame.end() :])
    negated = any(w in NEGATORS or w.endswith("n't") for w in inner)
    return negated or not any(w in FAILINGS or w in FAULT for w in inner)


def _stretched(word: str) -> str:
    """A word typed with its last letter held ("yesss", "yepp", "okkk"): the word with it once."""
    return re.sub(r"([a-z])\1+$", r"\1", word)


def read_clause(c: Clause) -> Reading:
    if not c.words:
        return Reading(0, "", c.text)
    if not c.question and _appreciated(c):
        return Reading(1, "approval", c.text)
    for kind, fits in () if c.own_step else CORRECTIONS:
        if fits(c):
            return Reading(-1, kind, c.text)
    for kind, fits in APPROVALS:
        if fits(c):
            return Reading(1, kind, c.text)
    if all(w in BRIEF or _stretched(w) in BRIEF for w in c.words) and not c.question:
        return Reading(1, "brief_approval", c.text)
    offered = c.turn.response_words | c.turn.response_numbers
    if _AFFIRMATIVE.match(normalise(c.text)) and not c.question and all(w in offered for w in c.words):
        return Reading(1, "brief_approval", c.text)  # "ok yeah 12": an affirmative and the reply's own words
    return Reading(0, "", c.text, request=c.directive and not c.new_step)


@dataclass(frozen=True)
class ReplyReading:
    score: int  # +1, -1 or 0 for the whole reply
    readings: list[tuple[str, Reading]]  # (sentence, reading) per clause, in order
    kind: str  # the deciding class ("" when neutral)
    cue: str  # the deciding clause


def _absence_listed(r: Reading) -> bool:
    """A denial that only names a thing ("no jargon"): beside an approval it says what the reply is free of."""
    body = normalise(r.clause).strip(" .!")
    return (
        r.kind == "denial"
        and bool(re.fullmatch(r"no [a-z][\w-]*(?: [a-z][\w-]*)?", body))
        and not any(w in FILLER or w in _CONTRAST or w in ("time", "more") for w in body.split()[1:])
    )


def _other_name(text: str, turn: TurnContext) -> bool:
    """A reply that is only a name the reply did not give, after a short reply that gave one: "Ottawa." against "The
    capital is Toronto.", "Wednesday!" against "… on Thursday." — the user's answer set against the reply's."""
    words = words_of(normalise(text))
    # "Canberra.", "Jupiter?", "Canberra*" (the asterisk of a chat correction)
    lone_name = re.fullmatch(r"\*?(?:[A-Z][\w'-]+ ?){1,3}[.!?*]*", text.strip()) and not any(
        w in BRIEF
        or w in FILLER
        or w in APPROVING
        or w in FAULT
        or w in NEGATORS
        or THANKS.match(w)
        or INTERJECTION.fullmatch(w)
        for w in words
    )
    if not lone_name or set(words) & turn.response_words or read_clause(Clause.of(text, turn)).score != 0:
        return False  # "Sent." reads as acting on the reply
    return (all(w in CALENDAR for w in words) and turn.dated) or turn.named


# "though" closing a clause, typed on it ("a week is 7 days tho") rather than split off as a clause of its own.
_CLOSING_THOUGH = re.compile(r"(?<=\w) (?:though|tho)$")


def _contrasted(readings: list[tuple[str, Reading]], turn: TurnContext) -> list[tuple[str, Reading]]:
    """A statement closed by a lone "though" sets itself against the reply ("57 = 3 × 19 though" after "57 is prime"):
    the statement before it corrects — unless the sentence approves ("thanks though"), asks, requests, is about the
    user ("I'll keep the old one though") or about something the turn is not about ("the kids are asleep though").
    A "tho" typed at the end of a clause ("a sonnet has 14 lines tho, this has 12") closes that clause the same way."""
    closed = [i for i, (_, r) in enumerate(readings) if _CLOSING_THOUGH.search(normalise(r.clause).strip(" .!"))]
    if len(readings) >= 2 and normalise(readings[-1][1].clause).strip(" .!") in ("though", "tho"):
        at = len(readings) - 2
    elif closed:
        at = closed[0]
    else:
        return readings
    sentence, before = readings[at]
    body = _CLOSING_THOUGH.sub("", normalise(before.clause).strip(" .!"))
    if any(r.score != 0 or r.request for _, r in readings) or body.endswith("?") or _USERS_OWN.match(body):
        return readings
    if about_elsewhere(before.clause, turn) or len(words_of(body)) < 2:
        return readings
    return [*readings[:at], (sentence, Reading(-1, "contrast", before.clause)), *readings[at + 1 :]]


_USERS_OWN = re.compile(r"^(?:i|we|my|our|i'm|we're|i've|we've|i'll|we'll|i'd|we'd)\b")
# A grumble: an interjection of frustration, however drawn out ("ugh", "argh", "meh").
_GRUMBLE = re.compile(r"u+g+h+|a+r+g+h+|u+r+g+h+|m+e+h+|b+l+e+h+|o+o+f+")


def _grumbled_elsewhere(readings: list[tuple[str, Reading]], turn: TurnContext) -> list[tuple[str, Reading]]:
    """A grumble followed by what it is about, something the turn is not about ("ugh, mondays", "argh, traffic"): the
    user's mood, no verdict on the reply (but "ugh, the intro" or "ugh, this again" point at it)."""
    grumbles = [i for i, (_, r) in enumerate(readings) if _GRUMBLE.fullmatch(normalise(r.clause).strip(" .!,"))]
    rest = " ".join(r.clause for i, (_, r) in enumerate(readings) if i not in grumbles)
    if not grumbles or any(r.score != 0 for i, (_, r) in enumerate(readings) if i not in grumbles):
        return readings
    if not rest or not about_elsewhere(rest, turn, least=1):
        return readings
    return [(s, Reading(0, "", r.clause) if i in grumbles else r) for i, (s, r) in enumerate(readings)]


def _toned(sentence: str, readings: list[tuple[str, Reading]], turn: TurnContext) -> list[tuple[str, Reading]]:
    """A sentence's readings with its tone (`tone`): sarcasm turns its approvals into corrections (sarcasm, a bare
    verdict), a disapproving emoji corrects a sentence that does not already unless the sentence is the user's own news
    or about something else ("long day at work 😩"), and an approving one approves a
    sentence about the reply that otherwise neither corrects, approves, asks nor requests ("20, matches the key 👌";
    not "We're off to Rome 🥰", the user's own news)."""
    tone = tone_of(sentence)
    said = turn.request | turn.response_words
    if tone == 0 and not sarcastic(sentence, said):
        return readings
    scores = [r.score for _, r in readings]
    if sarcastic(sentence, said) or (tone == -1 and 1 in scores and -1 not in scores):
        flipped = [(s, Reading(-1, "sarcasm", r.clause) if r.score == 1 else r) for s, r in readings]
        if -1 in scores or 1 in scores:
            return flipped
        return [(sentence, Reading(-1, "sarcasm", readings[0][1].clause)), *flipped[1:]]
    last = readings[-1][1].clause if readings else sentence
    own = re.match(r"^(?:i|we|my|our|i'm|we're|i've|we've|i'll|we'll)\b", normalise(sentence)) or re.search(
        r"\b(?:i|we)(?: also| still| really| just)? (?:have|had|need|am|was|got|must)\b|\b(?:i|we)(?:'m|'ve|'ll)\b",
        normalise(last),
    )  # their own news, or the clause the emoji closes about the user ("… and I still have to pack 😩")
    if tone == -1 and -1 not in scores and not (own or about_elsewhere(sentence, turn)):
        return [*readings[:-1], (sentence, Reading(-1, "emoji", last))]
    quiet = all(r.score == 0 and not r.request for _, r in readings) or all(
        r.kind == "brief_approval" for _, r in readings
    )
    if tone == 1 and quiet and not own and not without_emoji(sentence).endswith("?"):
        return [*readings[:-1], (sentence, Reading(1, "emoji", last))]
    return readings


# The most of a reply the rules read. Some shapes still cost time quadratic in a sentence's length (24,000 characters
# of "it's it's …": ~5 s), so a longer reply — a pasted log or document, where the feedback sits before or after it —
# is read as its first and last MAX_READ_CHARS / 2 characters. The longest labelled feedback line is 1,213 characters.
MAX_READ_CHARS = 4000


def bounded(text: str, limit: int = MAX_READ_CHARS) -> str:
    """`text` itself when it is at most `limit` characters; else its head and tail, each cut at a space where there is
    one, on two lines (so no sentence spans the cut)."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-(limit // 2) :]
    head = head[: head.rfind(" ")] if head.rfind(" ") > 0 else head
    tail = tail[tail.find(" ") + 1 :] if 0 <= tail.find(" ") < len(tail) - 1 else tail
    return f"{head}\n{tail}"


def read_reply(text: str, request: str = "", response: str = "") -> ReplyReading:
    """Read every clause of `text`, the user's reply to `response`, which answered `request`.

    Any correction makes the reply a correction; otherwise any approval an approval — a brief one ("ok",
    "sure") only when the reply holds nothing else. A reply over `MAX_READ_CHARS` is read by its head and tail."""
    text = bounded(text)
    turn = TurnContext.of(request, response)
    if _other_name(text, turn):
        return ReplyReading(-1, [(text.strip(), Reading(-1, "value", text.strip()))], "value", text.strip())
    readings: list[tuple[str, Reading]] = []
    written = sentences(text)
    # asked_later[k]: a sentence after the k-th asks something anew (one pass from the end, not a rescan per sentence)
    asked_later = [False] * len(written)
    for k in range(len(written) - 2, -1, -1):
        asked_later[k] = asked_later[k + 1] or asks_anew(written[k + 1], turn)
    stepped = False  # a step forward came earlier in the message ("Next one: …")
    for k, sentence in enumerate(written):
        question, polite = (
            without_emoji(sentence).endswith("?"),
            bool(re.search(r"\b(?:please|pls|plz)\b", normalise(sentence))),
        )
        body = Clause.of(sentence, turn, question, polite).body  # "42, not 24" and a list of values span commas
        apology = faults.OWN_APOLOGY.match(normalise(sentence))  # "sorry, my english is not so good"
        if (value_contrast(body) and not apology) or (not question and values.value_list(sentence, turn)):
            readings.append((sentence, Reading(-1, "value", sentence)))
            continue
        first = len(readings)
        parts = clauses(_TOPIC_CHANGE.sub("", sentence, count=1))
        asked_last = question and asks_anew(parts[-1], turn)  # "The list has 10,000 items, is that ok?"
        supposed = question and bool(_SUPPOSED.match(normalise(parts[0])))
        for i, part in enumerate(parts):
            setup = stepped or asked_later[k] or (asked_last and i < len(parts) - 1)
            clause = Clause.of(part, turn, question and i == len(parts) - 1, polite, setup)
            reading = read_clause(clause)
            if supposed and reading.kind in _ASKED_FOR_CASE:
                reading = Reading(0, "", part, request=True)  # "what if I want two, just double everything?"
            if apology and reading.score == -1 and normalise(sentence).find(normalise(part)) < apology.end():
                reading = Reading(0, "", part)  # "sorry my code is a mess": the user's own thing, apologised for
            stepped = stepped or (clause.new_step and reading.score == 0)
            approved_before = any(r.score == 1 for _, r in readings)
            contrast = part.lower().startswith(_CONTRAST) and len(words_of(part)) > 1
            elided = bool(re.search(r"n't[.!]?$", normalise(part)))  # "the first part is fine, the second isn't"
            own_plan = _OWN_PLAN.match(clause.body)  # "perfect, though I'll swap in my own greeting"
            affirmed = _AFFIRMED.match(clause.body)  # "no idea why removing it worked, but it did"
            if reading.score == 0 and (approved_before and contrast and not (own_plan or affirmed) or elided):
                reading = Reading(-1, "partial", part)
            readings.append((sentence, reading))
        readings[first:] = _contrasted(readings[first:], turn)
        readings[first:] = _grumbled_elsewhere(readings[first:], turn)
        readings[first:] = _toned(sentence, readings[first:], turn)
        if faults.SELF_BLAME.match(normalise(sentence).rstrip(".!")):  # "Ugh, my bad.": no fault of the reply's
            readings[first:] = [(s, Reading(0, "", r.clause)) for s, r in readings[first:]]
        if not polite and any(r.score == 1 and r.kind != "brief_approval" for _, r in readings[first:]):
            readings[first:] = [  # "Nice, no jargon.": beside an approval, "no X" lists what the reply is free of
                (s, Reading(1, "no_fault", r.clause) if _absence_listed(r) else r) for s, r in readings[first:]
            ]
    corrections = [r for _, r in readings if r.score == -1]
    if corrections:
        return ReplyReading(-1, readings, corrections[0].kind, corrections[0].clause)
    approvals = [r for _, r in readings if r.score == 1 and r.kind != "brief_approval"]
    if approvals:
        return ReplyReading(1, readings, approvals[0].kind, approvals[0].clause)

    def accepting(r: Reading) -> bool:  # "ooh sunny, yes": picking one of the reply's own words takes it up
        words = words_of(NOT_CUES.sub(" ", normalise(r.clause)))  # "Cool, see you.": a farewell adds nothing
        offered = turn.response_words | turn.response_numbers
        echo = len(words) <= 3 and all(w in offered or w in BRIEF or w in FILLER for w in words)
        return r.score == 1 or not words or echo

    brief = [r for _, r in readings if r.kind == "brief_approval"]
    if brief and all(accepting(r) for _, r in readings):
        return ReplyReading(1, readings, "brief_approval", brief[0].clause)
    return ReplyReading(0, readings, "", "")
