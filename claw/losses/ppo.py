"""PPO clipped surrogate (Schulman et al. 2017, https://arxiv.org/abs/1707.06347) with the
asymmetric clip of DAPO (Yu et al. 2025, https://arxiv.org/abs/2503.14476).

ρ_t = exp(log π_θ(a_t) − log π_old(a_t))
ℓ_t = max(−A_t ρ_t, −A_t clip(ρ_t, 1 − ε_low, 1 + ε_high))

Departure from the paper: the loss is aggregated by `loss_agg` (default token-mean) instead
of a per-sequence mean, so long and short answers weigh each token equally.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.losses.aggregate import aggregate
from claw.registry import Registry

LOSSES: Registry = Registry("policy loss")


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


@LOSSES.register("ppo_clip")
def ppo_clip_loss(
    logprobs: Tensor,  # [B, T] log π_θ, with grad
    old_logprobs: Tensor,  # [B, T] log π_old, no grad
    advantages: Tensor,  # [B, T]
    response_mask: Tensor,  # [B, T]
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    loss_agg: str = "token-mean",
) -> tuple[Tensor, dict[str, Tensor]]:
    log_ratio = logprobs - old_logprobs
    ratio = torch.exp(log_ratio)  # ρ_t
    unclipped = -advantages * ratio  # −A ρ
    clipped = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)  # −A clip(ρ)
    per_token = torch.maximum(unclipped, clipped)
    loss = aggregate(per_token, response_mask, loss_agg)
    with torch.no_grad():
        metrics = {
            "clip_frac": masked_mean((clipped > unclipped).float(), response_mask),
            "approx_kl": masked_mean(0.5 * log_ratio**2, response_mask),  # k2 estimate of KL(old‖θ)
            "ratio_mean": masked_mean(ratio, response_mask),
        }
    return loss, metrics
