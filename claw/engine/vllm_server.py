"""`engine=vllm_server` (layout=split): the rollout engine is a vLLM OpenAI server that claw starts
as its own process (on its own devices), spoken to over HTTP on 127.0.0.1.

Here: start-up, the lifecycle, generation and scoring. Beside it, in claw/engine/: vllm_server_sync.py (the
weight hand-over and the reload thread), vllm_server_launch.py (the server's command line) and watchdog.py (the
process watching).

- generate: one streamed `/v1/completions` request per row, with the prompt as token ids,
  `return_token_ids` (the exact sampled ids, never re-tokenised text), `logprobs=0` (the sampled
  token's log-prob; the server runs with `--logprobs-mode processed_logprobs`, so it is under
  softmax(logits / T)), top_p = 1, no top-k. Row streams run in worker threads; `on_token` runs in
  the calling thread, and returning True closes that row's stream (vLLM aborts the request).
- continuous batching: the server batches by itself, so `continuous_batching = True` and the proxy
  hands each request over as its own `generate` call the moment it arrives (from its own thread); the
  server adds it to the running batch. `generate` is thread-safe: each call has its own rows, event
  queue and streams, the shared httpx client is thread-safe, and the counters are updated under a lock.
- score: `prompt_logprobs` of prompt + response, checked against the echoed ids (claw/engine/prompt_scores.py;
  T = 1 only: vLLM computes them from raw logits;
  in the split layout the teacher lives on its own device as an hf model, see docs/engines.md).
- load_weights through shared storage: the tensors are written as safetensors (+ config.json) to a
  fresh directory under `weights_dir` (RAM-backed /dev/shm by default); a sync thread then holds
  new requests back, waits for those in flight, asks the server to `reload_weights` from that
  directory (`/collective_rpc`, enabled by VLLM_SERVER_DEV_MODE=1) and to reset its prefix cache.
  So every generation comes from one version, and reports it. The trainer waits only for the write.
  One sync thread applies the written versions in version order; when several are waiting it loads
  the newest and removes the others' files, and only files older than what the server now holds are
  ever removed (never a directory a reload is reading).
  A failed reload is raised by the next `generate` / `load_weights` rather than serving old weights.
- lifecycle: the server runs in its own process group under a watcher (`claw.engine.watchdog`);
  `close()` (train.run calls it when the run ends or fails, and atexit as a last resort) stops it
  and everything it spawned; if this process is killed outright (SIGKILL, OOM), the watcher does.
  Its output goes to `log_file` (the run directory's `vllm_server.log` under train.py).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from claw.engine.base import Generation, OnToken, SamplingParams, per_row
from claw.engine.prompt_scores import read_scores, score_body
from claw.engine.vllm import save_for_vllm
from claw.engine.vllm_server_launch import free_port, server_command
from claw.engine.vllm_server_sync import ServerWeightSync
from claw.engine.watchdog import scratch_dir, watched_command

_GRACE_S = 20.0  # SIGTERM → SIGKILL for the server's process group


class VLLMServerEngine(ServerWeightSync):
    continuous_batching = True  # concurrent generate calls share the server's running batch

    def __init__(
        self,
        policy,
        seed: int = 0,
        max_batch_size: int = 64,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int = 4096,
        kv_cache_gb: float | None = None,
        devices: str | None = None,
        weights_dir: str | None = None,
        log_file: str | None = None,
        startup_timeout_s: float = 300.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        if isinstance(extra_args, str) or not all(isinstance(a, str | int | float) for a in extra_args):
            raise ValueError(
                "engine.options.extra_args must be a list of server flags, e.g. '[--tensor-parallel-size,2]' "
                f"(got {extra_args!r})"
            )
        self.tokenizer = policy.tokenizer
        self.version = 0
        self.tokens_generated = 0
        self.last_sync_s = 0.0
        root = weights_dir or ("/dev/shm" if Path("/dev/shm").is_dir() else None)
        self.dir = scratch_dir("claw-split-", root)
        self.log_file = Path(log_file) if log_file else self.dir / "server.log"
        self._closed = False
        self._error: BaseException | None = None  # a failed background reload, raised by the next call
        model_dir = save_for_vllm(policy, self.dir / "v0")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = server_command(
            policy,
            model_dir,
            self.port,
            seed=seed,
            max_batch_size=max_batch_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            kv_cache_gb=kv_cache_gb,
            extra_args=extra_args,
        )
        env = dict(os.environ, VLLM_SERVER_DEV_MODE="1")  # /collective_rpc and /reset_prefix_cache
        if devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(devices)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_file, "wb")
        # Started through claw.engine.watchdog: the API server and the engine core it spawns form one
        # process group, stopped together by close() or, if this process is killed outright, by the watcher.
        watched = watched_command(cmd, parent=os.getpid(), remove=self.dir, grace_s=_GRACE_S)
        self.proc = subprocess.Popen(
            watched, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        atexit.register(self.close)
        self.client = httpx.Client(base_url=self.url, timeout=httpx.Timeout(600.0, connect=10.0))
        self._init_sync()
        try:
            self._wait_ready(startup_timeout_s)
        except BaseException:
            self.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------
    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the vLLM server exited with {self.proc.returncode} while starting; the end of its log "
                    f"({self.log_file}):\n{self._tail()}"
                )
            try:
                if self.client.get("/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise TimeoutError(
            f"the vLLM server did not answer /health within {timeout:.0f} s (engine.options.startup_timeout_s); "
            f"the end of its log ({self.log_file}):\n{self._tail()}"
        )

    def _tail(self, n: int = 3000) -> str:
        try:
            self._log.flush()
            return self.log_file.read_bytes()[-n:].decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def _check(self) -> None:
        """Raise what went wrong behind the caller's back: a dead server, a failed reload."""
        if self._closed:
            raise RuntimeError("the vLLM server engine is closed")
        if self.proc.poll() is not None:
            raise RuntimeError(
                f"the vLLM server exited with {self.proc.returncode}; the end of its log "
                f"({self.log_file}):\n{self._tail()}"
            )
        if self._error is not None:
            raise RuntimeError(f"reloading weights into the vLLM server failed: {self._error!r}") from self._error

    def close(self) -> None:
        """Stop the server and everything it spawned (SIGTERM, SIGKILL after 20 s) and remove the weights.

        Idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self.proc.poll() is None:
            self.proc.terminate()  # the watcher stops the server's process group and exits
            try:
                self.proc.wait(_GRACE_S + 15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # a hung watcher; it is alone in its group
                self.proc.wait()
        self._written.put(None)  # stop the sync thread
        self.client.close()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sleep(self) -> None:  # the server has its own devices: nothing to release for the trainer
        pass

    def wake(self) -> None:
        pass

    # -- generation ------------------------------------------------------------------------
    def generate(
        self,
        prompts: list[list[int]],
        sampling: SamplingParams | Sequence[SamplingParams],
        on_token: OnToken | None = None,
    ) -> list[Generation]:
        rows = per_row(sampling, len(prompts))
        if any(len(p) == 0 for p in prompts):
            raise ValueError("empty prompt")
        self._check()
        import queue

        events: queue.Queue = queue.Queue()
        stop = [threading.Event() for _ in prompts]
        with self._cond:
            while self._sync_pending:
                self._cond.wait()
            self._active += 1
            version = self.version
        try:
            out = [Generation([], [], False, version) for _ in prompts]
            live = [i for i, r in enumerate(rows) if r.max_new_tokens > 0]
            threads = [
                threading.Thread(target=self._stream_row, args=(i, prompts[i], rows[i], events, stop[i]), daemon=True)
                for i in live
            ]
            for t in threads:
                t.start()
            pending = set(live)
            while pending:
                row, kind, payload = events.get()
                if kind == "error":
                    for s in stop:
                        s.set()
                    self._check()  # a dead server says so (with its log) rather than as a refused connection
                    raise payload
                if row not in pending:
                    continue
                if kind == "done":
                    out[row].finished = payload == "stop"
                    pending.discard(row)
                    continue
                tok, lp = payload
                out[row].response_ids.append(tok)
                out[row].logprobs.append(lp)
                if on_token is not None and on_token(row, tok, lp):
                    out[row].finished = True
                    stop[row].set()
                    pending.discard(row)
            with self._cond:
                self.tokens_generated += sum(len(g.response_ids) for g in out)
            return out
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def _stream_row(self, row: int, prompt: list[int], s: SamplingParams, events, stop: threading.Event) -> None:
        body = {
            "model": "policy",
            "prompt": prompt,
            "max_tokens": s.max_new_tokens,
            "temperature": max(s.temperature, 0.0),
            "top_p": 1.0,
            "top_k": 0,
            "logprobs": 0,
            "stop_token_ids": list(s.stop_token_ids),
            **({"seed": s.seed} if s.seed is not None else {}),
            "return_token_ids": True,
            "skip_special_tokens": False,
            "stream": True,
        }
        try:
            with self.client.stream("POST", "/v1/completions", json=body) as resp:
                if resp.status_code != 200:
                    raise RuntimeError(
                        f"vLLM server answered {resp.status_code}: {resp.read().decode(errors='replace')[:500]}"
                    )
                for line in resp.iter_lines():
                    if stop.is_set():
                        return  # closing the stream aborts the request on the server
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    choice = json.loads(line[6:])["choices"][0]
                    for tok, lp in zip(
                        choice.get("token_ids") or [], (choice.get("logprobs") or {}).get("token_logprobs") or []
                    ):
                        events.put((row, "token", (int(tok), float(lp))))
                    if choice.get("finish_reason"):
                        events.put((row, "done", choice["finish_reason"]))
                        return
        except BaseException as e:
            events.put((row, "error", e))

    # -- scoring ---------------------------------------------------------------------------
    def score(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0
    ) -> list[list[float]]:
        return [lp for lp, _, _ in self.score_topk(prompts, responses, temperature, 0)]

    def score_topk(self, prompts, responses, temperature: float, k: int):
        if temperature != 1.0:
            raise ValueError(
                "engine=vllm_server scores at T = 1 only "
                f"(vLLM's prompt log-probs come from raw logits), asked for T = {temperature}; "
                "score with an hf teacher (mode.teacher=frozen or a checkpoint path) or sample at T = 1"
            )
        out = []
        for p, r in zip(prompts, responses):
            if not r:
                out.append(([], [] if k else None, [] if k else None))
                continue
            resp = self.client.post("/v1/completions", json=score_body("policy", p, r, k))
            resp.raise_for_status()
            out.append(read_scores(resp.json(), p, r, k))
        return out
