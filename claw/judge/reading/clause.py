"""What a reading class looks at: one `Clause` of the user's reply (its body without filler or polite formulas,
its words, whether it is asked, a request, a fragment or a step forward) and the `TurnContext` it is read against
(the request's content words and the qualities it asked for; the reply's numbers, words, dates and names)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from claw.judge.lexicon import (
    APPROVING,
    BRIEF,
    CALENDAR,
    COMMON,
    EDITS,
    FAULT,
    FILLER,
    LANGUAGES,
    NOT_REQUEST_VERBS,
    REPLY_PARTS,
)
from claw.judge.reading.text import normalise, numbers, strip_filler, units, words_of
from claw.judge.reading.tone import EMOJI, without_emoji

PARTS = "|".join(sorted(REPLY_PARTS))
# What points at the reply: a pronoun, or a part of it ("the intro", "your answer").
REFERENT = rf"(?:it|this|that|them|these|those|(?:the|your|that|this|my) (?:[\w-]+ )?(?:{PARTS}))"
# Polite formulas whose words would otherwise read as cues ("thanks again", "no worries", "never mind").
NOT_CUES = re.compile(
    r"\b(?:thanks|thank you)(?: so much)? again\b|\bno (?:problem|worries|rush|pressure|hurry)\b"
    r"|\bno need to (?:worry|apologi[sz]e|rush)\b|\bdon't (?:worry|apologi[sz]e|mind)\b|\bnever ?mind\b"
    r"|\bno,? thanks?\b|\bno,? thank you\b|\b(?:see (?:you|ya)(?: later| soon| around)?|bye|goodbye|take care)\b"
    # greetings and wishes: "good" there wishes the user's day well, it says nothing of the reply
    r"|\bgood (?:morning|afternoon|evening|night)\b"
    r"|\bhave a (?:good|nice|great|lovely) (?:one|day|evening|night|weekend)\b"
)
# A step forward; "next time" is not one, it tells the reply how it should have been ("Just the number next time.").
NEW_STEP = re.compile(
    r"\b(?:now|next(?! time| to\b)|another|one more|afterwards|continue|go on|carry on|keep going"
    r"|(?:with|about) something else"
    r"|try (?:this|these)(?: ones?)?(?=$|[:,.!]))"
)
_REQUEST_FRAME = re.compile(
    r"^(?:(?:can|could|would|will|won't) (?:you|u)|(?:can|could|may) (?:i|we) (?:get|have|see)"
    r"|(?:can|could) (?:it|this|that|they|these) (?:be|get|have|sound"
    r"|look|use|go)"
    r"|(?:how|what) about|would you mind|do you mind|i'?d like you to|i want you to|i need you to"
    r"|i'?d appreciate (?:it )?if you"
    r"|let'?s|let us|(?:can|could) we|try to|make sure(?: to| you)?|remember to|you (?:should|need to|have to|must)"
    r"|i'?d like (?:it|this|that|them)|i want (?:it|this|that|them)|i need (?:it|this|that|them))\b"
    r"[ ,]*(?:please |just |also |maybe |actually )*"
)
# A past form opening a clause ("printed it out", "tried it"): a report, not an imperative (but "need", "speed" and
# "embed" are plain verbs).
PAST_FORM = re.compile(r"[a-z]{2,}(?<!e)(?<!emb)ed")
_PRONOUN_OBJECT = re.compile(r"^[a-z][\w-]* (?:it|this|them|that(?! (?:it|you|he|she|they|we|i|the|there|this)\b))\b")
_DEMAND = re.compile(
    r"\b(?:keep|make|be|stay)(?: it| this| them| the [\w-]+)?(?: very| really| super| nice and)? ([a-z][\w-]+)\b"
    rf"|\b([a-z][\w-]+) (?:{PARTS}|version|reminder|note|tip|slogan|overview|description|reply|one)\b"
    r"|\b(?:in|into) (?:a |an )?([a-z][\w-]+)\b"
    r"|\b(?:write|give|draft|compose|create|suggest|send|produce|make)(?: me| us)? (?:a|an|some) ([a-z][\w-]+) [a-z]"
)
_NOT_QUALITIES = COMMON | {
    "sure", "the", "a", "an", "my", "your", "this", "that", "one", "some", "any", "it", "me", "us", "in", "of", "to",
    "for", "and", "or", "as", "is", "be", "each", "every", "no", "own", "same", "other", "new",
}  # fmt: skip
# Laughter or a marker of candour closing a clause ("… lol", "… haha", "… honestly"), read like the filler that
# opens one.
_TRAILING_LAUGH = re.compile(r"(?<=\w)(?:,? (?:lol|lmao|rofl|ha(?:ha)+|he(?:he)+|xd|honestly|tbh|ngl|imo))+$")
# A negative question typed without its question mark: "isn't it 1945".
_NEGATIVE_INVERSION = re.compile(
    r"^(?:isn't|aren't|wasn't|weren't|shouldn't|wouldn't|doesn't|didn't|can't|couldn't|won't) "
    r"(?:it|that|this|there|you|the|they|he|she)\b|^are you (?:sure|kidding|serious|joking)\b"
    # a rhetorical "did you even …" and a yes/no question about the user's own step ("do i need to install it first")
    r"|^(?:did|have) you even\b|^(?:do|should|must|shall) (?:i|we)\b"
    # an existential question typed without its mark: "is there anything like that in go"
    r"|^(?:is|are) there (?:any|anything|something|a|an|some)\b"
)


# A question about the user's own next step ("how do I undo it?", "and where should we put the file?"): a follow-up
# that asks for more, not a doubt about the reply, whatever words it uses ("how do I go back if something breaks?").
_OWN_STEP = re.compile(
    r"^(?:(?:and|so|but|ok|okay|also|then|ha|haha|lol|wait)\b,? )*(?:how|what|where|when|which)(?: else)?"
    r" (?:do|does|can|could|should|would|will|must|might) (?:i|we)\b(?! (?:know|trust|believe|tell)\b)"
    # the same asked yes or no: "do I need to install anything first?", "should we run it as admin?" ("can we …?"
    # asks something of the reply: `_REQUEST_FRAME`)
    r"|^(?:(?:and|so|but|ok|okay|also|then|wait)\b,? )*(?:do|should|must|shall) (?:i|we)\b"
    r"(?! (?:know|trust|believe|tell|ask)\b)"
)  # but "how do I know that's right?" doubts


# A reply that ends by offering more ("Want me to add a chart?", "Shall I make it longer?"): a "no" after it declines.
_OFFER = re.compile(
    r"(?:^|[.!?:\n]\s*)(?:do you |would you |or )?(?:want|like|need) me to [^.!?]*\?\s*$"
    r"|(?:^|[.!?:\n]\s*)(?:shall|should) i [^.!?]*\?\s*$",
    re.IGNORECASE,
)
_OFFER_WORDS = re.compile(r"\bme to |\b(?:shall|should) i ", re.IGNORECASE)  # a linear test before `_OFFER`


def ends_with_offer(response: str) -> bool:
    """`_OFFER` on the reply's last sentence: an offer holds no . ! or ?, so it starts at the last one before the
    closing "?" (or at the start). Searched over a whole long reply, every line break of a run was a start to retry
    (4,000 of them: 2 s)."""
    text = response.strip()
    if not text.endswith("?"):
        return False
    start = max(max(text.rfind(mark, 0, len(text) - 1) for mark in ".!?"), 0)
    return bool(_OFFER_WORDS.search(text, start)) and bool(_OFFER.search(text, start))


def request_words(request: str) -> frozenset[str]:
    """The content words of the user's request: what a reply is expected to contain."""
    return frozenset(w for w in re.findall(r"[a-z][a-z'-]{3,}", request.lower()) if w not in COMMON)


