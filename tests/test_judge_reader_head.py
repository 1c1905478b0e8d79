"""The learned reading beside the rules (`judge.reader_head`, claw/judge/reading/head.py): the head's fit, its file,
the checks on loading it, and how the rule judge lets it override — the last with a stand-in reader, so that the
override logic is tested on its own; the shipped head on the real embedded model is the slow test at the end."""

import asyncio
import threading
import time
from collections import OrderedDict

import numpy as np
import pytest

from claw.judge.reading import head
from claw.judge.reading.head import CLASSES, SHIPPED, FeedbackEncoder, LearnedReader, ReaderHead, fit_head
from claw.judge.rule import RuleBackend, whole_hint
from claw.judge.turn import Turn


def blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 8)) * 4
    labels = np.repeat(np.arange(3), 30)
    return centres[labels] + rng.normal(size=(90, 8)), labels


def test_fit_head_separates_three_classes_and_is_deterministic():
    x, y = blobs()
    head = fit_head(x, y, "enc")
    assert (head.probs(x).argmax(axis=1) == y).mean() > 0.95
    again = fit_head(x, y, "enc")
    np.testing.assert_array_equal(head.weight, again.weight)
    np.testing.assert_allclose(head.probs(x[:5]).sum(axis=1), 1.0)


def test_head_file_round_trips_and_a_malformed_one_is_refused(tmp_path):
    x, y = blobs()
    head = fit_head(x, y, "enc:8")
    head.save(tmp_path / "h.npz")
    back = ReaderHead.load(tmp_path / "h.npz")
    assert back.fingerprint == "enc:8"
    np.testing.assert_array_equal(back.probs(x), head.probs(x))
    np.savez(tmp_path / "bad.npz", mean=head.mean, scale=head.scale, weight=head.weight[:, :2], bias=head.bias,
             fingerprint="enc:8")  # fmt: skip
    with pytest.raises(ValueError, match="shape"):
        ReaderHead.load(tmp_path / "bad.npz")


class Encoder:  # a stand-in feature extractor: 8 numbers from the text's length
    fingerprint = "enc:8"

    def __call__(self, text: str) -> np.ndarray:
        return np.full(8, float(len(text)))


def test_learned_reader_refuses_a_missing_head_and_one_trained_on_another_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="no head at"):
        LearnedReader(tmp_path / "none.npz", encoder=Encoder())
    x, y = blobs()
    fit_head(x, y, "other-model:8").save(tmp_path / "h.npz")
    with pytest.raises(ValueError, match="retrain the head"):
        LearnedReader(tmp_path / "h.npz", encoder=Encoder())


class Reader:  # a stand-in learned reader: a fixed reading per feedback text
    def __init__(self, readings: dict[str, tuple[str, float]]) -> None:
        self.readings = readings

    def reading(self, feedback: str) -> tuple[str, float]:
        return self.readings[feedback]


def turn(reply: str) -> Turn:
    return Turn(
        messages=[{"role": "user", "content": "What is 6 x 7?"}],
        response_text="6 x 7 = 42.",
        next_state=[{"role": "user", "content": reply}],
    )


def backend_with(readings: dict[str, tuple[str, float]], min_p: float = 0.8, flips: bool = False) -> RuleBackend:
    backend = RuleBackend(credit_points=4, reader_head_min_p=min_p, reader_head_flips=flips)
    backend.reader = Reader(readings)
    return backend


def test_the_head_overrides_the_rules_only_where_it_is_sure_of_another_reading():
    unsure, sure = "the kids' teacher will look at it tomorrow", "my teacher circled this one in red"
    backend = backend_with({unsure: ("correct", 0.6), sure: ("correct", 0.9), "Thanks, perfect!": ("approve", 0.99)})
    assert backend.score_turn(turn(unsure))[0] == 0  # the rules' reading stands below min_p
    assert backend.hint_for(turn(unsure)) is None
    score, rationale = backend.score_turn(turn(sure))
    assert score == -1 and "learned" in rationale
    assert backend.graded_score(turn(sure)) == -0.25  # one complaint under linear credit, K = 4
    assert backend.hint_for(turn(sure)) == sure  # the rules found no corrective part: the whole message is the hint
    assert backend.score_turn(turn("Thanks, perfect!")) == RuleBackend().score_turn(turn("Thanks, perfect!"))


def test_a_head_that_reads_no_verdict_clears_a_rules_correction_and_its_hint():
    reply = "No, it's 48."
    backend = backend_with({reply: ("neutral", 0.95)})
    assert RuleBackend().score_turn(turn(reply))[0] == -1
    assert backend.score_turn(turn(reply))[0] == 0
    assert backend.graded_score(turn(reply)) == 0.0
    assert backend.hint_for(turn(reply)) is None


def test_the_head_never_turns_an_approval_into_a_correction_or_back_unless_flips_is_on():
    mixed, thanks = "Good, no padding. Cut it down though, it's long.", "Thanks, perfect!"
    readings = {mixed: ("approve", 0.97), thanks: ("correct", 0.97)}
    rules = RuleBackend(credit_points=4)
    assert rules.score_turn(turn(mixed))[0] == -1 and rules.score_turn(turn(thanks))[0] == 1
    guarded = backend_with(readings)
    for reply in (mixed, thanks):  # a sign flip is the one error that inverts a reward: the rules' reading stands
        assert guarded.score_turn(turn(reply)) == rules.score_turn(turn(reply))
        assert guarded.graded_score(turn(reply)) == rules.graded_score(turn(reply))
        assert guarded.hint_for(turn(reply)) == rules.hint_for(turn(reply))
    flipping = backend_with(readings, flips=True)
    assert flipping.score_turn(turn(mixed))[0] == 1 and flipping.hint_for(turn(mixed)) is None
    assert flipping.score_turn(turn(thanks))[0] == -1


