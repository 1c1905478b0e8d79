"""The rollout queue: where sources hand samples to the trainer.

- bounded (producers block while it is full) and thread-safe;
- every accepted group is appended to the on-disk `SampleStore` *before* it is enqueued, so
  an accepted sample survives a crash; the store order is the queue order;
- consumption is FIFO, so the trainer's progress is one integer, the *cursor*: how many store
  entries have been trained or dropped. A restarted run replays the store from its cursor;
- with the cursor goes the byte offset where it falls in the store (`Taken.offset_end`) and the id of
  the sample before it (`Taken.last_id`): `replay` seeks there and reads only the tail, so a restart
  costs what came after the checkpoint, not the whole history. It checks first that the line before
  the offset is that sample; a checkpoint without an offset (older versions), or one that does not
  match the file, falls back to counting lines from the start, with a warning;
- samples more than `max_staleness` policy versions behind are dropped (and counted) when taken;
- a sample id is accepted once, ever: `put` refuses a group holding an id the store already has (or holding
  one id twice) with `DuplicateSample`, so no turn is trained twice whatever its producer does.

Items are *groups* (lists of samples sharing a prompt) so a GRPO group is never split.

A producer that works in rounds (`schedule=lockstep`) sets `rounds = True` and calls `end_round()`
after a round's last sample: no batch is handed out before its round has ended (so no update lands
mid-round and changes the weights the rest of the round samples with), and a batch never spans two
rounds — which samples train together does not depend on timing.
Round boundaries live in memory only (a restarted run replays the store without them).

Per user (`take_fair`, personalize=per_user): a batch holds one user's groups, and the users with groups waiting
take turns (the one served least recently goes first), so no user's backlog holds up another's. Batches then leave
the store out of order: the cursor is where everything before has been taken, and `replay` skips the ids a restarted
run has already trained past it (`done`, from the ledger).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

from claw.rollout.store import SampleStore
from claw.types import FORGOTTEN, Sample

log = logging.getLogger(__name__)


class DuplicateSample(ValueError):
    """A group holds a sample id the queue has already accepted (each sample is trained at most once)."""


@dataclass
class _Entry:
    """A group waiting in the queue (or, with `group` None, the end of a round)."""

    pos: int  # store position of its first sample
    group: list[Sample] | None
    end: int = 0  # byte offset just past its last line
    start: int = 0  # byte offset of its first line
    before: str | None = None  # the sample id on the line before it (None: the store's start)


@dataclass
class Taken:
    samples: list[Sample]
    dropped: list[Sample] = field(default_factory=list)
    cursor_end: int = 0  # store position just past the last entry taken (trained or dropped)
    offset_end: int = 0  # byte offset in the store where position `cursor_end` starts
    last_id: str | None = None  # sample id at position `cursor_end - 1` (checks `offset_end` on restart)
    groups: Counter[str] = field(default_factory=Counter)  # groups taken (trained or dropped), per source
    user: str | None = None  # take_fair: whose batch it is


class RolloutQueue:
    def __init__(
        self, store_path: str | Path, max_size: int = 1024, max_staleness: int = 2, fsync: bool = True
    ) -> None:
        self.max_size = max_size
        self.max_staleness = max_staleness
        self.store = SampleStore(store_path, fsync=fsync)
        self.store.drop_incomplete_tail()
        self._ids = self.store.sample_ids()  # every id ever accepted: a second sample with one is refused
        self._groups: deque[_Entry] = deque()
        self._last_id: str | None = None  # the id on the store's last line (what the next group follows)
        self._served: dict[str, int] = {}  # take_fair: user -> when they last had a batch (a counter)
        self._takes = 0
        self._cond = threading.Condition()
        self._n_samples = 0
        self._next_pos = 0  # store position of the next accepted sample
        self.dropped_stale = 0
        self.accepted = 0
        self.committed = 0  # store position up to which samples are trained (or dropped) and the weights synced
        self.rounds = False  # True: hand out a round's samples only once the round has ended (`end_round`)
        self.closed = False
        # what the last `replay` read: groups per source before / from the cursor (before: None when it read
        # only the tail), and how many bytes of the store it read
        self.groups_before: Counter[str] | None = None
        self.groups_after: Counter[str] = Counter()
        self.replay_read_bytes = 0

    # -- producers ------------------------------------------------------------------------
    def put(self, group: list[Sample], timeout: float | None = None) -> bool:
        """Persist then enqueue a group. Blocks while the queue is full; False on timeout or close. Raises
        `DuplicateSample` (and stores nothing) when the group holds an id already accepted."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.closed or self._n_samples < self.max_size, timeout):
                return False
            if self.closed:
                return False
            ids = [s.sample_id for s in group]
            seen = self._ids.intersection(ids) | {i for i in ids if ids.count(i) > 1}
            if seen:
                raise DuplicateSample(f"sample ids already accepted: {sorted(seen)}; a sample trains at most once")
            start = self.store.size
            for s in group:
                self.store.append(s.to_json())
            self._ids.update(ids)
            self._push(group, self.store.size, start)
            return True

    def _push(self, group: list[Sample], offset_end: int, offset_start: int) -> None:
        self._groups.append(_Entry(self._next_pos, group, offset_end, offset_start, self._last_id))
        self._last_id = group[-1].sample_id
        self._next_pos += len(group)
        self._n_samples += len(group)
        self.accepted += len(group)
        self._cond.notify_all()

    def end_round(self) -> None:
        """Mark the end of a producer's round: the batch being filled ends here (if it has samples)."""
        with self._cond:
            if self._groups and self._groups[-1].group is None:
                return  # an empty round: one boundary is enough
            self._groups.append(_Entry(self._next_pos, None))
            self._cond.notify_all()

    def replay(
        self, cursor: int, offset: int | None = None, last_id: str | None = None, done: set[str] | None = None
    ) -> int:
        """Re-enqueue stored samples from `cursor` on (after a restart). Returns how many.

        `offset` and `last_id` (saved with the cursor: `Taken.offset_end`, `Taken.last_id`) let it read
        the store from the cursor's byte offset on; without them, or when the file does not match them,
        it counts lines from the start. `done`: ids already trained or dropped past the cursor (per-user batches
        leave the store out of order), skipped like forgotten lines."""
        done = done or set()
        with self._cond:
            problem = self._offset_problem(cursor, offset, last_id)
            if problem is not None:
                if offset is not None or cursor > 0:
                    log.warning(
                        "%s: %s; reading it from the start to find position %d", self.store.path, problem, cursor
                    )
                offset = 0
            start, skipped = offset, cursor if problem is None else 0
            self._next_pos = cursor
            self._last_id = last_id if problem is None else None
            self.groups_before = None if problem is None else Counter()
            self.groups_after = Counter()
            pending, previous_group = 0, None
            group: list[Sample] = []
            group_start = group_end = line_start = offset

            def push() -> None:
                self._push(group, group_end, group_start)

            for end, record in self.store.read_from(offset):
                if skipped < cursor:  # the fallback: count lines (and groups, per source) up to the cursor
                    if record["group_id"] != previous_group:
                        self.groups_before[record.get("source", "")] += 1
                    previous_group = record["group_id"]
                    skipped += 1
                    self._last_id, line_start = record.get("sample_id"), end
                    continue
                gone = record.get(FORGOTTEN) or record.get("sample_id") in done
                if gone or (group and record["group_id"] != group[0].group_id):
                    if group:  # regroup consecutive samples of one group
                        push()
                        group = []
                if gone:  # deleted at its user's request, or trained already: never queued, its position kept
                    if not record.get(FORGOTTEN) and record["group_id"] != previous_group:
                        self.groups_after[record.get("source", "")] += 1
                    previous_group = record["group_id"]
                    self._next_pos += 1
                    self._last_id, line_start = record.get("sample_id"), end
                    continue
                s = Sample.from_json(record)
                if not group:
                    if s.group_id != previous_group:
                        self.groups_after[s.source] += 1
                    group_start = line_start
                previous_group = s.group_id
                group.append(s)
                group_end = line_start = end
                pending += 1
            if group:
                push()
            if skipped < cursor:
                raise RuntimeError(
                    f"{self.store.path} holds {skipped} samples, fewer than the checkpoint's cursor {cursor}"
                )
            if pending:  # the replayed backlog is a round of its own (boundaries are not stored)
                self._groups.append(_Entry(self._next_pos, None))
            self.replay_read_bytes = self.store.size - start
            self.accepted = cursor + pending
            return pending

    def _offset_problem(self, cursor: int, offset: int | None, last_id: str | None) -> str | None:
        """Why the store cannot be read from `offset` as position `cursor`; None when it can."""
        if offset is None:
            return "the checkpoint has no store offset (saved by an older version)"
        if cursor == 0:
            return None if offset == 0 else f"offset {offset} for cursor 0"
        if offset > self.store.size:
            return f"offset {offset} is past the end of the file ({self.store.size} bytes)"
        before = next(self.store.read_back(offset), (0, b""))[1]
        if not before.endswith(b"\n"):
            return f"offset {offset} is not at the start of a line"
        try:
            found = json.loads(before).get("sample_id")
        except (ValueError, AttributeError):
            return f"the line before offset {offset} is not a sample record"
        if found != last_id:
            return f"the line before offset {offset} is sample {found!r}, not {last_id!r} as the checkpoint says"
        return None

    # -- consumer -------------------------------------------------------------------------
    def take(self, batch_size: int, policy_version: int, timeout: float | None = None) -> Taken | None:
        """Whole groups until `batch_size` samples (at least one group). None on timeout/close.

        Groups are popped as they arrive (so producers blocked on a full queue can go on while a batch
        fills); if the wait times out before the batch is full, the groups taken so far go back to the
        front of the queue, in order: a timeout never loses a sample.
        """
        with self._cond:
            taken = Taken([])
            popped: list[tuple[_Entry, bool]] = []  # (entry, dropped as stale)
            while len(taken.samples) < batch_size:
                if not self._cond.wait_for(lambda: self.closed or self._ready(), timeout) or not self._ready():
                    self._put_back(popped)
                    return None
                entry = self._groups[0]
                if entry.group is None:  # the end of a round: in rounds, a batch never spans two
                    self._groups.popleft()
                    if taken.samples and self.rounds:
                        break
                    continue
                if taken.samples and len(taken.samples) + len(entry.group) > batch_size:
                    break  # the surplus waits for the next batch: never split, never lost
                self._groups.popleft()
                popped.append((entry, self._hand_out(taken, entry, policy_version)))
                taken.cursor_end, taken.offset_end, taken.last_id = (
                    entry.pos + len(entry.group),
                    entry.end,
                    entry.group[-1].sample_id,
                )
            self._cond.notify_all()
            return taken

    def take_fair(self, batch_size: int, version_of, timeout: float | None = None) -> Taken | None:
        """One user's whole groups, up to `batch_size` samples (at least one group): the user served least
        recently among those with groups waiting (in rounds: waiting in the round that has ended). A sample more
        than `max_staleness` versions behind its user's adapter (`version_of(user)`) is dropped. The cursor is
        the first position not yet taken. None on timeout/close."""
        with self._cond:
            if not self._cond.wait_for(lambda: self.closed or self._fair_ready(), timeout) or not self._fair_ready():
                return None
            region = list(itertools.takewhile(lambda e: e.group is not None, self._groups))
            users = list(dict.fromkeys(e.group[0].user for e in region))
            user = min(users, key=lambda u: (self._served.get(u, -1), users.index(u)))
            self._takes += 1
            self._served[user] = self._takes
            taken, mine = Taken([], user=user), []
            for entry in region:
                if entry.group[0].user != user:
                    continue
                if taken.samples and len(taken.samples) + len(entry.group) > batch_size:
                    break
                mine.append(entry)
                self._hand_out(taken, entry, version_of(user))
            for entry in mine:
                self._groups.remove(entry)
            if self.rounds and self._groups and self._groups[0].group is None:
                self._groups.popleft()  # the round is used up
            first = next((e for e in self._groups if e.group is not None), None)
            if first is None:  # everything accepted so far is taken
                taken.cursor_end, taken.offset_end, taken.last_id = self._next_pos, self.store.size, self._last_id
            else:
                taken.cursor_end, taken.offset_end, taken.last_id = first.pos, first.start, first.before
            self._cond.notify_all()
            return taken

    def _hand_out(self, taken: Taken, entry: _Entry, policy_version: int) -> bool:
        """Add a popped group to `taken`, as trained or (more than `max_staleness` behind) dropped; True if stale."""
        group = entry.group
        self._n_samples -= len(group)
        taken.groups[group[0].source] += 1
        stale = policy_version - min(s.policy_version for s in group) > self.max_staleness
        if stale:
            taken.dropped.extend(group)
            self.dropped_stale += len(group)
        else:
            taken.samples.extend(group)
        return stale

    def _ready(self) -> bool:
        """Something to hand out: any group — or, in rounds, any group of a round that has ended."""
        if not self.rounds:
            return bool(self._groups)
        return any(e.group is None for e in self._groups)

    def _fair_ready(self) -> bool:
        """`_ready` for `take_fair`, which starts at a group: round ends already used up are dropped first."""
        while self._groups and self._groups[0].group is None:
            self._groups.popleft()
        return bool(self._groups) and (not self.rounds or any(e.group is None for e in self._groups))

    def _put_back(self, popped: list[tuple[_Entry, bool]]) -> None:
        for entry, stale in reversed(popped):
            self._groups.appendleft(entry)
            self._n_samples += len(entry.group)
            if stale:
                self.dropped_stale -= len(entry.group)
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
        """No more puts (they return False) and no more takes; the store's file is closed (under the lock, so no
        put is writing it). Reading the store afterwards opens the file anew."""
        with self._cond:
            self.closed = True
            self.store.close()
            self._cond.notify_all()
