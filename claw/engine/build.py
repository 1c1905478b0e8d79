"""`build_engine`: the engine a config names. It lives apart from the protocol (`base.py`), which the
implementations import, so the protocol never imports them back (no import circle)."""

from __future__ import annotations

import logging

from claw.engine.base import Engine

log = logging.getLogger(__name__)


def build_engine(kind: str, policy, seed: int = 0, max_batch_size: int = 64, **options) -> Engine:
    """`engine=auto|hf|vllm|vllm_server`. auto = vLLM when it imports and can serve this model here, else hf.

    `options` (the engine config's `options:` block) go to the vLLM engines; hf has none."""
    if kind == "auto":
        from claw.engine.vllm import vllm_problem

        problem = vllm_problem(policy.model.config)
        kind = "hf" if problem else "vllm"
        log.info("engine=auto -> %s%s", kind, f" ({problem})" if problem else "")
    if kind == "hf":
        from claw.engine.hf import HFEngine

        return HFEngine(policy, seed=seed, max_batch_size=max_batch_size)
    if kind == "vllm":
        from claw.engine.vllm import VLLMEngine

        return VLLMEngine(policy, seed=seed, max_batch_size=max_batch_size, **options)
    if kind == "vllm_server":
        from claw.engine.vllm_server import VLLMServerEngine

        return VLLMServerEngine(policy, seed=seed, max_batch_size=max_batch_size, **options)
    raise ValueError(f"unknown engine {kind!r}; choose auto, hf, vllm or vllm_server")
