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
from typing import TYPE_CHECKING, Any

import yaml
from omegaconf import OmegaConf

from claw.provenance import in_setting, name_of, setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class CompareError(Exception):
    """A problem with the input (no runs, unknown metric): reported with exit code 2."""


@dataclass
class Run:
    path: Path
    name: str  # path relative to the directory searched
    config: dict[str, Any]  # flattened: dotted keys -> scalars and lists
    eval: dict[str, Any] = field(default_factory=dict)  # eval.json (or summary.json's "eval")
    rows: list[dict[str, str]] = field(default_factory=list)  # metrics.csv rows, all launches in order
    overrides: list[str] | None = None  # as given on the command line; None: the run kept no record of them

    @property
    def seed(self) -> Any:
        return self.config.get("seed")


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


def _overrides(run_dir: Path, summary: dict[str, Any]) -> list[str] | None:
    """summary.json's provenance.overrides, else .hydra/overrides.yaml. A resumed run's summary holds the resume
    command's overrides (`resume=<dir> steps=20`): its first launch's, when Hydra wrote them here, come first."""
    hydra_file = run_dir / ".hydra" / "overrides.yaml"
    first = [str(o) for o in yaml.safe_load(hydra_file.read_text()) or []] if hydra_file.exists() else None
    given = (summary.get("provenance") or {}).get("overrides")
    if given is None:
        return first
    given = [str(o) for o in given]
    if first is not None and any(o.lstrip("+").startswith("resume=") for o in given):
        return first + given
    return given


def load_runs(directory: str | Path) -> list[Run]:
    """Every run under `directory` (recursively), sorted by path."""
    root = Path(directory)
    runs = []
    for cfg_path in sorted(root.rglob("config.yaml")):
        run_dir = cfg_path.parent
        if not ((run_dir / "summary.json").exists() or (run_dir / "csv").is_dir()):
            continue
        config = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False)
        summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
        if (run_dir / "eval.json").exists():
            evals = json.loads((run_dir / "eval.json").read_text())
        else:
            evals = summary.get("eval") or {}
        name = str(run_dir.relative_to(root)) if run_dir != root else "."
        runs.append(Run(run_dir, name, _flatten(config), evals, _read_rows(run_dir), _overrides(run_dir, summary)))
    return runs


def _show(value: Any) -> str:  # one line: control characters escaped
    return value.encode("unicode_escape").decode() if isinstance(value, str) else json.dumps(value, default=str)


def _config_key(run: Run) -> str:
    return json.dumps({k: v for k, v in run.config.items() if in_setting(k)}, sort_keys=True, default=str)


def _inferred_overrides(runs: list[Run]) -> dict[str, list[str]]:
    """Overrides for the runs that kept no record of theirs (one still running with its run_dir outside Hydra's
    output directory, or older than summary.json's provenance): those of a recorded run with the same config
    less seeds and paths; otherwise the config values that differ among the unmatched runs, over the keys all
    of them have."""
    recorded = {_config_key(r): r.overrides for r in runs if r.overrides is not None}
    inferred = {r.name: recorded[_config_key(r)] for r in runs if r.overrides is None and _config_key(r) in recorded}
    rest = [r for r in runs if r.overrides is None and r.name not in inferred]
    if rest:
        keys = set.intersection(*(set(r.config) for r in rest))
        differing = sorted(k for k in keys if in_setting(k) and len({_show(r.config[k]) for r in rest}) > 1)
        inferred |= {r.name: [f"{k}={_show(r.config[k])}" for k in differing] for r in rest}
    return inferred


def setting_of(run: Run, inferred: dict[str, list[str]] | None = None) -> dict[str, str]:
    """claw.provenance.setting of the run's overrides (of `inferred[run.name]` for a run without a record)."""
    overrides = run.overrides if run.overrides is not None else (inferred or {}).get(run.name, [])
    return setting(overrides)


def label_of(setting_: dict[str, str], keys: list[str]) -> str:
    """The setting named by `keys` alone (those that differ between settings); "default" when it sets none."""
    return name_of({k: setting_[k] for k in keys if k in setting_}, max_len=10_000)


def settings(runs: list[Run]) -> list[tuple[str, dict[str, str], list[Run]]]:
    """(label, setting, its runs) per setting, in the order first seen. A label is the setting named by the
    overrides that differ between settings ("mode=rl", "engine=hf", "default" for the one that sets none of
    them); a lone setting is "all"."""
    inferred = _inferred_overrides(runs)
    by_setting: dict[str, tuple[dict[str, str], list[Run]]] = {}
    for run in runs:
        s = setting_of(run, inferred)
        by_setting.setdefault(json.dumps(s), (s, []))[1].append(run)
    found = list(by_setting.values())
    if len(found) == 1:
        return [("all", *found[0])]
    keys = [k for k in sorted({k for s, _ in found for k in s}) if len({s.get(k) for s, _ in found}) > 1]
    return [(label_of(s, keys), s, members) for s, members in found]


