"""The guard's decision: promote the candidate, hold it, or roll the served version back.

A pure function of the evidence, the thresholds and the checks turned on (`guard.checks`:
`ope`, `kl`, `probe`; conf/guard/*.yaml), checked in this order:

1. **rollback** — the served version's live judged reward is significantly below the previous
   promoted version's: its upper 95% bound < previous mean − `rollback_margin` (each with at least
   `min_live_samples` judged turns). The candidate is not promoted in the same step.
2. **hold** when any check that is on fails or cannot be made:
   - `ope`: fewer than `min_samples` logged judged turns of the served version to evaluate on;
     ESS < `min_ess_fraction` · n (the importance weights are too uneven for the estimate to mean
     much); the candidate is significantly worse than the served version on the same turns — the
     candidate's upper bound < served value − `margin`;
   - `kl` (drift): mean per-token KL(served ‖ candidate) > `max_kl` (when there are logged turns to
     measure it on);
   - `probe`: no probe score for the candidate or the served version, or candidate probe score <
     served probe score − `probe_margin` (a probe score given as evidence is compared even when
     `probe` is not listed).
3. **promote** otherwise — or, when `canary` is among the checks, run a canary of the candidate on live
   traffic first (claw/guard/canary.py; the callback runs it and its outcome replaces this decision).

The OPE test is "not significantly worse", not "significantly better": with a rollout batch of
8–64 judged turns a non-inferiority test would almost never promote. Large steps are caught by
the drift bound and the ESS; regressions that slip through, by the live-reward rollback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from claw.guard.ope import Z95, OPEEstimate


@dataclass(frozen=True)
class Thresholds:
    max_kl: float = 0.05  # mean per-token KL(served ‖ candidate) allowed in one promotion
    margin: float = 0.0  # tolerated drop of the candidate's OPE value below the served one
    min_ess_fraction: float = 0.1  # ESS / n below this: hold
    min_samples: int = 8  # judged turns of the served version needed to decide
    probe_margin: float = 0.0  # tolerated drop of the probe score
    rollback_margin: float = 0.0  # tolerated drop of the live reward vs the previous promoted version
    min_live_samples: int = 16  # judged live turns per version before a rollback can be decided


@dataclass(frozen=True)
class LiveReward:
    """Running sums of the judged rewards of the turns one served version generated."""

    n: int = 0
    total: float = 0.0
    total_sq: float = 0.0

    def add(self, rewards: list[float]) -> LiveReward:
        return LiveReward(
            self.n + len(rewards), self.total + sum(rewards), self.total_sq + sum(r * r for r in rewards)
        )

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    def ci_high(self, z: float = Z95) -> float:
        if self.n < 2:
            return math.inf
        var = max(0.0, (self.total_sq - self.n * self.mean**2) / (self.n - 1))
        return self.mean + z * math.sqrt(var / self.n)


@dataclass
class Evidence:
    candidate: OPEEstimate | None = None  # OPE of the candidate on the served version's turns
    served: OPEEstimate | None = None  # the served version on the same turns (on-policy)
    kl: float | None = None  # drift bound
    probe_candidate: float | None = None
    probe_served: float | None = None
    live_served: LiveReward = field(default_factory=LiveReward)
    live_previous: LiveReward | None = None  # None: no earlier promoted version to roll back to
    canary: dict | None = None  # the canary's outcome and its arms (claw/guard/canary.py CanaryResult.to_json)

    def to_json(self) -> dict:
        return {
            "candidate": self.candidate.to_json() if self.candidate else None,
            "served": self.served.to_json() if self.served else None,
            "kl": self.kl,
            "probe_candidate": self.probe_candidate,
            "probe_served": self.probe_served,
            "live_served": {
                "n": self.live_served.n,
                "mean": _finite(self.live_served.mean),
                "ci_high": _finite(self.live_served.ci_high()),
            },
            "live_previous": None
            if self.live_previous is None
            else {"n": self.live_previous.n, "mean": _finite(self.live_previous.mean)},
            "canary": self.canary,
        }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Decision:
    action: str  # "promote" | "hold" | "rollback"
    reasons: tuple[str, ...]


CHECKS = ("ope", "kl", "probe", "canary")  # canary: decided after the others, on live traffic (claw/guard/canary.py)


def decide(e: Evidence, t: Thresholds, checks: tuple[str, ...] = ("ope", "kl")) -> Decision:
    prev = e.live_previous
    if prev is not None and prev.n >= t.min_live_samples and e.live_served.n >= t.min_live_samples:
        bound = prev.mean - t.rollback_margin
        if e.live_served.ci_high() < bound:
            live = f"live reward {e.live_served.mean:.3f} (upper bound {e.live_served.ci_high():.3f})"
            return Decision("rollback", (f"{live} < previous {prev.mean:.3f} - {t.rollback_margin}",))
    reasons = _ope_reasons(e, t) if "ope" in checks else []
    if "kl" in checks and e.kl is not None and e.kl > t.max_kl:
        reasons.append(f"KL {e.kl:.4f} > {t.max_kl}")
    if "probe" in checks and (e.probe_candidate is None or e.probe_served is None):
        reasons.append("no probe score for the candidate or the served version")
    elif (
        e.probe_candidate is not None
        and e.probe_served is not None
        and e.probe_candidate < e.probe_served - t.probe_margin
    ):
        reasons.append(f"probe {e.probe_candidate:.3f} < served {e.probe_served:.3f} - {t.probe_margin}")
    if reasons:
        return Decision("hold", tuple(reasons))
    return Decision("promote", ())


def _ope_reasons(e: Evidence, t: Thresholds) -> list[str]:
    if e.candidate is None or e.served is None or e.candidate.n < t.min_samples:
        return [f"fewer than {t.min_samples} judged turns of the served version"]
    reasons = []
    if e.candidate.ess < t.min_ess_fraction * e.candidate.n:
        reasons.append(f"ESS {e.candidate.ess:.1f} < {t.min_ess_fraction} x {e.candidate.n}")
    if e.candidate.ci_high < e.served.value - t.margin:
        cand = f"OPE {e.candidate.value:.3f} (upper {e.candidate.ci_high:.3f})"
        reasons.append(f"{cand} < served {e.served.value:.3f} - {t.margin}")
    return reasons
