"""The openai backend and the judges against a real OpenAI-protocol server on 127.0.0.1 (FastAPI + uvicorn),
through the official `openai` client. No mocked transport: retries, timeouts and refused connections are real."""

import asyncio
import json
import socket
import threading
import time

import openai
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from claw.config import compose_config
from claw.judge import HintJudge, OpenAIBackend, PRMJudge, Turn, build_judges


class Script:
    """What the server does, request by request: the n-th request (0-based) answers texts[n % len(texts)],
    after failing with `fail_status` while n < fail_first, and sleeping `sleep_s` first while n < sleep_first."""

    def reset(self, texts=("\\boxed{1}",), fail_first=0, fail_status=500, sleep_first=0, sleep_s=0.0):
        self.texts, self.fail_first, self.fail_status = list(texts), fail_first, fail_status
        self.sleep_first, self.sleep_s = sleep_first, sleep_s
        self.requests: list[dict] = []


def make_app(script: Script) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        n = len(script.requests)
        script.requests.append(body)
        if n < script.fail_first:
            return JSONResponse(
                {"error": {"message": "scripted failure", "type": "server_error"}}, status_code=script.fail_status
            )
        text = script.texts[(n - script.fail_first) % len(script.texts)]
        if n < script.sleep_first:
            await asyncio.sleep(script.sleep_s)
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    return app


@pytest.fixture(scope="module")
def server():
    """A uvicorn server on a free port in a background thread; yields (base_url, script)."""
    script = Script()
    script.reset()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(make_app(script), log_level="warning", timeout_graceful_shutdown=1))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}/v1", script
    uv.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def endpoint(server):
    base_url, script = server
    script.reset()
    return base_url, script


def backend(base_url, **kwargs):
    return OpenAIBackend(
        base_url=base_url, api_key="test-key", model="judge-model", **{"timeout_s": 5.0, "backoff_s": 0.01, **kwargs}
    )


def run(coro, client):
    """Run one judgement in a fresh loop, closing the client's connections before the loop ends."""

    async def main():
        try:
            return await coro
        finally:
            await client.aclose()

    return asyncio.run(main())


TURN = Turn(
    messages=[{"role": "user", "content": "Rename report.txt to final.txt"}],
    response_text='<tool_call>{"name": "mv", "arguments": {"src": "report.txt", "dst": "final.txt"}}</tool_call>',
    next_state=[{"role": "tool", "content": "renamed"}],
)


def test_prm_majority_over_scripted_votes(endpoint):
    base_url, script = endpoint
    script.reset(texts=["Progress. \\boxed{1}", "\\boxed{-1}", "<think>hm</think>\\boxed{1}"])
    client = backend(base_url)
    result = run(PRMJudge(client, m=3).judge(TURN), client)
    assert result.score == 1 and sorted(result.votes) == [-1, 1, 1] and result.n_abstain == 0 and result.error is None
    assert result.agreement == pytest.approx(2 / 3)
    assert result.rationale in ("Progress. \\boxed{1}", "<think>hm</think>\\boxed{1}")
    assert len(script.requests) == 3
    body = script.requests[0]
    assert body["model"] == "judge-model" and body["temperature"] == 0.6 and body["max_tokens"] == 512
    assert (
        "[tool] renamed" in body["messages"][-1]["content"] and "Rename report.txt" in body["messages"][-1]["content"]
    )


def test_retries_after_transient_500s(endpoint):
    base_url, script = endpoint
    script.reset(texts=["\\boxed{-1}"], fail_first=2)
    client = backend(base_url, max_retries=2)
    result = run(PRMJudge(client, m=1).judge(TURN), client)
    assert (result.score, result.votes, result.error) == (-1, [-1], None)
    assert client.attempts == len(script.requests) == 3


def test_429_is_retried_but_other_4xx_is_not(endpoint):
    base_url, script = endpoint
    script.reset(texts=["\\boxed{1}"], fail_first=1, fail_status=429)
    client = backend(base_url)
    assert run(client.complete([{"role": "user", "content": "x"}], 0.6, 8), client) == "\\boxed{1}"
    script.reset(fail_first=5, fail_status=400)
    client = backend(base_url, max_retries=3)
    with pytest.raises(openai.BadRequestError):
        run(client.complete([{"role": "user", "content": "x"}], 0.6, 8), client)
    assert client.attempts == len(script.requests) == 1


def test_raises_after_the_last_attempt(endpoint):
    base_url, script = endpoint
    script.reset(fail_first=10)
    client = backend(base_url, max_retries=2)
    with pytest.raises(openai.InternalServerError):
        run(client.complete([{"role": "user", "content": "x"}], 0.6, 8), client)
    assert len(script.requests) == 3


