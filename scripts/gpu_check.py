"""GPU check for `layout=colocate engine=hf` on one GPU (H200): generation tokens/s, weight-sync
seconds and the trainer's step time, on a realistically sized model with random weights.

    python scripts/gpu_check.py                      # Qwen3-1.7B-shaped Llama, bf16-mixed, cuda
    python scripts/gpu_check.py --shape 0.6b         # Qwen3-0.6B-shaped
    python scripts/gpu_check.py --cpu --shape tiny   # the CPU fallback path (a smoke test of this script)
    python scripts/gpu_check.py --layout fsdp --devices 1               # layout=fsdp's trainer on the GPU(s)
    python scripts/gpu_check.py --cpu --shape tiny --layout fsdp --devices 2   # its CPU smoke test (gloo)

With `--layout fsdp` the trainer runs under claw's FSDP strategy (claw/fsdp.py) over `--devices` processes
(Lightning starts the others, each running this script; the seeded model and engine give them the same rollout
batch on the CPU, while on GPUs sampling may differ between processes, so `--devices 1` is the check there).
After the train steps it times the gathered weight sync (one parameter at a time, into rank 0's engine), checks
that the engine holds exactly the trainer's weights, and times a sharded checkpoint write.

Why not `train.py`: the check machine has no network and only small files, so neither the
embedded SmolLM2 nor its tokenizer can be relied on. Random weights and random token ids measure
speed and consistency as well as real ones, so the script builds the model from a config and
drives claw's own pieces — `HFEngine` (generate, load_weights), `ClawModule` under a Lightning
Trainer with the colocate layout's accelerator and precision, the GRPO objective — directly.
The vLLM GPU path is *not* exercised: no CUDA vLLM wheel can be brought to that machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Qwen3 dense shapes (hidden, layers, heads, kv heads, intermediate, vocab), as a Llama (no q/k norm).
SHAPES = {
    "1.7b": dict(
        hidden_size=2048,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        intermediate_size=6144,
        vocab_size=151936,
    ),
    "0.6b": dict(
        hidden_size=1024,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        intermediate_size=3072,
        vocab_size=151936,
    ),
    "tiny": dict(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=128,
        vocab_size=4096,
    ),
}


def build_policy(shape: str, dtype: torch.dtype):
    """A random Llama of the given shape and a stand-in tokenizer (the engine only needs pad/eos ids)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        **SHAPES[shape],
        head_dim=128 if shape != "tiny" else 32,
        max_position_embeddings=4096,
        tie_word_embeddings=shape == "0.6b",
    )
    cfg.pad_token_id, cfg.eos_token_id, cfg.bos_token_id = 0, 1, 2
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(dtype)
    tokenizer = SimpleNamespace(pad_token_id=0, eos_token_id=1)
    return SimpleNamespace(model=model, tokenizer=tokenizer, name=f"llama-{shape}")


def random_prompts(n: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (n, length), generator=g).tolist()


def check_generation(engine, prompts, max_new_tokens: int) -> dict:
    from claw.engine import SamplingParams

    engine.generate(prompts[:2], SamplingParams(1.0, 4))  # warm-up (kernels, allocator)
    sync()
    t0 = time.perf_counter()
    gens = engine.generate(prompts, SamplingParams(temperature=1.0, max_new_tokens=max_new_tokens))
    sync()
    dt = time.perf_counter() - t0
    n = sum(len(g.response_ids) for g in gens)
    return {"prompts": len(prompts), "tokens": n, "seconds": dt, "tokens_per_s": n / dt, "gens": gens}


def check_sync(engine, model) -> dict:
    """load_weights (staging copy) and the swap into the engine's model, separately."""
    t0 = time.perf_counter()
    engine.load_weights(((n, t.detach()) for n, t in model.state_dict().items()), version=engine.version + 1)
    sync()
    staged = time.perf_counter() - t0
    t0 = time.perf_counter()
    with engine.lock:
        engine._apply_staged()  # applied at once when idle; measured here in case a call held the lock
    sync()
    return {"load_weights_s": staged, "apply_s": time.perf_counter() - t0}


