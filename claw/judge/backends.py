"""Where judge votes come from: two kinds of backend, one protocol the judges ask (docs/judges.md).

A backend either reads the turn itself and writes its votes (a `Voter`: `rule`, deterministic rules in
`claw.judge.rule`), or completes the judge's prompt (a `PromptBackend`: `openai`, any OpenAI-compatible endpoint
through the official client; `policy`, the colocated claw engine, so the policy or its frozen copy judges itself).
The judges hold a `Voter` either way: `as_voter` turns a prompt backend into one, and that is the only place the
two are told apart. Votes are text in the asking judge's answer format, so every backend's are read and counted
alike (`claw.judge.voting`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import openai

from claw.engine.base import Engine, SamplingParams
from claw.judge.prompts import VotePrompt
from claw.judge.rule import RuleBackend
from claw.judge.turn import Message, Turn

__all__ = [
    "SHIPPED_BACKENDS", "Backend", "OpenAIBackend", "PolicyBackend", "PromptBackend", "PromptVoter", "RuleBackend",
    "VotePrompt", "Voter", "as_voter", "build_backend",
]  # fmt: skip


@runtime_checkable
class Voter(Protocol):
    """What the judges ask of a backend: one vote on a turn per question, its own graded credit, and whether a vote
    may hang.

    A vote is text in the asking judge's answer format: `score_vote` ends in `\\boxed{1|-1|0}` (the PRM judge);
    `hint_vote` is `\\boxed{1}` with the hint between `[HINT_START]` and `[HINT_END]`, or `\\boxed{-1}` (the hint
    judge).
    """

    # True: a vote waits on something that may never answer (an endpoint, a shared engine), so the judge bounds
    # it by judge.timeout_s. False: a local computation that always ends, waited for however long it takes.
    needs_timeout: bool

    async def score_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        """One PRM vote on whether the response moved the user forward, judged by the next state."""
        ...

    async def hint_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        """One hint vote: whether the next state shows what the response should have done, and what."""
        ...

    async def own_credit(self, turn: Turn) -> float | None:
        """The turn's graded credit as the backend reads it (`judge.credit=graded`), in [-1, 1]; None when its votes
        are the credit, and the judge takes their mean."""
        ...


@runtime_checkable
class PromptBackend(Protocol):
    """A backend that completes chat prompts: a model behind an endpoint, or the colocated engine."""

    async def complete(self, messages: list[Message], temperature: float, max_tokens: int) -> str:
        """The model's reply to `messages`."""
        ...


Backend = Voter | PromptBackend  # what a judge is built with


class PromptVoter:
    """A prompt backend as a `Voter`: each vote is its completion of the asking judge's prompt for the turn. Its
    votes are its only credit, and each waits on a model that may never answer, so the judge bounds it."""

    needs_timeout = True

    def __init__(self, backend: PromptBackend) -> None:
        self.backend = backend

    async def score_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        return await self._answer(turn, prompt)

    async def hint_vote(self, turn: Turn, prompt: VotePrompt) -> str:
        return await self._answer(turn, prompt)

    async def own_credit(self, turn: Turn) -> float | None:
        return None

    async def _answer(self, turn: Turn, prompt: VotePrompt) -> str:
        return await self.backend.complete(prompt.template.render(turn), prompt.temperature, prompt.max_tokens)


def as_voter(backend: Backend) -> Voter:
    """The backend the judges ask: a `Voter` as it is, a prompt backend through `PromptVoter`."""
    return backend if isinstance(backend, Voter) else PromptVoter(backend)


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


# judge.kind → its shipped backend, in the order the docs list them. A backend of your own is named by its import
# path in its judge config instead (`backend:`, docs/judges.md#adding-a-judge-backend), with no change here.
SHIPPED_BACKENDS: dict[str, type] = {"rule": RuleBackend, "openai": OpenAIBackend, "policy": PolicyBackend}


def build_backend(kind: str, **kwargs: Any) -> Backend:
    """A shipped backend by its `judge.kind`; kwargs are its constructor's arguments."""
    if kind not in SHIPPED_BACKENDS:
        raise ValueError(f"unknown judge backend {kind!r}; choose {one_of(list(SHIPPED_BACKENDS))}")
    return SHIPPED_BACKENDS[kind](**kwargs)


def one_of(names: list[str]) -> str:
    """["a", "b", "c"] → "a, b or c": the choices an error message offers."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
