"""The personal-agent matrix's tables, results.json and robustness PNG, from run directories.

    python experiments/personal_agent/report.py [runs/personal_agent ...]

Each run directory holds what train.py writes: `summary.json` (with `provenance`: commit, diff hash, date, engine,
the overrides given), `config.yaml` (the full resolved config), `eval.json` (before / step_4 / after, and Student's
paired t-test with a bootstrap interval of the gain) and `users.jsonl` (what each simulated user did).

A *setting* is the overrides a run was given, less `seed` and `run_dir`: runs of one setting are its seeds. Each row
names every code its runs ran on (commit, `+` for uncommitted changes, whose diff hash is in results.json), so a
pooled row says when its seeds ran on different code. results.json holds one entry per run (its provenance and
resolved config included) and one per setting (mean ± sd across seeds).
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = HERE / "results.json"
PNG = HERE / "robustness.png"
HIDDEN = ("seed=", "run_dir=")


def setting(overrides: list[str]) -> str:
    """The overrides that define a setting (not the seed, not where it ran); "default" for none."""
    kept = sorted(o for o in overrides if not o.startswith(HIDDEN))
    return " ".join(kept) or "default"


def entry(run: Path) -> dict | None:
    """One run's record, or None while it has not finished (no summary.json)."""
    if not (run / "summary.json").exists():
        return None
    summary = json.loads((run / "summary.json").read_text())
    ev = json.loads((run / "eval.json").read_text())
    cfg = _portable(yaml.safe_load((run / "config.yaml").read_text()))
    prov = _portable(summary.get("provenance") or {})
    actions: Counter[str] = Counter()
    first_ratings = []
    if (run / "users.jsonl").exists():
        for line in (run / "users.jsonl").read_text().splitlines():
            record = json.loads(line)
            actions.update(record["actions"])
            first_ratings += record["ratings"][:1]
    before, after = ev["before"], ev["after"]
    return {
        "run": run.name,
        "setting": setting(prov.get("overrides", [])),
        "persona": Path(str(cfg["source"]["persona"])).stem,
        "mode": cfg["mode"]["name"],
        "habits": cfg["source"].get("habits"),
        "max_turns": cfg["source"].get("max_turns"),
        "seed": cfg["seed"],
        "provenance": prov,
        "wall_min": summary.get("wall_min"),
        "before": {
            "score": before["score"],
            "ci": [before["ci_low"], before["ci_high"]],
            "pass": before["pass_rates"],
        },
        "after": {"score": after["score"], "ci": [after["ci_low"], after["ci_high"]], "pass": after["pass_rates"]},
        "step_4": ev.get("step_4", {}).get("score"),
        "test": {k: ev.get(k) for k in ("gain", "gain_ci_low", "gain_ci_high", "ttest_rel_t", "ttest_rel_p", "n")},
        "repair": {"before": _slim(before.get("repair")), "after": _slim(after.get("repair"))},
        "users": {"actions": dict(actions), "train_first_reply_rating": _mean(first_ratings)},
        "config": cfg,
    }


def _portable(value):
    """Paths inside the repository as paths from its root (results.json names no machine's directories)."""
    if isinstance(value, dict):
        return {k: _portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v) for v in value]
    if isinstance(value, str):
        return value.replace(str(ROOT) + "/", "")  # also inside an override such as run_dir=<path>
    return value


def _rating(ev: dict) -> dict:
    return {"score": ev["score"], "ci": [ev["ci_low"], ev["ci_high"]], "pass": ev["pass_rates"]}


def _code(run: dict) -> str:
    p = run["provenance"]
    return f"{(p.get('commit') or '?')[:7]}{'+' if p.get('dirty') else ''}"


