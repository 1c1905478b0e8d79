"""Tone beside the words: emoji read as a class by what their Unicode names depict, and the markers of sarcasm.

- emoji: a pictograph's sentiment comes from its Unicode name, so any emoji reads, not a listed few. Approving: a
  smile, a heart, a thumbs up, an OK hand, a check mark, applause, a party popper, a hundred points, fire, stars.
  Disapproving: rolling eyes, an upside-down face, a raised eyebrow, an unamused, confused, frowning or angry face,
  a thumbs down, a cross mark, a face palm. Laughter, thinking and anything else are no verdict.
- sarcasm: a sentence whose approval is not meant — a disapproving emoji beside praise ("much better 🙄"), "/s",
  "yeah right", or an affirmative that goes on to an absurd claim of its own ("Sure, and pigs can fly.": an
  affirmative, then "and" and a statement with a copula that shares no word with the turn).
"""

from __future__ import annotations

import re
import unicodedata

# Pictographs and symbols typed as emoji (with their variation selector and skin-tone modifiers).
PICTOGRAPH = "\u2600-\u27bf\u2b50\u2b55\U0001f300-\U0001faff"
EMOJI = re.compile(rf"[{PICTOGRAPH}][\ufe0f\U0001f3fb-\U0001f3ff]*")
# What the Unicode name of an emoji depicts.
_APPROVING_NAME = re.compile(
    r"\b(?:SMILING|GRINNING|HEART|HEARTS|THUMBS UP|OK HAND|CHECK MARK|WITH CHECK|CLAPPING|PARTY|CONFETTI"
    r"|HUNDRED POINTS|FIRE|STAR|STAR-STRUCK|SPARKLES|TROPHY|RAISING BOTH HANDS|FOLDED HANDS"
    r"|FLEXED BICEPS|KISS|HUGGING)\b"
)
_DISAPPROVING_NAME = re.compile(
    r"\b(?:ROLLING EYES|UPSIDE-DOWN|EYEBROW RAISED|UNAMUSED|CONFUSED|FROWNING|ANGRY|POUTING|THUMBS DOWN|CROSS MARK"
    r"|FACE PALM|EXPRESSIONLESS|DISAPPOINTED|WEARY|PERSEVERING|CONFOUNDED|NAUSEATED|VOMITING|SKULL|BROKEN HEART"
    r"|NO ENTRY|WARNING SIGN|SEE-NO-EVIL)\b"
)
# Names that look approving but laugh, sweat or doubt: no verdict.
_NO_VERDICT_NAME = re.compile(r"\b(?:COLD SWEAT|TEARS|SMIRKING|FLOOR LAUGHING|BROKEN HEART|THINKING)\b")
_TEXT_SARCASM = re.compile(r"(?:^|\s)/s\b|^(?:oh )?yeah,? right\b")
_AFFIRM_THEN_CLAIM = re.compile(
    r"^(?:oh )?(?:sure|yeah|yes|right|ok|okay|of course)\b[,!]? and (?:a |an |the )?([\w' -]+?) "
    r"(?:is|are|was|were|can|will) ([\w' -]+)"
)


def emoji_sentiment(emoji: str) -> int:
    """+1 for an approving emoji, -1 for a disapproving one, 0 for any other (by its Unicode name)."""
    names = " ".join(unicodedata.name(ch, "") for ch in emoji)
    if _DISAPPROVING_NAME.search(names):
        return -1
    if _NO_VERDICT_NAME.search(names):
        return 0
    return 1 if _APPROVING_NAME.search(names) else 0


def emoji_tone(text: str) -> int:
    """The emoji of a text together: -1 if any disapproves, else +1 if any approves, else 0."""
    found = [emoji_sentiment(e) for e in EMOJI.findall(text)]
    return -1 if -1 in found else (1 if 1 in found else 0)


def without_emoji(text: str) -> str:
    return re.sub(r"\s+", " ", EMOJI.sub(" ", text)).strip()


def sarcastic(sentence: str, turn_words: frozenset[str] = frozenset()) -> bool:
    """A sentence marked as not meant: "/s", "yeah right", or an affirmative followed by a claim of the user's own
    that shares no word with the turn ("Sure, and the sea is dry.")."""
    text = sentence.lower().replace("\u2019", "'")
    if _TEXT_SARCASM.search(text):
        return True
    claim = _AFFIRM_THEN_CLAIM.match(without_emoji(text))
    if not claim:
        return False
    said = set(re.findall(r"[a-z]{4,}", " ".join(claim.groups())))
    return not said & turn_words
