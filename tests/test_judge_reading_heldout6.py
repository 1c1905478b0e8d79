"""Constructions of the rule judge's reading (`claw.judge.reading`) added against the errors of a development set
(heldout6), each with counter-cases that must not fire, on replies written for this test: values set right as a
hedged belief, an estimate ("more like …"), an asterisk, a change the user made, a source's classification or a day
typed in lower case; corrections told by a closing "tho", a negative question, a quoted model; approvals told as
something learned, a guess borne out, the cause found, the thing asked for named, nothing wrong found; and the
user's own mood, effort, apology, plan or change of subject read as no verdict.
"""

import pytest

from claw.judge.reading import clauses, normalise
from claw.judge.rule import read_feedback as read

BATTLE = ("When was the Battle of Hastings?", "The Battle of Hastings was in 1067.")
CAPITAL = ("What's the capital of Portugal?", "The capital of Portugal is Porto.")
EGGS = ("How long to soft boil an egg?", "Boil it for 3 minutes.")
WHALE = ("Is a whale a fish?", "Yes, a whale is a fish that lives in the ocean.")
SHEET = ("Formula for the average of B2 to B20", "=AVERAGE(B2:B19)")
BIRTHDAY = ("What day is 1 May 2026?", "1 May 2026 falls on a Thursday.")
DERIVATIVE = ("Derivative of x^4?", "The derivative of x^4 is 4x^4.")
SHOES = ("EU 38 in UK sizes?", "EU 38 is a UK 3.")
AUTHOR = ("Who wrote War and Peace?", "War and Peace was written by Dostoevsky.")

VALUES = [
    # a value put as the user's belief, asked or not; the reply's own value checks it, a claim without one asks
    (*BATTLE, "I think it might be 1066?", -1),
    (*BATTLE, "hmm, I think it might be 1067?", 0),
    (*CAPITAL, "not 100% sure but I always thought it was Lisbon?", -1),
    (*CAPITAL, "I always thought it was Porto", 0),
    ("Will it rain in Leeds tomorrow?", "Showers are likely in the afternoon.", "I think it might ease off?", 0),
    # an estimate, of any subject, against the reply's; the user's own thing, or the reply's value, is not
    (*EGGS, "a runny yolk is more like 6 minutes", -1),
    (*EGGS, "a runny yolk is more like 3 minutes", 0),
    (*EGGS, "my commute is more like 40 minutes", 0),
    (
        "How long to roast a 1.5kg chicken?",
        "About 30 minutes at 200C.",
        "a bird that size is more like an hour and a quarter",
        -1,
    ),
    # a word or a value closed by an asterisk, the chat convention for a correction
    (*AUTHOR, "tolstoy*", -1),
    ("What's 9 x 6?", "9 x 6 = 56", "54*", -1),
    ("What's 9 x 6?", "9 x 6 = 54", "54*", 0),
    ("What's 9 x 6?", "9 x 6 = 56", "*sigh*", 0),
    # the reply's value changed by the user to another of its form; to the reply's own, or to another kind, is not
    (*SHEET, "changed it to B2:B20 and it adds up now", -1),
    (*SHEET, "changed it to B2:B19 like you said", 0),
    ("How do I change the theme?", "Settings, then Appearance, then Theme 2.", "switched it to dark mode", 0),
    # a source's classification against the reply's; the reply's own class is no correction
    (*WHALE, "my biology teacher said it's a mammal", -1),
    ("Is a whale a fish?", "No, a whale is a mammal.", "my biology teacher said it's a mammal", 0),
    # a day typed in lower case is a name like a capitalised one, after a reply that named a day
    (*BIRTHDAY, "it's a friday, I checked", -1),
    (*BIRTHDAY, "it's a thursday, I checked", 0),
    # a decimal is one word, so a short statement with one still reads as a value
    (*SHOES, "38 is around a UK 5.5 or 6", -1),
    # a power written on a value
    (*DERIVATIVE, "4x^3", -1),
    (*DERIVATIVE, "4x^4", 0),
]


