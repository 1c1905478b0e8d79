"""One call that turns a finished turn into its training signal, for the conversation sources.

`judge_turn` runs the judges a mode needs (PRM for rl|combine, hint extractor for opd|combine)
concurrently and returns a `TurnVerdict` that is stored with the turn, whatever happened:
- a judge that fails (every vote errored or timed out) never raises and never drops the turn — the
  verdict is `status="unjudged"` with the error, so the turn stays on disk and can be re-judged;
- `reward` is None when the PRM said 0 or failed (no RL signal), `hint` is None when no hint was
  accepted (no OPD signal); a turn with neither is not a training sample (`trainable` is False).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any

from claw.judge.build import Judges
from claw.judge.metrics import JudgeStats
from claw.judge.turn import Turn
from claw.modes import Mode


@dataclass
class TurnVerdict:
    status: str  # judged | unjudged
    reward: float | None = None  # the PRM's reward (±1, or graded in [-1, 1]); None = no RL signal
    hint: str | None = None  # accepted hint; None = no OPD signal
    prm: dict[str, Any] | None = None  # the full PRM result (votes, agreement, rationale, latency)
    hint_result: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def trainable(self) -> bool:
        return self.reward is not None or self.hint is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def judge_turn(judges: Judges, turn: Turn, mode: Mode | str, stats: JudgeStats | None = None) -> TurnVerdict:
    mode = Mode.named(mode)
    want_prm, want_hint = mode.uses_reward, mode.uses_hint
    prm_task = judges.prm.judge(turn) if want_prm else None
    hint_task = judges.hint.extract(turn) if want_hint else None
    results = await asyncio.gather(*(t for t in (prm_task, hint_task) if t is not None), return_exceptions=True)
    prm = results.pop(0) if want_prm else None
    hint = results.pop(0) if want_hint else None
    verdict = TurnVerdict(status="judged")
    for name, r in (("prm", prm), ("hint", hint)):
        if isinstance(r, BaseException):  # defensive: the judges are built not to raise
            verdict.errors.append(f"{name}: {r!r}")
        elif r is not None and r.error is not None:
            verdict.errors.append(f"{name}: {r.error}")
    if prm is not None and not isinstance(prm, BaseException):
        verdict.prm = asdict(prm)
        verdict.reward = prm.reward
        if stats is not None:
            stats.add_prm(prm)
    if hint is not None and not isinstance(hint, BaseException):
        verdict.hint_result = asdict(hint)
        verdict.hint = hint.hint if hint.accepted else None
        if stats is not None:
            stats.add_hint(hint)
    failed = [isinstance(r, BaseException) or r.error is not None for r in (prm, hint) if r is not None]
    if failed and all(failed):
        verdict.status = "unjudged"
    return verdict
