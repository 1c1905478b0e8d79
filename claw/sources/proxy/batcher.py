"""Concurrent requests → batched engine calls, with token streaming.

One serving thread owns the engine for the proxy. Requests from the HTTP handlers (an asyncio
loop) go into a bounded waiting list; the thread takes everything waiting (up to
`max_batch_size`, after a short `window_s` so near-simultaneous requests share a call), runs one
`engine.generate` with one SamplingParams per row, and pushes every token to its request's
asyncio queue as it is sampled (`on_token`). So 16 concurrent sessions cost one batched decode,
not 16 sequential ones.

A request waits only while the engine is busy (a batch in flight, a weight swap); the tokens of one
request all come from one generation call, so from one policy version (the engine swaps weights
only between calls).

An engine that batches by itself (`engine.continuous_batching`, vLLM) gets every request as its own
call the moment it arrives, from its own thread: it joins the running batch at the next step. Such
an engine can still hold a request back (vLLM drains and reloads weights before admitting more), so
there a request counts as *started* at its first token, not when it was handed over.

Bounded waits, on every engine. The handler waits for the first token with a deadline
(`first_item`): a request not started within `max_wait_s` is withdrawn and answered 503 with
Retry-After at that moment — not when the batch in flight ends or the reload is over. Withdrawing
is atomic with the serving thread's take (one lock), so a request is either started or answered
503, never both. A continuous engine's held request cannot be taken back from the engine: it is
cancelled and ends at its first token. `max_waiting` caps every request not started yet — those
in the waiting list and those an engine holds back, abandoned ones included until their call ends —
so a full engine answers 503 at once rather than piling requests up behind a drain.

Canary traffic (claw/guard/canary.py, engine=hf): a request routed to the candidate (`Job.canary`) is
decoded by the engine's canary weights. The thread splits what it takes by arm and makes one engine
call per arm, so no call mixes the two weight sets.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from claw.engine.base import Engine, Generation, SamplingParams
from claw.sources.proxy.protocol import APIError
from claw.sources.proxy.telemetry import WINDOW

log = logging.getLogger(__name__)

_END = object()


@dataclass(eq=False)
class Job:
    prompt_ids: list[int]
    sampling: SamplingParams
    loop: asyncio.AbstractEventLoop
    tokens: asyncio.Queue = field(
        default_factory=asyncio.Queue
    )  # (token_id, logprob) ... then a Generation or an exception
    enqueued: float = field(default_factory=time.monotonic)
    started: float | None = None  # when its engine call began (hf) or its first token came (continuous engines)
    cancelled: bool = (
        False  # set by the handler (client went away, stop string matched): the row ends at its next token
    )
    batch_size: int = 0  # how many rows shared the engine call
    stops: list[str] = field(default_factory=list)  # stop strings: the row ends at the token that completes one
    ids: list[int] = field(default_factory=list)  # tokens sampled so far (engine thread)
    canary: bool = False  # decode with the engine's canary weights (a session in a canary's candidate arm)

    def emit(self, item) -> None:
        try:
            self.loop.call_soon_threadsafe(self.tokens.put_nowait, item)
        except RuntimeError:  # the server's loop is closed (shut down): nobody is waiting for this request
            pass


class Batcher:
    def __init__(
        self,
        engine: Engine,
        tokenizer=None,
        max_batch_size: int = 32,
        window_s: float = 0.02,
        max_wait_s: float = 120.0,
        max_waiting: int = 256,
    ) -> None:
        self.engine, self.tokenizer = engine, tokenizer
        self.max_batch_size, self.window_s, self.max_wait_s, self.max_waiting = (
            max_batch_size,
            window_s,
            max_wait_s,
            max_waiting,
        )
        self._waiting: deque[Job] = deque()
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, name="claw-proxy-engine", daemon=True)
        # measurements (read by /metrics, the tests and the benchmark)
        self.batches = 0
        self.batch_sizes: deque[int] = deque(maxlen=WINDOW)  # the last WINDOW engine calls
        self.on_batch: Callable[[list[float]], None] | None = (
            None  # each engine call's queue waits (claw/sources/proxy/telemetry.py)
        )
        self.in_flight = 0  # requests accepted and not yet finished (waiting + generating)
        self.peak_in_flight = 0
        self.queue_waits: deque[float] = deque(maxlen=WINDOW)
        self.rejected = 0
        self.held = 0  # continuous engines: requests handed over whose call has produced no token yet

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            for job in self._waiting:
                job.emit(
                    APIError(503, "the server is shutting down", code="shutting_down", headers={"Retry-After": "5"})
                )
            self._waiting.clear()
            self._cond.notify_all()
        self._thread.join(timeout=30)

    def submit(
        self, prompt_ids: list[int], sampling: SamplingParams, stops: list[str] | None = None, canary: bool = False
    ) -> Job:
        if stops and self.tokenizer is None:
            raise ValueError("stop strings need the batcher's tokenizer")
        job = Job(prompt_ids, sampling, asyncio.get_running_loop(), stops=list(stops or []), canary=canary)
        with self._cond:
            if self._stop:
                raise APIError(503, "the server is shutting down", code="shutting_down", headers={"Retry-After": "5"})
            if len(self._waiting) + self.held >= self.max_waiting:
                self.rejected += 1
                raise APIError(
                    503,
                    f"{len(self._waiting) + self.held} requests are already waiting for the engine; retry shortly",
                    code="overloaded",
                    headers={"Retry-After": "2"},
                )
            self._waiting.append(job)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self._cond.notify_all()
        return job

    def done(self, job: Job) -> None:
        with self._cond:
            self.in_flight -= 1

    async def first_item(self, job: Job):
        """The job's first item (a token, its Generation, or an error); a 503 if it has not started by `max_wait_s`."""
        remaining = job.enqueued + self.max_wait_s - time.monotonic()
        try:
            return await asyncio.wait_for(job.tokens.get(), timeout=max(remaining, 0.0))
        except TimeoutError:
            if self.expire(job):
                raise self._busy() from None
        return (
            await job.tokens.get()
        )  # it started meanwhile (or the serving thread answered it): its item is on the way

    def expire(self, job: Job) -> bool:
        """Withdraw a job that has not started: True if it was (it must then be answered 503)."""
        with self._cond:
            if job.started is not None or job.cancelled:
                return False
            if job in self._waiting:
                self._waiting.remove(job)
            job.cancelled = True  # a continuous engine holding it ends it at its first token
            self.rejected += 1
            return True

    def _busy(self) -> APIError:
        return APIError(
            503,
            f"the engine was busy for more than {self.max_wait_s:g}s; retry",
            code="busy",
            headers={"Retry-After": "5"},
        )

    # -- the serving thread ---------------------------------------------------------------------
    def _take(self, continuous: bool = False) -> list[Job]:
        with self._cond:
            self._cond.wait_for(lambda: self._stop or self._waiting)
            if self._stop:
                return []
        time.sleep(self.window_s)  # let near-simultaneous requests join this call
        now = time.monotonic()
        jobs: list[Job] = []
        with self._cond:
            while self._waiting and len(jobs) < self.max_batch_size:
                job = self._waiting.popleft()
                if job.cancelled:
                    job.emit(_END)
                    continue
                if now - job.enqueued > self.max_wait_s:  # its handler is answering 503 right now
                    job.cancelled = True
                    self.rejected += 1
                    job.emit(self._busy())
                    continue
                if continuous:
                    self.held += 1
                else:
                    job.started = now
                jobs.append(job)
        return jobs

    def _serve(self) -> None:
        continuous = getattr(self.engine, "continuous_batching", False)
        while True:
            jobs = self._take(continuous)
            if not jobs:
                with self._cond:
                    if self._stop:
                        return
                continue
            if continuous:  # the engine batches by itself (vLLM): every request joins the running batch at once
                for job in jobs:
                    threading.Thread(
                        target=self._run, args=([job], True), name="claw-proxy-request", daemon=True
                    ).start()
            else:  # hf: one engine call for everything that was waiting (one per arm while a canary runs)
                for arm in (False, True):
                    group = [job for job in jobs if job.canary == arm]
                    if group:
                        self._run(group)

    def _started(self, jobs: list[Job], now: float) -> None:
        for job in jobs:
            job.batch_size = len(jobs)
            self.queue_waits.append(now - job.enqueued)
        if self.on_batch is not None:
            self.on_batch([now - job.enqueued for job in jobs])

    def _admit(self, job: Job) -> bool:
        """A continuous engine's held job produced its first token: started, unless its handler gave up first."""
        with self._cond:
            if job.started is not None:
                return True
            self.held -= 1
            if job.cancelled:
                job.started = -1.0  # abandoned: counted out of `held` once
                return False
            job.started = time.monotonic()
        self._started([job], job.started)
        return True

    def _run(self, jobs: list[Job], continuous: bool = False) -> None:
        self.batches += 1
        self.batch_sizes.append(len(jobs))
        if not continuous:
            self._started(jobs, jobs[0].started)

        def on_token(row: int, token: int, logprob: float) -> bool:
            job = jobs[row]
            if continuous and job.started is None and not self._admit(job):
                return True  # withdrawn (answered 503) while the engine held it
            job.emit((token, logprob))
            job.ids.append(token)
            if job.stops:
                tail = self.tokenizer.decode(job.ids[-48:], skip_special_tokens=True)
                if any(s in tail for s in job.stops):
                    return True
            return job.cancelled

        canary = {"canary": True} if jobs[0].canary else {}  # only engine=hf takes it (claw/guard/canary.py)
        try:
            gens: list[Generation] = self.engine.generate(
                [j.prompt_ids for j in jobs], [j.sampling for j in jobs], on_token=on_token, **canary
            )
        except Exception as e:  # the engine failed this call: its requests get a 500, the server keeps serving
            log.exception("engine.generate failed")
            for job in jobs:
                job.emit(APIError(500, f"generation failed: {e}", code="engine_error"))
            return
        finally:
            for job in jobs:  # a call that ended without a token (no tokens asked for, an error) is no longer held
                if continuous and job.started is None:
                    self._admit(job)
        for job, gen in zip(jobs, gens):
            job.emit(gen)

    def stats(self) -> dict[str, float]:
        sizes = self.batch_sizes or [0]
        waits = sorted(self.queue_waits) or [0.0]
        return {
            "batches": self.batches,
            "batch_size_max": max(sizes),
            "batch_size_mean": sum(sizes) / len(sizes),
            "in_flight": self.in_flight,
            "in_flight_peak": self.peak_in_flight,
            "waiting": len(self._waiting) + self.held,
            "rejected": self.rejected,
            "queue_wait_p50_s": waits[len(waits) // 2],
            "queue_wait_p95_s": waits[min(len(waits) - 1, int(len(waits) * 0.95))],
        }
