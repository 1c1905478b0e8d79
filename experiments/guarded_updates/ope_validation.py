"""Does the guard's OPE rank candidates as the held-out rating does? Spearman's rank correlation over checkpoints.

    python experiments/guarded_updates/ope_validation.py <run dir> [<run dir> ...] [--json out.json]

Each run must promote every candidate (run.sh validate) and evaluate after every step (`eval_every=1`), so
that eval.json's `step_k` rates candidate k — the policy whose expected judged reward the guard estimated
at step k (guard.jsonl: evidence.candidate.value, on the served version's logged turns). Pairs
(OPE value, held-out rating) per step; Spearman per run and over all runs pooled. OPE estimates the judged
reward, the rating is the persona's hidden score: a high correlation says the judge's signal and the
estimator together rank checkpoints as users would.

The level of an OPE value is mostly the level of the turns it is computed on (the served version's newest
batch: which tasks came up), so the guard decides on a *change*: the candidate's value minus the served
version's on the same turns. The second table pairs that estimated change, summed over the steps between
two evaluations, with the rating's change between them (`changes`), and counts how often their signs agree.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rundir import read_evals, read_guard  # noqa: E402


def ranks(xs: list[float]) -> list[float]:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: list[float], ys: list[float]) -> float:
    """Pearson correlation of the ranks (handles ties); nan for fewer than 3 pairs or a constant side."""
    if len(xs) != len(ys):
        raise ValueError("spearman needs pairs")
    if len(xs) < 3:
        return math.nan
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else math.nan


def pairs(run_dir: str | Path) -> list[tuple[int, float, float]]:
    """(step, OPE value of candidate k, held-out rating after step k) for every promoted candidate with both."""
    evals = read_evals(run_dir)
    out = []
    for d in read_guard(run_dir):
        cand = d["evidence"].get("candidate")
        if d["action"] == "promote" and cand is not None and d["step"] in evals:
            out.append((d["step"], float(cand["value"]), float(evals[d["step"]]["headline"])))
    return out


def changes(run_dir: str | Path) -> list[tuple[int, int, float, float]]:
    """(j, k, Σ_{s=j+1..k} OPE(candidate s) − served value at s, rating_k − rating_j) for consecutive evaluated
    steps j < k whose steps between were all promoted with an OPE estimate."""
    evals = read_evals(run_dir)
    gain: dict[int, float] = {}
    for d in read_guard(run_dir):
        cand, served = d["evidence"].get("candidate"), d["evidence"].get("served")
        if d["action"] == "promote" and cand is not None and served is not None:
            gain[d["step"]] = float(cand["value"]) - float(served["value"])
    steps, out = sorted(evals), []
    for j, k in zip(steps, steps[1:]):
        if all(s in gain for s in range(j + 1, k + 1)):
            est = sum(gain[s] for s in range(j + 1, k + 1))
            out.append((j, k, est, float(evals[k]["headline"]) - float(evals[j]["headline"])))
    return out


def sign_agreement(pairs_: list[tuple[float, float]]) -> float:
    """Fraction of pairs whose estimated and actual changes have the same sign (nan when none)."""
    return sum((a > 0) == (b > 0) for a, b in pairs_) / len(pairs_) if pairs_ else math.nan


def table(run_dirs: list[str]) -> dict:
    rows, pooled = [], []
    for run in run_dirs:
        p = pairs(run)
        pooled += p
        rows.append({"run": str(run), "n": len(p), "spearman": spearman([x[1] for x in p], [x[2] for x in p])})
    change_rows, pooled_changes = [], []
    for run in run_dirs:
        c = [(x[2], x[3]) for x in changes(run)]
        pooled_changes += c
        change_rows.append(
            {"run": str(run), "n": len(c), "spearman": spearman(*_unzip(c)), "sign_agreement": sign_agreement(c)}
        )
    return {
        "runs": rows,
        "pooled": {"n": len(pooled), "spearman": spearman([x[1] for x in pooled], [x[2] for x in pooled])},
        "changes": change_rows,
        "changes_pooled": {
            "n": len(pooled_changes),
            "spearman": spearman(*_unzip(pooled_changes)),
            "sign_agreement": sign_agreement(pooled_changes),
        },
    }


def _unzip(pairs_: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    return [a for a, _ in pairs_], [b for _, b in pairs_]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--json", default=None, help="also write the table here")
    args = ap.parse_args(argv)
    t = table(args.run_dirs)
    print("| run | checkpoints | Spearman (OPE vs held-out rating) |\n|---|---:|---:|")
    for r in [*t["runs"], {"run": "pooled", **t["pooled"]}]:
        print(f"| {r['run']} | {r['n']} | {r['spearman']:.3f} |")
    print("\n| run | intervals | Spearman (OPE change vs rating change) | signs agree |\n|---|---:|---:|---:|")
    for r in [*t["changes"], {"run": "pooled", **t["changes_pooled"]}]:
        print(f"| {r['run']} | {r['n']} | {r['spearman']:.3f} | {r['sign_agreement']:.2f} |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(t, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
