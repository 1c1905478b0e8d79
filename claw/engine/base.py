"""The engine protocol every rollout backend implements."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SamplingParams:
    """How to decode. Trainable turns use the full distribution: top_p = 1, no top-k (docs/engines.md)."""

    temperature: float = 1.0  # 0 = greedy
    max_new_tokens: int = 64
    stop_token_ids: tuple[int, ...] = field(default_factory=tuple)  # besides the tokenizer's EOS
    seed: int | None = None  # this row's own sampling seed: its tokens then do not depend on what it is batched with
    user: str | None = None  # who asked (claw/users/keys.py): an engine serving per-user adapters decodes with theirs


@dataclass
class Generation:
    response_ids: list[int]  # sampled ids, including the stop token when one was sampled
    logprobs: list[float]  # log π(a_t) under softmax(logits / T) (T = 1 for greedy)
    finished: bool  # stopped on a stop token (or by the caller's `on_token`) rather than max_new_tokens
    policy_version: int
    canary: bool = False  # decoded by the canary's weights (engine=hf while the guard runs a canary)


# on_token(row, token_id, logprob) is called for every sampled token as soon as it is sampled, in
# order, from the thread running `generate`; returning True ends that row there (a stop string
# matched, the client went away). It is how the proxy streams tokens.
OnToken = Callable[[int, int, float], bool | None]


def per_row(sampling: SamplingParams | Sequence[SamplingParams], n: int) -> list[SamplingParams]:
    """One SamplingParams per prompt: a single one applies to all rows."""
    if isinstance(sampling, SamplingParams):
        return [sampling] * n
    rows = list(sampling)
    if len(rows) != n:
        raise ValueError(f"{len(rows)} sampling params for {n} prompts")
    return rows


@dataclass(frozen=True)
class ServedAdapter:
    """One user's promoted adapter as an engine serves it: a PEFT directory (adapter_config.json and
    adapter_model.safetensors) under a number no other adapter of this engine had (vLLM caches by it)."""

    user: str
    version: int  # the user's adapter version: what a turn sampled with it records as its policy version
    path: str
    lora_id: int


BASE = ""  # the AdapterTable entry of the base: every request without an adapter of its own


class AdapterTable:
    """Which adapter serves each user (personalize=per_user). `promote` swaps a user's entry in one assignment, so a
    request admitted before it decodes with the old version and one admitted after with the new. A user with no
    entry is served by the `BASE` entry, a zero adapter (the base weights, version 0): on vLLM's CPU backend (0.32) a
    request without a LoRA, batched beside requests of several LoRAs, decoded with wrong weights; with every
    request on a LoRA none is left without one."""

    def __init__(self) -> None:
        self._by_user: dict[str, ServedAdapter] = {}
        self._next_id = 1
        self._lock = threading.Lock()

    def promote(self, user: str, version: int, path: str) -> ServedAdapter:
        with self._lock:
            served = ServedAdapter(user, version, str(path), self._next_id)
            self._next_id += 1
            self._by_user[user] = served
            return served

    def get(self, user: str | None) -> ServedAdapter | None:
        """The adapter serving `user` (None: anyone): their own, else the base's, else None (the engine's weights)."""
        return self._by_user.get(BASE if user is None else user) or self._by_user.get(BASE)

    def __len__(self) -> int:
        return len(self._by_user)


@runtime_checkable
class ServesAdapters(Protocol):
    """An engine that decodes each request with its user's own LoRA adapter (personalize=per_user)."""

    adapters: AdapterTable

    def serve_adapter(self, user: str, version: int, path: str) -> ServedAdapter: ...


@runtime_checkable
class Engine(Protocol):
    version: int

    def generate(
        self,
        prompts: list[list[int]],
        sampling: SamplingParams | Sequence[SamplingParams],
        on_token: OnToken | None = None,
    ) -> list[Generation]: ...

    def score(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0
    ) -> list[list[float]]: ...

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None: ...

    def sleep(self) -> None: ...

    def wake(self) -> None: ...

    def close(
        self,
    ) -> None: ...  # release what the engine holds outside the trainer (threads, a server process); idempotent
