"""A run's final value of a metric (eval.json's numbers or the last value of a metrics.csv column), the metrics a
run has, the default metric, and one table row per setting (mean ± sd over seeds, min, max, the seeds)."""

from __future__ import annotations

import statistics
from typing import Any

from claw.compare.runs import CompareError, Run
from claw.provenance import name_of


def cell_float(cell: str | None) -> float | None:
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


def eval_value(entry: Any, metric: str) -> float | None:
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
        return eval_value(run.eval.get(tag), metric)
    values = [v for v in (cell_float(row.get(metric)) for row in run.rows) if v is not None]
    return values[-1] if values else None


def _stats(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None}
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.fmean(values), "std": std, "min": min(values), "max": max(values)}


def setting_row(label: str, setting_: dict[str, str], runs: list[Run], metric: str) -> dict[str, Any]:
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
