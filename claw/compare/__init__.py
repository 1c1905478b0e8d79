"""Compare the runs of a sweep or experiment from what they left on disk (no W&B account needed).

    python -m claw.compare <dir> [--metric eval/headline] [--curve rollout/reward_mean] [--out <png>] [--json <file>]

A run is a directory under <dir> with a `config.yaml` next to a `summary.json` or a `csv/` folder. A *setting* is
the overrides the run was given (summary.json's `provenance.overrides`, else Hydra's `.hydra/overrides.yaml`) less
its seed, run directory and resume (claw.provenance.setting): runs of one setting are its seeds, wherever they were
written. Prints one Markdown table row per setting (final metric mean ± sample sd over seeds, min, max, the seeds),
named by the few overrides that differ between settings; writes learning curves of --curve and the held-out
evaluations to a PNG (default <dir>/compare.png) and, with --json, the rows as JSON.

Without --metric: eval/headline when every evaluated run has it, else the first metric all runs have.
eval/headline is eval.json's "after" number (a persona's rating, or the accuracy on a dataset; @before,
@step_4: that entry); eval/score is a persona's rating, eval/accuracy a dataset's, eval/pass/<criterion> a pass
rate; any other name is the last non-empty value of that column in the run's csv/<launch>/metrics.csv files.

The parts: runs.py reads the runs and pools them by setting, scores.py turns them into numbers and table rows,
render.py draws the table and the PNG; `compare` and `main` here put them together.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from claw.compare.render import _curve, format_table, plot
from claw.compare.runs import (
    CompareError,
    Run,
    group_settings,
    label_of,
    load_runs,
    setting_of,
    settings,
)
from claw.compare.scores import EVAL_FIELDS, default_metric, final_score, metrics_of, setting_row

__all__ = [
    "EVAL_FIELDS",
    "CompareError",
    "Run",
    "_curve",
    "compare",
    "default_metric",
    "final_score",
    "format_table",
    "group_settings",
    "label_of",
    "load_runs",
    "main",
    "metrics_of",
    "plot",
    "setting_of",
    "settings",
]


def compare(
    directory: str | Path,
    metric: str | None = None,
    curve: str = "rollout/reward_mean",
    out: str | Path | None = None,
    json_path: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Rows (one per setting, best mean first); writes the PNG and, with json_path, the rows as JSON.
    `metric` None: `default_metric` of the runs."""
    root = Path(directory)
    if not root.is_dir():
        raise CompareError(f"{root} is not a directory")
    runs = load_runs(root)
    if not runs:
        raise CompareError(
            f"no runs found under {root} (looked for config.yaml next to summary.json or a csv/ folder)"
        )
    metric = metric or default_metric(runs)
    found = settings(runs)
    rows = [setting_row(label, setting_, members, metric) for label, setting_, members in found]
    if all(r["n"] == 0 for r in rows):
        known = ", ".join(sorted({m for r in runs for m in metrics_of(r)})[:20]) or "none"
        raise CompareError(f"metric {metric!r} is in none of the {len(runs)} runs under {root} (known: {known})")
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0)))
    groups = {label: members for label, _, members in found}
    plot(
        {r["label"]: groups[r["label"]] for r in rows},
        curve,
        Path(out) if out else root / "compare.png",
        f"{root.resolve().name}: {len(runs)} runs, {len(rows)} settings",
    )
    for row in rows:
        row["metric"] = metric
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m claw.compare", description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="a sweep or experiment directory; runs are found recursively")
    parser.add_argument(
        "--metric",
        default=None,
        help="eval/{headline,score,accuracy,pass/<criterion>}[@before|@step_<k>] or a metrics.csv column "
        "(default: eval/headline, else the first metric all runs have)",
    )
    parser.add_argument(
        "--curve", default="rollout/reward_mean", help="metrics.csv column to plot against the rollout batch"
    )
    parser.add_argument("--out", default=None, help="PNG path (default <dir>/compare.png)")
    parser.add_argument("--json", default=None, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else Path(args.dir) / "compare.png"
    try:
        rows = compare(args.dir, args.metric, args.curve, out, args.json)
    except CompareError as e:
        print(f"claw.compare: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    metric = rows[0]["metric"]
    print(format_table(rows, metric))
    for row in rows:
        for name in row["missing"]:
            print(f"missing {metric}: {name} ({row['label']})")
    print(f"\nwrote {out}" + (f" and {args.json}" if args.json else ""))
