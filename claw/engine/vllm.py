"""`engine=vllm`: vLLM in-process, colocated with the trainer, driven by one engine thread.

Why one engine thread around the offline engine rather than `vllm.LLM.generate` or `AsyncLLM`:
- `LLM.generate` is synchronous and not thread-safe, and returns only whole completions; the proxy
  needs tokens as they are sampled, and several callers (proxy, dataset source, evaluation) at once.
- `AsyncLLM` on CPU always runs its engine core in a separate process, where the weights can only
  be reloaded from files (docs/engines.md). In-process, `reload_weights` takes the tensors directly.
So a single thread owns `llm.llm_engine` and loops `add_request` / `step()` with DELTA outputs:
requests from any caller join the running batch at the next step (continuous batching), and each
call's tokens are handed back, as they come, to the thread that called `generate`, which runs
`on_token` (and aborts a row when it returns True).

Weights: `load_weights` stages a copy and returns. The engine thread stops admitting requests,
lets those in flight finish, then reloads in place and resets the prefix cache (stale KV from the
old policy must not be reused). So a request never sees half-updated weights, every token of a
generation comes from one policy version, and that version is reported with it. vLLM's
`model.load_weights` fails in fp32 on CPU (oneDNN pre-packs linear weights); the worker's
`reload_weights(weights_iterator=...)` re-runs the post-load processing and works in fp32 and bf16.

Log-probs: `logprobs_mode="processed_logprobs"` with top_p = 1 and no top-k, so each sampled
token's log-prob is under softmax(logits / T), the distribution it was sampled from (greedy rows:
T = 1, as in the hf engine). Teacher-forced `score` at T = 1 uses vLLM's prompt log-probs, which
vLLM computes from the raw logits; at T ≠ 1 a single T = 1 log-prob cannot be rescaled, so those
calls go to an hf scorer over the same weights (a second copy of the policy, kept in sync).

Sleep (GPU only): `sleep()` drains requests, then `llm.sleep(level)`; new requests wait until
`wake()`. A weight load while asleep wakes the weights first (loading into unmapped memory is
the bug TRL hit), and `wake()` then wakes the KV cache.

Here: the callers' side and the engine thread, which owns the request table. Beside it, in claw/engine/:
vllm_weights.py (weight loads and sleep, applied by the engine thread between requests), vllm_requests.py
(the table's calls and requests, vLLM's parameters, log-probs read from its outputs) and vllm_setup.py
(start-up: whether vLLM can serve the model, the engine's options, the weights directory).
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import shutil
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # keep the model in this process (reachable for reload)

import torch

from claw.engine.base import AdapterTable, Generation, OnToken, SamplingParams, ServedAdapter, per_row
from claw.engine.vllm_requests import (
    STOP,
    Call,
    Request,
    fail_all,
    fail_items,
    lora_request,
    response_scores,
    sampled_logprobs,
    sampling_params,
    score_params,
)
from claw.engine.vllm_setup import (
    CPU_HEAD_SIZES,
    CPU_KV_CACHE_GB,
    TESTED_VLLM,
    VLLMUnavailable,
    save_for_vllm,
    save_policy,
    start_llm,
    unshared,
    vllm_problem,
)
from claw.engine.vllm_weights import WeightSyncAndSleep

__all__ = [
    "CPU_HEAD_SIZES",
    "CPU_KV_CACHE_GB",
    "TESTED_VLLM",
    "VLLMEngine",
    "VLLMUnavailable",
    "save_for_vllm",
    "unshared",
    "vllm_problem",
]


class VLLMEngine(WeightSyncAndSleep):
    def __init__(
        self,
        policy,
        seed: int = 0,
        max_batch_size: int = 64,
        gpu_memory_utilization: float = 0.3,
        enforce_eager: bool | None = None,
        max_model_len: int = 4096,
        kv_cache_gb: float | None = None,
        sleep_level: int = 0,
        weights_dir: str | None = None,
        continuous_batching: bool = True,
        score_batch_size: int | None = 8,
        adapters: dict | None = None,
    ) -> None:
        """`adapters` (personalize=per_user): {max_resident, rank}: each request is decoded with its user's
        promoted LoRA adapter (`serve_adapter`), at most `max_resident` of them held at once (least recently used
        out, vLLM's own cache); None serves one policy."""
        problem = vllm_problem(policy.model.config)
        if problem:
            raise VLLMUnavailable(problem)
        if sleep_level not in (0, 1, 2):
            raise ValueError(f"sleep_level={sleep_level}: 0 (never sleep), 1 (offload weights) or 2 (discard weights)")
        self.tokenizer = policy.tokenizer
        # True: concurrent generate() calls share the running batch, so the proxy hands each request
        # over at once. False: the proxy groups waiting requests into one call and answers them
        # together when it ends, as with hf (no request returns sooner for being shorter).
        self.continuous_batching = continuous_batching
        self.version = 0
        self.sleep_level = sleep_level if torch.cuda.is_available() else 0  # vLLM's CPU worker has no sleep mode
        self.tokens_generated = 0
        self.last_sync_s = 0.0  # wall time of the last in-place reload (the trainer only waits for staging)
        self._dir = save_policy(policy, weights_dir)
        self.llm = start_llm(
            policy,
            self._dir,
            seed=seed,
            max_batch_size=max_batch_size,
            gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=enforce_eager,
            max_model_len=max_model_len,
            kv_cache_gb=kv_cache_gb,
            sleep_mode=self.sleep_level > 0,
            adapters=adapters,
        )
        self.adapters = AdapterTable() if adapters else None
        self._engine = self.llm.llm_engine
        self._worker = self._engine.model_executor.driver_worker.worker
        # Scoring at T != 1 needs full logits: an hf copy of the policy, built now (before LoRA wraps
        # the trainer's model) and synced with every load. It costs one more copy of the weights.
        from claw.engine.hf import HFEngine

        self._hf_scorer = HFEngine(policy, seed=seed, max_batch_size=max_batch_size, score_batch_size=score_batch_size)
        self._ids = itertools.count()
        self._inbox: queue.Queue = queue.Queue()
        self._staged: tuple[dict[str, torch.Tensor], int] | None = None
        self._staged_lock = threading.Lock()
        self._asleep = False
        self._weights_awake = True
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="claw-vllm-engine", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- public protocol -------------------------------------------------------------------
    def generate(
        self,
        prompts: list[list[int]],
        sampling: SamplingParams | Sequence[SamplingParams],
        on_token: OnToken | None = None,
    ) -> list[Generation]:
        """Decode every prompt; tokens reach `on_token` (in this thread) as the engine samples them."""
        rows = per_row(sampling, len(prompts))
        if any(len(p) == 0 for p in prompts):
            raise ValueError("empty prompt")
        out = [Generation([], [], False, self.version) for _ in prompts]
        live = [i for i, r in enumerate(rows) if r.max_new_tokens > 0]
        if not live:
            return out
        call = Call([Request(i, list(prompts[i]), sampling_params(rows[i]), rows[i].user) for i in live])
        ids = self._submit(call)
        pending = set(live)
        while pending:
            row, item = call.events.get()
            if isinstance(item, BaseException):
                self._abort([ids[r] for r in pending])
                raise item
            if row not in pending:  # tokens that raced with an abort
                continue
            gen = out[row]
            completion = item.outputs[0]
            stopped = False
            for tok, lp in zip(completion.token_ids, sampled_logprobs(completion)):
                gen.response_ids.append(tok)
                gen.logprobs.append(lp)
                if on_token is not None and on_token(row, tok, lp):
                    stopped = True
                    break
            if stopped:
                gen.finished = True
                pending.discard(row)
                self._abort([ids[row]])
            elif item.finished:
                gen.finished = completion.finish_reason == "stop"
                pending.discard(row)
        for r in call.requests:
            out[r.row].policy_version = r.version
        for gen in out:
            self.tokens_generated += len(gen.response_ids)
        return out

    def serve_adapter(self, user: str, version: int, path: str) -> ServedAdapter:
        """From now on `user`'s requests decode with the adapter saved at `path` (a PEFT directory) as `version`;
        requests already admitted finish with the one they started with."""
        if self.adapters is None:
            raise RuntimeError("this engine serves one policy: start it with adapters={...} (personalize=per_user)")
        return self.adapters.promote(user, version, path)

    def score(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0
    ) -> list[list[float]]:
        """log π(response_t | prompt, response_<t) at `temperature`, one list per response."""
        return [lp for lp, _, _ in self.score_topk(prompts, responses, temperature, 0)]

    def score_topk(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float, k: int
    ) -> list[tuple[list[float], list[list[int]] | None, list[list[float]] | None]]:
        """Per response: its token log-probs and (k > 0) the top-k ids and log-probs at each position.

        T = 1: vLLM's prompt log-probs (raw logits). T ≠ 1: the hf scorer, since vLLM's prompt
        log-probs skip the sampling processors and one T = 1 log-prob cannot be rescaled."""
        if temperature != 1.0:
            return self._hf_scorer.score_topk(prompts, responses, temperature, k)
        out: list = [([], [] if k else None, [] if k else None) for _ in prompts]
        live = [i for i, r in enumerate(responses) if r]
        if not live:
            return out
        params = score_params(k)
        call = Call([Request(i, list(prompts[i]) + list(responses[i]), params) for i in live])
        self._submit(call)
        for _ in live:
            row, item = call.events.get()
            if isinstance(item, BaseException):
                raise item
            out[row] = response_scores(item.prompt_logprobs, len(prompts[row]), responses[row], k)
        return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put(STOP)
        self._thread.join(timeout=30)
        self._fail_posted(RuntimeError("the vLLM engine was closed"))  # what was posted as it stopped
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- caller side -----------------------------------------------------------------------
    def _submit(self, call: Call) -> dict[int, str]:
        if self._closed:
            raise RuntimeError("the vLLM engine is closed")
        ids = {r.row: f"claw-{next(self._ids)}" for r in call.requests}
        self._inbox.put(("add", call, ids))
        return ids

    def _abort(self, request_ids: list[str]) -> None:
        self._inbox.put(("abort", request_ids))

    def _run_on_engine(
        self,
        fn: Callable[[], object],
        timeout: float | None = None,
        after_drain: bool = False,
        after_sync: bool = False,
    ):
        fut: Future = Future()
        self._inbox.put(("run", fn, fut, after_drain, after_sync))
        return fut.result(timeout)

    # -- engine thread ---------------------------------------------------------------------
    def _loop(self) -> None:
        """Owns `llm_engine`. Admits requests unless weights are staged or sleep is wanted (then it
        drains first), swaps weights between requests, steps, and routes outputs to their calls."""
        inflight: dict[str, tuple[Call, int]] = {}
        waiting: list[tuple[Call, dict[int, str]]] = []
        deferred: list[tuple] = []  # ("run", ...) items waiting for a drain or a sync
        while True:
            # Nothing to step, swap or run: wait for the inbox. Requests held while asleep wait too (wake()
            # and load_weights post to the inbox) instead of spinning on it.
            block = not inflight and not deferred and self._staged is None and (not waiting or self._asleep)
            try:
                items = [self._inbox.get()] if block else []
                while True:
                    items.append(self._inbox.get_nowait())
            except queue.Empty:
                pass
            for k, item in enumerate(items):
                if item is STOP:  # every caller still waiting gets an error, none waits for ever
                    closed = RuntimeError("the vLLM engine was closed")
                    fail_all(inflight, waiting, closed)
                    for _, _, fut, _, _ in deferred:
                        fut.set_exception(closed)
                    fail_items(items[k + 1 :], closed)
                    self._fail_posted(closed)
                    return
                if item is None:
                    continue
                if item[0] == "add":
                    waiting.append((item[1], item[2]))
                elif item[0] == "abort":
                    gone = [i for i in item[1] if i in inflight]
                    for i in gone:
                        del inflight[i]
                    if gone:
                        self._engine.abort_request(gone)
                elif item[0] == "run":
                    deferred.append(item)
            try:
                draining = self._staged is not None or any(d[3] for d in deferred)
                if not inflight and self._staged is not None:
                    self._apply_staged()
                if not inflight:
                    deferred = self._run_deferred(deferred)
                if waiting and not draining and not self._asleep:
                    for call, ids in waiting:
                        call.version = self.version
                        try:
                            for r in call.requests:
                                adapter = self.adapters.get(r.user) if self.adapters is not None else None
                                r.version = self.version if adapter is None else adapter.version
                                self._engine.add_request(
                                    ids[r.row],
                                    {"prompt_token_ids": r.prompt},
                                    r.params,
                                    lora_request=lora_request(adapter),
                                )
                                inflight[ids[r.row]] = (call, r.row)
                        except (
                            Exception
                        ) as e:  # a bad request (prompt longer than max_model_len, ...) fails its own call only
                            added = [i for i in ids.values() if i in inflight]
                            for i in added:
                                del inflight[i]
                            if added:
                                self._engine.abort_request(added)
                            call.events.put((call.requests[0].row, e))
                    waiting = []
                if inflight:
                    for o in self._engine.step():
                        owner = inflight.get(o.request_id)
                        if owner is None:
                            continue
                        owner[0].events.put((owner[1], o))
                        if o.finished:
                            del inflight[o.request_id]
            except BaseException as e:  # never leave a caller waiting on a dead engine
                fail_all(inflight, waiting, e)
                if inflight:
                    self._engine.abort_request(list(inflight))
                inflight, waiting = {}, []

    def _run_deferred(self, deferred: list[tuple]) -> list[tuple]:
        """Run queued engine-thread functions whose condition holds (nothing in flight; synced)."""
        keep = []
        for item in deferred:
            _, fn, fut, _after_drain, after_sync = item
            if after_sync and self._staged is not None:
                keep.append(item)
                continue
            try:
                fut.set_result(fn())
            except BaseException as e:
                fut.set_exception(e)
        return keep

    def _fail_posted(self, error: BaseException) -> None:
        """Fail what is still in the inbox (a call posted while the engine stopped)."""
        items = []
        try:
            while True:
                items.append(self._inbox.get_nowait())
        except queue.Empty:
            pass
        fail_items(items, error)
