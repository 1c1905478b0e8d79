"""`RolloutDataModule`: the rollout queue seen by Lightning as an unbounded IterableDataset.

Each item is one rollout batch (a padded `Batch`). The stream never ends; training is bounded by
the `steps` callback. Progress is the queue *cursor* (store entries trained or dropped), advanced
by `commit` only once a batch has been trained — never when a batch is merely fetched (Lightning
prefetches one ahead) — and saved in the checkpoint with the weights, together with where the cursor
falls in the store (byte offset, the sample before it) and the groups before it per source, so a
restart reads only the store's tail (claw/rollout/queue.py). A `ledger.jsonl` in the run
directory lists, per step, the sample ids trained and dropped; on restart it is rolled back to the
checkpoint's step, so the ledger and the weights always agree.

Stopping (claw/shutdown.py): once a stop is asked for, the sources are stopped at once from a thread of their own
(`stop`: each stops accepting and ends or answers what it has in flight, then every log of the run directory is
fsynced), and a trainer waiting for a batch stops waiting within `poll_seconds`: the stream raises `StopRequested`
on every rank (the leader broadcasts STOP), never a batch taken after the request.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset

from claw.clock import PolicyClock
from claw.distributed import broadcast
from claw.engine.lane import MainLane
from claw.rollout.queue import RolloutQueue, Taken
from claw.rollout.source import Source
from claw.rollout.store import JsonlLog
from claw.shutdown import StopRequested, StopSignal, fsync_files
from claw.types import Batch, collate

WAIT, END, STOP = "wait", "end", "stop"  # what the leader broadcasts when it has no batch to hand out


class _QueueStream(IterableDataset):
    """Rollout batches from the queue. Under DDP only rank 0 (the leader) holds the queue; it
    broadcasts each batch whole to the other ranks (and, while it waits, a heartbeat every
    `poll_seconds`, so no rank ever sits in a collective longer than that)."""

    def __init__(self, dm: RolloutDataModule) -> None:
        self.dm = dm

    def __iter__(self):
        dm = self.dm
        if dm.leader and not dm.stop_requested:
            dm.start()
        while True:
            item = broadcast(dm.next_item() if dm.leader else None)
            if isinstance(item, str):
                if item == END:
                    return  # every source has produced all it will: the stream ends
                if item == STOP:
                    raise StopRequested("a stop was asked for while the trainer waited for a rollout batch")
                continue
            yield item


class RolloutDataModule(L.LightningDataModule):
    LANE_POLL_S = 0.005  # while serving a lane, how often the queue is looked at

    def __init__(
        self,
        run_dir: str | Path,
        sources: list[Source],
        pad_id: int,
        batch_size: int = 32,
        max_queue_size: int = 256,
        max_staleness: int = 2,
        fsync: bool = True,
        poll_seconds: float = 1.0,
        leader: bool = True,
        clock: PolicyClock | None = None,
        stop_signal: StopSignal | None = None,
        version_of: Callable[[str], int] | None = None,
        lane: MainLane | None = None,
    ) -> None:
        """`version_of` (personalize=per_user, claw/users/adapters.py): each user's adapter version. Batches are
        then one user's samples, the users taking turns (`RolloutQueue.take_fair`), and staleness is counted
        against the user's own adapter. `lane` (the hf engine's, claw/engine/lane.py): while it waits for a
        batch, the trainer's thread runs the decodes the sources ask for."""
        super().__init__()
        self.lane = lane
        self.version_of = version_of
        self.run_dir = Path(run_dir)
        self.sources = sources
        self.pad_id = pad_id
        self.batch_size = batch_size
        self.poll_seconds = poll_seconds
        # Only the leader (rank 0) owns the queue and the files; followers get batches by broadcast.
        self.leader = leader
        self.queue = (
            RolloutQueue(self.run_dir / "samples.jsonl", max_queue_size, max_staleness, fsync=fsync)
            if leader
            else None
        )
        self.ledger = JsonlLog(self.run_dir / "ledger.jsonl", fsync=fsync) if leader else None
        self.cursor = 0
        self.store_offset: int | None = 0  # byte offset of `cursor` in samples.jsonl (None: an older checkpoint)
        self.store_last_id: str | None = None  # the sample id just before `cursor`
        self.groups_before_cursor: Counter[str] = Counter()  # groups before `cursor` (trained or dropped), per source
        self.step = 0
        self._takes = 0  # batches handed out by this process
        self._committed_take = 0  # the last of them committed
        self._started = False
        self.clock = clock or PolicyClock()  # the run's version counter (train.py shares the module's): staleness
        self.stop_signal = stop_signal  # SIGTERM / SIGINT (claw/shutdown.py): stop the sources, stop waiting
        self._stop_lock = threading.Lock()
        self._stopped = False

    @property
    def stop_requested(self) -> bool:
        return self.stop_signal is not None and self.stop_signal.requested

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Replay what the store holds past the cursor, then start the sources (once)."""
        if self._started:
            return
        self._started = True
        # Roll the ledger back to the checkpoint (or to nothing, without one): later entries belong to
        # training that was lost with the process; their samples are replayed from the store.
        kept = [r for r in self.ledger.read() if r["step"] <= self.step]
        self.ledger.rewrite(kept)
        done = {
            i for r in kept for i in (*r["trained"], *r["dropped"])
        }  # past the cursor only when batches are per user
        self.replayed = self.queue.replay(self.cursor, self.store_offset, self.store_last_id, done)
        self.queue.commit(self.cursor)
        produced = self._groups_in_store()
        if self.lane is not None:
            self.lane.attach()
        for src in self.sources:
            src.start(self.queue, resume_from=produced.get(src.name, 0))
        if self.stop_signal is not None:
            threading.Thread(target=self._stop_when_asked, name="claw-stop-sources", daemon=True).start()

    def _stop_when_asked(self) -> None:
        """Stop the sources as soon as a stop is asked for, while the trainer finishes the step in progress."""
        while not self._stopped:
            if self.stop_signal.wait(0.5):
                self.stop()
                return

    def next_item(self) -> Batch | str:
        """One attempt (up to `poll_seconds`) at the next rollout batch: a `Batch`, WAIT, END or STOP."""
        if self.stop_requested:
            return STOP  # before taking: a batch taken now would never train
        taken = self._take()
        if taken is None:
            if self.stop_requested:  # the request closed the queue: that is a stop, not the end of the sources
                return STOP
            self.check_sources()
            if self.queue.closed or (len(self.queue) == 0 and all(s.exhausted for s in self.sources)):
                return END
            return WAIT
        if taken.dropped and not taken.samples:
            self.commit_dropped(taken)  # nothing to train; still advance the cursor
            return WAIT
        batch = collate(taken.samples, self.pad_id)
        self._takes += 1
        batch.meta = {
            "take": self._takes,  # which batch this is: `is_new` tells a fresh one from one handed out before
            "cursor_end": taken.cursor_end,
            "offset_end": taken.offset_end,
            "last_id": taken.last_id,
            "groups": dict(taken.groups),
            "dropped_ids": [s.sample_id for s in taken.dropped],
            "queue_depth": len(self.queue),
            "dropped_stale_total": self.queue.dropped_stale,
            "finished_frac": sum(s.finished for s in taken.samples) / len(taken.samples),
            **({"user": taken.user} if taken.user is not None else {}),
        }
        return batch

    def _take(self) -> Taken | None:
        """The next batch, waiting up to `poll_seconds`; with a lane, serving it meanwhile."""

        def take(timeout: float) -> Taken | None:
            if self.version_of is None:
                return self.queue.take(self.batch_size, self.clock.served, timeout=timeout)
            return self.queue.take_fair(self.batch_size, self.version_of, timeout=timeout)

        if self.lane is None or threading.current_thread() is not threading.main_thread():
            return take(self.poll_seconds)
        deadline = time.monotonic() + self.poll_seconds
        with self.lane.serving():
            while (taken := take(0)) is None and not self.queue.closed and time.monotonic() < deadline:
                self.lane.serve(timeout=min(self.LANE_POLL_S, max(deadline - time.monotonic(), 0)))
            return taken

    def _groups_in_store(self) -> dict[str, int]:
        """Groups each source has in the store (a restarted source goes on from there): those before the
        cursor, from the checkpoint (or counted by `replay` when it read the store from the start), plus those
        `replay` read after it. Group ids are unique per source, and a group is never split by the cursor."""
        before = self.groups_before_cursor if self.queue.groups_before is None else self.queue.groups_before
        return dict(before + self.queue.groups_after)

    def check_sources(self) -> None:
        for src in self.sources:
            if src.error is not None:
                raise RuntimeError(f"source {src.name!r} failed: {src.error!r}") from src.error

    def stop(self) -> None:
        """Stop the sources, close the queue, and put every log of the run directory on disk (the logs flush each
        line as they write it; with `fsync=false` nothing fsyncs them otherwise). Once; a second call waits for the
        first to finish."""
        if not self.leader:
            return
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
            if self.lane is not None:  # a source waiting for the trainer's thread decodes on its own
                self.lane.close()
            for src in self.sources:
                src.stop()
            self.queue.close()
            fsync_files(*sorted(self.run_dir.glob("*.jsonl")))

    def teardown(self, stage: str) -> None:
        self.stop()
        if self.leader:  # the trainer has committed its last step: the ledger is written for good
            self.ledger.close()

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_QueueStream(self), batch_size=None, num_workers=0)

    # -- progress ------------------------------------------------------------------------
    def is_new(self, batch: Batch) -> bool:
        """`batch` was not committed yet: when the stream ends inside training_step, Lightning's batch-end hooks get
        the batch handed out before, already committed. (Under per-user batches the cursor need not move with a
        batch, so it cannot tell.)"""
        return batch.meta.get("take", 0) > self._committed_take

    def commit(self, step: int, batch: Batch) -> None:
        """Record that `batch` was trained as `step`; advances the cursor saved with the checkpoint."""
        self._committed_take = batch.meta.get("take", self._committed_take)
        if self.leader:
            self.ledger.append(
                {"step": step, "trained": batch.sample_ids, "dropped": batch.meta.get("dropped_ids", [])}
            )
        self._advance(
            batch.meta["cursor_end"],
            batch.meta.get("offset_end"),
            batch.meta.get("last_id"),
            batch.meta.get("groups", {}),
        )
        self.step = step
        if self.leader:
            self.queue.commit(self.cursor)

    def commit_dropped(self, taken) -> None:
        # Filed under the next step: it becomes durable with the next checkpoint, or is rolled back with it.
        self.ledger.append({"step": self.step + 1, "trained": [], "dropped": [s.sample_id for s in taken.dropped]})
        self._advance(taken.cursor_end, taken.offset_end, taken.last_id, taken.groups)
        self.queue.commit(self.cursor)

    def _advance(self, cursor: int, offset: int | None, last_id: str | None, groups: dict[str, int]) -> None:
        self.cursor, self.store_offset, self.store_last_id = cursor, offset, last_id
        self.groups_before_cursor.update(groups)

    def state_dict(self) -> dict[str, Any]:
        return {
            "cursor": self.cursor,
            "step": self.step,
            "store_offset": self.store_offset,
            "store_last_id": self.store_last_id,
            "groups_before_cursor": dict(self.groups_before_cursor),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.cursor = int(state["cursor"])
        self.step = int(state["step"])
        # Checkpoints of older versions have no offset: `replay` then counts lines from the start.
        has_offset = "store_offset" in state and "groups_before_cursor" in state
        self.store_offset = state["store_offset"] if has_offset else None
        self.store_last_id = state.get("store_last_id")
        self.groups_before_cursor = Counter(state.get("groups_before_cursor", {}))

    def transfer_batch_to_device(self, batch: Batch, device: torch.device, dataloader_idx: int) -> Batch:
        return batch.to(device)
