"""Proxy benchmark: what serving through claw costs over calling the engine directly.

    python bench/bench.py --only proxy          (or: python bench/bench_proxy.py)

1. added latency: one request at a time, 32 new tokens at T = 0.7, the same prompt — the `openai`
   client through the proxy (HTTP, session bookkeeping, turn store with fsync) vs `engine.generate`
   called in-process. p50 / p95 of each and of the difference.
2. throughput: 16 concurrent streaming sessions × 64 new tokens: total tokens/s, time to first
   token (p50 over the 16), and a single stream's time to first token.
3. the same 16 streams while the trainer trains from the proxy's own turns (`train.py`'s `run` with
   `source=proxy`): tokens/s and time to first token then.
4. liveness under large bodies: p50 / p99 / max of `GET /healthz`, probed every 20 ms while four clients each post
   three 4 MB chat requests (refused as past the context once read and decoded, off the event loop).

Every wait is bounded (`START_S`, `FIRST_STEP_S`, `FINISH_S`, the clients' timeouts): a stage that runs past its
bound raises TimeoutError naming the stage, never waits silently.

Queue wait and TTFT under training (`python bench/bench.py --only waits`, or `bench_proxy.py --waits`):
rounds of 8 concurrent streams × 16 tokens against the proxy on each engine, first idle, then while a
trainer thread loops an optimizer step (forward + backward + AdamW on 2 × 64 tokens of the same policy)
and a weight sync (`engine.load_weights`, a new policy_version each step). p50 / p95 of the queue wait
(accepted → started: the engine call began for hf, the first token came for vLLM) and of TTFT (the
client's time to its first text), per phase, with the optimizer steps and syncs that overlapped.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

START_S = 300  # train.py's proxy up (proxy.json written)
FIRST_STEP_S = 300  # the first optimizer step once traffic flows
FINISH_S = 600  # the training run's remaining steps after the measurement
REQUEST_S = 180  # one client request


def _workdir(prefix: str) -> Path:
    """A temporary run directory, removed when the benchmark exits (runs can hold 1.6 GB checkpoints)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    return work


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def _streams(url: str, n: int, max_tokens: int, tag: str, model: str = "m") -> dict:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=REQUEST_S)

    async def one(i: int):
        t0 = time.perf_counter()
        first, tokens = None, 0
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": f"Tell me a short story about a {tag} number {i}."}],
            max_tokens=max_tokens,
            temperature=0.7,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers={"X-Session-Id": f"bench-{tag}-{i}"},
        )
        async for c in stream:
            if first is None and c.choices and c.choices[0].delta.content:
                first = time.perf_counter() - t0
            if c.usage:
                tokens = c.usage.completion_tokens
        return first or (time.perf_counter() - t0), tokens, time.perf_counter() - t0

    t0 = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0
    await client.close()
    tokens = sum(r[1] for r in results)
    return {
        "streams": n,
        "max_tokens": max_tokens,
        "tokens": tokens,
        "wall_s": wall,
        "tokens_per_s": tokens / wall,
        "ttft_p50_s": statistics.median(r[0] for r in results),
    }


