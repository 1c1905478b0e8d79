"""Append-only JSONL files in the run directory: accepted samples, the trained ledger, the proxy's turns.

A `kill -9` can cut the last line short; reading skips (and truncates away) a partial last
line, so the file stays appendable and nothing complete is lost.

Offsets. `size` is the file's length in bytes, kept up to date by `append`, so a caller can note where
a line ends (the queue saves it with its cursor) and a restart reads from there on (`read_from`) instead
of the whole history. `read_back` walks lines from the end, for what a restart needs of the tail only.

Durability. By default `append` returns once the line is fsynced. With `group_commit=True` (the
proxy's turn log, written from the server's event loop) `append` writes and flushes the line at
once — in order, visible to any reader of the file as soon as it returns — and a writer thread
fsyncs: one fsync covers every line appended before it started (group commit), so N streams
finishing together cost about one fsync, and none of them is waited for on the event loop. A caller
that promises durability awaits `durable()` (or calls `wait_durable()`) before it answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from claw.types import FORGOTTEN, Sample


class JsonlLog:
    def __init__(self, path: str | Path, fsync: bool = True, group_commit: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()  # writes and the file handle
        self._fd_lock = threading.Lock()  # the fd stays open while the writer thread fsyncs it
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._fh = open(self.path, "a", encoding="utf-8")
        self.size = self._fh.tell()  # bytes in the file: the offset just past the last line
        # group commit: lines written (and flushed) vs lines known to be on disk, and who waits for which
        self.group_commit = group_commit and fsync
        self._durable = threading.Condition()
        self._written = self._synced = 0
        self._waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._sync_error: BaseException | None = None
        self._closing = False
        self.fsyncs = 0
        if self.group_commit:
            self._syncer = threading.Thread(target=self._sync_loop, name=f"claw-fsync-{self.path.name}", daemon=True)
            self._syncer.start()

    def _repair(self) -> None:
        """Cut a torn last line (a crash mid-write); reads back from the end only to the last newline."""
        if not self.path.exists():
            return
        with open(self.path, "r+b") as f:
            size = f.seek(0, os.SEEK_END)
            end = size
            while end > 0:
                start = max(0, end - _CHUNK)
                f.seek(start)
                nl = f.read(end - start).rfind(b"\n")
                if nl >= 0:
                    end = start + nl + 1
                    break
                end = start
            if end != size:
                f.truncate(end)

    def append(self, record: dict[str, Any], sync: bool = False) -> int:
        """Write one line; returns its number (1-based) for `durable`. Durable on return unless group commit
        is on (then `sync=True` makes this one line durable before returning)."""
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            self.size += len(line.encode("utf-8"))
            if self.fsync and not self.group_commit:
                os.fsync(self._fh.fileno())
                self.fsyncs += 1
            with self._durable:
                self._written += 1
                n = self._written
                if not self.group_commit:
                    self._synced = n
                self._durable.notify_all()
        if sync and self.group_commit:
            self.wait_durable(n)
        return n

    # -- group commit ------------------------------------------------------------------------
    async def durable(self, n: int | None = None) -> None:
        """Return once line `n` (default: every line written so far) is on disk, without blocking the loop."""
        loop = asyncio.get_running_loop()
        with self._durable:
            n = self._written if n is None else n
            if self._sync_error is not None:
                raise OSError(f"fsync of {self.path} failed: {self._sync_error!r}") from self._sync_error
            if self._synced >= n:
                return
            fut = loop.create_future()
            self._waiters.append((n, loop, fut))
        await fut

    def wait_durable(self, n: int | None = None, timeout: float | None = None) -> None:
        """`durable` for a thread."""
        with self._durable:
            n = self._written if n is None else n
            if not self._durable.wait_for(lambda: self._synced >= n or self._sync_error is not None, timeout):
                raise TimeoutError(f"{self.path}: line {n} not on disk after {timeout} s")
            if self._sync_error is not None:
                raise OSError(f"fsync of {self.path} failed: {self._sync_error!r}") from self._sync_error

    def _sync_loop(self) -> None:
        """The writer thread: fsync whatever was written since the last fsync, then wake who waited for it."""
        while True:
            with self._durable:
                self._durable.wait_for(lambda: self._closing or self._written > self._synced)
                target = self._written
                if target <= self._synced:  # closing, nothing left to sync
                    return
            error = None
            try:
                with self._fd_lock:
                    os.fsync(self._fh.fileno())  # covers every line flushed before this call
                self.fsyncs += 1
            except (OSError, ValueError) as e:  # the disk failed: nobody may be told their line is safe
                error = e
            with self._durable:
                if error is None:
                    self._synced = max(self._synced, target)
                else:
                    self._sync_error = error
                ready = [w for w in self._waiters if error is not None or w[0] <= self._synced]
                self._waiters = [w for w in self._waiters if w not in ready]
                self._durable.notify_all()
            for _, loop, fut in ready:
                try:
                    loop.call_soon_threadsafe(_settle, fut, error)
                except RuntimeError:  # that loop is closed: nobody waits any more
                    pass
            if error is not None:
                return

    def read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):
                    yield json.loads(line)

    def read_from(self, offset: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """(offset just past the line, record) for each complete line from byte `offset` on."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(offset)
            for line in f:
                offset += len(line)
                if line.endswith(b"\n"):
                    yield offset, json.loads(line)

    def read_back(self, end: int | None = None) -> Iterator[tuple[int, bytes]]:
        """(offset where the line starts, raw line) for each line before byte `end` (default: the end of the
        file), newest first, read in chunks from the end. The first line it yields is whatever precedes `end`
        back to a newline: a caller that needs `end` on a line boundary checks the byte before it."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            end = f.seek(0, os.SEEK_END) if end is None else end
            pos, buf = end, b""  # buf: the bytes from pos to what is not yet yielded
            while pos > 0:
                start = max(0, pos - _CHUNK)
                f.seek(start)
                buf = f.read(pos - start) + buf
                pos = start
                while (nl := buf.rfind(b"\n", 0, len(buf) - 1)) >= 0:  # the line after it is whole
                    yield pos + nl + 1, buf[nl + 1 :]
                    buf = buf[: nl + 1]
            if buf:
                yield 0, buf

    def truncate(self, offset: int) -> None:
        """Cut the file to its first `offset` bytes (a line boundary), durably."""
        with self._lock, self._fd_lock:
            self._fh.flush()
            os.truncate(self.path, offset)
            if self.fsync:
                os.fsync(self._fh.fileno())
            self.size = offset

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Atomically replace the contents (used to roll the ledger back to a checkpoint)."""
        with self._lock, self._fd_lock:
            self._fh.close()
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for r in records:
                    f.write(json.dumps(r, separators=(",", ":")) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            self._fh = open(self.path, "a", encoding="utf-8")
            self.size = self._fh.tell()

    def close(self) -> None:
        if self.group_commit:  # what was written gets on disk first
            with self._durable:
                self._closing = True
                self._durable.notify_all()
            self._syncer.join(timeout=30)
        with self._lock, self._fd_lock:
            self._fh.close()


_CHUNK = 1 << 16  # bytes read at a time when walking a file back from its end
_SAMPLE_ID = re.compile(rb'"sample_id":\s*"([^"\\\\]*)"')


def _settle(fut: asyncio.Future, error: BaseException | None) -> None:
    if fut.done():  # its waiter was cancelled (the client went away)
        return
    if error is None:
        fut.set_result(None)
    else:
        fut.set_exception(OSError(f"fsync failed: {error!r}"))


class SampleStore(JsonlLog):
    """Every sample the queue accepted, in acceptance order (line index = store sequence number)."""

    def samples(self) -> Iterator[Sample]:
        for record in self.read():
            if not record.get(FORGOTTEN):  # a tombstone (claw/users/data.py) holds no sample
                yield Sample.from_json(record)

    def sample_ids(self) -> set[str]:
        """The id of every stored sample, read without decoding the records: a record is `asdict(Sample)`, whose
        top-level `sample_id` comes before `info` (the only nested object), and a quote inside a JSON string is
        escaped, so the first `"sample_id":"…"` of a line is the record's own."""
        ids: set[str] = set()
        if not self.path.exists():
            return ids
        with open(self.path, "rb") as f:
            for line in f:
                found = _SAMPLE_ID.search(line)
                if found and line.endswith(b"\n"):
                    ids.add(found.group(1).decode())
        return ids

    def drop_incomplete_tail(self) -> int:
        """Remove a last group with fewer than `group_size` samples: a crash cut its `put` short,
        so it was never acknowledged (a group is accepted whole or not at all). Returns how many.
        Reads back from the end of the file only as far as that last group."""
        group_id = group_size = None
        tail, cut = 0, self.size
        for start, line in self.read_back():
            record = json.loads(line)
            if group_id is None:
                group_id, group_size = record["group_id"], record.get("group_size", 1)
            elif record["group_id"] != group_id:
                break
            tail, cut = tail + 1, start
            if tail >= group_size:
                return 0
        if tail == 0:
            return 0
        self.truncate(cut)
        return tail
