"""`source.max_wait_s` bounds the wait on engine=hf: a request that cannot start in time gets its 503 +
Retry-After then, not when the batch in flight ends (real server on 127.0.0.1, the `openai` client, the
real hf engine on the tiny model). The vLLM side (waits behind a drain + reload, `max_waiting` counting the
requests the engine holds back) is in tests/test_engine_vllm.py. No request waits behind another's prompt: a 4 MB
one is refused by its length before tokenising, off the event loop."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from tests.test_proxy import make_proxy, wait_for


def _ask(client, session: str, timeout: float = 60):
    return client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": f"Hello from {session}."}],
        max_tokens=4,
        extra_headers={"X-Session-Id": session},
        timeout=timeout,
    )


def test_a_request_that_cannot_start_gets_503_while_the_batch_is_still_running(tiny_policy, tmp_path):
    from claw.engine.hf import HFEngine

    engine = HFEngine(tiny_policy, seed=0)
    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", engine=engine, max_wait_s=1.0)
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    # The engine is busy (a teacher scoring pass holds it): the batch the proxy starts next is stuck in flight.
    engine.lock.acquire()
    held = True
    try:
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(_ask, client, "a")
            assert wait_for(lambda: src.batcher.stats()["batches"] == 1), "request a never reached the engine"
            with pytest.raises(
                openai.APIStatusError
            ) as err:  # before the fix: no answer until the batch ends (a timeout here)
                _ask(client, "b", timeout=20)
            assert err.value.status_code == 503 and err.value.response.headers.get("retry-after")
            assert err.value.code == "busy"
            assert not running.done(), "the 503 came only after the batch in flight had ended"
            engine.lock.release()
            held = False
            started = running.result(60)  # the request that had started is served in full, whatever its wait
            assert started.choices[0].message.content is not None
        assert _ask(client, "c").usage.completion_tokens > 0  # and the server goes on serving
        stats = src.batcher.stats()
        assert stats["rejected"] == 1 and stats["in_flight"] == 0 and stats["waiting"] == 0
    finally:
        if held:
            engine.lock.release()
        src.stop()


def test_healthz_answers_at_once_while_4mb_prompts_are_refused(tiny_policy, tmp_path):
    """A 4 MB message (under the 4 MiB body limit) far past the context: refused by its length in characters before
    any tokenising, and what tokenising remains runs off the event loop, so /healthz never waits behind it."""
    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=4)  # max_context_tokens 2048
    base = src.url.removesuffix("/v1")
    big = ("hello world " * 350_000)[:4_000_000]
    body = json.dumps({"messages": [{"role": "user", "content": big}]}).encode()
    answers: list[httpx.Response] = []

    def send():
        answers.append(
            httpx.post(
                base + "/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}, timeout=120
            )
        )

    try:
        senders = [threading.Thread(target=send) for _ in range(4)]
        for t in senders:
            t.start()
        waits = []
        with httpx.Client(base_url=base, timeout=60) as http:
            while any(t.is_alive() for t in senders):
                t0 = time.perf_counter()
                assert http.get("/healthz").status_code == 200
                waits.append(time.perf_counter() - t0)
                time.sleep(0.02)
        for t in senders:
            t.join()
        assert [r.status_code for r in answers] == [400] * 4, [r.text[:200] for r in answers]
        assert {r.json()["error"]["code"] for r in answers} == {"context_length_exceeded"}
        assert waits and max(waits) < 0.5, (max(waits), len(waits))  # before: up to 4.4 s here (14.9 s measured)
        # a prompt within the character bound but past the context in tokens is still refused by its token count
        words = [{"role": "user", "content": "word " * 3000}]
        with pytest.raises(openai.BadRequestError, match="tokens"):
            openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0).chat.completions.create(
                model="m", messages=words
            )
    finally:
        src.stop()
