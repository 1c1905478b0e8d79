"""The approving reading classes, tried after every correction (`APPROVALS`): no_fault (a fault or remark denied:
"No notes.", "I don't see any typos."), acceptance (a concession, an understanding, a choice from the reply, the
reply kept or acted on: "Fair enough.", "Tuesday it is.", "Sent.") and approval (thanks, an approving phrase, an
approving word said of the reply: "Sounds good.", "That trick is amazing.")."""

from __future__ import annotations

import re
from collections.abc import Callable

from claw.judge.lexicon import (
    APPROVING,
    APPROVING_COMPARATIVES,
    COMMON,
    COPULAS,
    FAULT,
    INTENSIFIERS,
    PRAISE_NOUNS,
    REMARKS,
    REPLY_PARTS,
    USE_VERBS,
    WEAK_APPROVING,
    is_approving,
)
from claw.judge.reading import outcomes
from claw.judge.reading.clause import NEW_STEP, Clause
from claw.judge.reading.text import is_negated, normalise, numbers

# Thanks, in English or another language ("merci", "gracias", "danke", "grazie", "obrigado", "arigato").
THANKS = re.compile(
    r"\b(?:thanks|thank you|thank u|thx|ty|tysm|ta|cheers|appreciate(?:d)?|kudos|merci|gracias|danke|grazie"
    r"|obrigad[oa]|arigat[oō]u?|dank je|(?:vielen|besten|herzlichen|tausend) dank|tack)\b|[👍🙏🙌😊🎉]|❤️"
)
_WANTED = r"(?:wanted|needed|asked for|meant|was looking for|had in mind|was after)"
_APPROVING_PHRASE = re.compile(
    r"\b(?:that's it|that is it|that's the one|that'?ll do|that will do|will do|nailed it|got it|bingo|exactly|spot on"
    r"|well done|good job|great job|nice job|nice work|good work|great work|lgtm|makes? sense|made sense"
    rf"|(?:just|exactly|all|precisely|that's|that is|it's|this is) what i {_WANTED}"
    # the relative word in the slot however it is typed: "this is exactly waht i needed"
    rf"|(?:this is|that's|that is|it's) (?:exactly|precisely) (?!not\b)[\w']+ (?:i|we) {_WANTED}"
    r"|(?:exactly|that's|that is|it's|this is) (?:exactly )?the [\w-]+ (?:i|we) (?:want|need|like|wanted|needed|meant"
    r"|was after|had in mind|(?:was|were) (?:going|looking|hoping|aiming) for)\b"
    r"|(?:love|like|liked|loved) (?:it|this|that|the|how|them|these)"
    r"|(?:works|worked|fine|good) (?:for|by|to) (?:me|us)"
    r"|^(?:i'?ll|i will|we'?ll|will|gonna|going to) (?:use|take|go with|send|keep|print|post|submit|try|hand in) "
    r"(?:it|that|this|them|those|these)\b|^(?:sending|using|going with|taking) (?:it|that|this)\b"
    r"|(?:that|it|this) (?:really |actually |totally |definitely )?"
    r"(?:works|worked|helps|helped|does it|did it|did the trick|answers|fixed|solved)"
    r"|\b[\w.,]+ (?:matches|matched|checks out|adds up)\b"
    r"|(?:^|\bi |\bwe )(?:really |do |absolutely |totally )?(?:like|love|appreciate|liked|loved)\b|^works\b"
    r"|(?:^|\bthat's |\bit's )right on|^(?:sure|ok|okay|yes|yeah),? why not|^you'?re (?:a|an|the) (?!worst\b)[\w-]+$)"
)
# What the user lacked, supplied by the reply: "the flag was what I was missing", "that's just what we were after".
WHAT_I_LACKED = re.compile(
    r"\b(?:is|was|'s|were|are) (?:exactly |just |precisely )?what (?:i|we)(?: was| were| had been|'d been| have been)?"
    r" (?:missing|lacking|looking for|after|needed|wanted|hoping for)\b"
)
# Nothing better possible: "couldn't wish for a better one", "can't imagine a clearer one".
NOTHING_BETTER = re.compile(
    r"\b(?:couldn't|could not|can't|cannot|wouldn't|would not)(?: have| ever)?(?: (?:be|been|get|gotten|got|ask|asked"
    r"|wish|wished|hope|hoped|imagine|imagined|want|wanted|expect|expected|find|found|come up|write|written|say|said"
    r"|put|explain|explained)"
    r"(?: for| with| of)?)?(?: (?:a|an|any|anything|something|one))?(?: [\w-]+)? (?:better|clearer|nicer)\b"
)
# Relief at having asked: "good thing I checked", "so glad we checked" — the reply saved the user from a mistake.
RELIEF = re.compile(
    r"^(?:(?:it's |that's |what |such )?an? )?(?:(?:good|great|lucky) (?:thing|job)|luckily|(?:so |really |very )?"
    r"(?:glad|relieved)|thank (?:god|goodness|heavens))(?: that)? (?:i|we)\b"
)
# A noun of praise said of the reply, or alone: "this page is gold", "Genius.", "I'd call it a win".
_PRAISED = re.compile(
    r"^(?:(?:this|that|it|these|those|yours|(?:the|your|this|that) [\w-]+(?: [\w-]+){0,2})"
    r"(?:'s| is| are| was| were) )?"
    r"(?:(?:a|an|pure|absolute|total|such a|a real|a total|an absolute|a true|literally|actually|just|solid|a major"
    rf"|a huge|a big|a little) )*(?:{'|'.join(sorted(PRAISE_NOUNS))})$"
    rf"|\bcall (?:it|that|this) (?:a |an )?(?:{'|'.join(sorted(PRAISE_NOUNS))})$"
)
# A rating out of five or ten, high: "10/10", "9 out of 10", "5/5 stars".
_RATING = re.compile(r"^(\d+(?:\.\d+)?) ?(?:/|out of) ?(5|10)(?: stars?)?$")
# The reply put to use, in any tense: "sending it to my boss", "I'm printing this", "bookmarking".
_INGS = "|".join(ing for _, ing, _ in USE_VERBS)
_PASTS = "|".join(past for _, _, past in USE_VERBS)
_PUT_TO_USE = re.compile(
    rf"^(?:(?:i'm|i am|we're|we are)(?: (?:just|totally|definitely|already|so|literally))? )?(?:{_INGS})"
    r"(?: (?:it|this|that|them|these|those)\b|(?: (?:now|right now|for later|immediately|already|straight away))?$"
    # the object left out before whom it goes to: "forwarding to her", "sending over to the team"
    r"|(?: (?:over|on|along|round|around))? to (?:him|her|them|my|our|his|their|the|everyone|everybody|all)\b)"
    # done, with the reply as object and a particle or a place: "printed it out", "sent it over to my team"
    rf"|^(?:(?:i|we|just|already|so) )*(?:{_PASTS}) (?:it|this|that|them|these|those)"
    r" (?:out|over|on|along|off|around|round|up|to|in|into|onto)\b"
    rf"|^(?:i'?ll|i will|we'?ll|we will|gonna|going to|i'm going to|will) (?:{'|'.join(b for b, _, _ in USE_VERBS)})"
    r" (?:it|this|that|them|these|those)\b"
)
# The reply singled out among others by what follows ("this is the first explanation that didn't lose me"); the
# relative clause's own correction (`faults.negated_approval`) is read first.
SINGLED_OUT = re.compile(
    r"^(?:this|that|it|yours|this one|that one)(?:'s| is| was) (?:the |my )?(?:first|only|one) (?:[\w-]+ ){0,2}?"
    r"(?:that|which|who|i've|i have|i)\b"
)
# A wh-question typed without its question mark ("what does it do exactly then"): it asks, it approves nothing.
WH_ASKED = re.compile(
    r"^(?:what|how|where|when|why|who|which)(?:'s| (?:is|are|was|were|do|does|did|can|could|would|should|will))\b"
)
# An approving verb over a clause: "I like that you kept it short", "love how it didn't …", "thanks for not …" — the
# clause is what the user approves, a negation in it included (`reply.read_clause`).
APPRECIATION = re.compile(
    r"^(?:i |we )?(?:really |also |especially |do |just |totally |absolutely )*(?:like|love|liked|loved|appreciate"
    r"|appreciated|enjoy|enjoyed|adore)(?: it)? (?:that|how|the way|when) "
    r"|^(?:thanks|thank you|thank u|ty|thx|cheers)(?: so much| a lot| again)? for (?=(?:not |never )?[a-z]+ing\b)"
)
# An improvement noticed, as a fragment: "Much punchier.", "Way more readable." (with please it asks: `comparative`).
IMPROVEMENT = re.compile(r"^(?:much|way|so much|far|a lot|loads|heaps|miles) (?:more [a-z][\w-]+|[a-z][\w-]+i?er)$")
# "Well explained.", "Really well put.": "well" before a participle praises ("well" alone opens a clause as filler).
_WELL_DONE = re.compile(r"^(?:(?:very|really|so|super|pretty) )?well[ -](?:[a-z]+ed|written|put|said|done|thought)\b")
FAULT_NOUNS = "|".join(sorted(REMARKS | FAULT))
# A fault or remark denied by a determiner, not a verb ("no typos", "I don't see any issues", but not "doesn't fix the
# problem"), within the first words of the clause.
NO_FAULT = re.compile(
    r"^(?:[\w']+ ){0,3}?(?:no|zero|without|nothing|not (?:a|one|a single|any)|(?:[\w']*n't|not) (?:see |find |spot "
    r"|notice |have |got )?any(?:thing)?)"
    r"(?: (?:real|major|big|serious|obvious|further|other|more|single|glaring|actual))?"
    rf" (?:{FAULT_NOUNS})\b"
    r"|^(?:[\w']+ ){0,2}?(?:not|isn't|wasn't|never) (?:too|overly) [\w-]+"  # "Not too long.": the excess denied
    # a verb of failing denied, litotes: "this doesn't suck", "it didn't disappoint"
    r"|^(?:it|this|that|these|they|yours?)(?: one)? (?:doesn't|does not|didn't|did not|don't|do not|won't)"
    r" (?:suck|stink|disappoint)\b"
)
# Nothing left to change: "Nothing to add.", "nothing I'd change", "there's nothing to fix".
NOTHING_TO_CHANGE = re.compile(
    r"\bnothing (?:else |more |much |at all )?(?:to|i'?d|i would|i want to|i'd want to|that needs? (?:to be )?"
    r"|needs (?:to be )?)\s*(?:add|change|fix|cut|edit|correct|improve|tweak|adjust|remove|added|changed|fixed"
    r"|changing|fixing|adding)\b"
    r"|\bnothing (?:else|more|further)(?: (?:i|we) (?:need|want)| needed| to ask| for now)?$"  # "Nothing more I need."
    # an edit forbidden of the whole reply: "don't change a thing", "no need to edit anything"
    r"|\b(?:don't|do not|no need to|wouldn't|would not) (?:change|edit|touch|tweak|alter|fix|adjust)"
    r" (?:anything|a thing|a word|a single (?:thing|word))\b"
)
# Acceptance without an approving word: a concession ("Fair enough.", "Point taken."), understanding ("That
# explains it."), the user's own result agreeing ("That's what I got too."), a choice made from the reply
# ("Tuesday it is.").
ACCEPTANCE = re.compile(
    r"^(?:fair (?:enough|points?)|good points?|point taken|i stand corrected|(?:you )?got me"
    r"|you'?re (?:so |totally |absolutely )?right"
    r"|true enough|that's true|that's fair)\b"
    r"|^(?:that|this|it|which) (?:explains|clarifies|clear(?:s|ed) (?:it |that |this |things )?up)\b"
    r"|^now i (?:get|see|understand)\b"
    # understanding arriving, said of the reply: "oh that finally clicks", "it's sinking in now"
    r"|^(?:that|it|this|it all|everything)(?:'s| is)?(?: (?:finally|now|totally|really|just|all))* (?:clicked|clicks"
    r"|sank in|sunk in|sinks in|sinking in|fell into place|falls into place)(?: (?:now|for me|finally|at last))*$"
    r"|^i (?:get|understand) it now\b"
    # something learned from the reply: "TIL", "never knew that", "I didn't know it was about scattering" (not "didn't
    # know which to pick", the user undecided); a guess of the user's borne out: "knew it!", "called it"
    r"|^(?:til|today i learned)\b|^(?:i |we )?(?:never|didn't|did not) (?:knew|know|realised|realized)"
    r" (?:that|it|this|about)\b"
    r"|^(?:i |we )?(?:knew|called|guessed) it(?: all along)?$"
    # the cause found: "that was it", "that was the problem"
    r"|^(?:that|this) was (?:it|the (?:problem|issue|culprit|fix))$"
    r"|^(?:that's|that is|it's|this is) (?:exactly |just )?what i (?:got|get|have|had|thought|figured|calculated"
    r"|found|worked out|expected|guessed)\b"
    # what another source says agrees with the reply: "that's what my teacher said", "what the manual says too"
    r"|^(?:that's|that is|it's|this is) (?:exactly |just )?what (?:i|we|(?:my|our|the|his|her|their) (?:[\w-]+ ){0,2}"
    r"[\w-]+) (?:said|says|say|told|tell|tells|taught|wrote|writes|showed|shows|suggested|suggests|recommended)\b"
    r"|^match(?:es|ed)? (?:what i|mine|my|ours|what we)\b|^(?:i |we )?(?:got|get|had|have) (?:that|the same|it) "
    r"(?:too|as well)$"
    r"|^(?:i|we) (?:got|get|have|had|found) the same\b|^(?:the )?same (?:[\w-]+ )?(?:here|as (?:me|mine|what i|i)"
    r"|(?:i|we) (?:got|had|get))\b|^agreed$"
    r"|^(?!(?:so|here|there|what|that|this|how|where|as|which|who|whatever|if|when|because)\b)(?:[\w'-]+ ){1,3}"
    r"it is(?: then)?$"
    r"|^(?:i'?ll|i will|we'?ll|i'm going to|gonna) (?:keep|leave) (?:it|that|this|them)\b"
    r"|^(?:keep|leave) (?:it|that|this|them)(?: (?:as is|as it is|like that|that way|unchanged|in))?$"
    # "invites sent": what was acted on, then its participle (not "flights are booked", a statement of the user's)
    r"|^(?:(?!(?:you|not|never|no|nothing|it|what|why|how|is|are|was|were|be|been|being|has|have|had)\b)[\w'-]+ )"
    r"{0,3}?"
    r"(?:just )?(?:sent|posted|submitted|printed|booked|ordered|saved|copied|installed|applied|bought|planted"
    r"|added|used|shared|made|cooked|baked)(?: it| that| them| this)?"
    r"(?: now| already| off| today| tonight| yesterday| last night| this morning| earlier)?$"  # "Sent.": acted on
)
# The user about to act on something: "I'll grab a snake plant." (`_acceptance`: when the reply offered it).
_ACTING_ON = re.compile(
    r"^(?:(?:i'?ll|i will|we'?ll|we will|i'm going to|we're going to|gonna|let's) (?:go with|use|take|try|get|grab"
    r"|buy|pick|book|order|make|cook|bake|plant|watch|read|visit|wear|play|choose|follow|start with|go(?: on| for)?)"
    r"|going with|using|taking|picking|booking|ordering|trying"
    r"|(?:just |already )?(?:booked|ordered|bought|picked|chose|went with|took|made|cooked|baked|planted)) "
    r"(?:the |a |an |some |that |this |those |these )?([\w' -]+)$"
)
# The user's own result the same as the reply's: "Got 12 as well.", "I also get 12."
_SAME_RESULT = re.compile(
    r"^(?:i |we )?(?:also )?(?:got|get|had|have|make|made|found|calculated|counted) (.*\d.*?) (?:too|as well)$"
    r"|^(?:i |we )also (?:got|get|had|make|made|found|calculated|counted) (.*\d.*)$"
)


