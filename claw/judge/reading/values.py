"""The value correction: a number or name the user sets against the reply's ("It should say 42, not 24.", "It was
Jane Austen.", "I get 42.", "more like 38", "eight, surely", "He doesn't drink, actually."), and the guards that keep
a value stated in passing neutral — the user's own circumstance, the premise of a question asked next, a value
approved ("38 is fine"), a date after a reply that named none."""

from __future__ import annotations

import re

from claw.judge.lexicon import (
    BRIEF,
    CALENDAR,
    FILLER,
    INTENSIFIERS,
    LANGUAGES,
    NUMBER_WORDS,
    REPLY_PARTS,
    is_approving,
)
from claw.judge.reading.approvals import approves
from claw.judge.reading.clause import PARTS, Clause, TurnContext
from claw.judge.reading.text import SPELLED, normalise, numbers, units, words_of

STATED_VALUE = re.compile(
    rf"^(?:(?:it|that|this|the (?:[\w-]+ )?(?:{PARTS})|[\d\s+\-*/x×÷=().]+)"
    r"(?:'s| is| was| equals| comes to| (?:should|would|might|may|could|must)(?: actually)? be"
    r"| are)(?: actually)? )?(?:(?:more like|closer to|nearer|about|around|roughly|approximately|approx) )?"
    # the value, with its unit written on ("212°F", "5km") or after it, a power ("3x^2"), and a rate ("11 per side")
    rf"(?:-?\d+(?:[.,]\d+)*|{SPELLED.pattern})(?: ?[%°][a-z]?| ?[a-z%]+)?(?:\^-?\d+)?"
    r"(?: (?:per|a|an) [a-z]+| each| apiece)?"
    r"(?: actually)?$"
    r"|^actually,? .*\d|\d.*\bactually$"
)
VALUE_CONTRAST = re.compile(
    # "X, not Y" — not "for not lecturing", "by not asking": after a preposition "not" negates a verb, it sets no value
    r"(?<![\w'%.-])(?!(?:for|by|of|from|about|without|like|on|at|with|or|if|whether|why|how)\s)"
    r"[\w'%.-]+\s*,?\s+(?:and )?not\s+(?:the |a |an |in )?(?!(?:only|just|sure|yet|really|bad|at|too|quite|that|even"
    r"|much|so"
    r"|necessarily|always|everything|all|necessary|needed|to|a|the|what|how|if|because|exactly|enough|for"
    r"|anymore)\b)[\w'%.-]+"
    r"(?: [\w'%.-]+)?[.!]?$|\bnot (?:the |a |an |in )?[\w'%.-]+,? but\b(?! also)"
)
_CONTRADICTS = re.compile(
    r"^(?:i'm |i am )?(?:pretty|fairly|quite|100%|very) sure\b|^i'm sure (?:it|that|this)\b|\bsurely\b"
)
_OWN_RESULT = re.compile(
    r"^i (?:get|got|make|made|count|counted|calculate|calculated|reckon|think it's|believe it's|worked out)\b"
    r"|^(?:got|getting) -?\d[\d.,/:]*(?: [a-z%]+)?$"  # "Got 13." (not "got 2 questions for you")
)
_USERS_OWN = re.compile(
    r"^(?:i|i'm|i've|we|we're|my|our|if|when)\b"
)  # the user talking about themselves, not the reply
_COPULA = re.compile(
    r"(?:'s|\b(?:is|are|was|were|has|have|had|equals|means|makes|gives|comes|(?:would|should|must) be))\b"
)
# The user's own circumstances ("It's for my son's party on Friday."): context for the reply, not a value it got wrong.
_CIRCUMSTANCE = re.compile(
    r"\b(?:my|our|mine|ours|years? old|year-olds?|aged)\b|^(?:it's|it is|this is|that's|they're|these are) for\b"
    r"|^(?:it's|it has|it's only|it's already) been\b"  # the time gone by for the user: "it's been 9 days"
)


