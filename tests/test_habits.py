"""Users as they really talk (`source.habits`): the oracle says every failed criterion; the realistic user is
silent, leaves, names one thing, is vague, lenient, wrong now and then, and re-asks. Each habit at its level, the
presets, the persona's overrides, and the independent wordings."""

from __future__ import annotations

import glob
import random
from collections import Counter
from pathlib import Path

import pytest
import yaml

from claw.users import Habits, HabitsError, Persona, Phrasings, make_user
from claw.users.habits import PHRASINGS_DIR, Speaker

ROOT = Path(__file__).resolve().parents[1]
BAD = "To solve this problem, we need to multiply the numbers together to find the total amount. " * 2  # fails 3 of 4
ALL_BUT_SHORT = None  # set per task below


def _student():
    return Persona.load("student")


def _react(habits: Habits, passed: dict[str, bool], n: int = 4000) -> Counter[str]:
    persona = _student()
    out: Counter[str] = Counter()
    for i in range(n):
        out[Speaker(persona, habits, random.Random(i)).react(passed)[0]] += 1
    return out


FAILS_STYLE = {"no_stock_opener": False, "short": False, "shows_working": True, "answer_correct": True}
FAILS_ALL = dict.fromkeys(FAILS_STYLE, False)
PERFECT = dict.fromkeys(FAILS_STYLE, True)


def test_the_oracle_names_every_failed_criterion_in_the_personas_words_and_thanks_only_a_perfect_reply():
    persona = _student()
    speaker = Speaker(persona, Habits.build("oracle"), random.Random(0))
    for _ in range(50):
        action, words = speaker.react(FAILS_ALL)
        assert action == "complain"
        for c in persona.criteria:  # one of each criterion's phrases is in it
            assert any(p in words for p in c.fail_phrases), (c.id, words)
        assert speaker.react(PERFECT) == ("thanks", words) or speaker.react(PERFECT)[0] == "thanks"


def test_each_habit_fires_at_its_probability():
    n = 4000
    tol = 3 * (0.25 / n) ** 0.5  # three standard errors of a proportion
    got = _react(Habits(abandon=0.2), FAILS_ALL, n)
    assert abs(got["abandon"] / n - 0.2) < tol
    got = _react(Habits(silence=0.3), FAILS_ALL, n)
    assert abs(got["silence"] / n - 0.3) < tol
    got = _react(Habits(rephrase=0.4), FAILS_ALL, n)
    assert abs(got["rephrase"] / n - 0.4) < tol
    # leniency forgives style only: a wrong answer is never thanked
    assert abs(_react(Habits(lenient=0.5), FAILS_STYLE, n)["thanks"] / n - 0.5) < tol
    assert _react(Habits(lenient=1.0), FAILS_ALL, n)["thanks"] == 0
    # a mistaken user blames a criterion the reply met, even on a perfect reply
    assert abs(_react(Habits(mistaken=0.1), PERFECT, n)["complain"] / n - 0.1) < tol


def test_one_at_a_time_names_the_most_salient_unmet_criterion_only():
    persona = _student()
    habits = Habits(one_at_a_time=True)
    for i in range(30):
        words = Speaker(persona, habits, random.Random(i)).react(FAILS_ALL)[1]
        named = [c.id for c in persona.criteria if any(p in words for p in c.fail_phrases)]
        assert named == ["no_stock_opener"], words  # the persona's first criterion
    habits = Habits(one_at_a_time=True, salience=("short", "no_stock_opener", "shows_working", "answer_correct"))
    words = Speaker(persona, habits, random.Random(0)).react(FAILS_ALL)[1]
    assert any(p in words for p in persona.criteria[1].fail_phrases)  # `short` first now


def test_vague_and_independent_phrasing_come_from_the_phrasings_files():
    persona = _student()
    phrasings = Phrasings.load("student")
    habits = Habits(vague=1.0, phrasing="independent")
    action, words = Speaker(persona, habits, random.Random(0)).react(FAILS_ALL)
    assert action == "complain" and words in phrasings.vague
    habits = Habits(phrasing="independent", one_at_a_time=True)
    for i in range(20):
        words = Speaker(persona, habits, random.Random(i)).react(FAILS_ALL)[1]
        assert any(p in words for p in phrasings.complaints["no_stock_opener"]), words
        assert not any(p in words for c in persona.criteria for p in c.fail_phrases)  # none of the tuned phrases


def test_presets_overrides_and_bad_settings():
    realistic = Habits.build("realistic")
    assert realistic.one_at_a_time and realistic.phrasing == "independent" and 0 < realistic.silence < 1
    assert Habits.build({"preset": "realistic", "silence": 0.6}).silence == 0.6
    assert Habits.build("realistic", {"lenient": 0.0}).lenient == 0.0  # the persona's own habits win
    assert Habits.build(None) == Habits()
    with pytest.raises(HabitsError, match="unknown source.habits preset"):
        Habits.build("chatty")
    with pytest.raises(HabitsError, match="unknown source.habits keys"):
        Habits.build({"silense": 0.3})
    with pytest.raises(HabitsError, match="probability"):
        Habits.build({"vague": 1.5})
    from claw.users import PersonaError

    data = yaml.safe_load((ROOT / "personas" / "student.yaml").read_text())
    data["habits"] = {"salience": ["nonexistent"]}
    with pytest.raises(PersonaError, match="unknown criteria"):
        Persona.from_dict(data)


def test_a_realistic_user_moves_on_leaves_and_reasks_in_a_session():
    persona = _student()
    tasks = persona.tasks("train", 200, seed=0)
    reply = {"role": "assistant", "content": BAD}
    seen: Counter[str] = Counter()
    for i, task in enumerate(tasks):
        user = make_user("scripted", persona, task, seed=i, habits=Habits.build("realistic"), next_task=tasks[i - 1])
        user.open()
        r = user.respond(reply)
        action = user.actions[-1]
        seen[action] += 1
        if action == "abandon":
            assert r.text is None and r.done
        elif action == "silence":  # the next task's request, not a word about this reply
            assert tasks[i - 1]["question"] in r.text and r.done
        elif action == "rephrase":
            assert task["question"] in r.text and not r.done
        else:
            assert r.text and not r.done
    assert {"abandon", "silence", "rephrase", "complain"} <= set(seen)
    user = make_user("scripted", persona, tasks[0], habits=Habits(silence=1.0), next_task=None)
    user.open()
    assert user.respond(reply).text is None  # with no next task, silence is leaving


@pytest.mark.parametrize("path", sorted(glob.glob(str(PHRASINGS_DIR / "*.yaml"))), ids=lambda p: Path(p).stem)
def test_every_phrasings_file_covers_its_persona(path):
    name = Path(path).stem
    data = yaml.safe_load(Path(path).read_text())
    if name == "default":
        assert {"vague", "thanks", "rephrase"} <= set(data)
        assert all(t.count("{question}") == 1 for t in data["rephrase"])
        return
    candidates = [ROOT / "personas" / f"{name}.yaml", ROOT / "personas" / "heldout" / f"{name}.yaml"]
    persona = Persona.load(next(c for c in candidates if c.is_file()))
    phrasings = Phrasings.load(name)
    assert set(phrasings.complaints) == {c.id for c in persona.criteria}
    assert all(len(v) >= 5 for v in phrasings.complaints.values())
    task = persona.tasks("train", 1)[0]
    for lines in [*phrasings.complaints.values(), *phrasings.reservations.values()]:
        for line in lines:
            line.format(**task)  # formats with a task
