"""The apology drift: a reply that opens by conceding or apologising ("You're right, …", "I'm sorry, …").

As a first response it answers a complaint nobody made. Told what was wrong, the 135M model often replies
this way instead of fixing it, so the same test serves two places:
- evaluation reports the share of first responses that open this way beside every persona's rating,
  unrated (claw/evaluation.py): a scorer can pass it (the teacher persona's first `you` check did, and RL
  learnt it; its `addresses_student` check now fails these openings);
- `mode.hint_gate=apology` distils only from a hinted teacher that does not open this way
  (`Teacher.apologising`, claw/judge/teacher.py).
"""

from __future__ import annotations

import re

_APOLOGY_OPENING = re.compile(
    r"^\W*(?:you(?:'re| are) (?:absolutely |quite )?(?:right|correct)|(?:i'?m|i am) (?:so |very )?sorry|sorry\b"
    r"|(?:i )?apologi[sz]e|my apologies|my (?:bad|mistake)|i stand corrected"
    r"|thank you for (?:pointing|the correction))",
    re.IGNORECASE,
)


def opens_with_apology(text: str | None) -> bool:
    """Whether a reply opens with a concession or an apology."""
    return bool(text) and _APOLOGY_OPENING.match(text) is not None
