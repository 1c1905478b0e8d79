"""`Source`: what the datamodule needs of a source of samples (claw/sources/ holds the three claw ships).

A source runs on its own (a thread, a server): `start` hands it the queue it puts groups of samples in,
and it keeps producing until `stop` (or until it is `exhausted`). The datamodule reads only the queue.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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