def test_a_timed_out_vote_abstains(endpoint):
    base_url, script = endpoint
    script.reset(
        texts=["\\boxed{-1}", "\\boxed{1}", "\\boxed{1}"], sleep_first=1, sleep_s=12.0
    )  # the first request (a -1) hangs
    start = time.perf_counter()
    client = backend(base_url, max_retries=0)
    # timeout 3 s: the two prompt votes answer well within it even on a loaded 2-core machine
    result = run(PRMJudge(client, m=3, timeout_s=3.0).judge(TURN), client)
    assert time.perf_counter() - start < 10  # the hanging vote was abandoned at its timeout, not awaited (12 s)
    assert result.score == 1 and sorted(result.votes, key=str) == [1, 1, None] and result.n_abstain == 1
    assert result.agreement == 1.0 and result.error is None


def test_unreachable_server_abstains_without_raising():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here: connections are refused
    client = backend(f"http://127.0.0.1:{port}/v1", max_retries=1)
    result = run(PRMJudge(client, m=3).judge(TURN), client)
    assert (result.score, result.votes, result.n_abstain, result.rationale) == (0, [None] * 3, 3, "")
    assert result.error is not None and "all 3 votes failed" in result.error and "APIConnectionError" in result.error
    assert client.attempts == 6  # each vote retried once
    hint = run(HintJudge(client, m=3).extract(TURN), client)
    assert (hint.accepted, hint.votes) == (False, [None] * 3) and hint.error is not None


def test_hint_judge_over_http(endpoint):
    base_url, script = endpoint
    short = "\\boxed{1} [HINT_START]Check that final.txt does not exist first.[HINT_END]"
    long = "\\boxed{1} [HINT_START]Check that final.txt does not exist first, or ask before overwriting it.[HINT_END]"
    script.reset(texts=[short, "\\boxed{-1}", long])
    client = backend(base_url)
    result = run(HintJudge(client, m=3).extract(TURN), client)
    assert (
        result.accepted and result.hint == "Check that final.txt does not exist first, or ask before overwriting it."
    )
    assert result.n_positive == 2 and "[HINT_START]" in script.requests[0]["messages"][0]["content"]


def test_max_concurrency_bounds_requests_in_flight(endpoint):
    base_url, script = endpoint
    script.reset(texts=["\\boxed{1}"], sleep_first=100, sleep_s=0.3)
    client = backend(base_url)
    judge = PRMJudge(client, m=4, max_concurrency=2, timeout_s=5.0)
    start = time.perf_counter()
    result = run(judge.judge(TURN), client)
    assert result.votes == [1, 1, 1, 1]
    assert time.perf_counter() - start >= 0.55  # 4 votes, 2 at a time, 0.3 s each: two waves


def test_openai_config_builds_a_working_judge(endpoint, monkeypatch):
    base_url, script = endpoint
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    cfg = compose_config(
        [
            "judge=openai",
            f"judge.base_url={base_url}",
            "judge.model=served",
            "judge.m=3",
            "judge.max_tokens=64",
            "judge.temperature=0.2",
        ]
    )
    judges = build_judges(cfg.judge)
    assert judges.backend.api_key == "from-env" and judges.backend.max_retries == 2 and judges.backend.backoff_s == 0.5
    script.reset(texts=["\\boxed{-1}"])
    assert run(judges.prm.judge(TURN), judges.backend).score == -1
    assert {(r["model"], r["max_tokens"], r["temperature"]) for r in script.requests} == {("served", 64, 0.2)}


def test_evaluate_command_measures_an_openai_judge(endpoint, tmp_path):
    """`python -m claw.judge.evaluate --judge openai --set base_url=...`: the scripted endpoint votes -1 on every
    request, so the approval line is misread and the correction read right."""
    from claw.judge.evaluate import main

    base_url, script = endpoint
    script.reset(texts=["\\boxed{-1}"])
    path = tmp_path / "lines.jsonl"
    rows = [
        {"id": "a", "request": "2+2?", "response": "4", "feedback": "thanks!", "reading": "approve"},
        {"id": "c", "request": "2+3?", "response": "6", "feedback": "it's 5", "reading": "correct"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = main(
        [str(path), "--judge", "openai", "--votes", "1", "--set", f"base_url={base_url}", "--set", "model=m"]
    )
    assert summary["accuracy"] == 0.5 and summary["confusion"]["correct"]["-1"] == 1
    assert script.requests and {r["model"] for r in script.requests} == {"m"}
