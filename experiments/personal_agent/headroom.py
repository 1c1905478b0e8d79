"""How much a persona's reward can teach the embedded model: its rating over many samples per held-out task.

    .venv/bin/python experiments/personal_agent/headroom.py teacher --n 16 --temperature 0.4
    .venv/bin/python experiments/personal_agent/headroom.py student --n 16 --out /tmp/student.json

The prompts are the held-out evaluation's (`SimulatedUserSource.evaluate`: the same 64 tasks of `--seed`, the same
opening wording), rendered the same way. For each task it draws `--n` replies at the training temperature, each with
its own seed, and rates every one with the persona's hidden criteria. It prints, per persona:

- the greedy rating (what the evaluation reports before training) and the mean sampled rating;
- best-of-k: the mean over tasks of the best of k samples, k = 1, 2, 4, … n. This is the rating a policy would reach
  by always writing, of what it already writes, the reply its user rates best: what sharpening alone can give,
  without writing anything new;
- per criterion, the pass rate over samples and pass@n (some sample of the task passes it);
- how often a sample meets every criterion (what the simulated user thanks);
- in how many tasks the n samples differ in rating (where a group baseline has a signal at all).

The rating is the persona's hidden one, not the judge's reading of the user's words, so this is an upper bound on
what any reward read from those words can select among.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from claw.users.persona import Persona  # noqa: E402


def eval_prompts(persona: Persona, tasks: list[dict], renderer) -> list[list[int]]:
    """The evaluation's prompts: the opening chosen by `random.Random(f"eval/{i}")`, as `evaluate` does."""
    prompts = []
    for i, task in enumerate(tasks):
        opening = persona.opening(task, random.Random(f"eval/{i}"))
        head = [{"role": "system", "content": persona.system_prompt}] if persona.system_prompt else []
        prompts.append(renderer.render(head + [{"role": "user", "content": opening}], persona.tools or None))
    return prompts


def best_of(scores: list[list[float]], k: int) -> float:
    """Mean over tasks of the best of each task's first k samples."""
    return statistics.mean(max(row[:k]) for row in scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("persona")
    parser.add_argument("--n", type=int, default=16, help="samples per task")
    parser.add_argument("--tasks", type=int, default=64, help="held-out tasks (the evaluation's 64)")
    parser.add_argument("--temperature", type=float, default=0.4, help="the training temperature (conf: T = 0.4)")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0, help="the run seed whose held-out tasks to use")
    parser.add_argument("--out", help="write every sample, its rating and the summary as JSON")
    args = parser.parse_args()

    from claw.engine.base import SamplingParams
    from claw.engine.hf import HFEngine
    from claw.models import load_smollm2
    from claw.sources.proxy.render import ChatRenderer

    persona = Persona.load(args.persona)
    tasks = persona.tasks("eval", args.tasks, seed=args.seed)
    policy = load_smollm2()
    tokenizer = policy.tokenizer
    engine = HFEngine(policy, seed=args.seed)
    prompts = eval_prompts(persona, tasks, ChatRenderer(tokenizer))

    def rate(ids: list[int], task: dict):
        return persona.rate({"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}, task)

    start = time.time()
    greedy = engine.generate(prompts, SamplingParams(temperature=0.0, max_new_tokens=args.max_new_tokens))
    greedy_scores = [rate(g.response_ids, t).score for g, t in zip(greedy, tasks)]
    samples: list[list[dict]] = [[] for _ in tasks]
    for j in range(args.n):  # one pass over the tasks per sample index: every row has its own seed
        sampling = [
            SamplingParams(
                temperature=args.temperature,
                max_new_tokens=args.max_new_tokens,
                seed=args.seed * 1_000_003 + i * 1009 + j,
            )
            for i in range(len(tasks))
        ]
        for i, (g, task) in enumerate(zip(engine.generate(prompts, sampling), tasks)):
            r = rate(g.response_ids, task)
            text = tokenizer.decode(g.response_ids, skip_special_tokens=True)
            samples[i].append({"text": text, "score": r.score, "passed": r.passed})
        print(f"[headroom] {args.persona}: sample {j + 1}/{args.n} ({time.time() - start:.0f}s)", file=sys.stderr)

    scores = [[s["score"] for s in row] for row in samples]
    flat = [s for row in samples for s in row]
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= args.n]
    summary = {
        "persona": args.persona,
        "seed": args.seed,
        "temperature": args.temperature,
        "n": args.n,
        "tasks": len(tasks),
        "greedy": statistics.mean(greedy_scores),
        "sampled_mean": statistics.mean(s["score"] for s in flat),
        "best_of": {k: best_of(scores, k) for k in ks},
        "all_met": sum(s["score"] == 1.0 for s in flat) / len(flat),
        "tasks_with_all_met": sum(any(s["score"] == 1.0 for s in row) for row in samples) / len(samples),
        "tasks_with_spread": sum(len(set(row)) > 1 for row in scores) / len(scores),
        "criteria": {
            c.id: {
                "pass": sum(s["passed"][c.id] for s in flat) / len(flat),
                "pass_at_n": sum(any(s["passed"][c.id] for s in row) for row in samples) / len(samples),
            }
            for c in persona.criteria
        },
        "wall_s": time.time() - start,
    }
    print(
        f"\n== {args.persona}: {len(tasks)} held-out tasks (seed {args.seed}), "
        f"{args.n} samples each at T = {args.temperature}"
    )
    print(f"   greedy {summary['greedy']:.3f} | sampled mean {summary['sampled_mean']:.3f}")
    print("   best of " + " | ".join(f"{k}: {v:.3f}" for k, v in summary["best_of"].items()))
    print(
        f"   every criterion met: {summary['all_met']:.3f} of samples, "
        f"in {summary['tasks_with_all_met']:.2f} of tasks; "
        f"tasks whose samples differ: {summary['tasks_with_spread']:.2f}"
    )
    for cid, c in summary["criteria"].items():
        print(f"   {cid:<22} pass {c['pass']:.3f}   pass@{args.n} {c['pass_at_n']:.2f}")
    if args.out:
        Path(args.out).write_text(
            json.dumps({"summary": summary, "samples": samples, "greedy": greedy_scores}, indent=1)
        )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