def _about_reply(c: Clause, i: int) -> bool:
    """Whether the approving word at i evaluates the reply: it opens the clause ("Great, …", "Perfect tone."), the
    clause is short, or it is predicated of the reply ("this is great", "that trick is amazing", "biscuit is perfect"
    when the reply offered Biscuit) — not of something else ("the weather is nice", "his best friend")."""
    words, j = c.words, i - 1
    while j >= 0 and words[j] in INTENSIFIERS:
        j -= 1
    if j < 0 or len(words) <= 3:
        return True
    if words[j] not in COPULAS:
        return False
    subject = words[j - 1] if j > 0 else ""
    pointed = j > 1 and words[j - 2] in ("that", "this", "these", "those", "your")
    return (
        j == 0
        or words[j] in ("that's", "it's", "thats", "its", "this's", "you're", "they're")
        or subject
        in {"it", "this", "that", "these", "those", "they", "you", "yours", "everything", "all"} | REPLY_PARTS
        or subject in c.turn.response_words
        or pointed
    )


def _no_fault(c: Clause) -> bool:
    """A fault or a remark denied near the start of a statement approves: "No typos.", "I have no complaints.",
    "Not a single error.", "Nothing to add." — the user looked for something to correct and found nothing. Asked
    ("No errors?") or asked for ("No typos next time, please.") it approves nothing."""
    if c.question or c.polite or NEW_STEP.search(c.body) or re.search(r"\b(?:next|this) time\b", c.body):
        return False
    return bool(NOTHING_TO_CHANGE.search(c.body) or NO_FAULT.match(c.body))


