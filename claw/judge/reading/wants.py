"""The corrections that set the reply against what the user asked for: prohibition ("Don't use bullet points."),
preference ("I wanted it in Python.", "I want it cancelled"), emphasis ("for TEENAGERS.") and your_fault ("You forgot
the units.")."""

from __future__ import annotations

import re

from claw.judge.lexicon import COMMON, LANGUAGES, REPLY_PARTS
from claw.judge.reading.approvals import NO_FAULT, NOTHING_TO_CHANGE, RELIEF
from claw.judge.reading.clause import PARTS, Clause
from claw.judge.reading.text import SPELLED, words_of

_PREFERENCE = re.compile(
    r"(?<!what )(?<!all )(?<!just )(?<!exactly )(?<!precisely )(?<!than )"
    r"\bi(?: would|'d|'m| was| really| just| [a-z]+ly)?"
    r" (?:really )?"
    r"(?:prefer|rather|asked|said|told you|meant|wanted|want just|want only|need just|need only|was hoping|hoped"
    r"|was expecting|expected|was looking for|was after|specified|mentioned|didn't (?:ask|want|need|say|mean)"
    r"|did not (?:ask|want|need|say|mean)|never (?:asked|said|wanted)|(?:only|just) (?:need|want|needed|wanted|asked)"
    r"|needed(?! (?:that|this|it)$)"
    r"|was thinking|had in mind|was going for|was picturing|imagined|was imagining)\b"
    r"|\bthan (?:i|we) (?:need|needed|asked|wanted|requested)\b|^([\w' -]+) means \1$"
    r"|^(?:just|only) (?:need|needed|want|wanted)\b"  # the subject left out: "just need the total"
    r"|\b(?:i|we|my [\w-]+|they|he|she) (?:also )?(?:need|needs|want|wants|expect|expects|require|requires)"
    rf"(?: to see)? (?:the|a|an|some|more|your) (?:[\w-]+ )?(?:{PARTS})\b"
    # a target quantity: "I need around 50", "we wanted exactly five"
    r"|\b(?:i|we) (?:need|want|wanted|needed|asked for|'d like|would like|said)(?: it)? (?:around|about|roughly"
    rf"|approximately|exactly|at least|at most|no more than|under|over|only|just|close to) (?:\d+|{SPELLED.pattern})\b"
)
_YOUR_FAULT = re.compile(
    r"\b(?:you|you've|you have|you just|you've just)(?: still| again| also| completely| totally| clearly)? "
    r"(?:forgot|forget|missed|ignored|skipped|left|dropped|misread|misunderstood|mixed|confused|keep|kept|didn't"
    r"|did not"
    r"|never|haven't|have not|changed|broke|made up|invented|repeated|used|gave|wrote|put|added|swapped|flipped"
    r"|reversed"
    r"|switched|only|overlooked|omitted|lost|cut off|stopped|told|claimed|called|marked"
    r"|got (?:it|that|this|the [\w-]+) (?:wrong|backwards"
    r"|mixed))\b"
    r"|\byou(?:'re| are)(?: still| just)? "
    r"(?:missing|ignoring|not|using|giving|repeating|making|overcomplicating|overthinking|confusing)\b"
)
_PROHIBITION = re.compile(
    # "never" before a past form or an auxiliary states ("never would've guessed"); before a plain verb it forbids
    r"^(?:don't|do not|dont|never(?! \w+ed\b| heard| seen| been| had| knew| thought| got| saw| did| was"
    r"| (?:again )?(?:would|could|should|might|will|shall|can|has|does|do|did|is|am|are|were|would've|could've"
    r"|i|we)\b)"
    r"|stop|quit"
    r"|avoid"
    r"|no more|no need (?:to|for)|enough (?:with|of)|less of|skip the|lose the|not so much)\b"
    r"|\b(?:please|just|and|so|but|then) (?:don't|do not|dont|stop|avoid|never)\b|^no [\w-]+ (?:please|pls|this time"
    r"|next time)$"
)


