"""The corrections that find fault with the reply as it stands, and where each is read.

Here: fault ("Sounds robotic.", "That's over my budget.", "that's 3x my budget") and excess ("Too wordy.", "It's a bit
long."), with what a fault word says of the user's own doing rather than of the reply (`SELF_BLAME`, `OWN_APOLOGY`).
The denials (denial, near_miss, negated_approval) are read in `claw.judge.reading.denials`; what the user asked for
set against the reply (prohibition, preference, emphasis, your_fault) in `claw.judge.reading.wants`. Every one is
importable from here, the one place `claw.judge.reading.reply` reads corrections from."""

from __future__ import annotations

import re

from claw.judge.lexicon import (
    APPROVING,
    APPROVING_COMPARATIVES,
    COMMON,
    FAULT,
    NEGATORS,
    NUMBER_WORDS,
    REPLY_PARTS,
    is_comparative,
)
from claw.judge.reading.approvals import WHAT_I_LACKED
from claw.judge.reading.clause import PARTS, Clause, name_words
from claw.judge.reading.denials import denial, near_miss, negated_approval
from claw.judge.reading.text import is_negated, words_of
from claw.judge.reading.wants import emphasis, preference, prohibition, your_fault

__all__ = [
    "OWN_APOLOGY", "SELF_BLAME", "denial", "emphasis", "excess", "fault", "near_miss", "negated_approval",
    "preference", "prohibition", "weighs_alternative", "your_fault",
]  # fmt: skip

_FAULT_SHAPE = re.compile(
    r"\balready (?:read|seen|tried|did|done|do|have|had|know|knew|said|told|mentioned|asked|own|watched|made|got"
    r"|use|follow|tried)\b"
    r"|\b(?:is|are|was|'s|seems|looks|sounds|feels|bit|little|way|slightly|totally|completely|still|all|a tad) off\b"
    r"|\b(?:seems?|looks?|sounds?|feels?)(?: a bit| a little| way| kinda| rather| very| really| quite| pretty)?"
    r" (?:high|low|steep|much|a lot|little|few|many|long|short|big|small|early|late)$"  # "that seems high"
    r"|\b(?:the )?other way (?:round|around)\b|\bthe (?:reverse|opposite)(?: order| way)?$"  # the reply reversed
    r"|\boff by\b|\b(?:over|above|beyond|exceeds?|outside) (?:my|our|the|your|a) (?:budget|limit|price range|range)\b"
    # a multiple of a limit: "3x my budget", "twice the word limit", "three times my price range"
    r"|\b(?:\d+(?:\.\d+)?x|twice|double|triple|(?:\d+(?:\.\d+)?|two|three|four|five|ten) times) (?:my|our|the|your)"
    r" (?:[\w-]+ )?(?:budget|limit|price range|range|maximum|max)\b"
    r"|\b(?:hard|difficult|impossible|tough|painful) to (?:read|follow|understand|parse|use|get through|skim)\b"
    r"|\bmis[a-z]{3,}(?:ed|en)\b|\b(?:over|under)[a-z]{4,}(?:ed|en)\b"  # misspelled, overcomplicated
    r"|\bnothing to do with\b|\boff (?:topic|track)\b|\bbeside the point\b|\bmiss(?:ed|es|ing)? the point\b"
)
_HEDGE = re.compile(
    r"\b(?:a bit|a little|a tad|kind of|sort of|kinda|sorta|somewhat|slightly|rather|a touch|a little bit"
    r"|bit) ([\w-]+)"
)
# After a hedge, words that make it no hedge: "a bit of help", and a copula, after which "bit" is a noun ("the oxide
# bit is what I was missing").
_HEDGE_NEUTRAL = {
    "more", "of", "about", "help", "to", "with", "like", "the", "a", "and", "confused", "is", "was", "are", "were",
    # a feeling of the user's own: "bit nervous tbh"
    "nervous", "anxious", "worried", "scared", "sad", "excited", "stressed", "jealous",
}  # fmt: skip
_EXCESS = re.compile(
    r"(?<!not )(?<!n't )(?:\b(?:too|overly|excessively|overkill)\b(?! bad\b)(?=\s+\w)|\btoo much\b|\btoo many\b)"
    r"|\ba bit much\b"
)  # "not too long" denies the excess (`NO_FAULT`)
# A count of the reply's text over a limit: "that's more than 20 words", "over three lines".
_OVER_COUNT = re.compile(
    rf"\b(?:more than|over|above|longer than|past|exceeds?|went over) (?:the )?(?:\d+|one|{'|'.join(NUMBER_WORDS)})"
    r"(?: (?:words?|sentences?|lines?|char(?:acter)?s?|paragraphs?|bullets?|bullet points|points|items|steps"
    r"|emojis?)\b"
    r"|$)"
)
_DISMISSIVE = re.compile(
    r"\b(?:it|this|that)(?:'s| is| was)(?: really| basically)? (?:just|only|merely|basically) (?:a|an|the"
    r"|some)\b(?! \w+ (?:i|we) )"
)
_LONGER_THAN = re.compile(r"\b(?:it|this|that|it's|that's|this is|it is|that is)\b.*?\b([\w-]+) than\b")
# The difficulty the user met, measured against what they expected: "it's harder than I thought" tells of their own
# doing, it finds no fault with the reply.
_HARDER_THAN_EXPECTED = re.compile(
    r"\b(?:harder|tougher|trickier|easier|simpler) than (?:i|we) (?:expected|thought|imagined|hoped|assumed)\b"
)
# An apology for a thing of the user's own: "sorry, my english is not so good", "sorry my code is a mess" — what it
# says lacking is the user's, no fault of the reply (`reply.read_reply` reads the clauses it spans so).
OWN_APOLOGY = re.compile(
    r"^(?:sorry|apologies|excuse me)[,!]? (?:for )?(?:my|our) [\w-]+(?: [\w-]+)? (?:is|are|was|were|isn't|aren't"
    r"|wasn't|'s)\b"
)


