"""The rule backend on realistic replies written for this test (not lexicon entries), alone and inside the judges."""

import asyncio

import pytest

from claw.config import compose_config
from claw.judge import HintJudge, PRMJudge, RuleBackend, Turn, build_backend, build_judges

REQUEST = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Summarise this article for me."},
]
RESPONSE = "- point one\n- point two"


def user_turn(reply: str) -> Turn:
    return Turn(messages=REQUEST, response_text=RESPONSE, next_state=[{"role": "user", "content": reply}])


def tool_turn(*outputs: str) -> Turn:
    return Turn(
        messages=REQUEST,
        response_text='<tool_call>{"name": "read_file"}</tool_call>',
        next_state=[{"role": "tool", "content": o} for o in outputs],
    )


CASES = [
    (user_turn("Perfect, that's exactly what I needed, cheers!"), 1),
    (user_turn("Hmm, no — I wanted it without the bullet points, please redo it."), -1),
    (user_turn("ok what's the weather tomorrow"), 0),
    (user_turn("Thanks, but that's wrong: the article is about 2019, not 2021."), -1),  # a correction wins over thanks
    (user_turn("Great stuff. Now can you draft a reply to the author?"), 1),
    (user_turn("That is way too long. Give me three sentences at most."), -1),
    (
        user_turn("Thanks again, no worries if it takes a while."),
        1,
    ),  # "again"/"no" inside polite phrases are not corrections
    (tool_turn("Traceback (most recent call last): FileNotFoundError"), -1),
    (tool_turn("total 3\n-rw-r--r-- notes.md\n-rw-r--r-- todo.md"), 1),
    (tool_turn("ok: 12 rows", "bash: rg: command not found"), -1),
    (Turn(messages=REQUEST, response_text=RESPONSE, next_state=[]), 0),
]


@pytest.mark.parametrize("turn,score", CASES)
def test_rule_scores(turn, score):
    got, rationale = RuleBackend().score_turn(turn)
    assert got == score, rationale
    assert rationale


def test_rule_hint_is_the_corrective_sentence():
    backend = RuleBackend()
    hint = backend.hint_for(user_turn("Hmm, no — I wanted it without the bullet points, please redo it."))
    assert hint is not None and "without the bullet points" in hint and not hint.lower().startswith(("hmm", "no"))
    multi = backend.hint_for(
        user_turn("I read it twice. You forgot the conclusion. Also, the author's name is misspelled.")
    )
    # only the corrective sentences; "the name is misspelled" finds fault too (the old lexicon missed it)
    assert multi == "You forgot the conclusion. Also, the author's name is misspelled."
    assert backend.hint_for(user_turn("Nope.")) is None  # nothing left to teach
    assert backend.hint_for(user_turn("Perfect, that's exactly what I needed, cheers!")) is None
    assert (
        backend.hint_for(tool_turn("Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: 'title'"))
        == "The previous tool call failed: KeyError: 'title'"
    )
    assert backend.hint_for(tool_turn("Traceback (most recent call last): FileNotFoundError")).startswith(
        "The previous tool call failed: Traceback"
    )
    assert backend.hint_for(tool_turn("2 files")) is None


@pytest.mark.parametrize("turn,score", CASES)
def test_prm_judge_with_rules(turn, score):
    result = asyncio.run(PRMJudge(RuleBackend(), m=3).judge(turn))
    assert (result.score, result.votes, result.agreement, result.n_abstain, result.error) == (
        score,
        [score] * 3,
        1.0,
        0,
        None,
    )
    assert result.rationale.endswith(f"\\boxed{{{score}}}")


def test_hint_judge_with_rules():
    judge = HintJudge(RuleBackend(), m=3)
    accepted = asyncio.run(
        judge.extract(user_turn("Hmm, no — I wanted it without the bullet points, please redo it."))
    )
    assert accepted.accepted and "without the bullet points" in accepted.hint and accepted.votes == [1, 1, 1]
    rejected = asyncio.run(judge.extract(user_turn("ok what's the weather tomorrow")))
    assert (rejected.accepted, rejected.hint, rejected.votes, rejected.n_positive) == (False, None, [-1, -1, -1], 0)


