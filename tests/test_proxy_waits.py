"""`source.max_wait_s` bounds the wait on engine=hf: a request that cannot start in time gets its 503 +
Retry-After then, not when the batch in flight ends (real server on 127.0.0.1, the `openai` client, the
real hf engine on the tiny model). The vLLM side (waits behind a drain + reload, `max_waiting` counting the
requests the engine holds back) is in tests/test_engine_vllm.py."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
