"""personalize=per_user benchmarks: serving with adapters, and many users on disk. Prints a table, writes JSON.

    python bench/bench_adapters.py [--only serving,scale] [--users 1000] [--out bench/results/adapters.json]

1. serving : the embedded SmolLM2 behind claw's proxy on vLLM, 16 concurrent streams x 64 tokens (T = 0.7) through
             the official openai client, side by side in one run: one policy (the engine as personalize=shared
             starts it), one user's adapter (every stream names that user: the cost of LoRA alone), and three users'
             adapters resident (each stream names one of three users; every adapter has the experiment's shape:
             r = 8 on q/k/v/o and the MLP). tokens/s, the median of `--reps`
             rounds after a warm-up round; their ratio; the size of one adapter (weights, and its optimizer state).
2. scale   : the tiny model, `--users` users (default 1,000), 8 resident. The trainer side (AdapterBank): each
             user gets one real update (forward, backward, AdamW) and a promoted version on disk, so most are
             evicted and come back from disk; reported: the time to make an adapter resident (cold) or switch to a
             resident one (warm), to promote a version, the bytes on disk per user, and the process's peak RSS.
             The serving side: a vLLM engine with 8 resident, every user's adapter in its table; one request per
             user for a sample of users, each adapter loaded from disk on first use (cold), then again (warm).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def _bank(model, work: Path, users: list[str], resident: int = 8, perturb: float = 0.02):
    """An AdapterBank with each of `users` promoted once, B perturbed so each adapter differs from the base."""
    from claw.users.adapters import AdapterBank

    bank = AdapterBank(copy.deepcopy(model), work, target_modules=TARGETS, max_resident=resident, seed=0)
    for k, user in enumerate(users):
        bank.activate(user)
        with torch.no_grad(), torch.random.fork_rng():
            torch.manual_seed(k)
            for p in bank.parameters(user):
                p.add_(perturb * torch.randn_like(p))
        bank.promote(user)
    return bank


async def _streams(url: str, n: int, max_tokens: int, users: list[str] | None, tag: str) -> dict:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=600)

    async def one(i: int) -> int:
        extra = {"user": users[i % len(users)]} if users else {}
        r = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": f"Tell me a short story about the number {i} ({tag})."}],
            max_tokens=max_tokens,
            temperature=0.7,
            extra_headers={"X-Session-Id": f"bench-{tag}-{i}"},
            **extra,
        )
        return r.usage.completion_tokens

    t0 = time.perf_counter()
    tokens = sum(await asyncio.gather(*(one(i) for i in range(n))))
    wall = time.perf_counter() - t0
    await client.close()
    return {"tokens": tokens, "seconds": wall, "tokens_per_s": tokens / wall}


def bench_serving(reps: int = 3, streams: int = 16, max_tokens: int = 64) -> dict:
    from hydra.utils import instantiate

    from claw.config import compose_config
    from claw.engine.base import BASE
    from claw.engine.vllm import VLLMEngine
    from claw.judge.build import build_judges
    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    out: dict = {"streams": streams, "max_tokens": max_tokens, "reps": reps}
    # one adapter for every stream tells the cost of LoRA itself from the cost of mixing three in a batch
    speakers = {"single_policy": None, "one_adapter": ["terse"], "three_adapters": ["terse", "explainer", "plain"]}
    for setting, users in speakers.items():
        work = Path(tempfile.mkdtemp(prefix=f"claw-bench-{setting}-"))
        cfg = compose_config(["source=proxy", "judge=rule", "algo=reinforce", "mode=rl"], run_dir=work)
        policy = instantiate(cfg.model)
        adapters = {"max_resident": 8, "rank": 8} if users else None
        engine = VLLMEngine(policy, max_batch_size=64, adapters=adapters)
        try:
            if adapters:
                bank = _bank(policy.model, work, users)
                engine.serve_adapter(BASE, 0, str(bank.base_path()))
                for user, version, path in bank.served():
                    engine.serve_adapter(user, version, str(path))
                one = bank.served()[0][2]
                params = sum(p.numel() for p in bank.parameters(users[0]))
                out["adapter"] = {
                    "parameters": params,
                    "weights_bytes": (one / "adapter_model.safetensors").stat().st_size,
                    "optimizer_state_bytes": 2 * params * 4,  # AdamW: two fp32 moments per weight
                }
            src = ProxySource(engine, policy.tokenizer, work, mode="rl", judges=build_judges(cfg.judge), port=0)
            src.start(RolloutQueue(work / "samples.jsonl", max_size=100000, fsync=False))
            try:
                who = users
                asyncio.run(_streams(src.url, streams, max_tokens, who, "warm-up"))
                rounds = [asyncio.run(_streams(src.url, streams, max_tokens, who, f"r{i}")) for i in range(reps)]
            finally:
                src.stop()
        finally:
            engine.close()
        out[setting] = {
            "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rounds),
            "rounds": rounds,
        }
        print(f"serving {setting:>14}: {out[setting]['tokens_per_s']:.0f} tokens/s (median of {reps})", flush=True)
    out["ratio"] = out["three_adapters"]["tokens_per_s"] / out["single_policy"]["tokens_per_s"]
    out["ratio_one_adapter"] = out["one_adapter"]["tokens_per_s"] / out["single_policy"]["tokens_per_s"]
    return out


def bench_scale(n_users: int = 1000, resident: int = 8, served_sample: int = 48) -> dict:
    from claw.engine.base import BASE, SamplingParams
    from claw.engine.vllm import VLLMEngine
    from claw.models import load_tiny
    from claw.users.adapters import AdapterBank, adapter_name

    policy = load_tiny(num_heads=2, num_kv_heads=1)
    tok = policy.tokenizer
    work = Path(tempfile.mkdtemp(prefix="claw-bench-scale-"))
    bank = AdapterBank(copy.deepcopy(policy.model), work, target_modules=TARGETS, max_resident=resident, seed=0)
    ids = torch.tensor([tok.encode("How many apples are there in three baskets of four?")])
    cold, warm, promote = [], [], []
    users = [f"user-{i:04d}" for i in range(n_users)]
    rng = random.Random(0)
    for k in range(2 * n_users):  # each user once, then a random one again: a mix of cold and warm switches
        user = users[k] if k < n_users else rng.choice(users)
        was_resident = adapter_name(user) in bank.resident
        t0 = time.perf_counter()
        opt = bank.activate(user)
        (warm if was_resident else cold).append(time.perf_counter() - t0)
        loss = bank.model(input_ids=ids, labels=ids).loss  # one real update of this user's adapter
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        bank.promote(user)
        promote.append(time.perf_counter() - t0)
    disk = sum(f.stat().st_size for f in (work / "adapters").rglob("*") if f.is_file())
    trainer = {
        "users": n_users,
        "resident": resident,
        "updates": 2 * n_users,
        "activate_cold_ms": 1e3 * statistics.median(cold),
        "activate_warm_ms": 1e3 * statistics.median(warm) if warm else None,
        "cold_switches": len(cold),
        "promote_ms": 1e3 * statistics.median(promote),
        "disk_bytes_per_user": disk / n_users,
        "peak_rss_gb": _peak_rss_gb(),
    }
    print(
        f"scale trainer: {n_users} users, {resident} resident: activate {trainer['activate_cold_ms']:.1f} ms cold / "
        f"{trainer['activate_warm_ms']:.2f} ms warm, promote {trainer['promote_ms']:.1f} ms, "
        f"{trainer['disk_bytes_per_user'] / 1e3:.0f} kB on disk per user, peak RSS {trainer['peak_rss_gb']:.2f} GB",
        flush=True,
    )
    engine = VLLMEngine(policy, max_batch_size=16, max_model_len=256, adapters={"max_resident": resident, "rank": 8})
    try:
        engine.serve_adapter(BASE, 0, str(bank.base_path()))
        for user, version, path in bank.served():
            engine.serve_adapter(user, version, str(path))
        prompt = tok.encode("How many apples are there in three baskets of four?")
        row = lambda u: SamplingParams(temperature=0.0, max_new_tokens=16, user=u)  # noqa: E731
        engine.generate([prompt], row(BASE))  # warm-up
        sample = rng.sample(users, min(served_sample, n_users))
        first, again = [], []
        for u in sample:  # more users than resident: each first request loads its adapter from disk
            t0 = time.perf_counter()
            engine.generate([prompt], row(u))
            first.append(time.perf_counter() - t0)
        for u in sample[-resident:]:  # the last `resident` are still loaded
            t0 = time.perf_counter()
            engine.generate([prompt], row(u))
            again.append(time.perf_counter() - t0)
    finally:
        engine.close()
    serving = {
        "adapters_in_table": len(engine.adapters),
        "requests": served_sample,
        "request_cold_ms": 1e3 * statistics.median(first),
        "request_warm_ms": 1e3 * statistics.median(again),
        "peak_rss_gb": _peak_rss_gb(),
    }
    print(
        f"scale serving: {serving['adapters_in_table']} adapters in the table, {resident} resident: "
        f"a 16-token request "
        f"{serving['request_cold_ms']:.0f} ms with the adapter loaded from disk, {serving['request_warm_ms']:.0f} ms "
        f"resident; peak RSS {serving['peak_rss_gb']:.2f} GB",
        flush=True,
    )
    return {"trainer": trainer, "serving": serving}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="serving,scale")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "adapters.json"))
    args = ap.parse_args()
    which = args.only.split(",")
    results: dict = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    if "scale" in which:
        results["scale"] = bench_scale(args.users)
    if "serving" in which:
        results["serving"] = bench_serving(args.reps)
        s = results["serving"]
        print(
            f"serving ratio: {s['ratio']:.2f}x the single policy with 3 adapters resident "
            f"({s['ratio_one_adapter']:.2f}x with one); one adapter "
            f"{s['adapter']['parameters'] / 1e6:.2f} M parameters, "
            f"{s['adapter']['weights_bytes'] / 1e6:.1f} MB on disk, "
            f"+{s['adapter']['optimizer_state_bytes'] / 1e6:.1f} MB optimizer state while it trains",
            flush=True,
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