def test_rule_backend_is_not_a_chat_model():
    with pytest.raises(NotImplementedError, match="score_turn"):
        asyncio.run(RuleBackend().complete([{"role": "user", "content": "hi"}], 0.6, 8))
    with pytest.raises(ValueError, match="rule, openai or policy"):
        build_backend("verifier")


def test_build_judges_from_config():
    judges = build_judges(
        compose_config(["judge=rule", "judge.m=3", "judge.min_hint_chars=5", "judge.reader_head=null"]).judge
    )
    assert isinstance(judges.backend, RuleBackend) and judges.prm.m == 3 and judges.hint.min_hint_chars == 5
    assert asyncio.run(judges.prm.judge(user_turn("Perfect, that's exactly what I needed, cheers!"))).score == 1
    with pytest.raises(ValueError, match="no LLM judge"):
        build_judges(compose_config(["judge=verifier"]).judge)
    with pytest.raises(ValueError, match="engine="):
        build_judges(compose_config(["judge=policy"]).judge)


# ---- natural feedback: the reading classes (claw/judge/reading/) -------------------------------
# Each reply below was misread by the phrase-list judge this replaced (it read them all as 0, or the
# correction as an approval); the class names are the reading that now applies.
NATURAL = [
    ("Please be more concise.", -1),  # comparative in a request
    ("Use metric units.", -1),  # edit_request: a verb that edits the reply
    ("Just tell me the number first, please.", -1),  # edit_request: a constraint aimed at the reply
    ("Make it less formal.", -1),  # comparative: less <adj>
    ("Friendlier, please.", -1),  # comparative: <adj>ier fragment
    ("It should say 42, not 24.", -1),  # value: X, not Y
    ("Celsius, not Fahrenheit.", -1),  # value
    ("Not great.", -1),  # negated_approval
    ("Not helpful at all.", -1),  # negated_approval (the old lexicon read "helpful" as an approval)
    ("Doesn't look right.", -1),  # negated_approval: a verb of uptake
    ("Why is it in French?", -1),  # fault_question
    ("Did you even read my question?", -1),  # fault_question
    ("Good, but drop the intro.", -1),  # partial acceptance
    ("Nice, but it's a bit long.", -1),  # partial + hedged complaint
    ("Sounds robotic.", -1),  # fault
    ("I wanted it in Python.", -1),  # preference
    ("Sounds good.", 1),  # approval predicated of the reply
    ("Works for me.", 1),
    ("ok cool", 1),  # brief approval
    ("yep", 1),
    ("Not bad at all!", 1),  # a negated fault approves
]


@pytest.mark.parametrize("reply,score", NATURAL)
def test_rule_reads_natural_feedback(reply, score):
    got, rationale = RuleBackend().score_turn(user_turn(reply))
    assert got == score, rationale


FOLLOW_UPS = [
    "what about 7 x 8?", "ok, what's next?", "Now translate it into Spanish.", "Why did it fall?",
    "Can you give me an example in JavaScript?", "it's in the garden if the weather is nice",
]  # fmt: skip


@pytest.mark.parametrize("reply", FOLLOW_UPS)
def test_rule_keeps_follow_ups_neutral(reply):
    """A new question, a step forward or a remark about something else is no feedback on the reply."""
    assert RuleBackend().score_turn(user_turn(reply))[0] == 0


def test_rule_reads_the_turn_not_only_the_reply():
    """Some shapes compare the feedback with the request and the response: a value the reply lacks, a thing the
    request named that is missing, the reply's own claim denied."""
    backend = RuleBackend()

    def turn(request: str, response: str, reply: str) -> Turn:
        user = [{"role": "user", "content": request}]
        return Turn(messages=user, response_text=response, next_state=[{"role": "user", "content": reply}])

    assert backend.score_turn(turn("What is 6 x 7?", "6 x 7 = 24.", "It's 42."))[0] == -1
    assert backend.score_turn(turn("What is 6 x 7?", "6 x 7 = 42.", "It's 42."))[0] != -1
    assert backend.score_turn(turn("Translate 'hello' into German.", "Bonjour.", "Where's the German?"))[0] == -1
    assert backend.score_turn(turn("Plan a day in Paris.", "The Louvre.", "Where's the Eiffel Tower?"))[0] == 0
    # "86?": the reply's own value asked back; "Not 86.": denied; "Right, 96.": taken up
    assert backend.score_turn(turn("12 x 8?", "12 x 8 = 86.", "86? Check your multiplication."))[0] == -1
    assert backend.score_turn(turn("12 x 8?", "12 x 8 = 86.", "Not 86."))[0] == -1
    assert backend.score_turn(turn("12 x 8?", "12 x 8 = 96.", "Right, 96."))[0] == 1
    assert backend.score_turn(turn("Capital of Canada?", "Toronto.", "Not Toronto."))[0] == -1
    assert backend.score_turn(turn("Who wrote Emma?", "Charlotte Brontë.", "It was Jane Austen."))[0] == -1


