"""kill -9 mid-run, restart with resume=<run dir>: every produced sample is trained exactly once."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import DATASET, ROOT

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
    "max_staleness=1000",  # this test is about loss and duplication, not staleness
    "optim.micro_batch_size=4",
]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trained_steps(run_dir):
    path = run_dir / "ledger.jsonl"
    return [r["step"] for r in read_jsonl(path) if r["trained"]] if path.exists() else []


@pytest.mark.parametrize("interval_s", [0, 3600], ids=["checkpoint_every_step", "killed_before_any_checkpoint"])
def test_sigkill_then_resume_trains_each_sample_exactly_once(tmp_path, interval_s):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    args = [*ARGS, f"checkpoint_interval_s={interval_s}"]
    proc = subprocess.Popen([sys.executable, "train.py", *args, f"run_dir={tmp_path}"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while len(trained_steps(tmp_path)) < 2:
        assert proc.poll() is None, "training ended before it could be killed"
        assert time.time() < deadline, "training made no progress"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    steps_at_kill = trained_steps(tmp_path)
    assert 2 <= len(steps_at_kill) < 6

    out = subprocess.run([sys.executable, "train.py", f"resume={tmp_path}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]

    stored = [r["sample_id"] for r in read_jsonl(tmp_path / "samples.jsonl")]
    ledger = read_jsonl(tmp_path / "ledger.jsonl")
    trained = [i for r in ledger for i in r["trained"]]
    dropped = [i for r in ledger for i in r["dropped"]]
    assert len(stored) == len(set(stored)) == 48  # the source resumed where it stopped, no extra groups
    assert len(trained) == len(set(trained)), "a sample was trained twice"
    assert not dropped
    assert sorted(trained) == sorted(stored), "a produced sample was never trained"
    assert [r["step"] for r in ledger] == [1, 2, 3, 4, 5, 6]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == 6
