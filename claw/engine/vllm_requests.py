"""`engine=vllm`'s request table: the calls that callers post to the engine thread (`Call`, one `Request` per
row), how each is failed when the engine cannot serve it, vLLM's sampling parameters for a row, and the
log-probs read back out of vLLM's outputs."""

from __future__ import annotations

import queue
from dataclasses import dataclass, field

from claw.engine.base import SamplingParams


@dataclass
class Request:
    """One vLLM request of a call; `row` indexes the call's prompts."""

    row: int
    prompt: list[int]
    params: object  # vllm.SamplingParams
    user: str | None = None  # whose adapter decodes it (engines serving per-user adapters)
    version: int = -1  # the policy version it is decoded with, set when the engine admits it


@dataclass
class Call:
    """The requests of one `generate`/`score` call and the channel back to its thread."""

    requests: list[Request]
    events: queue.Queue = field(default_factory=queue.Queue)  # (row, RequestOutput | Exception)
    version: int = -1


STOP = object()  # posted by close(): the engine thread fails what is left and ends


def fail_items(items: list, error: BaseException) -> None:
    """Fail inbox items that never reached the engine: posted calls and engine-thread functions."""
    for item in items:
        if item is None or item is STOP:
            continue
        if item[0] == "add":
            for r in item[1].requests:
                item[1].events.put((r.row, error))
        elif item[0] == "run" and not item[2].done():
            item[2].set_exception(error)


def fail_all(inflight: dict, waiting: list, error: BaseException) -> None:
    """Fail every row in the engine (`inflight`) and every call waiting to enter it."""
    for call, row in inflight.values():
        call.events.put((row, error))
    for call, _ in waiting:
        for r in call.requests:
            call.events.put((r.row, error))


def sampling_params(r: SamplingParams):
    """vLLM's sampling parameters for a row: softmax(logits / T) with top_p = 1, no top-k, tokens as deltas."""
    from vllm import SamplingParams as VSP

    return VSP(
        temperature=max(r.temperature, 0.0),
        top_p=1.0,
        top_k=0,
        max_tokens=r.max_new_tokens,
        stop_token_ids=list(r.stop_token_ids),
        logprobs=0,  # the sampled token's log-prob only
        detokenize=False,
        output_kind=_delta_kind(),
        seed=r.seed,
    )


def lora_request(adapter):
    """vLLM's `LoRARequest` for a served adapter (claw/engine/base.py `ServedAdapter`); None: the base weights."""
    if adapter is None:
        return None
    from vllm.lora.request import LoRARequest

    return LoRARequest(f"{adapter.user}@{adapter.version}", adapter.lora_id, adapter.path)


def score_params(k: int):
    """vLLM's parameters for teacher forcing at T = 1: the prompt's log-probs (and top-k), one token decoded."""
    from vllm import SamplingParams as VSP

    return VSP(max_tokens=1, temperature=1.0, prompt_logprobs=k, detokenize=False, output_kind=_final_kind())


def _delta_kind():
    from vllm.sampling_params import RequestOutputKind

    return RequestOutputKind.DELTA


def _final_kind():
    from vllm.sampling_params import RequestOutputKind

    return RequestOutputKind.FINAL_ONLY


def sampled_logprobs(completion) -> list[float]:
    """The log-prob of each sampled token (vLLM returns a {token: Logprob} dict per position)."""
    return [d[t].logprob for t, d in zip(completion.token_ids, completion.logprobs)]


def response_scores(prompt_logprobs, prompt_len: int, response: list[int], k: int):
    """Slice vLLM's per-position prompt log-probs down to the response tokens (and their top-k)."""
    entries = prompt_logprobs[prompt_len : prompt_len + len(response)]
    lps = [d[t].logprob for t, d in zip(response, entries)]
    if not k:
        return lps, None, None
    top_ids, top_lps = [], []
    for d in entries:
        best = sorted((lp.rank, t, lp.logprob) for t, lp in d.items() if lp.rank is not None and lp.rank <= k)[:k]
        top_ids.append([t for _, t, _ in best])
        top_lps.append([lp for _, _, lp in best])
    return lps, top_ids, top_lps
