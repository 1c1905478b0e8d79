"""SIGTERM and SIGINT (Ctrl-C) stop `python train.py` cleanly, for every source (claw/shutdown.py): within seconds when
the trainer waits for a batch, after the step in progress otherwise; exit status 0, a checkpoint of the last step
trained, whole logs, and a `resume=` run that goes on from there.

The end-to-end tests run the real train.py in a subprocess (tiny model, engine=hf) and stop it twice: the first run
with one signal, the resumed run with the other. Before: a proxy run waiting for traffic ignored SIGTERM (Lightning
only sets a flag its loop reads between batches) and SIGINT ended runs with status 1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai
import pytest

from claw.rollout.datamodule import STOP, RolloutDataModule
from claw.shutdown import StopRequested, StopSignal
from tests.conftest import ROOT
from tests.test_proxy_training import PROXY, converse, wait_url
from tests.test_restart import checkpoint_at, read_jsonl

STOP_WITHIN_S = 20  # signal to exit; measured here 3-16 s on 2 shared, busy cores: claw's part takes 0.1-2.5 s,
# the rest is the interpreter's exit (about 3 s of it with nothing but Lightning imported)
START_WITHIN_S = 300  # start-up and the first steps on a shared CPU

DATASET = [
    "mode=rl", "algo=grpo", "source=dataset", "judge=verifier", "model=tiny", "engine=hf", "logger=none",
    "steps=1000", "batch_size=8", "source.n=4", "source.prompts_per_generate=2", "source.max_new_tokens=8",
    "source.eval_size=2", "source.eval_max_new_tokens=4", "optim.micro_batch_size=4", "eval_every=0", "fsync=false",
]  # fmt: skip
USERS = [
    "source=simulated_user", "judge=rule", "algo=reinforce", "mode=combine", "model=tiny", "engine=hf",
    "logger=none", "steps=1000", "batch_size=4", "source.max_new_tokens=8", "source.eval_size=2",
    "optim.micro_batch_size=4", "max_staleness=1000", "eval_every=0", "fsync=false",
]  # fmt: skip
LIVE = [*PROXY, "engine=hf", "steps=1000", "batch_size=2", "optim.micro_batch_size=2", "fsync=false"]


# -- the pieces, in-process ----------------------------------------------------------------------------------------
def test_a_first_signal_asks_to_stop_and_a_second_interrupts_at_once():
    stop = StopSignal()
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    stop.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs in the main thread between two bytecodes
        assert stop.requested and stop.signal == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    finally:
        stop.restore()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


class SilentSource:
    """A source with nothing to give (a proxy nobody talks to)."""

    name = "silent"
    exhausted = False
    error = None

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def start(self, queue, resume_from: int = 0) -> None:
        pass

    def stop(self) -> None:
        self.stopped.set()


def test_a_trainer_waiting_for_a_batch_stops_waiting_and_the_sources_stop(tmp_path):
    stop, source = StopSignal(), SilentSource()
    dm = RolloutDataModule(tmp_path, [source], pad_id=0, batch_size=4, fsync=False, poll_seconds=1.0, stop_signal=stop)
    raised: list[BaseException] = []
    ended = threading.Event()

    def trainer():
        try:
            next(iter(dm.train_dataloader()))
        except BaseException as e:
            raised.append(e)
        ended.set()

    threading.Thread(target=trainer, daemon=True).start()
    time.sleep(1.5)  # waiting: nothing to take
    assert not ended.is_set()
    t0 = time.monotonic()
    stop.request("test")
    assert ended.wait(5), "the wait for a batch went on after the stop request"
    assert time.monotonic() - t0 < dm.poll_seconds + 1.0
    assert len(raised) == 1 and isinstance(raised[0], StopRequested), raised
    assert source.stopped.wait(5), "the source was not stopped"
    assert dm.queue.closed and dm.next_item() == STOP


def test_a_request_in_flight_when_the_proxy_stops_is_cancelled_within_the_grace(tiny_policy, tmp_path):
    """The engine is stuck (its lock held): the request waiting on it ends within the grace, the listener closes."""
    from claw.engine.hf import HFEngine
    from claw.sources.proxy.server import STOP_GRACE_S
    from tests.test_proxy import make_proxy, wait_for

    engine = HFEngine(tiny_policy, seed=0)
    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", engine=engine)
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    outcome: list[BaseException | str] = []

    def ask():
        try:
            r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
            outcome.append(r.choices[0].message.content or "")
        except Exception as e:
            outcome.append(e)

    engine.lock.acquire()
    try:
        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        assert wait_for(lambda: src.batcher.stats()["batches"] == 1), "the request never reached the engine"
        t0 = time.monotonic()
        stopper = threading.Thread(target=src.stop, daemon=True)
        stopper.start()
        asker.join(STOP_GRACE_S + 5)
        assert not asker.is_alive(), "the request in flight outlived the grace"
        assert time.monotonic() - t0 < STOP_GRACE_S + 5
        assert isinstance(outcome[0], (openai.APIConnectionError, openai.APIStatusError)), outcome
        with pytest.raises(openai.APIConnectionError):  # no longer accepting
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    finally:
        engine.lock.release()
    stopper.join(30)
    assert not stopper.is_alive()


# -- train.py in a subprocess ---------------------------------------------------------------------------------------
def launch(args: list[str], run_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    out = open(run_dir / "train.out", "ab")
    return subprocess.Popen(
        [sys.executable, "train.py", *args], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
    )


def output(run_dir: Path) -> str:
    return (run_dir / "train.out").read_text(errors="replace")[-3000:]


def steps_trained(run_dir: Path) -> list[int]:
    """The ledger's steps that trained samples (stale samples dropped while waiting are filed under the next step)."""
    path = run_dir / "ledger.jsonl"
    return [r["step"] for r in read_jsonl(path) if r["trained"]] if path.exists() else []


