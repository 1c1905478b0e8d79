"""Constructions of the rule judge's reading (`claw.judge.reading`) added against the errors of a development set
(heldout7), each with counter-cases that must not fire, on replies written for this test: values set right as a
belief whose claim names its subject or holds "actually", a result of the user's own asked, a certainty closing the
claim, "supposed to be"; corrections told by a determiner that denies the whole reply; approvals told as a result
with an adverb or a time, litotes, a brief word typed stretched, an adjective of interest, a past report with a
simile; and the user's time gone by, feeling, manners question, weighed thing or question typed without its mark
read as no verdict.
"""

import pytest

from claw.judge.rule import read_feedback as read

FREEZING = ("What's the freezing point of water in Fahrenheit?", "Water freezes at 0°F.")
VOYAGE = ("When did Columbus first reach the Americas?", "Columbus first reached the Americas in 1500.")
ALGEBRA = ("Solve 3x + 3 = 12.", "x = 5.")
CUPS = ("How many teaspoons in a tablespoon?", "There are 2 teaspoons in a tablespoon.")
DESERT = ("What's the largest hot desert?", "The Gobi is the largest hot desert.")
LIMERICK = ("Write a limerick about a cat.", "A cat sat on a mat and was fat, it wore a big hat.")
ITINERARY = ("Plan a day in Lisbon.", "Morning: Big Ben. Afternoon: the London Eye.")
SLOGAN = ("A slogan for my bakery?", "Rise and shine with every bite.")

VALUES = [
    # a belief whose claim names its subject, or holds "actually" between the modal and "be"
    (*VOYAGE, "I believe Columbus was in 1492.", -1),
    (*VOYAGE, "I believe Columbus was in 1500.", 0),
    (*VOYAGE, "I believe Columbus was brave.", 0),
    (*FREEZING, "hmm I think it might actually be 32°F?", -1),
    (*FREEZING, "I think it might actually be 0°F?", 0),
    # the user's own result, asked: it still states a result against the reply's
    (*ALGEBRA, "i got 3?", -1),
    (*ALGEBRA, "i got 5?", 0),
    # a certainty closing the claim, as well as opening it
    (*DESERT, "the Sahara is way bigger i'm pretty sure", -1),
    (*DESERT, "the gobi one looks right i'm pretty sure", 1),
    # the belief typed after its claim
    (*CUPS, "3 I thought? 2 is a dessert spoon", -1),
    (*CUPS, "2 I thought", 0),
    # "supposed to be", a modal of what the reply should have been
    (*LIMERICK, "it's supposed to be five lines", -1),
    ("How do I cook quinoa?", "Simmer 1 cup in 2 cups of water for 15 minutes.", "what am I supposed to do after?", 0),
]


@pytest.mark.parametrize("request_,response,reply,score", VALUES)
def test_values_set_right_as_a_named_belief_an_asked_result_a_closing_certainty_or_supposed_to(
    request_, response, reply, score
):
    assert read(request_, response, reply)[0] == score


