"""Append-only JSONL files in the run directory: accepted samples and the trained ledger.

A `kill -9` can cut the last line short; reading skips (and truncates away) a partial last
line, so the file stays appendable and nothing complete is lost.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from claw.types import Sample


class JsonlLog:
    def __init__(self, path: str | Path, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._fh = open(self.path, "a", encoding="utf-8")

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):  # a torn last line from a crash
            with open(self.path, "r+b") as f:
                f.truncate(end)

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            if self.fsync:
                os.fsync(self._fh.fileno())

    def read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):
                    yield json.loads(line)

    def rewrite(self, records: list[dict[str, Any]]) -> None:
        """Atomically replace the contents (used to roll the ledger back to a checkpoint)."""
        with self._lock:
            self._fh.close()
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                for r in records:
                    f.write(json.dumps(r, separators=(",", ":")) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            self._fh = open(self.path, "a", encoding="utf-8")

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class SampleStore(JsonlLog):
    """Every sample the queue accepted, in acceptance order (line index = store sequence number)."""

    def samples(self) -> Iterator[Sample]:
        for record in self.read():
            yield Sample.from_json(record)

    def drop_incomplete_tail(self) -> int:
        """Remove a last group with fewer than `group_size` samples: a crash cut its `put` short,
        so it was never acknowledged (a group is accepted whole or not at all). Returns how many."""
        records = list(self.read())
        if not records:
            return 0
        last = records[-1]["group_id"]
        tail = 0
        while tail < len(records) and records[-1 - tail]["group_id"] == last:
            tail += 1
        if tail >= records[-1].get("group_size", 1):
            return 0
        self.rewrite(records[:-tail])
        return tail
