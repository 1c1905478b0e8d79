"""The corrections that ask for the reply changed: comparative ("Shorter.", "More specific?"), modal ("That should
be 42."), edit_request (a request aimed at the reply: "Drop the intro.", "English please.", "as a fraction please",
"Only the verdict next time.") and redo ("Try again.")."""

from __future__ import annotations

import re

from claw.judge.lexicon import (
    APPROVING,
    APPROVING_COMPARATIVES,
    BRIEF,
    EDITS,
    EDITS_WITH_OBJECT,
    SUCCEEDS,
    is_approving,
    is_comparative,
)
from claw.judge.reading.approvals import ACCEPTANCE, IMPROVEMENT, NOTHING_BETTER, NOTHING_TO_CHANGE, acts_on_offer
from claw.judge.reading.clause import PARTS, PAST_FORM, REFERENT, Clause, about_elsewhere
from claw.judge.reading.outcomes import RESULT
from claw.judge.reading.text import normalise, numbers, units, words_of

_CONSTRAINT = re.compile(
    r"\b(?:say|write|use|call|put|add|start with|end with)(?: it as)? ['\"]"  # dictated wording: "say 'you'"
    r"|\b(?:just|only|instead|without|directly|straight|again|anymore|any more|at most|no more than|max(?:imum)?"
    r"|(?:under|below|less than|fewer than|up to|within) \d+"
    r"|(?:in|to|into|with|using) (?:one|two|three|four|five|a few|a couple(?: of)?|\d+|a single|few|fewer) "
    r"(?:words?|sentences?|lines?|paragraphs?|bullets?|points?|steps?|parts?|char(?:acter)?s?|numbers?|digits?)"
    r"|^(?:one|two|three|four|five|six|[1-9]|a few|a couple of|a single|single) (?:words?|sentences?|lines?"
    r"|paragraphs?"
    r"|bullets?|bullet points|points?|steps?|numbers?|digits?)$"  # "One line.": the length itself
    r"|one word|(?:as|in|into) (?:a |an )?(?:bullet(?:ed)?|bullets|numbered|list|table|plain|simple|simpler|single"
    r"|short|one)"
    r"|in (?:bullet )?points|the point|first(?! (?:time|thing)\b)|at the (?:top|start|end|beginning)|on top"
    r"|next time|from now on|in (?:the )?future|going forward)\b"
    r"|^(?:start|begin|lead|open|end|finish|close|stick) (?:me |us |it |them |the [\w-]+ )?(?:with|by|off|over|to)\b"
    r"|^(?:get rid of|leave out|cut out|take out|leave off|do away with|cut down|sum up|boil down|spell out"
    r"|break down|write out|lay out|set out|write down"
    r"|try using|try a different|try another|try something|try harder)\b"
    r"|\blike (?:a|an|i'm|i am|you're|you are|someone|a real|i was|for)\b|\bas (?:if|though)\b"
    r"|\bin (?:plain|simple|simpler|everyday|layman'?s?|normal|human|fewer|less) \w+"
)
# A version of the reply of a given length: "a 3 line version", "a one-paragraph summary" (its number is a length,
# not a value the user sets).
_VERSION = re.compile(
    r"\b(?:a|an|the) (?:\d+|one|two|three|four|five|single)[- ](?:word|sentence|line|paragraph|bullet|point|step"
    r"|page)s? (?:version|one|summary|answer|reply|take|variant|draft)\b"
)
# The form a reply should take, as a fragment: "as a fraction", "in Celsius", "into a table" (not "in the garden").
_FORM = re.compile(
    r"^(?:as|in|into) (?!(?:the|my|your|his|her|our|their|this|that|these|those|it|there|here|case|time|general)\b)"
    r"(?:a |an )?[a-z][\w-]*(?: [a-z][\w-]*)?(?: (?:please|pls|plz|instead|then))?$"
)
# The form of the reply named by a noun phrase, asked for with please: "numbered list with the totals please", "metric
# units please" (not "a list of hotels please", something new).
_PART_PHRASE = re.compile(
    rf"^(?!(?:a|an|some|any|more|another|other|i|we|you|my|it|this|that)\b)(?:[\w-]+ ){{0,2}}(?:{PARTS})\b"
    r"(?! (?:of|for|about|on)\b)"
)
# A standing instruction: what the reply did is to change from now on.
_STANDING = re.compile(r"\b(?:next time|from now on|in (?:the )?future|going forward)\b")
# Something added to the reply: "… in it too", "… to that as well".
_ADDITION = re.compile(r"\b(?:in|into|to|on|with) (?:it|there|this|that|them) (?:too|as well|also)\b")
_REFERENT_MANNER = re.compile(
    rf"^[\w'-]+ (?:me |us )?{REFERENT} "
    r"(?:in|into|as|with|without|using|like|so|to|again|more|less|[\w-]+er\b|properly|correctly|down|up|out|back"
    r"|over)\b"
)
_AIMED = re.compile(
    rf"^[\w'-]+ (?:me |us )?(?:{REFERENT}|your [\w-]+|the [\w-]+ (?:part|bit|section|line|sentence|paragraph))\b"
)
_COMPARATIVE = re.compile(
    r"\b(?:more|less) (?!(?:about|than|of|on|please|questions?|things?|times?|ones?|and|or|to|like|in|with|for|at|from"
    r"|info|information|here|there|then|now|thing|often|money|people|options?|examples?|ideas?|recipes?"
    r"|help)\b)[a-z][\w-]*"
    r"|\bfewer [\w-]+|\bnot (?:so|as|that|too) (?!(?:sure|bad|much|many|far|long ago)\b)[\w-]+"
)
_ELLIPTICAL_COMPARATIVE = re.compile(
    r"(?:(?:maybe|perhaps|a bit|a little|slightly|much|way|even|a lot|a tad|bit|something|anything|one|a|an) )?"
    r"(?:(?:more|less) [\w-]+|[\w-]+er)(?: (?:one|ones|option|options|version|idea|ideas))?"
    r"(?: (?:maybe|perhaps|please|then|though))?"
)
_COMPARATIVE_SLOT = re.compile(
    r"(?:^|\b(?:make|makes|keep|be|get|go|sound|come|feel|look|read|it|this|that|them|bit|little|lot|much|way|slightly"
    r"|even|far|somewhat|tad|something|one|version|please)) ?$"
)
_MODAL = re.compile(
    rf"(?:^|\b(?:it|this|that|they|these|there|you|{REFERENT})(?:'s| is| are)?(?: also| really| probably)? )"
    r"(?:should(?:n't)?(?: have)?|needs?(?: to)?|has to|have to|must|ought to|(?:is |are |was |were )?supposed to"
    r"|could(?: have)?(?! you)"
    r"|would)\b(?! you\b)"
    r"|\bwould (?:be|have been|look|read|sound|work) (?:[\w-]+ )?"
    r"(?:better|nicer|great|good|clearer|best|preferable|ideal) (?:if|to|with|without)\b"
    r"|^(?:needs?|could use|could do with|should)\b|\bwould be (?:\w+ )?(?:nice|better|good|great|ideal|preferable"
    r"|helpful|clearer)$"
    # what would have been enough: "one line would've done", "one line would have sufficed"
    r"|\bwould(?:'ve| have) (?:done|sufficed|been (?:enough|plenty|fine|better|nicer|clearer))\b"
)
_REDO = re.compile(
    r"\b(?:(?<!never )again|redo|start over|from scratch|another go|another try|another attempt|one more time"
    r"|try harder"
    r"|do over)\b"
)


