"""The verifier registry (claw/tasks/verifiers.py): hand-checked rewards, how `source.reward` is built, bad input."""

import logging

import pytest

from claw.tasks.verifiers import VERIFIERS, VerifierError, build_verifier, exact_match, numeric_answer, regex_match


def test_registered_verifiers():
    assert VERIFIERS.names() == ["exact_match", "numeric_answer", "regex_match"]


def test_numeric_answer_reads_the_final_number():
    texts = ["12 + 7 = 19", "The answer is 1,234.", "so 19.5", "nothing", "Answer: 3.5"]
    assert numeric_answer(texts, [19, "1234", 19, 19, "3.5"]) == [1.0, 1.0, 0.0, 0.0, 1.0]
    assert numeric_answer(["about 3.14"], [3.14159], tolerance=0.01) == [1.0]
    with pytest.raises(ValueError, match="not a number; use exact_match or regex_match"):
        numeric_answer(["12"], ["twelve"])


def test_exact_match_normalises_whitespace_quotes_full_stop_and_case():
    assert exact_match(
        ['  "Paris". ', "paris", "Paris is the capital", "new  york"], ["Paris", "Paris", "Paris", "New York"]
    ) == [1.0, 1.0, 0.0, 1.0]
    assert exact_match(["paris"], ["Paris"], ignore_case=False) == [0.0]
    assert exact_match(["15"], [15]) == [1.0]


def test_regex_match_whole_word_escaped_answer_and_first_label():
    assert regex_match(["It is -4.", "It is 14.", "GARDEN", "garden"], ["-4", "4", "GARDEN", "GARDEN"]) == [
        1.0,
        0.0,
        1.0,
        0.0,
    ]
    assert regex_match(["3a5"], ["3.5"]) == [0.0]  # the answer is escaped: "." is not a wildcard
    tagged = r"<answer>\s*{answer}\s*</answer>"
    assert regex_match(["<answer> 7 </answer>", "7"], [7, 7], pattern=tagged) == [1.0, 0.0]
    first = r"^(?:(?!positive|negative)[\s\S])*{answer}"  # the review-sentiment experiment's pattern
    replies = [
        "This review is negative.",
        "Positive or negative: negative",
        "NEGATIVE",
        "It is not positive; negative.",
    ]
    assert regex_match(replies, ["negative"] * 4, pattern=first, ignore_case=True) == [1.0, 0.0, 1.0, 0.0]


# A user's own reward functions, imported by path the way a config names them.
def trl_style(prompts, completions, **kwargs):
    """TRL's signature: every column arrives as a keyword list."""
    return [float(c.strip() == unit) for c, unit in zip(completions, kwargs["unit"])]


def answer_only(completions, answer):
    return [float(str(a) in c) for c, a in zip(completions, answer)]


def needs_solution(completions, solution):
    return [0.0 for _ in completions]


def with_threshold(completions, answer, threshold):
    return [float(len(c) >= threshold) for c in completions]


class LengthReward:
    def __init__(self, target: int) -> None:
        self.target = target

    def __call__(self, completions, **_):
        return [float(len(c) == self.target) for c in completions]


def raises_on_boom(completions, answer, **_):
    if any("boom" in c for c in completions):
        raise RuntimeError("cannot parse boom")
    return [1.0 if c == str(a) else 0.0 for c, a in zip(completions, answer)]


def score(v, completions, rows, answer_field="answer"):
    return v.score(
        ["p"] * len(completions),
        completions,
        rows,
        [r[answer_field] for r in rows],
        [f"row {i}" for i in range(len(rows))],
    )


def test_a_users_function_by_path_gets_the_columns_it_asks_for():
    rows = [{"q": "a", "unit": "km", "answer": 1}, {"q": "b", "unit": "m", "answer": 2}]
    for target in ("tests.test_verifiers:trl_style", "tests.test_verifiers.trl_style"):
        assert score(build_verifier({"_target_": target}), ["km", "km"], rows)[0] == [1.0, 0.0]
    v = build_verifier("tests.test_verifiers.answer_only")  # no **kwargs: only completions and answer are passed
    v.check(["q", "unit", "answer"])
    assert score(v, ["it is 1", "it is 3"], rows)[0] == [1.0, 0.0]


