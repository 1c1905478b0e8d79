"""The corrections that deny the reply: denial ("No, that's descending."), near_miss ("Close, but …") and
negated_approval ("not great", "Not Toronto.", "That wasn't brief.", "This doesn't recurse.")."""

from __future__ import annotations

import re

from claw.judge.lexicon import APPROVING, COMMON, FAULT, NEGATORS, SUCCEEDS, UPTAKE, is_approving
from claw.judge.reading.approvals import FAULT_NOUNS, NO_FAULT, NOTHING_BETTER, NOTHING_TO_CHANGE, SINGLED_OUT
from claw.judge.reading.clause import REFERENT, Clause
from claw.judge.reading.text import is_negated, normalise, words_of

_DENIAL = re.compile(
    r"^(?:no+|nope|nah|nop|wrong|incorrect|negative)(?:$|(?=[\s,.!]))(?! (?:problem|worries|thanks|rush|doubt)\b)"
    # idioms of "no" that deny nothing: "no idea why …", "no wonder", "no way I'm saying that"
    r"(?! (?:idea|clue|wonder)\b| way (?:i|i'm|i'd|i'll|we|we're|we'd|we'll)\b)"
    rf"(?! (?:(?:real|major|big|serious|obvious|further|other|more) )?(?:{FAULT_NOUNS})\b)"  # "No typos." approves
)
_NEAR_MISS = re.compile(
    r"^(?:almost|close|nearly|so close|not quite|not exactly|getting there|closer|not there yet)\b|\bnot quite\b"
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
