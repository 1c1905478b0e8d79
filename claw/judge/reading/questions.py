"""Questions: the fault_question correction, a question that implies a fault ("Why is it in French?", "Are you
sure?", "Nine?" against 8, "thats spanish??", "Was that brief?", "How is beef vegetarian?"), and the information
question (`asks_anew`) whose statements before it are its premises, not values set against the reply."""

from __future__ import annotations

import re

from claw.judge.lexicon import COMMON, REPLY_PARTS
from claw.judge.reading.clause import PARTS, Clause, TurnContext
from claw.judge.reading.text import normalise, numbers, strip_filler, words_of
from claw.judge.reading.tone import without_emoji
from claw.judge.reading.values import STATED_VALUE

_AUX = (
    r"is|are|was|were|do|does|did|can|could|would|should|will|has|have|had|'s|isn't|aren't|wasn't|don't|doesn't|didn't"
    r"|can't|won't|hasn't|haven't"
)
_FAULT_QUESTION = re.compile(
    # why + you, why is it …, why + a verb or a bare word ("Why German?", "Why recommend that?")
    r"^why (?:did|do|does|would|have|has|are|were|is|was|isn't|didn't|doesn't|aren't|wasn't|hasn't|won't|can't|'d"
    r"|'re)? ?"
    r"(?:you|your)\b"
    rf"|^why(?: is|'s| was| are| were| isn't| wasn't| does| doesn't)? (?:it|this|that|there|these|those"
    rf"|the (?:{PARTS}))\b [\w-]+"
    r"|^why (?:would|should|could|must|will) (?:it|this|that|they|there|these|those) be\b"  # a claim doubted
    r"|^why (?!not\b|is that$|that$)(?:so |all |the |such )?[\w-]+(?: [\w-]+)?$"
    rf"|^why (?!(?:not|that|then|exactly|though|{_AUX})\b)[a-z]+ \w"
    # did you even …, did I ask …, isn't it …
    r"|^(?:did|have) you (?:even|actually|really|read|forget|miss|check|see|look|listen|notice|understand|get|just"
    r"|not|skip"
    r"|ignore)\b|^(?:did|have) i (?:ask|say|tell|want|mention|request)\b|^didn't i (?:say|ask|tell|mention)\b"
    r"|^(?:isn't|aren't|wasn't|weren't|shouldn't|wouldn't|doesn't|don't|didn't|can't|couldn't|hasn't|haven't|won't) "
    r"(?:it|that|this|there|the|you|your|those|these|a|an)\b"  # "wouldn't a 6mm plug need a 6mm bit?"
    # doubt and disbelief
    # "is it true that …" (a dummy "it" before a clause) asks about a new claim; "is that true?" doubts the reply's
    r"|\bare you sure\b|^is (?:that|this|it) (?:really |even |actually )?(?:right|correct|true|accurate)\b"
    r"(?<!^is it true)(?<!^is it really true)(?! that\b)"
    r"|^is (?:that|this|it) (?:really |even |actually )?(?:it|all)$"
    r"|^(?:really|seriously|huh|what)$|^are you (?:trying to|kidding|serious|joking|for real|okay)\b|\bremember$"
    r"|\bdid you forget\b|^since when\b"
    r"|^what happened to\b|^what's (?:with|up with) (?:the|all|this|that)\b|^how (?:did|do) you (?:get|come up"
    r"|arrive)\b"
    r"|^how (?:is|does) (?:that|this|it) (?:\w+ )?(?:right|correct|make sense|add up|answer|help)\b"
    rf"|^where did (?:the|my|your) \w+ go\b|^(?:and|but|so) (?:where|what about) (?:the|my) (?:{PARTS})\b"
    # a statement asked back: "$2,499 is under $800?"
    r"|^(?!(?:what|how|who|where|when|why|which|is|are|was|were|do|does|did|can|could|would|should|will|and|or|what's"
    r"|how's|who's|any|so|but)\b)[\w$%.,'-]+ (?:[\w$%.,'-]+ )?(?:is|are|was|'s|equals|makes) [\w$%.,'-]+"
)
# A quality the request asked of the reply, asked back: "Was that brief?" after "Keep it brief".
_QUALITY_BACK = re.compile(
    r"^(?:was|is|were|are) (?:that|this|these|those|your \w+)(?: really| actually| even)?(?: in)? ([a-z-]+)$"
)
# A question asked in disbelief: "??", "?!".
_INCREDULOUS = re.compile(r"(?:\?[?!]+|!\?)\W*$")
_WH = {"what", "why", "how", "where", "who", "really", "exactly", "seriously"}
_WHERE_IS = re.compile(r"^where(?:'s| is| are|'re)? (?:the|my|your|all the|all my) ([\w-]+(?: [\w-]+){0,2})")
_AND_THE = re.compile(r"^(?:(?:what|how) about )?(?:the|my|your) ((?:[\w-]+ )?[\w-]+)$")  # "and the travel time?"
_CHALLENGE = re.compile(r"^(?:how|since when) (?:is|are|was|were|can|could) (?:this|that|it|[\w-]+) ")
# A negative question about a word: "Isn't X Y?" (`fault_question`: when X is the reply's).
_NEGATIVE_OF = re.compile(r"^(?:isn't|aren't|wasn't|weren't|doesn't) ([\w.-]+) \w")
# "What about …?", "And …?": about a part or another case.
_WHAT_ABOUT = re.compile(r"^(?:and |but |so )?(?:what about|how about|where(?:'s| is) (?:the )?|and )")
# An information question: the statements before it in the message may be its premises (`asks_anew`).
_INFO_QUESTION = re.compile(
    r"^(?:how (?:many|much|long|far|old|big|tall|fast|often)|what|what's|which|who|whose|when|where|can you"
    r"|could you|any (?:ideas|suggestions|thoughts|recommendations|tips)"
    r"|(?:is|would|will) (?:that|it|this) (?:still )?(?:ok|okay|fine|possible|a problem|an issue|enough"
    r"|work|matter|change)|does (?:that|it|this) (?:matter|work|change|still work))\b"
)