def _names_something(response: str) -> bool:
    """The reply is a short answer that states a name: it is one ("Toronto.") or has a capital inside a sentence
    ("… is Toronto."), and asks nothing back (a bare name after "Which city?" answers it, it does not correct it)."""
    text = response.strip()
    if not text or text.endswith("?") or len(text.split()) > 10:
        return False
    inside = re.search(r"(?<![.!?:\n]) (?!I\b)[A-Z][a-z]", text)
    return bool(inside or re.fullmatch(r"(?:[A-Z][\w'.-]+ ?){1,3}[.!]?", text))


def name_words(text: str) -> frozenset[str]:
    """The words of the names a text gives, lower-cased: runs of two or more capitalised words ("The Lazy Fox", "Bad
    Bunny"), so that a word of one ("lazy") is read as part of the name, not as a verdict."""
    runs = re.findall(r"\b[A-Z][\w'-]*(?: [A-Z][\w'-]*)+", text)
    return frozenset(w.lower() for run in runs for w in run.split())


def demands(request: str) -> frozenset[str]:
    """The qualities a request asks of the reply: a word after keep / make / be ("keep it brief") or before a part
    of the reply ("a quick answer", "a short reminder") — not what it says of other things ("a long flight")."""
    found = {w for m in _DEMAND.finditer(normalise(request)) for w in m.groups() if w}
    return frozenset(found - _NOT_QUALITIES)