# The user's own calculation: "so 2×9+4 = 22", "1250 x 12 = 15,000" (its result set against the reply's numbers).
# At least one operator on the left: "5 = 15" alone states no calculation.
_EQUATION = re.compile(
    r"^[$€£(]?\d[\d.,]*\s*(?:[+\-*/x×÷^]\s*[$€£(]?\d[\d.,)%]*\s*)+(?:=|equals)\s*[$€£]?(-?\d[\d.,]*)(?: ?[a-z%°]+)?$"
)


# A source the user reports a claim from: "the catalogue says …", "the docs say that …", "Google told me …".
_REPORTED = re.compile(
    r"^(?!(?:i|we|you)\b)(?:[\w'-]+ ){1,3}(?:says|said|say|states|stated|shows|showed|lists|listed|told me|tells me"
    r"|claims|claimed)(?: that)? (?=\w)",
    re.IGNORECASE,
)


# A claim the user puts as a belief of their own, asked or not: "I think it might be 212°F?", "but I always thought
# it was Ottawa?" — the hedge softens a value set against the reply's, it does not ask (the claim is read by `value`).
_HEDGED = re.compile(
    r"^(?:(?:but|and|so|hmm+|um+)[, ]+)?(?:i|we)(?: \w+ly| always| just| still)? (?:think|thought|believe|believed"
    r"|reckon|recall|remember|was told|were told|learned|learnt)(?: that)? (?=(?:it|that|this|the|they|he|she)\b"
    r"|[\w'-]+(?: [\w'-]+)? (?:is|was|are|were|'s)\b)",
    re.IGNORECASE,
)
# The same belief typed after its claim: "16 I thought?", "it was Ottawa, I always thought".
_TRAILING_BELIEF = re.compile(
    r"^(?P<claim>.*?\w),? (?:i|we)(?: always| just)? (?:thought|think|believe|believed|reckon)$"
)
# A value estimated against the reply's, of any subject: "hard boiled is more like 10 minutes", "the drive is closer
# to two hours" (the user's own things are context: `_USERS_OWN`, `_CIRCUMSTANCE`).
_MORE_LIKE = re.compile(
    r"^(?P<subject>[\w' -]+?) (?:is|are|was|were|'s|takes?|took|would be|should be|will be)"
    r" (?:more like|closer to|nearer to|nearer) (?P<value>.+)$"
)
# A classification from a source ("my teacher said it's a fruit"), after a reply that classed the thing as another.
_CLASSED = re.compile(
    r"^(?:[\w-]+ly,? )?(?:it|that|this|they|these|those|the [\w-]+)(?:'s| is| are| was| were)"
    r"(?: (?:actually|really|technically|officially|properly))? (?:a|an) (?P<noun>[a-z][\w-]*)$"
)
_REPLY_CLASS = re.compile(r"\b(?:is|are|was|were|'s) (?:a|an) ([a-z][\w-]*)")
# The reply's thing changed by the user to another value of its own form: "changed it to A1:A10" after "A1:A9".
_CHANGED = re.compile(
    r"^(?:(?:i|we) )?(?:had to |ended up |just |then )?(?:changed|changing|switched|switching|swapped|swapping"
    r"|replaced|replacing|set|edited|fixed|corrected|made) (?:it|that|this|them|the [\w-]+) (?:to|into) (?P<to>\S+)"
)


def _shape(token: str) -> str:
    """What kind of value a token is, its digits left out: "A1:A10" and "a1:a9" are both "a0:a0"."""
    return re.sub(r"\d+(?:\.\d+)?", "0", token.lower().strip(".,!?;'\"()"))


