"""PPO clipped surrogate (Schulman et al. 2017, https://arxiv.org/abs/1707.06347) with the
asymmetric clip of DAPO (Yu et al. 2025, https://arxiv.org/abs/2503.14476) and the optional dual
clip of Ye et al. 2020 (https://arxiv.org/abs/1912.09729).

ρ_t = exp(log π_θ(a_t) − log π_old(a_t))
ℓ_t = max(−A_t ρ_t, −A_t clip(ρ_t, 1 − ε_low, 1 + ε_high))
dual clip (A_t < 0 only): ℓ_t = min(ℓ_t, −c · A_t), c > 1 — bounds the loss when ρ explodes on a bad token
importance weights w_t (truncated IS for the rollout/train mismatch, see `tis.py`): ℓ_t ← w_t · ℓ_t

Departure from the paper: the loss is aggregated by `loss_agg` (default token-mean) instead of a
per-sequence mean, so long and short answers weigh each token equally.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.losses.aggregate import aggregate, masked_mean
from claw.registry import Registry

LOSSES: Registry = Registry("policy loss")


@LOSSES.register("ppo_clip", zero_without_advantage=True)  # a row of A = 0 adds nothing, nor to ∇
def ppo_clip_loss(
    logprobs: Tensor,  # [B, T] log π_θ, with grad
    old_logprobs: Tensor,  # [B, T] log π_old, no grad
    advantages: Tensor,  # [B, T]
    response_mask: Tensor,  # [B, T]
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    dual_clip: float | None = None,
    loss_agg: str = "token-mean",
    is_weights: Tensor | None = None,  # [B, T] truncated importance weights, no grad
    loss_agg_norm: float | None = None,  # N of seq-mean-token-sum-norm (the generation budget)
    agg_weights: Tensor | None = None,  # [B, T] aggregation weights over the whole minibatch (see aggregate.py)
) -> tuple[Tensor, dict[str, Tensor]]:
    log_ratio = (logprobs - old_logprobs) * response_mask  # masked tokens: ρ = 1, never inf·0 = NaN
    ratio = torch.exp(log_ratio)  # ρ_t
    unclipped = -advantages * ratio  # −A ρ
    clipped = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)  # −A clip(ρ)
    per_token = torch.maximum(unclipped, clipped)
    dual_frac = per_token.new_zeros(())
    if dual_clip is not None:
        # the bound's precondition; a run's `algo.dual_clip` is checked at start-up by claw/config.py
        if dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be > 1 (got {dual_clip})")
        bound = -dual_clip * advantages  # −c A, positive where A < 0
        dual_hit = (advantages < 0) & (per_token > bound)
        per_token = torch.where(advantages < 0, torch.minimum(per_token, bound), per_token)
        dual_frac = masked_mean(dual_hit.float(), response_mask)
    if is_weights is not None:
        per_token = per_token * is_weights
    loss = aggregate(per_token, response_mask, loss_agg, loss_agg_norm, agg_weights)
    with torch.no_grad():
        metrics = {
            "clip_frac": masked_mean((clipped > unclipped).float(), response_mask),
            "dual_clip_frac": dual_frac,
            "approx_kl": masked_mean(0.5 * log_ratio**2, response_mask),  # k2 estimate of KL(old‖θ)
            "ratio_mean": masked_mean(ratio, response_mask),
        }
    return loss, metrics
