"""kill -9 mid-run, restart with resume=<run dir>: every produced sample is trained exactly once, and no
policy_version is ever issued to two different weight sets."""

import json
import os
import signal
import subprocess
import sys
import time

import lightning as L
import pytest
import torch

from claw.callbacks import PublishAndCommit
from tests.conftest import DATASET, ROOT, TINY, make_cfg

ARGS = [
    *DATASET,
    "model=tiny",
    "logger=none",
    "steps=6",
    "batch_size=8",
    "source.n=4",
    "source.prompts_per_generate=2",
    "source.max_new_tokens=16",
    "source.eval_size=2",
    "source.eval_max_new_tokens=4",
    "source.max_groups=12",  # 48 samples = exactly 6 batches of 8
    "max_queue_size=8",  # rollout runs at most one batch ahead, so samples before the kill span versions
    "max_staleness=1000",  # this test is about loss and duplication, not staleness
    "optim.micro_batch_size=4",
]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trained_steps(run_dir):
    path = run_dir / "ledger.jsonl"
    return [r["step"] for r in read_jsonl(path) if r["trained"]] if path.exists() else []


def stored_versions(run_dir):
    path = run_dir / "samples.jsonl"
    return {r["policy_version"] for r in read_jsonl(path)} if path.exists() else set()


def whole_groups(records):
    """The store as a restart reads it: a last group cut short by the kill was never accepted."""
    last = [r for r in records if records and r["group_id"] == records[-1]["group_id"]]
    return records if not last or len(last) >= last[0]["group_size"] else records[: -len(last)]


def checkpoint_at(run_dir):
    """(step, cursor, policy_version of its weights) of the durable checkpoint; (0, 0, 0) without one."""
    path = run_dir / "checkpoints" / "last.ckpt"
    if not path.exists():
        return 0, 0, 0
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    dm = ckpt["RolloutDataModule"]
    served = next((s for k, s in ckpt.get("callbacks", {}).items() if k.startswith("PublishAndCommit")), {})
    return dm["step"], dm["cursor"], served.get("policy_version", ckpt["policy_version"])


@pytest.mark.parametrize("interval_s", [0, 3600], ids=["checkpoint_every_step", "killed_before_any_checkpoint"])
def test_sigkill_then_resume_trains_each_sample_exactly_once(tmp_path, interval_s):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    args = [*ARGS, f"checkpoint_interval_s={interval_s}"]
    proc = subprocess.Popen(
        [sys.executable, "train.py", *args, f"run_dir={tmp_path}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 240
    while len(trained_steps(tmp_path)) < 2 or not stored_versions(tmp_path) - {
        0
    }:  # trained samples and synced weights
        assert proc.poll() is None, "training ended before it could be killed"
        assert time.time() < deadline, "training made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    steps_at_kill = trained_steps(tmp_path)
    assert 2 <= len(steps_at_kill) < 6
    before = whole_groups(read_jsonl(tmp_path / "samples.jsonl"))
    ledger_before = read_jsonl(tmp_path / "ledger.jsonl")
    step, cursor, ckpt_version = checkpoint_at(tmp_path)
    # The checkpoint's cursor covers exactly what its ledger steps trained: the store's first `cursor` samples.
    durable = [i for r in ledger_before if r["step"] <= step for i in r["trained"] + r["dropped"]]
    assert durable == [s["sample_id"] for s in before[:cursor]]
    # ...and its store offset is where those samples end, so the resume reads only what follows them.
    if cursor:
        dm = torch.load(tmp_path / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)[
            "RolloutDataModule"
        ]
        lines = (tmp_path / "samples.jsonl").read_bytes().splitlines(keepends=True)
        assert dm["store_offset"] == sum(len(line) for line in lines[:cursor])
        assert dm["store_last_id"] == before[cursor - 1]["sample_id"]

    out = subprocess.run(
        [sys.executable, "train.py", f"resume={tmp_path}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]

    samples = read_jsonl(tmp_path / "samples.jsonl")
    stored = [r["sample_id"] for r in samples]
    ledger = read_jsonl(tmp_path / "ledger.jsonl")
    trained = [i for r in ledger for i in r["trained"]]
    dropped = [i for r in ledger for i in r["dropped"]]
    assert len(stored) == len(set(stored)) == 48  # the source resumed where it stopped, no extra groups
    assert [s["sample_id"] for s in samples[: len(before)]] == [s["sample_id"] for s in before]  # accepted stays
    assert len(trained) == len(set(trained)), "a sample was trained twice"
    assert not dropped
    assert sorted(trained) == sorted(stored), "a produced sample was never trained"
    assert [r for r in ledger if r["step"] <= step] == [r for r in ledger_before if r["step"] <= step], (
        "the durable ledger changed"
    )
    assert [r["step"] for r in ledger] == [1, 2, 3, 4, 5, 6]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == 6

    # Samples stored before the kill came from the old process's weights, the rest from the resumed process's.
    # Only the checkpointed weights exist in both, so they are the only policy_version the two may share.
    old = {s["policy_version"] for s in before}
    new = {s["policy_version"] for s in samples[len(before) :]}
    assert old & new <= {ckpt_version}, (
        f"policy_version reissued to other weights after the restart: {sorted(old & new - {ckpt_version})}"
    )


class _Crash(Exception):
    pass


class _ServedVersions(L.Callback):
    """Records every policy_version the engine is asked to serve; raises `_Crash` once `crash_at` batches
    are trained."""

    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at, self.served = crash_at, []

    def setup(self, trainer, module, stage) -> None:
        engine = next(c for c in trainer.callbacks if isinstance(c, PublishAndCommit)).engine
        load = engine.load_weights

        def spy(named_tensors, version):
            self.served.append(version)
            return load(named_tensors, version)

        engine.load_weights = spy

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if module.policy_version == self.crash_at:
            raise _Crash  # like a kill: the versions synced since the last checkpoint were never made durable


def test_a_restart_that_lost_synced_versions_never_serves_their_numbers_again(tmp_path):
    from train import run

    cfg = make_cfg(
        [*TINY, "steps=4", "checkpoint_interval_s=3600", "source.eval_size=2", "source.eval_max_new_tokens=2"],
        tmp_path,
    )
    first = _ServedVersions(crash_at=2)
    with pytest.raises(_Crash):
        run(cfg, extra_callbacks=[first])
    assert first.served == [1, 2] and not (tmp_path / "checkpoints" / "last.ckpt").exists()

    second = _ServedVersions()
    summary = run(cfg, extra_callbacks=[second])
    assert summary["steps"] == 4  # the trainer counts trained batches from its (initial) state again
    assert not set(first.served) & set(second.served), f"reissued: {sorted(set(first.served) & set(second.served))}"
    assert second.served == [3, 4, 5, 6, 7]  # the initial weights served as 3, then one number per batch
    ledger = read_jsonl(tmp_path / "ledger.jsonl")
    trained = [i for r in ledger for i in r["trained"]]
    assert len(trained) == len(set(trained)) and [r["step"] for r in ledger] == [1, 2, 3, 4]
    stored = {r["sample_id"]: r["policy_version"] for r in read_jsonl(tmp_path / "samples.jsonl")}
    assert set(trained) <= set(stored)
    assert set(stored.values()) <= {0, *first.served, *second.served}
