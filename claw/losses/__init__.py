"""Losses: pure functions; the policy losses sit in one registry (`LOSSES`).

Policy loss signature: ``fn(logprobs, old_logprobs, advantages, response_mask, **kwargs) -> (loss, metrics)``
with every tensor [B, T] and `loss` a scalar. The other terms:

| term | function | config |
|---|---|---|
| PPO clipped surrogate (asymmetric, dual clip) | `ppo_clip_loss` | `algo.clip_low/clip_high/dual_clip` |
| clipped value loss | `value_loss` | `algo.value_clip`, `algo.value_coef` |
| KL to a frozen reference (k1, k2, k3) | `KL_ESTIMATORS` | `algo.kl_coef`, `algo.kl_estimator` |
| entropy bonus | `claw.logprobs.entropy_from_logits` | `algo.entropy_coef` |
| truncated importance weights | `tis_weights` | `algo.tis.*` |
| top-K reverse KL with a tail bin | `topk_reverse_kl` | `mode.topk` |
"""

from claw.losses.aggregate import AGGREGATIONS, aggregate, masked_mean, token_weights
from claw.losses.kl import KL_ESTIMATORS
from claw.losses.ppo import LOSSES, ppo_clip_loss
from claw.losses.tis import tis_weights
from claw.losses.topk import topk_reverse_kl
from claw.losses.value import explained_variance, value_loss

__all__ = [
    "AGGREGATIONS",
    "KL_ESTIMATORS",
    "LOSSES",
    "aggregate",
    "explained_variance",
    "masked_mean",
    "ppo_clip_loss",
    "tis_weights",
    "token_weights",
    "topk_reverse_kl",
    "value_loss",
]
