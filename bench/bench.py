"""claw benchmarks on the embedded SmolLM2 (fp32, CPU by default). Prints a table, writes JSON.

    python bench/bench.py [--only train_step,generate,grpo_step] [--engines hf,vllm] [--out bench/results/bench.json]

1. train_step  : forward + backward + AdamW on a fixed batch (8 × 256 tokens): tokens/s.
2. generate    : each engine (`--engines hf,vllm`), 32 prompts × 64 new tokens at T = 1.0: tokens/s; and
                 the weight-sync time: what the trainer waits for, and until the new weights are live.
3. waits       : each engine, through the proxy: p50 / p95 queue wait and TTFT of 8 concurrent streams,
                 idle and while a trainer thread runs optimizer steps + weight syncs (bench/bench_proxy.py).
4. grpo_step   : the reference workload, through the real pipeline (train.py's `run`): 8 prompts ×
                 4 samples of "What is a + b?", ≤ 64 new tokens, T = 1.0, one optimizer step per
                 batch, reward = the correct integer. Steady-state mean wall time of ≥ 3 steps
                 (the first is warm-up), with tokens generated and trained per step.
   Run once per engine (engine=hf, engine=vllm).
5. grpo_parts  : the same workload's halves, each alone: generating and judging one rollout batch, one update on
                 it, the weight sync; their sum is the step done in sequence, and grpo_step reports its ratio to
                 the larger half (a pipelined step can at best hide the smaller one).
   Side by side: bench/bench_trl.py runs TRL's GRPOTrainer on the same workload in its own
   virtualenv and writes bench/results/grpo_step_trl.json; grpo_step reports its ratio to that.

Each benchmark runs within its bound (`BOUNDS_S`, printed as it starts): one that runs past it is stopped
(SIGALRM) and recorded in the JSON as {"error": ...} with the reason, and the next one runs. Waits inside the
proxy benchmarks are bounded too (bench/bench_proxy.py).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Seconds each benchmark may take on the CPU machine (several times what it takes there), per engine where it runs
# once per engine; the engine check is the import of vLLM and a look at the model's config.
BOUNDS_S = {
    "engines": 300,
    "train_step": 600,
    "generate": 900,
    "objective": 600,
    "proxy": 1800,
    "waits": 1200,
    "grpo_step": 1800,
    "grpo_parts": 1200,
}


class BenchTimeout(Exception):
    """A benchmark ran past its bound."""


@contextlib.contextmanager
def bounded(name: str, seconds: int):
    """Raise BenchTimeout in the main thread once `seconds` have passed (SIGALRM interrupts sleeps, joins, socket
    reads and the asyncio loop alike). Threads the benchmark started are not stopped: they are daemons."""

    def expire(*_):
        raise BenchTimeout(f"{name} ran past its bound of {seconds} s")

    print(f"{name:<13}: running (bound {seconds} s)", flush=True)
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def attempt(results: dict, key: str, bound: str, fn: Callable[[], dict]) -> dict | None:
    """`results[key] = fn()` within BOUNDS_S[bound]; on a timeout or an error, {"error": reason} and None."""
    t0 = time.perf_counter()
    try:
        with bounded(key, BOUNDS_S[bound]):
            results[key] = fn()
            return results[key]
    except Exception as e:  # BenchTimeout included: the reason goes in the JSON, the other benchmarks still run
        took = time.perf_counter() - t0
        results[key] = {"error": f"{type(e).__name__}: {e}", "seconds": took}
        print(f"{key:<13}: FAILED after {took:.0f} s: {type(e).__name__}: {e}", flush=True)
        return None


def bench_train_step(policy, reps: int = 3) -> dict:
    model = policy.model
    model.train()
    B, L = 8, 256
    ids = torch.randint(100, 10000, (B, L))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)

    def step():
        out = model(input_ids=ids, labels=ids, use_cache=False)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    mean = statistics.mean(times)
    return {"batch": [B, L], "step_s": mean, "tokens_per_s": B * L / mean, "reps": reps}


def bench_objective(policy, reps: int = 3) -> dict:
    """The objective's own cost (advantages + every loss term, incl. TIS) relative to forward+backward."""
    from claw.config import compose_config as make_cfg
    from claw.config import objective_from_cfg
    from claw.module import ClawModule
    from claw.objective import Objective
    from claw.types import Sample, collate

    torch.manual_seed(0)
    tok = policy.tokenizer
    samples = []
    for g in range(8):
        prompt = tok.encode(f"What is {g} + {g + 1}?")
        for k in range(4):
            resp = torch.randint(100, 10000, (64,)).tolist()
            samples.append(
                Sample(
                    prompt,
                    resp,
                    [-2.0] * 64,
                    temperature=1.0,
                    policy_version=0,
                    reward=float(k % 2),
                    group_id=str(g),
                    teacher_logprobs=[-1.5] * 64,
                )
            )
    batch = collate(samples, tok.pad_token_id)
    objective = Objective(objective_from_cfg(make_cfg(["mode=combine", "algo.kl_coef=0.0"])))
    module = ClawModule(policy.model, objective, micro_batch_size=8)
    old = module.old_outputs(batch)

    def fwd_bwd():
        out = module.policy_outputs(batch)
        out.logprobs.sum().backward()
        return out

    def objective_only(out):
        adv = objective.advantages(batch, old)
        loss, _ = objective.loss(out, old, adv, batch)
        return loss

    fwd_bwd()
    t_fb, t_obj = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fwd_bwd()
        t_fb.append(time.perf_counter() - t0)
        detached = type(out)(out.logprobs.detach().requires_grad_(), out.entropy.detach(), None, None)
        t0 = time.perf_counter()
        objective_only(detached).backward()
        t_obj.append(time.perf_counter() - t0)
    fb, ob = statistics.mean(t_fb), statistics.mean(t_obj)
    return {"batch": "32 x (prompt + 64)", "forward_backward_s": fb, "objective_s": ob, "objective_fraction": ob / fb}