class SlowReader(Reader):  # a reader whose every reading takes as long as a forward pass on a busy CPU, or longer
    def reading(self, feedback: str) -> tuple[str, float]:
        time.sleep(0.3)
        return super().reading(feedback)


def test_the_learned_reading_runs_off_the_event_loop_so_a_proxy_keeps_serving_while_it_reads():
    from claw.judge.hint import HintJudge
    from claw.judge.prm import PRMJudge

    reply = "my teacher circled this one in red"
    backend = RuleBackend(credit_points=4)
    backend.reader = SlowReader({reply: ("correct", 0.9)})
    prm, hint = PRMJudge(backend, m=1, credit="graded"), HintJudge(backend, m=1, min_hint_chars=5)

    async def judged_while_ticking():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        verdict, hinted = await asyncio.gather(prm.judge(turn(reply)), hint.extract(turn(reply)))
        task.cancel()
        return verdict, hinted, ticks

    verdict, hinted, ticks = asyncio.run(judged_while_ticking())
    assert verdict.score == -1 and verdict.reward == -0.25 and hinted.hint == reply
    assert ticks >= 20  # the loop ran all the while (0.9 s of readings: vote, graded credit, hint); blocked: ~once


def test_a_slow_reading_is_waited_for_so_a_busy_machine_gives_the_same_hint_and_vote():
    # The rules run locally and always end: judge.timeout_s is for a model behind an endpoint. With a 5 s limit on
    # a loaded CPU the reader's forward passes (serialised by its lock) outlasted it, and the same feedback line
    # gave a hint in one run and none in the next, so one config and seed trained differently.
    from claw.judge.hint import HintJudge
    from claw.judge.prm import PRMJudge

    reply = "my teacher circled this one in red"
    backend = RuleBackend(credit_points=4)
    backend.reader = SlowReader({reply: ("correct", 0.9)})
    prm = PRMJudge(backend, m=1, credit="graded", timeout_s=0.05)
    hint = HintJudge(backend, m=1, min_hint_chars=5, timeout_s=0.05)

    async def both():
        return await asyncio.gather(prm.judge(turn(reply)), hint.extract(turn(reply)))

    verdict, hinted = asyncio.run(both())
    assert verdict.votes == [-1] and verdict.n_abstain == 0 and verdict.error is None
    assert hinted.accepted and hinted.hint == reply and hinted.error is None


def test_whole_hint_drops_the_lead_in_and_gives_none_for_a_bare_verdict():
    assert whole_hint("hmm, my teacher circled this one in red") == "my teacher circled this one in red"
    assert whole_hint("Nope.") is None
    assert whole_hint("ugh 🙄") is None


def test_min_p_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="reader_head_min_p"):
        RuleBackend(reader_head_min_p=1.5)


@pytest.mark.slow
def test_the_shipped_head_reads_clear_lines_on_the_embedded_model():
    reader = LearnedReader("shipped")
    assert SHIPPED.is_file() and reader.head.weight.shape[1] == len(CLASSES)
    assert reader.reading("Works perfectly now, thank you so much!")[0] == "approve"
    assert reader.reading("That's wrong, 6 x 7 is 42, not 48.")[0] == "correct"
    assert reader.reading("ok and what about 7 x 8?")[0] == "neutral"


def test_a_judge_config_without_the_head_keys_builds_the_rules_alone():
    from omegaconf import OmegaConf

    from claw.judge.build import build_judges

    cfg = OmegaConf.create({"kind": "rule", "m": 1, "timeout_s": 5.0, "max_concurrency": 2, "min_hint_chars": 10,
                            "prm_prompt": "prm.yaml", "hint_prompt": "hint.yaml", "credit_points": 4})  # fmt: skip
    backend = build_judges(cfg).backend
    assert backend.reader is None and backend.reader_head_min_p == 0.8 and backend.credit_points == 4


class CountingEncoder(FeedbackEncoder):  # the encoder's cache on its own: `_encode` stands in for the model
    def __init__(self) -> None:
        self._cache = OrderedDict()
        self._lock = threading.Lock()
        self.encoded: list[str] = []

    def _encode(self, feedback: str) -> np.ndarray:
        self.encoded.append(feedback)
        return np.array([float(len(feedback))])


def test_the_feature_cache_keeps_the_most_recently_read_texts_and_no_more(monkeypatch):
    monkeypatch.setattr(head, "CACHE_SIZE", 2)
    encoder = CountingEncoder()
    for text in ["a", "bb", "a", "ccc", "a", "bb"]:
        assert encoder(text)[0] == len(text)
    # "a" is read again before "ccc" arrives, so "bb" is the least recent and the one dropped; "a" stays cached
    assert encoder.encoded == ["a", "bb", "ccc", "bb"]
    assert list(encoder._cache) == ["a", "bb"]
