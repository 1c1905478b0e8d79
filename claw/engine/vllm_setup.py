"""What both vLLM engines (`engine=vllm`, `engine=vllm_server`) need before they start: whether vLLM can serve
the model here (`vllm_problem`, what `engine=auto` asks), the offline engine's options (`start_llm`), and the
directory of weights, config and tokenizer that vLLM loads from (`save_for_vllm`)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path

import torch

from claw.engine.watchdog import scratch_dir

TESTED_VLLM = "0.32."  # the private paths used here (worker.reload_weights, llm_engine.step) are pinned to it
CPU_KV_CACHE_GB = 2.0  # SmolLM2-135M fp32: ~46 KB per token, so ~45k tokens
# vLLM's CPU attention kernels (vllm/v1/attention/backends/cpu_attn.py, 0.32)
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


class VLLMUnavailable(RuntimeError):
    """vLLM cannot serve this model here; the message names the fix."""


def vllm_problem(model_config) -> str | None:
    """Why vLLM cannot run this model on this machine, or None when it can (what `engine=auto` asks)."""
    try:
        import vllm
    except Exception as e:  # ImportError, or a broken install (torchvision beside the CPU torch)
        return (
            f"vLLM is not importable ({type(e).__name__}: {e}); "
            "install it with `make install-vllm` (CPU) or `pip install -e .[vllm]` (GPU)"
        )
    if not vllm.__version__.startswith(TESTED_VLLM):
        return (
            f"vLLM {vllm.__version__} is installed; "
            f"claw's engine reaches its internals and was tested with {TESTED_VLLM}.x only"
        )
    if not torch.cuda.is_available():
        head = getattr(model_config, "head_dim", None) or model_config.hidden_size // model_config.num_attention_heads
        if head not in CPU_HEAD_SIZES:
            return (
                f"vLLM's CPU attention supports head sizes {CPU_HEAD_SIZES}, this model has {head}; "
                "for the tiny test model use model.num_heads=2 model.num_kv_heads=1 (head size 32), or engine=hf"
            )
    return None


def start_llm(
    policy,
    model_dir: Path,
    seed: int,
    max_batch_size: int,
    gpu_memory_utilization: float,
    enforce_eager: bool | None,
    max_model_len: int,
    kv_cache_gb: float | None,
    sleep_mode: bool,
    adapters: dict | None = None,
):
    """The in-process `vllm.LLM` over `model_dir`, sampled log-probs under softmax(logits / T), prefix caching on."""
    from vllm import LLM

    on_gpu = torch.cuda.is_available()
    dtype = str(policy.model.dtype).removeprefix("torch.")
    if kv_cache_gb is None and not on_gpu:
        # vLLM's CPU worker sizes the KV cache as gpu_memory_utilization × node memory minus what this
        # process already uses, and colocated, that includes the trainer (policy, optimizer, teacher):
        # it goes negative at start-up. A fixed size avoids that (and skips a warm-up pass).
        kv_cache_gb = CPU_KV_CACHE_GB
    extra = {"kv_cache_memory_bytes": int(kv_cache_gb * 2**30)} if kv_cache_gb else {}
    if (
        adapters
    ):  # personalize=per_user: a LoRA adapter per request, `max_resident` users' held at once, and the base's
        resident = int(adapters.get("max_resident", 8)) + 1
        extra.update(
            enable_lora=True, max_loras=resident, max_cpu_loras=resident, max_lora_rank=int(adapters.get("rank", 8))
        )
    set_threads = torch.set_num_threads  # vLLM's CPU worker replaces it with a no-op; the trainer needs it back
    llm = LLM(
        model=str(model_dir),
        tokenizer=str(model_dir),
        dtype=dtype,
        seed=seed,
        max_num_seqs=max_batch_size,
        max_model_len=min(max_model_len, policy.model.config.max_position_embeddings),
        gpu_memory_utilization=gpu_memory_utilization,
        enforce_eager=(not on_gpu) if enforce_eager is None else enforce_eager,
        logprobs_mode="processed_logprobs",
        enable_sleep_mode=sleep_mode,
        enable_prefix_caching=True,
        **extra,
    )
    torch.set_num_threads = set_threads
    return llm


def unshared(named_tensors: Iterable[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """CPU tensors under every name, a copy where storage is shared. safetensors refuses shared
    storage, and vLLM needs both names of tied weights: it loads the embedding from
    `embed_tokens` and its CPU LM head keeps a separately processed copy that `lm_head` refreshes."""
    out, seen = {}, set()
    for name, t in named_tensors:
        t = t.detach().to("cpu")
        out[name] = t.clone() if t.data_ptr() in seen else t.contiguous()
        seen.add(t.data_ptr())
    return out


def save_for_vllm(policy, directory: Path) -> Path:
    """Weights (safetensors), config and tokenizer in a directory vLLM can load.

    Not `save_pretrained`: it refuses a model whose config still records the GGUF it came from (the
    embedded SmolLM2), and the weights here are plain tensors either way."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    config = copy.deepcopy(policy.model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(directory)
    save_file(unshared(policy.model.state_dict().items()), str(directory / "model.safetensors"))
    policy.tokenizer.save_pretrained(directory)
    return directory


def save_policy(policy, weights_dir: str | None) -> Path:
    """vLLM loads from a directory: in RAM (/dev/shm) when there is one."""
    root = weights_dir or ("/dev/shm" if Path("/dev/shm").is_dir() else None)
    return save_for_vllm(policy, scratch_dir("claw-vllm-", root))  # a crashed run's directory is removed here