# Nouns that name one of the alternatives a reply set out, by its label ("plan 2", "choice A").
_ALTERNATIVES = {"option", "plan", "choice", "version", "number", "pick", "variant", "route", "package", "tier"}


def acts_on_offer(c: Clause) -> bool:
    """The user acting on what the reply offered, about to or done ("I'll book the 7pm train.", "just booked the
    tram" after a reply that named them), an alternative named by its label included ("I'll go with plan 2" after a
    reply that weighed plan 1 against plan 2)."""
    acting = _ACTING_ON.match(c.body)
    if not acting:
        return False
    said = c.turn.response_words | c.turn.response_numbers
    named = acting.group(1).split()
    label = len(named) == 2 and named[0] in _ALTERNATIVES and re.fullmatch(r"[a-z]|\d+", named[1])
    if label:
        return named[1] in said  # "option C" after a reply that weighed A against B names nothing it offered
    offered = [w for w in named if len(w) > 2 and w not in COMMON]
    return bool(offered) and all(w in c.turn.response_words or w + "s" in c.turn.response_words for w in offered)


def _acceptance(c: Clause) -> bool:
    """The reply accepted without an approving word (`ACCEPTANCE`): "Fair enough.", "That explains it.",
    "That's what I got too.", "Tuesday it is.", "Keep it as is.", "Sent." — a concession, an understanding, an
    agreement, a choice, the reply kept or acted on; or the user acting on what the reply offered ("I'll book the
    7pm train." after a reply that named it)."""
    if c.question:
        return False
    if acts_on_offer(c):
        return True
    agreeing = _SAME_RESULT.match(c.body)  # "Got 12 as well." after a reply that said 12
    stated = numbers(next(g for g in agreeing.groups() if g)) if agreeing else frozenset()
    return bool(ACCEPTANCE.search(c.body)) or bool(stated and stated <= c.turn.response_numbers)


