"""Does the hinted teacher know better? The OPD signal is only as good as the policy shown the hint.

    .venv/bin/python scripts/probe_hints.py teacher --n 32
    .venv/bin/python scripts/probe_hints.py student --formats default plain system

For each task (train split) the embedded SmolLM2 samples a first reply (T = 0.7, as in training), the
persona's scripted user answers it, and the rule judge turns the answer into a hint (`corrective_hint`).
Then the same model, shown the hint, replies greedily under each hint placement, and the persona rates
that reply. A teacher worth distilling from fixes what the hint names and keeps what was met:

- `rating`     the persona's rating of the hinted greedy reply (the unhinted greedy reply is `none`);
- `fixed`      of the criteria the sampled reply failed (each named in the hint), the share the hinted reply meets;
- `broken`     of the criteria the sampled reply met, the share the hinted reply fails;
- `apology`    the share of hinted replies that open by conceding or apologising (claw/judge/drift.py), and
               the hinted-minus-unhinted rating on the rest (`kept`) and on those (`gated`): what
               `mode.hint_gate=apology` keeps and drops.

Placements are (`mode.hint_role`, `mode.hint_format`) pairs, put together by the teacher's own
`append_hint`: the hint in the last user message, or in the system message (`mode.hint_role=system`).
The `prefix_*` placements are a probe only (no `mode.hint_role` builds them): the hint opens the assistant's own
turn, as a note it wrote, and the reply is decoded after it.

`--contrast TEXT` adds the guided teacher (`mode.hint_contrast`): greedy decoding from logits
l(s) + l(s + hint) − l(s + TEXT), the distribution the contrastive OPD gap distils towards, under every
placement asked for (rows `<placement>+contrast`). It keeps what this hint says and cancels what any
complaint does to the model (the apology a bare complaint draws), as the teacher does in training.

`--followup` adds the row `followup`: the model's next turn in the conversation itself (the task, the sampled
reply, the user's whole answer), greedy and rated as the others. It also prints what an online check could
see without the persona's hidden scorer: the judge's graded credit (`judge.credit_points=4`) of the user's
answer to the sampled first replies (every task) against its answer to sampled follow-ups (T = 0.7, the
tasks that drew a hint) — does the model, told what is wrong, answer better in the user's own words?
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claw.judge.drift import opens_with_apology  # noqa: E402
from claw.judge.hint import append_hint  # noqa: E402
from claw.judge.reading import read_reply  # noqa: E402
from claw.judge.rule import corrective_hint, graded_credit  # noqa: E402
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
    # the hint as the start of the assistant's own turn, the reply decoded after it (no complaint to answer):
    "prefix_note": ("prefix", "({hint})\n\n"),
    "prefix_plan": ("prefix", "My reply will follow this feedback: {hint}\n\nReply:\n"),
}


def mean_ci(xs: list[float]) -> str:
    n = len(xs)
    if n == 0:
        return "  -  "
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / max(1, n - 1))
    return f"{m:.3f} ± {1.96 * sd / math.sqrt(n):.3f}"


def guided_greedy(model, context_sets, weights, eos_id: int, max_new_tokens: int) -> list[list[int]]:
    """Greedy decoding from Σ_j weights[j] · logits(context_sets[j][i] + reply so far), one reply per row i;
    one KV cache per context set, contexts left-padded."""
    import torch

    caches, masks, positions, logits = [], [], [], []
    with torch.no_grad():
        for contexts in context_sets:
            P = max(len(c) for c in contexts)
            ids = torch.tensor([[0] * (P - len(c)) + c for c in contexts])
            mask = torch.tensor([[0] * (P - len(c)) + [1] * len(c) for c in contexts])
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
            caches.append(out.past_key_values)
            masks.append(mask)
            positions.append(pos[:, -1:])
            logits.append(out.logits[:, -1].float())
        B = len(context_sets[0])
        replies, done = [[] for _ in range(B)], torch.zeros(B, dtype=torch.bool)
        for _ in range(max_new_tokens):
            nxt = sum(w * lg for w, lg in zip(weights, logits)).argmax(-1)
            for i in range(B):
                if not done[i]:
                    replies[i].append(int(nxt[i]))
            done |= nxt == eos_id
            if bool(done.all()):
                break
            logits = []
            for j in range(len(context_sets)):
                masks[j] = torch.cat([masks[j], torch.ones(B, 1, dtype=masks[j].dtype)], dim=1)
                positions[j] = positions[j] + 1
                out = model(
                    input_ids=nxt.unsqueeze(-1), attention_mask=masks[j], position_ids=positions[j],
                    past_key_values=caches[j], use_cache=True,
                )  # fmt: skip
                caches[j] = out.past_key_values
                logits.append(out.logits[:, -1].float())
    return replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("persona", nargs="?", default="teacher")
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--contrast", help="also decode from the guided teacher with this contentless hint")
    parser.add_argument("--followup", action="store_true", help="also rate the model's next turn in the conversation")
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

    def reply(convs: list[list[dict]], temperature: float, prefixes: list[str] | None = None) -> list[dict]:
        prompts = [render(c, None) for c in convs]
        if prefixes is not None:  # text that opens the assistant turn, after the generation prompt
            prompts = [p + tok.encode(x, add_special_tokens=False) for p, x in zip(prompts, prefixes)]
        gens = engine.generate(
            prompts,
            SamplingParams(temperature=temperature, max_new_tokens=args.max_new_tokens),
        )
        return [{"role": "assistant", "content": tok.decode(g.response_ids, skip_special_tokens=True)} for g in gens]

    sampled = reply(openings, 0.7)
    rows, first_credit = [], []
    for task, opening, first in zip(tasks, openings, sampled):
        passed = persona.rate(first, task).passed
        user = ScriptedUser(persona, task, seed=args.seed)
        answer = user.respond(first).text
        reading = read_reply(answer, opening[-1]["content"], first["content"])
        first_credit.append(graded_credit(reading, 4))
        hint = corrective_hint(reading)
        if hint is not None:
            conversation = [*opening, first, {"role": "user", "content": answer}]
            rows.append({"task": task, "opening": opening, "passed": passed, "hint": hint, "user": user,
                         "conversation": conversation})  # fmt: skip
    print(f"{args.persona}: {len(rows)} of {len(tasks)} sampled replies drew a hint", file=sys.stderr)

    def guided(hinted: list[list[dict]], contrast: list[list[dict]]) -> list[dict]:
        ids = guided_greedy(
            policy.model, [[render(c, None) for c in convs] for convs in (openings_kept, hinted, contrast)],
            (1.0, 1.0, -1.0), policy.tokenizer.eos_token_id, args.max_new_tokens,
        )  # fmt: skip
        return [{"role": "assistant", "content": tok.decode(i, skip_special_tokens=True)} for i in ids]

    openings_kept = [r["opening"] for r in rows]
    names = ["none", *args.formats] + ([f"{f}+contrast" for f in args.formats] if args.contrast else [])
    names += ["followup"] if args.followup else []
    summary, by_row = {}, {}
    for name in names:
        if name == "none":
            outs = reply(openings_kept, 0.0)
        elif name == "followup":
            outs = reply([r["conversation"] for r in rows], 0.0)
        else:
            role, fmt = FORMATS[name.removesuffix("+contrast")]
            if role == "prefix" and name.endswith("+contrast"):
                raise SystemExit(f"--contrast does not apply to the prefix placement {name!r}")
            if role == "prefix":
                outs = reply(openings_kept, 0.0, [fmt.format(hint=r["hint"]) for r in rows])
            elif name.endswith("+contrast"):
                convs = [append_hint(r["opening"], r["hint"], fmt, role) for r in rows]
                outs = guided(convs, [append_hint(r["opening"], args.contrast, fmt, role) for r in rows])
            else:
                outs = reply([append_hint(r["opening"], r["hint"], fmt, role) for r in rows], 0.0)
        ratings, fixed, broken = [], [], []
        for r, out in zip(rows, outs):
            now = persona.rate(out, r["task"]).passed
            ratings.append(sum(now.values()) / len(now))
            fixed += [float(now[c]) for c, ok in r["passed"].items() if not ok]
            broken += [float(not now[c]) for c, ok in r["passed"].items() if ok]
        by_row[name] = ratings
        sorry = [opens_with_apology(out["content"]) for out in outs]
        gain = [x - b for x, b in zip(ratings, by_row["none"])]
        kept = [g for g, s in zip(gain, sorry) if not s]
        gated = [g for g, s in zip(gain, sorry) if s]
        summary[name] = {
            "rating": sum(ratings) / len(ratings),
            "fixed": sum(fixed) / max(1, len(fixed)),
            "broken": sum(broken) / max(1, len(broken)),
            "n": len(rows),
            "apology": sum(sorry) / max(1, len(sorry)),
            "gain_kept": sum(kept) / len(kept) if kept else None,
            "gain_gated": sum(gated) / len(gated) if gated else None,
        }
        print(
            f"{name:<8} rating {mean_ci(ratings)}  fixed {mean_ci(fixed)}  broken {mean_ci(broken)}  "
            f"apology {sum(sorry)}/{len(sorry)} (gain kept {mean_ci(kept)}, gated {mean_ci(gated)})  "
            f"| {outs[0]['content'][:120]!r}"
        )
    if args.followup and rows:  # no hint drawn: no follow-up to rate
        followups = reply([r["conversation"] for r in rows], 0.7)
        credit = []
        for r, out in zip(rows, followups):
            answer = r["user"].respond(out).text
            credit.append(graded_credit(read_reply(answer, r["opening"][-1]["content"], out["content"]), 4))
        summary["judge_credit"] = {
            "first": sum(first_credit) / len(first_credit),
            "followup": sum(credit) / len(credit),
        }
        print(f"judge credit: first replies {mean_ci(first_credit)} (n={len(first_credit)}), "
              f"sampled follow-ups {mean_ci(credit)} (n={len(credit)})")  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
