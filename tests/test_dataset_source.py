"""The dataset source: groups of n samples of one prompt, rewards from the verifier, background filling."""

import pytest

from claw.engine import Generation, HFEngine, SamplingParams
from claw.rollout.dataset_source import DatasetSource
from claw.rollout.queue import RolloutQueue
from claw.tasks.arithmetic import generate, parse_answer, reward


@pytest.mark.parametrize(
    "text,value",
    [
        ("12 + 7 = 19", 19),
        ("The answer is 42.", 42),
        ("Answer: 1,234", 1234),
        ("First 3 then 5, so the answer is 8. Check: 8 - 5 = 3", 8),
        ("no number here", None),
    ],
)
def test_parse_answer(text, value):
    assert parse_answer(text) == value


def test_reward_exact_integer():
    assert reward("so 19", 19) == 1.0
    assert reward("so 19.5", 19) == 0.0
    assert reward("nothing", 19) == 0.0


def test_generated_splits_are_disjoint_and_seeded():
    tr, te = generate(200, 50, seed=3)
    assert not {p["question"] for p in tr} & {p["question"] for p in te}
    assert generate(200, 50, seed=3) == (tr, te)
    assert all(isinstance(p["answer"], int) and p["answer"] > 0 for p in tr + te)


class ScriptedEngine:
    """A stand-in engine that answers each prompt with fixed text (isolates the source's logic)."""

    version = 5

    def __init__(self, tok, texts):
        self.tok, self.texts, self.calls = tok, texts, 0

    def generate(self, prompts, sampling):
        out = []
        for i, _ in enumerate(prompts):
            ids = self.tok.encode(self.texts[i % len(self.texts)], add_special_tokens=False)
            out.append(Generation(ids, [-0.5] * len(ids), True, self.version))
        self.calls += 1
        return out


def test_groups_and_rewards(tiny_policy, tmp_path):
    tok = tiny_policy.tokenizer
    src = DatasetSource(ScriptedEngine(tok, ["x"]), tok, "data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl", n=3, prompts_per_generate=2)
    answer0 = src.problem(0)["answer"]
    src.engine.texts = [f"The answer is {answer0}.", "The answer is -1.", f"so {answer0}"]
    groups = src.make_groups(0, 2)
    assert len(groups) == 2 and all(len(g) == 3 for g in groups)
    g0 = groups[0]
    assert len({s.group_id for s in g0}) == 1 and groups[1][0].group_id != g0[0].group_id
    assert [s.reward for s in g0] == [1.0, 0.0, 1.0]
    assert all(s.prompt_ids == g0[0].prompt_ids and s.policy_version == 5 for s in g0)
    assert tok.decode(g0[0].prompt_ids).rstrip().endswith("assistant")  # chat template with generation prompt
    assert g0[0].info["answer"] == answer0


def test_background_thread_fills_queue_and_stops(tiny_policy, tmp_path):
    eng = HFEngine(tiny_policy)
    src = DatasetSource(
        eng, tiny_policy.tokenizer, "data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl", n=2, prompts_per_generate=2, max_new_tokens=4, max_groups=3
    )
    q = RolloutQueue(tmp_path / "s.jsonl", max_size=100, fsync=False)
    src.start(q)
    src._thread.join(timeout=60)
    assert src.error is None and src.produced == 3 and len(q) == 6
    t = q.take(6, 0, timeout=1)
    assert len({s.group_id for s in t.samples}) == 3
    assert all(len(s.response_ids) <= 4 and s.temperature == 1.0 for s in t.samples)


def test_rejects_greedy_training_samples(tiny_policy):
    with pytest.raises(ValueError, match="temperature"):
        DatasetSource(None, tiny_policy.tokenizer, "data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl", temperature=0.0)


def test_sampling_params_default_full_distribution():
    assert SamplingParams().temperature == 1.0 and SamplingParams().stop_token_ids == ()
