"""What the guarded-updates scripts read from a run directory: guard.jsonl and eval.json."""

from __future__ import annotations

import json
from pathlib import Path


def read_guard(run_dir: str | Path) -> list[dict]:
    """The guard's decisions, one per step ([] for an unguarded run)."""
    path = Path(run_dir) / "guard.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def final_step(run_dir: str | Path, evals: dict) -> int:
    summary = Path(run_dir) / "summary.json"
    if summary.exists():
        return int(json.loads(summary.read_text())["steps"])
    steps = [int(k.removeprefix("step_")) for k in evals if k.startswith("step_")]
    return max(steps, default=0) + 1


def read_evals(run_dir: str | Path) -> dict[int, dict]:
    """step -> the held-out evaluation of what the engine served after that step (`before` is step 0,
    `after` the last step). Each value has `headline`, `ci_low`, `ci_high`."""
    path = Path(run_dir) / "eval.json"
    raw = json.loads(path.read_text()) if path.exists() else {}
    out: dict[int, dict] = {}
    for tag, result in raw.items():
        if not isinstance(result, dict) or "headline" not in result:
            continue  # report statistics (paired_t_p, ...)
        if tag == "before":
            out[0] = result
        elif tag.startswith("step_"):
            out[int(tag.removeprefix("step_"))] = result
    if isinstance(raw.get("after"), dict):
        out[final_step(run_dir, raw)] = raw["after"]
    return dict(sorted(out.items()))
