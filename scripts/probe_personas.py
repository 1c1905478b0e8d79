"""Measure how the base model does on each persona: per-criterion pass rates and mean rating of its first response.

    .venv/bin/python scripts/probe_personas.py                # student, teacher, student_file; 48 eval tasks each
    .venv/bin/python scripts/probe_personas.py student --n 16 --save /tmp/student.jsonl
    .venv/bin/python scripts/probe_personas.py student --load /tmp/student.jsonl
                                                              # re-rate saved responses (criteria edits), no model

The first response is what the paper rates. It is sampled from the embedded SmolLM2 with the hf
engine at the given temperature, rendered the way the proxy renders it (`claw.sources.proxy.render`, which
writes tool specs into the system prompt for templates without tool support). For a persona with
tools, a parsed tool call is answered by the persona's environment and the model continues, up to
`--tool-rounds`; the rating then sees the calls and the final answer. Persona files carry the
numbers this prints as a comment at the top.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from claw.users.persona import Persona  # noqa: E402


def _render(tokenizer, messages: list[dict], tools: list[dict]) -> list[int]:
    from claw.sources.proxy.render import ChatRenderer

    return ChatRenderer(tokenizer).render(messages, tools or None)


def first_responses(
    persona: Persona,
    tasks: list[dict],
    engine,
    tokenizer,
    temperature: float,
    max_new_tokens: int,
    tool_rounds: int,
    seed: int,
) -> list[list[dict]]:
    """For each task: the agent's messages from the opening to its first final answer
    (tool calls and results included)."""
    from claw.engine.base import SamplingParams
    from claw.sources.proxy.render import parse_tool_calls

    rng = random.Random(seed)
    convs = []
    for task in tasks:
        head = [{"role": "system", "content": persona.system_prompt}] if persona.system_prompt else []
        convs.append(head + [{"role": "user", "content": persona.opening(task, rng)}])
    starts = [len(c) for c in convs]
    pending = list(range(len(tasks)))
    for round_ in range(tool_rounds + 1):
        prompts = [_render(tokenizer, convs[i], persona.tools) for i in pending]
        gens = engine.generate(prompts, SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens))
        still = []
        for i, gen in zip(pending, gens):
            text = tokenizer.decode(gen.response_ids, skip_special_tokens=True)
            content, calls = parse_tool_calls(text) if persona.tools else (text, [])
            message = {"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})}
            convs[i].append(message)
            if calls and round_ < tool_rounds:
                for call in calls:
                    result = persona.run_tool(call["function"]["name"], call["function"]["arguments"], tasks[i])
                    convs[i].append({"role": "tool", "tool_call_id": call["id"], "content": result})
                still.append(i)
        pending = still
        if not pending:
            break
    return [c[s:] for c, s in zip(convs, starts)]


def report(persona: Persona, tasks: list[dict], transcripts: list[list[dict]], show: int) -> dict:
    ratings = [persona.rate(t, task) for t, task in zip(transcripts, tasks)]
    n = len(ratings)
    mean = sum(r.score for r in ratings) / n
    sd = math.sqrt(sum((r.score - mean) ** 2 for r in ratings) / max(1, n - 1))
    rates = {c.id: sum(r.passed[c.id] for r in ratings) / n for c in persona.criteria}
    all_met = sum(r.score == 1.0 for r in ratings) / n
    print(
        f"\n== {persona.name}: n={n}  mean rating {mean:.3f} ± {1.96 * sd / math.sqrt(n):.3f} (95% CI)  "
        f"all criteria met {all_met:.2f}"
    )
    for cid, rate in rates.items():
        print(f"   {cid:<28} {rate:.2f}")
    for t in transcripts[:show]:
        final = t[-1].get("content") or ""
        calls = [c["function"]["name"] for m in t for c in m.get("tool_calls") or []]
        print(f"   --- calls={calls} | {final[:300]!r}")
    return {"persona": persona.name, "n": n, "mean": mean, "all_met": all_met, "pass_rates": rates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("personas", nargs="*", default=["student", "teacher", "student_file"])
    parser.add_argument("--n", type=int, default=48, help="eval tasks per persona")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--tool-rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=3, help="responses to print per persona")
    parser.add_argument("--save", help="write the transcripts as JSONL (one persona only)")
    parser.add_argument("--load", help="re-rate transcripts saved with --save instead of sampling")
    args = parser.parse_args()

    engine = tokenizer = None
    results = []
    for name in args.personas:
        persona = Persona.load(name)
        tasks = persona.tasks("eval", args.n, seed=args.seed)
        if args.load:
            rows = [json.loads(line) for line in Path(args.load).read_text().splitlines() if line.strip()]
            tasks, transcripts = [r["task"] for r in rows], [r["transcript"] for r in rows]
        else:
            if engine is None:
                from claw.engine.hf import HFEngine
                from claw.models import load_smollm2

                policy = load_smollm2()
                engine, tokenizer = HFEngine(policy, seed=args.seed), policy.tokenizer
            start = time.time()
            transcripts = first_responses(
                persona, tasks, engine, tokenizer, args.temperature, args.max_new_tokens, args.tool_rounds, args.seed
            )
            print(
                f"[{persona.name}] sampled {len(tasks)} first responses in {time.time() - start:.0f}s", file=sys.stderr
            )
            if args.save:
                with open(args.save, "w") as f:
                    for task, t in zip(tasks, transcripts):
                        f.write(json.dumps({"task": task, "transcript": t}) + "\n")
        results.append(report(persona, tasks, transcripts, args.show))
    print(
        f"\n(n per persona, T={args.temperature}, max_new_tokens={args.max_new_tokens}, eval split seed {args.seed}; "
        "SmolLM2-135M dequantised Q4_1)"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