def comparative(c: Clause) -> bool:
    """A comparative asked for: in a request, a fragment, after a modal, or as an elliptical question ("More
    specific?", "Maybe shorter?": "could it be …?" left unsaid)."""
    if NOTHING_TO_CHANGE.search(c.body):
        return False  # "Nothing more I need." approves (`_no_fault`)
    has_modal = bool(_MODAL.search(c.body))
    elliptical = c.question and bool(_ELLIPTICAL_COMPARATIVE.fullmatch(c.body))
    if not (c.directive or c.fragment or has_modal or elliptical) or (c.question and not (c.directive or elliptical)):
        return False
    if IMPROVEMENT.match(c.body) and not (c.polite or c.directive or c.question):
        return False  # "Much punchier.": the change noticed, approved (`approvals.IMPROVEMENT`)
    shape = _COMPARATIVE.search(c.action)
    if shape and (c.directive or has_modal or not shape.group(0).startswith("not too")):
        return True  # "Not so formal." asks; "Not too long, good." describes
    words = words_of(c.action)
    for i, w in enumerate(words):
        if not is_comparative(w) and w not in APPROVING_COMPARATIVES:
            continue
        if w in APPROVING_COMPARATIVES and not (c.directive or has_modal):
            continue  # "Much better." approves
        if (
            c.fragment
            or elliptical
            or _COMPARATIVE_SLOT.search(" ".join(words[max(0, i - 2) : i]))
            or words[i + 1 : i + 2] == ["than"]
        ):
            return True
    return False


