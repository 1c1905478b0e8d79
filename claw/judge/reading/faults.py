"""The corrections that find fault with the reply as it stands: denial ("No, that's descending."), near_miss
("Close, but …"), negated_approval ("not great", "Not Toronto.", "That wasn't brief."), fault ("Sounds robotic.",
"That's over my budget.", "that's 3x my budget"), excess ("Too wordy.", "It's a bit long."), prohibition ("Don't use
bullet points."), preference ("I wanted it in Python.", "I want it cancelled"), emphasis ("for TEENAGERS.") and
your_fault ("You forgot the units.")."""

from __future__ import annotations

import re

from claw.judge.lexicon import (
    APPROVING,
    APPROVING_COMPARATIVES,
    COMMON,
    FAULT,
    LANGUAGES,
    NEGATORS,
    NUMBER_WORDS,
    REPLY_PARTS,
    SUCCEEDS,
    UPTAKE,
    is_approving,
    is_comparative,
)
from claw.judge.reading.approvals import (
    FAULT_NOUNS,
    NO_FAULT,
    NOTHING_BETTER,
    NOTHING_TO_CHANGE,
    RELIEF,
    SINGLED_OUT,
    WHAT_I_LACKED,
)
from claw.judge.reading.clause import PARTS, REFERENT, Clause, name_words
from claw.judge.reading.text import SPELLED, is_negated, normalise, words_of

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
_DENIAL = re.compile(
    r"^(?:no+|nope|nah|nop|wrong|incorrect|negative)(?:$|(?=[\s,.!]))(?! (?:problem|worries|thanks|rush|doubt)\b)"
    # idioms of "no" that deny nothing: "no idea why …", "no wonder", "no way I'm saying that"
    r"(?! (?:idea|clue|wonder)\b| way (?:i|i'm|i'd|i'll|we|we're|we'd|we'll)\b)"
    rf"(?! (?:(?:real|major|big|serious|obvious|further|other|more) )?(?:{FAULT_NOUNS})\b)"  # "No typos." approves
)
_NEAR_MISS = re.compile(
    r"^(?:almost|close|nearly|so close|not quite|not exactly|getting there|closer|not there yet)\b|\bnot quite\b"
)
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
_NEGATED_DOING = re.compile(
    rf"^(?:{REFERENT}|it|this|that) (?:doesn't|does not|didn't|did not|won't|can't|cannot|never) (?!(?:matter|bother"
    rf"|hurt|mind)\b)\w"
)
_STILL_NOT = re.compile(
    r"\bstill (?:not|no|isn't|doesn't|won't|can't|didn't|don't|wasn't|aren't|nothing|broken|wrong)\b"
)
_NOT_VERY = re.compile(
    r"(?:\bnot|n't) (?:very|particularly|especially|terribly|super|all that|remotely|overly|that) ([a-z][\w-]*)"
)
_NOT_QUALITY = {"much", "many", "long", "far", "often", "sure", "i", "it", "you", "we", "they", "the", "a", "bad"}
_NOT_FITTING = re.compile(
    r"\bnot (?:it|really|quite|exactly|ideal|there)\b|^not really$|\bnot (?:even )?(?:in|within|under|below|near"
    r"|for) (?:my|our|the)\b"
)


def denial(c: Clause) -> bool:
    """A leading no / nope / wrong — except a bare "no" after a reply that ended by offering more ("Want me to add a
    chart?" — "No, it's perfect."): that declines the offer and says nothing of the reply."""
    if c.turn.offers and re.fullmatch(r"(?:no+|nope|nah)(?: (?:need|thanks|thank you|that's ok|it's ok))?", c.body):
        return False
    return bool(_DENIAL.match(c.body))


def near_miss(c: Clause) -> bool:
    return bool(_NEAR_MISS.search(c.body))


# A condition opening inside a clause: a negation after it is hypothetical ("… if the form doesn't ask for it").
_CONDITION = re.compile(r"(?<=\w )(?:if|unless|in case|whether)\b")


