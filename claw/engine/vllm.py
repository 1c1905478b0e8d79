"""`engine=vllm`: vLLM in-process, colocated with the trainer, driven by one engine thread.

(Longer than claw's ~350-line norm on purpose: the engine thread, sleep/wake and the in-place weight
reload share one lock and one request table; split into files, their ordering rules would be harder to
see, not easier.)

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
"""

from __future__ import annotations

import atexit
import copy
import itertools
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # keep the model in this process (reachable for reload)

import torch

from claw.engine.base import Generation, OnToken, SamplingParams, per_row
from claw.engine.watchdog import scratch_dir

TESTED_VLLM = "0.32."  # the private paths used here (worker.reload_weights, llm_engine.step) are pinned to it
CPU_KV_CACHE_GB = 2.0  # SmolLM2-135M fp32: ~46 KB per token, so ~45k tokens
# vLLM's CPU attention kernels (vllm/v1/attention/backends/cpu_attn.py, 0.32)
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)


class VLLMUnavailable(RuntimeError):
    """vLLM cannot serve this model here; the message names the fix."""


def vllm_problem(model_config) -> str | None:
    """Why vLLM cannot run this model on this machine, or None when it can (what `engine=auto` asks)."""
    try:
        import vllm
    except Exception as e:  # ImportError, or a broken install (torchvision beside the CPU torch)
        return (
            f"vLLM is not importable ({type(e).__name__}: {e}); "
            "install it with `make install-vllm` (CPU) or `pip install -e .[vllm]` (GPU)"
        )
    if not vllm.__version__.startswith(TESTED_VLLM):
        return (
            f"vLLM {vllm.__version__} is installed; "
            f"claw's engine reaches its internals and was tested with {TESTED_VLLM}.x only"
        )
    if not torch.cuda.is_available():
        head = getattr(model_config, "head_dim", None) or model_config.hidden_size // model_config.num_attention_heads
        if head not in CPU_HEAD_SIZES:
            return (
                f"vLLM's CPU attention supports head sizes {CPU_HEAD_SIZES}, this model has {head}; "
                "for the tiny test model use model.num_heads=2 model.num_kv_heads=1 (head size 32), or engine=hf"
            )
    return None


@dataclass
class _Request:
    """One vLLM request of a call; `row` indexes the call's prompts."""

    row: int
    prompt: list[int]
    params: object  # vllm.SamplingParams


@dataclass
class _Call:
    """The requests of one `generate`/`score` call and the channel back to its thread."""

    requests: list[_Request]
    events: queue.Queue = field(default_factory=queue.Queue)  # (row, RequestOutput | Exception)
    version: int = -1


_STOP = object()


