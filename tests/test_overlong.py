"""`algo.overlong`: what a reply cut at the token budget is worth (claw/advantages/overlong.py).

Hand-computed values; the end-to-end test trains the tiny policy on a batch with one cut reply and
checks that `mask` leaves that reply's tokens without gradient while `penalty` changes its advantage.
"""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from claw.advantages.overlong import shape_overlong
from claw.config import objective_from_cfg
from claw.objective import Objective, ObjectiveConfig
from claw.types import Sample, collate
from tests.conftest import make_cfg

REWARDS = torch.tensor([-0.75, -0.80, 1.0, 0.0])
REWARD_MASK = torch.tensor([1.0, 1.0, 1.0, 0.0])  # the last reply was not judged
RESPONSE_MASK = torch.ones(4, 3)
FINISHED = torch.tensor([1.0, 0.0, 1.0, 0.0])  # replies 1 and 3 were cut at the budget


def test_penalty_lowers_only_judged_cut_replies():
    r, rm, mask = shape_overlong(REWARDS, REWARD_MASK, RESPONSE_MASK, FINISHED, "penalty", 0.5)
    # reply 1: -0.80 - 0.5 = -1.30; reply 3 is cut but has no reward: it stays 0 and unjudged
    assert torch.allclose(r, torch.tensor([-0.75, -1.30, 1.0, 0.0]))
    assert torch.equal(rm, REWARD_MASK) and torch.equal(mask, RESPONSE_MASK)


def test_mask_drops_cut_replies_from_the_objective():
    r, rm, mask = shape_overlong(REWARDS, REWARD_MASK, RESPONSE_MASK, FINISHED, "mask")
    assert torch.allclose(r, torch.tensor([-0.75, 0.0, 1.0, 0.0]))
    assert torch.equal(rm, torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert mask[1].sum() == 0 and mask[3].sum() == 0 and mask[0].sum() == 3 and mask[2].sum() == 3


def test_none_and_inputs_untouched():
    before = REWARDS.clone()
    r, rm, mask = shape_overlong(REWARDS, REWARD_MASK, RESPONSE_MASK, FINISHED, "none", 0.5)
    assert r is REWARDS and rm is REWARD_MASK and mask is RESPONSE_MASK
    shape_overlong(REWARDS, REWARD_MASK, RESPONSE_MASK, FINISHED, "penalty", 0.5)
    assert torch.equal(REWARDS, before)  # pure


def test_unknown_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="algo.overlong.mode must be one of"):
        shape_overlong(REWARDS, REWARD_MASK, RESPONSE_MASK, FINISHED, "clip")
    with pytest.raises(ValueError, match="algo.overlong.mode"):
        ObjectiveConfig(advantage="baseline", overlong="filter")


def _samples() -> list[Sample]:
    return [
        Sample([1, 2], [3, 4], [-1.0, -1.0], 0.7, 0, reward=-0.75, finished=True),
        Sample([1, 2], [5, 6, 7], [-1.0, -1.0, -1.0], 0.7, 0, reward=-0.80, finished=False),
    ]


def test_collate_carries_finished_and_select_keeps_it():
    batch = collate(_samples(), pad_id=0)
    assert torch.equal(batch.finished, torch.tensor([1.0, 0.0]))
    assert torch.equal(batch.select(torch.tensor([1])).finished, torch.tensor([0.0]))


def test_objective_shape_from_the_algo_config():
    cfg = make_cfg(["algo.overlong.mode=penalty", "algo.overlong.penalty=0.25"])
    objective = Objective(objective_from_cfg(cfg))
    batch = collate(_samples(), pad_id=0)
    shaped = objective.shape(batch)
    assert torch.allclose(shaped.rewards, torch.tensor([-0.75, -1.05]))  # -0.80 - 0.25
    assert torch.allclose(batch.rewards, torch.tensor([-0.75, -0.80]))  # the rollout batch is unchanged
    default = make_cfg([])
    assert Objective(objective_from_cfg(default)).config.overlong == OmegaConf.select(default, "algo.overlong.mode")


def test_penalty_turns_a_finished_replys_advantage_positive():
    """The teacher-persona case: every reward negative, cut replies nearly as bad as finished ones. With the
    batch-mean baseline (reinforce's warm start), the finished reply's advantage flips sign under the penalty."""
    batch = collate(_samples(), pad_id=0)
    plain = Objective(ObjectiveConfig(advantage="baseline"))
    shaped = Objective(ObjectiveConfig(advantage="baseline", overlong="penalty", overlong_penalty=0.5))
    a_plain = plain.advantages(plain.shape(batch), None).advantages
    a_shaped = shaped.advantages(shaped.shape(batch), None).advantages
    # leave-one-out baseline for a batch without history: reply 0's baseline is reply 1's reward
    assert torch.allclose(a_plain[0, :2], torch.tensor([0.05, 0.05]))  # -0.75 - (-0.80)
    assert torch.allclose(a_shaped[0, :2], torch.tensor([0.55, 0.55]))  # -0.75 - (-1.30)


def test_opd_skip_end_reaches_the_objective_through_finished():
    """mode.opd_skip_end from the config, and `finished` from the collated batch: the finished reply's last token
    (its end-of-turn token) trains no OPD gap; the cut reply has none, so all its tokens keep theirs."""
    from claw.objective import OldOutputs

    samples = [
        Sample([1, 2], [3, 4], [-1.0, -1.0], 0.7, 0, finished=True, teacher_logprobs=[-1.5, -3.0]),
        Sample([1, 2], [5, 6, 7], [-1.0, -1.0, -1.0], 0.7, 0, finished=False, teacher_logprobs=[-1.5, -1.5, -3.0]),
    ]
    batch = collate(samples, pad_id=0)
    old = OldOutputs(logprobs=torch.full(batch.response_mask.shape, -1.0))
    on = Objective(objective_from_cfg(make_cfg(["mode=opd", "mode.opd_skip_end=true"])))
    off = Objective(objective_from_cfg(make_cfg(["mode=opd"])))
    assert torch.allclose(off.advantages(batch, old).advantages, torch.tensor([[-0.5, -2.0, 0.0], [-0.5, -0.5, -2.0]]))
    assert torch.allclose(on.advantages(batch, old).advantages, torch.tensor([[-0.5, 0.0, 0.0], [-0.5, -0.5, -2.0]]))
