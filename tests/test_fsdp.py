"""`python train.py layout=fsdp`: two processes (FSDP2, gloo) on the tiny model, each holding half of every tensor.

As tests/test_ddp.py does for DDP, each test replays the exact batches the sharded run trained (its ledger and
sample store) in one process and checks that the weights come out the same: the trainer's weights from the
sharded checkpoint (converted to one file with torch's `dcp_to_torch_save`), and the rollout engine's, which
rank 0 got one gathered parameter at a time (LoRA merged). With full fine-tuning, with LoRA, with a critic
(PPO, GAE), and resumed from the sharded checkpoint. The fast tier runs the first (about 40 s on 2 idle cores);
the others are `slow` (make test-slow, about 2.5 min together).
"""

import json
from pathlib import Path

import lightning as L
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from torch.utils.data import DataLoader

from claw.rollout.store import SampleStore
from claw.types import collate
from tests.conftest import TINY
from tests.test_ddp import BumpVersion, launch_two_ranks, train_rows

# Odd shapes, as in tests/test_ddp.py: 9-sample batches in 2 minibatches of 5 and 4 rows, micro-batches of 2 (a
# rank short of rows runs zero-weighted passes), 2 PPO epochs (the ratio leaves 1), mode=combine (π_old computed
# by each rank for its rows). The engine's copy is written by `EngineCopy` after training.
FSDP_RUN = [
    *TINY,
    "mode=combine",
    "algo=grpo",
    "layout=fsdp",
    "steps=2",
    "batch_size=9",
    "source.n=3",
    "source.prompts_per_generate=3",
    "optim.micro_batch_size=2",
    "algo.minibatches=2",
    "algo.ppo_epochs=2",
    "optim.lr=1e-3",
    "max_staleness=10",
    "+callbacks.engine_copy._target_=tests.test_fsdp.EngineCopy",
]


class EngineCopy(L.Callback):
    """After training, rank 0 writes the weights its rollout engine (hf) holds to <run dir>/engine_weights.pt, and
    how many of the policy's numbers it holds itself (its shards) against the whole to <run dir>/sharding.json."""

    def on_train_end(self, trainer, module) -> None:
        from torch.distributed.tensor import DTensor

        engine = next((c.engine for c in trainer.callbacks if hasattr(c, "engine")), None)
        if engine is None:  # a follower rank
            return
        with engine.lock:
            engine._apply_staged()  # the last sync may still be staged
        root = Path(trainer.default_root_dir)
        torch.save(engine.model.state_dict(), root / "engine_weights.pt")
        params = list(module.model.parameters())
        local = sum((p.to_local() if isinstance(p, DTensor) else p).numel() for p in params)
        (root / "sharding.json").write_text(json.dumps({"local": local, "whole": sum(p.numel() for p in params)}))


def replay(run_dir: Path, log_dir: Path) -> torch.nn.Module:
    """The batches a run's ledger lists, in order, from the same initial weights, in one process (LoRA too); its
    metrics go to <log_dir>/version_0/metrics.csv."""
    from claw.lora import apply_lora
    from claw.module import ClawModule

    cfg = OmegaConf.load(run_dir / "config.yaml")
    L.seed_everything(cfg.seed, verbose=False)
    policy = instantiate(cfg.model)
    if cfg.lora.enabled:
        lora = cfg.lora
        policy.model = apply_lora(
            policy.model, lora.r, lora.alpha, lora.dropout, list(lora.target_modules), seed=cfg.seed
        )
    by_id = {s.sample_id: s for s in SampleStore(run_dir / "samples.jsonl").samples()}
    steps = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    batches = [collate([by_id[i] for i in s["trained"]], policy.tokenizer.pad_token_id) for s in steps if s["trained"]]
    module = ClawModule.from_cfg(cfg, policy.model)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=L.pytorch.loggers.CSVLogger(log_dir, name="", version=0),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[BumpVersion()],
    )
    trainer.fit(module, train_dataloaders=DataLoader(batches, batch_size=None, collate_fn=lambda b: b))
    return module


