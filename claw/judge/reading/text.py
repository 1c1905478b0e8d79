"""Typing normalisation and splitting: the user's reply cut into sentences, clauses and words, and the numbers it
states, as the reading classes see them — lower case, straight apostrophes, contractions typed without their
apostrophe restored ("thats" → "that's"), "1,000" read as "1000" and "eight" as "8"."""

from __future__ import annotations

import re

from claw.judge.lexicon import FILLER, NEGATORS, NUMBER_WORDS, UNIT_ABBREVIATIONS, UNITS
from claw.judge.reading.tone import EMOJI, PICTOGRAPH

# A number; digits joined by / : - are one value (a date, a time, a ratio), so a reordered date differs.
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:[/:-]\d+(?:[.,]\d+)*)*")
SPELLED = re.compile(rf"\b(?:{'|'.join(NUMBER_WORDS)})\b")
INTERJECTION = re.compile(r"o+h+|a+h+|h+m+|u+m+|e+r+m+|u+h+|o+o+h+|w+o+w+")
# Contractions typed without the apostrophe, in casual replies ("thats spanish", "doesnt work"); "its" is one only
# where it opens a clause ("its 2.54"), since elsewhere it is the possessive ("its value"), and "were", "well", "ill",
# "id" are words of their own.
_CONTRACTED = {
    **{f"{w}s": f"{w}'s" for w in ("that", "what", "where", "how", "there", "here", "who", "she", "he")},
    **{f"{w}nt": f"{w}n't" for w in ("do", "does", "did", "is", "was", "are", "were", "could", "would", "should")},
    **{f"{w}nt": f"{w}n't" for w in ("has", "have", "had")},
    "cant": "can't", "wont": "won't", "im": "i'm", "ive": "i've", "youre": "you're", "theyre": "they're",
    "youve": "you've", "theyve": "they've", "aint": "ain't",
}  # fmt: skip
_BARE_CONTRACTION = re.compile(rf"\b({'|'.join(_CONTRACTED)})\b")
_OPENING_ITS = re.compile(r"(^|[,.;:!?]\s*|\b(?:no|yes|yeah|so|but|and|because|way|nope|nah|lol|um|hmm)\s+)its\b")
_WORD = re.compile(r"[\w'-]+|[👍🙏🙌]")
# A sentence ends at . ! ? or a line break, and after an emoji that closes a thought ("much better 🙄 Try …").
_SENTENCE_END = re.compile(rf"(?<=[.!?])\s+|\n+|(?<=[{PICTOGRAPH}\ufe0f])\s+(?=[^\s{PICTOGRAPH}])")
_CLAUSE_BREAK = re.compile(
    # not the comma of 4,213, nor the colon inside a range or a time ("A1:A10", "10:30"). A run of spaces before a
    # break is matched from its first space only (`(?<!\s)`): tried from every space of a long run, the split cost
    # quadratic time (4,000 spaces in a reply: 4 s).
    r"(?:(?<!\s)\s+)?(?:[;—–]|(?<!\w):|:(?!\w)|,(?!\d)|(?<!\d),)\s*|(?<!\s)\s+-+\s+"
    r"|(?<!\s)\s+(?=(?:but|though|although|however|except|apart from|aside from|other than|save for)\b)",
    re.IGNORECASE,
)


# "Please" as typed in other languages: a request is one whatever language it is made in.
_FOREIGN_PLEASE = re.compile(
    r"\bs'il (?:vous|te) pla[iî]t\b|\bsvp\b|\bpor ?favor\b|\bporfa\b|\bper favore\b|\bbitte\b|\balsjeblieft\b"
)


# A run of spaces is matched from its first space only (`(?<!\s)`): a match tried from every space of a long run that
# fails (no dash, no punctuation after it) cost quadratic time, 6,000 spaces in a reply ~3 s of the judge.
_SPACED_DASH = re.compile(r"(?<!\s)\s+[—–-]+\s+|[—–]")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<!\s)\s+([,;!?]|\.(?!\w))")


def normalise(text: str) -> str:
    """Lower case, straight apostrophes, dashes as commas, no space before punctuation (a dot that opens a word, ".2f",
    is none), contractions typed without their apostrophe restored ("thats" → "that's", "doesnt" → "doesn't", a
    clause-opening "its" → "it's"), "please" in another language read as "please": what the shapes match."""
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = _SPACED_DASH.sub(", ", text)
    text = _FOREIGN_PLEASE.sub("please", _BARE_CONTRACTION.sub(lambda m: _CONTRACTED[m.group(1)], text))
    text = _OPENING_ITS.sub(r"\1it's", text)
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text).strip()  # ".2f", ".env" open a word: their dot stays


def sentences(text: str) -> list[str]:
    """The sentences of a reply as written (a hint quotes them); emoji alone join the sentence before them ("Is that
    the late train? 🥳" is one question)."""
    out: list[str] = []
    for s in (s.strip() for s in _SENTENCE_END.split(text)):
        if s and out and not re.search(r"\w", s) and EMOJI.search(s):
            out[-1] = f"{out[-1]} {s}"
        elif s:
            out.append(s)
    return out


def clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_BREAK.split(sentence) if c.strip(" ,;:")]


def words_of(text: str) -> list[str]:
    return _WORD.findall(text)


def numbers(text: str, spelled: bool = True) -> frozenset[str]:
    """The numbers a text states, each written one way so that a value compares with the reply's however it is
    typed: "1,000" → "1000", "05" → "5", "09/04" → "9/4", and with `spelled`, "eight" → "8"."""
    found = {re.sub(r",(?=\d{3}\b)", "", n) for n in _NUMBER.findall(text)}
    found = {re.sub(r"(?<![\d.,])0+(?=\d)", "", n) for n in found}
    if spelled:
        found |= {str(NUMBER_WORDS[w]) for w in SPELLED.findall(text.lower())}
    return frozenset(found)


# The unit after a number's last digit ("38.5°F" → "°f"): only the unit is read, so the match starts at that digit;
# a match from the number's first digit ("\d(?:[\d.,]*\d)?…") retried from every digit of a long number.
_QUANTITY = re.compile(r"\d ?(°? ?[a-z]+)\b")


def units(text: str) -> frozenset[tuple[str, str]]:
    """The units of measure a text uses, each as (unit, what it measures): a unit's name ("km per hour", "Celsius") or
    an abbreviation written after a number ("38.5°F", "5h") — "in" or "f" alone are other words."""
    text = normalise(text)
    named = {w for w in re.findall(r"[a-z]+", text) if w in UNITS and w not in UNIT_ABBREVIATIONS}
    after_number = {m.group(1).replace(" ", "") for m in _QUANTITY.finditer(text)}
    return frozenset(UNITS[name] for name in named | after_number if name in UNITS)


def strip_filler(text: str) -> str:
    """The text without the words that open it without changing what it says (`FILLER`, and interjections however
    drawn out: "ohh", "hmmm", "ahhh")."""
    while True:
        head, _, rest = text.partition(" ")
        head = head.strip(",")
        if not rest or (head not in FILLER and not INTERJECTION.fullmatch(head)):
            return text
        text = rest.strip(" ,")


def is_negated(words: list[str], i: int, window: int = 3) -> bool:
    """A negator among the `window` words before words[i]."""
    return any(w in NEGATORS or w.endswith("n't") for w in words[max(0, i - window) : i])