# A belief the user puts before a claim ("I believe it should be 180", "I think it needs a comma"): the claim is read.
_BELIEF = re.compile(
    r"^(?:i|we) (?:really |honestly |do )?(?:think|believe|reckon|suspect|guess|feel like|figure)(?: that)? "
    r"(?=(?:it|that|this|there|the|these|those|they|you|he|she)\b)"
)
# A question about the assistant's own experience: "do you ever wish …?", "have you ever …?".
_EXPERIENCE = re.compile(r"^(?:do|did|have|would|are|were) you (?:ever|even ever)\b")


# Whether the reply holds for another case, asked: "would it be any different for a sole trader?", "is it the same in
# Canada?" (not "would it be better shorter?", a change asked for).
_ANOTHER_CASE = re.compile(
    r"^(?:would|will|does|do|is|could|can|might) (?:it|that|this|the answer|the same|anything|any of (?:it|this|that))"
    r"(?: still| also)?(?: be)? (?:any |much |very |at all |really )?(?:different|the same|change|differ|similar|hold"
    r"|apply|carry over)\b"
)
# A premise of the user's, then "so" and the claim it leads to: "I'm a vegan so it should be oat milk".
_PREMISE = re.compile(r"^(?:i|we|i'm|we're|my|our|i've|we've)\b[^,]*? so (?=(?:it|that|this|they|there|the)\b)")
# A tag asking for agreement after a claim: "…, right?", "…, shouldn't it?".
_TAG = re.compile(r",? (?:right|correct|yes|no|isn't it|is it|shouldn't it|wouldn't it|shouldn't they)$")


# A modal question whether a kind of thing suits the user's case: "would a pivot table be the way to go?", "could an
# air fryer do it?" — it weighs a thing, it asks no change of the reply (unless it compares: "would a shorter one
# be better?" reads `comparative`).
_WOULD_SUIT = re.compile(r"^(?:would|could|will|should) (?:a|an) [\w-]+(?: [\w-]+)? (?:be|do|work|help|suit)\b")


def modal(c: Clause) -> bool:
    """it / this / you + should / needs / could …, "needs more X", "would be better if …", what would have been enough
    ("one line would've done"), a claim the user believes ("I believe it should be 180") — not the user's own (what
    should I …), a need of the user's after a step forward ("Something else: need a gift idea.") or a question whether
    the reply carries over ("Would that work on a Mac?")."""
    if c.setup and re.match(r"^(?:also )?need (?:a|an|some)\b", c.body):
        return False
    carried = re.match(r"^(?:would|will) (?!you\b)(?:the same )?[\w-]+ (?:still |also )?([\w-]+)", c.body)
    if c.question and carried and carried.group(1) in SUCCEEDS:
        return False  # "Would the same trick work in Sheets?" asks about another case, like "does it work for …?"
    if NOTHING_BETTER.search(c.body):
        return False  # "could not have asked for anything better" approves (`approvals.NOTHING_BETTER`)
    if c.question and _EXPERIENCE.match(c.body):
        return False  # "do you ever wish you could …?": small talk about the assistant, nothing asked of the reply
    if c.question and _ANOTHER_CASE.match(c.body):
        return False  # "would it be any different for a sole trader?": the reply asked about another case
    if c.question and _WOULD_SUIT.match(c.body) and not any(is_comparative(w) for w in c.words):
        return False  # "would a spreadsheet be the way to go for this?": whether a thing suits, asked
    body = _BELIEF.sub("", c.body, count=1)  # "I believe it should be 180.": the claim, put politely
    premise = _PREMISE.match(body)  # "I'm left-handed so it should be the other grip": the claim after the premise
    body = body[premise.end() :] if premise else body
    tag = _TAG.search(body)
    if c.question and tag and _MODAL.search(body):
        claimed = [w for w in words_of(body[_MODAL.search(body).end() : tag.start()]) if w not in ("be", "a", "the")]
        if claimed and all(w in c.turn.response_words or w in c.turn.response_numbers for w in claimed):
            return False  # "so it should be 12, right?" after a reply that said 12: the reply checked, not doubted
    own = re.match(r"^(?:i|we|what|how|when|where|who|which|should i|could i|can i|do i)\b", body)
    said = _MODAL.search(body)
    if not said or own:
        return False
    after = words_of(body[said.end() :])  # "I think that would work": the claim approves, it asks no change
    approving = after[:1] and (after[0] in SUCCEEDS or (after[0] == "be" and is_approving("".join(after[1:2]))))
    return not (body != c.body and approving)