def sharded_checkpoint(run_dir: Path, tmp_path: Path) -> dict:
    """The run's sharded checkpoint as one torch file's contents (the conversion docs/gpu.md gives)."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    link = run_dir / "checkpoints" / "last.ckpt"
    assert link.is_symlink() and (link / "meta.pt").is_file() and len(list(link.glob("*.distcp"))) == 2
    out = tmp_path / "full.pt"
    dcp_to_torch_save(link, out)
    return {**torch.load(out, weights_only=False), **torch.load(link / "meta.pt", weights_only=False)}


def compare(run_dir: Path, tmp_path: Path, steps: int, tolerance: float = 1e-5) -> dict:
    """Trainer and engine weights of the sharded run against the one-process replay; returns the checkpoint."""
    from claw.lora import is_lora, merged_state_dict

    ckpt = sharded_checkpoint(run_dir, tmp_path)
    assert ckpt["policy_version"] == steps
    held = json.loads((run_dir / "sharding.json").read_text())
    assert held["local"] < 0.6 * held["whole"], held  # rank 0 holds about half of the policy, not all of it
    module = replay(run_dir, tmp_path / f"replay{steps}")
    replayed = module.state_dict()
    sharded = ckpt["state_dict"]
    assert sharded.keys() == replayed.keys()
    initial = instantiate(OmegaConf.load(run_dir / "config.yaml").model).model.state_dict()
    plain = merged_state_dict(module.model) if is_lora(module.model) else module.model.state_dict()
    moved = max((plain[k] - initial[k]).abs().max().item() for k in initial)
    diff = max((replayed[k] - sharded[k]).abs().max().item() for k in replayed)
    engine = torch.load(run_dir / "engine_weights.pt")
    engine_diff = max((plain[k] - engine[k]).abs().max().item() for k in plain)
    print(
        f"FSDP vs one process after {steps} steps: max |Δw| {diff:.2e} (engine {engine_diff:.2e}), moved {moved:.2e}"
    )
    assert moved > 1e-3  # the steps really trained
    assert diff < tolerance and engine_diff < tolerance and diff < moved / 100, (diff, engine_diff)
    ledger = [json.loads(line) for line in (run_dir / "ledger.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ledger if r["trained"]] == list(range(1, steps + 1))
    return ckpt


def test_fsdp_run_equals_one_process(tmp_path):
    """Two processes, two steps, against one process: the trainer's weights and the engine's, and the gradient norms
    before clipping (a wrong scale, which Adam's update would hide) and losses. (40 s on 2 idle cores, 3 min on busy
    ones)"""
    run_dir = launch_two_ranks(tmp_path, [*FSDP_RUN, "logger=csv"])
    ckpt = compare(run_dir, tmp_path, steps=2)
    assert ckpt["optimizer_0"]["state"]  # AdamW's moments are in the checkpoint (sharded on disk)
    sharded, single = (
        train_rows(run_dir / "csv" / "0" / "metrics.csv"),
        train_rows(tmp_path / "replay2" / "version_0" / "metrics.csv"),
    )
    assert len(sharded) == len(single) == 2
    for key in ("train/grad_norm", "train/loss", "train/policy_loss"):
        a, b = [float(r[key]) for r in sharded], [float(r[key]) for r in single]
        assert all(abs(x - y) <= 1e-4 * max(1.0, abs(y)) for x, y in zip(a, b)), (key, a, b)


@pytest.mark.slow
def test_fsdp_resumes_from_its_sharded_checkpoint(tmp_path):
    """Two steps, then a third resumed from the sharded checkpoint, against one process. (80 s idle, 5 min busy)"""
    run_dir = launch_two_ranks(tmp_path, FSDP_RUN)
    compare(run_dir, tmp_path, steps=2)
    first = (run_dir / "checkpoints" / "last.ckpt").resolve()

    # Both ranks load their shards (weights, AdamW state) and meta.pt (version, queue cursor, baseline): the run goes
    # on to step 3 as one uninterrupted run would, and the previous checkpoint's directory is gone. Step 3 moves the
    # float32 rounding apart more than steps 1-2 (Adam divides small gradients by their own size): an uninterrupted
    # 3-step run differed from its replay by 2.69e-05 as this resumed one did (2026-12-07), so 1e-4 here.
    launch_two_ranks(tmp_path, [f"resume={run_dir}", "steps=3"])
    compare(run_dir, tmp_path, steps=3, tolerance=1e-4)
    assert not first.exists() and len(list((run_dir / "checkpoints" / "sharded").iterdir())) == 1


@pytest.mark.slow
def test_fsdp_with_lora_equals_one_process(tmp_path):
    """Only the adapters train; the engine gets W + B·A·(α/r) from the gathered shards. (30 s idle, 2-3 min busy)"""
    run_dir = launch_two_ranks(tmp_path, [*FSDP_RUN, "lora.enabled=true", "optim.lr=1e-2"])
    compare(run_dir, tmp_path, steps=2)


@pytest.mark.slow
def test_fsdp_with_a_critic_equals_one_process(tmp_path):
    """PPO with GAE: the value head is a unit of its own, its loss reaches the sharded trunk; with a KL term the
    frozen reference is sharded too. (35 s idle, 2-3 min busy)"""
    critic = ["algo=ppo", "algo.critic_detach_trunk=false", "algo.kl_coef=0.05", "optim.lr=5e-4"]
    run_dir = launch_two_ranks(tmp_path, [*FSDP_RUN, *critic])
    ckpt = compare(run_dir, tmp_path, steps=2)
    assert "value_head.weight" in ckpt["state_dict"] and ckpt["state_dict"]["value_head.weight"].abs().max() > 0


def test_a_sharded_checkpoint_link_swaps_atomically(tmp_path):
    """The link always names a complete directory; the previous one and a crashed write's leftovers go."""
    from claw.fsdp import swap_link

    link, sharded = tmp_path / "last.ckpt", tmp_path / "sharded"
    for name in ("v1", "crashed"):
        (sharded / name).mkdir(parents=True)
    swap_link(link, sharded / "v1")
    assert link.resolve() == (sharded / "v1").resolve() and not (sharded / "crashed").exists()
    (sharded / "v2").mkdir()
    swap_link(link, sharded / "v2")
    assert link.resolve() == (sharded / "v2").resolve() and [p.name for p in sharded.iterdir()] == ["v2"]
    assert not Path(str(link) + ".link").exists()
