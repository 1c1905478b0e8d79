"""Tables, bars and the figure of the per-user experiment, from the runs' own files.

    python experiments/per_user/report.py runs/per_user      (prints; writes results.json and ratings.png here)

Per setting (shared, per_user), person and seed: the rating of the first response before and after (the persona's
hidden scorer on the run's held-out tasks), the gain with Student's paired t-test over tasks (scipy.stats.ttest_rel)
and a 95% BCa bootstrap interval. Per person, per_user against shared after training: the tasks of every seed
pooled as pairs (both settings rate the same tasks for a seed: the eval set is fixed by the seed), ttest_rel.
The cross table (experiments/per_user/cross.py): the mean over seeds of adapter i rated by person j.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from claw.evaluation import paired_test, seeds_summary  # noqa: E402

SETTINGS = ("shared", "per_user", "per_user_lr3e-4")  # the last: the first lr tried, seed 0 only
CONFLICT = ("terse", "explainer")  # the pair whose wishes are opposite


def load(root: Path) -> dict:
    runs: dict = {s: {} for s in SETTINGS}
    for setting in SETTINGS:
        for d in sorted(root.glob(f"{setting}_s[0-9]*")):
            if not (d / "summary.json").exists():
                continue
            seed = int(d.name.rsplit("_s", 1)[1])
            summary = json.loads((d / "summary.json").read_text())
            runs[setting][seed] = {
                "dir": d,
                "eval": summary["eval"],
                "commit": summary["provenance"]["commit"],
                # run_dir names a path on the machine that ran it: the run is named by its directory instead
                "overrides": [o for o in summary["provenance"]["overrides"] if not o.startswith("run_dir=")],
                "wall_min": summary["wall_min"],
                "steps": summary["steps"],
                "cross": json.loads((d / "cross.json").read_text()) if (d / "cross.json").exists() else None,
            }
    return runs


def report(root: Path) -> dict:
    runs = load(root)
    people = sorted({p for s in runs.values() for r in s.values() for p in r["eval"]["after"]["people"]})
    out: dict = {"runs": {}, "gains": {}, "per_user_vs_shared": {}, "bars": {}}
    for setting, by_seed in runs.items():
        for seed, r in sorted(by_seed.items()):
            out["runs"][f"{setting}_s{seed}"] = {"run": r["dir"].name, "commit": r["commit"],
                                                 "overrides": r["overrides"], "wall_min": r["wall_min"]}  # fmt: skip
    print(f"# per-user experiment ({root}); seeds: " + ", ".join(f"{s} {sorted(v)}" for s, v in runs.items()))
    for setting, by_seed in runs.items():
        out["gains"][setting] = {}
        for person in people:
            rows = []
            for seed, r in sorted(by_seed.items()):
                before = r["eval"]["before"]["people"][person]
                after = r["eval"]["after"]["people"][person]
                t = paired_test(before["scores"], after["scores"])
                rows.append({"seed": seed, "before": before["score"], "after": after["score"], **t.to_json()})
            gains = [row["gain"] for row in rows]
            mean, sd = seeds_summary(gains) if gains else (float("nan"), 0.0)
            out["gains"][setting][person] = {"mean": mean, "sd": sd, "seeds": rows}
            per = "; ".join(f"s{r['seed']} {r['before']:.3f}->{r['after']:.3f} ({r['gain']:+.3f} "
                            f"[{r['gain_ci_low']:+.3f}, {r['gain_ci_high']:+.3f}] p={r['ttest_rel_p']:.2g})"
                            for r in rows)  # fmt: skip
            print(f"{setting:>8} {person:>9}: gain {mean:+.3f} ± {sd:.3f}  | {per}")
    for person in people:
        a, b = [], []
        for seed in sorted(set(runs["shared"]) & set(runs["per_user"])):
            a += runs["per_user"][seed]["eval"]["after"]["people"][person]["scores"]
            b += runs["shared"][seed]["eval"]["after"]["people"][person]["scores"]
        if a:
            t = paired_test(b, a)
            out["per_user_vs_shared"][person] = t.to_json()
            print(f"per_user - shared, {person:>9} (after, {t.n} task pairs over seeds): {t.gain:+.3f} "
                  f"[{t.gain_low:+.3f}, {t.gain_high:+.3f}], ttest_rel p = {t.p:.2g}")  # fmt: skip
    pu = out["gains"].get("per_user", {})
    out["bars"]["each_person_gains_0.20"] = {p: pu[p]["mean"] >= 0.20 for p in pu if pu[p]["seeds"]}
    vs = out["per_user_vs_shared"]
    out["bars"]["conflict_pair_beats_shared_by_0.15_p<0.01"] = {
        p: vs[p]["gain"] >= 0.15 and vs[p]["ttest_rel_p"] < 0.01 for p in CONFLICT if p in vs
    }
    crosses = [r["cross"] for r in runs["per_user"].values() if r["cross"]]
    if crosses:
        adapters = list(crosses[0]["table"])
        mean = {a: {p: sum(c["table"][a][p] for c in crosses) / len(crosses) for p in people} for a in adapters}
        out["cross"] = {"seeds": len(crosses), "table": mean}
        print(f"\ncross table (mean of {len(crosses)} seeds; row: adapter, column: the person rating it)")
        print(f"{'':>10} " + " ".join(f"{p:>9}" for p in people))
        for a in adapters:
            print(f"{a:>10} " + " ".join(f"{mean[a][p]:9.3f}" for p in people))
        out["bars"]["each_adapter_best_for_its_own_person"] = {
            p: max((a for a in adapters if a != "base"), key=lambda a: mean[a][p]) == p for p in people
        }
    print("\nbars: " + json.dumps(out["bars"]))
    plot(runs, people, HERE / "ratings.png")
    (HERE / "results.json").write_text(json.dumps(out, indent=1, default=str))
    return out


def plot(runs: dict, people: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(people), figsize=(4 * len(people), 3.4), sharey=True)
    for ax, person in zip(axes, people, strict=True):
        for setting, style in (("shared", "--o"), ("per_user", "-s")):
            by_step: dict[int, list[float]] = {}
            for r in runs[setting].values():
                for tag, result in r["eval"].items():
                    if tag not in ("before", "after") and not tag.startswith("step_"):
                        continue  # the paired tests written beside the evaluations
                    step = 0 if tag == "before" else r["steps"] if tag == "after" else int(tag.removeprefix("step_"))
                    by_step.setdefault(step, []).append(result["people"][person]["score"])
            if not by_step:
                continue
            xs = sorted(by_step)
            means = [sum(by_step[x]) / len(by_step[x]) for x in xs]
            sds = [seeds_summary(by_step[x])[1] for x in xs]
            ax.errorbar(xs, means, yerr=sds, fmt=style, capsize=3, label=f"{setting} (n={len(runs[setting])} seeds)")
        ax.set_title(person)
        ax.set_xlabel("rollout batch (8 per person)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("rating of the first response")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    report(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/per_user"))