def group_settings(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs by setting label (see `settings`)."""
    return {label: members for label, _, members in settings(runs)}


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


def _row(label: str, setting_: dict[str, str], runs: list[Run], metric: str) -> dict[str, Any]:
    scores = [(r, final_score(r, metric)) for r in runs]
    values = [score for _, score in scores if score is not None]
    row: dict[str, Any] = {"label": label, "setting": setting_, "setting_name": name_of(setting_)}  # W&B's group
    row |= {"n": len(values), **_stats(values)}
    row["seeds"] = [r.seed for r, score in scores if score is not None]
    if _eval_tag(metric) is not None:
        before = [b for b in (final_score(r, metric.partition("@")[0] + "@before") for r in runs) if b is not None]
        row["before_mean"] = statistics.fmean(before) if before else None
    row["runs"] = [{"run": r.name, "seed": r.seed, "score": score} for r, score in scores]
    row["missing"] = [r.name for r, score in scores if score is None]
    return row


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def format_table(rows: list[dict[str, Any]], metric: str) -> str:
    """Aligned plain text that is also a Markdown table."""
    header = ["setting", "n", f"{metric} mean ± sd", "min", "max"]
    with_before = any("before_mean" in r for r in rows)
    header += ["before", "seeds", "missing"] if with_before else ["seeds", "missing"]
    cells = []
    for r in rows:
        score = "—" if r["mean"] is None else f"{_fmt(r['mean'])} ± {_fmt(r['std'])}"
        line = [r["label"], str(r["n"]), score, _fmt(r["min"]), _fmt(r["max"])]
        line += [_fmt(r.get("before_mean"))] if with_before else []
        line += [", ".join(map(str, r["seeds"])) or "—", str(len(r["missing"]))]
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


def plot(groups: dict[str, list[Run]], curve: str, out: Path, title: str) -> Figure:
    """Learning curves (mean ± sd band over seeds) and held-out evaluations, one colour per setting; the legend
    sits right of both panels, and the saved image is cropped to what was drawn (nothing covered, nothing cut)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(12, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax_curve, ax_eval = fig.subplots(1, 2)
    handles = []
    for i, (label, runs) in enumerate(groups.items()):
        color = f"C{i % 10}"
        series = [s for s in (_curve(r, curve) for r in runs) if s]
        if series:
            xs, mean, std = _mean_std(series)
            ax_curve.plot(xs, mean, color=color)
            if len(series) > 1:
                ax_curve.fill_between(
                    xs, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], color=color, alpha=0.2
                )
        points = [p for p in (_eval_points(r) for r in runs) if p]
        if points:
            xs, mean, std = _mean_std(points)
            ax_eval.errorbar(xs, mean, yerr=std if len(points) > 1 else None, color=color, marker="o", capsize=3)
        if series or points:
            text = textwrap.fill(f"{label} ({len(runs)} runs)", 48, subsequent_indent="  ")
            handles.append(Line2D([], [], color=color, marker="o", label=text))
    for ax, what in ((ax_curve, curve), (ax_eval, "eval.json")):
        if not ax.has_data():
            ax.text(0.5, 0.5, f"no {what} in any run", ha="center", va="center", transform=ax.transAxes)
    if handles:
        ax_eval.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small"
        )
    ax_curve.set(title=f"{curve} (mean ± sd over seeds)", xlabel="rollout batch (engine/version)", ylabel=curve)
    ax_eval.set(
        title="held-out evaluation (before / step_k / after)",
        xlabel="policy version",
        ylabel="accuracy or persona rating",
    )
    fig.suptitle(textwrap.fill(title, 110))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return fig


def metrics_of(run: Run) -> list[str]:
    """The metrics `run` has a final value of, in the order a default is picked: eval.json's numbers, its pass
    rates, then the metrics.csv columns (rollout/reward_mean first)."""
    found = [m for m in ("eval/headline", "eval/score", "eval/accuracy") if final_score(run, m) is not None]
    after = run.eval.get("after")
    if isinstance(after, dict):
        found += [f"eval/pass/{c}" for c in sorted(after.get("pass_rates") or {})]
    columns = {k for row in run.rows for k, v in row.items() if v not in (None, "") and k not in ("step", "epoch")}
    found += sorted(columns, key=lambda c: (c != "rollout/reward_mean", c))
    return list(dict.fromkeys(found))


def default_metric(runs: list[Run]) -> str:
    """eval/headline when every run that reached its final evaluation has it (a run killed before it is listed
    as missing), else the first metric all runs have."""
    evaluated = [r for r in runs if "after" in r.eval]
    if evaluated and all(final_score(r, "eval/headline") is not None for r in evaluated):
        return "eval/headline"
    have = [metrics_of(r) for r in runs]
    common = [m for m in have[0] if all(m in h for h in have[1:])]
    if common:
        return common[0]

    def listing(metrics: list[str]) -> str:
        more = f" (+{len(metrics) - 8} more)" if len(metrics) > 8 else ""
        return ", ".join(metrics[:8]) + more if metrics else "nothing"

    each = "; ".join(f"{r.name}: {listing(h)}" for r, h in zip(runs, have))
    raise CompareError(f"no metric is common to all {len(runs)} runs; pick one with --metric. Each run has: {each}")


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
    rows = [_row(label, setting_, members, metric) for label, setting_, members in found]
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


if __name__ == "__main__":
    main()
