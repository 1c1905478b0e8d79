"""Held-out evaluation results with honest uncertainty: accuracy with a Wilson 95% interval and McNemar's exact
test (datasets); a persona's mean rating with a t interval, Student's paired t-test (`scipy.stats.ttest_rel`)
and a bootstrap interval of the gain (`scipy.stats.bootstrap`, BCa) before vs after (simulated users)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from claw.judge.drift import opens_with_apology


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


def mean_ci(xs: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student t interval (`scipy.stats.t`), clipped to the ratings' range [0, 1]."""
    from scipy import stats

    n = len(xs)
    if n == 0:
        return 0.0, 0.0, 1.0
    m = sum(xs) / n
    if n == 1:
        return m, 0.0, 1.0
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return m, max(0.0, m - half), min(1.0, m + half)


@dataclass(frozen=True)
class PairedTest:
    """Before vs after on the same tasks: Student's paired t-test and a bootstrap interval of the mean gain."""

    n: int
    gain: float  # mean(after - before)
    t: float
    p: float  # two-sided, scipy.stats.ttest_rel
    gain_low: float  # 95% BCa bootstrap interval of the mean gain (scipy.stats.bootstrap)
    gain_high: float

    def to_json(self) -> dict[str, float]:
        return {"ttest_rel_p": self.p, "ttest_rel_t": self.t, "gain": self.gain,
                "gain_ci_low": self.gain_low, "gain_ci_high": self.gain_high, "n": self.n}  # fmt: skip


def paired_test(before: list[float], after: list[float], seed: int = 0, resamples: int = 9999) -> PairedTest:
    """Student's paired t-test (`scipy.stats.ttest_rel`, two-sided) and a 95% BCa bootstrap interval of the mean
    gain (`scipy.stats.bootstrap`, paired: tasks are resampled). Identical lists give p = 1; a constant non-zero
    gain gives p = 0 (t is infinite) and a zero-width interval."""
    import numpy as np
    from scipy import stats

    if len(before) != len(after):
        raise ValueError(f"paired samples differ in length: {len(before)} before, {len(after)} after")
    n = len(before)
    d = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    gain = float(d.mean()) if n else 0.0
    if n < 2:
        return PairedTest(n, gain, float("nan"), 1.0, gain, gain)
    if np.all(d == d[0]):  # no variance: the t statistic is 0/0 or ±inf, the interval a point
        return PairedTest(n, gain, 0.0 if gain == 0 else math.copysign(math.inf, gain), 1.0 if gain == 0 else 0.0,
                          gain, gain)  # fmt: skip
    res = stats.ttest_rel(after, before)
    boot = stats.bootstrap((d,), np.mean, confidence_level=0.95, n_resamples=resamples, method="BCa",
                           random_state=np.random.default_rng(seed))  # fmt: skip
    ci = boot.confidence_interval
    return PairedTest(n, gain, float(res.statistic), float(res.pvalue), float(ci.low), float(ci.high))


def seeds_summary(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation across seeds (sd = 0 for one seed)."""
    n = len(values)
    m = sum(values) / n
    return m, (math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0)


@dataclass
class PersonaEval:
    persona: str
    score: float  # mean rating of the first response
    n: int
    ci_low: float
    ci_high: float
    policy_version: int
    pass_rates: dict[str, float]  # per criterion
    scores: list[float] = field(default_factory=list)  # per task, for paired comparisons
    examples: list[dict[str, Any]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)  # every first response, in task order (eval.json)
    # in-session repair (source.eval_repair): on tasks whose first reply missed a criterion, the rating of the
    # reply after the user's complaint: {n, first, second, gain, scores}; None when not measured
    repair: dict[str, Any] | None = None

    @property
    def apology_rate(self) -> float:
        """The share of first responses that open by conceding or apologising (the apology drift,
        claw/judge/drift.py): unrated, since a scorer can pass it; nan when no responses were kept."""
        if not self.responses:
            return float("nan")
        return sum(opens_with_apology(r) for r in self.responses) / len(self.responses)

    @property
    def headline(self) -> float:
        return self.score

    def summary(self) -> str:
        rates = ", ".join(f"{k} {v:.2f}" for k, v in self.pass_rates.items())
        repair = (
            f"; after a complaint {self.repair['first']:.3f} -> {self.repair['second']:.3f} (n={self.repair['n']})"
            if self.repair and self.repair["n"]
            else ""
        )
        return (
            f"{self.persona} rating {self.score:.3f} "
            f"(n={self.n}, 95% CI [{self.ci_low:.3f}, {self.ci_high:.3f}]); {rates}{repair}"
        )

    def metrics(self) -> dict[str, float]:
        out = {"eval/score": self.score, "eval/ci_low": self.ci_low, "eval/ci_high": self.ci_high}
        out.update({f"eval/pass/{k}": v for k, v in self.pass_rates.items()})
        out["eval/apology_rate"] = self.apology_rate
        if self.repair and self.repair["n"]:
            out.update({"eval/repair_first": self.repair["first"], "eval/repair_second": self.repair["second"],
                        "eval/repair_gain": self.repair["gain"]})  # fmt: skip
        return out

    def to_json(self) -> dict[str, Any]:
        # the rate is stored although `responses` give it: summaries such as results.json drop the responses
        return {**asdict(self), "headline": self.headline, "apology_rate": self.apology_rate}

    def report(self, before: dict, steps: int, wall_s: float) -> tuple[str, dict]:
        test = paired_test(before["scores"], self.scores)
        apology = "apology opening (unrated)"
        width = max([len(k) for k in self.pass_rates] + [len(apology)])
        lines = [
            f"\n[claw] {self.persona}: rating of the first response on {self.n} held-out tasks "
            "(the persona's hidden scorer)",
            f"  {'':<{width}}  {'before':>7}  {'after':>7}",
            f"  {'rating':<{width}}  {before['score']:7.3f}  {self.score:7.3f}   95% CI before "
            f"[{before['ci_low']:.3f}, {before['ci_high']:.3f}], after [{self.ci_low:.3f}, {self.ci_high:.3f}]",
        ]
        for k, v in self.pass_rates.items():
            lines.append(f"  {k:<{width}}  {before['pass_rates'].get(k, float('nan')):7.3f}  {v:7.3f}")
        lines.append(
            f"  {apology:<{width}}  {before.get('apology_rate', float('nan')):7.3f}  {self.apology_rate:7.3f}"
        )
        lines.append(
            f"  gain {test.gain:+.3f}, 95% bootstrap CI [{test.gain_low:+.3f}, {test.gain_high:+.3f}]; "
            f"Student's paired t-test (scipy.stats.ttest_rel) t = {test.t:.2f}, p = {test.p:.3g}"
        )
        lines.append(f"  {steps} steps in {wall_s / 60:.1f} min\n")
        return "\n".join(lines), test.to_json()
