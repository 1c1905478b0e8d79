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
