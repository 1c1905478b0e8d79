"""The engine protocol every rollout backend implements."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch


@dataclass(frozen=True)
class SamplingParams:
    """How to decode. Trainable turns use the full distribution: top_p = 1, no top-k (DESIGN.md §2)."""

    temperature: float = 1.0  # 0 = greedy
    max_new_tokens: int = 64
    stop_token_ids: tuple[int, ...] = field(default_factory=tuple)  # besides the tokenizer's EOS


@dataclass
class Generation:
    response_ids: list[int]  # sampled ids, including the stop token when one was sampled
    logprobs: list[float]  # log π(a_t) under softmax(logits / T) (T = 1 for greedy)
    finished: bool  # stopped on a stop token rather than max_new_tokens
    policy_version: int


@runtime_checkable
class Engine(Protocol):
    version: int

    def generate(self, prompts: list[list[int]], sampling: SamplingParams) -> list[Generation]: ...

    def score(self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0) -> list[list[float]]: ...

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None: ...

    def sleep(self) -> None: ...

    def wake(self) -> None: ...


def build_engine(kind: str, policy, **kwargs) -> Engine:
    """`engine=auto|hf|vllm`. vLLM is wired in by a later issue; until then auto means hf."""
    from claw.engine.hf import HFEngine

    if kind in ("hf", "auto"):
        return HFEngine(policy, **kwargs)
    if kind == "vllm":
        raise NotImplementedError("engine=vllm is not implemented yet (issue: colocated vLLM engine); use engine=hf or engine=auto.")
    raise ValueError(f"unknown engine {kind!r}; choose auto, hf or vllm")
