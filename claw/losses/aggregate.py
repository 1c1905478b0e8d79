"""How per-token losses [B, T] become one scalar (`loss_agg`).

- token-mean:               Σ_{i,t} m ℓ / Σ_{i,t} m          (every token weighs the same; DAPO)
- seq-mean-token-mean:      mean_i [ Σ_t m ℓ / Σ_t m ]       (every sequence weighs the same; GRPO paper)
- seq-mean-token-sum-norm:  mean_i [ Σ_t m ℓ ] / norm        (no length normalisation; Dr. GRPO, norm = max length)
"""

from __future__ import annotations

from torch import Tensor


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def token_mean(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    return (loss * mask).sum() / mask.sum().clamp(min=1.0)


def seq_mean_token_mean(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
    return per_seq.mean()


def seq_mean_token_sum_norm(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    norm = float(mask.shape[-1]) if norm is None else norm
    return (loss * mask).sum(-1).mean() / norm


AGGREGATIONS = {
    "token-mean": token_mean,
    "seq-mean-token-mean": seq_mean_token_mean,
    "seq-mean-token-sum-norm": seq_mean_token_sum_norm,
}


def aggregate(loss: Tensor, mask: Tensor, mode: str, norm: float | None = None) -> Tensor:
    if mode not in AGGREGATIONS:
        raise KeyError(f"unknown loss_agg {mode!r}; choose one of {', '.join(AGGREGATIONS)}")
    return AGGREGATIONS[mode](loss, mask, norm)
