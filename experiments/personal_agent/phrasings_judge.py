"""How the rule judge reads the independent wordings (personas/phrasings/): words nobody tuned it to.

    python experiments/personal_agent/phrasings_judge.py [--no-head] [--json out.json]

For every persona with a phrasings file, each line is read as the user's reply to a reply that missed the criterion
(a stock opener, long, no working; the judge reads the feedback, and the reply only for a few shapes), with the request
one of the persona's tasks. What each kind of line should read as (conf/judge/rule.yaml):
complaint -> a correction (reward < 0); vague -> a correction (reward < 0); reservation -> accepted with a flaw
(-0.5 <= reward <= 0); thanks -> an approval (reward > 0); rephrase -> a re-ask (reward < 0). The shipped personas
(student, student_file, teacher) and the held-out ones are reported apart; the held-out lines are measured once and
never used to change the judge.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from claw.judge.rule import RuleBackend  # noqa: E402
from claw.judge.turn import Turn  # noqa: E402
from claw.users import Persona, Phrasings  # noqa: E402
from claw.users.habits import PHRASINGS_DIR  # noqa: E402

SHIPPED = ("student", "student_file", "teacher")
REPLY = "To solve this problem, let's break it down step by step. First we look at the numbers. " * 2
EXPECTED = {
    "complaint": lambda r: r < 0,
    "vague": lambda r: r < 0,
    "reservation": lambda r: -0.5 <= r <= 0,
    "thanks": lambda r: r > 0,
    "rephrase": lambda r: r < 0,
}


def persona_of(name: str) -> Persona:
    for path in (ROOT / "personas" / f"{name}.yaml", ROOT / "personas" / "heldout" / f"{name}.yaml"):
        if path.is_file():
            return Persona.load(path)
    raise SystemExit(f"no persona {name!r} for {PHRASINGS_DIR / name}.yaml")


def lines_of(name: str) -> list[tuple[str, str, dict]]:
    """(kind, line, task) for one persona: its complaints and reservations, and the shared vague, thanks and
    re-ask lines formatted with one of its tasks."""
    persona, phrasings = persona_of(name), Phrasings.load(name)
    tasks = persona.tasks("train", 64, seed=7)
    rng = random.Random(name)
    out = [("complaint", line, rng.choice(tasks)) for lines in phrasings.complaints.values() for line in lines]
    out += [("reservation", line, rng.choice(tasks)) for lines in phrasings.reservations.values() for line in lines]
    for kind in ("vague", "thanks", "rephrase"):
        out += [(kind, line, rng.choice(tasks)) for line in getattr(phrasings, kind)]
    return [(kind, line.format(**task), task | {"opening": persona.opening(task, rng)}) for kind, line, task in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-head", action="store_true", help="the rules alone (judge.reader_head=null)")
    ap.add_argument("--json", type=Path, help="write the rates and every misread line here")
    args = ap.parse_args()
    judge = RuleBackend(credit_points=4, reader_head=None if args.no_head else "shipped")
    names = sorted(p.stem for p in PHRASINGS_DIR.glob("*.yaml") if p.stem != "default")
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    misread = []
    for name in names:
        group = "shipped" if name in SHIPPED else "held-out"
        for kind, line, task in lines_of(name):
            turn = Turn(messages=[{"role": "user", "content": task["opening"]}], response_text=REPLY,
                        next_state=[{"role": "user", "content": line}])  # fmt: skip
            score = judge.score_turn(turn)[0]
            reward = judge.graded_score(turn) if score != 0 else 0.0
            ok = EXPECTED[kind](reward)
            counts[(group, kind)][0] += ok
            counts[(group, kind)][1] += 1
            if not ok:
                misread.append({"persona": name, "kind": kind, "line": line, "reward": reward})
    print("| lines | kind | read as expected | n |\n|---|---|---|---|")
    for (group, kind), (ok, n) in sorted(counts.items()):
        print(f"| {group} | {kind} | {ok / n:.1%} | {n} |")
    for group in ("shipped", "held-out"):
        ok = sum(v[0] for (g, _), v in counts.items() if g == group)
        n = sum(v[1] for (g, _), v in counts.items() if g == group)
        if n:
            print(f"| {group} | all | {ok / n:.1%} | {n} |")
    if args.json:
        rates = {f"{g}/{k}": {"ok": ok, "n": n} for (g, k), (ok, n) in counts.items()}
        args.json.write_text(json.dumps({"rates": rates, "misread": misread}, indent=1) + "\n")


if __name__ == "__main__":
    main()
