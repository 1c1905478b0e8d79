"""Held-out evaluation results with honest uncertainty (Wilson 95% interval)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field


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
        return f"accuracy {self.accuracy:.3f} (n={self.n}, 95% CI [{self.ci_low:.3f}, {self.ci_high:.3f}])"

    @property
    def headline(self) -> float:
        """The one number the progress bar shows and an Optuna sweep maximises."""
        return self.accuracy

    def metrics(self) -> dict[str, float]:
        return {"eval/accuracy": self.accuracy, "eval/ci_low": self.ci_low, "eval/ci_high": self.ci_high}

    def to_json(self) -> dict:
        return {**asdict(self), "headline": self.headline}

    def report(self, before: dict, steps: int, wall_s: float) -> tuple[str, dict]:
        """The before/after table printed at the end of a run, and the paired test's numbers."""
        p = mcnemar_p(before["correct"], self.correct)
        b = before
        text = (
            "\n[claw] held-out accuracy\n"
            f"  before: {b['accuracy']:.3f}  (n={b['n']}, 95% CI [{b['ci_low']:.3f}, {b['ci_high']:.3f}])\n"
            f"  after : {self.accuracy:.3f}  (n={self.n}, 95% CI [{self.ci_low:.3f}, {self.ci_high:.3f}])  "
            f"after {steps} steps in {wall_s / 60:.1f} min; paired McNemar p = {p:.3g}\n"
        )
        return text, {"mcnemar_p": p}


def evaluate_correct(correct: list[int], version: int = 0) -> EvalResult:
    """Accuracy with its Wilson interval from per-problem outcomes (1 = correct)."""
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
