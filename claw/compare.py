"""Compare the runs of a sweep or experiment from what they left on disk (no W&B account needed).

    python -m claw.compare <dir> [--metric eval/accuracy] [--curve rollout/reward_mean] [--out <png>] [--json <file>]

A run is a directory under <dir> with a `config.yaml` next to a `summary.json` or a `csv/` folder.
Runs whose configs differ only in `seed`, `run_dir`, `resume` or `hydra.*` are seeds of one setting.
Prints one Markdown table row per setting (final metric mean ± sample std over seeds, min, max),
writes learning curves of --curve and the held-out accuracy points to a PNG (default <dir>/compare.png)
and, with --json, the rows as JSON.

--metric eval/accuracy is eval.json's "after" accuracy (eval/accuracy@before, eval/accuracy@step_4: that
entry); eval/score is a persona's rating, eval/pass/<criterion> its pass rate, eval/headline whichever the
run has; any other name is the last non-empty value of that column in the run's csv/<launch>/metrics.csv files.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

SEED_KEYS = ("seed", "run_dir", "resume")
UNSET = "<unset>"


class CompareError(Exception):
    """A problem with the input (no runs, unknown metric): reported with exit code 2."""


@dataclass
class Run:
    path: Path
    name: str  # path relative to the directory searched
    config: dict[str, Any]  # flattened: dotted keys -> scalars and lists
    eval: dict[str, Any] = field(default_factory=dict)  # eval.json (or summary.json's "eval")
    rows: list[dict[str, str]] = field(default_factory=list)  # metrics.csv rows, all launches in order


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _read_rows(run_dir: Path) -> list[dict[str, str]]:
    launches = [d for d in (run_dir / "csv").glob("*") if d.is_dir() and d.name.isdigit()]
    rows: list[dict[str, str]] = []
    for launch in sorted(launches, key=lambda d: int(d.name)):
        path = launch / "metrics.csv"
        if path.exists():
            with path.open(newline="") as f:
                rows.extend(csv.DictReader(f))
    return rows


def load_runs(directory: str | Path) -> list[Run]:
    """Every run under `directory` (recursively), sorted by path."""
    root = Path(directory)
    runs = []
    for cfg_path in sorted(root.rglob("config.yaml")):
        run_dir = cfg_path.parent
        if not ((run_dir / "summary.json").exists() or (run_dir / "csv").is_dir()):
            continue
        config = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False)
        if (run_dir / "eval.json").exists():
            evals = json.loads((run_dir / "eval.json").read_text())
        elif (run_dir / "summary.json").exists():
            evals = json.loads((run_dir / "summary.json").read_text()).get("eval") or {}
        else:
            evals = {}
        name = str(run_dir.relative_to(root)) if run_dir != root else "."
        runs.append(Run(run_dir, name, _flatten(config), evals, _read_rows(run_dir)))
    return runs


def setting_keys(runs: list[Run]) -> list[str]:
    """Sorted config keys whose values differ across `runs`, ignoring seeds, paths and hydra's own keys."""
    keys = sorted({k for r in runs for k in r.config})
    # a group's copy of the seed (source.seed: ${seed}, resolved when saved) is the seed too
    keys = [
        k
        for k in keys
        if k not in SEED_KEYS and k.rsplit(".", 1)[-1] != "seed" and k != "hydra" and not k.startswith("hydra.")
    ]
    return [
        k for k in keys if len({json.dumps(r.config.get(k, UNSET), sort_keys=True, default=str) for r in runs}) > 1
    ]


def setting_of(run: Run, keys: list[str]) -> dict[str, Any]:
    return {k: run.config.get(k, UNSET) for k in keys}


def label_of(setting: dict[str, Any]) -> str:
    if not setting:
        return "all"

    def show(v: Any) -> str:  # one line per label: control characters escaped
        return v.encode("unicode_escape").decode() if isinstance(v, str) else json.dumps(v, default=str)

    return ", ".join(f"{k}={show(v)}" for k, v in setting.items())


