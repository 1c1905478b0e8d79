"""LoRA through peft on the same loss path as full fine-tuning (only adapter weights train).

The rollout engine serves a plain model, so weight sync sends *merged* weights, W + ΔW with
ΔW = B·A·(α/r), under the plain model's parameter names — computed without touching the trained
weights (no merge/unmerge round trip that would drift in floating point).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor


def apply_lora(
    model: torch.nn.Module,
    r: int = 8,
    alpha: int = 16,
    dropout: float = 0.0,
    target_modules: list[str] | None = None,
    seed: int | None = None,
) -> torch.nn.Module:
    """`model` with LoRA adapters. With `seed` their random initial weights depend on it alone (not on what drew
    random numbers before), so every trainer process and a replay of the run start from the same adapters."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:  # pragma: no cover - peft is a declared dependency
        raise ImportError("LoRA needs peft: pip install peft") from e
    config = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=target_modules or ["q_proj", "k_proj", "v_proj", "o_proj"],
        bias="none",
    )
    if seed is None:
        return get_peft_model(model, config)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return get_peft_model(model, config)


def is_lora(model: torch.nn.Module) -> bool:
    return hasattr(model, "peft_config")


@torch.no_grad()
def merged_state_dict(model: torch.nn.Module) -> dict[str, Tensor]:
    return dict(merged_weights(model))


@torch.no_grad()
def merged_weights(
    model: torch.nn.Module, gather: Callable[[Tensor], Tensor] | None = None
) -> Iterator[tuple[str, Tensor]]:
    """The merged weights one tensor at a time. `gather` makes a sharded tensor whole (claw/fsdp.py `full`, a
    collective): each weight and its adapters are gathered when reached, so no second full model is held."""
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    layers = {f"{n}.weight": m for n, m in base.named_modules() if isinstance(m, LoraLayer)}
    for name, tensor in base.state_dict().items():
        if "lora_" in name:
            continue
        plain = name.replace(".base_layer.", ".")
        weight = tensor if gather is None else gather(tensor)
        if plain in layers:
            weight = weight + _delta(layers[plain], gather)
        yield plain, weight


def _delta(layer, gather: Callable[[Tensor], Tensor] | None) -> Tensor | float:
    """ΔW of a LoRA layer's active adapters: peft's own on whole tensors; on sharded ones, B·A·(α/r) from the
    gathered A and B (what peft's `get_delta_weight` computes for a linear layer)."""
    delta: Tensor | float = 0.0
    for adapter in layer.active_adapters:
        if gather is None:
            delta = delta + layer.get_delta_weight(adapter)
            continue
        a, b = gather(layer.lora_A[adapter].weight.detach()), gather(layer.lora_B[adapter].weight.detach())
        ab = b @ a
        delta = delta + (ab.T if layer.fan_in_fan_out else ab) * layer.scaling[adapter]
    return delta
