"""Constructions of the rule judge's reading (`claw.judge.reading`) added against the errors of a development set, each
with counter-cases that must not fire, on replies written for this test: follow-ups that ask rather than correct
(a yes/no question about the user's own step, a request to say more, an indirect question, another case, a
supposition), corrections put as a need, a version, a tag or a premise, and approvals told as a result, a reaction, a
use or an understanding.
"""

import pytest

from claw.judge.rule import read_feedback as read

ROUTER = ("How do I reset my router?", "Hold the reset button for 10 seconds.")
SQL = (
    "Explain this SQL join",
    "SELECT ... LEFT JOIN keeps every row of the left table; the second step filters NULLs.",
)
CACTUS = ("How much water should a cactus get?", "Water it every two weeks in summer.")
PANCAKES = ("Pancakes for four", "2 cups flour, 2 eggs, 1.5 cups milk.")

FOLLOW_UPS = [
    # a yes/no question about the user's own step, its mark typed or not; "can we …" asks of the reply
    (*ROUTER, "should I unplug the modem as well", 0),
    (*ROUTER, "do I need to update the firmware first", 0),
    ("Plan a gym schedule", "Five days a week, an hour each.", "can we do it in two days instead?", -1),
    # a request to say more about a part; a manner after "more" asks for a change
    (*SQL, "could you explain the second step a bit more?", 0),
    (*SQL, "could you expand on the second step?", 0),
    (*SQL, "can you explain it more simply?", -1),
    # an indirect question put as "tell / remind me how …"; "tell me just …" constrains the reply
    (
        "How does modulo work?",
        "a % b is the remainder of a divided by b.",
        "can you remind me how the negative case works?",
        0,
    ),
    ("What is 17 * 23?", "17 * 23: 17*20=340, 17*3=51, total 391.", "can you tell me just the final number?", -1),
    # whether the reply holds for another case; "would it be better …" asks for a change
    (*CACTUS, "would it be any different in winter?", 0),
    (*CACTUS, "is it the same for succulents?", 0),
    (*CACTUS, "would it be better as a short list?", -1),
    # a supposition of the user's own: the request in it is asked about that case; without it, it stands
    (*PANCAKES, "what if we're eight people, just double it?", 0),
    (*PANCAKES, "we're eight people, just double it?", -1),
    # a thanks dated before this turn is for an earlier exchange
    ("Ideas for a team lunch", "Tacos, a picnic, or a pizza place.", "thanks for the tips last week btw", 0),
    ("Ideas for a team lunch", "Tacos, a picnic, or a pizza place.", "thanks for the tips", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", FOLLOW_UPS)
def test_follow_ups_that_ask_stay_neutral(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


NOTE = ("Write a note to my neighbour about the fence", "Hi Tom, the fence needs fixing.")
OUNCES = "How many ounces in a cup?"

CORRECTIONS = [
    # "did you even …" typed without its mark; another "did you …" asks nothing
    ("Summarise this article on coral reefs", "The article is about the ocean.", "did you even open it", -1),
    ("Summarise this article on coral reefs", "The article is about the ocean.", "did you enjoy writing it", 0),
    # a version of the reply of a given length asked for ("can I get / could I have …"); something new is no edit
    (
        "Explain photosynthesis",
        "Photosynthesis is how plants turn light into sugar, using chlorophyll and water in many steps.",
        "could I have a one-paragraph version?",
        -1,
    ),
    ("Explain photosynthesis", "Plants turn light into sugar.", "can I get a recipe for scones too?", 0),
    # a verb of arranging with the reply as object; the same word as a noun
    ("List some laptops", "ThinkPad X1 $1400, MacBook Air $999, Dell XPS $1200", "can you arrange it by price?", -1),
    ("List some laptops", "ThinkPad X1 $1400, MacBook Air $999, Dell XPS $1200", "my study group meets on fridays", 0),
    # the form the user needs the reply in; a deadline or a purpose is no form
    (*NOTE, "I need it in German", -1),
    (*NOTE, "we want them as a table", -1),
    (*NOTE, "I need it in an hour", 0),
    (*NOTE, "I need it for tomorrow", 0),
    # what the request named and the reply left out, needed; named by the reply too, it asks nothing
    ("Cafes in Lisbon with wifi", "Try Majestic in Porto and Combi Coffee near the Ribeira.", "I need Lisbon", -1),
    ("Cafes in Lisbon with wifi", "Try Fabrica in Lisbon and Hello Kristof.", "I need Lisbon", 0),
    # a kind of thing wanted instead; something new, asked about next, is not
    ("Slogan for my tea shop", "Tea-riffic Times! Spill the Tea!", "I want something plain and elegant", -1),
    ("Slogan for my tea shop", "Steeped in calm.", "I want something to read on the plane, any ideas?", 0),
    # a premise, then "so" and a claim; a claim the reply made is no correction
    (
        "Substitute for wheat flour in cookies?",
        "Use rye flour, 1:1.",
        "I'm allergic to gluten so it should be almond flour right?",
        -1,
    ),
    (
        "Substitute for wheat flour in cookies?",
        "Use rye flour, 1:1.",
        "I'm allergic to gluten so it should be rye flour right?",
        0,
    ),
    # a claim with a tag: a quotation or a value the reply lacks corrects, the reply's own checks it
    ("How do I add 48 + 37?", "Add the tens, then the ones: 70 + 15 = 85.", "it's 'carry the one' isn't it?", -1),
    ("How do I add 48 + 37?", "Add the ones, carry the one, then the tens.", "it's 'carry the one' isn't it?", 0),
    ("How do I add 48 + 37?", "Add the tens, then the ones: 70 + 15 = 85.", "it's 85 isn't it?", 0),
    # a quantity stated of the turn's thing; the reply's own quantity, or one of the user's own things, is not
    (OUNCES, "There are 6 ounces in a cup.", "8 oz in a cup", -1),
    (OUNCES, "There are 8 ounces in a cup.", "8 oz in a cup, got it", 1),
    (OUNCES, "There are 6 ounces in a cup.", "8 oz in my mug", 0),
    # "100%" alone agrees, unless the turn is about a percentage
    ("Is it worth backing up my photos?", "Yes: drives fail, and a second copy costs little.", "100%", 1),
    ("What share of voters turned out?", "Turnout was 80%.", "100%", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", CORRECTIONS)
def test_corrections_put_as_needs_versions_tags_and_quantities(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_needed_form_and_a_tagged_claim_are_their_own_hints():
    assert read(*NOTE, "I need it in German") == (-1, "I need it in German")
    score, hint = read("How do I add 48 + 37?", "Add the tens, then the ones.", "it's 'carry the one' isn't it?")
    assert score == -1 and hint is not None and "carry the one" in hint


TOAST = ("Write a toast for my sister", "To Maya, who taught me to laugh at myself.")
PACKING = ("Make a packing list", "Passport, charger, socks, sunscreen.")
YAML = ("Why won't this YAML load?", "You have a stray bracket after the key.")

APPROVALS = [
    # nothing better possible, said with a verb of saying
    (*TOAST, "couldn't have put it better", 1),
    # the reply put to use: its object left out before whom it goes to, or done with a particle; an order is not
    (*TOAST, "forwarding to my brother", 1),
    (*PACKING, "printed it out and taped it to the door", 1),
    (*PACKING, "tried it on my laptop", 0),  # a past form opening a clause reports, it orders nothing
    (*PACKING, "print it out in bold", -1),
    # understanding arriving; one that never came finds fault
    ("Why do we have leap years?", "Because a year is about 365.25 days.", "oh that finally clicks", 1),
    ("Why do we have leap years?", "Because a year is about 365.25 days.", "it never clicked", -1),
    # an alternative chosen by its label, only when the reply offered it
    ("Which phone plan?", "Plan 1 is $30 with 5GB; plan 2 is $45 unlimited.", "I'll go with plan 2", 1),
    ("Which phone plan?", "Plan 1 is $30 with 5GB; plan 2 is $45 unlimited.", "I'll go with plan 3", 0),
    # what was acted on working, with a word of how; still failing corrects
    ("My bluetooth speaker keeps dropping", "Forget the device and pair it again.", "it connects fine now", 1),
    ("My bluetooth speaker keeps dropping", "Forget the device and pair it again.", "it still doesn't connect", -1),
    # someone the reply was for, answering well; a refusal or laughter at the user approves nothing
    ("Email my landlord asking for a pet", "Dear Mr Ruiz, could I keep a small cat?", "my landlord said yes", 1),
    ("Email my landlord asking for a pet", "Dear Mr Ruiz, could I keep a small cat?", "my landlord said no", 0),
    ("Write a joke for my class", "Why did the atom break up? No chemistry.", "they laughed at me", 0),
    # what the user said, in a clause of time, narrates; "when I said short I meant …" or "X when I asked for Y"
    # restates the request
    ("How do I say cheers in Polish?", "Na zdrowie.", "my aunt laughed when we told her", 1),
    ("How do I say cheers in Polish?", "Na zdrowie.", "the waiter nodded when I said it", 0),
    (
        "Write a haiku",
        "Autumn leaves descend, a long essay of colour across the quiet lawn ...",
        "a whole essay when I asked for three lines",
        -1,
    ),
    (
        "Write a short bio",
        "Sam is a designer with years across agencies, startups and studios ...",
        "when I said short I meant two lines",
        -1,
    ),
    # the user's own trouble, past, after a result; a part of the reply so described is a fault
    (*YAML, "that fixed it. the stray bracket was driving me mad", 1),
    (
        "Why won't this YAML load?",
        "YAML is a data format with keys and values.",
        "the explanation was confusing me",
        -1,
    ),
    # an approval restated after a contrast, its verb elided; the elided denial corrects
    ("My sourdough won't rise", "Feed the starter twice a day.", "no clue how that worked, but it did", 1),
    ("My sourdough won't rise", "Feed the starter twice a day.", "it should have worked, but it didn't", -1),
    # "the <noun> I was going for"; denied, it corrects
    (
        "Reply to my aunt, warm and short",
        "Dear Aunt Jo, thank you for the scarf!",
        "that's the feel I was going for",
        1,
    ),
    (
        "Reply to my aunt, warm and short",
        "Dear Aunt Jo, thank you for the scarf!",
        "that's not the feel I was going for",
        -1,
    ),
    # a name the reply gave in quotation marks is the reply's own word
    ("Name my poetry podcast", "Try 'The Quiet Fox' or 'Inkwell Hour'.", "Inkwell Hour is perfect", 1),
    # a fault word inside a name the reply gave is the name; the same word as a verdict still finds fault
    ("Name my poetry podcast", "Try 'The Lazy Fox' or 'Inkwell Hour'.", "The Lazy Fox is perfect", 1),
    ("Name my poetry podcast", "Try 'The Lazy Fox' or 'Inkwell Hour'.", "Inkwell Hour is lazy", -1),
    ("Who wrote The Accidental Tourist?", "It was written by 'John Updike'.", "It was Anne Tyler.", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", APPROVALS)
def test_approvals_told_as_a_result_a_reaction_a_use_or_an_understanding(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score
