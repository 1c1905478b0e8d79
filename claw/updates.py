"""Small pure parts of `ClawModule`'s update (claw/module.py): the learning-rate schedule, the gradient norm, and
row slices of the old outputs and advantages."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from claw.objective import OldOutputs


def lr_factor(step: int, warmup: int = 0, schedule: str = "constant", total: int | None = None) -> float:
    """Linear warm-up over `warmup` rollout batches, then constant or cosine to 0 at `total`."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if schedule == "cosine" and total:
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def grad_norm(module: torch.nn.Module) -> Tensor:
    grads = [p.grad.detach() for p in module.parameters() if p.grad is not None]
    if not grads:
        return torch.zeros(())
    from claw.fsdp import full  # a sharded gradient's norm is summed over the ranks' shards

    return torch.linalg.vector_norm(torch.stack([full(torch.linalg.vector_norm(g.float())) for g in grads]))


def slice_old(old: OldOutputs, idx: Tensor) -> OldOutputs:
    pick = lambda t: None if t is None else t[idx]  # noqa: E731
    return OldOutputs(old.logprobs[idx], pick(old.values), pick(old.ref_logprobs))


def slice_adv(adv, idx: Tensor):
    from claw.advantages import AdvantageResult

    return AdvantageResult(adv.advantages[idx], None if adv.returns is None else adv.returns[idx], adv.metrics)


def padding_free(batch) -> int:
    """T': the response columns of a (micro-)batch that hold a real token. Responses are right-padded to the batch's
    longest, so a micro-batch of short replies carries columns of padding only from T' on. (Prompts are left-padded
    too, but they differ little in length, and cutting there changes where a micro-batch's rounding falls with the
    split: under DDP or FSDP the update would no longer match one process's to the last bits.)"""
    used = batch.response_mask.any(0).nonzero()
    return int(used[-1]) + 1 if len(used) else 1  # at least one column: a [B, 0] tensor is useless


def crop(batch, width: int):
    """The batch with its responses cut to `width` tokens (`padding_free`): the model's outputs on the real tokens
    are the same."""
    import dataclasses

    cut = lambda t: None if t is None else t[:, :width]  # noqa: E731  [B, T] and [B, T, K] fields
    return dataclasses.replace(
        batch,
        input_ids=batch.input_ids[:, : batch.prompt_len + width],
        attention_mask=batch.attention_mask[:, : batch.prompt_len + width],
        response_mask=cut(batch.response_mask),
        rollout_logprobs=cut(batch.rollout_logprobs),
        teacher_logprobs=cut(batch.teacher_logprobs),
        teacher_topk_ids=cut(batch.teacher_topk_ids),
        teacher_topk_logprobs=cut(batch.teacher_topk_logprobs),
    )


def pad_columns(t: Tensor | None, width: int) -> Tensor | None:
    """[B, T', ...] → [B, width, ...], zeros after column T' (the cropped response columns, all masked)."""
    if t is None or t.shape[1] == width:
        return t
    pad = [0, 0] * (t.dim() - 2) + [0, width - t.shape[1]]
    return torch.nn.functional.pad(t, pad)


def longest_first(positions: Tensor, mb: Tensor, batch) -> Tensor:
    """`positions` (within minibatch `mb`, rows of `batch`) ordered by their replies' lengths, longest first (ties in
    order): micro-batches cut from it hold replies of like length and shed more padding (`padding_free`). The update
    is a sum over rows, the same in any order."""
    replies = batch.attention_mask[:, batch.prompt_len :].sum(-1).cpu()[mb[positions]]
    return positions[torch.argsort(replies, descending=True, stable=True)]


def chunks(n: int, size: int, perm: Tensor | None = None) -> list[Tensor]:
    """Rows 0..n-1 (or `perm`, in its order) in consecutive parts of `size`."""
    order = torch.arange(n) if perm is None else perm
    return [order[i : i + size] for i in range(0, n, size)]