# "don't" before a verb of perception states, its subject left out: "(I) don't see anything wrong".
_UNSEEN = re.compile(r"^(?:don't|do not|dont) (?:see|find|spot|notice|see any|find any)\b")


def prohibition(c: Clause) -> bool:
    """don't / never / stop / no more … — not an edit forbidden of the whole reply ("Don't change a thing.": nothing to
    change, `NOTHING_TO_CHANGE`), nor a fault looked for and not found, its "I" left out ("don't see anything wrong":
    `NO_FAULT`)."""
    if _UNSEEN.match(c.body) and NO_FAULT.match(c.body):
        return False
    return bool(_PROHIBITION.search(c.body)) and not NOTHING_TO_CHANGE.search(c.body)


# The user's motive for asking, a verb of checking after "wanted to": "just wanted to make sure" says why they asked,
# not what they wanted of the reply.
_OWN_CHECK = re.compile(
    r"\b(?:wanted|want|needed|need|was hoping|hoped|meant) to (?:double[- ]?check|check|confirm|verify|make sure"
    r"|be sure"
    r"|sanity[- ]?check|cross[- ]?check)\b"
)
# The state the user wants a thing in, after "I want / need it": "I want it cancelled", "we need them sorted by date".
_WANTED_STATE = re.compile(
    r"^(?:i|we)(?: really| just| actually)? (?:want|need|'d like|would like|wanted|needed) (?:it|this|that|them|these"
    r"|those) (?!(?:for|by|at|on|in|tomorrow|today|tonight|now|asap|back|too|as well|and|or|but|so)\b)[a-z]"
)


def _restates_request(c: Clause, body: str) -> bool:
    """What the user needs, named by the request's own words the reply left out: "I need Lisbon" after a request for
    cafes in Lisbon answered with cafes in Porto; "I want the blue one" (not in the request) is something new."""
    named = _NEED_NAMED.match(body)
    content = [w for w in words_of(named.group("what")) if w not in COMMON] if named else []
    return bool(content) and all(w in c.turn.request and w not in c.turn.response_words for w in content)


# A clause of time about what the user did: "… when I said it this morning" narrates, it restates nothing (but "another
# essay when I asked for one line" sets what was asked against what came).
_WHEN_I = re.compile(
    r"(?<=\w) (?:when|whenever|after|before|while|once|as soon as) (?:i|we)"
    r" (?!(?:asked|wanted|needed|specified|requested|meant|told you|said (?!(?:it|that|this|them)\b))).*$"
)
# The form the user needs the reply in: "I need it in German", "we'd like them as a table".
_WANTED_FORM = re.compile(
    r"^(?:i|we)(?: really| just| actually| still)? (?:want|need|'d like|would like|wanted|needed) (?:it|this|that|them"
    r"|these|those)(?: to be)? (?:in|as|into) (?:a |an )?([\w-]+)"
)
# What the user needs, named: "I need Lisbon", "we wanted near the station" (`_restates_request`).
_NEED_NAMED = re.compile(
    r"^(?:i|we)(?: really| just| actually| still)? (?:need|want|wanted|needed|asked for|said)"
    r"(?: (?:in|near|at|for|from|on|by))? (?P<what>[\w-]+(?: [\w-]+)?)$"
)
# A kind of thing asked for, not the one given: "I want something simple and classy", "we need something less formal".
_SOMETHING = re.compile(
    r"\b(?:i|we)(?: really| just| actually)? (?:want|need|'d like|would like|'d prefer|was hoping for|wanted|needed)"
    r" (?:something|anything) (?!(?:to|for|that|which|i|we|you|like|about|with|from|on|in|at|by|of|new)\b)[a-z]"
)


