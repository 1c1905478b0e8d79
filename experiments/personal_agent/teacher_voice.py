"""Does the teacher persona's `addresses_student` check tell a comment to the student from a reply to the teacher?

    python experiments/personal_agent/teacher_voice.py [experiments/personal_agent/teacher_voice.jsonl]

teacher_voice.jsonl: 120 texts a grading assistant might write, 60 margin comments to the student and 60 that are
not (concessions to the teacher, the student in the third person, the assistant talking about itself, preambles,
replies to the teacher about "your student", ...), each labelled `to_student` by someone who had read neither the
persona nor its check (2026-12-02). Held out: the check was not changed after reading it. Prints the accuracy
of the first check (any "you") and of the persona's current one, overall and on the kinds each gets wrong.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from claw.users.persona import Persona

HERE = Path(__file__).parent
# the teacher persona's check until 2026-12-02
FIRST_CHECK = re.compile(r"\byou('re|'ve|r)?\b", re.IGNORECASE)


def report(name: str, rows: list[dict], says_to_student) -> None:
    right = [says_to_student(r["text"]) == r["to_student"] for r in rows]
    to = [ok for ok, r in zip(right, rows) if r["to_student"]]
    other = [ok for ok, r in zip(right, rows) if not r["to_student"]]
    print(
        f"{name}: accuracy {sum(right) / len(rows):.1%}  comments to the student passed {sum(to)}/{len(to)}  "
        f"others failed {sum(other)}/{len(other)}"
    )
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for ok, r in zip(right, rows):
        by_kind[r["kind"]].append(ok)
    for kind, oks in sorted(by_kind.items()):
        if not all(oks):
            print(f"    {kind:28s} {sum(oks)}/{len(oks)}")


def main(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    teacher = Persona.load("teacher")
    task = teacher.tasks("eval", 1, seed=0)[0]  # the check reads only the text
    report("first check (any 'you')", rows, lambda text: FIRST_CHECK.search(text) is not None)
    report("persona check", rows, lambda text: teacher.rate(text, task).passed["addresses_student"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "teacher_voice.jsonl")
