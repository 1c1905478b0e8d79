"""Top-K distillation: reverse KL(student ‖ teacher) over the teacher's top-K tokens plus a tail bin
(the SDFT/SDPO-style OPD variant; OpenClaw-RL's `topk_distillation_loss`, without its K full-logit clones).

At each response position, with s_k = π_θ(k), t_k = π_teacher(k) for the teacher's top-K ids and
s_tail = 1 − Σ_k s_k, t_tail = 1 − Σ_k t_k:
    KL_t = Σ_k s_k (log s_k − log t_k) + s_tail (log s_tail − log t_tail)
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.losses.aggregate import aggregate


def log1mexp_sum(logp: Tensor) -> Tensor:
    """log(1 − Σ_k exp(logp_k)) over the last dim, numerically safe."""
    lse = torch.logsumexp(logp, dim=-1).clamp(max=-1e-7)
    return torch.log(-torch.expm1(lse))


def topk_reverse_kl(
    student_topk_logprobs: Tensor,  # [B, T, K] log π_θ at the teacher's top-K ids, with grad
    teacher_topk_logprobs: Tensor,  # [B, T, K]
    response_mask: Tensor,  # [B, T]
    loss_agg: str = "token-mean",
    loss_agg_norm: float | None = None,
    agg_weights: Tensor | None = None,  # [B, T] aggregation weights over the whole minibatch's hinted tokens
) -> tuple[Tensor, dict[str, Tensor]]:
    s = torch.cat([student_topk_logprobs, log1mexp_sum(student_topk_logprobs).unsqueeze(-1)], dim=-1)  # [B, T, K+1]
    t = torch.cat([teacher_topk_logprobs, log1mexp_sum(teacher_topk_logprobs).unsqueeze(-1)], dim=-1)
    per_token = (s.exp() * (s - t)).sum(-1)
    loss = aggregate(per_token, response_mask, loss_agg, loss_agg_norm, agg_weights)
    return loss, {"topk_kl": loss.detach()}