def _slim(repair: dict | None) -> dict | None:
    return None if not repair else {k: v for k, v in repair.items() if k != "scores"}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def _sd(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def newest_per_seed(runs: list[dict]) -> list[dict]:
    """A setting's runs, one per seed: a seed run again (on later code) stands for that seed, and the earlier run
    is marked `superseded_by` (it stays in results.json) — never two samples of one seed in a mean or an sd."""
    newest: dict[int, dict] = {}
    for r in sorted(runs, key=lambda r: r["provenance"].get("date") or ""):
        if r["seed"] in newest:
            newest[r["seed"]]["superseded_by"] = r["run"] + f" ({_code(r)})"
        newest[r["seed"]] = r
    return sorted(newest.values(), key=lambda r: r["seed"])


def settings(runs: list[dict]) -> list[dict]:
    """One row per setting: mean ± sd across its seeds of before, after and the gain; every seed's p and code."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in runs:
        groups[(r["persona"], r["mode"], r["setting"])].append(r)
    out = []
    for (_, _, name), rs in sorted(groups.items()):
        rs = newest_per_seed(rs)
        gains = [r["after"]["score"] - r["before"]["score"] for r in rs]
        repaired = [r for r in rs if r["repair"]["after"] and r["repair"]["after"]["n"] and r["repair"]["before"]]
        repair = {
            when: {key: _mean([r["repair"][when][key] for r in repaired]) for key in ("first", "second")}
            for when in ("before", "after")
        }
        out.append({
            "setting": name, "persona": rs[0]["persona"], "mode": rs[0]["mode"], "codes": [_code(r) for r in rs],
            "seeds": [r["seed"] for r in rs], "runs": [r["run"] for r in rs],
            "before": [_mean([r["before"]["score"] for r in rs]), _sd([r["before"]["score"] for r in rs])],
            "after": [_mean([r["after"]["score"] for r in rs]), _sd([r["after"]["score"] for r in rs])],
            "gain": [_mean(gains), _sd(gains)],
            "gains": gains,
            "p": [r["test"]["ttest_rel_p"] for r in rs],
            "gain_ci": [[r["test"]["gain_ci_low"], r["test"]["gain_ci_high"]] for r in rs],
            "repair": repair if repaired else None,  # first reply -> reply after a complaint, before / after training
        })  # fmt: skip
    return out


def markdown(rows: list[dict]) -> str:
    lines = [
        "| setting | persona | mode | seeds | before | after | gain (mean ± sd) | per seed: gain [95% bootstrap CI], "
        "t-test p | first reply → reply after a complaint (failed first replies) | code |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rows:
        per_seed = "; ".join(
            f"{g:+.2f} [{lo:+.2f}, {hi:+.2f}], p={p:.1g}" for g, (lo, hi), p in zip(s["gains"], s["gain_ci"], s["p"])
        )
        rep = s["repair"]
        repair = "—" if not rep else (
            f"before {rep['before']['first']:.2f} → {rep['before']['second']:.2f}; "
            f"after {rep['after']['first']:.2f} → {rep['after']['second']:.2f}"
        )  # fmt: skip
        lines.append(
            f"| {s['setting']} | {s['persona']} | {s['mode']} | {len(s['seeds'])} | {s['before'][0]:.3f} ± "
            f"{s['before'][1]:.3f} | {s['after'][0]:.3f} ± {s['after'][1]:.3f} | "
            f"{s['gain'][0]:+.3f} ± {s['gain'][1]:.3f}"
            f" | {per_seed} | {repair} | {', '.join(dict.fromkeys(s['codes']))} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path = PNG) -> None:
    """Gain of each one-habit setting of the student, combine, against the oracle, with rl and opd beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    student = [s for s in rows if s["persona"] == "student" and "max_turns" not in s["setting"]]
    if not student:
        return
    student.sort(key=lambda s: (s["mode"], s["gain"][0]))
    fig, ax = plt.subplots(figsize=(10.5, 0.35 * len(student) + 1.5))
    colours = {"combine": "tab:blue", "rl": "tab:orange", "opd": "tab:green"}

    def label(s: dict) -> str:
        """The habits a row changes (mode and persona have their own colour and title), and the code it ran on."""
        name = s["setting"].replace("source.habits=", "").replace("{preset:oracle,", "oracle + {")
        name = " ".join(w for w in name.split() if not w.startswith(("mode=", "source.persona=", "default")))
        codes = sorted({c.rstrip("+") for c in s["codes"]})
        code = codes[0] if len(codes) == 1 else f"{len(codes)} commits"
        return f"{s['mode']}: {name or 'realistic'} (n={len(s['seeds'])}, {code})"[:90]

    labels = [label(s) for s in student]
    ax.barh(range(len(student)), [s["gain"][0] for s in student], xerr=[s["gain"][1] for s in student],
            color=[colours.get(s["mode"], "grey") for s in student])  # fmt: skip
    ax.set_yticks(range(len(student)), labels, fontsize=7)
    ax.axvline(0.30, color="k", ls="--", lw=0.8, label="the bar: +0.30")
    ax.legend(loc="lower right", fontsize=7)
    ax.set_xlabel("gain of the first-reply rating (after - before; bars: mean ± sd over seeds)")
    ax.set_title("student persona: what each user habit costs", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the longest label whole


def main(roots: list[Path]) -> None:
    runs = [e for root in roots for p in sorted(root.iterdir()) if p.is_dir() and (e := entry(p)) is not None]
    rows = settings(runs)
    print(markdown(rows))
    RESULTS.write_text(json.dumps({"settings": rows, "runs": runs}, indent=1) + "\n")
    plot(rows)


if __name__ == "__main__":
    main([Path(p) for p in (sys.argv[1:] or ["runs/personal_agent"])])
