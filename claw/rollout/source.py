"""`Source`: what the datamodule needs of a source of samples (claw/sources/ holds the three claw ships).

A source runs on its own (a thread, a server): `start` hands it the queue it puts groups of samples in,
and it keeps producing until `stop` (or until it is `exhausted`). The datamodule reads only the queue.

What some sources can do besides, each a protocol of its own that a source implements when it can, and that
its callers check with `isinstance` before they ask for it:

- `Evaluates`: it holds a held-out set and rates the current policy on it (`HeldOutEval` in claw/callbacks.py:
  before training, every `eval_every` steps, after training);
- `ServesAdmin`: it serves HTTP and can answer `POST /admin/rollback` (train.py, when the run has a guard);
- `ServesCanary`: it routes new sessions between the served version and a candidate (train.py, when the guard
  runs a canary, claw/guard/canary.py).

A source that lacks a capability is not an error: the run goes without what it would give (no held-out
numbers, no rollback endpoint), except the canary, which the config check refuses for such a source.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from claw.evaluation import EvalResult, PersonaEval
from claw.rollout.queue import RolloutQueue


@runtime_checkable
class Source(Protocol):
    name: str  # its samples' `source` field: the running baseline and the restart count are per source

    def start(self, queue: RolloutQueue, resume_from: int = 0) -> None:
        """Begin producing into `queue`; `resume_from` = groups this source already put in the store (a restart)."""

    def stop(self) -> None:
        """Stop producing and release what it holds (threads, a server)."""

    @property
    def exhausted(self) -> bool:
        """True once it will produce nothing more (a finite dataset, `max_sessions` reached)."""

    @property
    def error(self) -> BaseException | None:
        """What stopped it, if it failed (the datamodule raises it in the trainer)."""


@runtime_checkable
class Evaluates(Protocol):
    """A source with a held-out set, rated outside the training path (nothing it decodes becomes a sample)."""

    def evaluate(self) -> EvalResult | PersonaEval | None:
        """The current policy's result on the held-out set; None when there is nothing to rate."""


@runtime_checkable
class ServesAdmin(Protocol):
    """A source that serves HTTP and can take rollback requests on it (`POST /admin/rollback`)."""

    def serve_admin(self, rollback: Callable[[int], tuple[str, str]]) -> None:
        """Answer rollback requests with `rollback(to_version) -> (outcome, message)` from now on."""


@runtime_checkable
class ServesCanary(Protocol):
    """A source of live sessions that can send a fraction of new ones to a candidate version."""

    def serve_canary(self, router) -> None:
        """Route new sessions by `router` (claw/guard/canary.py `CanaryTraffic`) and report their judged rewards."""
