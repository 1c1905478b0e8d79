"""The GRPO family: group-relative scalar advantages broadcast over the response tokens.

- `grpo`    (Shao et al. 2024, https://arxiv.org/abs/2402.03300):  A_i = (r_i − mean_g r) / (std_g r + ε)
- `dr_grpo` (Liu et al. 2025, https://arxiv.org/abs/2503.20783):   A_i = r_i − mean_g r
            (no std division; pair it with loss_agg=seq-mean-token-sum-norm, its default in algo/dr_grpo)
- `rloo`    (Ahmadian et al. 2024, https://arxiv.org/abs/2402.14740): A_i = r_i − mean_{j≠i, j∈g} r_j
            = n/(n−1) · (r_i − mean_g r)

std is the unbiased sample std. Group statistics run over the samples **with a reward** only
(`reward_mask`): a sample without one is neither counted as a 0 nor given an advantage. A group
with one rewarded sample has no spread and no leave-one-out mean, so these estimators give it A = 0:
live turns (groups of one) need the running `baseline` estimator.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult


def group_stats(rewards: Tensor, group_index: Tensor, present: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Per-sample group mean, unbiased group std and group size over the rewarded samples, each [B].

    `group_index` holds values in [0, B) (as `collate` makes them); buffers are created on the inputs'
    device and dtype, sized B so no value has to be read back from the device."""
    present = torch.ones_like(rewards) if present is None else present.to(rewards.dtype)
    buf = rewards.new_zeros(rewards.shape[0])
    count = buf.clone().index_add_(0, group_index, present)  # rewarded samples per group
    total = buf.clone().index_add_(0, group_index, rewards * present)
    mean = (total / count.clamp(min=1))[group_index]
    sq = buf.clone().index_add_(0, group_index, present * (rewards - mean) ** 2)
    size = count[group_index]
    std = (sq[group_index] / (size - 1).clamp(min=1)).sqrt()
    return mean, std, size


def _broadcast(scalar: Tensor, inputs: AdvantageInputs) -> AdvantageResult:
    present = inputs.reward_present()
    return AdvantageResult(advantages=(scalar * present).unsqueeze(-1) * inputs.response_mask)


@ADVANTAGES.register("grpo")
def grpo(inputs: AdvantageInputs, eps: float = 1e-6, scale_by_std: bool = True) -> AdvantageResult:
    r = inputs.rewards.float()
    mean, std, _ = group_stats(r, inputs.group_index, inputs.reward_present())
    adv = r - mean  # r_i − mean_g(r)
    if scale_by_std:
        adv = torch.where(
            std > 0, adv / (std + eps), torch.zeros_like(adv)
        )  # ÷ (std_g(r) + ε); no spread -> 0 (also for ε = 0)
    return _broadcast(adv, inputs)


@ADVANTAGES.register("dr_grpo")
def dr_grpo(inputs: AdvantageInputs) -> AdvantageResult:
    return grpo(inputs, scale_by_std=False)


@ADVANTAGES.register("rloo")
def rloo(inputs: AdvantageInputs) -> AdvantageResult:
    r = inputs.rewards.float()
    mean, _, n = group_stats(r, inputs.group_index, inputs.reward_present())
    loo_mean = (mean * n - r) / (n - 1).clamp(min=1)  # mean of the other n − 1 rewarded samples
    adv = torch.where(n > 1, r - loo_mean, torch.zeros_like(r))
    return _broadcast(adv, inputs)
