"""Held-out evaluation results with honest uncertainty (Wilson 95% interval)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from claw.data.arithmetic import reward


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion (better than ±1.96·SE near 0 or 1)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    accuracy: float
    n: int
    ci_low: float
    ci_high: float
    policy_version: int
    correct: list[int] = field(default_factory=list)  # per problem, for paired comparisons

    def summary(self) -> str:
        return f"{self.accuracy:.3f} (n={self.n}, 95% CI [{self.ci_low:.3f}, {self.ci_high:.3f}])"

    def to_json(self) -> dict:
        return asdict(self)


def evaluate_answers(texts: list[str], answers: list[int], version: int = 0) -> EvalResult:
    correct = [int(reward(t, a)) for t, a in zip(texts, answers)]
    lo, hi = wilson_interval(sum(correct), len(correct))
    return EvalResult(sum(correct) / max(len(correct), 1), len(correct), lo, hi, version, correct)


def mcnemar_p(before: list[int], after: list[int]) -> float:
    """Exact two-sided McNemar p-value for paired per-problem outcomes."""
    b = sum(1 for x, y in zip(before, after) if x and not y)
    c = sum(1 for x, y in zip(before, after) if y and not x)
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
