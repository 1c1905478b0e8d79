"""General constructions of the rule judge's reading (`claw.judge.reading`), each with a counter-case, on replies
written for this test: an approval that says its praise through a negation, a source, a use or a noun; a correction
put as an order, a source, a shout, a unit, a trailing "though"; and the follow-ups whose fault words are said of
something else.
"""

import pytest

from claw.judge.rule import read_feedback as read

HAIKU = ("Write a haiku about rain.", "Soft rain on the roof / the gutters hum a low song / puddles hold the sky")
MARS = ("Tell me about Mars.", "Mars is the fourth planet and looks red because of iron oxide dust.")

APPROVALS = [
    # an approving verb over a clause: a negation inside it is part of what is liked
    (*HAIKU, "I like that it doesn't force a rhyme", 1),
    (*HAIKU, "really appreciate that you kept it to three lines", 1),
    (*HAIKU, "thanks for not making it cheesy", 1),
    (*HAIKU, "love how you ignored the syllable count", -1),  # a failing said there: sarcasm, still a correction
    # nothing better possible
    (*MARS, "I couldn't wish for a clearer explanation", 1),
    (*MARS, "could not have asked for anything better, cheers", 1),
    # the reply singled out by what follows; a relative clause denying its working still corrects
    (*MARS, "this is the first summary that didn't put me to sleep", 1),
    (*MARS, "it's the only part that doesn't make sense", -1),
    # what the user lacked, supplied; relief at having asked
    (*MARS, "the iron oxide bit is what I was missing", 1),
    (*MARS, "so glad I checked before my quiz", 1),
    # a noun of praise, a high rating, the reply put to use
    (*MARS, "this page is gold", 1),
    (*MARS, "honestly a keeper", 1),
    (*MARS, "8/10, learned something", 1),
    (*MARS, "forwarding it to my nephew", 1),
    (*MARS, "I'm saving this for my class", 1),
    (*MARS, "slides updated and shared", 1),  # what was acted on, then its participle
    # another source agreeing with the reply
    (*MARS, "that's what my old textbook said too", 1),
    # an adverb of degree or truth between the copula and the approving word
    (*MARS, "ok that's genuinely neat", 1),
    # idioms of "no" that deny nothing; a fault the user owns; pity
    (*MARS, "no idea it was dust, thanks", 1),
    (*MARS, "I always make that mistake, thanks for clearing it up", 1),
    (*MARS, "point taken, poor mars", 1),
    (*MARS, "no, that's not right", -1),
    (*MARS, "poor explanation", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", APPROVALS)
def test_approvals_said_without_a_plain_approving_word(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


CORRECTIONS = [
    # an order stated against the reply's; the same order is no correction
    ("Sort these alphabetically: pear, fig, lime", "pear, fig, lime", "pear goes after lime", -1),
    ("Sort these alphabetically: pear, fig, lime", "fig, lime, pear", "fig goes before lime", 0),
    # a claim reported from a source, read as the claim
    ("Who wrote Emma?", "Emma was written by Charlotte Bronte.", "the library catalogue says it was Jane Austen", -1),
    # a statement closed by "though"; an approval or the user's own plan so closed is no correction
    ("Is 57 prime?", "Yes, 57 is prime.", "57 = 3 × 19 though", -1),
    ("Is 57 prime?", "No, 57 = 3 × 19.", "thanks though", 1),
    ("Is 57 prime?", "No, 57 = 3 × 19.", "I'll check it myself though", 0),
    # a word of the request typed again in capitals; an all-capital clause stresses no word
    (
        "Write a short bio for my profile",
        "Jordan is a designer who, over a long and varied career, ...",
        "SHORT, please",
        -1,
    ),
    (
        "Give me a riddle for teenagers",
        "What has keys but no locks? A piano.",
        "ha, for TEENAGERS, that's baby stuff",
        -1,
    ),
    ("Give me a riddle for teenagers", "What has keys but no locks? A piano.", "THANKS A LOT", 1),
    # a unit asked for of a measure the reply gave in another unit
    ("Bread oven temperature?", "Bake at 430°F.", "can you put that in celsius?", -1),
    # a multiple of a limit
    ("Recommend a phone under $300", "The Pixel 8 Pro at $999.", "that's three times my budget", -1),
    # the state the user wants, the claim the user believes, what would have done
    (
        "How do I cancel my gym membership, not freeze it",
        "Go to Settings and choose Freeze.",
        "I want it cancelled",
        -1,
    ),
    ("How many seconds in 3 minutes?", "There are 120 seconds.", "I think it should be 180.", -1),
    ("How many seconds in 3 minutes?", "There are 180 seconds.", "I think that would work, thanks", 1),
    ("What's 3+3, just the number", "Adding three and three gives six, because ...", "one digit would have done", -1),
    # a part the request named and the reply left out, asked after; another case is new
    ("Capitals of Peru and Chile?", "Lima is the capital of Peru.", "and chile?", -1),
    ("Capitals of Peru and Chile?", "Lima (Peru), Santiago (Chile).", "and bolivia?", 0),
    # a bare name with the asterisk of a chat correction, or asked back
    ("Capital of Australia?", "The capital of Australia is Sydney.", "Canberra*", -1),
    ("Largest planet?", "The largest planet is Saturn.", "Jupiter?", -1),
    # the reply's word said to be of another language than the one asked
    ("How do I say 'hello' in Italian?", "In Italian: 'Hola'.", "hola is spanish", -1),
    ("How do I say 'hello' in Italian?", "In Italian: 'Ciao'.", "ciao is italian, nice", 1),
    # "I said just …": what the user said they wanted
    ("Only the total, no working: 12 + 30 + 8", "12 + 30 = 42, then 42 + 8 = 50.", "I said just the total", -1),
    # laughter closing a clause says nothing
    ("Synonyms for big?", "Large, huge, tiny.", "tiny is the opposite haha", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", CORRECTIONS)
def test_corrections_put_as_orders_sources_shouts_and_contrasts(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_trailing_though_and_a_source_give_the_statement_as_the_hint():
    assert read("Is 57 prime?", "Yes, 57 is prime.", "57 = 3 × 19 though") == (-1, "57 = 3 × 19 though")
    score, hint = read("Who wrote Emma?", "Emma was written by Bronte.", "my teacher says it was Austen")
    assert score == -1 and hint is not None and "Austen" in hint


ICE = ("Best month to visit Iceland?", "June to August, when the roads are open and the days are long.")
NEUTRAL = [
    # a fault word said of what a question asks about: the degree, another thing, an alternative
    (*ICE, "how windy does it get in June?"),
    (*ICE, "are the hot springs any good in really bad weather?"),
    (*ICE, "is a camper van worth renting instead or is that excessive for a week"),
    # "is it true that …" asks about a new claim
    (*ICE, "is it true that the ring road floods?"),
    # "actually" that stresses, or turns to something new
    (*ICE, "hm let me see what my budget actually allows"),
    (*ICE, "actually, different question: what should I pack?"),
    # a condition, small talk about the assistant, a mood about the user's own day, an occasion
    (*ICE, "do I even need a car if the tour doesn't leave the city?"),
    (*ICE, "do you ever wish you could travel?"),
    (*ICE, "ok. flights are booked, and I still have to sort the hotel 😩"),
    (*ICE, "it's my first time up north!"),
    # a wh-question typed without its mark approves nothing
    (*ICE, "what does the midnight sun look like exactly"),
    # the user's own vow, the user's motive
    (*ICE, "never again will I book a trip this late"),
]


@pytest.mark.parametrize("request_,response,reply", NEUTRAL)
def test_fault_words_said_of_something_else_stay_neutral(request_, response, reply):
    assert read(request_, response, reply)[0] == 0


def test_a_check_and_a_value_taken_up_stay_with_the_approval():
    assert read("What's 15% of 80?", "12.", "yep, same as mine, just wanted to double check")[0] == 1
    assert read("What's 15% of 80?", "12.", "I just wanted the number")[0] == -1  # what the user wanted
    assert read("Convert 350F for my oven", "About 177°C; most ovens use 175.", "great, set it to 175, thanks")[0] == 1
    assert read("Convert 350F for my oven", "About 177°C; most ovens use 175.", "set it to 180")[0] == -1
    assert read("When did the Berlin Wall fall?", "In 1989.", "right, 89. thanks")[0] == 1  # the year, shortened
    assert read("When did the Berlin Wall fall?", "In 1989.", "it was 91")[0] == -1
