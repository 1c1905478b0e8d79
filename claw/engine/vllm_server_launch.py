"""The command line `engine=vllm_server` starts vLLM's OpenAI server with, and the local port it listens on."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from claw.engine.vllm_setup import CPU_KV_CACHE_GB


def server_command(
    policy,
    model_dir: Path,
    port: int,
    seed: int,
    max_batch_size: int,
    gpu_memory_utilization: float,
    max_model_len: int,
    kv_cache_gb: float | None,
    extra_args: Sequence[str],
) -> list[str]:
    """vLLM's OpenAI server on 127.0.0.1:`port` serving `model_dir` as "policy", sampled log-probs under
    softmax(logits / T); `extra_args` are passed on as they are."""
    on_gpu = torch.cuda.is_available()
    if kv_cache_gb is None and not on_gpu:
        kv_cache_gb = CPU_KV_CACHE_GB  # vLLM's CPU sizing from gpu_memory_utilization counts the trainer's memory too
    return [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model_dir), "--served-model-name", "policy",
        "--host", "127.0.0.1", "--port", str(port),
        "--dtype", str(policy.model.dtype).removeprefix("torch."),
        "--seed", str(seed), "--max-num-seqs", str(max_batch_size),
        "--max-model-len", str(min(max_model_len, policy.model.config.max_position_embeddings)),
        "--gpu-memory-utilization", str(gpu_memory_utilization),
        "--logprobs-mode", "processed_logprobs",
        *([] if on_gpu else ["--enforce-eager"]),
        *(["--kv-cache-memory-bytes", str(int(kv_cache_gb * 2**30))] if kv_cache_gb else []),
        *map(str, extra_args),
    ]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