def bench_prompts(tok, n_prompts: int) -> list[list[int]]:
    rng = random.Random(0)
    prompts = []
    for _ in range(n_prompts):
        ids = tok.apply_chat_template(
            [{"role": "user", "content": f"What is {rng.randint(1, 99)} + {rng.randint(1, 99)}?"}],
            add_generation_prompt=True,
            tokenize=True,
        )
        prompts.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return prompts


def bench_generate(policy, kind: str = "hf", n_prompts: int = 32, max_new_tokens: int = 64) -> dict:
    """Generation tokens/s and weight-sync seconds of one engine on the same 32 prompts.

    Sync: `load_weights` (what the trainer waits for) and, for vLLM, the in-place reload that the
    engine thread runs before the next request (`last_sync_s`); hf swaps in place when idle."""
    from claw.engine import SamplingParams, build_engine

    t0 = time.perf_counter()
    eng = build_engine(kind, policy, seed=0, max_batch_size=64)
    startup = time.perf_counter() - t0
    prompts = bench_prompts(policy.tokenizer, n_prompts)
    eng.generate(prompts[:4], SamplingParams(1.0, 8))  # warm-up
    t0 = time.perf_counter()
    gens = eng.generate(prompts, SamplingParams(temperature=1.0, max_new_tokens=max_new_tokens))
    dt = time.perf_counter() - t0
    n = sum(len(g.response_ids) for g in gens)
    weights = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    syncs = []
    for v in (1, 2):
        t0 = time.perf_counter()
        eng.load_weights(weights.items(), version=v)
        staged = time.perf_counter() - t0
        if hasattr(eng, "wait_synced"):
            eng.wait_synced()
        syncs.append(
            {
                "load_weights_s": staged,
                "until_live_s": time.perf_counter() - t0,
                "reload_s": getattr(eng, "last_sync_s", staged),
            }
        )
    if hasattr(eng, "close"):
        eng.close()
    return {
        "engine": kind,
        "startup_s": startup,
        "prompts": n_prompts,
        "max_new_tokens": max_new_tokens,
        "tokens": n,
        "seconds": dt,
        "tokens_per_s": n / dt,
        "sync": syncs[-1],
    }


def grpo_workload(work: Path, engine: str, steps: int, overrides: list[str] | None = None):
    """The reference workload's config: GRPO on "What is a + b?" prompts (512 rows written under `work`)."""
    from claw.config import compose_config as make_cfg

    rng = random.Random(0)
    with open(work / "add.jsonl", "w") as f:
        for _ in range(512):
            a, b = rng.randint(1, 99), rng.randint(1, 99)
            f.write(json.dumps({"question": f"What is {a} + {b}?", "answer": a + b}) + "\n")
    return make_cfg(
        [
            "mode=rl",  # the reference workload is GRPO on prompts (not the default simulated-user job)
            "algo=grpo",
            "source=dataset",
            "judge=verifier",
            "eval_every=0",
            f"steps={steps}",
            f"engine={engine}",
            "logger=csv",
            "batch_size=32",
            "source.n=4",
            "source.prompts_per_generate=8",
            "source.temperature=1.0",
            "source.max_new_tokens=64",
            "source.instruction='{question}'",
            f"source.train_path={work / 'add.jsonl'}",
            f"source.eval_path={work / 'add.jsonl'}",
            "source.eval_size=1",
            "max_queue_size=32",
            "optim.lr=1e-6",
            "optim.micro_batch_size=8",
            *(overrides or []),
        ],
        run_dir=work / "run",
    )


