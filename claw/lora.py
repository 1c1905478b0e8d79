"""LoRA through peft on the same loss path as full fine-tuning (only adapter weights train).

The rollout engine serves a plain model, so weight sync sends *merged* weights, W + ΔW with
ΔW = B·A·(α/r), under the plain model's parameter names — computed without touching the trained
weights (no merge/unmerge round trip that would drift in floating point).
"""

from __future__ import annotations

import torch
from torch import Tensor


def apply_lora(
    model: torch.nn.Module, r: int = 8, alpha: int = 16, dropout: float = 0.0, target_modules: list[str] | None = None
) -> torch.nn.Module:
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
    return get_peft_model(model, config)


def is_lora(model: torch.nn.Module) -> bool:
    return hasattr(model, "peft_config")


@torch.no_grad()
def merged_state_dict(model: torch.nn.Module) -> dict[str, Tensor]:
    from peft.tuners.lora import LoraLayer

    base = model.get_base_model()
    deltas = {}
    for name, module in base.named_modules():
        if isinstance(module, LoraLayer):
            for adapter in module.active_adapters:
                deltas[f"{name}.weight"] = deltas.get(f"{name}.weight", 0) + module.get_delta_weight(adapter)
    out = {}
    for name, tensor in base.state_dict().items():
        if "lora_" in name:
            continue
        plain = name.replace(".base_layer.", ".")
        out[plain] = tensor + deltas[plain] if plain in deltas else tensor
    return out