def test_config_keys_are_bound_and_a_class_is_constructed():
    rows = [{"answer": 1}, {"answer": 2}]
    assert score(
        build_verifier({"_target_": "tests.test_verifiers.with_threshold", "threshold": 3}), ["abc", "ab"], rows
    )[0] == [1.0, 0.0]
    assert score(build_verifier({"_target_": "tests.test_verifiers.LengthReward", "target": 2}), ["abc", "ab"], rows)[
        0
    ] == [0.0, 1.0]
    v = build_verifier(
        {"_target_": "regex_match", "pattern": "^{answer}$", "_partial_": True}
    )  # Hydra's _partial_ is accepted
    assert score(v, ["1", "x2"], rows)[0] == [1.0, 0.0]


@pytest.mark.parametrize(
    "spec,error,match",
    [
        ({"_target_": "numeric"}, ValueError, "not registered .*exact_match, numeric_answer, regex_match"),
        ({"_target_": "no_such_pkg.rewards.fn"}, ValueError, "cannot import 'no_such_pkg.rewards'.*importable"),
        ({"_target_": "tests.test_verifiers.missing_fn"}, ValueError, "has no 'missing_fn'"),
        ({"_target_": "regex_match", "patern": "x"}, TypeError, "no option patern; its options: pattern, ignore_case"),
        ({"_target_": "tests.test_verifiers.answer_only", "tolerance": 1}, TypeError, "does not take tolerance"),
        ({"pattern": "x"}, ValueError, "give {_target_: <one of"),
    ],
)
def test_a_bad_reward_spec_names_the_fix(spec, error, match):
    with pytest.raises(error, match=match):
        build_verifier(spec)


def test_an_argument_claw_does_not_pass_fails_before_training():
    with pytest.raises(TypeError, match="needs 'solution', which claw does not pass.*columns question, answer"):
        build_verifier("tests.test_verifiers.needs_solution").check(["question", "answer"])
    build_verifier("tests.test_verifiers.needs_solution").check(
        ["question", "solution"]
    )  # a column of that name is passed


def test_a_row_the_verifier_raises_on_scores_zero_with_a_warning(caplog):
    v = build_verifier("tests.test_verifiers.raises_on_boom")
    rows = [{"answer": 1}, {"answer": 2}, {"answer": 3}]
    with caplog.at_level(logging.WARNING, logger="claw.tasks.verifiers"):
        rewards, errors = score(v, ["1", "boom", "3"], rows)
    assert rewards == [1.0, 0.0, 1.0]
    assert errors[0] is None and errors[1] == "RuntimeError: cannot parse boom" and errors[2] is None
    assert v.errors == 1 and "failed on row 1 (RuntimeError: cannot parse boom); it scores 0.0" in caplog.text


def test_a_verifier_that_fails_everywhere_or_returns_the_wrong_shape_stops_the_run():
    rows = [{"answer": 1}, {"answer": 2}]
    with pytest.raises(VerifierError, match="failed on every completion of the batch; the first, row 0: RuntimeError"):
        score(build_verifier("tests.test_verifiers.raises_on_boom"), ["boom", "boom"], rows)
    with pytest.raises(VerifierError, match="returned 1 values for 2 completions"):
        score(build_verifier(lambda completions, **_: [1.0]), ["a", "b"], rows)
    with pytest.raises(VerifierError, match="returned float"):
        score(build_verifier(lambda completions, **_: 1.0), ["a", "b"], rows)


def test_none_or_nan_scores_zero_as_a_failed_row():
    rewards, errors = score(
        build_verifier(lambda completions, **_: [None, float("nan"), 0.5]), ["a", "b", "c"], [{"answer": 0}] * 3
    )
    assert rewards == [0.0, 0.0, 0.5] and errors[0] == "returned None, not a finite number" and errors[2] is None
