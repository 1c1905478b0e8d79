"""What a run's numbers came from: the commit (and whether the tree had uncommitted changes), the date, the engine,
and the overrides the user gave. train.py writes it into `summary.json`; experiment tables copy it per run, so
runs of different code are never pooled by name."""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def code_version() -> dict[str, Any]:
    """{commit, dirty, diff_sha1}: HEAD, whether tracked files differ from it, and a hash of that difference (two
    runs with the same commit and diff hash ran the same code); None values outside a git checkout."""
    commit = _git("rev-parse", "HEAD")
    diff = _git("diff", "HEAD", "--", ".")
    return {
        "commit": commit.strip() if commit else None,
        "dirty": bool(diff) if diff is not None else None,
        "diff_sha1": hashlib.sha1(diff.encode()).hexdigest() if diff else None,
    }


def provenance(engine: str, overrides: list[str] | None) -> dict[str, Any]:
    return {
        **code_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "engine": engine,
        "overrides": list(overrides or []),
    }
