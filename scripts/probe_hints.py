"""Does the hinted teacher know better? The OPD signal is only as good as the policy shown the hint.

    .venv/bin/python scripts/probe_hints.py teacher --n 32
    .venv/bin/python scripts/probe_hints.py student --formats default plain system

For each task (train split) the embedded SmolLM2 samples a first reply (T = 0.7, as in training), the
persona's scripted user answers it, and the rule judge turns the answer into a hint (`corrective_hint`).
Then the same model, shown the hint, replies greedily under each hint placement, and the persona rates
that reply. A teacher worth distilling from fixes what the hint names and keeps what was met:

- `rating`     the persona's rating of the hinted greedy reply (the unhinted greedy reply is `none`);
- `fixed`      of the criteria the sampled reply failed (each named in the hint), the share the hinted reply meets;
- `broken`     of the criteria the sampled reply met, the share the hinted reply fails.

Placements are (`mode.hint_role`, `mode.hint_format`) pairs, put together by the teacher's own
`append_hint`: the hint in the last user message, or in the system message (`mode.hint_role=system`).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claw.judge.hint import append_hint  # noqa: E402
from claw.judge.reading import read_reply  # noqa: E402
from claw.judge.rule import corrective_hint  # noqa: E402
from claw.users.persona import Persona  # noqa: E402
from claw.users.scripted import ScriptedUser  # noqa: E402

FORMATS = {
    "default": ("user", "{content}\n\n[hint] {hint}"),
    "plain": ("user", "{content}\n\n{hint}"),
    "first": ("user", "{hint}\n\n{content}"),
    "note": ("user", "{content}\n\nNote: {hint}"),
    "system": ("system", "{content} {hint}"),  # what the experiment README's system runs use
    "system_said": (
        "system",
        "{content} The user's feedback on your previous answer: {hint} Follow it in your reply.",
    ),
    "require": ("user", '{content}\n\n(My feedback on your last draft: "{hint}" Write only the new version.)'),
}


def mean_ci(xs: list[float]) -> str:
    n = len(xs)
    if n == 0:
        return "  -  "
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / max(1, n - 1))
    return f"{m:.3f} ± {1.96 * sd / math.sqrt(n):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("persona", nargs="?", default="teacher")
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--out", help="write the per-format summary as JSON")
    args = parser.parse_args()

    from claw.engine.base import SamplingParams
    from claw.engine.hf import HFEngine
    from claw.models import load_smollm2
    from claw.sources.proxy.render import ChatRenderer

    persona = Persona.load(args.persona)
    policy = load_smollm2()
    engine, tok = HFEngine(policy, seed=args.seed), policy.tokenizer
    render = ChatRenderer(tok).render
    tasks = persona.tasks("train", args.n, seed=args.seed)
    rng = random.Random(args.seed)
    openings = [[{"role": "user", "content": persona.opening(t, rng)}] for t in tasks]

    def reply(convs: list[list[dict]], temperature: float) -> list[dict]:
        gens = engine.generate(
            [render(c, None) for c in convs],
            SamplingParams(temperature=temperature, max_new_tokens=args.max_new_tokens),
        )
        return [{"role": "assistant", "content": tok.decode(g.response_ids, skip_special_tokens=True)} for g in gens]

    sampled = reply(openings, 0.7)
    rows = []
    for task, opening, first in zip(tasks, openings, sampled):
        passed = persona.rate(first, task).passed
        answer = ScriptedUser(persona, task, seed=args.seed).respond(first).text
        hint = corrective_hint(read_reply(answer, opening[-1]["content"], first["content"]))
        if hint is not None:
            rows.append({"task": task, "opening": opening, "passed": passed, "hint": hint})
    print(f"{args.persona}: {len(rows)} of {len(tasks)} sampled replies drew a hint", file=sys.stderr)

    summary = {}
    for name in ["none", *args.formats]:
        if name == "none":
            convs = [r["opening"] for r in rows]
        else:
            role, fmt = FORMATS[name]
            convs = [append_hint(r["opening"], r["hint"], fmt, role) for r in rows]
        outs = reply(convs, 0.0)
        ratings, fixed, broken = [], [], []
        for r, out in zip(rows, outs):
            now = persona.rate(out, r["task"]).passed
            ratings.append(sum(now.values()) / len(now))
            fixed += [float(now[c]) for c, ok in r["passed"].items() if not ok]
            broken += [float(not now[c]) for c, ok in r["passed"].items() if ok]
        summary[name] = {
            "rating": sum(ratings) / len(ratings),
            "fixed": sum(fixed) / max(1, len(fixed)),
            "broken": sum(broken) / max(1, len(broken)),
            "n": len(rows),
        }
        print(
            f"{name:<8} rating {mean_ci(ratings)}  fixed {mean_ci(fixed)}  broken {mean_ci(broken)}  "
            f"| {outs[0]['content'][:120]!r}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