def _to_other_unit(c: Clause) -> bool:
    """A unit asked for (after to / into / in) of a measure the reply gave in another unit: "convert to grams and
    celsius" after a reply in cups and °F."""
    measures = {measure for _, measure in c.turn.units}
    named = " ".join(re.findall(r"\b(?:to|into|in|and) ([a-z°]+)", c.body))
    return any(measure in measures for _, measure in units(named) - c.turn.units)


# A request to say more about what the reply said ("can you explain the second step more?", "go into more detail on
# the loop"): a follow-up that asks for more, not a change — unless a manner follows ("explain it more simply").
_ELABORATE = re.compile(
    r"^(?:explain|describe|go over|go into|walk (?:me|us) through|expand on|elaborate on|say more about"
    r"|talk (?:a bit )?more about)\b(?:.*\b(?:more|further|in (?:more |much more )?detail|in depth)$|.*\bmore about\b)"
    r"|^(?:elaborate|expand)(?: on [\w' -]+)?$|^go into (?:more |a bit more )?detail\b"
)
# A request for information put as a request to tell: "can you remind me when to use tu?", "tell me how the loop
# ends": an indirect question, asking, not changing the reply.
_TELL_ME_WH = re.compile(
    r"^(?:remind|tell|show|teach) (?:me|us) (?:again )?(?:what|when|how|why|whether|which|where|who|if)\b"
)


# A model of the reply given in quotation marks: "just something like 'running late, home by 8'", "more like 'Dear
# team'" — the reply wanted like the quoted text (not "something like that", nor what something said).
_MODEL = re.compile(r"^(?:(?:just|maybe|perhaps|ideally|even|more) )*(?:something|anything|more) like ['\"]\w")
# The conversation moved on to another thing of the user's: "can we switch to my resume now?", "let's move on to the
# next chapter" — a step forward, no change to the reply (but "switch to metric" asks for one).
_MOVE_ON = re.compile(
    r"^(?:switch|move|turn|go|get|jump|skip)(?: on| back| over| ahead)? to"
    r" (?:my|our|another|something|the next|a new)\b"
)


# Less of the reply allowed: "just one word is fine", "only the number would be enough" — after a reply that gave
# more, a permission that asks for the smaller reply (not "just that is fine", which accepts what was given).
_LESS_IS_FINE = re.compile(
    r"^(?:just|only) (?!(?:that|this|it|these|those)\b)(?:(?:a|an|the|one|two|three|\d+) )?[\w-]+(?: [\w-]+)?"
    r" (?:is|are|'s|would be|will do|would do)(?: totally| perfectly| absolutely)? (?:fine|enough|plenty|ok|okay)$"
)


_FIT = re.compile(r"\bjust (?:right|perfect|fine|enough|the right (?:length|size|amount))\b")


