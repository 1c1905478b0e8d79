"""A judge outage never drops a turn for good: bounded retries with backoff while running, a fresh judgement on
`resume=`, and an explicit `/v1/feedback` reward kept even when the judges fail. The judge is a real
OpenAI-compatible HTTP endpoint on 127.0.0.1 that answers 503 while it is down."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai
import pytest
from omegaconf import OmegaConf

from claw.judge.build import build_judges
from claw.rollout.queue import RolloutQueue
from claw.sources.proxy.source import ProxySource
from tests.test_proxy import records, wait_for


class FlakyJudge:
    """Chat completions that fail with 503 for the first `failures` calls (-1: always), then vote `\\boxed{1}`."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length", 0)))
                judge.calls += 1
                if judge.failures != 0:
                    judge.failures -= judge.failures > 0
                    status, body = 503, {"error": {"message": "judge down", "type": "server_error"}}
                else:
                    message = {"role": "assistant", "content": "The user is satisfied. \\boxed{1}"}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    status, body = (
                        200,
                        {"id": "j", "object": "chat.completion", "created": 0, "model": "judge", "choices": [choice]},
                    )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def judge():
    made: list[FlakyJudge] = []

    def make(failures: int) -> FlakyJudge:
        made.append(FlakyJudge(failures))
        return made[-1]

    yield make
    for j in made:
        j.close()


def serve(policy, run_dir, judge_url, **kw):
    from claw.engine.hf import HFEngine

    backend = {
        "kind": "openai",
        "base_url": judge_url,
        "api_key": "judge-key",
        "model": "judge",
        "max_retries": 0,
        "backoff_s": 0.0,
    }
    votes = {
        "m": 1,
        "temperature": 0.6,
        "max_tokens": 32,
        "timeout_s": 10.0,
        "max_concurrency": 4,
        "min_hint_chars": 10,
    }
    cfg = OmegaConf.create({**backend, **votes, "prm_prompt": "prm.yaml", "hint_prompt": "hint.yaml"})
    engine = HFEngine(policy, seed=0)
    src = ProxySource(
        engine,
        policy.tokenizer,
        run_dir,
        mode="rl",
        judges=build_judges(cfg),
        port=0,
        fsync=False,
        default_max_tokens=5,
        **kw,
    )
    queue = RolloutQueue(run_dir / "samples.jsonl", max_size=64, fsync=False)
    src.start(queue)
    return src, queue, openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)


def answered_turn(client, sid: str, answer: str = "Thanks, perfect!") -> str:
    """One turn, then the user's answer to it (the turn's next state); returns the first turn's id."""
    q = [{"role": "user", "content": "Suggest a name for a cat."}]
    h = {"X-Session-Id": sid}
    r = client.chat.completions.create(model="m", messages=q, temperature=0.8, extra_headers=h)
    reply = {"role": "assistant", "content": r.choices[0].message.content}
    client.chat.completions.create(
        model="m", messages=[*q, reply, {"role": "user", "content": answer}], temperature=0.8, extra_headers=h
    )
    return r.model_extra["claw"]["turn_id"]


def reasons(src, turn_id):
    return [r["reason"] for r in records(src, "verdict") if r["turn_id"] == turn_id]


def test_a_turn_whose_judges_failed_is_judged_again_with_backoff(tiny_policy, tmp_path, judge):
    flaky = judge(failures=2)
    src, queue, client = serve(tiny_policy, tmp_path, flaky.url, judge_retries=3, judge_retry_backoff_s=0.1)
    try:
        t1 = answered_turn(client, "outage-1")
        assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()), timeout=20), reasons(src, t1)
        assert next(s for s in queue.store.samples() if s.sample_id == t1).reward == 1.0
        # the outcome record follows the sample into the log (a crash in between is recovered as `queued`)
        assert wait_for(lambda: reasons(src, t1) == ["queued"], timeout=20), reasons(src, t1)
        assert flaky.calls == 3
        assert src.proxy.counts["judge_retries"] == 2
    finally:
        src.stop()


def test_retries_are_bounded_and_feedback_survives_the_outage(tiny_policy, tmp_path, judge):
    down = judge(failures=-1)
    src, queue, client = serve(tiny_policy, tmp_path, down.url, judge_retries=1, judge_retry_backoff_s=0.05)
    try:
        t1 = answered_turn(client, "down-1")
        assert wait_for(lambda: reasons(src, t1) == ["judge_failed"], timeout=20), reasons(src, t1)
        assert down.calls == 2  # the first judgement and one retry
        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Rate me."}], extra_headers={"X-Session-Id": "down-2"}
        )
        resp = httpx.post(src.url.removesuffix("/v1") + "/v1/feedback", json={"session_id": "down-2", "reward": -1})
        assert resp.status_code == 200, resp.text
        t2 = r.model_extra["claw"]["turn_id"]
        assert wait_for(lambda: any(s.sample_id == t2 for s in queue.store.samples()), timeout=20), reasons(src, t2)
        assert (
            next(s for s in queue.store.samples() if s.sample_id == t2).reward == -1.0
        )  # the user's rating, judges or not
    finally:
        src.stop()


def test_resume_judges_again_the_turns_whose_judges_failed(tiny_policy, tmp_path, judge):
    down = judge(failures=-1)
    src, queue, client = serve(tiny_policy, tmp_path, down.url, judge_retries=0)
    try:
        t1 = answered_turn(client, "resume-1")
        assert wait_for(lambda: reasons(src, t1) == ["judge_failed"], timeout=20)
    finally:
        src.stop()
        queue.close()
    up = judge(failures=0)
    src, queue, _ = serve(tiny_policy, tmp_path, up.url, judge_retries=0)  # the same run directory: a restart
    try:
        assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()), timeout=20), reasons(src, t1)
        assert reasons(src, t1) == ["judge_failed", "queued"]
    finally:
        src.stop()
