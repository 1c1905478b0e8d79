"""Trainer scale-out (layout.devices > 1, DDP or FSDP): who owns what, and the few collectives claw needs.

Rank 0 is the *leader*: it owns the rollout engine, the sources (dataset, proxy, simulated users),
the judges, the rollout queue and every file in the run directory (store, ledger, checkpoint,
evaluations). The other ranks are *followers*: they hold only a replica of the policy. Each rollout
batch is taken from the queue on rank 0 and broadcast whole to every rank; every rank computes
π_old for its share of the rows, the shares are summed into the full tensors, and the advantages
are computed from the whole batch on every rank (so group statistics and the running baseline are
exactly those of one process). Rank r then trains rows r, r + W, r + 2W, … of each minibatch, with
each micro-batch's loss scaled so that DDP's gradient *mean* equals the one-process token-weighted
sum. The update is therefore the same math as on one device, only spread out.

Ranks are known before Lightning starts: the subprocess launcher (and torchrun, SLURM) sets the
environment variables below in every process it starts, and rank 0 is the process you launched.
"""

from __future__ import annotations

import contextlib
import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import Tensor


def make_strategy(name: str, timeout_min: float):
    """The Lightning strategy for `layout.strategy`: `ddp` (or `fsdp`, claw/fsdp.py) with a collective timeout
    long enough for rank 0's work between steps (a held-out evaluation, a checkpoint), during which the other
    ranks wait in the next broadcast; torch's default of 30 min would abort a long evaluation."""
    if name == "fsdp":
        from claw.fsdp import FSDPStrategy

        return FSDPStrategy(timeout_min=timeout_min)
    if name != "ddp":
        return name
    from lightning.pytorch.strategies import DDPStrategy

    return DDPStrategy(timeout=timedelta(minutes=timeout_min))


def is_leader() -> bool:
    """Whether this process is rank 0, as its launcher set it up (True for the process you started).

    Read from the environment before Lightning initialises anything: torchrun sets RANK in every
    process; Lightning's subprocess launcher sets NODE_RANK and LOCAL_RANK in the processes it starts;
    under SLURM, SLURM_PROCID.
    """
    env = os.environ
    if "RANK" in env:
        return int(env["RANK"]) == 0
    if int(env.get("SLURM_NTASKS", 1)) > 1:
        return int(env.get("SLURM_PROCID", 0)) == 0
    return int(env.get("NODE_RANK", 0)) == 0 and int(env.get("LOCAL_RANK", 0)) == 0


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the initialised process group; (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def broadcast(obj, src: int = 0):
    """`obj` from rank `src` on every rank (pickled; rollout batches are small next to the model)."""
    if rank_and_world()[1] == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def sum_rows(local: Tensor | None, rows: Tensor, shape: tuple[int, ...], like: Tensor) -> Tensor:
    """Every rank computed `local` for its `rows` of a tensor of `shape`: the full tensor, on every rank.

    A rank with no rows (a batch smaller than the world) passes None and contributes zeros; it must
    still take part in the collective. The sum is in `like`'s dtype, at least float32.
    """
    if rank_and_world()[1] == 1 and local is not None and len(rows) == shape[0]:
        return local
    full = like.new_zeros(shape, dtype=torch.promote_types(like.dtype, torch.float32))  # one dtype on every rank
    if local is not None and len(rows):
        full[rows.to(full.device)] = local.to(full.dtype)
    if rank_and_world()[1] > 1:
        dist.all_reduce(full)
    return full


def all_sum(t: Tensor) -> Tensor:
    if rank_and_world()[1] == 1:
        return t
    t = t.clone()
    dist.all_reduce(t)
    return t


def no_sync(strategy, sync: bool):
    """DDP's gradient all-reduce only on the backward that ends a minibatch (`sync=True`)."""
    if sync or rank_and_world()[1] == 1 or not hasattr(strategy, "block_backward_sync"):
        return contextlib.nullcontext()
    return strategy.block_backward_sync()
