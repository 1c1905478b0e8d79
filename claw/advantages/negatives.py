"""How much a push *down* weighs against a push up: `algo.negative_weight`.

    A'_t = A_t            where A_t ≥ 0
    A'_t = w · A_t        where A_t < 0        (w = algo.negative_weight; 1 = the plain estimator)

Applied to the final per-token advantage of every mode (after rl / opd / combine), before the loss.
Why: a negative advantage lowers the sampled tokens' probability but does not say where the mass goes;
it goes to the policy's next most likely continuation. With a user who corrects most replies (the
teacher persona, mean reward ≈ −0.7), that displacement is what spreads a conceding opening no
sampled reply was rewarded for (experiments/personal_agent/log.md, 2026-12-03).
w < 1 keeps the signal's direction and lets what was approved lead — the same family as a baseline
shifted below the mean (AsymRE, Arnal et al. 2025) and W-REINFORCE (Zhu et al. 2025, which weights
the positive side instead). The loss's clip and TIS weights are unchanged. Pure: the input is not modified.
"""

from __future__ import annotations

import torch
from torch import Tensor


def weight_negatives(advantages: Tensor, weight: float) -> Tensor:
    """Advantages with their negative entries scaled by `weight` (≥ 0); weight 1 returns the input."""
    if weight < 0:
        raise ValueError(f"algo.negative_weight={weight} must be ≥ 0 (1: the plain estimator; 0: positives only)")
    if weight == 1.0:
        return advantages
    return torch.where(advantages < 0, advantages * weight, advantages)
