"""Two nodes of one process each, on one machine: `torchrun --nnodes 2 --nproc-per-node 1 --node-rank {0,1}`
launched twice, as one launch per machine would be (docs/gpu.md#scale-out), with `layout.num_nodes=2`.

Node 0's process is rank 0 (the engine, the source, the run directory); node 1's gets every rollout batch by
broadcast. Both must finish, hold the same weights, and equal a one-process replay of the batches trained.
The model is float64: float32 rounding, which Adam can lift to ~1e-5 where a gradient nearly cancels, would
hide a real difference of that size; in float64 the two runs agree to ~1e-14.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tests.conftest import ROOT, TINY
from tests.test_ddp import replay_in_one_process

RUN = [
    "model.dtype=float64",
    *TINY,
    "mode=combine",
    "algo=grpo",
    "layout.devices=1",
    "layout.num_nodes=2",
    "steps=2",
    "batch_size=9",
    "source.n=3",
    "source.prompts_per_generate=3",
    "optim.micro_batch_size=2",
    "algo.minibatches=2",
    "optim.lr=1e-3",
    "max_staleness=10",
    "logger=csv",
    "+callbacks.rank_weights._target_=tests.test_multinode.RankWeights",
]


class RankWeights(L.Callback):
    """After training, every rank writes the policy's whole weights to <run dir>/rank<r>.pt (gathered under FSDP)."""

    def on_train_end(self, trainer, module) -> None:
        from torch.distributed.tensor import DTensor

        from claw.fsdp import full

        weights = {k: full(v).clone() for k, v in module.model.state_dict().items()}
        params = list(module.model.parameters())
        held = sum((p.to_local() if isinstance(p, DTensor) else p).numel() for p in params)  # its shards under FSDP
        share = held / sum(p.numel() for p in params)
        torch.save(
            {"weights": weights, "share": share}, Path(trainer.default_root_dir) / f"rank{trainer.global_rank}.pt"
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_two_nodes(tmp_path: Path, overrides: list[str]) -> Path:
    """Both nodes' launches at once, as two machines would start them; returns the (shared) run directory."""
    run_dir, port = tmp_path / "run", free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE")}
    env.update(PYTHONPATH=str(ROOT), TOKENIZERS_PARALLELISM="false")
    procs = []
    for node in (0, 1):
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1"]
        torchrun += ["--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port)]
        hydra = f"hydra.run.dir={tmp_path / f'hydra{node}'}"
        log = open(tmp_path / f"node{node}.log", "w")
        cmd = [*torchrun, "train.py", *overrides, f"run_dir={run_dir}", hydra]
        procs.append((subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    for node, (proc, log) in enumerate(procs):
        rc = proc.wait(timeout=900)
        log.close()
        assert rc == 0, f"node {node}: " + (tmp_path / f"node{node}.log").read_text()[-4000:]
    return run_dir


def check_nodes_agree(run_dir: Path, tmp_path: Path, share: float) -> None:
    """Both ranks wrote their weights, which are equal and equal one process's; each held `share` of the policy."""
    saved = [torch.load(run_dir / f"rank{r}.pt") for r in (0, 1)]
    assert all(abs(s["share"] - share) < 0.05 for s in saved), [s["share"] for s in saved]
    ranks = [s["weights"] for s in saved]
    apart = max((ranks[0][k] - ranks[1][k]).abs().max().item() for k in ranks[0])
    replayed, _ = replay_in_one_process(run_dir, tmp_path / "replay")
    diff = max((replayed[k] - ranks[0][k]).abs().max().item() for k in replayed)
    initial = instantiate(OmegaConf.load(run_dir / "config.yaml").model).model.state_dict()
    moved = max((replayed[k] - initial[k]).abs().max().item() for k in initial)
    print(f"two nodes: ranks apart by {apart:.2e}; against one process {diff:.2e}; moved {moved:.2e}")
    assert apart == 0.0 and diff < 1e-10 and moved > 1e-3, (apart, diff, moved)
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 2  # rank 0 wrote it, once it finished


def test_two_nodes_of_one_process_each_train_as_one_run(tmp_path):
    """DDP across two torchrun launches (35 s on 2 idle cores, 1.5 min on busy ones)."""
    run_dir = launch_two_nodes(tmp_path, [*RUN, "layout=cpu_ddp"])
    check_nodes_agree(run_dir, tmp_path, share=1.0)


@pytest.mark.slow
def test_two_nodes_shard_the_trainer_with_fsdp(tmp_path):
    """The same two launches with layout=fsdp: each node holds half of every tensor (35 s idle)."""
    run_dir = launch_two_nodes(tmp_path, [*RUN, "layout=fsdp"])
    check_nodes_agree(run_dir, tmp_path, share=0.5)
