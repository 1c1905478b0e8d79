"""Canary traffic (source=proxy): serve a fraction of new sessions with the candidate, compare the judged
outcomes of the two arms, and promote on evidence — a sequential test with a stated false-promotion rate.

**Not wired to traffic yet**: the proxy serves every session from one engine that holds one weight set
(claw/sources/proxy/service.py `Proxy.engine`, fed by claw/sources/proxy/batcher.py); a canary needs the candidate's
weights served side by side (a second engine, or per-request adapters) and the proxy routing a
session to it by `canary_arm`. `build_guard` refuses `guard.checks` with `canary` and says so. What
is here is the statistics and the decision rule, ready for that routing.

The test. Judged rewards lie in [lo, hi], so each is σ-sub-Gaussian with σ = (hi − lo) / 2
(Hoeffding's lemma). For one arm with n outcomes and mean x̄_n, Robbins' normal-mixture boundary
(Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", eq. (14)) gives a confidence *sequence*, valid at every n at once:

    P(∃ n: |x̄_n − μ| ≥ r_n) ≤ α,     r_n = sqrt((σ²n + ρ) · log((σ²n + ρ) / (ρ α²))) / n

(mix exp(λ S_n − λ² σ² n / 2) over λ ~ N(0, 1/ρ) and apply Ville's inequality). Each arm gets α/2,
so with probability ≥ 1 − α, for all n_c, n_s at once:

    Δ = μ_cand − μ_served ∈ [x̄_c − x̄_s − r_c − r_s,  x̄_c − x̄_s + r_c + r_s].

Decision (`canary_decision`), checked after any number of outcomes, as often as one likes:
- promote  when the lower end > −margin   (the candidate is not worse by more than `margin`);
- reject   when the upper end < −margin   (it is worse by more than `margin`);
- inconclusive once both arms have `max_turns` outcomes (the candidate is held), else continue.

False-promotion rate: if Δ ≤ −margin, promotion needs the sequence to miss Δ at some n, which
happens with probability ≤ α — whenever the canary is looked at or stopped (the point of a
time-uniform sequence; a fixed-n interval checked after every turn would promote far more often).
ρ sets where the boundary is tightest: ρ = σ² · `rho_turns`; it is conservative (bounded rewards,
union bound), so it needs more turns than a fixed-n test would.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from claw.guard.decision import LiveReward


def mixture_radius(n: int, sigma: float, rho: float, alpha: float) -> float:
    """r_n: half-width of the normal-mixture confidence sequence for a σ-sub-Gaussian mean after n observations."""
    if n <= 0:
        return math.inf
    v = sigma * sigma * n + rho
    return math.sqrt(v * math.log(v / (rho * alpha * alpha))) / n


@dataclass(frozen=True)
class CanaryTest:
    alpha: float = 0.05  # false-promotion rate
    margin: float = 0.0  # promote when Δ > −margin is established
    low: float = -1.0  # judged rewards lie in [low, high]
    high: float = 1.0
    rho_turns: float = 32.0  # ρ = σ² · rho_turns
    max_turns: int = 512  # outcomes per arm after which an undecided canary stops (the candidate is held)

    @property
    def sigma(self) -> float:
        return (self.high - self.low) / 2

    def interval(self, candidate: LiveReward, served: LiveReward) -> tuple[float, float]:
        """The (1 − α) time-uniform interval on μ_cand − μ_served."""
        if candidate.n == 0 or served.n == 0:
            return -math.inf, math.inf
        rho = self.sigma**2 * self.rho_turns
        half = mixture_radius(candidate.n, self.sigma, rho, self.alpha / 2) + mixture_radius(
            served.n, self.sigma, rho, self.alpha / 2
        )
        diff = candidate.mean - served.mean
        return diff - half, diff + half


def canary_decision(candidate: LiveReward, served: LiveReward, test: CanaryTest) -> str:
    """ "promote" | "reject" | "inconclusive" | "continue" (see the module docstring)."""
    low, high = test.interval(candidate, served)
    if low > -test.margin:
        return "promote"
    if high < -test.margin:
        return "reject"
    if candidate.n >= test.max_turns and served.n >= test.max_turns:
        return "inconclusive"
    return "continue"


def canary_arm(session_id: str, fraction: float, salt: str = "") -> bool:
    """True when session `session_id` goes to the candidate: a hash, so a session stays in its arm on every
    turn and across restarts; `salt` (e.g. the candidate's version) reshuffles the arms per candidate."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"guard.canary.fraction must be in [0, 1] (got {fraction})")
    h = int(hashlib.sha256(f"{salt}/{session_id}".encode()).hexdigest()[:16], 16)
    return h / 2**64 < fraction