def bench_grpo_step(steps: int = 4, engine: str = "hf", overrides: list[str] | None = None) -> dict:
    from train import run

    work = Path(tempfile.mkdtemp(prefix="claw-bench-"))
    cfg = grpo_workload(work, engine, steps, overrides)
    try:
        run(cfg)
        rows = [r for r in csv.DictReader(open(work / "run" / "csv" / "0" / "metrics.csv")) if r.get("system/step_s")]
    finally:
        shutil.rmtree(work, ignore_errors=True)  # a 1.6 GB checkpoint per run: never leave it in /tmp
    step_s = [float(r["system/step_s"]) for r in rows]
    # where each step's time went: waiting for the rollout batch, training on it, and the weight sync
    parts = {
        name: statistics.mean(float(r[col]) for r in rows[1:])
        for name, col in (("wait_s", "system/wait_s"), ("train_s", "system/train_s"), ("sync_s", "engine/sync_s"))
        if all(r.get(col) for r in rows[1:])
    }
    gen_tokens = [float(r["rollout/response_len"]) * 32 for r in rows]
    steady = step_s[1:]
    return {
        "workload": "8 prompts x 4 samples, <=64 new tokens, T=1.0, fp32, 1 optimizer step/batch",
        "engine": engine,
        "overrides": overrides or [],
        "step_s_all": step_s,
        "step_s_mean": statistics.mean(steady),
        "step_s_std": statistics.stdev(steady) if len(steady) > 1 else 0.0,
        "parts_s": parts,
        "staleness_mean": statistics.mean(float(r["rollout/staleness"]) for r in rows[1:]),
        "generated_tokens_per_step": statistics.mean(gen_tokens[1:]),
        "trained_tokens_per_step": statistics.mean(
            float(r["system/tokens_per_s"]) * float(r["system/step_s"]) for r in rows[1:]
        ),
    }


def bench_grpo_parts(engine: str = "hf", rounds: int = 4, overrides: list[str] | None = None) -> dict:
    """The reference workload's halves, each alone on the machine: one rollout batch generated and judged by the
    run's own source (`make_groups`, what its thread runs), then one update on it by the run's own module
    (`accumulate`, clipping, AdamW: `train_on` without Lightning), then the weight sync, in turn. Their sum is the
    step done in sequence (what `max_staleness=0` would wait for); the pipelined step overlaps them."""
    from hydra.utils import instantiate

    from claw.callbacks import sync_weights
    from claw.config import build
    from claw.module import ClawModule
    from claw.sources.build import build_source
    from claw.types import collate

    work = Path(tempfile.mkdtemp(prefix="claw-bench-"))
    cfg = grpo_workload(work, engine, rounds, overrides)
    policy = instantiate(cfg.model)
    eng = build(cfg.engine, policy=policy, seed=cfg.seed, ddp=False)
    try:
        source = build_source(cfg, policy, eng)
        module = ClawModule.from_cfg(cfg, policy.model)
        opt = torch.optim.AdamW(policy.model.parameters(), lr=float(cfg.optim.lr))
        times: dict[str, list[float]] = {"generate_s": [], "train_s": [], "sync_s": []}
        rows_trained = []
        for r in range(rounds):
            t0 = time.perf_counter()
            groups = source.make_groups(r * 8, 8)
            t1 = time.perf_counter()
            batch = collate([s for g in groups for s in g], policy.tokenizer.pad_token_id)
            module.model.train()
            adv = module.objective.advantages(batch, None)
            moves = module.objective.rows_that_move(batch, adv) if module.skip_still_rows else None
            module.accumulate(batch, torch.arange(batch.size), None, adv, moves=moves)
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), float(cfg.optim.max_grad_norm))
            opt.step()
            opt.zero_grad(set_to_none=True)
            t2 = time.perf_counter()
            sync_weights(module, eng, r + 1)
            t3 = time.perf_counter()
            for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                times[key].append(dt)
            rows_trained.append(batch.size if moves is None else int(moves.sum()))
    finally:
        if hasattr(eng, "close"):
            eng.close()
        shutil.rmtree(work, ignore_errors=True)
    out = {k: statistics.mean(v[1:]) for k, v in times.items()}  # the first round is warm-up
    return {
        "engine": engine,
        "overrides": overrides or [],
        **out,
        "in_sequence_s": sum(out.values()),
        "all": times,
        "rows_forwarded": rows_trained,
    }


