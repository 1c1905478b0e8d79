"""Judge metrics, logged under `judge/`: score distribution, abstention rate, vote agreement,
hint acceptance rate and latency, aggregated since the last `summary(reset=True)`."""

from __future__ import annotations

from claw.judge.hint import HintResult
from claw.judge.prm import PRMResult


class JudgeStats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.scores: list[int] = []
        self.votes = self.abstained = 0
        self.agreement: list[float] = []
        self.prm_latency: list[float] = []
        self.hints_asked = self.hints_accepted = 0
        self.hint_latency: list[float] = []
        self.failed = 0

    def add_prm(self, r: PRMResult) -> None:
        self.scores.append(r.score)
        self.votes += len(r.votes)
        self.abstained += r.n_abstain
        if len(r.votes) > r.n_abstain:
            self.agreement.append(r.agreement)
        self.prm_latency.append(r.latency_s)
        self.failed += r.error is not None

    def add_hint(self, r: HintResult) -> None:
        self.hints_asked += 1
        self.hints_accepted += r.accepted
        self.hint_latency.append(r.latency_s)
        self.failed += r.error is not None

    def summary(self, reset: bool = True) -> dict[str, float]:
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
        n = len(self.scores)
        out = {
            "judge/turns": float(n),
            "judge/score_pos_frac": mean([s == 1 for s in self.scores]),
            "judge/score_zero_frac": mean([s == 0 for s in self.scores]),
            "judge/score_neg_frac": mean([s == -1 for s in self.scores]),
            "judge/abstain_rate": self.abstained / self.votes if self.votes else 0.0,
            "judge/vote_agreement": mean(self.agreement),
            "judge/prm_latency_s": mean(self.prm_latency),
            "judge/hint_accept_rate": self.hints_accepted / self.hints_asked if self.hints_asked else 0.0,
            "judge/hint_latency_s": mean(self.hint_latency),
            "judge/failed_calls": float(self.failed),
        }
        if reset:
            self.reset()
        return out