def bench_proxy(model: str = "smollm2_135m", reps: int = 8, while_training: bool = True) -> dict:
    import openai
    from hydra.utils import instantiate

    from claw.config import compose_config
    from claw.engine.base import SamplingParams
    from claw.engine.hf import HFEngine
    from claw.judge.build import build_judges
    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    work = _workdir("claw-bench-proxy-")
    cfg = compose_config(
        [f"model={model}", "source=proxy", "judge=rule", "algo=reinforce", "mode=rl", "source.port=0"], run_dir=work
    )
    policy = instantiate(cfg.model)
    engine = HFEngine(policy, seed=0)
    src = ProxySource(engine, policy.tokenizer, work, mode="rl", judges=build_judges(cfg.judge), port=0)
    src.start(RolloutQueue(work / "samples.jsonl", max_size=100000))
    out: dict = {"engine": "hf", "model": model}
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=REQUEST_S)
        messages = [{"role": "user", "content": "Explain why the sky is blue."}]
        prompt = src.proxy.renderer.render(messages)
        sp = SamplingParams(temperature=0.7, max_new_tokens=32)
        engine.generate([prompt], sp)  # warm-up
        direct, proxied = [], []
        for i in range(reps):
            t0 = time.perf_counter()
            g = engine.generate([prompt], sp)[0]
            direct.append((time.perf_counter() - t0) / max(len(g.response_ids), 1) * 32)  # per 32 tokens
            t0 = time.perf_counter()
            r = client.chat.completions.create(
                model="m",
                messages=messages,
                max_tokens=32,
                temperature=0.7,
                extra_headers={"X-Session-Id": f"lat-{i}"},
            )
            proxied.append((time.perf_counter() - t0) / max(r.usage.completion_tokens, 1) * 32)
        added = [p - d for p, d in zip(proxied, direct)]
        out["latency"] = {
            "note": "seconds per request of 32 new tokens (normalised by tokens actually generated)",
            "direct_p50_s": statistics.median(direct),
            "proxy_p50_s": statistics.median(proxied),
            "added_p50_s": statistics.median(added),
            "added_p95_s": _pct(added, 0.95),
        }
        out["single_stream"] = asyncio.run(_streams(src.url, 1, 64, "solo"))
        out["idle_16_streams"] = asyncio.run(_streams(src.url, 16, 64, "idle"))
        out["batching"] = src.batcher.stats()
        out["healthz_under_4mb_bodies"] = healthz_under_large_bodies(src.url)
    finally:
        src.stop()
    if while_training:
        out["training_16_streams"] = _while_training(model)
    return out


def _while_training(model: str) -> dict:
    """16 streams against `train.py source=proxy` while it trains on the turns it serves."""
    from claw.config import compose_config
    from train import run

    work = _workdir("claw-bench-proxy-train-")
    cfg = compose_config(
        [
            f"model={model}",
            "logger=none",
            "source=proxy",
            "judge=rule",
            "algo=reinforce",
            "mode=rl",
            "source.port=0",
            "steps=3",
            "batch_size=8",
            "optim.micro_batch_size=8",
            "max_staleness=1000",
        ],  # fmt: skip
        run_dir=work,
    )
    done = threading.Event()
    failed: list[BaseException] = []

    def train() -> None:
        try:
            run(cfg)
        except BaseException as e:  # reported by `wait` below, not lost in the thread
            failed.append(e)
        finally:
            done.set()

    def wait(what: str, ready, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not ready():
            if failed:
                raise RuntimeError(f"the training run failed before {what}: {failed[0]!r}") from failed[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"proxy benchmark while training: no {what} within {seconds:.0f} s")
            time.sleep(0.2)

    trainer = threading.Thread(target=train, daemon=True)
    trainer.start()
    wait("proxy (proxy.json)", lambda: (work / "proxy.json").exists() or done.is_set(), START_S)
    if not (work / "proxy.json").exists():
        raise RuntimeError("the training run ended before its proxy started")
    url = json.loads((work / "proxy.json").read_text())["base_url"]

    async def feed():  # turns with a next state, so the trainer gets samples
        import openai

        client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=2, timeout=REQUEST_S)

        async def user(i):
            msgs = [{"role": "user", "content": f"Give me tip {i} for sleeping well."}]
            while not done.is_set():
                r = await client.chat.completions.create(
                    model="m",
                    messages=msgs[-3:],
                    max_tokens=24,
                    temperature=0.9,
                    extra_headers={"X-Session-Id": f"f{i}"},
                )
                msgs += [
                    {"role": "assistant", "content": r.choices[0].message.content},
                    {"role": "user", "content": "Thanks!" if len(msgs) % 4 else "No, shorter."},
                ]

        await asyncio.gather(*(user(i) for i in range(8)), return_exceptions=True)

    feeder = threading.Thread(target=lambda: asyncio.run(feed()), daemon=True)
    feeder.start()
    ledger = work / "ledger.jsonl"
    steps = lambda: len(ledger.read_text().splitlines()) if ledger.exists() else 0  # noqa: E731
    wait("optimizer step", lambda: steps() >= 1, FIRST_STEP_S)  # measure once training is under way
    before = steps()
    result = asyncio.run(_streams(url, 16, 64, "train"))
    result["optimizer_steps_during_measurement"] = steps() - before
    wait("end of the training run (steps=3)", done.is_set, FINISH_S)
    if failed:
        raise RuntimeError(f"the training run failed: {failed[0]!r}") from failed[0]
    return result