@pytest.mark.parametrize("request_,response,reply,score", VALUES)
def test_values_set_right_as_a_belief_an_estimate_an_asterisk_a_change_or_a_source(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


PLANETS = ("Which planet has the most moons?", "Jupiter has the most moons.")
HAIKU = ("Write a haiku about rain", "Grey clouds gather\nDrops on the tin roof\nPuddles grow\nChildren splash")
PAN = ("Brownie batter for a 10-inch pan?", "Use the same amount of batter as for an 8-inch pan.")
TEXT = ("Text my friend that I'll be late", "Dearest Sam, I regret to inform you of my delayed arrival.")

CORRECTIONS = [
    # "tho" typed at the end of a clause sets the statement against the reply, like a lone "though"
    (*PLANETS, "saturn has more moons tho", -1),
    (*HAIKU, "a haiku is 3 lines tho, this has 4", -1),
    (*PLANETS, "thanks tho", 1),
    (*PLANETS, "I'll still read about jupiter tho", 0),
    # a negative question whose subject is "a" / "an"; a plain yes/no question asks
    (*PAN, "wouldn't a 10-inch pan need more batter?", -1),
    (*PAN, "is a 10-inch pan ok for cupcakes too?", 0),
    # a model of the reply in quotation marks; "something like that" (agreeing) is none
    (*TEXT, "just something like 'late, see you at 7'", -1),
    (*TEXT, "yeah something like that", 1),
    # a dot that opens a word is no sentence's end: ".env, not .ini" is one value set right
    ("Where do secrets go?", "Put them in config.ini.", "it's .env not .ini", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", CORRECTIONS)
def test_corrections_told_by_a_closing_tho_a_negative_question_or_a_model(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_colon_inside_a_range_or_a_time_splits_no_clause():
    assert clauses("set it to 10:30, thanks") == ["set it to 10:30", "thanks"]
    assert clauses("sum A1:A10 instead") == ["sum A1:A10 instead"]
    assert clauses("Note: the intro is long") == ["Note", "the intro is long"]
    assert normalise("it's .2f not .2d .") == "it's .2f not .2d."


def test_a_closing_tho_and_a_changed_value_are_their_own_hints():
    assert read(*PLANETS, "saturn has more moons tho")[1] == "saturn has more moons tho"
    assert read(*SHEET, "changed it to B2:B20 and it adds up now")[1] == "changed it to B2:B20 and it adds up now"


TERM = ("What's the term for a word that reads the same backwards?", "Palindrome.")
PRINTER = ("My printer shows offline", "Restart the print spooler service.")
OCEAN = ("Why is the sea salty?", "Rivers carry dissolved minerals from rocks into the sea.")

APPROVALS = [
    # something learned from the reply; the user undecided is not
    (*OCEAN, "TIL! never knew it came from rocks", 1),
    (*OCEAN, "didn't know that", 1),
    ("Which sofa should I buy?", "The grey one is sturdier; the blue one is cheaper.", "didn't know which to pick", 0),
    # a guess of the user's borne out
    (*OCEAN, "called it!", 1),
    (*OCEAN, "knew it", 1),
    # the cause found; asked, it is disappointment
    (*PRINTER, "phew, that was it", 1),
    (*PRINTER, "that was it?", -1),
    # the reply named as the thing the request asked for; another noun, or asked, is not
    (*TERM, "YES that's the term", 1),
    (*TERM, "that's the term?", 0),
    (*TERM, "that's the song my kid keeps humming", 0),
    # nothing wrong found, "I" left out; an edit forbidden is still a prohibition
    ("Check my sum: 17 + 25 = 42", "Yes, 17 + 25 = 42.", "don't see anything wrong", 1),
    ("Check my sum: 17 + 25 = 42", "Yes, 17 + 25 = 42.", "can't find anything wrong with it", 1),
    ("Check my sum: 17 + 25 = 42", "Yes, 17 + 25 = 42.", "I don't have anything else planned today", 0),
    ("Write a bio", "Jo is a baker. 🍞✨", "don't add any emojis", -1),
    # the relative word of "exactly what I needed" however it is typed; denied, it corrects
    (*PRINTER, "ty this is exactly wat i needed", 1),
    (*PRINTER, "this is exactly not what I needed", -1),
    # thanks in German
    (*PRINTER, "vielen Dank!", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", APPROVALS)
def test_approvals_told_as_learning_a_guess_borne_out_the_cause_or_the_thing_asked(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


SCHEDULE = ("How do I pin a message in Slack?", "Hover over it, click the three dots and choose Pin.")
KANJI = ("How do you write 'water' in Japanese?", "水 (mizu).")

NO_VERDICT = [
    # a grumble about something the turn is not about; about the reply, or alone, it finds fault
    (*SCHEDULE, "ugh, traffic", 0),
    (*SCHEDULE, "ugh, the dots", -1),
    (*SCHEDULE, "ugh", -1),
    # the user's own effort against what they expected; a length against it is still a fault
    (*KANJI, "I'm learning Korean too, it's harder than I thought", 0),
    (*KANJI, "it's longer than I expected", -1),
    # an apology for a thing of the user's own; an apology before a fault of the reply keeps the fault
    (*KANJI, "sorry, my spelling is not great", 0),
    (*KANJI, "sorry my japanese is a mess lol", 0),
    (*KANJI, "sorry, my spelling is bad, but this is wrong", -1),
    (*KANJI, "sorry, but this isn't great", -1),
    # trying the reply put off until a condition of the user's is met; only dated, or now, it takes the reply up
    (*SCHEDULE, "will try it tonight when I'm at my desk", 0),
    (*SCHEDULE, "will try it tonight", 1),
    (*SCHEDULE, "I'll try it", 1),
    # the conversation moved on to another thing of the user's; switching the reply's units asks for a change
    (*SCHEDULE, "can we move on to my cover letter now?", 0),
    ("Convert 5 miles", "5 miles is 8.05 km.", "can you switch to metres?", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", NO_VERDICT)
def test_the_users_own_mood_effort_apology_plan_or_next_topic_is_no_verdict(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score
