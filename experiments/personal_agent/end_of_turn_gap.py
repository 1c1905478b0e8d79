"""Where the OPD term pushes: the teacher-student gap on the end-of-turn token against the other tokens.

    python experiments/personal_agent/end_of_turn_gap.py runs/personal_agent [--json out.json]

For every finished run under the folder (a `summary.json` beside its `samples.jsonl`), over the trained
samples that have teacher log-probs and ended on their end-of-turn token (cut replies have none): the
mean of log π_teacher − log π_behaviour on that last token, and on every other response token. The OPD
advantage is this gap, per token (`claw/advantages/opd.py`); a gap on the end-of-turn token far below
the others is a push against stopping where the student stopped — what `mode.opd_skip_end` removes.
Read from `samples.jsonl` alone: no model is loaded.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean


def end_of_turn_gap(samples: Path) -> dict | None:
    """{n, end, other} for one run's samples (None when fewer than 2 finished, hinted samples)."""
    end, other = [], []
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        teacher = sample.get("teacher_logprobs")
        if not teacher or not sample.get("finished"):
            continue
        mask = sample.get("response_mask") or [1] * len(teacher)
        gap = [t - b for t, b, m in zip(teacher, sample["rollout_logprobs"], mask) if m]
        end.append(gap[-1])
        other += gap[:-1]
    if len(end) < 2 or not other:
        return None
    return {"n": len(end), "end": mean(end), "other": mean(other)}


def read_finished_runs(doc: str, read) -> tuple[dict, argparse.Namespace]:
    """The command line of the scripts that read runs' samples (`runs` folder, `--json out`): {run name:
    read(its samples.jsonl)} for every finished run (a `summary.json`) whose reading is not None."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = {}
    for run in sorted(p for p in args.runs.iterdir() if (p / "summary.json").exists()):
        if (run / "samples.jsonl").exists() and (row := read(run / "samples.jsonl")) is not None:
            rows[run.name] = row
    return rows, args


def main() -> None:
    rows, args = read_finished_runs(__doc__, end_of_turn_gap)
    print("| run | finished hinted samples | gap on the end-of-turn token | on the other tokens | ratio |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        ratio = r["end"] / r["other"] if r["other"] else float("nan")
        print(f"| {name} | {r['n']} | {r['end']:+.2f} | {r['other']:+.2f} | {ratio:.1f} |")
    below = sum(r["end"] < r["other"] for r in rows.values())
    print(f"\n{len(rows)} runs; the end-of-turn gap is below the other tokens' in {below}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
