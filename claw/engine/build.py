"""`build_engine`: the engine a config names (conf/engine/*.yaml: `_target_: claw.engine.build_engine`). It
lives apart from the protocol (`base.py`), which the implementations import, so the protocol never imports
them back (no import circle)."""

from __future__ import annotations

import logging
from typing import Any

from claw.engine.base import Engine

log = logging.getLogger(__name__)

KINDS = {"HFEngine": "hf", "VLLMEngine": "vllm", "VLLMServerEngine": "vllm_server"}  # class → `engine=` name


def build_engine(
    kind: str,
    policy,
    seed: int = 0,
    max_batch_size: int = 64,
    score_batch_size: int | None = 8,
    options: dict[str, Any] | None = None,
    ddp: bool = False,
) -> Engine:
    """`engine=auto|hf|vllm|vllm_server`. auto = vLLM when it imports and can serve this model here, else hf;
    under DDP (`ddp`: several trainer processes) auto is hf, since in-process vLLM sets up its own
    torch.distributed group in rank 0, which collides with DDP's.

    `score_batch_size`: rows per teacher-forced scoring pass of the hf engine, and of the hf scorer a vLLM engine
    keeps for scoring at T != 1 (null: every row in one pass). `options` (the engine config's `options:` block) go
    to the vLLM engines; hf has none."""
    options = options or {}
    if kind == "auto" and ddp:
        kind = "hf"
    if kind == "auto":
        from claw.engine.vllm import vllm_problem

        problem = vllm_problem(policy.model.config)
        kind = "hf" if problem else "vllm"
        log.info("engine=auto -> %s%s", kind, f" ({problem})" if problem else "")
    if kind == "hf":
        from claw.engine.hf import HFEngine

        return HFEngine(
            policy,
            seed=seed,
            max_batch_size=max_batch_size,
            score_batch_size=score_batch_size,
            adapters=options.get("adapters"),
        )
    if kind == "vllm":
        from claw.engine.vllm import VLLMEngine

        return VLLMEngine(
            policy, seed=seed, max_batch_size=max_batch_size, score_batch_size=score_batch_size, **options
        )
    if kind == "vllm_server":
        from claw.engine.vllm_server import VLLMServerEngine

        return VLLMServerEngine(policy, seed=seed, max_batch_size=max_batch_size, **options)
    raise ValueError(f"unknown engine {kind!r}; choose auto, hf, vllm or vllm_server")


def engine_kind(engine: Engine | None) -> str | None:
    """The engine a run really used (`engine=auto` resolves at start-up): hf, vllm or vllm_server."""
    return None if engine is None else KINDS.get(type(engine).__name__, type(engine).__name__)
