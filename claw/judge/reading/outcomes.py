"""Approval without an approving word, tried after every correction (`approvals.APPROVALS`):

- outcome: the user reports how acting on the reply turned out — a result verb said of anything the reply offered
  ("the second one did it", "runs now", "compiles fine", "it came out fluffy", "feels better already"), not asked,
  not negated, not a condition ("if it works").
- agreement: the user agrees — "I agree", "couldn't agree more", or a verb of disagreement denied ("can't argue
  with that", "no arguments here", "can't fault it").
"""

from __future__ import annotations

import re

from claw.judge.lexicon import FAULT
from claw.judge.reading.clause import Clause
from claw.judge.reading.text import is_negated

# A verb of a result, said of what the user tried: "did it", "worked", "runs now".
RESULT = re.compile(
    r"^(?:(?:the |that |this |your |my )?[\w'-]+(?: [\w'-]+){0,2} )?"
    # after a preposition or a determiner "work" / "works" / "runs" are nouns ("a long day at work")
    r"(?<!\bat )(?<!\bto )(?<!\bfrom )(?<!\bfor )(?<!\bof )(?<!\bafter )(?<!\bbefore )(?<!\bmy )(?<!\bthe )(?<!\ba )"
    r"(?:did (?:it|the trick|the job)|worked|works|work|runs|ran|compiles|compiled|builds|passes|passed|loads|loaded)"
    r"(?: (?:now|fine|perfectly|great|first time|again|like a charm|a treat|for me|for us|this time|already"
    r"|beautifully|flawlessly"
    # an adverb of manner or a time ("worked instantly", "worked tonight"), an exclamation closing it ("… wtf")
    r"|[a-z]{3,}ly|tonight|today|yesterday|last night|this morning|wtf|omg))*$"
)
# A result described: "came out fluffy", "turned out great" (a fault word there is a bad result: `faults.fault`).
_CAME_OUT = re.compile(
    r"\b(?:came|come|comes|turned|turns) out (?:really |so |super |very |perfectly |just )?([\w-]+)"
)
# Relief that follows acting on the advice: "feels better already", "much better now".
# Results that are failures besides the fault words ("came out burnt").
_BADRESULT = {"badly", "burnt", "burned", "raw", "soggy", "undercooked", "lumpy", "dry", "hard", "tough", "different"}
_BETTER_NOW = re.compile(r"\b(?:feels?|feeling|looks?|sounds?|is|are|much|way|so much) better (?:already|now)\b")
_CONDITION = re.compile(r"^(?:if|when|whether|unless|once|until|in case|hope|hopefully|will|would|should|does|do)\b")
_AGREE = re.compile(
    # full agreement as a degree, alone: "100%", "a hundred percent" (`values.value` reads a percentage the turn is
    # about as a value instead)
    r"^(?:100|a hundred|one hundred) ?(?:%|percent|per cent)(?: (?:agree|agreed|true|right))?$|"
    r"^(?:i |we )?(?:totally |fully |completely |absolutely |100% )?(?:agree|agreed)\b(?! (?:to|that you)\b)"
    r"|\b(?:couldn't|could not|can't|cannot) agree more\b"
    r"|\b(?:can't|cannot|couldn't|could not|won't|hard to|no way to) (?:really )?(?:argue|disagree|fault|quibble)"
    r"(?: with)?\b"
    r"|^no (?:arguments?|objections?|disagreement) (?:here|from me|there)\b"
)


# The thing acted on working again, with a word of how: "it connects fine now", "the page loads properly now" (the
# verbs of `RESULT` need none; these would state a fact without it).
_FUNCTIONS = re.compile(
    r"^(?:(?:the |that |this |your |my )?[\w'-]+(?: [\w'-]+)? )?"
    r"(?:stays|stayed|starts|started|boots|booted|connects|connected|opens|opened|syncs|synced|saves|saved|prints"
    r"|printed|renders|rendered|plays|played|sends|sent|shows|showed|goes|went|comes|came)"
    r"(?: (?:up|on|open|through|in))? (?:now|properly now|fine now|again|first time|this time|no problem)$"
)
# Someone the reply was for, answering well: "my landlord said yes", "my boss approved it", "my kids loved it".
_REACTION = re.compile(
    r"^(?:he|she|they|(?:my|our|the|his|her|their) (?:[\w-]+ ){0,2}[\w-]+)(?: (?:actually|immediately|instantly"
    r"|just|totally|really|even|both|all))? (?:said yes|agreed|accepted|approved|signed off|smiled|grinned|beamed"
    r"|cheered|laughed(?! at)"
    r"|(?:loved|liked|enjoyed|approved) (?:it|that|this|them)|was (?:thrilled|delighted|impressed|happy|pleased)"
    r"|were (?:thrilled|delighted|impressed|happy|pleased))\b"
)


def outcome(c: Clause) -> bool:
    if c.question or _CONDITION.match(c.body):
        return False
    if (_FUNCTIONS.match(c.body) or _REACTION.match(c.body)) and not any(
        is_negated(c.words, i) for i in range(len(c.words))
    ):
        return True  # "it connects fine now", "my landlord said yes"
    result = RESULT.match(c.body)
    if result and not any(is_negated(c.words, i) for i in range(len(c.words))):
        return not re.match(r"^(?:you|i|we|nothing|none|it never)\b", c.body)  # "you did it" is `approval`'s
    came_out = _CAME_OUT.search(c.body)
    if came_out and "out" in c.words and not is_negated(c.words, c.words.index("out")):
        return came_out.group(1) not in FAULT | _BADRESULT
    return bool(_BETTER_NOW.search(c.body))


def agreement(c: Clause) -> bool:
    return not c.question and bool(_AGREE.search(c.body))
