"""`MainLane`: work that other threads hand to the main thread while it has nothing else to do.

Why: on CPU, PyTorch runs an op's parallel part on an OpenMP team, and every OS thread that calls into
PyTorch gets a team of its own. Once the trainer's thread and a source's thread both have one, libgomp
manages more threads than there are cores, and it stops letting its idle workers spin: each small op then
waits for a sleeping worker to wake. Measured 2026-12-07 on 2 cores (torch 2.13, libgomp): `silu` on a
32 × 1536 tensor took 24 µs on the main thread and 94 µs on a second thread; one rollout batch of the
reference GRPO workload (bench/bench.py) took 10.9-13.0 s on the main thread and 15.3-19.7 s on a source's.

So an engine on CPU (`engine=hf`) runs each forward pass through a lane. While the trainer waits for a rollout
batch (`RolloutDataModule.next_item`, inside `serving()`), the main thread runs the passes that sources' decodes
ask for. While it is busy (training, evaluating), a caller computes on its own thread, as without a lane, unless
it is `patient`: a source whose every batch waits for the trainer anyway (`source.ahead=0`) hands its decodes
over and waits for the main thread's next wait. Patience needs a trainer that will serve: the lane is attached
when the trainer starts its sources, and `close` (the run is stopping) hands every job back.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class _Job:
    def __init__(self, fn: Callable[[], Any], grad: bool, patient: bool) -> None:
        self.fn, self.grad, self.patient = fn, grad, patient
        self.done = threading.Event()
        self.returned = False  # the main thread stopped serving before taking it: the caller runs it
        self.result: Any = None
        self.error: BaseException | None = None


class MainLane:
    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._jobs: deque[_Job] = deque()
        self._serving = False
        self._attached = False  # a trainer serves this lane when it waits (patient jobs wait only then)
        self._closed = False
        self._local = threading.local()
        self.served = 0  # jobs the main thread ran for other threads

    @contextmanager
    def patient(self) -> Iterator[None]:
        """This thread's jobs wait for the main thread to serve them (until the lane closes)."""
        self._local.patient = True
        try:
            yield
        finally:
            self._local.patient = False

    def attach(self) -> None:
        """A trainer's wait for batches will serve this lane (`RolloutDataModule.start`) until `close`."""
        with self._cv:
            self._attached = True

    def patient_here(self) -> bool:
        """Whether this thread's jobs wait for the main thread (inside `patient()`, on an attached lane)."""
        return getattr(self._local, "patient", False)

    def close(self) -> None:
        """From now on every caller runs its own jobs; those waiting are handed back."""
        with self._cv:
            self._closed = True
            left, self._jobs = list(self._jobs), deque()
        _hand_back(left)

    def run(self, fn: Callable[[], T]) -> T:
        """`fn()`, on the main thread when it is serving (or, from a patient thread, when it serves next), else on
        this one. Its result or its error."""
        if threading.current_thread() is threading.main_thread():
            return fn()
        job = _Job(fn, torch.is_grad_enabled(), self.patient_here())
        with self._cv:
            job.patient = job.patient and self._attached
            if self._closed or not (self._serving or job.patient):
                job = None
            else:
                self._jobs.append(job)
                self._cv.notify_all()
        if job is None:
            return fn()
        job.done.wait()
        if job.returned:
            return fn()
        if job.error is not None:
            raise job.error
        return job.result

    @contextmanager
    def serving(self) -> Iterator[None]:
        """The main thread has nothing to do inside this block but `serve`. Leaving it hands back the jobs it has
        not taken, except patient callers' (they wait for the next block)."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("only the main thread serves a MainLane")
        with self._cv:
            self._serving = True
        try:
            yield
        finally:
            with self._cv:
                self._serving = False
                left = [j for j in self._jobs if not j.patient]
                self._jobs = deque(j for j in self._jobs if j.patient)
            _hand_back(left)

    @contextmanager
    def holding(self, lock: threading.Lock) -> Iterator[None]:
        """`with lock:`, except that the main thread serves while it waits: the lock's holder may be a caller whose
        jobs only the main thread can run."""
        if threading.current_thread() is threading.main_thread():
            with self.serving():
                while not lock.acquire(timeout=0.005):
                    self.serve(timeout=0)
        else:
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def serve(self, timeout: float) -> bool:
        """Run the next job handed over within `timeout` seconds (True), or none (False)."""
        with self._cv:
            if not self._cv.wait_for(lambda: self._jobs, timeout):
                return False
            job = self._jobs.popleft()
        # As on the caller's thread: its grad mode, and no autocast the trainer's step may have entered.
        with torch.set_grad_enabled(job.grad), torch.autocast("cpu", enabled=False):
            try:
                job.result = job.fn()
            except Exception as e:  # the caller's error, raised in the caller's thread
                job.error = e
            except BaseException:  # an interrupt is the main thread's: the caller learns its job did not finish
                job.error = RuntimeError("the main thread was interrupted while running this job")
                raise
            finally:
                self.served += 1
                job.done.set()
        return True


def _hand_back(jobs: list[_Job]) -> None:
    for job in jobs:
        job.returned = True
        job.done.set()
