"""The GRPO family: group-relative scalar advantages broadcast over the response tokens.

- `grpo`    (Shao et al. 2024, https://arxiv.org/abs/2402.03300):  A_i = (r_i − mean_g r) / (std_g r + ε)
- `dr_grpo` (Liu et al. 2025, https://arxiv.org/abs/2503.20783):   A_i = r_i − mean_g r
            (no std division; pair it with loss_agg=seq-mean-token-sum-norm, its default in algo/dr_grpo)
- `rloo`    (Ahmadian et al. 2024, https://arxiv.org/abs/2402.14740): A_i = r_i − mean_{j≠i, j∈g} r_j
            = n/(n−1) · (r_i − mean_g r)

std is the unbiased sample std. A group of one has no spread and no leave-one-out mean, so these
estimators give it A = 0: live turns (groups of one) need the running `baseline` estimator.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult


def group_stats(rewards: Tensor, group_index: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-sample group mean, unbiased group std and group size, each [B]."""
    n_groups = int(group_index.max()) + 1
    count = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, torch.ones_like(rewards))
    total = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, rewards)
    mean = (total / count)[group_index]
    sq = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, (rewards - mean) ** 2)
    size = count[group_index]
    std = (sq[group_index] / (size - 1).clamp(min=1)).sqrt()
    return mean, std, size


def _broadcast(scalar: Tensor, inputs: AdvantageInputs) -> AdvantageResult:
    present = inputs.reward_present()
    return AdvantageResult(advantages=(scalar * present).unsqueeze(-1) * inputs.response_mask)


@ADVANTAGES.register("grpo")
def grpo(inputs: AdvantageInputs, eps: float = 1e-6, scale_by_std: bool = True) -> AdvantageResult:
    r = inputs.rewards.float()
    mean, std, _ = group_stats(r, inputs.group_index)
    adv = r - mean  # r_i − mean_g(r)
    if scale_by_std:
        adv = torch.where(std > 0, adv / (std + eps), torch.zeros_like(adv))  # ÷ (std_g(r) + ε); no spread -> 0 (also for ε = 0)
    return _broadcast(adv, inputs)


@ADVANTAGES.register("dr_grpo")
def dr_grpo(inputs: AdvantageInputs) -> AdvantageResult:
    return grpo(inputs, scale_by_std=False)


@ADVANTAGES.register("rloo")
def rloo(inputs: AdvantageInputs) -> AdvantageResult:
    r = inputs.rewards.float()
    mean, _, n = group_stats(r, inputs.group_index)
    loo_mean = (mean * n - r) / (n - 1).clamp(min=1)  # mean of the other n − 1 rewards
    adv = torch.where(n > 1, r - loo_mean, torch.zeros_like(r))
    return _broadcast(adv, inputs)