# The user blaming themselves ("ugh, of course", "my bad"), or a trouble of theirs the reply solved ("that's what was
# confusing me"): a fault word there is not said of the reply.
SELF_BLAME = re.compile(
    r"^(?:ugh|argh|doh|d'oh|duh|oops|whoops|gah)?,? ?(?:of course|duh|my bad|my mistake|my fault|silly me|stupid me"
    r"|dumb me)$"
    r"|\b(?:what|which|the (?:thing|part|bit|step) that) (?:was|were|had been|has been|kept|is) [a-z]+ing (?:me|us)\b"
)


# A condition on the user's own doing that points at nothing of the reply ("sorry if I send something weird"): a fault
# word there is the user's hypothetical, not said of the reply.
_OWN_CONDITION = re.compile(r"\b(?:if|in case|when|whenever|unless|once) (?:i|we|i'm|we're|i've|we've)\b")
_POINTS_AT_REPLY = re.compile(rf"\b(?:it|it's|this|that|that's|your|yours|the (?:{PARTS}))\b")


# A fault the user made themselves: "I keep making that mistake", "we had a typo in the brief".
_OWN_FAULT = re.compile(
    r"^(?:i|we)(?: \w+ly| always| still| keep| kept| often| just)* (?:make|made|making|do|did|have|had|got|get)"
    r" (?:this|that|the same|these|those|a|an|so many|lots of|a lot of|one|two|three|some)(?: \w+)?"
    r" (?:mistakes?|errors?|typos?)\b"
)
# Pity, not a verdict: "poor mars", "poor thing" — "poor" before the turn's own subject alone.
_PITY = re.compile(r"^(?:oh )?poor (?:little |old )?([\w'-]+)$")
# A question that weighs an alternative ("is X worth using instead, or is that overkill"): its fault words are said of
# the alternative, and a yes/no question can be typed without its mark ("is that overkill for a week").
_ALTERNATIVE = re.compile(r"\b(?:instead|rather than|alternatively|as an alternative)\b")
_YES_NO = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|would|should|will|has|have) (?!you\b)[\w'-]+")
# Words after which a fault adjective is said of no following noun ("cold in", "bad at").
_NOT_NOUNS = COMMON | NEGATORS | {
    "in", "on", "at", "to", "for", "of", "with", "and", "or", "but", "is", "are", "was", "were", "it", "this", "that",
    "there", "here", "so", "too", "enough", "anyway", "though", "lol", "right", "now", "then", "again", "tbh",
}  # fmt: skip


def weighs_alternative(c: Clause) -> bool:
    """A question, its mark typed or not ("is X worth using instead or is that overkill"), that weighs an alternative:
    what it finds wrong is said of the alternative, not of the reply."""
    return (c.question or bool(_YES_NO.match(c.body))) and bool(_ALTERNATIVE.search(c.body))


def _said_of_another(c: Clause, words: list[str], i: int) -> bool:
    """A fault word in a question said of something other than the reply: the degree asked ("how windy does it get"),
    an adjective before a noun that is no part of the reply ("any good in really bad weather?")."""
    if not c.question:
        return False
    if i > 0 and words[i - 1] == "how":
        return True
    after = words[i + 1] if i + 1 < len(words) else ""
    return (
        bool(re.fullmatch(r"[a-z][a-z-]+", after))
        and after not in _NOT_NOUNS | REPLY_PARTS | FAULT
        and after not in c.turn.response_words
    )


# A trouble of the user's, past: "the stray bracket was driving me mad", "that one typo had been bugging us" — the
# problem the reply solved, not a fault of it (said of a part of the reply it is one: "the explanation was confusing
# me").
_PAST_TROUBLE = re.compile(
    r"^(?P<subject>(?:the|that|this|my|our|a|an|one) (?:[\w-]+ ){0,3}?[\w-]+) (?:was|were|had been|has been|kept)"
    r" [a-z]+ing (?:me|us)\b"
)


# Whether an act in general has a quality, asked: "is it rude to text after 10?", "would it be weird to bring wine?" —
# a question about manners or sense, not a fault found with the reply.
_ACT_JUDGED = re.compile(r"^(?:is|would|will) it(?: be)?(?: \w+ly| kind of| a bit)? [\w-]+ (?:to|if (?:i|we)) [a-z]")


def fault(c: Clause) -> bool:
    """A word that finds fault, or a shape that does (`_FAULT_SHAPE`) — not in the user's blaming themselves or
    owning the fault ("I keep making that mistake"), nor after a condition on the user's own doing that points at
    nothing of the reply ("sorry if I sound rude"), nor in a lack the reply filled ("the flag was what I was missing"),
    nor pity ("poor mars"), nor a question about something else (`_said_of_another`) or weighing an alternative ("is
    poetry worth using instead or is that overkill")."""
    if SELF_BLAME.search(c.body) or _OWN_FAULT.search(c.body):
        return False
    trouble = _PAST_TROUBLE.match(c.body)
    if trouble and not any(w in REPLY_PARTS or w == "your" for w in words_of(trouble.group("subject"))):
        return False
    pity = _PITY.match(c.body)
    if pity and pity.group(1) not in REPLY_PARTS and pity.group(1) in c.turn.request | c.turn.response_words:
        return False
    if weighs_alternative(c) or (c.question and _ACT_JUDGED.match(c.body)):
        return False
    body = WHAT_I_LACKED.sub(" ", c.body)
    condition = _OWN_CONDITION.search(body)
    if condition and not _POINTS_AT_REPLY.search(body[condition.start() :]):
        body = body[: condition.start()]
    words = words_of(body)
    named = name_words(c.text) & c.turn.names  # "The Lazy Fox is perfect": a word of a name the reply gave
    return bool(_FAULT_SHAPE.search(body)) or any(
        w in FAULT and w not in named and not is_negated(words, i) and not _said_of_another(c, words, i)
        for i, w in enumerate(words)
    )


def excess(c: Clause) -> bool:
    if weighs_alternative(c):
        return False  # "… or is that overkill for a week?" is said of the alternative
    if _EXCESS.search(c.body) or _DISMISSIVE.search(c.body) or (_OVER_COUNT.search(c.body) and not c.question):
        return True
    than = _LONGER_THAN.search(c.body)  # "This is longer than the notes themselves."
    if than and _HARDER_THAN_EXPECTED.search(c.body):
        than = None  # "it's harder than I expected": the user's own effort
    if than and is_comparative(than.group(1)) and than.group(1) not in APPROVING_COMPARATIVES:
        return True
    hedge = _HEDGE.search(c.body)
    return bool(hedge) and hedge.group(1) not in APPROVING | APPROVING_COMPARATIVES | _HEDGE_NEUTRAL and not c.question