def changed_value(c: Clause) -> bool:
    """The user reports changing what the reply gave to another value of the same form: "changed it to A1:A10" after
    "=SUM(A1:A9)", "had to set the oven to 200" after "180" — the reply's value set right. Changed to the reply's own
    value ("set it to 180 like you said") or to something of another form ("switched it to dark mode") it sets
    nothing right."""
    done = _CHANGED.match(c.body)
    if c.question or not done:
        return False
    to = done.group("to").strip(".,!?;'\"()")
    tokens = {w.strip(".,!?;'\"()") for w in re.findall(r"[\w:.$%<>=/-]+", c.turn.response)}
    if not re.search(r"\d", to) or to in tokens:
        return False
    return _shape(to) in {_shape(w) for w in tokens if re.search(r"\d", w)}


def _more_like(c: Clause) -> bool:
    """ "<subject> is more like <value>": an estimate of the user's set against the reply's — a number the reply did
    not give ("more like 10-12") or a quantity named by its unit ("more like an hour and a half") it did not state."""
    said = _MORE_LIKE.match(c.body)
    if not said:
        return False
    estimate = said.group("value")
    stated = numbers(estimate)
    if stated:
        return not stated <= c.turn.response_numbers
    return bool(units(estimate)) and estimate not in c.turn.response


def _reclassified(c: Clause) -> bool:
    """A claim that the thing is of another class than the reply said: "it's a fruit" after "a tomato is a
    vegetable"."""
    claimed = _CLASSED.match(c.body)
    if not claimed or claimed.group("noun") in c.turn.response_words or is_approving(claimed.group("noun")):
        return False
    return any(noun != claimed.group("noun") for noun in _REPLY_CLASS.findall(c.turn.response))


# A word or a value closed by an asterisk, the chat convention for a correction: "da vinci*", "56*" (not "*sigh*").
_STARRED = re.compile(r"^(?!\*)(?P<what>[^*]{1,40}?)\s*\*$")


def starred(c: Clause) -> bool:
    """A reply of a few words closed by an asterisk sets them in place of the reply's ("da vinci*" after
    "Michelangelo", "56*" after "54") — unless they are all the reply's own, approve or acknowledge ("thanks*")."""
    marked = _STARRED.match(c.text.strip())
    words = words_of(normalise(marked.group("what"))) if marked else []
    if not words or len(words) > 3 or any(is_approving(w) or w in BRIEF or w in FILLER for w in words):
        return False
    return not all(w in c.turn.response_words or w in c.turn.response_numbers for w in words)


# A certainty closing a claim that approves nothing: "the Pacific is bigger by a lot i'm fairly sure".
_CLOSING_CERTAINTY = re.compile(r"\w \w+,? (?:i'm|i am) (?:pretty|fairly|quite|100%|very) sure$")


def value_contrast(body: str) -> bool:
    """ "X, not Y" (`VALUE_CONTRAST`) — not a verb phrase denied after a statement ("best I've made, not kidding",
    "it's up and not going anywhere"): a progressive after "not" sets a value only against another ("baking, not
    frying")."""
    contrast = VALUE_CONTRAST.search(body)
    if not contrast:
        return False
    pair = re.match(r"([\w'%.-]+)\s*,?\s+(?:and )?not\s+(?:the |a |an |in )?([\w'%.-]+)", contrast.group())
    return not (pair and pair.group(2).endswith("ing") and not pair.group(1).endswith("ing"))