def against_trl(claw_steps: list[float], trl_steps: list[float]) -> dict:
    """claw's steady-state steps against TRL's: the ratio of their means with a 95% percentile-bootstrap interval
    (`scipy.stats.bootstrap`, steps resampled within each run), and Welch's one-sided t-test (`ttest_ind`,
    equal_var=False) of "claw's step is below half of TRL's"."""
    from scipy import stats

    claw, trl = np.asarray(claw_steps, dtype=float), np.asarray(trl_steps, dtype=float)
    ci = stats.bootstrap(
        (claw, trl),
        lambda a, b, axis=-1: a.mean(axis=axis) / b.mean(axis=axis),
        method="percentile",
        n_resamples=10_000,
        random_state=0,
    ).confidence_interval
    return {
        "trl_measured_s": float(trl.mean()),
        "ratio_to_trl_measured": float(claw.mean() / trl.mean()),
        "ratio_ci95": [float(ci.low), float(ci.high)],
        "p_below_half": float(stats.ttest_ind(claw, 0.5 * trl, equal_var=False, alternative="less").pvalue),
    }


def trl_measured() -> dict | None:
    """TRL's GRPOTrainer on the same workload, as bench/bench_trl.py last wrote it (its own virtualenv)."""
    path = ROOT / "bench" / "results" / "grpo_step_trl.json"
    return json.loads(path.read_text()) if path.is_file() else None