class VLLMEngine:
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
    ) -> None:
        problem = vllm_problem(policy.model.config)
        if problem:
            raise VLLMUnavailable(problem)
        if sleep_level not in (0, 1, 2):
            raise ValueError(f"sleep_level={sleep_level}: 0 (never sleep), 1 (offload weights) or 2 (discard weights)")
        from vllm import LLM

        self.tokenizer = policy.tokenizer
        # True: concurrent generate() calls share the running batch, so the proxy hands each request
        # over at once. False: the proxy groups waiting requests into one call and answers them
        # together when it ends, as with hf (no request returns sooner for being shorter).
        self.continuous_batching = continuous_batching
        self.version = 0
        self.sleep_level = sleep_level if torch.cuda.is_available() else 0  # vLLM's CPU worker has no sleep mode
        self.tokens_generated = 0
        self.last_sync_s = 0.0  # wall time of the last in-place reload (the trainer only waits for staging)
        self._dir = _save_policy(policy, weights_dir)
        on_gpu = torch.cuda.is_available()
        dtype = str(policy.model.dtype).removeprefix("torch.")
        if kv_cache_gb is None and not on_gpu:
            # vLLM's CPU worker sizes the KV cache as gpu_memory_utilization × node memory minus what this
            # process already uses, and colocated, that includes the trainer (policy, optimizer, teacher):
            # it goes negative at start-up. A fixed size avoids that (and skips a warm-up pass).
            kv_cache_gb = CPU_KV_CACHE_GB
        extra = {"kv_cache_memory_bytes": int(kv_cache_gb * 2**30)} if kv_cache_gb else {}
        set_threads = torch.set_num_threads  # vLLM's CPU worker replaces it with a no-op; the trainer needs it back
        self.llm = LLM(
            model=str(self._dir),
            tokenizer=str(self._dir),
            dtype=dtype,
            seed=seed,
            max_num_seqs=max_batch_size,
            max_model_len=min(max_model_len, policy.model.config.max_position_embeddings),
            gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=(not on_gpu) if enforce_eager is None else enforce_eager,
            logprobs_mode="processed_logprobs",
            enable_sleep_mode=self.sleep_level > 0,
            enable_prefix_caching=True,
            **extra,
        )
        torch.set_num_threads = set_threads
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
        call = _Call([_Request(i, list(prompts[i]), self._vllm_params(rows[i])) for i in live])
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
            for tok, lp in zip(completion.token_ids, _sampled_logprobs(completion)):
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
        for gen in out:
            gen.policy_version = call.version
            self.tokens_generated += len(gen.response_ids)
        return out

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
        from vllm import SamplingParams as VSP

        out: list = [([], [] if k else None, [] if k else None) for _ in prompts]
        live = [i for i, r in enumerate(responses) if r]
        if not live:
            return out
        params = VSP(max_tokens=1, temperature=1.0, prompt_logprobs=k, detokenize=False, output_kind=_final_kind())
        call = _Call([_Request(i, list(prompts[i]) + list(responses[i]), params) for i in live])
        self._submit(call)
        for _ in live:
            row, item = call.events.get()
            if isinstance(item, BaseException):
                raise item
            out[row] = _response_scores(item.prompt_logprobs, len(prompts[row]), responses[row], k)
        return out

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Stage a copy of the new weights and return; the engine thread swaps them in between requests."""
        staged = {name: t.detach().clone() for name, t in named_tensors}
        with self._staged_lock:
            self._staged = (staged, version)
        self._hf_scorer.load_weights(staged.items(), version)
        self._inbox.put(None)  # wake the loop

    def wait_synced(self, timeout: float | None = None) -> None:
        """Block until staged weights are live (benchmarks and tests; training never waits)."""
        self._run_on_engine(lambda: None, timeout, after_sync=True)

    def sleep(self) -> None:
        """Release the GPU memory of weights (level 1: offloaded, 2: discarded) and KV cache.

        No-op without sleep mode."""
        if self.sleep_level:
            self._run_on_engine(self._do_sleep, after_drain=True)

    def wake(self) -> None:
        if self.sleep_level:
            self._run_on_engine(self._do_wake)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._inbox.put(_STOP)
        self._thread.join(timeout=30)
        self._fail_posted(RuntimeError("the vLLM engine was closed"))  # what was posted as it stopped
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- caller side -----------------------------------------------------------------------
    def _vllm_params(self, r: SamplingParams):
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

    def _submit(self, call: _Call) -> dict[int, str]:
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
        inflight: dict[str, tuple[_Call, int]] = {}
        waiting: list[tuple[_Call, dict[int, str]]] = []
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
                if item is _STOP:  # every caller still waiting gets an error, none waits for ever
                    closed = RuntimeError("the vLLM engine was closed")
                    self._fail_all(inflight, waiting, closed)
                    for _, _, fut, _, _ in deferred:
                        fut.set_exception(closed)
                    self._fail_items(items[k + 1 :], closed)
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
                                self._engine.add_request(ids[r.row], {"prompt_token_ids": r.prompt}, r.params)
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
                self._fail_all(inflight, waiting, e)
                if inflight:
                    self._engine.abort_request(list(inflight))
                inflight, waiting = {}, []

    def _apply_staged(self) -> None:
        with self._staged_lock:
            staged, self._staged = self._staged, None
        tensors, version = staged
        t0 = time.perf_counter()
        if self._asleep:
            self.llm.wake_up(tags=["weights"])  # load into mapped memory
        self._worker.reload_weights(weights_iterator=iter(tensors.items()))
        self.llm.reset_prefix_cache()
        self.version = version
        self.last_sync_s = time.perf_counter() - t0
        self._weights_awake = True

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

    def _do_sleep(self) -> None:
        if not self._asleep:
            self.llm.sleep(level=self.sleep_level)
            self._asleep = True
            self._weights_awake = False

    def _do_wake(self) -> None:
        if not self._asleep:
            return
        if not self._weights_awake:
            if self.sleep_level == 2:
                raise RuntimeError(
                    "sleep level 2 discarded the weights and none were loaded since; load_weights before wake()"
                )
            self.llm.wake_up(tags=["weights"])
        self.llm.wake_up(tags=["kv_cache"])
        self._asleep = False

    def _fail_posted(self, error: BaseException) -> None:
        """Fail what is still in the inbox (a call posted while the engine stopped)."""
        items = []
        try:
            while True:
                items.append(self._inbox.get_nowait())
        except queue.Empty:
            pass
        self._fail_items(items, error)

    @staticmethod
    def _fail_items(items: list, error: BaseException) -> None:
        for item in items:
            if item is None or item is _STOP:
                continue
            if item[0] == "add":
                for r in item[1].requests:
                    item[1].events.put((r.row, error))
            elif item[0] == "run" and not item[2].done():
                item[2].set_exception(error)

    @staticmethod
    def _fail_all(inflight: dict, waiting: list, error: BaseException) -> None:
        for call, row in inflight.values():
            call.events.put((row, error))
        for call, _ in waiting:
            for r in call.requests:
                call.events.put((r.row, error))


def _delta_kind():
    from vllm.sampling_params import RequestOutputKind

    return RequestOutputKind.DELTA


def _final_kind():
    from vllm.sampling_params import RequestOutputKind

    return RequestOutputKind.FINAL_ONLY


def _sampled_logprobs(completion) -> list[float]:
    """The log-prob of each sampled token (vLLM returns a {token: Logprob} dict per position)."""
    return [d[t].logprob for t, d in zip(completion.token_ids, completion.logprobs)]


def _response_scores(prompt_logprobs, prompt_len: int, response: list[int], k: int):
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


def unshared(named_tensors: Iterable[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """CPU tensors under every name, a copy where storage is shared. safetensors refuses shared
    storage, and vLLM needs both names of tied weights: it loads the embedding from
    `embed_tokens` and its CPU LM head keeps a separately processed copy that `lm_head` refreshes."""
    out, seen = {}, set()
    for name, t in named_tensors:
        t = t.detach().to("cpu")
        out[name] = t.clone() if t.data_ptr() in seen else t.contiguous()
        seen.add(t.data_ptr())
    return out


def save_for_vllm(policy, directory: Path) -> Path:
    """Weights (safetensors), config and tokenizer in a directory vLLM can load.

    Not `save_pretrained`: it refuses a model whose config still records the GGUF it came from (the
    embedded SmolLM2), and the weights here are plain tensors either way."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    config = copy.deepcopy(policy.model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.save_pretrained(directory)
    save_file(unshared(policy.model.state_dict().items()), str(directory / "model.safetensors"))
    policy.tokenizer.save_pretrained(directory)
    return directory


def _save_policy(policy, weights_dir: str | None) -> Path:
    """vLLM loads from a directory: in RAM (/dev/shm) when there is one."""
    root = weights_dir or ("/dev/shm" if Path("/dev/shm").is_dir() else None)
    return save_for_vllm(policy, scratch_dir("claw-vllm-", root))  # a crashed run's directory is removed here
