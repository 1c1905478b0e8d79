"""The imitation ceiling: how far 8 steps move the embedded model when shown the very reply its user wants.

    .venv/bin/python experiments/personal_agent/imitation.py teacher          # lr 3e-5, 8 steps of 8 (the RL budget)
    .venv/bin/python experiments/personal_agent/imitation.py teacher --lr 1e-4 --steps 16

No user, judge or reward: for each training task the persona would give, a written reply that meets every one of its
criteria (checked with the persona's own rating before training; templates below, several wordings each) is the
target of plain cross-entropy on the reply's tokens, with the main job's optimizer (AdamW, lr 3e-5, betas 0.9/0.999,
no weight decay, gradient norm clipped at 1), batch (8 tasks) and steps (8). Then the held-out evaluation, as
`train.py` runs it: the 64 tasks of the seed, greedy, the persona's hidden rating, paired t-test against the base.

Learning from a user's words has to find such replies by sampling and is told only which criteria failed, where
imitation is handed the reply. If imitation reaches a rating in this budget, the budget and the model are not what
stops the learning; what is missing is a reply to learn from. `--save DIR` keeps the imitated model, a teacher that
can write the reply (`mode.teacher=DIR`; experiments/personal_agent/log.md, 2026-12-06).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from claw.users.persona import Persona  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from headroom import eval_prompts  # noqa: E402

TEACHER_RIGHT = [
    "Well done, you got it right: {answer} is correct. Keep it up!",
    "Great work! Your answer of {answer} is correct. Nice job.",
    "You got it, {answer} is right. Good job, keep going!",
]
TEACHER_WRONG = [
    "Good effort, but {student_answer} is not right. The correct answer is {answer}. "
    "Check your working and keep going!",
    "Nice try! You wrote {student_answer}, but the answer should be {answer}. You're almost there.",
    "You're on the right track, but {student_answer} is a mistake: it should be {answer}. Keep it up!",
]
STUDENT = [
    "{a} × {b} = {answer}. The answer is {answer}.",
    "{a} × {b} = {answer}, so it is {answer}.",
    "It's {a} × {b} = {answer}.",
]


def demonstration(persona: Persona, task: dict, rng: random.Random) -> str:
    """A reply meeting every criterion of `persona` for `task` (teacher and student; others are not written)."""
    if persona.name == "teacher":
        templates = TEACHER_RIGHT if task["solution_correct"] else TEACHER_WRONG
        return rng.choice(templates).format(**task)
    if persona.name == "student":
        numbers = [int(x) for x in re.findall(r"\d+", task["question"])]
        a, b = next((x, y) for i, x in enumerate(numbers) for y in numbers[i + 1 :] if x * y == task["answer"])
        return rng.choice(STUDENT).format(a=a, b=b, answer=task["answer"])
    raise SystemExit(f"no demonstrations written for persona {persona.name!r} (teacher, student)")


def imitate(
    policy, persona: Persona, tasks: list[dict], lr: float, steps: int, batch: int, rng: random.Random, log=print
) -> list[float]:
    """Cross-entropy on a demonstration's tokens after the task's training prompt, `batch` tasks a step, with the
    main job's optimizer; returns each step's mean loss (before its update)."""
    import torch

    from claw.sources.proxy.render import ChatRenderer

    tokenizer, model = policy.tokenizer, policy.model
    renderer = ChatRenderer(tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), weight_decay=0.0)
    model.train()
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        step_losses = []
        chunk = tasks[step * batch : (step + 1) * batch]
        for task in chunk:
            prompt = renderer.render([{"role": "user", "content": persona.opening(task, rng)}], persona.tools or None)
            target = tokenizer.encode(demonstration(persona, task, rng), add_special_tokens=False)
            target = target + [tokenizer.eos_token_id]
            logits = model(torch.tensor([prompt + target])).logits[0, len(prompt) - 1 : -1]
            loss = torch.nn.functional.cross_entropy(logits.float(), torch.tensor(target))
            (loss / len(chunk)).backward()
            step_losses.append(loss.item())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(sum(step_losses) / len(step_losses))
        log(f"[imitation] step {step + 1}/{steps}: loss {losses[-1]:.3f}")
    model.eval()
    return losses


def greedy_ratings(policy, persona: Persona, tasks: list[dict], max_new_tokens: int, seed: int = 0):
    """The held-out evaluation's ratings of `policy`'s greedy first replies: (scores, passed, texts)."""
    from claw.engine.base import SamplingParams
    from claw.engine.hf import HFEngine
    from claw.sources.proxy.render import ChatRenderer

    engine = HFEngine(policy, seed=seed)  # a copy of the weights as they are now
    prompts = eval_prompts(persona, tasks, ChatRenderer(policy.tokenizer))
    gens = engine.generate(prompts, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
    texts = [policy.tokenizer.decode(g.response_ids, skip_special_tokens=True) for g in gens]
    ratings = [persona.rate({"role": "assistant", "content": x}, t) for x, t in zip(texts, tasks)]
    return [r.score for r in ratings], [r.passed for r in ratings], texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("persona")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--out", help="write the evaluation (before, after, per criterion, replies) as JSON")
    parser.add_argument("--save", help="save the imitated model there (an HF checkpoint: `mode.teacher=<dir>`)")
    args = parser.parse_args()

    import torch

    from claw.evaluation import mean_ci, paired_test
    from claw.models import load_smollm2

    torch.manual_seed(args.seed)
    persona = Persona.load(args.persona)
    policy = load_smollm2()
    eval_tasks = persona.tasks("eval", 64, seed=args.seed)
    start = time.time()
    before, before_passed, _ = greedy_ratings(policy, persona, eval_tasks, args.max_new_tokens, args.seed)
    rng = random.Random(f"imitation/{args.seed}")
    train_tasks = persona.tasks("train", args.steps * args.batch, seed=args.seed)
    for task in train_tasks:  # every target meets every criterion, or the ceiling is not one
        rating = persona.rate({"role": "assistant", "content": demonstration(persona, task, rng)}, task)
        if rating.score != 1.0:
            raise SystemExit(f"a demonstration fails the persona's criteria: {rating.passed}")
    imitate(
        policy, persona, train_tasks, args.lr, args.steps, args.batch, rng, log=lambda m: print(m, file=sys.stderr)
    )
    after, after_passed, texts = greedy_ratings(policy, persona, eval_tasks, args.max_new_tokens, args.seed)
    if args.save:
        policy.model.save_pretrained(args.save)
        policy.tokenizer.save_pretrained(args.save)

    b, a = mean_ci(before), mean_ci(after)
    p = paired_test(before, after).p  # Student's paired t-test (scipy.stats.ttest_rel)
    crit = {
        c.id: (sum(x[c.id] for x in before_passed) / 64, sum(x[c.id] for x in after_passed) / 64)
        for c in persona.criteria
    }
    print(f"\n== {args.persona}, imitation, lr {args.lr}, {args.steps} steps of {args.batch}, seed {args.seed}")
    print(f"   rating {b[0]:.3f} -> {a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}]  p = {p:.2g}  ({time.time() - start:.0f}s)")
    for cid, (x, y) in crit.items():
        print(f"   {cid:<22} {x:.2f} -> {y:.2f}")
    for x in texts[:4]:
        print(f"   | {x[:160]!r}")
    summary = {
        "persona": args.persona,
        "lr": args.lr,
        "steps": args.steps,
        "batch": args.batch,
        "seed": args.seed,
        "before": b[0],
        "after": a[0],
        "after_ci": a[1:],
        "p": p,
        "criteria": crit,
    }
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "replies": texts}, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