def usable_engines(kinds: list[str]) -> list[str]:
    """The requested engines that can run here; vLLM without an install is reported, not fatal."""
    from transformers import AutoConfig

    from claw.engine.vllm import vllm_problem
    from claw.models import smollm2_dir

    out = []
    for kind in kinds:
        problem = vllm_problem(AutoConfig.from_pretrained(smollm2_dir())) if kind == "vllm" else None
        if problem:
            print(f"skipping engine={kind}: {problem}", flush=True)
        else:
            out.append(kind)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="train_step,generate,objective,proxy,waits,grpo_parts,grpo_step")
    ap.add_argument(
        "--engines",
        default="hf,vllm",
        help="engines for generate and grpo_step (vllm is skipped, with a note, where it is not usable)",
    )
    ap.add_argument(
        "--grpo-overrides",
        default="",
        help="extra train.py overrides for grpo_step, space-separated (e.g. optim.fuse_old_pass=false)",
    )
    ap.add_argument("--grpo-steps", type=int, default=4, help="grpo_step's optimizer steps (the first is warm-up)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "bench.json"))
    args = ap.parse_args()
    from claw.models import load_smollm2
    from claw.provenance import code_version

    results = {
        "code": code_version(),  # the commit measured (and whether the tree had changes)
        "machine": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu": platform.processor(),
        },
    }
    which = args.only.split(",")
    if "train_step" in which and attempt(
        results, "train_step", "train_step", lambda: bench_train_step(load_smollm2())
    ):
        print(
            f"train step   : {results['train_step']['tokens_per_s']:.0f} tokens/s "
            f"({results['train_step']['step_s']:.1f} s for 8x256, fwd+bwd+AdamW)",
            flush=True,
        )
    engines: list[str] = []
    # only these run once per engine; the others need no look at vLLM (its import alone takes a while)
    if {"generate", "waits", "grpo_step"} & set(which):
        checked = attempt(results, "engines", "engines", lambda: {"usable": usable_engines(args.engines.split(","))})
        engines = checked["usable"] if checked else []
    if "generate" in which:
        for kind in engines:
            g = attempt(
                results, f"generate_{kind}", "generate", lambda kind=kind: bench_generate(load_smollm2(), kind)
            )
            if g is None:
                continue
            print(
                f"{kind:>4} generate: {g['tokens_per_s']:.0f} tokens/s ({g['tokens']} tokens in {g['seconds']:.1f} s, "
                f"32 prompts, T=1.0); weight sync {g['sync']['until_live_s']:.2f} s until live "
                f"(trainer waits {g['sync']['load_weights_s']:.2f} s); start-up {g['startup_s']:.0f} s",
                flush=True,
            )
    if "objective" in which and attempt(results, "objective", "objective", lambda: bench_objective(load_smollm2())):
        o = results["objective"]
        print(
            f"objective    : {o['objective_s'] * 1e3:.1f} ms vs forward+backward {o['forward_backward_s']:.1f} s "
            f"({100 * o['objective_fraction']:.2f}%)",
            flush=True,
        )
    if "proxy" in which:
        from bench_proxy import bench_proxy  # bench/ is on sys.path when run as a script

        p = attempt(results, "proxy", "proxy", bench_proxy)
        if p is not None:
            lat, idle, busy = (
                p["latency"],
                p["idle_16_streams"],
                p.get("training_16_streams", {"tokens_per_s": float("nan")}),
            )
            print(
                f"proxy        : +{lat['added_p50_s'] * 1e3:.0f} ms p50 / +{lat['added_p95_s'] * 1e3:.0f} ms p95 "
                "over a direct engine call (32 tokens); 16 streams x 64: "
                f"{idle['tokens_per_s']:.0f} tok/s idle, {busy['tokens_per_s']:.0f} tok/s while training; "
                f"TTFT {p['single_stream']['ttft_p50_s']:.2f} s single, {idle['ttft_p50_s']:.2f} s at 16",
                flush=True,
            )
            h = p["healthz_under_4mb_bodies"]
            print(
                f"proxy healthz: p50 {h['healthz_p50_s'] * 1e3:.0f} ms / p99 {h['healthz_p99_s'] * 1e3:.0f} ms / "
                f"max {h['healthz_max_s'] * 1e3:.0f} ms over {h['healthz_probes']} probes while "
                f"{h['senders']} clients posted {h['large_requests']} requests of {h['body_bytes'] / 1e6:.1f} MB",
                flush=True,
            )
    if "waits" in which:
        from bench_proxy import bench_waits

        for kind in engines:
            w = attempt(results, f"waits_{kind}", "waits", lambda kind=kind: bench_waits(kind))
            if w is None:
                continue
            idle, busy = w["idle"], w["training"]
            print(
                f"waits {kind:>4}   : "
                f"queue wait p50/p95 {idle['queue_wait_p50_s']:.2f}/{idle['queue_wait_p95_s']:.2f} s idle, "
                f"{busy['queue_wait_p50_s']:.2f}/{busy['queue_wait_p95_s']:.2f} s training; "
                f"TTFT p50/p95 {idle['ttft_p50_s']:.2f}/{idle['ttft_p95_s']:.2f} s idle, "
                f"{busy['ttft_p50_s']:.2f}/{busy['ttft_p95_s']:.2f} s training "
                f"({busy['optimizer_steps_and_syncs']} optimizer steps + syncs meanwhile; "
                f"{w['rounds']} rounds of {w['streams']} streams x {w['max_tokens']} tokens)",
                flush=True,
            )
    if "grpo_parts" in which:
        for kind in engines:
            p = attempt(
                results,
                f"grpo_parts_{kind}",
                "grpo_parts",
                lambda kind=kind: bench_grpo_parts(engine=kind, overrides=args.grpo_overrides.split()),
            )
            if p is not None:
                print(
                    f"GRPO halves {kind:>4}: generate {p['generate_s']:.1f} s, train {p['train_s']:.1f} s, "
                    f"sync {p['sync_s']:.2f} s, each alone; in sequence {p['in_sequence_s']:.1f} s",
                    flush=True,
                )
    if "grpo_step" in which:
        for kind in engines:
            r = attempt(
                results,
                "grpo_step" if kind == "hf" else f"grpo_step_{kind}",
                "grpo_step",
                lambda kind=kind: bench_grpo_step(
                    steps=args.grpo_steps, engine=kind, overrides=args.grpo_overrides.split()
                ),
            )
            if r is None:
                continue
            halves = results.get(f"grpo_parts_{kind}", {})
            if "train_s" in halves:
                r["ratio_to_larger_half"] = r["step_s_mean"] / max(halves["generate_s"], halves["train_s"])
                r["ratio_to_in_sequence"] = r["step_s_mean"] / halves["in_sequence_s"]
            trl = trl_measured()
            if trl:
                r.update(against_trl(r["step_s_all"][1:], trl["step_s_all"][1:]))
            vs = (
                f"{r['ratio_to_trl_measured']:.2f}x [{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}] "
                f"TRL {trl['versions']['trl']} measured here ({trl['step_s_mean']:.1f} s); "
                f"below 0.5x: Welch p = {r['p_below_half']:.2g}"
                if trl
                else "TRL not measured here"
            )
            print(
                f"GRPO step {kind:>4}: {r['step_s_mean']:.1f} ± {r['step_s_std']:.1f} s "
                f"(steady state; {r['generated_tokens_per_step']:.0f} tokens generated/step, "
                f"staleness {r['staleness_mean']:.2f}) = {vs}",
                flush=True,
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
