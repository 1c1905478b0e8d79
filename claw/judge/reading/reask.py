"""A re-ask: the user sends the request again in other words instead of saying what was wrong with the reply.

People who do not get what they wanted often ask again rather than complain ("ok but simply: Mia buys 3 pens…").
Such a message carries no approval or correction cue, so the clause reading finds it neutral; what marks it is that
it *repeats the request*: it states the request's numbers and most of its content words. A new question on
another subject shares little of either. The rule judge scores a re-ask as a weak correction
(`judge.reask_credit`, conf/judge/rule.yaml) and gives no hint: it says that the reply did not serve, not why.
"""

from __future__ import annotations

import re

from claw.judge.reading.text import normalise, numbers

# Words too common to tell one request from another (function words, and the framing of any request).
_COMMON = frozenset("""
a an the and or but so of to in on at for with by from as is are was were be been it its this that these those
i you he she we they me my your his her our their them us what which who whom how many much does do did can could
would should will shall may might must have has had get gets got just please again ask asking asked question
answer simply simple tell let okay ok way differently other words mean meant same thing one help homework need
""".split())  # fmt: skip
_CONTENT = re.compile(r"[a-z][a-z'-]{2,}")


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _CONTENT.findall(normalise(text)) if w not in _COMMON)


def repeats_request(reply: str, request: str, min_share: float = 0.6) -> bool:
    """True when `reply` asks `request` again: it states every number of the request (at least one, if the request
    has any), and at least `min_share` of the request's content words are in it."""
    asked, said = numbers(request, spelled=False), numbers(reply, spelled=False)
    if asked and not asked <= said:
        return False
    words = content_words(request)
    if not words:
        return bool(asked)
    return len(words & content_words(reply)) >= min_share * len(words)
