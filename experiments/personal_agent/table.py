"""Per-run table of the personal-agent matrix: rating and per-criterion pass rates before / step 4 / after.

    python experiments/personal_agent/table.py [runs/personal_agent]   (prints Markdown; writes results.json beside this file)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(root: Path) -> None:
    rows = []
    for run in sorted(p for p in root.iterdir() if (p / "eval.json").exists()):
        ev = json.loads((run / "eval.json").read_text())
        summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").exists() else {}
        rows.append({"run": run.name, "eval": ev, "finished": bool(summary), "wall_min": summary.get("wall_min")})
    print("| run | rating before → step 4 → after (95% CI after) | " + "criterion pass rates before → after | paired p |")
    print("|---|---|---|---|")
    for r in rows:
        ev = r["eval"]
        b, s4, a = ev.get("before"), ev.get("step_4"), ev.get("after")
        fmt = lambda e: f"{e['score']:.3f}" if e else "—"  # noqa: E731
        ci = f" [{a['ci_low']:.3f}, {a['ci_high']:.3f}]" if a else ""
        crit = ", ".join(f"{k} {b['pass_rates'][k]:.2f}→{(a or s4 or b)['pass_rates'][k]:.2f}" for k in b["pass_rates"]) if b else ""
        p = ev.get("paired_t_p")
        print(f"| {r['run']}{'' if r['finished'] else ' (unfinished)'} | {fmt(b)} → {fmt(s4)} → {fmt(a)}{ci} | {crit} | {'—' if p is None else f'{p:.2g}'} |")
    (HERE / "results.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/personal_agent"))