# A statement put with a tag for agreement: "so the 750g one is cheaper, isn't it?", "Lyon is bigger, right?".
_TAGGED = re.compile(
    r"^(?P<subject>(?:[\w$%.,'-]+ ){0,3}[\w$%.,-]+?)(?:'s| is| are| was| were) (?P<predicate>[\w-]+),?"
    r" (?:isn't|aren't|wasn't|weren't|right|no|correct|yes)(?: it| they| that| there| he| she)?$"
)


# A claim about what the reply gave, put with a tag: "it's 'carry the one' isn't it?", "that's 16, right?".
_CLAIM_TAGGED = re.compile(
    r"^(?:it|that|this|the (?:[\w-]+ )?(?:answer|translation|word|phrase|total|result|number|name))"
    r"(?:'s| is| was| means| should be) (?P<claim>.+?),? (?:isn't it|wasn't it|doesn't it|shouldn't it|right|no"
    r"|correct)$"
)


def claimed_against(c: Clause) -> bool:
    """A tag question whose claim is a value or a quoted phrase the reply did not give: "it's 'carry the one' isn't
    it?" after a reply that never carried, "that's 16, right?" after 12. A claim the reply made ("it's 'carry the
    one', right?" after one that did) checks it; one without a value or quotation ("that's for two people, right?")
    asks."""
    tagged = _CLAIM_TAGGED.match(c.body)
    if not c.question or not tagged:
        return False
    claim = tagged.group("claim")
    stated = numbers(claim)
    if stated:
        return not stated <= c.turn.response_numbers
    quoted = re.search(r"['\"]([^'\"]+)['\"]", claim)
    said = c.turn.response_words
    return bool(quoted) and any(w not in said for w in words_of(quoted.group(1)) if len(w) > 2)


def _marks(subject: str) -> set[str]:
    """What tells one subject from another: its numbers and content words ("the 750g one" → {"750g"})."""
    return {w for w in re.findall(r"[\w.$%-]+", subject) if re.search(r"\d", w) or (len(w) > 2 and w not in COMMON)}