# Adverbs of degree or of truth between a copula and the word it predicates ("sounds about right", "that's actually
# cool", "it's genuinely fine").
_DEGREE = {
    "about", "just", "really", "pretty", "quite", "very", "so", "exactly", "actually", "genuinely", "honestly",
    "seriously", "totally", "super", "kinda", "truly", "definitely", "also", "still", "surprisingly", "legit",
}  # fmt: skip


# Thanks for something dated before this turn: "thanks for the help yesterday", "thanks again for last time".
_THANKS_FOR_BEFORE = re.compile(
    r"^(?:thanks|thank you|cheers)(?: again| so much)? for (?:[\w'-]+ ){0,5}?"
    r"(?:yesterday|last (?:time|week|night|month|year|session)|the other day|before|earlier(?! today))\b"
)


# The reply identified as the thing the request asked for: "that's the word" after "What's the word for …?".
_THE_ONE_ASKED = re.compile(r"^(?:(?:yes|yeah|yep|oh|ah)[,! ]+)?(?:that's|that is|this is|it's) (?:the|my) ([\w-]+)$")
# Trying the reply put off until a condition of the user's is met ("will try it tomorrow when I'm back home"): a plan
# that waits, no verdict yet (but "will try it tomorrow" takes the reply up).
_DEFERRED_TRY = re.compile(
    r"\btry (?:it|that|this|them|these|those)\b.*\b(?:when|once|after|until|as soon as) (?:i|we|i'm|we're|i've"
    r"|we've|i get|we get|my|our|the)\b"
)


