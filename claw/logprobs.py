"""Per-token log-probabilities from a causal LM, shared by the trainer and the `hf` engine.

Both sides compute log_softmax(logits / T) at the sample's own temperature T, so rollout,
old, new and teacher log-probs all describe the same distribution (docs/engines.md).
"""

from __future__ import annotations

import torch
from torch import Tensor


def position_ids(attention_mask: Tensor) -> Tensor:
    """[B, L] positions counting only real tokens (left padding gets position 0)."""
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)


def widened(t: Tensor) -> Tensor:
    """`t` in float32, or as it is when wider (a float64 model keeps its precision end to end)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def token_logprobs(logits: Tensor, tokens: Tensor, temperature: Tensor | float) -> Tensor:
    """log π(tokens) under softmax(logits / T).

    logits: [B, T, V]; tokens: [B, T] long; temperature: [B] or scalar. Returns [B, T], float32 or wider.
    Uses logsumexp rather than a full log_softmax so only one [B, T, V] temporary is created.
    """
    logits = widened(logits)
    if isinstance(temperature, Tensor):
        logits = logits / temperature.to(logits.device, logits.dtype).view(-1, 1, 1)
    elif temperature != 1.0:
        logits = logits / temperature
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def entropy_from_logits(logits: Tensor, temperature: Tensor | float = 1.0) -> Tensor:
    """[B, T] entropy of softmax(logits / T) (monitoring and entropy bonus)."""
    logits = widened(logits)
    if isinstance(temperature, Tensor):
        logits = logits / temperature.to(logits.device, logits.dtype).view(-1, 1, 1)
    else:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def response_logits(model: torch.nn.Module, input_ids: Tensor, attention_mask: Tensor, prompt_len: int) -> Tensor:
    """[B, T, V] logits that predict the response tokens input_ids[:, prompt_len:]."""
    T = input_ids.shape[1] - prompt_len
    # Only the last T+1 positions go through the LM head: prompt logits are never needed.
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids(attention_mask),
        use_cache=False,
        logits_to_keep=T + 1,
    )
    return out.logits[:, :-1]