def value(c: Clause) -> bool:
    """A value other than the reply's: "X, not Y", a number or name the reply lacks, "I get 42", the user's own
    equation with another result ("so 2×9+4 = 22"), "pretty sure …",
    "surely" (asked or not: "Pretty sure that was Austen?" still asserts).

    A number or name stated in passing is no correction when it is the user's own circumstance ("It's for my son's
    party on Friday.") or sets up a question the message goes on to ask (`Clause.setup`: "Ben has 30 marbles and
    loses 8. How many are left?")."""
    if value_contrast(c.body) or _CONTRADICTS.search(c.body):
        return True
    if _CLOSING_CERTAINTY.search(c.body) and not approves(c):
        return True
    belief = _TRAILING_BELIEF.match(c.body)
    if belief and not c.setup:  # "16 I thought?": the claim, its hedge after it
        return value(Clause.of(belief.group("claim"), c.turn))
    hedged = _HEDGED.match(c.text.strip())
    if hedged and not c.setup:  # "I think it might be 212°F?": the claim, hedged, asked or not
        return value(Clause.of(c.text.strip()[hedged.end() :].rstrip("?"), c.turn))
    if _OWN_RESULT.match(c.body) and numbers(c.body) - c.turn.response_numbers and not c.setup:
        return True  # "I get 42." against a reply that said 41; asked ("i got 4?") it still states the result
    if c.question:
        return False
    reported = _REPORTED.match(c.text.strip())
    if reported and not c.setup:  # "the catalogue says it was Austen": the claim, set against the reply
        claim = Clause.of(c.text.strip()[reported.end() :], c.turn)
        return value(claim) or _reclassified(claim)
    if order(c) or changed_value(c):
        return True
    t = c.turn
    if _USERS_OWN.match(c.body) or c.directive or c.new_step or c.setup or _CIRCUMSTANCE.search(c.body):
        return False
    if t.response_numbers and _more_like(c):
        return True  # "hard boiled is more like 10-12" against a reply that said 3 minutes
    short_statement = len(c.words) <= 8 and re.search(
        r"(?:'s|\b(?:is|was|are|were|it|that|this|wrote|made|did|said))\b", c.body
    )
    names = [
        w.lower()
        for w in re.findall(r"(?<=\s)[A-Z][\w'-]+", " " + c.text.split(" ", 1)[-1])
        if not re.match(r"I(?:'\w+)?$", w)
    ]
    if not t.dated:
        names = [n for n in names if n not in CALENDAR]  # "The wedding is in June." after a reply with no date
    else:  # a day or a month is a name however it is typed ("it's a wednesday"), but "may" and "march" are verbs too
        names += [w for w in c.words if w in CALENDAR and w not in ("may", "march")]
    if short_statement and any(
        n not in t.response_words and n.removesuffix("'s") not in t.response_words for n in names
    ):
        return True  # "It was Jane Austen." against a reply that named someone else
    if not t.response_numbers:
        return False
    equation = _EQUATION.match(c.body)
    if equation:  # "so 2×9+4 = 22" against a reply that made it 26
        return not numbers(equation.group(1)) <= t.response_numbers
    if _FULL_DEGREE.fullmatch(c.body) and not re.search(r"%|\bper ?cent", c.turn.response):
        return False  # "100%" after a reply with no percentage: agreement (`outcomes.agreement`), not a value
    quantity = _QUANTITY_IN.match(c.body)
    if quantity and _of_the_turn(quantity.group("of"), t) and (units(c.body) or quantity.group("what") in t.request):
        return not numbers(quantity.group("n")) <= t.response_numbers  # "16 tbsp in a cup" against "12 tablespoons"
    if STATED_VALUE.search(c.body):  # the clause is a value: "It's 42.", "eight", "so 33.3%"
        return not numbers(c.body) <= t.response_numbers | _short_years(t.response_numbers)
    copula = _COPULA.search(c.body)
    predicate = words_of(c.body[copula.end() :]) if copula else []
    if predicate and all(is_approving(w) or w in INTENSIFIERS for w in predicate):
        return False  # "38 is fine": a value of the user's, approved
    length = len(words_of(re.sub(r"(?<=\d)\.(?=\d)", "", c.body)))  # "8.5" is one word
    if length <= 8 and copula and _of_the_turn(c.body[: copula.start()], t):  # "ISO would be 2024-03-05."
        stated = numbers(c.body, spelled=False)
        return bool(stated) and not stated <= t.response_numbers  # "6 x 7 is 42." against "6 x 7 = 24"
    return False