@dataclass(frozen=True)
class TurnContext:
    """What the shapes know besides the clause: the request's content words and the qualities it asked of the
    reply, the reply's numbers and words."""

    request: frozenset[str] = frozenset()
    response_numbers: frozenset[str] = frozenset()
    response_words: frozenset[str] = frozenset()
    demands: frozenset[str] = frozenset()
    dated: bool = False  # the reply names a day or month (capitalised: "may" the verb is no date)
    named: bool = False  # the reply states a name (a capital inside a sentence, or the whole reply), asking nothing
    request_numbers: frozenset[str] = frozenset()  # the numbers the request stated ("a 3-day trip")
    languages: frozenset[str] = frozenset()  # the languages the request named ("… into Spanish", "in JavaScript")
    units: frozenset[tuple[str, str]] = frozenset()  # the reply's units of measure, (unit, what it measures)
    offers: bool = False  # the reply ends by offering more ("Want me to make it longer?")
    response: str = ""  # the reply, normalised (`normalise`)
    request_lower: frozenset[str] = frozenset()  # the request's words typed in lower case ("for teenagers", not "USB")
    names: frozenset[str] = frozenset()  # the reply's words in capitals inside a name ("The Lazy Fox"), lower-cased

    @classmethod
    def of(cls, request: str, response: str) -> TurnContext:
        dated = any(w.lower() in CALENDAR for w in re.findall(r"\b[A-Z][a-z]+", response))
        return cls(
            request_words(request),
            numbers(response),
            frozenset(w.rstrip("'") for w in re.findall(r"[a-z][\w'-]*|\d+", normalise(response))),  # 'quoted' names
            demands(request),
            dated,
            _names_something(response),
            numbers(request),
            frozenset(LANGUAGES[w] for w in words_of(normalise(request)) if w in LANGUAGES),
            units(response),
            ends_with_offer(response),
            normalise(response),
            frozenset(re.findall(r"\b[a-z][a-z'-]{2,}\b", request)),
            name_words(response),
        )


@dataclass(frozen=True)
class Clause:
    """One clause, with what the reading classes look at computed once."""

    text: str  # as written
    body: str  # lower case, polite formulas removed, no trailing punctuation, no opening filler
    words: list[str]
    question: bool
    polite: bool  # its sentence says please
    turn: TurnContext
    setup: bool = False  # it sets up a new question: a step forward came before it, or a question follows it

    @classmethod
    def of(
        cls, text: str, turn: TurnContext, question: bool = False, polite: bool = False, setup: bool = False
    ) -> Clause:
        raw = normalise(text)
        body = NOT_CUES.sub(lambda m: "thanks" if m.group(0).startswith("thank") else " ", raw)
        body = EMOJI.sub(lambda m: m.group(0) if m.group(0)[0] in "👍🙏🙌" else " ", body)  # tone is read apart
        body = strip_filler(re.sub(r"\s+", " ", body.strip(" ,").rstrip(".!?…").strip()))
        body = _TRAILING_LAUGH.sub("", body)  # "tiny is the opposite lol": laughter closes, it says nothing
        asked = question or raw.endswith("?") or bool(_NEGATIVE_INVERSION.match(body))
        return cls(text, body, words_of(body), asked, polite, turn, setup)

    @property
    def action(self) -> str:
        """The body without a request frame ("could you please …", "I'd like it …") or a leading just / only."""
        frame = _REQUEST_FRAME.match(self.body)
        return re.sub(r"^(?:just|only|simply|first|then)\b ?", "", self.body[frame.end() :] if frame else self.body)

    @property
    def directive(self) -> bool:
        """A request: a frame (can you …), please, an editing verb first, or a verb with the reply as its object (not
        a gerund)."""
        action = words_of(self.action)
        if _REQUEST_FRAME.match(self.body) or self.polite or (action and action[0] in EDITS):
            return True
        if not action or action[0].endswith("ing") or PAST_FORM.fullmatch(action[0]):
            return False  # "sending it as is", "printed it out" report what the user does; they ask nothing
        return bool(_PRONOUN_OBJECT.match(self.action)) and action[0] not in NOT_REQUEST_VERBS | APPROVING | FAULT

    @property
    def fragment(self) -> bool:
        """Four words or fewer, no request frame, not asked, and no subject of its own ("we might drive instead" is a
        clause about the user)."""
        own_subject = re.match(r"^(?:i|we|he|she|they|i'm|we're|i'll|we'll|i'd|we'd|i've|we've|my|our)\b", self.body)
        return len(self.words) <= 4 and not _REQUEST_FRAME.match(self.body) and not self.question and not own_subject

    @property
    def own_step(self) -> bool:
        """A question about what the user does next ("how do I pronounce that??"): it asks, it doubts nothing."""
        return self.question and bool(_OWN_STEP.match(normalise(self.text)))

    @property
    def new_step(self) -> bool:
        return bool(NEW_STEP.search(self.text.lower()))


_POINTERS = {"it", "it's", "this", "that", "that's", "these", "those", "you", "your", "yours", "you're"}


def about_elsewhere(text: str, turn: TurnContext, least: int = 2) -> bool:
    """A sentence about something the turn is not about ("long day at work"): `least` content words or more (two
    unless told), none of them the request's or the reply's, no number and nothing that points at the reply — a mood
    emoji or an "again" there is the user's own, not a verdict on the reply."""
    words = words_of(normalise(without_emoji(text)))
    if any(w in _POINTERS or w in REPLY_PARTS for w in words) or numbers(text):
        return False
    content = [w for w in words if len(w) > 2 and w not in COMMON | FILLER | BRIEF]
    return len(content) >= least and not any(w in turn.request or w in turn.response_words for w in content)