def rollout_samples(gens, prompts, group: int):
    from claw.types import Sample

    out = []
    for i, (p, g) in enumerate(zip(prompts, gens)):
        if not g.response_ids:
            continue
        reward = float(i % 2)  # any spread within a group gives GRPO non-zero advantages
        out.append(
            Sample(
                p,
                g.response_ids,
                g.logprobs,
                1.0,
                g.policy_version,
                reward=reward,
                group_id=str(i // group),
                group_size=group,
            )
        )
    return out


class StepTimer:
    """Wall time of each training step (one rollout batch = one optimizer step here)."""

    def __init__(self) -> None:
        import lightning as L

        class _CB(L.Callback):
            def __init__(cb) -> None:
                cb.times: list[float] = []

            def on_train_batch_start(cb, trainer, module, batch, batch_idx) -> None:
                sync()
                cb.t0 = time.perf_counter()

            def on_train_batch_end(cb, trainer, module, outputs, batch, batch_idx) -> None:
                sync()
                cb.times.append(time.perf_counter() - cb.t0)

        self.callback = _CB()


def check_train_steps(
    policy, samples, accelerator: str, precision: str, steps: int, micro_batch_size: int, strategy="auto", devices=1
) -> dict:
    import lightning as L
    from torch.utils.data import DataLoader

    from claw.config import compose_config, objective_from_cfg
    from claw.module import ClawModule
    from claw.objective import Objective
    from claw.types import collate

    objective = Objective(objective_from_cfg(compose_config(["mode=rl", "algo=grpo"])))
    module = ClawModule(
        policy.model,
        objective,
        lr=1e-6,
        micro_batch_size=micro_batch_size,
        gradient_checkpointing=accelerator == "gpu",
    )
    batch = collate(samples, policy.tokenizer.pad_token_id)
    loader = DataLoader([batch] * steps, batch_size=None, collate_fn=lambda b: b)
    timer = StepTimer()
    trainer = L.Trainer(
        accelerator=accelerator,
        devices=devices,
        strategy=strategy,
        precision=precision,
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[timer.callback],
    )
    trainer.fit(module, train_dataloaders=loader)
    times = timer.callback.times
    steady = times[1:] or times
    return {
        "batch": f"{batch.size} x {batch.input_ids.shape[1]} tokens",
        "step_s_all": times,
        "step_s_mean": statistics.mean(steady),
        "peak_gpu_gb": torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None,
        "trainer": trainer,
        "module": module,
    }


def check_sharded(trainer, module, engine) -> dict:
    """layout=fsdp after training: the gathered sync into rank 0's engine, whether the engine then holds exactly the
    trainer's weights (in the engine's dtype), and a sharded checkpoint write. Every rank calls it (collectives)."""
    import shutil
    import tempfile

    leader = trainer.is_global_zero
    sync()
    t0 = time.perf_counter()
    weights = ((n, t.detach()) for n, t in module.engine_weights())
    if leader:
        engine.load_weights(weights, version=engine.version + 1)
        with engine.lock:
            engine._apply_staged()
    else:
        for _ in weights:  # every rank takes part in each parameter's gather
            pass
    sync()
    sync_s = time.perf_counter() - t0
    worst = 0.0
    held = engine.model.state_dict()
    for name, t in module.engine_weights():
        if leader:
            worst = max(worst, (held[name] - t.to(held[name].device, held[name].dtype)).abs().max().item())
    where = Path(tempfile.mkdtemp(prefix="gpu_check_fsdp_"))
    t0 = time.perf_counter()
    trainer.save_checkpoint(where / "last.ckpt")  # the strategy writes into rank 0's directory
    save_s = time.perf_counter() - t0
    link = where / "last.ckpt"
    files = len(list(link.glob("*.distcp"))) if leader else None
    shutil.rmtree(where, ignore_errors=True)
    return {
        "gathered_sync_s": sync_s,
        "engine_vs_trainer_max_abs": worst,
        "checkpoint_s": save_s,
        "shard_files": files,
    }


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="1.7b", choices=sorted(SHAPES))
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (smoke test of this script)")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--micro-batch-size", type=int, default=8)
    ap.add_argument("--out", default=None, help="also write the numbers as JSON here")
    ap.add_argument("--layout", default="colocate", choices=["colocate", "fsdp"], help="fsdp: the trainer sharded")
    ap.add_argument("--devices", type=int, default=1, help="trainer processes under --layout fsdp")
    args = ap.parse_args()
    from claw.engine.hf import HFEngine

    on_gpu = torch.cuda.is_available() and not args.cpu
    if not on_gpu and not args.cpu:
        sys.exit("no CUDA device: pass --cpu (with --shape tiny) to smoke-test the script on the CPU")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if on_gpu else torch.device("cpu")
    accelerator, precision = (
        ("gpu", "bf16-mixed") if on_gpu else ("cpu", "32-true")
    )  # conf/layout/colocate.yaml vs cpu.yaml
    t_start = time.perf_counter()
    policy = build_policy(args.shape, torch.float32)  # fp32 master weights; bf16 autocast in the trainer
    n_params = sum(p.numel() for p in policy.model.parameters())
    engine = HFEngine(policy, seed=0, max_batch_size=64)
    engine.model.to(
        device=device, dtype=torch.bfloat16 if on_gpu else torch.float32
    )  # the colocated engine serves in bf16
    print(
        f"[gpu_check] {policy.name}: {n_params / 1e9:.2f} B params on {device} "
        f"({torch.cuda.get_device_name() if on_gpu else 'cpu'})",
        flush=True,
    )

    prompts = random_prompts(args.prompts, args.prompt_len, SHAPES[args.shape]["vocab_size"])
    gen = check_generation(engine, prompts, args.max_new_tokens)
    rate = (
        f"{gen['tokens_per_s']:.0f} tokens/s "
        f"({gen['tokens']} tokens, {gen['prompts']} prompts, T=1.0, {gen['seconds']:.1f} s)"
    )
    print(f"[gpu_check] generate: {rate}", flush=True)
    policy.model.to(device)
    syncs = [check_sync(engine, policy.model) for _ in range(2)]
    print(
        "[gpu_check] weight sync: "
        f"load_weights {syncs[-1]['load_weights_s']:.3f} s + swap {syncs[-1]['apply_s']:.3f} s",
        flush=True,
    )
    samples = rollout_samples(gen.pop("gens"), prompts, group=4)
    strategy, devices = "auto", 1
    if args.layout == "fsdp":
        from claw.fsdp import FSDPStrategy

        strategy, devices = FSDPStrategy(), args.devices
    train = check_train_steps(
        policy, samples, accelerator, precision, args.steps, args.micro_batch_size, strategy, devices
    )
    trainer, module = train.pop("trainer"), train.pop("module")
    sharded = check_sharded(trainer, module, engine) if args.layout == "fsdp" else None
    if not trainer.is_global_zero:  # a further FSDP process: rank 0 reports
        return
    all_s = [round(t, 2) for t in train["step_s_all"]]
    print(
        f"[gpu_check] train step ({precision}, {train['batch']}): {train['step_s_mean']:.2f} s (all: {all_s})",
        flush=True,
    )
    if train["peak_gpu_gb"] is not None:
        print(f"[gpu_check] peak GPU memory {train['peak_gpu_gb']:.1f} GiB", flush=True)
    if sharded is not None:
        print(
            f"[gpu_check] fsdp over {devices} process(es): gathered sync {sharded['gathered_sync_s']:.3f} s, "
            f"engine vs trainer max |diff| {sharded['engine_vs_trainer_max_abs']:.1e}, sharded checkpoint "
            f"{sharded['checkpoint_s']:.2f} s ({sharded['shard_files']} shard files)",
            flush=True,
        )
        if sharded["engine_vs_trainer_max_abs"] != 0.0:
            sys.exit("[gpu_check] the engine does not hold the trainer's weights after the gathered sync")
    total = time.perf_counter() - t_start
    print(
        f"[gpu_check] done in {total:.0f} s. The vLLM GPU path was not run (no CUDA vLLM on this machine).", flush=True
    )
    if args.out:
        result = {
            "shape": args.shape,
            "device": str(device),
            "generate": gen,
            "sync": syncs,
            "train": train,
            "sharded": sharded,
            "total_s": total,
        }
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
