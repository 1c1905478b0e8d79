"""Truncated importance sampling for the rollout/train mismatch (Yao et al. 2025, "Your efficient RL
framework secretly brings you off-policy RL training"; IcePop-style masking as the `mask` mode).

The engine sampled with π_rollout (other kernels, other precision, maybe stale weights); the PPO
ratio is taken against π_old recomputed by the trainer. Each token is reweighted by
w = exp(log π_old − log π_rollout), per token or per sequence (product over the sequence), then
- truncate: w ← min(w, C)
- mask:     w ← w · 1[w ≤ C]   (drop tokens whose mismatch is too large)
Weights carry no gradient. w = 1 exactly when the two agree.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.losses.aggregate import masked_mean


@torch.no_grad()
def tis_weights(
    old_logprobs: Tensor,  # [B, T] log π_old (trainer)
    rollout_logprobs: Tensor,  # [B, T] log π_rollout (engine)
    response_mask: Tensor,  # [B, T]
    cap: float = 2.0,
    level: str = "token",  # token | sequence
    mode: str = "truncate",  # truncate | mask
) -> tuple[Tensor, dict[str, Tensor]]:
    log_w = (old_logprobs - rollout_logprobs) * response_mask
    if level == "sequence":
        log_w = log_w.sum(-1, keepdim=True).expand_as(log_w)
    elif level != "token":
        raise ValueError(f"tis level must be token or sequence (got {level!r})")
    w = torch.exp(log_w.clamp(max=20.0))
    over = w > cap
    if mode == "truncate":
        w = w.clamp(max=cap)
    elif mode == "mask":
        w = torch.where(over, torch.zeros_like(w), w)
    else:
        raise ValueError(f"tis mode must be truncate or mask (got {mode!r})")
    w = w * response_mask
    return w, {
        "is_weight_mean": masked_mean(w, response_mask),
        "is_truncated_frac": masked_mean(over.float(), response_mask),
    }