_COPULAS = {"is", "are", "was", "were", "it's", "that's", "he's", "she's", "they're", "isn't", "wasn't", "aren't"}
# An order stated between two things: "pear goes after lime", "the salt goes in after the flour".
_ORDER = re.compile(
    r"^(?:the )?([\w-]+)(?: \w+)? (?:comes?|goes|go|came|went|is|are|was|should (?:come|go|be)"
    r"|needs to (?:come|go|be))"
    r"(?: in)? (?:(?:just|right|directly|immediately|way) )?(before|after|ahead of|in front of|behind|earlier than"
    r"|later than) (?:the )?([\w-]+)\b"
)


_FULL_DEGREE = re.compile(r"(?:100|a hundred|one hundred) ?(?:%|percent|per cent)")
# A quantity stated of the turn's thing: "16 tbsp in a US cup", "about 40 calories per slice".
_QUANTITY_IN = re.compile(
    r"^(?:(?:about|around|roughly|more like|closer to|exactly|only|just) )?(?P<n>\d[\d.,/]*|"
    + SPELLED.pattern
    + r") ?(?P<what>[a-z°%][\w°-]*) (?:in|per|to|for|a|an|each) (?P<of>[\w' -]+)$"
)


def order(c: Clause) -> bool:
    """An order stated between two things the reply put the other way round: "pear goes after lime" after a
    list with pear before lime. The same order as the reply's, or things it did not name, is no correction."""
    said = _ORDER.match(c.body)
    if not said:
        return False
    first, relation, second = said.groups()
    if relation in ("after", "behind", "later than"):
        first, second = second, first
    a = re.search(rf"\b{re.escape(first)}\b", c.turn.response)
    b = re.search(rf"\b{re.escape(second)}\b", c.turn.response)
    return bool(a and b) and b.start() < a.start()


def _short_years(stated: frozenset[str]) -> frozenset[str]:
    """The years among numbers written as their last two digits ("45" for 1945, "'07" for 2007): a user restating a
    year writes it so."""
    return frozenset(n[-2:] for n in stated if re.fullmatch(r"1[5-9]\d\d|20\d\d", n))


_SUM_WORDS = {"times", "plus", "minus", "divided", "over", "squared", "cubed", "root", "percent", "half", "twice"}
_POINTERS = {"it", "that", "this", "these", "those", "they", "the", "your", "which", "actually", "that's", "it's"}


def _of_the_turn(subject: str, t: TurnContext) -> bool:
    """Whether a statement's subject is the reply or what the turn is about: a pronoun, a part of the reply, a sum,
    a word of the request or the reply ("ISO would be …" after a request for ISO format) — not something else the
    user brings up ("The kids are 8 and 9.")."""
    said = t.request | t.response_words | REPLY_PARTS | _SUM_WORDS | _POINTERS | set(NUMBER_WORDS)
    words = re.findall(r"[a-z][\w'-]*", subject)
    return all(len(w) <= 3 or w in said or w + "s" in said or w.removesuffix("s") in said for w in words)


def actually(c: Clause) -> bool:
    """A statement with "actually" as a disjunct that approves nothing sets the reply right: opening or closing the
    clause, or after its copula ("He doesn't drink, actually.", "It's actually a fruit."). Between a subject and its
    verb ("that actually helps me", "the kids actually liked it") or in a relative ("what my budget actually allows")
    it stresses, like "really"; before a question asked next ("actually, new thing: can you …?") it turns to something
    new."""
    words = words_of(normalise(c.text))
    if c.question or c.setup or c.directive or "actually" not in words or approves(c):
        return False
    i = words.index("actually")
    return i == 0 or i == len(words) - 1 or words[i - 1] in _COPULAS or words[i - 1].endswith("'s")


# The reply's language named ("that's French", "this is in Python") or a language asked for ("I need JS").
_REPLY_LANGUAGE = re.compile(
    r"^(?:that|this|it|these|the [\w-]+)(?:'s| is| was| are)(?: all| just| still| obviously| clearly)?"
    r"(?: (?:in|written in))? ([\w+#-]+)(?: (?:lol|haha|though|tho|again|obviously|not [\w+#-]+))?$"
)
_WANTED_LANGUAGE = re.compile(
    r"^(?:i|we) (?:need|needed|want|wanted|asked for|said)(?: it| this| that)?(?: in)? ([\w+#-]+)(?: please)?$"
)


