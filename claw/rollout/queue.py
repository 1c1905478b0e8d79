"""The rollout queue: where sources hand samples to the trainer.

- bounded (producers block while it is full) and thread-safe;
- every accepted group is appended to the on-disk `SampleStore` *before* it is enqueued, so
  an accepted sample survives a crash; the store order is the queue order;
- consumption is FIFO, so the trainer's progress is one integer, the *cursor*: how many store
  entries have been trained or dropped. A restarted run replays the store from its cursor;
- samples more than `max_staleness` policy versions behind are dropped (and counted) when taken.

Items are *groups* (lists of samples sharing a prompt) so a GRPO group is never split.

A producer that works in rounds (`schedule=lockstep`) sets `rounds = True` and calls `end_round()`
after a round's last sample: no batch is handed out before its round has ended (so no update lands
mid-round and changes the weights the rest of the round samples with), and a batch never spans two
rounds — which samples train together does not depend on timing.
Round boundaries live in memory only (a restarted run replays the store without them).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from claw.rollout.store import SampleStore
from claw.types import Sample


@dataclass
class Taken:
    samples: list[Sample]
    dropped: list[Sample] = field(default_factory=list)
    cursor_end: int = 0  # store position just past the last entry taken (trained or dropped)


class RolloutQueue:
    def __init__(self, store_path: str | Path, max_size: int = 1024, max_staleness: int = 2, fsync: bool = True) -> None:
        self.max_size = max_size
        self.max_staleness = max_staleness
        self.store = SampleStore(store_path, fsync=fsync)
        self.store.drop_incomplete_tail()
        self._groups: deque[tuple[int, list[Sample] | None]] = deque()  # (store position, group); None = end of a round
        self._cond = threading.Condition()
        self._n_samples = 0
        self._next_pos = 0  # store position of the next accepted sample
        self.dropped_stale = 0
        self.accepted = 0
        self.committed = 0  # store position up to which samples are trained (or dropped) and the weights synced
        self.rounds = False  # True: hand out a round's samples only once the round has ended (`end_round`)
        self.closed = False

    # -- producers ------------------------------------------------------------------------
    def put(self, group: list[Sample], timeout: float | None = None) -> bool:
        """Persist then enqueue a group. Blocks while the queue is full; False on timeout or close."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.closed or self._n_samples < self.max_size, timeout):
                return False
            if self.closed:
                return False
            for s in group:
                self.store.append(s.to_json())
            self._push(group)
            return True

    def _push(self, group: list[Sample]) -> None:
        self._groups.append((self._next_pos, group))
        self._next_pos += len(group)
        self._n_samples += len(group)
        self.accepted += len(group)
        self._cond.notify_all()

    def end_round(self) -> None:
        """Mark the end of a producer's round: the batch being filled ends here (if it has samples)."""
        with self._cond:
            if self._groups and self._groups[-1][1] is None:
                return  # an empty round: one boundary is enough
            self._groups.append((self._next_pos, None))
            self._cond.notify_all()

    def replay(self, cursor: int) -> int:
        """Re-enqueue stored samples from `cursor` on (after a restart). Returns how many."""
        with self._cond:
            samples = list(self.store.samples())
            self._next_pos = cursor
            pending = samples[cursor:]
            group: list[Sample] = []
            for s in pending:  # regroup consecutive samples of one group
                if group and s.group_id != group[0].group_id:
                    self._push(group)
                    group = []
                group.append(s)
            if group:
                self._push(group)
            if pending:  # the replayed backlog is a round of its own (boundaries are not stored)
                self._groups.append((self._next_pos, None))
            self.accepted = len(samples)
            return len(pending)

    # -- consumer -------------------------------------------------------------------------
    def take(self, batch_size: int, policy_version: int, timeout: float | None = None) -> Taken | None:
        """Whole groups until `batch_size` samples (at least one group). None on timeout/close.

        Groups are popped as they arrive (so producers blocked on a full queue can go on while a batch
        fills); if the wait times out before the batch is full, the groups taken so far go back to the
        front of the queue, in order: a timeout never loses a sample.
        """
        with self._cond:
            taken = Taken([])
            popped: list[tuple[int, list[Sample], bool]] = []  # (position, group, dropped as stale)
            while len(taken.samples) < batch_size:
                if not self._cond.wait_for(lambda: self.closed or self._ready(), timeout) or not self._ready():
                    self._put_back(popped)
                    return None
                pos, group = self._groups[0]
                if group is None:  # the end of a round: a batch never spans two
                    self._groups.popleft()
                    if taken.samples:
                        break
                    continue
                if taken.samples and len(taken.samples) + len(group) > batch_size:
                    break  # the surplus waits for the next batch: never split, never lost
                self._groups.popleft()
                self._n_samples -= len(group)
                taken.cursor_end = pos + len(group)
                stale = policy_version - min(s.policy_version for s in group) > self.max_staleness
                popped.append((pos, group, stale))
                if stale:
                    taken.dropped.extend(group)
                    self.dropped_stale += len(group)
                else:
                    taken.samples.extend(group)
            self._cond.notify_all()
            return taken

    def _ready(self) -> bool:
        """Something to hand out: any group — or, in rounds, any group of a round that has ended."""
        if not self.rounds:
            return bool(self._groups)
        return any(group is None for _, group in self._groups)

    def _put_back(self, popped: list[tuple[int, list[Sample], bool]]) -> None:
        for pos, group, stale in reversed(popped):
            self._groups.appendleft((pos, group))
            self._n_samples += len(group)
            if stale:
                self.dropped_stale -= len(group)
        if popped:
            self._cond.notify_all()

    def commit(self, cursor: int) -> None:
        """The trainer has trained everything before store position `cursor` and synced the weights."""
        with self._cond:
            self.committed = max(self.committed, cursor)
            self._cond.notify_all()

    @property
    def position(self) -> int:
        """Store position just past the last accepted sample."""
        return self._next_pos

    def __len__(self) -> int:
        return self._n_samples

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()
