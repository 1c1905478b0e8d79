"""The reading classes for tone, outcomes, agreement and stated targets, on replies written for this test."""

import pytest

from claw.judge.reading.tone import emoji_sentiment, emoji_tone, sarcastic
from claw.judge.rule import read_feedback


def read(reply: str, request: str = "Help me with this.", response: str = "Here you go.") -> tuple[int, str | None]:
    return read_feedback(request, response, reply)


# ---- emoji as a class, by what their Unicode names depict ----------------------------------------


@pytest.mark.parametrize("emoji, sentiment", [
    ("🥳", 1), ("💖", 1), ("👏🏽", 1), ("☑️", 1), ("🤩", 1),
    ("😠", -1), ("😒", -1), ("👎🏻", -1), ("🤦‍♀️", -1), ("😑", -1),
    ("🤔", 0), ("😅", 0), ("🤣", 0), ("🌮", 0), ("🚗", 0),
])  # fmt: skip
def test_emoji_sentiment_comes_from_the_unicode_name(emoji, sentiment):
    assert emoji_sentiment(emoji) == sentiment


def test_emoji_tone_of_a_text():
    assert emoji_tone("nice 🥳 but 😒") == -1 and emoji_tone("ok 🥳") == 1 and emoji_tone("plain text → here") == 0


@pytest.mark.parametrize("reply, request_, response", [
    ("🥳", "Name a gas giant.", "Saturn."),
    ("that's 14 🤩", "What is 7 doubled?", "7 × 2 = 14."),
    ("same as my sheet 👏", "Total of 3 and 4?", "3 + 4 = 7."),
])  # fmt: skip
def test_an_approving_emoji_approves_a_quiet_reply(reply, request_, response):
    assert read(reply, request_, response)[0] == 1


@pytest.mark.parametrize("reply", ["We just got engaged 💖", "Is that the express train? 🥳"])
def test_an_approving_emoji_does_not_approve_news_or_questions(reply):
    assert read(reply)[0] == 0


def test_a_disapproving_emoji_corrects_and_its_text_is_the_hint():
    score, hint = read("😒 Lisbon is in Portugal", "Where is Lisbon?", "Lisbon is in Spain.")
    assert score == -1 and hint == "Lisbon is in Portugal"
    assert read("👎", "Pick a colour.", "Teal.") == (-1, None)  # a bare verdict: nothing to distil


# ---- sarcasm --------------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "Wow, so much clearer 😒",
    "oh yeah right, very helpful",
    "Sure, and cats can bark.",
    "great job /s",
])  # fmt: skip
def test_sarcasm_turns_praise_into_a_correction(reply):
    assert read(reply, "Explain recursion.", "Recursion is when a function is recursive.")[0] == -1


def test_sarcasm_is_a_bare_verdict_and_the_request_after_it_is_the_hint():
    score, hint = read("Lovely, so helpful 🙄 Cut it to two lines.", "Summarise the memo.", "The memo, in full, says…")
    assert score == -1 and hint == "Cut it to two lines."


def test_an_affirmative_with_a_claim_about_the_turn_is_no_sarcasm():
    assert not sarcastic("Sure, and the tank is full", frozenset({"tank"}))
    assert sarcastic("Sure, and pigs can fly", frozenset({"tank"}))


# ---- approval by outcome and agreement -----------------------------------------------------------


@pytest.mark.parametrize("reply", [
    "the second trick did it",
    "compiles fine now",
    "the bread came out crusty and light",
    "tried it, shoulder feels better already",
    "builds first time",
    "couldn't agree more",
    "I can't argue with that logic",
    "No arguments here.",
    "Much snappier!",
])  # fmt: skip
def test_outcomes_agreement_and_improvement_approve(reply):
    assert read(reply)[0] == 1


@pytest.mark.parametrize("reply", [
    "the cake came out burnt",
    "it still doesn't compile",
    "if it works I'll tell you",
    "Much shorter, please.",
])  # fmt: skip
def test_bad_outcomes_conditions_and_polite_comparatives_do_not_approve(reply):
    assert read(reply)[0] != 1


def test_self_blame_and_a_solved_trouble_find_no_fault():
    assert read("ugh, my bad. works now")[0] == 1
    assert read("That's the part that was tripping me up, thanks!")[0] == 1
    assert read("Forwarding it as is.")[0] != -1  # a gerund reports what the user does; it asks nothing


# ---- values, targets and questions --------------------------------------------------------------


def test_the_users_own_calculation_against_the_replys():
    assert read("so 6 × 7 = 42", "What is 6 times 7?", "6 × 7 = 48.")[0] == -1
    assert read("6 × 7 = 42, nice", "What is 6 times 7?", "6 × 7 = 42.")[0] == 1


def test_a_target_quantity_is_a_preference():
    score, hint = read("that's about 30 words, we need at least 100", "Write a product blurb.", "A sturdy mug.")
    assert score == -1 and hint and "at least 100" in hint


def test_a_negative_question_about_the_replys_word_and_a_missing_numbered_part():
    assert read("Isn't Fe iron?", "Symbol for tin?", "Fe.")[0] == -1
    plan = "Week 1: read. Week 2: write."
    assert read("and week 4?", "Make a 4-week study plan.", plan)[0] == -1
    assert read("and week 4?", "Make a study plan.", plan)[0] == 0  # a further case, not a part the request named


def test_the_requests_task_on_a_new_input_is_a_new_task():
    assert read("Can you convert 72 to binary too?", "Convert 10 to binary.", "1010.")[0] == 0
    assert read("Convert it to hex instead.", "Convert 10 to binary.", "1010.")[0] == -1


def test_a_new_need_set_up_for_a_question_is_no_correction():
    assert read("We also need a tagline for the flyer, any suggestions?", "Name my bakery.", "Crumb & Co.")[0] == 0


def test_politeness_and_thanks_in_other_languages():
    assert read("gracias, muy bien")[0] == 1
    assert read("auf Deutsch bitte", "Say hello.", "Hello!")[0] == -1
