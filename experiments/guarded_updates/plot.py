"""The guard's decisions and the served rating over steps, guarded vs unguarded (the destructive run of run.sh).

    python experiments/guarded_updates/plot.py <guarded run dir> <unguarded run dir> --out decisions.png

Top: the held-out rating of what the engine served after each step (eval.json, `eval_every=1`) with its
95% interval, both runs, and the base interval (step 0) as a band. Bottom: the guarded run's decision at
each step (promote / hold / rollback) and the version it served.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rundir import read_evals, read_guard  # noqa: E402

MARKERS = {"promote": ("^", "tab:green"), "hold": ("o", "tab:orange"), "rollback": ("v", "tab:red")}


def plot(guarded: str, unguarded: str, out: str) -> Path:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    base = None
    for run, label, color in ((guarded, "guarded", "tab:blue"), (unguarded, "unguarded", "tab:gray")):
        evals = read_evals(run)
        if not evals:
            continue
        steps = list(evals)
        top.plot(steps, [e["headline"] for e in evals.values()], marker=".", color=color, label=label)
        top.fill_between(
            steps,
            [e["ci_low"] for e in evals.values()],
            [e["ci_high"] for e in evals.values()],
            color=color,
            alpha=0.15,
        )
        base = base or evals.get(0)
    if base is not None:
        top.axhspan(base["ci_low"], base["ci_high"], color="black", alpha=0.07, label="base 95% interval")
    top.set_ylabel("served rating (held-out)")
    top.legend(loc="best", fontsize=8)
    decisions = read_guard(guarded)
    for action, (marker, color) in MARKERS.items():
        pts = [(d["step"], d["served_version"]) for d in decisions if d["action"] == action]
        if pts:
            bottom.scatter(*zip(*pts), marker=marker, color=color, label=action, zorder=3)
    if decisions:
        bottom.step(
            [d["step"] for d in decisions],
            [d["served_version"] for d in decisions],
            where="post",
            color="tab:blue",
            alpha=0.5,
        )
    bottom.set_xlabel("step (policy version trained)")
    bottom.set_ylabel("served version")
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle("Guarded updates: optim.lr 30x default, seed 0")
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return Path(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("guarded")
    ap.add_argument("unguarded")
    ap.add_argument("--out", default="experiments/guarded_updates/decisions.png")
    args = ap.parse_args(argv)
    print(plot(args.guarded, args.unguarded, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