CORRECTIONS = [
    # a determiner that denies the whole reply, its verdict after
    (*ITINERARY, "haha what. none of this is correct", -1),
    (*ITINERARY, "none of it works for lisbon", -1),
    # not an approval denied: a question about the reply's things finds nothing of it wrong
    (*ITINERARY, "none of these are open on mondays?", 0),
    # a failing with its subject left out, said of the reply or of what the request asked
    (*ITINERARY, "wow. totally missed the point", -1),
    (*ITINERARY, "kinda misread the plan there", -1),
    (*ITINERARY, "missed the bus this morning so going tomorrow", 0),
    # something left out, its subject elided, asked or not; the user's own forgetting is not
    ("SQL to count orders per shop?", "SELECT shop, COUNT(*) FROM orders;", "forgot the group by?", -1),
    ("SQL to count orders per shop?", "SELECT shop, COUNT(*) FROM orders GROUP BY shop;", "forgot my password lol", 0),
    ("When do the clocks go back?", "Last Sunday in October.", "yep that's it, forgot the date moves each year", 1),
    # less of the reply allowed, after a reply that gave more; the reply's own, accepted, is not
    (*SLOGAN, "just three words is fine, whatever suits a bakery", -1),
    (*SLOGAN, "that is fine", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", CORRECTIONS)
def test_corrections_told_by_a_determiner_that_denies_the_whole_reply(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_hedged_belief_and_an_asked_result_are_their_own_hints():
    assert read(*ALGEBRA, "i got 3? minus 3 gives 9, then divide by 3")[1].startswith("i got 3?")
    assert read(*VOYAGE, "I believe Columbus was in 1492.")[1] == "I believe Columbus was in 1492."


SCREW = ("How do I loosen a rusted bolt?", "Soak it in penetrating oil for an hour, then use a breaker bar.")
PANCAKES = ("How do I make fluffy pancakes?", "Separate the eggs and fold in the whipped whites last.")
CSS = ("How do I centre a div?", "Use display: flex with justify-content and align-items set to center.")
OCTOPUS = ("How many hearts does an octopus have?", "An octopus has three hearts.")

APPROVALS = [
    # a result verb with an adverb of manner or a time, or an exclamation closing it
    (*SCREW, "the oil one worked immediately", 1),
    (*SCREW, "penetrating oil worked last night!!", 1),
    (*SCREW, "the oil never worked", -1),
    # a past report with a simile is no request ("like a …" asks only of a fragment that is no report)
    (*PANCAKES, "worked great, puffed up like a cloud", 1),
    (*PANCAKES, "like a pro chef please", -1),
    # litotes: a verb of failing denied
    (*CSS, "this doesn't suck. thanks", 1),
    (*CSS, "this doesn't centre anything", -1),
    # a brief word typed with its last letter held
    (*CSS, "yesss", 1),
    (*CSS, "yepp", 1),
    (*CSS, "nooo", -1),
    # a noun of praise said of a part of the reply named by a compound, a candour marker closing it
    (*SCREW, "the penetrating oil tip is gold honestly", 1),
    (*SCREW, "the penetrating oil tip is gold?", 0),
    # an adjective of interest said of the reply
    (*OCTOPUS, "whoa. that's fascinating", 1),
    (*OCTOPUS, "is that fascinating to biologists?", 0),
    # "X, not Y" with a verb phrase denied after a statement sets no value; against another verb it does
    (*SLOGAN, "best slogan I've seen, not joking", 1),
    (*SLOGAN, "it should be about baking, not brewing", -1),
    (*SCREW, "bolt's out and not coming back", 0),
]


@pytest.mark.parametrize("request_,response,reply,score", APPROVALS)
def test_approvals_told_as_a_result_litotes_a_stretched_word_or_interest(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


STEPS = ("How much water should I drink a day?", "Around 2 litres a day is a common guideline.")
EMAIL = ("How do I sign off a formal email?", "'Kind regards' is a safe choice.")
SHEETS = ("What's a VLOOKUP?", "A spreadsheet function that finds a value in one column and returns one beside it.")
LOOPS = ("What's a list comprehension in Python?", "A compact way to build a list: [x * 2 for x in xs].")
WAIT = ("When should I chase a late invoice?", "Usually a week after the due date.")

NO_VERDICT = [
    # the time gone by for the user
    (*WAIT, "it's been 5 days. so wait till friday?", 0),
    (*WAIT, "it's 5 days, not a week", -1),
    # a feeling of the user's own after a hedge
    (*STEPS, "I'm running a half marathon on sunday, bit anxious tbh", 0),
    (*STEPS, "a bit vague tbh", -1),
    # whether an act in general has a quality, asked
    (*EMAIL, "also, is it weird to sign off with cheers?", 0),
    (*EMAIL, "isn't it rude?", -1),
    # a modal question whether a kind of thing suits; a comparison there asks a change
    (*SHEETS, "i've got two tabs of stock codes, would a vlookup be the way to go to match them?", 0),
    (*SLOGAN, "would a shorter one be better?", -1),
    # an existential question typed without its mark
    (*LOOPS, "is there anything like that in javascript or is it just map", 0),
    (*LOOPS, "this is great", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", NO_VERDICT)
def test_the_users_time_feeling_manners_question_or_weighed_thing_is_no_verdict(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score
