"""Per-run table of the personal-agent matrix: rating and per-criterion pass rates before / step 4 / after.

    python experiments/personal_agent/table.py [runs/personal_agent ...]
    (prints Markdown; updates results.json beside this file)

archive/results_until_2026-12-06.json accumulates: a run read from a directory replaces its entry (by run name),
and entries whose directories are not here (earlier runs, deleted to save disk) are kept, so the tables cover them
all.

Each run directory holds `config.yaml`, `eval.json` and `summary.json` (train.py writes them). One entry per
run in results.json: run, persona, mode, seed, engine, schedule, credit, variant (the levers set away from the
first matrix's settings, e.g. "credit=graded"), eval (before / step_4 / after), p (paired t-test).
Then a summary per (persona, mode, engine, schedule, variant): the mean over seeds of before and after, the worst p.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# The levers studied, with the value the first matrix ran at: a run that sets one otherwise is a variant.
LEVERS = {
    "judge.credit": "binary", "mode.opd_center": False, "mode.w_opd": 1.0, "mode.w_rl": 1.0, "algo.kl_coef": 0.0,
    "algo.kl_opening": 0, "algo.negative_weight": 1.0,
    "optim.lr": 3.0e-5, "optim.schedule": "constant", "steps": 8, "batch_size": 8, "mode.teacher": "frozen",
    "source.n": 1,
    "algo.name": "reinforce", "algo.overlong.mode": "none", "algo.overlong.penalty": 0.5, "judge.credit_points": None,
    "judge.credit_floor": -1.0, "judge.reader_head_flips": False,
    "mode.opd_skip_end": False, "mode.opd_skip_start": 0, "mode.topk": 0, "mode.topk_coef": 0.0,
    "lora.enabled": False, "mode.hint_role": "user", "mode.hint_contrast": None,
    "mode.hint_contrast_scale": 1.0, "mode.hint_gate": None, "algo.ppo_epochs": 1, "source.temperature": 0.7,
    "mode.opd_role": "term", "mode.credit_scale": 1.0, "mode.credit_cap": 4.0,
    "mode.hint_format": "{content}\n\n[hint] {hint}",
}  # fmt: skip
LABELS = {
    "algo.overlong.mode": "overlong.mode", "algo.overlong.penalty": "overlong.penalty", "lora.enabled": "lora",
    "mode.hint_role": "hint_role", "mode.hint_contrast": "contrast",
    "mode.hint_contrast_scale": "contrast_scale", "mode.hint_gate": "hint_gate", "algo.ppo_epochs": "ppo_epochs",
    "source.temperature": "temperature", "mode.opd_role": "opd_role", "mode.hint_format": "hint_format",
}  # fmt: skip
IRRELEVANT = {
    "opd": ("judge.credit", "algo.name", "mode.w_"),
    "rl": ("mode.teacher", "mode.opd_", "mode.w_", "mode.hint_"),
}


_MISSING = object()  # a key the run's config does not have (older code): the lever's first value


def _get(cfg: dict, dotted: str):
    for key in dotted.split("."):
        if not isinstance(cfg, dict) or key not in cfg:
            return _MISSING
        cfg = cfg[key]
    return cfg


def _portable(value):
    """A path inside the repository (`mode.teacher=$PWD/runs/...`) as the path from its root, so results.json names
    no machine's directories; any other value as it is."""
    if isinstance(value, str) and value.startswith("/"):
        try:
            return str(Path(value).relative_to(ROOT))
        except ValueError:
            return value
    return value


def variant(cfg: dict) -> str:
    """The levers this run sets away from the first matrix's values ("" = none), e.g. "credit=graded"."""
    changed = []
    for dotted, default in LEVERS.items():
        value = _get(cfg, dotted)
        mode = cfg.get("mode", {}).get("name")
        if value is not _MISSING and value != default and not dotted.startswith(IRRELEVANT.get(mode, ())):
            changed.append(f"{LABELS.get(dotted, dotted.rsplit('.', 1)[-1])}={_portable(value)}")
    return " ".join(changed)


