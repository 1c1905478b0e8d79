"""experiments/personal_agent/headroom.py and imitation.py: the two ceilings the teacher persona's diagnosis rests on.
Their prompts must be the held-out evaluation's, their demonstrations must meet every criterion, and imitation must
really train on them."""

import importlib
import random
import sys

import pytest

from claw.users.persona import Persona

sys.path.insert(0, "experiments/personal_agent")
headroom = importlib.import_module("headroom")
imitation = importlib.import_module("imitation")


@pytest.mark.parametrize("name", ["teacher", "student"])
def test_every_demonstration_meets_every_criterion(name):
    persona, rng = Persona.load(name), random.Random(0)
    for seed in (0, 1, 2):
        for task in persona.tasks("train", 100, seed=seed) + persona.tasks("eval", 64, seed=seed):
            reply = imitation.demonstration(persona, task, rng)
            assert persona.rate({"role": "assistant", "content": reply}, task).score == 1.0, reply


def test_no_demonstrations_for_a_persona_without_templates():
    persona = Persona.load("personas/heldout/bookkeeper.yaml")
    with pytest.raises(SystemExit, match="no demonstrations"):
        imitation.demonstration(persona, persona.tasks("train", 1, seed=0)[0], random.Random(0))


def test_best_of_k_is_the_mean_of_each_tasks_best_among_its_first_k():
    scores = [[0.2, 0.8, 0.4], [0.6, 0.0, 1.0]]
    assert headroom.best_of(scores, 1) == pytest.approx(0.4)
    assert headroom.best_of(scores, 2) == pytest.approx(0.7)
    assert headroom.best_of(scores, 3) == pytest.approx(0.9)


def test_the_prompts_are_the_held_out_evaluations(tiny_policy, tmp_path):
    # headroom and imitation claim to rate replies to the very prompts `train.py`'s evaluation decodes
    from claw.engine.hf import HFEngine
    from claw.sources.proxy.render import ChatRenderer
    from claw.sources.simulated_user import SimulatedUserSource

    engine = HFEngine(tiny_policy, seed=0)
    source = SimulatedUserSource(engine, tiny_policy.tokenizer, tmp_path, persona="teacher", eval_size=5, seed=1,
                                 max_new_tokens=4, eval_repair=False)  # fmt: skip
    seen: list[list[int]] = []

    def recording(prompts, sampling):
        seen.extend(prompts)
        return engine.generate(prompts, sampling)

    source.evaluate(generate=recording)
    persona = Persona.load("teacher")
    assert source.eval_tasks == persona.tasks("eval", 5, seed=1)
    assert seen == headroom.eval_prompts(persona, source.eval_tasks, ChatRenderer(tiny_policy.tokenizer))


def test_imitation_lowers_the_demonstrations_loss(tiny_policy):
    import copy

    policy = copy.deepcopy(tiny_policy)
    persona = Persona.load("teacher")
    tasks = persona.tasks("train", 4, seed=0)
    losses = imitation.imitate(policy, persona, tasks * 6, lr=3e-3, steps=6, batch=4, rng=random.Random(0),
                               log=lambda _: None)  # fmt: skip
    assert len(losses) == 6 and losses[-1] < losses[0] - 0.5
    before = tiny_policy.model.state_dict()
    assert any((p != before[k]).any() for k, p in policy.model.state_dict().items())
