"""GRPO advantages and the PPO clipped loss against values worked out by hand."""

import math

import pytest
import torch

from claw.advantages import ADVANTAGES, AdvantageInputs
from claw.losses import LOSSES, aggregate


def test_grpo_advantages_hand_computed():
    # group 0: r = [1, 0]     mean 0.5, unbiased std = sqrt((0.25 + 0.25) / 1) = 0.70710678 -> A = ±0.70710678
    # group 1: r = [2, 0, 1]  mean 1,   unbiased std = sqrt((1 + 1 + 0) / 2) = 1          -> A = [1, -1, 0]
    rewards = torch.tensor([1.0, 0.0, 2.0, 0.0, 1.0])
    groups = torch.tensor([0, 0, 1, 1, 1])
    mask = torch.ones(5, 2)
    adv = ADVANTAGES.get("grpo")(AdvantageInputs(mask, rewards, groups), eps=0.0).advantages
    expected = torch.tensor([0.70710678, -0.70710678, 1.0, -1.0, 0.0])
    assert torch.allclose(adv[:, 0], expected, atol=1e-6)
    assert torch.allclose(adv[:, 1], expected, atol=1e-6)


def test_grpo_advantages_zero_mean_per_group_and_masked():
    rewards = torch.tensor([0.3, 0.9, 0.1, 5.0, 1.0, 2.0])
    groups = torch.tensor([0, 0, 0, 1, 1, 1])
    mask = torch.tensor([[1, 1, 0]] * 6, dtype=torch.float)
    adv = ADVANTAGES.get("grpo")(AdvantageInputs(mask, rewards, groups)).advantages
    for g in (0, 1):
        assert adv[groups == g, 0].sum().abs() < 1e-5
    assert (adv[:, 2] == 0).all()  # masked tokens carry no advantage


def test_grpo_constant_group_gives_zero():
    adv = ADVANTAGES.get("grpo")(
        AdvantageInputs(torch.ones(3, 1), torch.tensor([1.0, 1.0, 1.0]), torch.tensor([0, 0, 0]))
    ).advantages
    assert torch.equal(adv, torch.zeros(3, 1))


def test_ppo_clip_loss_hand_computed():
    # token 1: ρ = e^0.5  = 1.6487, A = +1 -> max(-1.6487, -clip(ρ)=-1.28) = -1.28 (clipped)
    # token 2: ρ = e^-0.5 = 0.6065, A = -2 -> max(1.2131, 2·0.8 = 1.6)    =  1.6  (clipped)
    # token 3: ρ = e^-0.693 = 0.5,  A = +1 -> max(-0.5, -0.8)             = -0.5 (not clipped)
    # token 4: masked (a huge ratio must not matter)
    # token-mean = (-1.28 + 1.6 - 0.5) / 3 = -0.06
    new = torch.tensor([[0.5, -0.5, math.log(0.5), 10.0]])
    old = torch.zeros(1, 4)
    adv = torch.tensor([[1.0, -2.0, 1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    loss, m = LOSSES.get("ppo_clip")(new, old, adv, mask, clip_low=0.2, clip_high=0.28)
    assert loss.item() == pytest.approx(-0.06, abs=1e-6)
    assert m["clip_frac"].item() == pytest.approx(2 / 3, abs=1e-6)


def test_ppo_ratio_one_has_no_clipping_and_gradient_is_minus_advantage():
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    adv = torch.tensor([[0.5, -1.5]])
    loss, m = LOSSES.get("ppo_clip")(lp, lp.detach(), adv, torch.ones(1, 2))
    loss.backward()
    assert m["clip_frac"].item() == 0.0
    assert torch.allclose(lp.grad, torch.tensor([[-0.25, 0.75]]))  # -A / n_tokens


def test_aggregations_hand_computed():
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert aggregate(loss, mask, "token-mean").item() == pytest.approx(10 / 4)
    assert aggregate(loss, mask, "seq-mean-token-mean").item() == pytest.approx((2.0 + 4.0) / 2)
    assert aggregate(loss, mask, "seq-mean-token-sum-norm", norm=3.0).item() == pytest.approx((6.0 + 4.0) / 2 / 3)
    with pytest.raises(KeyError, match="token-mean"):
        aggregate(loss, mask, "bogus")


def test_registry_unknown_name_lists_choices():
    with pytest.raises(KeyError, match="grpo"):
        ADVANTAGES.get("nope")
