"""Clipped value loss for the critic (PPO; as in OpenAI baselines / verl).

L_V = ½ · max((V − R)², (clip(V, V_old − ε, V_old + ε) − R)²), aggregated with `loss_agg`.

`explained_variance` = 1 − Var(R − V) / Var(R) over a whole rollout batch's trainable tokens (the module logs it
once per batch, from V_old: a variance ratio of a micro-batch would depend on how the batch was split).
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.losses.aggregate import aggregate, masked_mean


def value_loss(
    values: Tensor,  # [B, T] V_θ, with grad
    old_values: Tensor,  # [B, T] V_old (before this rollout batch's updates)
    returns: Tensor,  # [B, T] targets
    response_mask: Tensor,  # [B, T]
    clip: float = 0.2,
    loss_agg: str = "token-mean",
    loss_agg_norm: float | None = None,
    agg_weights: Tensor | None = None,  # [B, T] aggregation weights over the whole minibatch
) -> tuple[Tensor, dict[str, Tensor]]:
    clipped_v = old_values + (values - old_values).clamp(-clip, clip)
    unclipped_l = (values - returns) ** 2
    clipped_l = (clipped_v - returns) ** 2
    loss = 0.5 * aggregate(torch.maximum(unclipped_l, clipped_l), response_mask, loss_agg, loss_agg_norm, agg_weights)
    with torch.no_grad():
        metrics = {
            "value_clip_frac": masked_mean((clipped_l > unclipped_l).float(), response_mask),
            "value_mean": masked_mean(values, response_mask),
        }
    return loss, metrics


@torch.no_grad()
def explained_variance(values: Tensor, returns: Tensor, response_mask: Tensor) -> Tensor:
    """1 − Var(R − V) / Var(R) over the masked tokens: 1 for a perfect critic, 0 for a constant one."""
    var_r = masked_mean((returns - masked_mean(returns, response_mask)) ** 2, response_mask)
    err = returns - values
    var_err = masked_mean((err - masked_mean(err, response_mask)) ** 2, response_mask)
    return 1.0 - var_err / var_r.clamp(min=1e-8)
