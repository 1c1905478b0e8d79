"""Where in a reply the hint acts: the teacher-student gap by token position.

    python experiments/personal_agent/gap_by_position.py runs/personal_agent [--json out.json]

For every finished run under the folder, over its samples with teacher log-probs: the mean of
log π_teacher − log π_behaviour on the first response token, the second, the third to fifth, and the rest,
the end-of-turn token of a finished reply left out (`end_of_turn_gap.py` reads that one). With the frozen
hinted teacher this is the OPD advantage; with `mode.teacher=current` it is the hint's own effect. A gap far
lower on the first tokens says the hint mostly changes how a reply opens (experiments/personal_agent/log.md,
2026-12-03). Read from `samples.jsonl` alone: no model is loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

from end_of_turn_gap import read_finished_runs

BANDS = (("1", 0, 1), ("2", 1, 2), ("3-5", 2, 5), ("rest", 5, None))


def gap_by_position(samples: Path) -> dict | None:
    """{n, band: mean gap} for one run's samples (None without a hinted sample)."""
    bands: dict[str, list[float]] = {name: [] for name, _, _ in BANDS}
    n = 0
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        teacher = sample.get("teacher_logprobs")
        if not teacher:
            continue
        mask = sample.get("response_mask") or [1] * len(teacher)
        gap = [t - b for t, b, m in zip(teacher, sample["rollout_logprobs"], mask) if m]
        if sample.get("finished"):
            gap = gap[:-1]
        n += 1
        for name, lo, hi in BANDS:
            bands[name] += gap[lo:hi]
    if not n:
        return None
    return {"n": n, **{name: mean(v) if v else None for name, v in bands.items()}}


def main() -> None:
    rows, args = read_finished_runs(__doc__, gap_by_position)
    names = [name for name, _, _ in BANDS]
    print("| run | hinted samples | " + " | ".join(f"token {b}" for b in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for run, r in rows.items():
        cells = " | ".join("—" if r[b] is None else f"{r[b]:+.2f}" for b in names)
        print(f"| {run} | {r['n']} | {cells} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