def _entry(run: Path) -> dict:
    ev = json.loads((run / "eval.json").read_text())
    summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").exists() else {}
    cfg = yaml.safe_load((run / "config.yaml").read_text()) if (run / "config.yaml").exists() else {}
    source = cfg.get("source", {})
    persona = Path(str(source.get("persona", "?"))).stem
    bulky = ("examples", "responses")  # the replies themselves stay in the run's eval.json
    slim = {k: {kk: vv for kk, vv in v.items() if kk not in bulky} for k, v in ev.items() if isinstance(v, dict)}
    return {
        "run": run.name,
        "persona": persona,
        "mode": cfg.get("mode", {}).get("name"),
        "seed": cfg.get("seed"),
        "engine": summary.get("engine") or cfg.get("engine", {}).get("kind"),
        "schedule": source.get("schedule", "free"),
        "credit": (None if (c := _get(cfg, "judge.credit")) is _MISSING else c) or "binary",
        "variant": variant(cfg),
        "eval": slim,
        "p": ev.get("paired_t_p"),
        "finished": bool(summary),
        "wall_min": summary.get("wall_min"),
    }


def merge(recorded: list[dict], read: list[dict]) -> list[dict]:
    """results.json's entries updated with the runs just read (a run read again replaces its entry), by run name."""
    by_run = {r["run"]: r for r in recorded}
    by_run.update({r["run"]: r for r in read})
    return [by_run[name] for name in sorted(by_run)]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def summarise(rows: list[dict]) -> list[tuple]:
    """Per (persona, mode, engine, schedule, variant): (key, seeds, mean before, mean after, worst p).

    The mean is over seeds: a config run again under another name (main_s0_s15, …_head) is the same seed, so its
    runs are averaged first. Runs named as reproducibility checks (…_repeat, …_final) are left out."""
    groups: dict[tuple, dict] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["eval"].get("after") and not r["run"].endswith(("_repeat", "_earlier", "_repeat_final", "_final")):
            groups[(r["persona"], r["mode"], r["engine"], r["schedule"], r["variant"])][r["seed"]].append(r)
    out = []
    for key, by_seed in sorted(groups.items()):
        runs = [r for rs in by_seed.values() for r in rs]
        before = _mean([_mean([r["eval"]["before"]["score"] for r in rs]) for rs in by_seed.values()])
        after = _mean([_mean([r["eval"]["after"]["score"] for r in rs]) for rs in by_seed.values()])
        worst = max((r["p"] for r in runs if r["p"] is not None), default=float("nan"))
        out.append((key, len(by_seed), before, after, worst))
    return out


def main(roots: list[Path]) -> None:
    read = [_entry(p) for root in roots for p in sorted(root.iterdir()) if (p / "eval.json").exists()]
    results = HERE / "archive" / "results_until_2026-12-06.json"
    rows = merge(json.loads(results.read_text()) if results.exists() else [], read)
    print(
        "| run | persona | mode | variant | seed | engine | rating before → step 4 → after (95% CI after) "
        "| criteria before → after | p | min |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ev = r["eval"]
        b, s4, a = ev.get("before"), ev.get("step_4"), ev.get("after")
        fmt = lambda e: f"{e['score']:.3f}" if e else "—"  # noqa: E731
        ci = f" [{a['ci_low']:.3f}, {a['ci_high']:.3f}]" if a else ""
        crit = (
            ", ".join(f"{k} {b['pass_rates'][k]:.2f}→{(a or s4 or b)['pass_rates'][k]:.2f}" for k in b["pass_rates"])
            if b
            else ""
        )
        if b and "apology_rate" in (a or s4 or b):  # unrated; recorded since 2026-12-02
            crit += f"; apology opening {b['apology_rate']:.2f}→{(a or s4 or b)['apology_rate']:.2f}"
        p = "—" if r["p"] is None else f"{r['p']:.2g}"
        wall = "—" if r["wall_min"] is None else f"{r['wall_min']:.1f}"
        name = r["run"] + ("" if r["finished"] else " (unfinished)")
        print(
            f"| {name} | {r['persona']} | {r['mode']} | {r['variant'] or '—'} | {r['seed']} | {r['engine']} | "
            f"{fmt(b)} → {fmt(s4)} → {fmt(a)}{ci} | {crit} | {p} | {wall} |"
        )
    print("\n| persona | mode | engine | schedule | variant | seeds | before | after | gain | worst p |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (persona, mode, engine, schedule, var), n, before, after, worst in summarise(rows):
        print(
            f"| {persona} | {mode} | {engine} | {schedule} | {var or '—'} | {n} | {before:.3f} | {after:.3f} "
            f"| {after - before:+.3f} | {worst:.2g} |"
        )
    results.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main([Path(p) for p in (sys.argv[1:] or ["runs/personal_agent"])])
