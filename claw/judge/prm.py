"""The PRM judge (Binary RL): m votes on "did this step move the user forward?" → a scalar reward.

Each vote is the judge's text ending in `\\boxed{1|-1|0}`; the majority (ties → 0) is the turn's
reward, so a turn trains only when the votes lean one way, as in OpenClaw-RL. Unlike OpenClaw-RL
the judge also sees the conversation up to the request: "shorter please" reads as a correction
only if the judge knows what was asked. The judge never raises on backend failure: a vote that
errors or times out abstains, and a judge whose every vote failed returns 0 with `error` set,
so one unreachable endpoint costs signal, not the run.

Credit (`judge.credit`): `binary` (OpenClaw-RL's) makes the majority the reward, ±1; `graded` keeps
how much the feedback approves — the backend's own credit where it reads one (`Voter.own_credit`: the rule
backend's net approval over the reply's points, `claw.judge.rule.graded_credit`), else the mean valid vote (an LLM
judge) — so a reply with one fault earns more than one with four, where binary credit gives both -1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from claw.judge.backends import Backend, VotePrompt, as_voter
from claw.judge.prompts import PromptTemplate, load_prompt
from claw.judge.turn import Turn
from claw.judge.voting import LoopSemaphore, failure_summary, gather_votes, majority, parse_score


@dataclass
class PRMResult:
    score: int  # majority vote in {-1, 0, 1}
    votes: list[int | None]  # m votes, None = abstained (unparseable, error, timeout)
    agreement: float  # fraction of valid votes equal to `score` (logged: how sure the judge was)
    n_abstain: int
    rationale: str  # the text of the first valid vote that agrees with `score`, or ""
    latency_s: float  # wall time of the whole judgement
    error: str | None = None  # set when every vote failed
    reward: float | None = None  # the turn's RL reward: `score` (binary) or the graded credit; None = no signal


CREDITS = ("binary", "graded")


class PRMJudge:
    def __init__(
        self,
        backend: Backend,
        m: int = 3,
        prompt: PromptTemplate | None = None,
        timeout_s: float = 60.0,  # per vote, retries included; the wait for a free slot is not counted
        max_concurrency: int = 8,  # votes in flight at once, over all turns this judge is scoring
        temperature: float = 0.6,
        max_tokens: int = 512,
        credit: str = "binary",  # binary: the majority, ±1 | graded: how much the feedback approves, in [-1, 1]
    ) -> None:
        if m < 1:
            raise ValueError(f"m must be >= 1 (got {m})")
        if credit not in CREDITS:
            raise ValueError(f"judge.credit must be one of {', '.join(CREDITS)} (got {credit!r})")
        self.credit = credit
        self.voter, self.m, self.timeout_s = as_voter(backend), m, timeout_s
        self.vote_prompt = VotePrompt(prompt or load_prompt("prm.yaml"), temperature, max_tokens)
        self._slots = LoopSemaphore(max_concurrency)

    async def judge(self, turn: Turn) -> PRMResult:
        start = time.perf_counter()
        timeout_s = self.timeout_s if self.voter.needs_timeout else None
        outcomes = await gather_votes(
            lambda: self.voter.score_vote(turn, self.vote_prompt), self.m, timeout_s, self._slots.get()
        )
        texts = [o if isinstance(o, str) else None for o in outcomes]
        verdict = majority([parse_score(t) if t is not None else None for t in texts])
        rationale = next((t for t, v in zip(texts, verdict.votes) if t is not None and v == verdict.score), "")
        valid = [v for v in verdict.votes if v is not None]
        own_credit = await self.voter.own_credit(turn) if self.credit == "graded" else None
        reward = self._reward(turn, verdict.score, valid, own_credit)
        return PRMResult(
            reward=reward,
            score=verdict.score,
            votes=verdict.votes,
            agreement=verdict.agreement,
            n_abstain=verdict.n_abstain,
            rationale=rationale,
            latency_s=time.perf_counter() - start,
            error=failure_summary(outcomes),
        )

    def _reward(self, turn: Turn, score: int, valid: list[int], own_credit: float | None = None) -> float | None:
        """The reward of `turn`, from its majority `score` and `valid` votes. Binary: the majority (None when 0).
        Graded: the backend's own credit where it reads one (the rules' net approval), else the mean valid vote;
        None only when the judge found no feedback at all (a neutral reading, no valid or all-zero votes)."""
        if self.credit == "binary":
            return float(score) if score != 0 else None
        if own_credit is not None:
            return own_credit if score != 0 or own_credit != 0 else None
        return sum(valid) / len(valid) if any(valid) else None
