"""A person's data in a run directory is theirs: export it, or forget it.

    python -m claw.users export <run dir> <user> [--out DIR]    # their turns, samples (and adapter) as files
    python -m claw.users forget <run dir> <user>                # delete them, and write down that it happened

What is theirs: every turn the proxy recorded under their user id (claw/users/keys.py says how a request's user is
decided; a turn recorded before users were recorded is the default user's), every record about those turns and
their sessions (next states, feedback, verdicts, session ends), the samples made from those turns, the rows of
`samples_table.jsonl` that show them, and their adapter under `adapters/` when the run trains one per user
(personalize=per_user): every version and its optimizer state.

Forgetting keeps every line's place. A deleted line of `proxy.jsonl` or `samples.jsonl` becomes a tombstone of the same
length (`{"kind":"forgotten"}`, or a sample's ids and `"forgotten":true`, padded with spaces): the rollout queue's
resume offsets and positions still hold, a tombstoned sample is never trained (claw/rollout/queue.py), its id can
never be accepted again, and a restarted proxy has no turn of theirs to recover. `forgotten.jsonl` records when,
for whom (the SHA-256 of the user id) and how many lines — not what they said.

What forgetting cannot undo: a policy shared by everyone (`personalize=shared`) that already trained on their
samples keeps what it learned (the record counts those samples); copies outside the run directory (a W&B server,
backups) are not reached. Forget on a stopped run: a run that is serving is refused, as its writers hold the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from claw.types import FORGOTTEN
from claw.users.keys import DEFAULT_USER, check_user_id

TURNS, SAMPLES, TABLE = "proxy.jsonl", "samples.jsonl", "samples_table.jsonl"
LEDGER, RECORD = "ledger.jsonl", "forgotten.jsonl"


class RunIsLive(RuntimeError):
    """The run directory's proxy answers: its writers hold the files."""


@dataclass
class Footprint:
    """Which records of a run are one user's."""

    user: str
    turn_ids: set[str] = field(default_factory=set)
    session_ids: set[str] = field(default_factory=set)
    responses: set[str] = field(default_factory=set)  # their replies' text (rows of samples_table.jsonl without ids)

    def owns_turn_record(self, record: dict[str, Any]) -> bool:
        if record.get("kind") == "turn":
            return (record.get("user") or DEFAULT_USER) == self.user
        if record.get("turn_id") in self.turn_ids:
            return True
        return record.get("kind") == "end" and record.get("session_id") in self.session_ids

    def owns_sample(self, record: dict[str, Any]) -> bool:
        return (
            record.get("user") == self.user
            or record.get("sample_id") in self.turn_ids
            or (record.get("source") == "proxy" and record.get("session_id") in self.session_ids)
        )

    def owns_table_row(self, row: dict[str, Any]) -> bool:
        if row.get("sample_id") is not None:
            return row["sample_id"] in self.turn_ids or row.get("user") == self.user
        return row.get("response") in self.responses


def lines(path: Path) -> Iterator[tuple[bytes, dict[str, Any] | None]]:
    """(raw line, its record) for each line; a torn last line (no newline) reads as None."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for raw in f:
            yield raw, json.loads(raw) if raw.endswith(b"\n") else None


def footprint(run_dir: Path, user: str) -> Footprint:
    fp = Footprint(check_user_id(user))
    for _, record in lines(run_dir / TURNS):
        if record and record.get("kind") == "turn" and fp.owns_turn_record(record):
            fp.turn_ids.add(record["turn_id"])
            fp.session_ids.add(record["session_id"])
            fp.responses.add(str(record.get("response_text", "")))
            content = (record.get("response") or {}).get("content")
            if content:
                fp.responses.add(str(content))
    return fp


def export(run_dir: str | os.PathLike, user: str, out: str | os.PathLike) -> dict[str, int]:
    """Write `user`'s turns, samples and table rows (and adapter) under `out`; returns how many of each."""
    run_dir, out = Path(run_dir), Path(out)
    fp = footprint(run_dir, user)
    out.mkdir(parents=True, exist_ok=True)
    counts = {
        "turn_records": _copy_lines(run_dir / TURNS, out / TURNS, fp.owns_turn_record),
        "samples": _copy_lines(run_dir / SAMPLES, out / SAMPLES, fp.owns_sample),
        "table_rows": _copy_lines(run_dir / TABLE, out / TABLE, fp.owns_table_row),
    }
    newest = newest_adapter(run_dir, user)
    if newest is not None:  # a PEFT directory: PeftModel.from_pretrained(base, out / "adapter") loads it
        shutil.copytree(newest, out / "adapter", dirs_exist_ok=True)
    counts["adapter"] = int(newest is not None)
    return counts