def other_subject(c: Clause) -> bool:
    """A tag question that says of another subject what the reply said of its own: "so the 750g one is cheaper, isn't
    it?" after "The 500g pack is cheaper." — the user's conclusion set against the reply's, asked for agreement. Said
    of the same subject ("the 500g one is cheaper, right?") it checks the reply and finds no fault."""
    tagged = _TAGGED.match(c.body)
    if not c.question or not tagged:
        return False
    predicate = re.escape(tagged.group("predicate"))
    said = re.search(rf"((?:[\w$%.,'-]+ ){{1,3}})(?:is|are|was|were) (?:the |a |an )?{predicate}\b", c.turn.response)
    if not said:
        return False
    user, reply = _marks(tagged.group("subject")), _marks(said.group(1))
    return bool(user - reply) and bool(reply - user)


def _names_what_is_missing(rest: str, turn: TurnContext) -> bool:
    """What "and …?" / "what about …?" names is a content word of the request the reply left out: "and Chile?"
    after "Capitals of Peru and Chile?" answered for Peru only (another case, "and Bolivia?", is new)."""
    content = [w for w in words_of(rest) if w not in COMMON and w not in ("the", "a", "an", "my", "your", "for", "in")]
    return bool(content) and all(w in turn.request and w not in turn.response_words for w in content)


def fault_question(c: Clause) -> bool:
    if not c.question:
        return False
    if _FAULT_QUESTION.search(c.body) or other_subject(c) or claimed_against(c):
        return True
    quality = _QUALITY_BACK.match(c.body)
    if quality and quality.group(1) in c.turn.demands:
        return True  # "Was that brief?" after "Keep it brief"
    asked_anew = len(c.words) > 1 and _INFO_QUESTION.match(c.body)  # "how many calories??" is impatient, not doubting
    if (
        _INCREDULOUS.search(c.text)
        and not asked_anew
        and not re.match(r"^(?:what|how) about\b|^and\b", normalise(c.text))
    ):
        return True  # "you used 12 there??"
    offered = c.turn.response_words | c.turn.response_numbers
    if 0 < len(c.words) <= 3 and any(w in offered for w in c.words) and all(w in offered or w in _WH for w in c.words):
        return True  # "86?", "180 what?", "Beef?": the reply's own words asked back
    another_case = re.match(r"^(?:and|or|what about|how about|then)\b", normalise(c.text))
    if c.turn.response_numbers and STATED_VALUE.fullmatch(c.body) and numbers(c.body) and not another_case:
        return True  # "Twelve?" against a reply that said 14: a value of the user's, offered as a doubt
    where = _WHERE_IS.match(c.body) or _AND_THE.match(c.body)
    if where and any(w in REPLY_PARTS or w in c.turn.request for w in where.group(1).split()):
        return True  # "Where's the German?", "And the travel time?": something the request named is missing
    negative = _NEGATIVE_OF.match(c.body)
    if negative and negative.group(1) in c.turn.response_words | c.turn.response_numbers:
        return True  # "Isn't Gd gadolinium?": the reply's own word, doubted
    about = _WHAT_ABOUT.match(normalise(c.text))
    if about and _names_what_is_missing(normalise(c.text)[about.end() :], c.turn):
        return True  # "and Chile?" after "capitals of Peru and Chile" that gave only Peru's
    stated = numbers(c.body)
    if about and stated and stated <= c.turn.request_numbers - c.turn.response_numbers:
        return True  # "What about day 3?" after "a 3-day plan" that stopped at day 2: a part the request named
    challenge = _CHALLENGE.match(c.body)  # "How is beef vegetarian?" about a word of the request
    return bool(challenge) and any(w in c.turn.request for w in words_of(c.body[challenge.end() :]))


def asks_anew(sentence: str, turn: TurnContext) -> bool:
    """An information question (how many / what / which / who / when / where …?) that takes up none of the reply's
    numbers: the statements before it are its premises ("Ben has 30 marbles and loses 8. How many are left?"), not
    values set against the reply's ("It's 2.54. Where did 3.54 come from?" takes the reply's number up)."""
    text = normalise(sentence)
    asks = without_emoji(text).endswith("?") and bool(_INFO_QUESTION.match(strip_filler(text)))
    return asks and not numbers(text) & turn.response_numbers
