"""Group-relative advantages (GRPO, Shao et al. 2024, https://arxiv.org/abs/2402.03300).

A_i = (r_i - mean_group(r)) / (std_group(r) + eps), broadcast over the response tokens.
std is the unbiased sample std (as in the paper's reference code and TRL); a group of one has
no spread, so its advantage is r_i - r_i = 0 (live turns need a running baseline instead).
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.registry import Registry

ADVANTAGES: Registry = Registry("advantage estimator")


def _group_stats(rewards: Tensor, group_index: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-sample group mean, unbiased group std and group size, each [B]."""
    n_groups = int(group_index.max()) + 1
    count = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, torch.ones_like(rewards))
    total = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, rewards)
    mean = (total / count)[group_index]
    sq = torch.zeros(n_groups, dtype=rewards.dtype).index_add_(0, group_index, (rewards - mean) ** 2)
    size = count[group_index]
    std = (sq[group_index] / (size - 1).clamp(min=1)).sqrt()
    return mean, std, size


@ADVANTAGES.register("grpo")
def grpo_advantages(
    rewards: Tensor,  # [B]
    response_mask: Tensor,  # [B, T]
    group_index: Tensor,  # [B] long
    eps: float = 1e-6,
    scale_by_std: bool = True,
) -> Tensor:  # [B, T]
    mean, std, _ = _group_stats(rewards.float(), group_index)
    adv = rewards.float() - mean  # r_i − mean_group(r)
    if scale_by_std:
        adv = adv / (std + eps)  # ÷ (std_group(r) + ε)
    return adv.unsqueeze(-1) * response_mask
