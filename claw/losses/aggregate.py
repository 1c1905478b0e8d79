"""How per-token losses [B, T] become one scalar (`loss_agg`).

- token-mean:               Σ_{i,t} m ℓ / Σ_{i,t} m          (every token weighs the same; DAPO)
- seq-mean-token-mean:      mean_i [ Σ_t m ℓ / Σ_t m ]       (every sequence weighs the same; GRPO paper)
- seq-mean-token-sum-norm:  mean_i [ Σ_t m ℓ ] / N           (no length normalisation; Dr. GRPO, N a constant:
                                                               the generation budget, never the batch's width)

"mean_i" runs over the sequences that have a trainable token (a greedy or fully masked row is not a
sequence of the objective). Every mode is a weighted sum, L = Σ_{i,t} w_{i,t} ℓ_{i,t}, with weights
that depend on the mask alone (`token_weights`). That is what makes gradient accumulation exact:
the weights are computed once over the whole minibatch and each micro-batch (or DDP rank) adds
Σ w ℓ over its rows, so the sum is the minibatch loss whatever the split. Scaling each micro-batch's
own aggregate by its share of tokens is exact for token-mean only.
"""

from __future__ import annotations

from torch import Tensor


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def _n_sequences(mask: Tensor) -> Tensor:
    return (mask.sum(-1) > 0).sum().clamp(min=1)


def token_mean(mask: Tensor, norm: float | None = None) -> Tensor:
    return mask / mask.sum().clamp(min=1.0)  # w = m / Σ m


def seq_mean_token_mean(mask: Tensor, norm: float | None = None) -> Tensor:
    return mask / (mask.sum(-1, keepdim=True).clamp(min=1.0) * _n_sequences(mask))  # w = m / (|y_i| · n_seq)


def seq_mean_token_sum_norm(mask: Tensor, norm: float | None = None) -> Tensor:
    # the weights' precondition; a run's `algo.loss_agg_norm` is checked at start-up by claw/config.py
    if norm is None or norm <= 0:
        raise ValueError(
            f"seq-mean-token-sum-norm divides by a constant normaliser N > 0 (got {norm}), never the batch's "
            "padded width, which would change the step size with the longest response"
        )
    return mask / (_n_sequences(mask) * norm)  # w = m / (n_seq · N)


AGGREGATIONS = {
    "token-mean": token_mean,
    "seq-mean-token-mean": seq_mean_token_mean,
    "seq-mean-token-sum-norm": seq_mean_token_sum_norm,
}


def token_weights(mask: Tensor, mode: str, norm: float | None = None) -> Tensor:
    """[B, T] weights w with Σ w ℓ = the `mode` aggregate of ℓ over `mask` (no grad; mask-only)."""
    if mode not in AGGREGATIONS:
        raise KeyError(f"unknown loss_agg {mode!r}; choose one of {', '.join(AGGREGATIONS)}")
    m = mask.detach()
    return AGGREGATIONS[mode](m if m.is_floating_point() else m.float(), norm)


def aggregate(
    loss: Tensor, mask: Tensor, mode: str, norm: float | None = None, weights: Tensor | None = None
) -> Tensor:
    """Σ w ℓ. `weights` (from `token_weights` over a whole minibatch, sliced to these rows) override the
    weights this call would compute from `mask` alone — the module passes them so micro-batches add up."""
    w = token_weights(mask, mode, norm) if weights is None else weights
    return (loss * w).sum()