def healthz_under_large_bodies(url: str, senders: int = 4, rounds: int = 3, bound_s: float = 300) -> dict:
    """`GET /healthz` every 20 ms while `senders` clients each post `rounds` chat requests with a 4 MB message (under
    the 4 MiB body limit, far past the context: refused with a 400 once read and decoded): its p50 / p99 / max."""
    from collections import Counter

    import httpx

    base = url.removesuffix("/v1")
    big = ("hello world " * 350_000)[:4_000_000]
    body = json.dumps({"messages": [{"role": "user", "content": big}]}).encode()
    statuses: list[int | str] = []

    def send() -> None:
        with httpx.Client(timeout=REQUEST_S) as client:
            for _ in range(rounds):
                try:
                    r = client.post(
                        base + "/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}
                    )
                    statuses.append(r.status_code)
                except httpx.HTTPError as e:
                    statuses.append(type(e).__name__)

    threads = [threading.Thread(target=send, daemon=True) for _ in range(senders)]
    for t in threads:
        t.start()
    waits: list[float] = []
    deadline = time.monotonic() + bound_s
    with httpx.Client(base_url=base, timeout=REQUEST_S) as http:
        while any(t.is_alive() for t in threads):
            if time.monotonic() > deadline:
                raise TimeoutError(f"/healthz under 4 MB bodies: the large requests were not answered in {bound_s} s")
            t0 = time.perf_counter()
            http.get("/healthz").raise_for_status()
            waits.append(time.perf_counter() - t0)
            time.sleep(0.02)
    return {
        "senders": senders,
        "large_requests": len(statuses),
        "body_bytes": len(body),
        "large_request_statuses": {str(k): v for k, v in Counter(statuses).items()},
        "healthz_probes": len(waits),
        "healthz_p50_s": _pct(waits, 0.5),
        "healthz_p99_s": _pct(waits, 0.99),
        "healthz_max_s": max(waits),
    }


def bench_waits(
    kind: str = "hf", model: str = "smollm2_135m", rounds: int = 3, streams: int = 8, max_tokens: int = 16
) -> dict:
    """p50 / p95 queue wait and TTFT through the proxy on engine `kind`, idle and while training + syncing."""
    import torch
    from hydra.utils import instantiate

    from claw.config import compose_config
    from claw.engine import build_engine
    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    work = _workdir(f"claw-bench-waits-{kind}-")
    policy = instantiate(compose_config([f"model={model}"]).model)
    engine = build_engine(kind, policy, seed=0, max_batch_size=32)
    src = ProxySource(engine, policy.tokenizer, work, port=0, mode="rl")
    src.start(RolloutQueue(work / "samples.jsonl"))
    out: dict = {"engine": kind, "model": model, "streams": streams, "max_tokens": max_tokens, "rounds": rounds}

    def phase(tag: str) -> dict:
        src.batcher.queue_waits.clear()
        ttfts = []
        for r in range(rounds):
            ttfts += asyncio.run(_ttfts(src.url, streams, max_tokens, f"{tag}{r}"))
        waits = list(src.batcher.queue_waits)
        return {
            "requests": len(ttfts),
            "queue_wait_p50_s": _pct(waits, 0.5),
            "queue_wait_p95_s": _pct(waits, 0.95),
            "ttft_p50_s": _pct(ttfts, 0.5),
            "ttft_p95_s": _pct(ttfts, 0.95),
        }

    try:
        asyncio.run(_ttfts(src.url, 2, 4, "warm"))
        out["idle"] = phase("idle")
        stop, steps = threading.Event(), [0]

        def trainer():  # an optimizer step and a weight sync, again and again
            opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-6)
            ids = torch.randint(0, policy.model.config.vocab_size, (2, 64))
            while not stop.is_set():
                loss = policy.model(input_ids=ids, labels=ids).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                steps[0] += 1
                engine.load_weights(policy.model.state_dict().items(), version=steps[0])

        t = threading.Thread(target=trainer, daemon=True)
        t.start()
        try:
            out["training"] = phase("train")
        finally:
            stop.set()
            t.join(timeout=REQUEST_S)  # its step + sync in progress
        out["training"]["optimizer_steps_and_syncs"] = steps[0]
        out["training"]["policy_version_at_end"] = engine.version
    finally:
        src.stop()
        if hasattr(engine, "close"):
            engine.close()
    return out


