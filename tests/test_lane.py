"""The main thread's lane (claw/engine/lane.py): while the trainer waits for a batch, the decodes that sources ask
for run on its thread; otherwise on theirs. Same results either way, errors reach the caller, nothing waits on a
busy trainer."""

import json
import threading
import time

import torch

from claw.engine import SamplingParams
from claw.engine.lane import MainLane
from tests.conftest import TINY, make_cfg


def in_thread(fn):
    """Run `fn` on a new thread; returns (thread, box) where box gets its result or its error."""
    box: dict = {}

    def target():
        try:
            box["result"] = fn()
        except Exception as e:
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    return t, box


def test_a_job_runs_on_the_main_thread_while_it_serves():
    lane = MainLane()
    with lane.serving():
        t, box = in_thread(lambda: lane.run(lambda: (threading.current_thread(), torch.is_grad_enabled())))
        assert lane.serve(timeout=10)
        t.join(10)
    ran_on, grad = box["result"]
    assert ran_on is threading.main_thread() and grad and lane.served == 1


def test_the_callers_grad_mode_goes_with_its_job():
    lane = MainLane()

    def ask():
        with torch.no_grad():
            return lane.run(torch.is_grad_enabled)

    with lane.serving():
        t, box = in_thread(ask)
        assert lane.serve(timeout=10)
        t.join(10)
    assert box["result"] is False and torch.is_grad_enabled()


def test_a_jobs_error_is_raised_in_the_callers_thread_and_the_main_thread_goes_on():
    lane = MainLane()

    def fail():
        raise ValueError("bad prompt")

    with lane.serving():
        t, box = in_thread(lambda: lane.run(fail))
        assert lane.serve(timeout=10)
        t.join(10)
        assert not lane.serve(timeout=0.01)  # nothing else was handed over
    assert isinstance(box["error"], ValueError) and str(box["error"]) == "bad prompt"


def test_without_a_serving_main_thread_the_caller_runs_its_own_job():
    lane = MainLane()
    t, box = in_thread(lambda: lane.run(threading.current_thread))
    t.join(10)
    assert box["result"] is t and lane.served == 0


def test_leaving_serving_hands_back_the_jobs_not_taken():
    lane = MainLane()
    started = threading.Event()

    def ask():
        started.set()
        return lane.run(threading.current_thread)

    with lane.serving():
        t, box = in_thread(ask)
        started.wait(10)
        time.sleep(0.1)  # handed over, never served
    t.join(10)
    assert box["result"] is t and lane.served == 0


def test_on_the_main_thread_a_job_runs_at_once_and_only_the_main_thread_serves():
    lane = MainLane()
    assert lane.run(threading.current_thread) is threading.main_thread()

    def serve_elsewhere():
        with lane.serving():
            pass

    t, box = in_thread(serve_elsewhere)
    t.join(10)
    assert isinstance(box["error"], RuntimeError) and "main thread" in str(box["error"])


def test_a_patient_job_waits_for_the_main_threads_next_wait_on_an_attached_lane():
    lane = MainLane()
    lane.attach()

    def ask():
        with lane.patient():
            return lane.run(threading.current_thread)

    t, box = in_thread(ask)
    time.sleep(0.2)  # the main thread is busy: the job waits for it
    assert t.is_alive() and "result" not in box
    with lane.serving():
        assert lane.serve(timeout=10)
    t.join(10)
    assert box["result"] is threading.main_thread()


def test_patience_needs_an_attached_lane_and_ends_when_it_closes():
    lane = MainLane()

    def ask():
        with lane.patient():
            return lane.run(threading.current_thread)

    t, box = in_thread(ask)  # nobody will serve: the caller runs it
    t.join(10)
    assert box["result"] is t
    lane.attach()
    t, box = in_thread(ask)
    time.sleep(0.2)
    assert t.is_alive()
    lane.close()  # the run is stopping: handed back
    t.join(10)
    assert box["result"] is t
    t, box = in_thread(ask)  # and from now on every caller runs its own
    t.join(10)
    assert box["result"] is t and lane.served == 0


def test_the_hf_engine_decodes_the_same_tokens_on_either_thread(tiny_policy):
    """Seeded rows decode the same tokens and log-probs when the forward passes run on the main thread (served
    while it waits) as when they run on the caller's; `on_token` is called on the caller's thread either way."""
    from claw.engine.hf import HFEngine

    engine = HFEngine(tiny_policy)
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    rows = [SamplingParams(temperature=1.0, max_new_tokens=12, seed=s) for s in range(3)]
    passes: list = []
    engine.model.register_forward_hook(lambda *_: passes.append(threading.current_thread()))
    callbacks: list = []

    def decode():
        return engine.generate(prompts, rows, on_token=lambda *_: callbacks.append(threading.current_thread()))

    t, box = in_thread(decode)
    t.join(60)
    own = box["result"]
    assert set(passes) == {t} and set(callbacks) == {t}
    passes.clear(), callbacks.clear()
    with engine.lane.serving():
        t, box = in_thread(decode)
        while t.is_alive():
            engine.lane.serve(timeout=0.01)
    assert set(passes) == {threading.main_thread()} and len(passes) == 12  # the prefill and 11 more steps
    assert set(callbacks) == {t}
    lent = box["result"]
    assert [g.response_ids for g in lent] == [g.response_ids for g in own]
    assert [g.logprobs for g in lent] == [g.logprobs for g in own]


def test_an_on_policy_run_decodes_on_the_trainers_thread_and_trains_the_same(tmp_path, monkeypatch):
    """`source.ahead=0` on engine=hf: the trainer waits for every batch, so the source's decodes run on its thread
    (the lane serves them), and the run trains exactly what it trains with every decode on the source's thread."""
    from claw.engine.hf import HFEngine
    from train import run

    served = []
    serve = MainLane.serve
    monkeypatch.setattr(MainLane, "serve", lambda self, timeout: served.append(serve(self, timeout)) or served[-1])
    args = [*TINY, "steps=3", "source.max_new_tokens=16", "source.ahead=0", "checkpoint_every=100"]
    assert run(make_cfg(args, tmp_path / "lent"))["steps"] == 3
    assert served.count(True) >= 3  # the three batches at least were decoded on the trainer's thread

    monkeypatch.setattr(HFEngine, "_run", lambda self, fn: fn())  # every decode on the caller's thread
    assert run(make_cfg(args, tmp_path / "own"))["steps"] == 3

    def trained(run_dir):
        return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()][:24]

    lent, own = trained(tmp_path / "lent"), trained(tmp_path / "own")
    assert [s["response_ids"] for s in lent] == [s["response_ids"] for s in own]
    assert [s["rollout_logprobs"] for s in lent] == [s["rollout_logprobs"] for s in own]