def test_rule_hint_is_the_corrective_part_as_written():
    backend = RuleBackend()
    assert backend.hint_for(user_turn("Good, but drop the intro.")) == "drop the intro."
    assert backend.hint_for(user_turn("Thanks! Can you make it shorter? Three sentences at most.")) == (
        "Can you make it shorter? Three sentences at most."
    )
    assert backend.hint_for(user_turn("Too wordy.")) == "Revise the answer: Too wordy."  # clears min_hint_chars
    assert backend.hint_for(user_turn("Nope. Think about the units.")) == "Think about the units."  # after a bare no
    assert backend.hint_for(user_turn("Not great.")) is None  # a bare verdict teaches nothing to distil
    assert backend.hint_for(user_turn("what about 7 x 8?")) is None
    bare = ("Not great.", "Not helpful at all.", "Doesn't look right.")
    for reply, score in NATURAL:
        assert (backend.hint_for(user_turn(reply)) is not None) == (score == -1 and reply not in bare), reply


# ---- values as users type them -------------------------------------------------------------------------------------
def read(request: str, response: str, reply: str) -> tuple[int, str | None]:
    """(score, hint) of the rule judge for one turn."""
    turn = Turn(
        messages=[{"role": "user", "content": request}],
        response_text=response,
        next_state=[{"role": "user", "content": reply}],
    )
    backend = RuleBackend()
    return backend.score_turn(turn)[0], backend.hint_for(turn)