async def _ttfts(url: str, n: int, max_tokens: int, tag: str) -> list[float]:
    """n concurrent streams; each one's seconds to its first text."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=REQUEST_S)

    async def one(i: int) -> float:
        t0 = time.perf_counter()
        first = None
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"Name a colour ({tag}, {i})."}], max_tokens=max_tokens,
            temperature=0.7, stream=True, extra_headers={"X-Session-Id": f"wait-{tag}-{i}"},
        )  # fmt: skip
        async for c in stream:
            if first is None and c.choices and c.choices[0].delta.content:
                first = time.perf_counter() - t0
        return first if first is not None else time.perf_counter() - t0

    out = await asyncio.gather(*(one(i) for i in range(n)))
    await client.close()
    return list(out)


def bench_vs_vllm_server(model: str = "smollm2_135m") -> dict:
    """16 streams × 64 tokens: vLLM's own OpenAI server vs claw's proxy on engine=vllm, same model, one run."""
    from hydra.utils import instantiate

    from claw.config import compose_config
    from claw.engine.vllm import VLLMEngine
    from claw.engine.vllm_server import VLLMServerEngine
    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    policy = instantiate(compose_config([f"model={model}"]).model)
    out: dict = {"model": model}
    server = VLLMServerEngine(
        policy, max_batch_size=32, max_model_len=2048, extra_args=["--kv-cache-memory-bytes", str(2 << 30)]
    )
    try:
        asyncio.run(_streams(f"{server.url}/v1", 2, 8, "warm", "policy"))
        out["vllm_server_single"] = asyncio.run(_streams(f"{server.url}/v1", 1, 64, "solo", "policy"))
        out["vllm_server_16_streams"] = asyncio.run(_streams(f"{server.url}/v1", 16, 64, "vs", "policy"))
    finally:
        server.close()
    work = _workdir("claw-bench-proxy-vllm-")
    engine = VLLMEngine(policy, seed=0, max_batch_size=32, max_model_len=2048, kv_cache_gb=2.0)
    src = ProxySource(engine, policy.tokenizer, work, port=0)
    src.start(RolloutQueue(work / "samples.jsonl"))
    try:
        asyncio.run(_streams(src.url, 2, 8, "warm"))
        out["claw_proxy_vllm_single"] = asyncio.run(_streams(src.url, 1, 64, "solo"))
        out["claw_proxy_vllm_16_streams"] = asyncio.run(_streams(src.url, 16, 64, "vs"))
    finally:
        src.stop()
        engine.close()
    out["throughput_ratio"] = (
        out["claw_proxy_vllm_16_streams"]["tokens_per_s"] / out["vllm_server_16_streams"]["tokens_per_s"]
    )
    return out


def main() -> None:
    if "--vs-vllm" in sys.argv:
        res = bench_vs_vllm_server()
        print(json.dumps(res, indent=1))
        (ROOT / "bench" / "results" / "proxy_vs_vllm_server.json").write_text(json.dumps(res, indent=1))
        return
    if "--waits" in sys.argv:
        res = {kind: bench_waits(kind) for kind in ("hf", "vllm") if f"--{kind}-only" not in sys.argv}
        print(json.dumps(res, indent=1))
        return
    res = bench_proxy(while_training="--idle-only" not in sys.argv)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