def newest_adapter(run_dir: Path, user: str) -> Path | None:
    """The newest version of `user`'s adapter (personalize=per_user, claw/users/adapters.py), or None."""
    from claw.users.adapters import adapter_name

    versions = [p for p in (run_dir / "adapters" / adapter_name(user)).glob("v*") if p.name[1:].isdigit()]
    return max(versions, key=lambda p: int(p.name[1:]), default=None)


def forget(run_dir: str | os.PathLike, user: str) -> dict[str, int]:
    """Delete `user`'s data from a stopped run (see the module docstring); returns how many of each went."""
    run_dir = Path(run_dir)
    refuse_if_live(run_dir)
    fp = footprint(run_dir, user)
    counts = {
        "turn_records": _tombstone(run_dir / TURNS, fp.owns_turn_record, lambda r: {"kind": FORGOTTEN}),
        "samples": _tombstone(run_dir / SAMPLES, fp.owns_sample, sample_tombstone),
        "table_rows": _drop_lines(run_dir / TABLE, fp.owns_table_row),
        "trained_samples": _trained(run_dir, fp.turn_ids),
    }
    from claw.users.adapters import adapter_name

    adapter = (
        run_dir / "adapters" / adapter_name(user)
    )  # every version, its optimizer states: a resume starts them anew
    counts["adapter"] = int(adapter.is_dir())
    if adapter.is_dir():
        shutil.rmtree(adapter)
    record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "user_sha256": _digest(user), **counts}
    with open(run_dir / RECORD, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return counts


def sample_tombstone(record: dict[str, Any]) -> dict[str, Any]:
    """What the queue needs to keep a forgotten sample's place: its ids, its group, its source."""
    keep = ("sample_id", "group_id", "group_size", "source")
    return {**{k: record[k] for k in keep if k in record}, FORGOTTEN: True}


def refuse_if_live(run_dir: Path) -> None:
    served = run_dir / "proxy.json"
    if not served.exists():
        return
    url = json.loads(served.read_text()).get("base_url", "").removesuffix("/v1")
    try:
        alive = httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except (httpx.HTTPError, ValueError):
        alive = False
    if alive:
        raise RunIsLive(f"{run_dir} is serving at {url}: stop the run (Ctrl-C or SIGTERM), then forget")


def _digest(user: str) -> str:
    return hashlib.sha256(user.encode()).hexdigest()


def _trained(run_dir: Path, turn_ids: set[str]) -> int:
    return sum(len(turn_ids.intersection(r.get("trained", []))) for _, r in lines(run_dir / LEDGER) if r)


def _copy_lines(src: Path, dst: Path, keep: Callable[[dict], bool]) -> int:
    n = 0
    with open(dst, "wb") as f:
        for raw, record in lines(src):
            if record is not None and not record.get(FORGOTTEN) and record.get("kind") != FORGOTTEN and keep(record):
                f.write(raw)
                n += 1
    return n


def _tombstone(path: Path, owned: Callable[[dict], bool], stone: Callable[[dict], dict]) -> int:
    """Rewrite `path` with each owned line replaced by `stone(record)` padded to the line's length."""
    n = 0

    def rewrite(raw: bytes, record: dict | None) -> bytes:
        nonlocal n
        if record is None or not owned(record):
            return raw
        body = json.dumps(stone(record), separators=(",", ":")).encode()
        if len(body) + 1 > len(raw):
            raise ValueError(f"{path}: a line is shorter than its tombstone")
        n += 1
        return body + b" " * (len(raw) - 1 - len(body)) + b"\n"

    _rewrite(path, rewrite)
    return n


def _drop_lines(path: Path, owned: Callable[[dict], bool]) -> int:
    n = 0

    def rewrite(raw: bytes, record: dict | None) -> bytes:
        nonlocal n
        if record is not None and owned(record):
            n += 1
            return b""
        return raw

    _rewrite(path, rewrite)
    return n


def _rewrite(path: Path, rewrite: Callable[[bytes, dict | None], bytes]) -> None:
    """`path` with each line passed through `rewrite`, replaced atomically (a crash leaves the old file or the new)."""
    if not path.exists():
        return
    tmp = path.with_name(path.name + ".forget")
    with open(tmp, "wb") as f:
        for raw, record in lines(path):
            f.write(rewrite(raw, record))
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, path.stat().st_mode)
    tmp.replace(path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