def preference(c: Clause) -> bool:
    """What the user wanted, set against the reply, a target quantity included ("I need around 50"), the form they
    need it in ("I need it in German", "we want them as a table"), what the request named and the reply left out ("I
    need Lisbon"), a kind of thing asked for ("I want something simpler and warmer") — not a hypothetical, which asks
    about another case ("And if I only want the first two?"), nor something new that a question asked next is about
    ("I also need a slogan, any ideas?"), nor what the user said or wanted in a clause of time ("she laughed when I
    said it")."""
    if re.match(r"^(?:what |and |but |so )?(?:if|suppose|supposing|assuming|in case|unless|say)\b", c.body):
        return False
    if c.setup and re.search(r"\b(?:need|needs|want|wants) (?:a|an|some|something|anything)\b", c.body):
        return False  # "I also need a slogan, any ideas?": something new, asked for next
    if RELIEF.match(c.body) or _OWN_CHECK.search(c.body):
        return False  # "good thing I checked", "just wanted to make sure": the user's own doing, nothing wanted
    body = _WHEN_I.sub("", c.body)  # "my sister smiled when I said it": a time, not a request restated
    form = _WANTED_FORM.match(body)
    if form and (form.group(1) in LANGUAGES or form.group(1) in REPLY_PARTS):
        return True  # "I need it in french actually", "we want them as a table"
    if _restates_request(c, body) or _SOMETHING.search(body):
        return True  # "I need Lisbon", "I want something plain and elegant"
    if _WANTED_STATE.search(body):
        return True  # "I want it cancelled for good": the state the user wants the thing in
    return bool(_PREFERENCE.search(body)) and not re.search(
        r"\b(?:exactly|just|precisely|all) (?:the (?:[\w-]+ ){1,4}?|what )(?:i|we)\b"
        r"|\b(?:exactly|precisely) (?!not\b)[\w']+ (?:i|we)\b"  # the slot however typed: "exactly waht i needed"
        r"|\b(?:that's|that is|it's|it is|this is)(?: exactly| just| precisely)?"
        r" (?:the (?:[\w-]+ )?[\w-]+|what) (?:i|we)\b",
        body,
    )  # "That's the one I needed.": the reply is what the user wanted


def emphasis(c: Clause) -> bool:
    """A content word of the request typed again in capitals ("for TEENAGERS.", "I said BRIEF"): the user raising their
    voice at what the request asked and the reply missed. A word the request typed in capitals too (an acronym) is no
    emphasis, nor is a clause typed all in capitals."""
    if not re.search(r"[a-z]", c.text):
        return False  # a clause typed all in capitals shouts everything, it stresses no word
    shouted = [w.lower() for w in re.findall(r"\b[A-Z]{4,}\b", c.text)]
    return any(w in c.turn.request_lower and w in c.turn.request for w in shouted)


# A failing said with its subject left out, of the reply or what it was for: "really missed the mark there", "totally
# misread the brief" (not "missed the bus": the object is no part of the reply or the request).
_FAILED_ELIDED = re.compile(
    r"^(?:(?:really|totally|completely|kinda|kind of|sort of|just|so) )?(?:missed|misread|misunderstood|overlooked"
    r"|ignored|butchered|botched|ruined) (?:the |my |that |this |what )?(?P<object>[\w-]+)"
)

# Something left out, its subject elided, asked: "forgot the group by?", "left out the salt?" (not the user's own:
# "forgot my keys?"; stated, "forgot the clocks change" is the user's own lapse).
_FORGOT_ELIDED = re.compile(r"^(?:(?:just|also|kinda|totally) )?(?:forgot|forgotten|left out) (?!(?:my|our|to)\b)\w")


def your_fault(c: Clause) -> bool:
    if c.question and _FORGOT_ELIDED.match(c.body):
        return True  # "forgot the group by?": asked, it points at what the reply left out
    elided = _FAILED_ELIDED.match(c.body)
    if elided and not c.question:
        said = elided.group("object")
        if said in ("mark", "point", "brief", "question", "ask") or said in REPLY_PARTS or said in c.turn.request:
            return True  # "really missed the mark there"
    return bool(_YOUR_FAULT.search(c.body)) and not re.search(r"\byou (?:got it|nailed|did it)\b", c.body)