def _rated_high(c: Clause) -> bool:
    """A rating out of five or ten, four fifths or more ("10/10", "9 out of 10"): a score given to the reply."""
    rating = _RATING.match(c.body)
    return bool(rating) and float(rating.group(1)) >= 0.8 * int(rating.group(2))


def _approval(c: Clause) -> bool:
    """Thanks, an approving phrase, an approving word said of the reply — and the shapes that approve without one:
    the reply supplied what the user lacked ("the flag was what I was missing"), nothing better possible ("couldn't
    wish for a better one"), relief at having asked ("good thing I checked"), a noun of praise ("this list is
    gold"), a high rating ("10/10"), the reply put to use ("sending it to my boss"). Not in a question, a
    wh-question typed without its mark included ("what does it do exactly then"), nor a condition."""
    if c.question or re.match(r"^(?:if|unless|in case|whether)\b", c.body) or WH_ASKED.match(c.body):
        return False  # "if that helps" approves nothing
    if _THANKS_FOR_BEFORE.search(c.body):
        return False  # "thanks again for the help yesterday": an earlier exchange thanked, not this reply
    if _DEFERRED_TRY.search(c.body) and not THANKS.search(c.text.lower()):
        return False  # "will try it tomorrow when I'm back": not tried yet
    if THANKS.search(c.text.lower()) or _APPROVING_PHRASE.search(c.body) or _WELL_DONE.match(normalise(c.text)):
        return True
    asked_for = _THE_ONE_ASKED.match(c.body)
    if asked_for and asked_for.group(1) in c.turn.request:
        return True  # "YES that's the word" after "What's the word for …?"
    if WHAT_I_LACKED.search(c.body) or NOTHING_BETTER.search(c.body) or RELIEF.match(c.body):
        return True
    if _PRAISED.search(c.body) or _rated_high(c) or _PUT_TO_USE.match(c.body) or SINGLED_OUT.match(c.body):
        return True
    if IMPROVEMENT.match(c.body) and not (c.polite or c.directive):
        return True
    for i, w in enumerate(c.words):
        negated = is_negated(c.words, i)
        strong = (
            w in APPROVING_COMPARATIVES or (w in APPROVING and w not in WEAK_APPROVING) or (w in FAULT and negated)
        )
        if strong and _about_reply(c, i):
            return not negated or w in FAULT  # "not bad" approves
        j = i - 1
        while j > 0 and c.words[j] in _DEGREE:
            j -= 1  # "sounds about right", "that's actually neat"
        predicated = c.words[j : j + 1] in (["looks"], ["sounds"], ["seems"], ["is"], ["that's"], ["it's"], ["all"])
        if predicated and (w in WEAK_APPROVING or (len(w) >= 6 and is_approving(w))):
            return not negated  # "Looks right.", "That sounds doable."; a lone "Fine." is a brief approval
    return False


APPROVALS: tuple[tuple[str, Callable[[Clause], bool]], ...] = (
    ("no_fault", _no_fault),
    ("acceptance", _acceptance),
    ("approval", _approval),
    ("outcome", outcomes.outcome),
    ("agreement", outcomes.agreement),
)


def approves(c: Clause) -> bool:
    return any(fits(c) for _, fits in APPROVALS)