def group_settings(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs grouped by setting label (e.g. "algo.clip_high=0.2, optim.lr=2e-05"); one setting: "all"."""
    keys = setting_keys(runs)
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(label_of(setting_of(run, keys)), []).append(run)
    return groups


def _float(cell: str | None) -> float | None:
    try:
        return float(cell) if cell not in (None, "") else None
    except ValueError:
        return None


EVAL_FIELDS = (
    "accuracy",
    "score",
    "headline",
)  # eval.json numbers: dataset accuracy, persona rating, whichever a run has


def _eval_tag(metric: str) -> str | None:
    """Entry of eval.json for eval/<field> ("after") or eval/<field>@before ("before"), where <field> is
    accuracy, score, headline or pass/<criterion>; None for a CSV column."""
    base, _, tag = metric.partition("@")
    field = base.removeprefix("eval/")
    return (
        (tag or "after") if base.startswith("eval/") and (field in EVAL_FIELDS or field.startswith("pass/")) else None
    )


def _eval_value(entry: Any, metric: str) -> float | None:
    if not isinstance(entry, dict):
        return None
    field = metric.partition("@")[0].removeprefix("eval/")
    if field.startswith("pass/"):
        value = entry.get("pass_rates", {}).get(field.removeprefix("pass/"))
    else:
        value = entry.get(field, entry.get("accuracy") if field == "headline" else None)
    return None if value is None else float(value)


def final_score(run: Run, metric: str) -> float | None:
    tag = _eval_tag(metric)
    if tag is not None:
        return _eval_value(run.eval.get(tag), metric)
    values = [v for v in (_float(row.get(metric)) for row in run.rows) if v is not None]
    return values[-1] if values else None


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None}
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": std, "min": min(values), "max": max(values)}


def _row(label: str, setting: dict[str, Any], runs: list[Run], metric: str) -> dict[str, Any]:
    scores = {r.name: final_score(r, metric) for r in runs}
    values = [s for s in scores.values() if s is not None]
    row: dict[str, Any] = {"label": label, "setting": setting, "n": len(values), **_stats(values)}
    if _eval_tag(metric) is not None:
        before = [b for b in (final_score(r, metric.partition("@")[0] + "@before") for r in runs) if b is not None]
        row["before_mean"] = statistics.fmean(before) if before else None
    row["runs"] = [{"run": name, "score": score} for name, score in scores.items()]
    row["missing"] = [name for name, score in scores.items() if score is None]
    return row


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def format_table(rows: list[dict[str, Any]], metric: str) -> str:
    """Aligned plain text that is also a Markdown table."""
    header = ["setting", "n", f"{metric} mean ± std", "min", "max"]
    with_before = any("before_mean" in r for r in rows)
    header += ["before", "missing"] if with_before else ["missing"]
    cells = []
    for r in rows:
        score = "—" if r["mean"] is None else f"{_fmt(r['mean'])} ± {_fmt(r['std'])}"
        line = [r["label"], str(r["n"]), score, _fmt(r["min"]), _fmt(r["max"])]
        line += [_fmt(r.get("before_mean")), str(len(r["missing"]))] if with_before else [str(len(r["missing"]))]
        cells.append(line)
    widths = [max(3, *(len(c[i]) for c in [header, *cells])) for i in range(len(header))]

    def fmt_line(line: list[str]) -> str:
        return (
            "| "
            + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
            + " |"
        )

    rule = "| " + " | ".join("-" * w if i == 0 else "-" * (w - 1) + ":" for i, w in enumerate(widths)) + " |"
    return "\n".join([fmt_line(header), rule, *map(fmt_line, cells)])


def _curve(run: Run, curve: str) -> dict[float, float]:
    """x (engine/version, else 1-based order among rows with a value) -> value; a later launch wins."""
    points: dict[float, float] = {}
    order = 0
    for row in run.rows:
        y = _float(row.get(curve))
        if y is None:
            continue
        order += 1
        x = _float(row.get("engine/version"))
        points[x if x is not None else float(order)] = y
    return points


def _eval_points(run: Run) -> dict[float, float]:
    """policy_version -> held-out accuracy for the before / step_<k> / after entries of eval.json."""
    points = {}
    for tag, entry in run.eval.items():
        if (tag in ("before", "after") or tag.startswith("step_")) and isinstance(entry, dict):
            value = _eval_value(entry, "eval/headline")
            if value is not None and "policy_version" in entry:
                points[float(entry["policy_version"])] = value
    return points


def _mean_std(series: list[dict[float, float]]) -> tuple[list[float], list[float], list[float]]:
    xs = sorted({x for s in series for x in s})
    groups = [[s[x] for s in series if x in s] for x in xs]
    return xs, [statistics.fmean(g) for g in groups], [statistics.stdev(g) if len(g) > 1 else 0.0 for g in groups]


def plot(groups: dict[str, list[Run]], curve: str, out: Path, title: str) -> None:
    """Learning curves (mean ± std band over seeds) and held-out accuracy points, one colour per setting."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax_curve, ax_eval = fig.subplots(1, 2)
    for i, (label, runs) in enumerate(groups.items()):
        color = f"C{i % 10}"
        series = [s for s in (_curve(r, curve) for r in runs) if s]
        if series:
            xs, mean, std = _mean_std(series)
            ax_curve.plot(xs, mean, color=color, label=textwrap.fill(f"{label} (n={len(series)})", 110))
            if len(series) > 1:
                ax_curve.fill_between(
                    xs, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], color=color, alpha=0.2
                )
        points = [p for p in (_eval_points(r) for r in runs) if p]
        if points:
            xs, mean, std = _mean_std(points)
            ax_eval.errorbar(xs, mean, yerr=std if len(points) > 1 else None, color=color, marker="o", capsize=3)
    for ax, what in ((ax_curve, curve), (ax_eval, "eval.json")):
        if not ax.has_data():
            ax.text(0.5, 0.5, f"no {what} in any run", ha="center", va="center", transform=ax.transAxes)
    if ax_curve.has_data():  # one legend under both panels: setting labels are long
        fig.legend(loc="outside lower center", fontsize="small", ncols=1)
    ax_curve.set(title=f"{curve} (mean ± std over seeds)", xlabel="rollout batch (engine/version)", ylabel=curve)
    ax_eval.set(
        title="held-out evaluation (before / step_k / after)",
        xlabel="policy version",
        ylabel="accuracy or persona rating",
    )
    fig.suptitle(title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)


