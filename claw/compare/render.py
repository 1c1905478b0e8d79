"""What `python -m claw.compare` shows: the table as aligned plain text that is also Markdown, and the learning
curves and held-out evaluations as a PNG."""

from __future__ import annotations

import statistics
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claw.compare.runs import Run
from claw.compare.scores import cell_float, eval_value

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
        y = cell_float(row.get(curve))
        if y is None:
            continue
        order += 1
        x = cell_float(row.get("engine/version"))
        points[x if x is not None else float(order)] = y
    return points


def _eval_points(run: Run) -> dict[float, float]:
    """policy_version -> held-out accuracy for the before / step_<k> / after entries of eval.json."""
    points = {}
    for tag, entry in run.eval.items():
        if (tag in ("before", "after") or tag.startswith("step_")) and isinstance(entry, dict):
            value = eval_value(entry, "eval/headline")
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
