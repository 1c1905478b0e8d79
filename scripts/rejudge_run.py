"""Judge a finished run's turns again with the judge as it is now, and compare with what the run recorded.

    python scripts/rejudge_run.py runs/personal_agent/<run> [...]

Training rests on the judge's readings, so a change to the judge that is meant to leave training alone should
leave every recorded (reward, hint) of a run equal. Each run is judged with its own `config.yaml`'s judge and
mode; a turn counts as changed when its reward or its hint differs from the run's `proxy.jsonl` verdict.
Prints one line per run; exits 1 when any turn changed, 2 when a path is not a run directory.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from omegaconf import OmegaConf

from claw.judge import build_judges
from claw.judge.turn import Turn
from claw.judge.verdict import judge_turn
from claw.modes import Mode


def rejudge(run: Path) -> tuple[int, list[str]]:
    cfg = OmegaConf.load(run / "config.yaml")
    judges, mode = build_judges(cfg.judge), Mode.from_cfg(cfg.mode)
    turns, recorded = {}, {}
    for text in (run / "proxy.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(text)
        if r.get("kind") == "turn":
            turns[r["turn_id"]] = r
        elif r.get("kind") == "next_state" and r["turn_id"] in turns:
            turns[r["turn_id"]]["next_state"] = r["messages"]
        elif r.get("kind") == "verdict" and r.get("verdict"):
            recorded[r["turn_id"]] = r["verdict"]
    changed = []
    for turn_id, v in recorded.items():
        verdict = asyncio.run(judge_turn(judges, Turn.from_json(turns[turn_id]), mode))
        if (verdict.reward, verdict.hint) != (v.get("reward"), v.get("hint")):
            changed.append(f"{turn_id}: {v.get('reward')} {v.get('hint')!r} -> {verdict.reward} {verdict.hint!r}")
    return len(recorded), changed


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    missing = [p for p in argv if not (Path(p) / "config.yaml").exists() or not (Path(p) / "proxy.jsonl").exists()]
    if missing:
        print(f"not a run directory (needs config.yaml and proxy.jsonl): {', '.join(missing)}", file=sys.stderr)
        return 2
    bad = 0
    for path in argv:
        n, changed = rejudge(Path(path))
        bad += bool(changed)
        print(f"{path}: {n} judged turns, {len(changed)} read differently now")
        for line in changed[:5]:
            print("   ", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