def _known_metrics(runs: list[Run]) -> list[str]:
    columns = {k for r in runs for row in r.rows for k, v in row.items() if v not in (None, "") and k != "step"}
    fields = {f"eval/{k}" for r in runs for e in r.eval.values() if isinstance(e, dict) for k in EVAL_FIELDS if k in e}
    return sorted(columns | fields)


def compare(
    directory: str | Path,
    metric: str = "eval/accuracy",
    curve: str = "rollout/reward_mean",
    out: str | Path | None = None,
    json_path: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Rows (one per setting, best mean first); writes the PNG and, with json_path, the rows as JSON."""
    root = Path(directory)
    if not root.is_dir():
        raise CompareError(f"{root} is not a directory")
    runs = load_runs(root)
    if not runs:
        raise CompareError(
            f"no runs found under {root} (looked for config.yaml next to summary.json or a csv/ folder)"
        )
    keys = setting_keys(runs)
    groups = group_settings(runs)
    rows = [_row(label, setting_of(members[0], keys), members, metric) for label, members in groups.items()]
    if all(r["n"] == 0 for r in rows):
        known = ", ".join(_known_metrics(runs)[:20]) or "none"
        raise CompareError(f"metric {metric!r} is in none of the {len(runs)} runs under {root} (known: {known})")
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0)))
    plot(
        {r["label"]: groups[r["label"]] for r in rows},
        curve,
        Path(out) if out else root / "compare.png",
        f"{root.resolve().name}: {len(runs)} runs",
    )
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1, default=str) + "\n")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m claw.compare", description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="a sweep or experiment directory; runs are found recursively")
    parser.add_argument(
        "--metric",
        default="eval/accuracy",
        help="eval/{accuracy,score,headline,pass/<criterion>}[@before|@step_<k>] or a metrics.csv column",
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
    print(format_table(rows, args.metric))
    for row in rows:
        for name in row["missing"]:
            print(f"missing {args.metric}: {name} ({row['label']})")
    print(f"\nwrote {out}" + (f" and {args.json}" if args.json else ""))


if __name__ == "__main__":
    main()
