"""`python -m claw.judge.evaluate LINES.jsonl`: how well a judge reads users' feedback, on your own lines.

    python -m claw.judge.evaluate data/feedback/dev.jsonl                         # the rule judge
    python -m claw.judge.evaluate lines.jsonl --judge policy --votes 3 --limit 40  # SmolLM2 judges itself
    python -m claw.judge.evaluate lines.jsonl --judge openai --set base_url=http://127.0.0.1:8000/v1 --set model=M
    python -m claw.judge.evaluate runs/<date>/<time>/proxy.jsonl                  # a proxy log: what the judge reads

A labelled line is one JSON object: {"id", "request", "response", "feedback", "reading", "kind"}, where
`reading` is what a person reads in the feedback: "approve", "correct" or "neutral"; a correction that names
nothing to change ("nope, wrong") may carry `"fix": false`, and the report then also gives the hint rate of
the corrections that do (a bare verdict has no hint to extract). Each line becomes
the turn training would judge — the request, the agent's response, and the feedback as the next
user message — and runs through `judge_turn` in `mode=combine`, exactly as the proxy and the simulated
users do: the PRM's majority verdict (+1 / −1 / 0) and the hint extractor's accepted hint (the OPD
signal). The report: reading accuracy (approve ↔ +1, correct ↔ −1, neutral ↔ 0), the confusion
matrix, accuracy per `kind`, and the fraction of "correct" lines that yielded a hint.

A proxy log (`proxy.jsonl`: `turn` records with their `next_state`) has no labels: the report is what
the judge reads there (the share of +1 / −1 / 0 and the hint rate of the −1 turns).

`--judge policy` loads the embedded SmolLM2 and judges with it through the colocated-engine backend
(`conf/judge/policy.yaml`: m votes for the PRM and m for the hint, up to 512 new tokens each, one
generation at a time — on a busy 2-core CPU about 20 s per 128 tokens, so minutes per line); `--limit N`
takes the first N lines, `--max-tokens` shortens each vote, and the vote timeout is raised to an hour so
that votes waiting for the engine are measured rather than counted as abstentions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from claw.judge.build import Judges, build_judges
from claw.judge.turn import Turn
from claw.judge.verdict import judge_turn

READINGS = {"approve": 1, "correct": -1, "neutral": 0}
SCORE_NAMES = {1: "+1", -1: "-1", 0: "0"}


def labelled_turn(line: dict[str, Any]) -> Turn:
    """request → response → next state = the feedback as the next user message."""
    return Turn(
        messages=[{"role": "user", "content": line["request"]}],
        response_text=line["response"],
        next_state=[{"role": "user", "content": line["feedback"]}],
    )


def load_lines(path: Path) -> list[dict[str, Any]]:
    """Labelled lines, or the judged turns of a proxy log (turn records that got a next state)."""
    records = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]
    if records and all("feedback" in r for r in records):
        for i, r in enumerate(records):
            missing = [k for k in ("request", "response", "feedback") if k not in r]
            if missing:
                raise ValueError(
                    f"{path}:{i + 1}: a labelled line needs request, response and feedback (missing {missing})"
                )
            if r.get("reading") is not None and r["reading"] not in READINGS:
                raise ValueError(f"{path}:{i + 1}: reading must be one of {sorted(READINGS)} (got {r['reading']!r})")
            if not isinstance(r.get("fix", True), bool):
                raise ValueError(f"{path}:{i + 1}: fix must be true or false (got {r['fix']!r})")
            r.setdefault("id", str(i))
            r["turn"] = labelled_turn(r)
        return records
    turns: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.get("kind") == "turn":
            turns[r["turn_id"]] = r
        elif r.get("kind") == "next_state" and r.get("turn_id") in turns:
            turns[r["turn_id"]]["next_state"] = r["messages"]
    if not turns:
        raise ValueError(
            f"{path}: neither labelled lines (request, response, feedback) nor a proxy log (turn records)"
        )
    lines = []
    for t in turns.values():
        if t.get("next_state"):
            lines.append({"id": t["turn_id"], "reading": None, "kind": "proxy", "turn": Turn.from_json(t)})
    return lines


def build(
    judge: str, votes: int, max_tokens: int | None, timeout_s: float | None = None, settings: list[str] = ()
) -> Judges:
    from claw.config import compose_config

    overrides = [f"judge={judge}", f"judge.m={votes}"] + ([f"judge.max_tokens={max_tokens}"] if max_tokens else [])
    overrides += [f"judge.timeout_s={timeout_s}"] if timeout_s else []
    overrides += [s if s.startswith("judge.") else f"judge.{s}" for s in settings]
    cfg = compose_config(overrides).judge
    if judge != "policy":
        return build_judges(cfg)
    from claw.engine import HFEngine
    from claw.models import load_smollm2

    policy = load_smollm2()
    return build_judges(cfg, engine=HFEngine(policy, seed=0), tokenizer=policy.tokenizer)


async def judge_all(
    judges: Judges, lines: list[dict[str, Any]], progress: bool = False, at_once: int | None = None
) -> list[dict[str, Any]]:
    """Judge every line (`at_once` lines in flight; None: all)."""
    start, done = time.perf_counter(), 0
    slots = asyncio.Semaphore(at_once or max(len(lines), 1))

    async def one(line: dict[str, Any]) -> dict[str, Any]:
        nonlocal done
        async with slots:
            verdict = await judge_turn(judges, line["turn"], "combine")
        done += 1
        if progress:
            print(
                f"\r[judge] {done}/{len(lines)} lines, {time.perf_counter() - start:.0f}s",
                end="",
                file=sys.stderr,
                flush=True,
            )
        prm = verdict.prm or {}
        return {
            "id": line["id"],
            "kind": line.get("kind") or "",
            "reading": line.get("reading"),
            "fix": line.get("fix", True),
            "feedback": line["turn"].next_state[-1].get("content") if line["turn"].next_state else None,
            "score": int(prm.get("score", 0)),
            "votes": prm.get("votes"),
            "hint": verdict.hint,
            "rationale": (prm.get("rationale") or "").strip().splitlines()[0:1],
            "errors": verdict.errors,
        }

    results = await asyncio.gather(*(one(line) for line in lines))
    if progress:
        print(file=sys.stderr)
    return list(results)


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, confusion (reading → judged score), per-kind accuracy and hint rates; unlabelled lines
    count only in the score shares."""
    scores = Counter(SCORE_NAMES[r["score"]] for r in results)
    out: dict[str, Any] = {
        "n": len(results),
        "score_share": {k: scores[k] / len(results) for k in ("+1", "-1", "0")} if results else {},
    }
    negative = [r for r in results if r["score"] == -1]
    out["hint_rate_of_judged_corrections"] = (
        sum(r["hint"] is not None for r in negative) / len(negative) if negative else None
    )
    labelled = [r for r in results if r["reading"] is not None]
    if not labelled:
        return out
    right = [r["score"] == READINGS[r["reading"]] for r in labelled]
    out["n_labelled"] = len(labelled)
    out["accuracy"] = sum(right) / len(labelled)
    out["confusion"] = {
        reading: {
            SCORE_NAMES[s]: sum(r["reading"] == reading and r["score"] == s for r in labelled) for s in (1, -1, 0)
        }
        for reading in READINGS
    }
    kinds: dict[str, list[bool]] = defaultdict(list)
    for r, ok in zip(labelled, right):
        kinds[r["kind"]].append(ok)
    out["per_kind"] = {k: {"n": len(v), "accuracy": sum(v) / len(v)} for k, v in sorted(kinds.items())}
    corrections = [r for r in labelled if r["reading"] == "correct"]
    out["n_corrections"] = len(corrections)
    out["hint_rate"] = sum(r["hint"] is not None for r in corrections) / len(corrections) if corrections else None
    fixable = [r for r in corrections if r.get("fix", True)]  # "fix": false = a bare verdict, nothing to act on
    out["n_fixable"] = len(fixable)
    out["hint_rate_fixable"] = sum(r["hint"] is not None for r in fixable) / len(fixable) if fixable else None
    others = [r for r in labelled if r["reading"] != "correct"]
    out["hint_rate_not_correct"] = sum(r["hint"] is not None for r in others) / len(others) if others else None
    return out


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{100 * x:5.1f}%"