# A determiner that denies the whole reply, its verdict after: "none of this is right", "none of it works", "nothing
# here is accurate".
_NONE_OF = re.compile(
    r"^(?:none|nothing|not one|neither) (?:of (?:this|that|it|these|those|them|the [\w-]+)|here|there)"
    r"(?: (?:is|are|was|were|seems?|looks?|sounds?))?(?: (?:really|remotely|even|quite))? ([\w-]+)"
)


def negated_approval(c: Clause) -> bool:
    """A negation before an approving word, a verb of success or of uptake, or a quality the request asked for; the
    reply's own word denied; "doesn't …", "still not …", "not very …" — not a negation inside a condition that follows
    ("do I need a car if the tour doesn't leave town?"), nor nothing better possible ("couldn't ask for better")."""
    if re.match(r"^why (?:didn't|don't|did not|do not) (?:i|we)\b", c.body):
        return False  # "why didn't I think of that" admires
    if NOTHING_TO_CHANGE.search(c.body) or NO_FAULT.match(c.body) or NOTHING_BETTER.search(c.body):
        return False  # "nothing to add", "I don't see any typos", "couldn't ask for better" approve
    none_of = _NONE_OF.match(c.body)  # "none of this is right": the whole reply denied by its determiner
    if none_of and not c.question and (is_approving(none_of.group(1)) or none_of.group(1) in SUCCEEDS):
        return True
    condition = _CONDITION.search(c.body)  # "do I need a car if the tour doesn't leave town?": a hypothetical
    words = words_of(c.body[: condition.start()]) if condition else c.words
    for i, w in enumerate(words):
        wanted = (
            is_approving(w) or w in SUCCEEDS or w in UPTAKE or w in c.turn.demands
        )  # "not brief" after "keep it brief"
        if not ((wanted or w in ("what", "how")) and is_negated(words, i)):
            continue
        if w == "better" and re.search(
            r"\b(?:couldn't|can't|cannot|could not) (?:be |get |have been )?better", c.body
        ):
            continue  # "couldn't be better" approves
        if w in ("what", "how") and not re.search(
            r"(?:\bnot|n't)(?: really| quite| exactly)? (?:what|how) \w", c.body
        ):
            continue
        if (w in ("mean", "think") and c.question) or ("without" in c.words[max(0, i - 3) : i] and w not in APPROVING):
            continue
        if SINGLED_OUT.match(c.body) and not (is_approving(w) or w in SUCCEEDS):
            continue  # "the first explanation that didn't lose me"
        if w == "sure" and not re.search(r"\bsure (?:that|it|this|about|if (?:that|it|this)|that's|it's)\b", c.body):
            continue  # "Not sure yet." is the user undecided; "not sure that's right" doubts the reply
        return True
    if not c.question and not SINGLED_OUT.match(c.body):  # "Not Toronto.", "Toronto isn't the capital."
        offered = [
            i
            for i, w in enumerate(c.words)
            if (w in c.turn.response_words and len(w) > 3 and w not in COMMON | NEGATORS)
            or w in c.turn.response_numbers
        ]
        if any(is_negated(c.words, i, 1) or is_negated(c.words[: i + 3], i + 3, 2) for i in offered):
            return True
    if _NEGATED_DOING.search(c.body) or _NOT_FITTING.search(c.body):  # "This doesn't recurse.", "not in my budget"
        return True
    if _STILL_NOT.search(normalise(c.text)):
        return True  # "still not centred": the fault persists
    at_all = re.search(r"(?:\bnot|n't) ([\w-]+) at all\b", c.body)
    if at_all and at_all.group(1) not in FAULT:
        return True
    # "not very catchy", "isn't particularly clear": a quality said to be lacking (a fault so denied approves)
    lacking = _NOT_VERY.search(c.body)
    return bool(lacking) and lacking.group(1) not in FAULT | _NOT_QUALITY and not c.question


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