def edit_request(c: Clause) -> bool:
    """A request aimed at the reply. Besides the shapes in the module docstring: the form the reply should take,
    asked for, or asked when the request named it ("as a fraction please", "In Celsius?"), a standing
    instruction ("Only the verdict next time."), and something added to the reply ("Mention the deadline in it
    too.") even when it is new. An elliptical "and …?" asks about a further case instead ("And in Java?")."""
    if _ELABORATE.match(c.action) or _TELL_ME_WH.match(c.action):
        return False  # "can you explain the second step more?", "remind me when to use tu": asking for more
    if _MOVE_ON.match(c.action):
        return False  # "can we switch to my resume now?": on to something else
    if _FIT.search(c.body) and not re.search(r"\b(?:not|isn't|wasn't|never)\b", c.body):
        return False  # "that's just right": "just" says how well it fits, not what to keep
    if _MODEL.match(c.body) and not c.question:
        return True  # "just something like 'running late, there by 8'"
    if _LESS_IS_FINE.match(c.body) and not c.question:
        return True  # "just one word is fine"
    constrained = bool(_CONSTRAINT.search(c.body))
    if constrained and not _CONSTRAINT.search(re.sub(r"\bagain\b", " ", c.body)) and about_elsewhere(c.text, c.turn):
        constrained = False  # "rainy commute again": an "again" said of something else asks nothing of the reply
    reported = RESULT.match(c.body) or ACCEPTANCE.search(c.body) or acts_on_offer(c) or PAST_FORM.fullmatch(c.words[0])
    if c.fragment and constrained and not c.new_step and not reported:
        return True  # "Three bullets max.", "Just the number." (not "Builds first time.", "Just ordered it.": reports)
    if c.question and re.match(r"^(?:and|or)\b", normalise(c.text)) and len(c.words) <= 4:
        return False  # "and redo?" asks about the next case
    form = _FORM.match(c.body)
    named = form and any(w in c.turn.request for w in words_of(c.body)[1:])
    if form and (c.polite or (c.question and named)) and not c.new_step:
        return True  # "as a fraction please"; "In Celsius?" after a request for Celsius
    if c.polite and not c.question and not c.new_step and _PART_PHRASE.match(c.body):
        return True  # "numbered list with the totals please": the reply's form, as a noun phrase
    if _STANDING.search(c.body) and not c.question and not re.search(r"\b(?:i|we|i'll|we'll|i'm|we're)\b", c.body):
        return True  # "Only the verdict next time.": how replies should be from now on
    operand = re.match(r"^([a-z][\w-]*) \$?(-?\d[\d.,/]*)", c.action)
    if (
        operand
        and operand.group(1) in c.turn.request
        and not numbers(operand.group(2)) <= c.turn.response_numbers | c.turn.request_numbers
    ):
        return False  # "Can you round 2.71828 to 3 places?" after "Round 3.14159 …": the task again, on a new input
    words = words_of(c.action)
    if not c.directive or not words or ACCEPTANCE.search(c.body):
        return False  # "Keep it." retains the reply
    if _VERSION.search(c.body) and not c.new_step:
        return True  # "could I have a one-paragraph version?"
    if _to_other_unit(c):
        return True  # "can you do it in grams and celsius?" after a reply in cups and °F
    stated = numbers(c.body)
    if words[0] not in EDITS and stated and stated <= c.turn.response_numbers:
        return False  # "set it to 12" after a reply that said 12: the user doing what the reply said
    if _ADDITION.search(c.body):
        return True  # "Suggest a backup plan in it too."
    if words[0] in EDITS and words[0] not in EDITS_WITH_OBJECT and not (len(words) == 1 and words[0] in APPROVING):
        return True  # "Drop the intro." (but "Correct!" approves)
    if words[0] in EDITS and (constrained or _AIMED.match(c.action)) and (constrained or not c.new_step):
        return True
    if (constrained or _REFERENT_MANNER.match(c.action)) and not c.new_step:
        return True
    # a noun phrase with please after a reply asks for the reply in that form ("English please.")
    return (
        c.fragment
        and c.polite
        and not c.new_step
        and not re.search(r"\b(?:a|an|some|any|more|the next|help|me)\b", c.body)
        and not all(w in BRIEF or w in APPROVING for w in c.words)
    )


def redo(c: Clause) -> bool:
    """again / redo / start over, outside a question — not an "again" said of something the turn is not about ("rainy
    commute again")."""
    return not c.question and bool(_REDO.search(c.body)) and not about_elsewhere(c.text, c.turn)
