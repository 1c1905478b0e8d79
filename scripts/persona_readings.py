"""Snapshot how the rule judge reads every simulated user's words, to check a judge change leaves them as they were.

    python scripts/persona_readings.py before.json      # on the old judge
    python scripts/persona_readings.py after.json       # on the new one
    python scripts/persona_readings.py --compare before.json after.json
    python scripts/persona_readings.py --reader-head shipped head.json   # with judge.reader_head (loads SmolLM2)

For every persona (shipped and held-out) and four eval tasks: every thanks, closing, pass and fail phrase, and the
compositions a scripted user makes (`claw/users/scripted.py`: the fail phrases of each set of unmet criteria in persona
order, alone, after an acknowledgement, before a closing line), plus the replies of real scripted sessions — each
judged against the persona's opening, several responses and the bare "q"/"a" turn of tests/test_users.py. A record is
the score, the rationale (the deciding class), the hint, the graded credit and the class of every clause. Training
results rest on these readings, so a judge change should leave every record equal. Takes minutes on a busy CPU.
"""

from __future__ import annotations

import itertools
import json
import random
import sys

from claw.judge.reading import read_reply
from claw.judge.rule import RuleBackend
from claw.judge.turn import Turn
from claw.users import Persona, ScriptedUser
from claw.users.persona import PERSONA_DIR

RESPONSES = [
    "a",
    "To solve this problem, " + "we think. " * 30,
    "Sure! The answer is 3.",
    "**Answer**: 7",
    "Here is it.",
    "The answer is 12: 3 x 4 = 12.",
]
RULE = RuleBackend()  # replaced in __main__ when --reader-head is given


def judge(request: str, response: str, reply: str) -> list:
    turn = Turn(
        messages=[{"role": "user", "content": request}],
        response_text=response,
        next_state=[{"role": "user", "content": reply}],
    )
    score, why = RULE.score_turn(turn)
    clauses = [(r.kind, r.score) for _, r in read_reply(reply, request, response).readings]
    return [score, why, RULE.hint_for(turn), round(RULE.graded_score(turn), 6), clauses]


def texts_of(persona: Persona, task: dict) -> set[str]:
    def say(template: str) -> str:
        return template.format(**task).strip()

    texts = {say(t) for t in persona.thanks} | {say(t) for t in persona.closing}
    for c in persona.criteria:
        texts |= {say(t) for t in c.pass_phrases} | {say(t) for t in c.fail_phrases}
    most = persona.max_complaints or len(persona.criteria)
    for k in range(1, len(persona.criteria) + 1):
        for unmet in itertools.combinations(persona.criteria, k):
            met = [c for c in persona.criteria if c not in unmet and c.pass_phrases]
            for combo in itertools.islice(itertools.product(*(c.fail_phrases for c in unmet[:most])), 16):
                base = " ".join(say(x) for x in combo)
                texts.add(base)
                texts |= {f"{say(ack)} {base}" for m in met for ack in m.pass_phrases}
                texts |= {f"{base} {say(closing)}" for closing in persona.closing}
    for seed in range(3):
        user = ScriptedUser(persona, task, seed=seed)
        user.open()
        for response in RESPONSES:
            reply = user.respond({"role": "assistant", "content": response})
            texts.add(reply.text)
            if reply.done:
                break
    return texts


def snapshot() -> dict[str, list]:
    names = sorted(p.stem for p in PERSONA_DIR.glob("*.yaml"))
    names += sorted(f"personas/heldout/{p.name}" for p in (PERSONA_DIR / "heldout").glob("*.yaml"))
    out = {}
    for name in names:
        persona = Persona.load(name)
        for i, task in enumerate(persona.tasks("eval", 4, seed=0)):
            request = persona.opening(task, random.Random(i))
            for text in sorted(texts_of(persona, task)):
                for response in [*RESPONSES[:3], str(task.get("answer", ""))]:
                    out[f"{name}|{i}|{response[:20]}|{text}"] = judge(request, response, text)
                out[f"{name}|{i}|q/a|{text}"] = judge("q", "a", text)
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compare"]:
        before, after = (json.load(open(path)) for path in sys.argv[2:4])
        differ = [k for k in before if before[k] != after.get(k)]
        print(f"{len(before)} readings compared, {len(differ)} differ")
        for k in differ[:20]:
            print(k, before[k], after.get(k), sep="\n  ")
        sys.exit(1 if differ or before.keys() != after.keys() else 0)
    args = sys.argv[1:]
    if args[:1] == ["--reader-head"]:
        RULE = RuleBackend(reader_head=args[1])
        args = args[2:]
    readings = snapshot()
    json.dump(readings, open(args[0], "w"), indent=0, sort_keys=True)
    print(f"{len(readings)} readings of {len({k.split('|')[-1] for k in readings})} distinct texts")
