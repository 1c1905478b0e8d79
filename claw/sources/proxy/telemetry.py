"""What the proxy measures: Prometheus text for `GET /metrics`, and the flat dict `Proxy.metrics()`.

`GET /metrics` is the Prometheus exposition format (prometheus_client, with `# HELP` / `# TYPE` lines,
one registry per proxy so two proxies in a process never share series):
- histograms `proxy_request_latency_seconds` (request to last token), `proxy_ttft_seconds` (streamed
  requests, to the first token), `proxy_queue_wait_seconds` (accepted to first engine step) and
  `proxy_batch_size` (rows per engine call);
- a counter `proxy_<event>_total` for every event the proxy counts (`turns_main`, `verdict_<reason>`,
  `samples`, `judge_errors`, ...) and for `engine_batches`, `engine_rejected`;
- gauges: live sessions, judgings in flight, requests in flight / waiting, the served policy_version,
  and the p50 / p95 of latency, TTFT and queue wait over the last `WINDOW` observations.

Memory is bounded: histograms have fixed buckets, and the series behind the percentiles are windows of
the last `WINDOW` observations (`Proxy.metrics()` reads the same windows).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

WINDOW = 4096  # observations kept per percentile series
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
_ENGINE_COUNTERS = ("batches", "rejected")  # the batcher's stats that only grow


class Window:
    """The last `size` observations, for percentiles."""

    def __init__(self, size: int = WINDOW) -> None:
        self.values: deque[float] = deque(maxlen=size)

    def add(self, value: float) -> None:
        self.values.append(value)

    def quantile(self, q: float) -> float:
        xs = sorted(self.values) or [0.0]
        return xs[min(len(xs) - 1, int(len(xs) * q))]

    def __len__(self) -> int:
        return len(self.values)


class Telemetry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latency = Histogram(
            "proxy_request_latency_seconds",
            "Seconds from a chat request to its last token.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.ttft = Histogram(
            "proxy_ttft_seconds",
            "Seconds from a streamed chat request to its first token.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "proxy_queue_wait_seconds",
            "Seconds a request waited before its first engine step.",
            buckets=_SECONDS,
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "proxy_batch_size", "Requests that shared one engine call.", buckets=_ROWS, registry=self.registry
        )
        self.latencies, self.ttfts = Window(), Window()

    def observe_latency(self, seconds: float) -> None:
        self.latency.observe(seconds)
        self.latencies.add(seconds)

    def observe_ttft(self, seconds: float) -> None:
        self.ttft.observe(seconds)
        self.ttfts.add(seconds)

    def observe_batch(self, queue_waits: Iterable[float]) -> None:
        """One engine call (from the batcher's thread; prometheus_client is thread-safe)."""
        waits = list(queue_waits)
        self.batch_size.observe(len(waits))
        for w in waits:
            self.queue_wait.observe(w)

    def expose(self, proxy) -> bytes:
        """The Prometheus text of `proxy` (a `claw.sources.proxy.service.Proxy`)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Snapshot(self, proxy))
        return generate_latest(self.registry) + generate_latest(registry)


class _Snapshot:
    """Counters and gauges read from the proxy at scrape time."""

    def __init__(self, telemetry: Telemetry, proxy) -> None:
        self.telemetry, self.proxy = telemetry, proxy

    def collect(self):
        flat = self.proxy.metrics()
        for key, value in sorted(self.proxy.counts.items()):
            c = CounterMetricFamily(f"proxy_{key}", f"Count of proxy event {key}.")
            c.add_metric([], float(value))
            yield c
        for key in _ENGINE_COUNTERS:
            c = CounterMetricFamily(f"proxy_engine_{key}", f"Engine calls: {key}.")
            c.add_metric([], flat[f"proxy_engine_{key}"])
            yield c
        counted = {f"proxy_{k}" for k in self.proxy.counts} | {f"proxy_engine_{k}" for k in _ENGINE_COUNTERS}
        for key, value in sorted(flat.items()):
            if key not in counted:
                yield GaugeMetricFamily(
                    key, f"Proxy gauge {key} (percentiles: the last {WINDOW} observations).", value=value
                )