def wait_until(what: str, ready, proc: subprocess.Popen, run_dir: Path, timeout: float = START_WITHIN_S) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"train.py exited ({proc.returncode}) before {what}:\n{output(run_dir)}"
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within {timeout} s:\n{output(run_dir)}")
        time.sleep(0.1)


def stop(proc: subprocess.Popen, sig: signal.Signals, run_dir: Path) -> float:
    """Send `sig`; the seconds until train.py exited, with status 0."""
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"train.py still ran {STOP_WITHIN_S} s after {sig.name}:\n{output(run_dir)}")
    took = time.monotonic() - t0
    assert rc == 0, f"exit status {rc} after {sig.name}:\n{output(run_dir)}"
    assert f"[claw] stopped ({sig.name})" in output(run_dir)
    print(f"{sig.name}: exited 0 after {took:.1f} s")
    return took


def assert_stopped_cleanly(run_dir: Path) -> int:
    """The checkpoint holds the last step trained, the logs are whole, no sample trained twice. Its step."""
    for log in run_dir.glob("*.jsonl"):
        data = log.read_bytes()
        assert not data or data.endswith(b"\n"), f"{log.name} ends in a cut line"
        for line in data.splitlines():
            json.loads(line)
    assert (run_dir / "checkpoints" / "last.ckpt").exists(), "no checkpoint"
    step, _, _ = checkpoint_at(run_dir)
    steps = steps_trained(run_dir)
    assert steps == list(range(1, step + 1)), f"ledger {steps} vs checkpoint at step {step}"
    trained = [i for r in read_jsonl(run_dir / "ledger.jsonl") for i in r["trained"]] if steps else []
    assert len(trained) == len(set(trained)), "a sample was trained twice"
    return step


def stop_resume_stop(run_dir: Path, args: list[str], first: signal.Signals, second: signal.Signals) -> None:
    """Train until a step is done (then `first`), resume until one more is (then `second`)."""
    proc = launch([*args, f"run_dir={run_dir}"], run_dir)
    try:
        wait_until("a trained step", lambda: len(steps_trained(run_dir)) >= 1, proc, run_dir)
        stop(proc, first, run_dir)
    finally:
        if proc.poll() is None:
            proc.kill()
    step = assert_stopped_cleanly(run_dir)
    assert step >= 1
    (run_dir / "proxy.json").unlink(missing_ok=True)  # the users' proxy writes it again
    proc = launch([f"resume={run_dir}"], run_dir)
    try:
        wait_until("a step after the resume", lambda: len(steps_trained(run_dir)) > step, proc, run_dir)
        stop(proc, second, run_dir)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert assert_stopped_cleanly(run_dir) > step


def test_dataset_source_stops_on_sigint_then_on_sigterm_and_resumes(tmp_path):
    stop_resume_stop(tmp_path, DATASET, signal.SIGINT, signal.SIGTERM)


def test_simulated_users_stop_on_sigterm_then_on_sigint_and_resume(tmp_path):
    stop_resume_stop(tmp_path, USERS, signal.SIGTERM, signal.SIGINT)
    users = read_jsonl(tmp_path / "users.jsonl")
    assert users and all(r["session_id"].startswith("sim-") for r in users)


def test_an_idle_proxy_stops_on_sigterm_then_on_sigint_and_resumes(tmp_path):
    """A user talks until a step is trained, then nobody does: the trainer waits for a batch that never comes (the
    run that once ignored SIGTERM and SIGINT for minutes). Every turn a client received is in the turn log."""
    received: list[str] = []

    def talk(session: str) -> None:
        url = wait_url(tmp_path)
        converse(url, session, 4, received)  # three turns get a next state: a step of two samples

    proc = launch([*LIVE, f"run_dir={tmp_path}"], tmp_path)
    try:
        talk("first")
        wait_until("a trained step", lambda: len(steps_trained(tmp_path)) >= 1, proc, tmp_path)
        time.sleep(1.5)  # idle: the trainer waits for a batch
        stop(proc, signal.SIGTERM, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
    step = assert_stopped_cleanly(tmp_path)
    turns = {r["turn_id"] for r in read_jsonl(tmp_path / "proxy.jsonl") if r["kind"] == "turn"}
    assert set(received) <= turns

    (tmp_path / "proxy.json").unlink()
    proc = launch([f"resume={tmp_path}"], tmp_path)
    try:
        talk("second")
        wait_until("a step after the resume", lambda: len(steps_trained(tmp_path)) > step, proc, tmp_path)
        time.sleep(1.5)
        stop(proc, signal.SIGINT, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert assert_stopped_cleanly(tmp_path) > step
    turns = {r["turn_id"] for r in read_jsonl(tmp_path / "proxy.jsonl") if r["kind"] == "turn"}
    assert set(received) <= turns


def test_sources_that_run_out_end_training_without_a_step_that_trained_nothing(tmp_path):
    """A finite dataset used up before `steps`: the stream ends inside training_step and Lightning calls the batch-end
    hooks once more with the batch already trained. Before: that batch went in the ledger a second time as step 3,
    and the policy version moved on with weights that had not changed."""
    from tests.conftest import TINY, make_cfg
    from train import run

    summary = run(make_cfg([*TINY, "steps=10", "source.max_groups=4", "eval_every=0"], tmp_path))  # 2 batches
    ledger = read_jsonl(tmp_path / "ledger.jsonl")
    trained = [i for r in ledger for i in r["trained"]]
    assert [r["step"] for r in ledger] == [1, 2] and len(trained) == len(set(trained)) == 16
    assert summary["steps"] == 2 and checkpoint_at(tmp_path)[0] == 2