VALUES = [
    # a contraction typed without its apostrophe is still one
    ("How far is it to the lake?", "About 14 km.", "its 19", -1),
    ("How far is it to the lake?", "About 14 km.", "thats 19 not 14", -1),
    # a spelled-out value against the reply's digits or words
    ("How many sides has a hexagon?", "A hexagon has 5 sides.", "six, surely", -1),
    ("How many sides has a hexagon?", "A hexagon has five sides.", "Six.", -1),
    ("How many sides has a hexagon?", "A hexagon has six sides.", "Six, thanks.", 1),
    # the same number written another way is no correction
    ("What is 250 x 4?", "250 x 4 = 1,000.", "So it's 1000, thanks.", 1),
    # a percentage and a value said of a named thing
    ("What is 2 out of 3 as a percentage, rounded?", "It's 66.6667%.", "rounded, so 67%", -1),
    ("Give the date in US format.", "It is 09/04/2023.", "US would be 04/09/2023.", -1),
    # "surely" and "pretty sure" assert, asked or not
    ("Who painted the Mona Lisa?", "Michelangelo.", "Surely that was Leonardo?", -1),
    ("Who painted the Mona Lisa?", "Michelangelo.", "Fairly sure it was Leonardo da Vinci?", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", VALUES)
def test_rule_reads_values_as_typed(request_, response, reply, score):
    got, hint = read(request_, response, reply)
    assert got == score
    assert (hint is not None) == (score == -1)


SET_UPS = [
    # a new problem: its numbers and names are premises of the question that follows
    ("Tom has 3 boxes of 6 pens.", "3 x 6 = 18 pens.", "Next: Mia has 40 stamps and gives away 15. How many remain?"),
    ("Tom has 3 boxes of 6 pens.", "3 x 6 = 18 pens.", "Part b) Omar reads 12 pages for 5 days. How many pages?"),
    # the user's own circumstances
    ("How much rice for 10 people?", "About 750 g.", "It's for our team lunch on Tuesday."),
    ("How much rice for 10 people?", "About 750 g.", "My brother Luis is cooking it."),
]  # fmt: skip


@pytest.mark.parametrize("request_,response,reply", SET_UPS)
def test_rule_keeps_premises_and_circumstances_neutral(request_, response, reply):
    assert read(request_, response, reply) == (0, None)


def test_a_question_that_takes_up_the_replys_number_is_no_set_up():
    """ "It's 19. Where did 14 come from?": the statement sets a value against the reply, whatever the question."""
    assert read("How far is it to the lake?", "About 14 km.", "It's 19. Where did 14 come from?")[0] == -1


def test_numbers_and_contractions_are_read_one_way():
    from claw.judge.reading import normalise, numbers

    assert numbers("It was 1,250 g, about 07:05, on 09/04.") == {"1250", "7:5", "9/4"}
    assert numbers("seven or 8, not one", spelled=True) == {"7", "8"}  # "one" is mostly a pronoun
    assert numbers("seven or 8", spelled=False) == {"8"}
    assert normalise("thats odd, its 4 and it doesnt fit") == "that's odd, it's 4 and it doesn't fit"
    assert normalise("Its value is were it was") == "it's value is were it was"  # "were" is a word of its own


# ---- approvals without an approving word, and asides that are no feedback ------------------------------------------
APPROVALS = [
    "Zero complaints here.",  # no_fault: a remark denied
    "I don't see any typos, nice.",
    "Nothing I'd change.",
    "Not a single mistake!",
    "Not too technical, which I liked.",  # the excess denied
    "Point taken.",  # acceptance: a concession
    "Hm, that clears it up.",  # understanding
    "Same as what I got.",  # the user's own result agrees
    "Alright, the blue one it is.",  # a choice made from the reply
    "yep works now",  # an affirmative opens the clause without changing it
    "Fair.",
]


@pytest.mark.parametrize("reply", APPROVALS)
def test_rule_reads_approvals_without_an_approving_word(reply):
    got, rationale = RuleBackend().score_turn(user_turn(reply))
    assert got == 1, rationale


STILL_CORRECTIONS = [
    "No, typos everywhere.",  # a denial, then the fault
    "No typos next time, please.",  # asked for, not found absent
    "Not too formal, please.",  # a request, not a description
    "It doesn't fix the problem.",  # the verb is denied, not the fault
    "Unrelated.",  # alone, the reply is off topic
]


@pytest.mark.parametrize("reply", STILL_CORRECTIONS)
def test_rule_still_reads_these_as_corrections(reply):
    got, rationale = RuleBackend().score_turn(user_turn(reply))
    assert got == -1, rationale


ASIDES = [
    "Off topic, but what's a good name for a cat?",  # a topic changed on purpose
    "Random question: how do magnets work?",
    "btw is there a shortcut to paste without formatting?",  # btw opens without changing what follows
    "No errors?",  # asked, it approves nothing
]


@pytest.mark.parametrize("reply", ASIDES)
def test_rule_keeps_asides_neutral(reply):
    got, rationale = RuleBackend().score_turn(user_turn(reply))
    assert got == 0, rationale


def test_a_bare_verdict_keeps_the_reason_before_it():
    hint = RuleBackend().hint_for(user_turn("Hmm. My calculator gives something else. Try again."))
    assert hint == "My calculator gives something else."  # the bare "Try again." adds nothing to distil


# ---- requests, challenges and lacks in fewer words -----------------------------------------------------------------
CORRECTIONS_IN_FEW_WORDS = [
    # (request, response, feedback)
    ("Convert 0.25 to a fraction.", "0.25", "as a fraction please"),  # edit_request: the form, as a fragment
    ("Temperature in Lisbon, in Celsius?", "About 68°F.", "In Celsius?"),  # asked back when the request named it
    ("Is 91 prime?", "To check whether 91 is prime we test divisors up to 9 ...", "Only the verdict next time."),
    ("Tell me about owls.", "Owls are birds.", "more detailed?"),  # comparative: elliptical question
    ("Tell me about owls.", "Owls are birds.", "Maybe longer?"),
    ("Keep it short: what is TCP?", "TCP is a connection-oriented protocol that ...", "Was that short?"),
    ("Translate 'thank you' into Italian.", "Merci.", "that's french??"),  # described back, in disbelief
    ("How long to boil an egg?", "About 30 minutes.", "It's 30 minutes?"),
    ("When does the sun rise in Oslo in June?", "Around 9am.", "Why would it be that late?"),
    ("Write a letter and include my reference code AB12.", "Dear Sir, please find ...", "Where is my reference code?"),
    ("Reply in under 10 words.", "Thanks so much for your kind invitation, I'd love to come.", "thats over 10 words"),
    ("A slogan for a bakery, please.", "We sell bread.", "Not very memorable tbh"),  # a quality lacking
    ("Summaries only.", "Summary: ... Also, some background ...", "summaries only means summaries only"),
    ("No emojis please. A birthday message?", "Happy birthday! 🎉", "I clearly said no emojis"),  # preference
    ("Draft an invite to the picnic.", "Join us for a picnic on Sunday!", "Suggest a rain date in it too."),
]  # fmt: skip


@pytest.mark.parametrize("request_,response,reply", CORRECTIONS_IN_FEW_WORDS)
def test_rule_reads_corrections_in_few_words(request_, response, reply):
    score, hint = read(request_, response, reply)
    assert score == -1
    assert hint is not None and hint.endswith(reply) or hint == reply


FOLLOW_UPS_IN_FEW_WORDS = [
    ("How do I copy in vim?", "Use `y` to yank.", "and paste?"),  # an elliptical "and …?" asks about a next case
    ("How do I list files?", "`ls` lists them.", "And if I only need hidden ones?"),  # a hypothetical
    ("What's a good film for a long weekend?", "Try 'Arrival'.", "Is it long?"),  # "long" was said of the weekend
    ("How long to boil an egg?", "About 7 minutes.", "So it's 7 minutes total?"),  # a check, not disbelief
    ("What's 10% of 50?", "5.", "In general, how do I work out percentages?"),
    ("How do I centre a div?", "Use flexbox.", "In CSS grid?"),  # a form the request never named: a follow-up
    ("How do I centre a div?", "Use flexbox.", "It's that easy?"),  # surprise, not doubt
    ("Is the museum open Sunday?", "Yes, and entry is free.", "Is that all year round?"),
    ("Write my bio; I'm a nurse.", "A dedicated nurse ...", "I work nights, if that helps."),  # a condition approves
]  # fmt: skip


@pytest.mark.parametrize("request_,response,reply", FOLLOW_UPS_IN_FEW_WORDS)
def test_rule_keeps_follow_ups_in_few_words_neutral(request_, response, reply):
    assert read(request_, response, reply) == (0, None)


TAKEN_UP = [
    # (request, response, feedback): the reply taken up without an approving word
    ("Name for a goldfish?", "Try Bubbles.", "Going with Bubbles."),  # acting on what the reply offered
    ("Name for a goldfish?", "Try Bubbles.", "ok, I'll use Bubbles"),
    ("What is 7 x 8?", "7 x 8 = 56.", "Got 56 as well."),  # the user's own result agrees
    ("What is 7 x 8?", "7 x 8 = 56.", "56, matches mine."),
    ("What is 7 x 8?", "7 x 8 = 56.", "yeah ok 56"),  # an affirmative and the reply's own words
    ("Explain inflation.", "Prices rise as money buys less.", "Ahhh I get it now."),  # a drawn-out interjection
    ("Explain inflation.", "Prices rise as money buys less.", "Great, no waffle."),  # beside an approval: free of X
    ("Polish this line.", "The meeting is moved to 3pm.", "Keep it as is."),  # the reply kept
]


@pytest.mark.parametrize("request_,response,reply", TAKEN_UP)
def test_rule_reads_the_reply_taken_up(request_, response, reply):
    assert read(request_, response, reply) == (1, None)


NOT_TAKEN_UP = [
    ("Name for a goldfish?", "Try Bubbles.", "I'll ask my son first.", 0),  # acting on something else
    ("What is 7 x 8?", "7 x 8 = 54.", "Got 56.", -1),  # the user's own result differs
    ("What is 7 x 8?", "7 x 8 = 56.", "And 7 x 9?", 0),
    ("Explain inflation.", "Prices rise as money buys less.", "Great, no waffle next time though.", -1),
    ("Keep it brief: what's DNS?", "DNS, the Domain Name System, is a ...", "That wasn't brief at all.", -1),
    ("Give me a cheerful greeting.", "Greetings.", "Was that cheerful?", -1),  # the quality the request asked
    ("Who discovered penicillin?", "Louis Pasteur.", "isn't it Fleming", -1),  # a negative question without "?"
    ("Who discovered penicillin?", "Louis Pasteur.", "are you sure about that", -1),
    ("Square root of 81?", "It's 8.", "Nine?", -1),  # a value of the user's, offered as a doubt
    ("Square root of 81?", "It's 9.", "And of 64?", 0),
    ("How do I centre a div?", "Use flexbox.", "still not centred", -1),  # the fault persists
    ("Museum hours?", "9-5, free on Sundays.", "We'll go on Sunday then.", 1),  # acting on what the reply offered
    ("Museum hours?", "9-5, free on Sundays.", "Cool, see you.", 1),  # a farewell adds nothing
]  # fmt: skip


@pytest.mark.parametrize("request_,response,reply,score", NOT_TAKEN_UP)
def test_rule_does_not_read_these_as_taken_up(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_length_alone_asks_and_a_measured_count_reports():
    assert read("Describe Rome.", "Rome is a city with a long history and ...", "Too long. Two sentences.") == (
        -1,
        "Too long. Two sentences.",
    )
    assert read("Count the lines.", "Run `wc -l file`.", "Ran it, 3,512 lines. Thanks!") == (1, None)


MORE_READINGS = [
    # (request, response, feedback, score)
    ("Farmer: 5 rows of 4 beans. How many?", "5 x 4 = 20.", "Try this one: 3 bags, 9 beans each.", 0),  # a new item
    ("Farmer: 5 rows of 4 beans. How many?", "5 x 4 = 20.", "The twins are 7 years old.", 0),  # not of the turn
    ("Dedupe a list in Python.", "Use set(xs).", "The real list has 50,000 items, is that ok?", 0),  # a premise
    ("Farmer: 5 rows of 4 beans. How many?", "5 x 4 = 24.", "5 fours are 20.", -1),  # a sum as subject
    ("Farmer: 5 rows of 4 beans. How many?", "5 x 4 = 24.", "that's 4 x 6", -1),  # 6 is not the reply's
    ("Cheap phone for my dad?", "The Pixel 9 Pro is great.", "That's well over my budget.", -1),  # over a limit
    ("Sort [2,1] in Python.", "sorted([2,1]) gives [1,2].", "[1,2], yep.", 1),  # the reply's values taken up
    ("Cheap phone for my dad?", "A Moto G is a good pick.", "Sounds about right.", 1),
    ("Cheap phone for my dad?", "A Moto G is a good pick.", "I'll go for the Moto then.", 1),
    ("Explain tides.", "The moon's pull raises the sea on both sides.", "Really well explained.", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", MORE_READINGS)
def test_rule_reads_the_subject_and_what_follows(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_impatience_and_tallies_are_not_doubt():
    assert read("Calories in a banana?", "About 100.", "how many in two??")[0] == 0  # impatient, not doubting
    assert read("Calories in a banana?", "About 100.", "100??")[0] == -1
    assert read("What is 3 x 4?", "It is 12.", "Got 13.")[0] == -1  # the user's own result differs
    assert read("What is 3 x 4?", "It is 12.", "got 2 more questions for you")[0] == 0


FURTHER_READINGS = [
    # (request, response, feedback, score)
    ("Tip for focus?", "Try the Pomodoro method.", "Nothing else I need, ta.", 1),  # nothing further wanted
    ("Tip for focus?", "Try the Pomodoro method.", "Will try it tomorrow.", 1),  # acting on the reply, no subject
    ("Tip for focus?", "Try the Pomodoro method.", "Ha, you got me.", 1),  # a concession
    ("Tip for focus?", "Try the Pomodoro method.", "I already use that.", -1),  # the reply offers what the user has
    ("Tip for focus?", "Try the Pomodoro method.", "Anything less common?", -1),  # elliptical comparative
    ("Convert 50 F to C.", "50 F is 14 C.", "more like 10", -1),  # an approximate value of the user's
    ("Price of a coffee in Oslo?", "About 90 kroner.", "that sounds high", -1),  # a magnitude doubted
    ("Convert 50 F to C.", "50 F is 9.9 C.", "10 is fine, thanks.", 1),  # a value of the user's, approved
    ("Plan my party.", "Start with drinks at 7.", "The party is in August.", 0),  # a date after a reply with none
    ("When is the party?", "It's on Friday.", "It's on Saturday.", -1),  # a date against the reply's date
    ("Describe snow in 2 words.", "Snow is cold, white, soft and quiet.", "2 words...", -1),  # the length alone
    ("Describe snow in 2 words.", "Snow is cold, white, soft and quiet.", "Count the words.", -1),
    ("Describe snow in 2 words.", "Snow is cold, white, soft and quiet.", "that's more than two", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", FURTHER_READINGS)
def test_rule_reads_further_shapes(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


LAST_READINGS = [
    # (request, response, feedback, score)
    ("Capital of Australia?", "The capital is Sydney.", "Canberra.", -1),  # a bare name against the reply's
    ("Which day is the call?", "She moved it to Thursday.", "Wednesday!", -1),
    ("Ask me where I live.", "Which city do you live in?", "Lisbon.", 0),  # answering the reply's question
    ("Draft a note to Mr Tan.", "Dear Mr Tan, I will be late today.", "Sent.", 1),  # acted on, not a name
    ("Distance to Lyon?", "About 465 km.", "We might drive instead.", 0),  # a clause about the user, no request
    ("Distance to Lyon?", "About 465 km.", "Not sure yet, will see.", 0),  # undecided, not doubting
    ("Distance to Lyon?", "About 465 km.", "Not sure that's right.", -1),
    ("Date 3 July 2025, day first.", "07/03/2025", "other way round", -1),  # the reply reversed
    ("Note to my boss, I'm ill.", "yo boss, ill today", "Bit more formal maybe?", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", LAST_READINGS)
def test_rule_reads_names_doubt_and_reversal(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


STRUCTURAL_READINGS = [
    # (request, response, feedback, score)
    # the reply's language against the one the request named; a language named when none was asked is information
    ("Say 'good night' in Italian.", "Bonne nuit.", "that's french, not what I asked", -1),
    ("Write a loop in Ruby.", "for i in range(3): print(i)", "this is Python", -1),
    ("Write a loop in TypeScript.", "for i in range(3): print(i)", "I need TS", -1),
    ("Write a loop.", "for i in range(3): print(i)", "that's python", 0),
    ("Dame un consejo para dormir.", "Avoid screens before bed.", "en castellano porfavor", -1),  # "please" typed
    # a unit set against the reply's unit of the same measure; a quantity restated in another unit is no fault
    ("How far does sound travel?", "About 343 km per minute.", "metres per second", -1),
    ("Oven temperature for bread?", "Bake at 430°F.", "centigrade, please, I'm in Spain", -1),
    ("How long is the episode?", "It runs 60 minutes.", "so an hour", 0),
    ("How long is the film?", "It runs 120 minutes.", "so a couple of hours, thanks", 1),
    # a value with its unit written on, or as a rate
    ("Boiling point of water at sea level in Kelvin?", "It is 300K.", "373K", -1),
    ("How many legs does a spider have?", "Six legs.", "8 each", -1),
    # a list of values stated for the turn's subject, not the reply's
    ("List the first three primes.", "The first three primes are 1, 2 and 3.", "the first three are 2, 3 and 5", -1),
    ("List the first three primes.", "The first three primes are 2, 3 and 5.", "the first three are 2, 3 and 5", 0),
    ("Lunch ideas for my kids?", "Wraps and fruit.", "my kids are 4, 7 and 9", 0),
    # a tag question: the reply's predicate said of another subject challenges it; of the same one it checks
    ("Which is heavier, a 2kg or a 3kg bag?", "The 2kg bag is heavier.", "so the 3kg bag is heavier, right?", -1),
    ("Which is heavier, a 2kg or a 3kg bag?", "The 3kg bag is heavier.", "so the 3kg bag is heavier, right?", 0),
    # what the user wanted, past tense or with the subject left out; the reply being it approves
    ("Regex for digits?", "Use [a-z]+", "I needed digits, [0-9]+", -1),
    ("Name a fruit.", "Apple, banana, cherry, date, elderberry, fig.", "only wanted one", -1),
    ("Name a fruit.", "Apple.", "That's the kind I wanted, ta.", 1),
]


@pytest.mark.parametrize("request_,response,reply,score", STRUCTURAL_READINGS)
def test_rule_reads_language_units_lists_and_tags(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


FOLLOW_UPS_AND_ASIDES = [
    # (request, response, feedback, score)
    # a question about the user's own next step asks, whatever words it holds
    ("How do I install the app?", "Download it from the store.", "and how do I remove it if it crashes??", 0),
    ("Word for 'tree' in German?", "Baum.", "how should I say it??", 0),
    # "would X work …?" asks whether the reply carries over; a suggestion put as a question still corrects
    ("Shortcut to copy in Word?", "Ctrl+C.", "would the same key work on a Mac?", 0),
    ("Shortcut to copy in Word?", "Ctrl+C.", "would it be better to mention Cmd+C too?", -1),
    # a condition on the user's own doing, a greeting, a mood: nothing said of the reply
    ("Square root of 81?", "9.", "apologies if I sound rude, typing on my phone", 0),
    ("Square root of 81?", "9.", "good evening by the way", 0),
    ("Square root of 81?", "9.", "rainy commute again today 😞", 0),
    ("Square root of 81?", "9.", "seriously 🙄", -1),
    # "never" stating, not forbidding; a verb of the reply's working after a preposition is a noun
    ("Fastest land animal?", "The cheetah.", "never would have thought, cheers", 1),
    ("Fastest land animal?", "The cheetah.", "Never use that source again.", -1),
    ("Fastest land animal?", "The cheetah.", "busy week at work", 0),
    # acting on the reply, reported; a plan of the user's own after a contrast
    ("Soup idea?", "Try a leek and potato soup.", "cooked it yesterday", 1),
    ("Best way to the museum?", "Take the tram, line 4.", "great, just booked the tram", 1),
    ("Caption for my photo?", "Sunset vibes.", "love it, though I might add a hashtag myself", 1),
    ("Caption for my photo?", "Sunset vibes.", "love it, though it needs a hashtag", -1),
    ("Should I learn piano or guitar?", "Guitar is easier to start.", "good points, thanks", 1),
    # a step forward to something else keeps the need that follows neutral
    ("Fix my CSS.", "Add display: flex.", "can we talk about something else? need a name for my cat", 0),
    ("Fix my CSS.", "Add display: flex.", "need a fallback for old browsers", -1),
]


@pytest.mark.parametrize("request_,response,reply,score", FOLLOW_UPS_AND_ASIDES)
def test_rule_reads_follow_ups_asides_and_plans(request_, response, reply, score):
    assert read(request_, response, reply)[0] == score


def test_a_no_that_declines_an_offer_finds_no_fault():
    offer = "Dear Sam, thanks for the lift. Would you like me to add a PS?"
    assert read("Thank-you note to Sam.", offer, "no, it's lovely as it is, don't change a thing")[0] == 1
    assert read("Thank-you note to Sam.", offer, "no thanks")[0] == 0
    assert read("Thank-you note to Sam.", offer, "no, it's too formal")[0] == -1
    assert read("Thank-you note to Sam.", "Dear Sam, thanks for the lift.", "No.")[0] == -1  # no offer: a verdict


def test_the_form_asked_as_a_noun_phrase_and_its_hint():
    request, response = "Three tallest mountains?", "Everest, K2, Kangchenjunga."
    score, hint = read(request, response, "bulleted list with the heights beside each please")
    assert score == -1 and hint == "bulleted list with the heights beside each please"
    assert read(request, response, "a list of volcanoes please")[0] == 0  # something new
    assert read(request, response, "metres per second")[0] == 0  # no unit in the reply to set it against
