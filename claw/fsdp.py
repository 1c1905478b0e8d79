"""`layout.strategy=fsdp`: the trainer fully sharded over its processes (PyTorch's FSDP2, `fully_shard`).

Lightning runs it through `ModelParallelStrategy` (FSDP2 on a one-dimensional data-parallel mesh); its
`FSDPStrategy` (FSDP1) refuses any accelerator but CUDA, so it could not be exercised on a CPU machine, while
FSDP2 runs on CPU with gloo as on GPUs with NCCL. What changes against DDP, and nothing else does:

- `shard`: before sharding, every rank takes rank 0's weights (as DDP does when it wraps a model); then each
  decoder layer is its own FSDP unit, the rest of the policy (embeddings, final norm, head) the root unit, and
  the value head and the frozen reference each a unit of their own. Parameters become `DTensor`s holding
  1/W of each tensor; a unit's full weights exist only during its forward and backward.
- The update is the DDP one: each micro-batch's loss is scaled by W and FSDP's reduce-scatter averages the
  gradients over the W ranks (claw/module.py). Every rank runs the same number of forward passes, since each
  forward gathers the units' weights collectively.
- The rollout engine gets the weights one parameter at a time (`ClawModule.engine_weights`): each is
  gathered from its shards (`full`) when the engine reaches it and dropped once the engine has copied it, so
  the trainer never holds a second full copy of the model. Every rank iterates (the gathers are
  collectives); rank 0 alone has an engine.
- Checkpoints are sharded (`torch.distributed.checkpoint`): `checkpoints/last.ckpt` is a link to a directory
  with one file of shards per rank and Lightning's `meta.pt` (version, queue cursor, callbacks). The link is
  swapped atomically once every rank has written, so a crash leaves the previous complete checkpoint. Every
  rank must see the same run directory (a shared file system across nodes).
"""

from __future__ import annotations

import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from lightning.pytorch.strategies import ModelParallelStrategy
from torch import Tensor


class FSDPStrategy(ModelParallelStrategy):
    """FSDP2 over every trainer process (devices × nodes): data-parallel size W, no tensor parallelism; sharded,
    atomically swapped checkpoints."""

    strategy_name = "claw_fsdp"

    def __init__(self, timeout_min: float = 120) -> None:
        super().__init__(timeout=timedelta(minutes=timeout_min), save_distributed_checkpoint=True)

    def setup_environment(self) -> None:
        self._data_parallel_size = self.num_nodes * self.num_processes
        self._tensor_parallel_size = 1
        super().setup_environment()

    def save_checkpoint(self, checkpoint, filepath, storage_options=None) -> None:
        """Shards into a fresh directory, then the `filepath` link swapped to it (rank 0) and older ones removed."""
        link = Path(self.broadcast(str(filepath)))  # rank 0's path on every rank
        name = self.broadcast(f"v{checkpoint.get('policy_version', 0)}-{time.time_ns()}")
        target = link.parent / "sharded" / name
        super().save_checkpoint(checkpoint, target, storage_options)
        self.barrier()
        if self.global_rank == 0:
            swap_link(link, target)
        self.barrier()


def swap_link(link: Path, target: Path) -> None:
    """Point `link` at `target` atomically (a relative link: the run directory may move), then remove the
    directories next to `target` that no link names any more (the previous checkpoint, a crashed write)."""
    tmp = link.with_name(link.name + ".link")
    tmp.unlink(missing_ok=True)
    os.symlink(os.path.relpath(target, link.parent), tmp)
    os.replace(tmp, link)
    for old in target.parent.iterdir():
        if old != target:
            shutil.rmtree(old, ignore_errors=True)


def is_sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def full(t: Tensor) -> Tensor:
    """The whole tensor on every rank (a collective for a sharded `DTensor`; a plain tensor as it is)."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The repeated blocks to shard one by one: the classes the model names in `_no_split_modules`
    (transformers' decoder layers), found through a peft wrapper too."""
    names = set()
    for m in model.modules():
        names.update(getattr(m, "_no_split_modules", None) or ())
    return [m for m in model.modules() if type(m).__name__ in names]


def shard(module: torch.nn.Module, mesh, device: torch.device) -> None:
    """Shard the ClawModule `module` in place over `mesh` (claw/module.py `configure_model`)."""
    from torch.distributed.fsdp import fully_shard

    if is_sharded(module.model):
        return
    with torch.no_grad():  # rank 0's initial weights on every rank, one tensor at a time
        for t in [*module.parameters(), *module.buffers()]:
            moved = t.data.to(device)
            dist.broadcast(moved, src=0)
            t.data.copy_(moved)
    for model in (module.model, module.ref_model):
        if model is None:
            continue
        for block in _blocks(model):
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
    if module.value_head is not None:
        fully_shard(module.value_head, mesh=mesh)
