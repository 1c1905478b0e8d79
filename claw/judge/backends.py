"""Where judge votes come from: one async protocol, three backends (docs/judges.md).

- `openai`: any OpenAI-compatible endpoint (vLLM, SGLang, a hosted API) through the official client.
- `policy`: the colocated claw engine, so the policy (or its frozen copy) judges itself — no extra model.
- `rule`: deterministic lexical rules (`claw.judge.rule`) for scripted users and tests. It scores
  turns, not prompts, so judges call its `score_turn` / `hint_for` instead of `complete`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import openai

from claw.engine.base import Engine, SamplingParams
from claw.judge.rule import RuleBackend
from claw.judge.turn import Message

__all__ = ["Backend", "OpenAIBackend", "PolicyBackend", "RuleBackend", "build_backend"]


@runtime_checkable
class Backend(Protocol):
    kind: str

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str: ...


def _retryable(error: Exception) -> bool:
    """Connection problems, timeouts, 429 and 5xx pass; any other 4xx is our request's fault and will not."""
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server, with our own retry loop.

    The client's built-in retries are off (`max_retries=0`) so that the schedule is the one in the
    config: attempt k (0-based) that fails transiently waits backoff_s · 2^k, up to max_retries
    retries; then the last error is raised (the judge turns it into an abstention).
    """

    kind = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        if max_retries < 0 or backoff_s < 0:
            raise ValueError(f"max_retries and backoff_s must be >= 0 (got {max_retries}, {backoff_s})")
        self.base_url, self.api_key, self.model = base_url, api_key, model
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
        self.attempts = 0  # HTTP requests sent, retries included (a metric, and what tests count)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> openai.AsyncOpenAI:
        # The client's connection pool belongs to the event loop it first ran in: one client per loop.
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = openai.AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
            )
        return self._clients[loop]

    async def aclose(self) -> None:
        """Close this loop's client (its keep-alive connections); call before the loop ends."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str:
        client = self._client()
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            try:
                reply = await client.chat.completions.create(
                    model=self.model, messages=messages, temperature=temperature, max_tokens=max_tokens
                )  # type: ignore[arg-type]
                return reply.choices[0].message.content or ""
            except openai.APIError as error:
                if attempt == self.max_retries or not _retryable(error):
                    raise
                await asyncio.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")


class PolicyBackend:
    """The claw engine as a judge: chat-template the messages, generate in a worker thread (the engine
    is blocking and guards itself with a lock), decode without special tokens.

    `sampling` carries what the judge does not set per call (stop tokens); each call's temperature
    and max_tokens replace its temperature and max_new_tokens.
    """

    kind = "policy"

    def __init__(self, engine: Engine, tokenizer: Any, sampling: SamplingParams | None = None) -> None:
        self.engine, self.tokenizer = engine, tokenizer
        self.sampling = sampling or SamplingParams()

    def _prompt_ids(self, messages: list[Message]) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, Mapping) or hasattr(ids, "input_ids"):  # transformers ≥ 5 returns a BatchEncoding
            ids = ids["input_ids"]
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if ids and isinstance(ids[0], list):  # a batch of one
            ids = ids[0]
        return list(ids)

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str:
        sampling = dataclasses.replace(self.sampling, temperature=temperature, max_new_tokens=max_tokens)
        prompt = self._prompt_ids(messages)
        [generation] = await asyncio.to_thread(self.engine.generate, [prompt], sampling)
        return self.tokenizer.decode(generation.response_ids, skip_special_tokens=True)


def build_backend(kind: str, **kwargs: Any) -> Backend:
    """`judge.kind=rule|openai|policy` → a backend. kwargs are the backend's constructor arguments."""
    if kind == "rule":
        return RuleBackend(**kwargs)
    if kind == "openai":
        return OpenAIBackend(**kwargs)
    if kind == "policy":
        return PolicyBackend(**kwargs)
    raise ValueError(f"unknown judge backend {kind!r}; choose rule, openai or policy")