_WORD_LANGUAGE = re.compile(r"^['\"]?([\w'-]+)['\"]? (?:is|'s|means)(?: (?:in|actually|just|from))? ([\w+#-]+)$")


def language(c: Clause) -> bool:
    """The reply's language set against the one the request named: the reply's named as another ("that's French"
    after a request for Spanish, "this is Python" after one for JavaScript), or the request's asked for again ("I
    need JS" after "… in JavaScript"). A language named when the request named none is information, not a fault."""
    asked = c.turn.languages
    if c.question or not asked:
        return False
    said = _REPLY_LANGUAGE.match(c.body)
    if said and said.group(1) in LANGUAGES and LANGUAGES[said.group(1)] not in asked:
        return True
    word = _WORD_LANGUAGE.match(c.body)  # "hola is spanish" after a request for Italian: the reply's word
    said_words = {w.strip("'") for w in c.turn.response_words}
    if word and word.group(1) in said_words and word.group(1) not in LANGUAGES:
        if word.group(2) in LANGUAGES and LANGUAGES[word.group(2)] not in asked:
            return True
    wanted = _WANTED_LANGUAGE.match(c.body)
    return bool(wanted) and LANGUAGES.get(wanted.group(1)) in asked


def unit(c: Clause) -> bool:
    """A unit of measure set against the reply's unit of the same measure, named without a number of its own, opening
    the clause or after per / in / to: "km per SECOND" after "km per hour", "Celsius, obviously" after "38.5°F". A
    quantity with its unit is `value`'s; a quantity ("so a year" after "12 months"), a question, a request, a step
    forward or the user's own statement ("I ran for an hour") is not this."""
    if c.question or c.new_step or c.directive or len(c.words) > 6 or _USERS_OWN.match(c.body) or numbers(c.body):
        return False
    if re.search(r"\b(?:a|an|one|half|few|couple of|several|many) [a-z]+$", c.body):
        return False  # "so a year": a quantity, the reply's restated in another unit
    measures = {measure for _, measure in c.turn.units}
    named = " ".join(re.findall(r"(?:^|\b(?:per|in|into|to) )([a-z°]+)", c.body))  # "the second" is no unit
    return any(measure in measures for _, measure in units(named) - c.turn.units)


# A list of values stated for a subject: "every two weeks would be Mar 17, Mar 31 and Apr 14", "the first three are 2,
# 4 and 8" (the clause split would read each item apart).
_VALUE_LIST = re.compile(
    r"^(?P<subject>[\w' -]+?) (?:is|are|was|were|would be|should be|will be|'s) (?P<items>(?:[\w$%.°/:-]+ ?){1,3}"
    r"(?:, (?:[\w$%.°/:-]+ ?){1,3})*,? and (?:[\w$%.°/:-]+ ?){1,3})$"
)


def value_list(sentence: str, turn: TurnContext) -> bool:
    """A sentence stating a list of values for the turn's subject, each with a number, not all the reply's: "every two
    weeks would be Mar 17, Mar 31 and Apr 14" after a reply that listed Mar 10, 17 and 24. The user's own things ("my
    kids are 8, 9 and 12") are context."""
    listed = _VALUE_LIST.match(normalise(sentence).rstrip(".!"))
    if not listed or not turn.response_numbers or _USERS_OWN.match(listed.group("subject")):
        return False
    items = re.split(r",? and |, ", listed.group("items"))
    if len(items) < 2 or not all(numbers(item, spelled=False) for item in items):
        return False
    stated = numbers(listed.group("items"), spelled=False)
    return _of_the_turn(listed.group("subject"), turn) and not stated <= turn.response_numbers
