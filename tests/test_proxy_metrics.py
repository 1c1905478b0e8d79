"""GET /metrics speaks Prometheus (prometheus_client's own parser reads it) and its series are bounded
(real HTTP, the official openai client, the tiny model)."""

from __future__ import annotations

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families

from claw.sources.proxy.telemetry import WINDOW
from tests.test_proxy import make_proxy, wait_for


def test_metrics_are_prometheus_text_with_histograms_and_counters(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=6, idle_timeout_s=600)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        for i in range(3):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"hi {i}"}], max_tokens=4)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "stream"}], max_tokens=4, stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) is not None
        assert wait_for(lambda: src.proxy.telemetry.latency._sum.get() > 0)
        resp = httpx.get(src.url.removesuffix("/v1") + "/metrics")
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = resp.text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        for name in (
            "proxy_request_latency_seconds",
            "proxy_ttft_seconds",
            "proxy_queue_wait_seconds",
            "proxy_batch_size",
        ):
            assert (
                families[name].type == "histogram" and f"# TYPE {name} histogram" in text and f"# HELP {name} " in text
            )
        count = lambda name: next(s.value for s in families[name].samples if s.name == f"{name}_count")  # noqa: E731
        assert count("proxy_request_latency_seconds") == 4 and count("proxy_ttft_seconds") == 1
        assert count("proxy_queue_wait_seconds") == 4 and count("proxy_batch_size") >= 1
        assert families["proxy_turns_main"].type == "counter" and "# TYPE proxy_turns_main_total counter" in text
        assert next(s.value for s in families["proxy_turns_main"].samples) == 4
        assert families["proxy_sessions_live"].type == "gauge"
        assert families["proxy_latency_p95_s"].samples[0].value > 0
        # the JSON-style flat dict (benchmarks, tests) reads the same windows
        assert src.proxy.metrics()["proxy_latency_p50_s"] > 0
        # fixed-size series: a long-running proxy does not grow them
        assert (
            src.proxy.telemetry.latencies.values.maxlen == WINDOW and src.proxy.telemetry.ttfts.values.maxlen == WINDOW
        )
        assert src.batcher.batch_sizes.maxlen == WINDOW and src.batcher.queue_waits.maxlen == WINDOW
    finally:
        src.stop()
