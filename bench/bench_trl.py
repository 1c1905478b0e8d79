"""TRL's GRPOTrainer on claw's GRPO reference workload (the `grpo_step` of bench/bench.py), for a side-by-side number.

What it measures: wall seconds per optimizer step of `trl.GRPOTrainer` (transformers generation, no vLLM) on
SmolLM2-135M-Instruct, fp32, CPU. One TRL step = generate 8 prompts x 4 completions (<= 64 new tokens, T = 1.0,
top_p = 1) of "What is a + b?" (512 problems, a, b = random.Random(0).randint(1, 99), the chat template applied
by TRL's conversational prompt format), score them (1.0 if the last integer in the completion equals a + b), and
one AdamW step (lr 1e-6, beta = 0: no reference model, num_iterations = 1, per_device_train_batch_size = 32, no
gradient accumulation). No logging backend, no eval, no saving; bf16/fp16 off. Everything else is TRL's default
(notably gradient_checkpointing=True, TRL's default, unless --no-gradient-checkpointing is given).

Step time = the interval between consecutive `on_step_end` callbacks (the first one measured from `on_train_begin`),
which is what claw's `system/step_s` is (the time between optimizer steps); the time from `on_step_begin` to
`on_step_end` is recorded too. The steady-state mean leaves out the first step (warm-up). Tokens generated per step
= TRL's logged `completions/mean_length` x 32.

This script must not import claw; it runs in its own virtualenv:

    python3.11 -m venv /tmp/trl-venv
    /tmp/trl-venv/bin/pip install torch==2.13.0          # first: the CPU wheel on local disk
    /tmp/trl-venv/bin/pip install trl torch==2.13.0      # keep the torch pin so pip never swaps torch
    /tmp/trl-venv/bin/pip show torch                     # must still say 2.13.0+cpu

Run it (from the repository root; the model dir is claw's local SmolLM2 cache, nothing is downloaded):

    /tmp/trl-venv/bin/python bench/bench_trl.py \\
        --model-dir $(.venv/bin/python -c "from claw.models import smollm2_dir; print(smollm2_dir())")

    # quick smoke test: --steps 1 --max-completion-length 8
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import json
import platform
import random
import re
import statistics
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
N_PROMPTS, PROMPTS_PER_STEP, NUM_GENERATIONS = 512, 8, 4
SAMPLES_PER_STEP = PROMPTS_PER_STEP * NUM_GENERATIONS  # 32


def build_dataset():
    from datasets import Dataset

    rng = random.Random(0)
    rows = []
    for _ in range(N_PROMPTS):
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        rows.append({"prompt": [{"role": "user", "content": f"What is {a} + {b}?"}], "answer": a + b})
    return Dataset.from_list(rows)


def _text(completion) -> str:
    # conversational format: [{"role": "assistant", "content": "..."}]
    if isinstance(completion, list):
        return "".join(m.get("content", "") if isinstance(m.get("content"), str) else "" for m in completion)
    return completion


def addition_reward(prompts, completions, answer, **kwargs) -> list[float]:
    out = []
    for completion, ans in zip(completions, answer):
        ints = re.findall(r"-?\d+", _text(completion).replace(",", ""))
        out.append(1.0 if ints and int(ints[-1]) == int(ans) else 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="a local HF checkpoint dir of SmolLM2-135M-Instruct")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps (the first is warm-up)")
    ap.add_argument("--max-completion-length", type=int, default=64)
    ap.add_argument(
        "--no-gradient-checkpointing", action="store_true", help="turn off TRL's default gradient checkpointing"
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "grpo_step_trl.json"))
    args = ap.parse_args()

    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.t_last = None
            self.t_begin = None
            self.intervals: list[float] = []  # on_step_end to on_step_end (first: from on_train_begin)
            self.inside: list[float] = []  # on_step_begin to on_step_end
            self.completion_len: list[float] = []
            self.rewards: list[float] = []

        def on_train_begin(self, args, state, control, **kw):
            self.t_last = time.perf_counter()

        def on_step_begin(self, args, state, control, **kw):
            self.t_begin = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            now = time.perf_counter()
            self.intervals.append(now - self.t_last)
            self.inside.append(now - self.t_begin)
            self.t_last = now
            print(
                f"step {state.global_step}: {self.intervals[-1]:.1f} s (step_begin->step_end {self.inside[-1]:.1f} s)",
                flush=True,
            )

        def on_log(self, args, state, control, logs=None, **kw):
            logs = logs or {}
            if "completions/mean_length" in logs:
                self.completion_len.append(float(logs["completions/mean_length"]))
            if "reward" in logs:
                self.rewards.append(float(logs["reward"]))

    # claw's converted checkpoint keeps the `quantization_config` (quant_method gguf) of the GGUF it came from,
    # although its safetensors are plain fp32; transformers then marks the model quantized and Trainer refuses to
    # train it ("purely quantized models"). Dropping that stale entry loads bit-identical fp32 weights.
    config = AutoConfig.from_pretrained(args.model_dir)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, config=config, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    out_dir = tempfile.mkdtemp(prefix="trl-bench-")
    cfg = GRPOConfig(
        output_dir=out_dir,
        max_steps=args.steps,
        per_device_train_batch_size=SAMPLES_PER_STEP,
        gradient_accumulation_steps=1,
        num_generations=NUM_GENERATIONS,
        num_iterations=1,
        max_completion_length=args.max_completion_length,
        temperature=1.0,
        top_p=1.0,
        learning_rate=1e-6,
        beta=0.0,
        use_vllm=False,
        bf16=False,
        fp16=False,
        use_cpu=True,
        gradient_checkpointing=not args.no_gradient_checkpointing,
        report_to="none",
        logging_steps=1,  # to the callbacks only (report_to=none): needed for completion lengths
        eval_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        log_completions=False,
        dataloader_num_workers=0,
        seed=0,
    )
    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=addition_reward,
        args=cfg,
        train_dataset=build_dataset(),
        processing_class=tok,
        callbacks=[timer],
    )
    trainer.train()

    steps = timer.intervals
    steady = steps[1:] if len(steps) > 1 else steps
    gen_tokens = [m * SAMPLES_PER_STEP for m in timer.completion_len]
    steady_tokens = gen_tokens[1:] if len(gen_tokens) > 1 else gen_tokens
    result = {
        "machine": {
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "cpu": platform.processor(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        },
        "versions": {p: version(p) for p in ("trl", "transformers", "torch", "accelerate", "datasets")},
        "threads": torch.get_num_threads(),
        "workload": f"{PROMPTS_PER_STEP} prompts x {NUM_GENERATIONS} samples, "
        f"<={args.max_completion_length} new tokens, T=1.0, top_p=1, fp32, 1 optimizer step/batch, beta=0, "
        "TRL GRPOTrainer (transformers generate, no vLLM)",
        "gradient_checkpointing": cfg.gradient_checkpointing,
        "dropped_stale_quantization_config": True,
        "loss_type": cfg.loss_type,
        "steps": args.steps,
        "step_s_all": steps,
        "step_begin_to_end_s_all": timer.inside,
        "step_s_mean": statistics.mean(steady),
        "step_s_std": statistics.stdev(steady) if len(steady) > 1 else 0.0,
        "generated_tokens_per_step_all": gen_tokens,
        "generated_tokens_per_step": statistics.mean(steady_tokens) if steady_tokens else None,
        "reward_mean_all": timer.rewards,
    }
    print(
        f"TRL GRPO step: {result['step_s_mean']:.1f} ± {result['step_s_std']:.1f} s "
        f"(steady state, steps after the first); all: {', '.join(f'{s:.1f}' for s in steps)} s; "
        f"generated tokens/step: {result['generated_tokens_per_step']}",
        flush=True,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