def render(summary: dict[str, Any], results: list[dict[str, Any]], show_errors: int) -> str:
    lines = []
    if "accuracy" not in summary:
        share = summary["score_share"]
        lines.append(
            f"{summary['n']} judged turns (unlabelled): "
            f"+1 {_pct(share.get('+1'))}  -1 {_pct(share.get('-1'))}  0 {_pct(share.get('0'))}"
        )
        lines.append(f"hint from judged corrections: {_pct(summary['hint_rate_of_judged_corrections'])}")
        return "\n".join(lines)
    lines.append(f"reading accuracy  {_pct(summary['accuracy'])}  ({summary['n_labelled']} lines)")
    lines.append(f"hint from corrections  {_pct(summary['hint_rate'])}  ({summary['n_corrections']} corrections; "
                 f"hints on other lines {_pct(summary['hint_rate_not_correct'])})")  # fmt: skip
    if summary["n_fixable"] < summary["n_corrections"]:
        lines.append(f"hint from corrections with a fix  {_pct(summary['hint_rate_fixable'])}  "
                     f"({summary['n_fixable']}; the others are marked \"fix\": false)")  # fmt: skip
    lines.append("")
    lines.append(f"{'reading / judged':<18}{'+1':>6}{'-1':>6}{'0':>6}")
    for reading, row in summary["confusion"].items():
        lines.append(f"{reading:<18}{row['+1']:>6}{row['-1']:>6}{row['0']:>6}")
    lines.append("")
    width = max(len(k) for k in summary["per_kind"]) + 2
    lines.append(f"{'kind':<{width}}{'n':>5}{'accuracy':>10}")
    for kind, v in summary["per_kind"].items():
        lines.append(f"{kind:<{width}}{v['n']:>5}{_pct(v['accuracy']):>10}")
    wrong = [r for r in results if r["reading"] is not None and r["score"] != READINGS[r["reading"]]]
    if show_errors and wrong:
        lines.append("")
        lines.append(f"misread ({len(wrong)}, first {min(show_errors, len(wrong))}):")
        for r in wrong[:show_errors]:
            lines.append(f"  [{r['reading']} → {SCORE_NAMES[r['score']]}] {r['kind']}: {r['feedback']!r}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m claw.judge.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("lines", type=Path, help="labelled JSONL lines, or a proxy.jsonl log")
    parser.add_argument(
        "--judge", choices=("rule", "policy", "openai"), default="rule", help="the backend (conf/judge/<judge>.yaml)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a judge setting, as on train.py's command line (repeatable): --set base_url=http://host:8000/v1 "
        "--set model=Qwen/Qwen3-4B",
    )
    parser.add_argument("--votes", type=int, default=None, help="m votes per judge (default: the config's; rule: 1)")
    parser.add_argument("--limit", type=int, default=None, help="judge only the first N lines")
    parser.add_argument("--max-tokens", type=int, default=None, help="new tokens per vote (policy judge)")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=None,
        help="seconds per vote (default: the config's; policy: 3600, "
        "so that votes queued behind the one engine on a slow CPU are measured, not timed out)",
    )
    parser.add_argument("--show-errors", type=int, default=0, help="list up to N misread lines")
    parser.add_argument("--json", type=Path, default=None, help="write the summary and every line's verdict here")
    args = parser.parse_args(argv)
    lines = load_lines(args.lines)[: args.limit]
    votes = args.votes if args.votes is not None else (1 if args.judge == "rule" else 3)
    policy = args.judge == "policy"
    judges = build(args.judge, votes, args.max_tokens, args.timeout_s or (3600.0 if policy else None), args.set)
    start = time.perf_counter()
    # the policy judge shares one engine: one line at a time, its m votes queued behind each other
    results = asyncio.run(judge_all(judges, lines, progress=policy, at_once=1 if policy else None))
    summary = {
        "file": str(args.lines),
        "judge": args.judge,
        "votes": votes,
        "seconds": round(time.perf_counter() - start, 1),
        **summarise(results),
    }
    print(f"{args.lines}  judge={args.judge}  votes={votes}  ({summary['seconds']}s)")
    print(render(summary, results, args.show_errors))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"summary": summary, "lines": results}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return summary


if __name__ == "__main__":
    main()
