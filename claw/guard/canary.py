"""Canary traffic (guard.checks has canary; source=proxy, or simulated_user with schedule=free; engine=hf):
serve a fraction of new sessions with the candidate, compare the judged outcomes of the two arms, and
promote on evidence — a sequential test with a stated false-promotion rate.

How it runs. When a candidate passes the other checks (ope, kl, probe), the guard
1. writes the canary into `guard/served.json` (a restart then knows it was cut, and serves the promoted
   version: the candidate is never in served.json before it is promoted);
2. loads the candidate into the engine's second weight set (`HFEngine.load_canary`, a second copy of
   the model) and starts `CanaryTraffic`: each **new** session (its first main turn) joins the
   candidate's arm with probability `fraction` — a hash of (candidate version, session id),
   `canary_arm`, so the split is deterministic and a session keeps its arm on every turn — or the
   served arm; sessions that began before the canary stay on the served weights and count for
   neither arm, and no conversation switches weights while the canary runs;
3. waits: the proxy reports every judged turn of either arm (`observe`, as soon as it is judged,
   before it is trained), and the guard checks `canary_decision` every `poll_s` seconds;
4. ends on promote (the engine serves the candidate to everyone), reject, inconclusive (both arms
   have `max_turns` judged turns), timeout (`timeout_s`), or a manual rollback request (the candidate
   is held and the rollback applied at the next step, under the next version number: this step's
   number is the candidate's). One guard.jsonl line records the outcome with both arms' counts,
   means and the interval.

The served arm is the control: turns of the served weights in new sessions that began in the same
period, so a change in traffic over time (another hour, other users) does not masquerade as a
difference between the weights.

What the trainer does meanwhile: it **waits** for the decision (at most `timeout_s`). A demanding user
wants the canary to judge the weights that will be served, and the next update to start from a
decided state — promoted, or reset after a rejection — rather than train ahead on a candidate that
live traffic may be about to reject (each further step would be a new candidate, and a canary that
restarted for each would never gather enough turns). Serving goes on throughout; turns made during
the wait fill the queue (and wait in memory once it is full), and, as always, those that fall more
than `max_staleness` versions behind before they are trained are dropped and listed in the ledger.
After the decision:
- promote: as any promotion (weights to guard/, served.json, then the engine);
- reject: a hold; with `after_reject=reset` (default) the trainer restarts from the served weights — live
  traffic showed the candidate worse by more than `margin`, so further updates should not build on
  it; `continue` keeps training from it (then `max_lag` bounds how far);
- inconclusive or timeout: a hold (the candidate is not shown worse); the trainer goes on from it.
A candidate that would leave the engine more than `max_lag` versions behind is not canaried: the
guard holds it and resets the trainer (as on any such hold), because after a failed canary the reset
would have to re-publish the served weights under the number the candidate's turns already carry,
and a policy_version names one set of weights, never two. So guard.max_lag must be >= 1.

Labels. Canary turns carry the candidate's version (the trainer's `policy_version`); their samples
train exactly like any other (their own rollout log-probs), and the sample's `info["arm"]` says
which arm served them. A promoted candidate's canary turns count toward its live reward; a rejected
one's toward nobody's.

Not built: vLLM engines (one weight set in the engine; `guard.checks` with canary fails at start-up
naming engine=hf), simulated users under `schedule=lockstep` (the next round waits for the trainer,
which waits for the canary; fails at start-up naming schedule=free), and resuming a canary after a
restart (it is recorded as cut; the restarted trainer's next candidate gets a canary of its own).

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
union bound), so it needs more turns than a fixed-n test would. With rewards in [−1, 1] (σ = 1),
ρ = 32, α = 0.05 and n turns in each arm the interval's half-width r_c + r_s is 1.88 at n = 22, 0.89 at
64, 0.29 at 512 and 0.11 at 4096: a canary with `max_turns` = 512 settles only differences of about
0.29 − margin or more; at fraction 0.1 the served arm has ~9× the turns (512 + 4608: 0.20).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class CanarySettings:
    """`guard.canary` (conf/guard/ope.yaml)."""

    fraction: float = 0.1  # new sessions served by the candidate while its canary runs
    test: CanaryTest = field(default_factory=CanaryTest)
    timeout_s: float = 1800.0  # the trainer waits at most this long for a decision; then the candidate is held
    after_reject: str = "reset"  # reset: the trainer restarts from the served weights | continue: from the candidate
    poll_s: float = 0.5  # how often the guard checks the decision while it waits

    def __post_init__(self) -> None:
        if not 0.0 < self.fraction < 1.0:
            raise ValueError(f"guard.canary.fraction must be in (0, 1): both arms need sessions (got {self.fraction})")
        if self.after_reject not in ("reset", "continue"):
            raise ValueError(f"guard.canary.after_reject must be reset or continue (got {self.after_reject!r})")


@dataclass
class CanaryResult:
    """How one canary ended, with its evidence (a guard.jsonl line's `evidence.canary`)."""

    canary_id: str
    version: int  # the candidate's
    fraction: float
    verdict: str  # promote | reject | inconclusive | timeout | interrupted (a manual rollback request)
    candidate: LiveReward  # judged rewards of the candidate's arm
    served: LiveReward  # ...and of the served arm, over the same period
    interval: tuple[float, float]  # the (1 − α) time-uniform interval on μ_cand − μ_served
    sessions: dict[str, int]  # sessions enrolled per arm
    waited_s: float

    def to_json(self) -> dict:
        arm = lambda r: {"n": r.n, "mean": r.mean if r.n else None}  # noqa: E731
        return {
            "id": self.canary_id,
            "version": self.version,
            "fraction": self.fraction,
            "verdict": self.verdict,
            "candidate": arm(self.candidate),
            "served": arm(self.served),
            "interval": [x if math.isfinite(x) else None for x in self.interval],
            "sessions": self.sessions,
            "waited_s": self.waited_s,
        }

    def reason(self, test: CanaryTest) -> str:
        lo, hi = self.interval
        turns = f"{self.candidate.n} candidate + {self.served.n} served judged turns"
        delta = f"Δ ∈ [{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) else "no evidence yet"
        return {
            "promote": f"canary: {delta} > −{test.margin} after {turns}",
            "reject": f"canary rejected: {delta} < −{test.margin} after {turns}",
            "inconclusive": f"canary inconclusive: {delta} after {turns} (max_turns {test.max_turns})",
            "timeout": f"canary timed out after {self.waited_s:.0f}s: {delta} after {turns}",
            "interrupted": f"canary stopped for a manual rollback request (applied next step): {delta} after {turns}",
        }[self.verdict]


class CanaryTraffic:
    """The live side of the running canary, shared by the guard (the trainer's thread) and the proxy (its
    event loop; a claw/sources/proxy/canary.py `CanaryRouter`): which arm each new session joins, and the
    judged rewards of each arm. Thread-safe; one canary at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.canary_id: str | None = None
        self._fraction, self._salt, self._bounds = 0.0, "", (-1.0, 1.0)
        self._arms: dict[str, str] = {}  # session id -> arm, for the sessions enrolled in this canary
        self._rewards: dict[str, LiveReward] = {}

    def start(self, canary_id: str, fraction: float, salt: str, bounds: tuple[float, float] = (-1.0, 1.0)) -> None:
        with self._lock:
            self.canary_id, self._fraction, self._salt, self._bounds = canary_id, fraction, salt, bounds
            self._arms, self._rewards = {}, {"canary": LiveReward(), "served": LiveReward()}

    @property
    def running(self) -> bool:
        return self.canary_id is not None

    def stop(self) -> None:
        """Every session is served by the served weights again; later rewards are ignored."""
        with self._lock:
            self.canary_id, self._arms = None, {}

    def route(self, session_id: str, new: bool) -> tuple[str, str] | None:
        with self._lock:
            if self.canary_id is None:
                return None
            arm = self._arms.get(session_id)
            if arm is None:
                if not new:  # began before the canary: served weights, evidence for neither arm
                    return None
                arm = "canary" if canary_arm(session_id, self._fraction, self._salt) else "served"
                self._arms[session_id] = arm
            return self.canary_id, arm

    def observe(self, canary_id: str, arm: str, reward: float) -> None:
        low, high = self._bounds  # the test's σ assumes rewards in [low, high]
        with self._lock:
            if canary_id == self.canary_id and arm in self._rewards:
                self._rewards[arm] = self._rewards[arm].add([min(max(float(reward), low), high)])

    def snapshot(self) -> tuple[LiveReward, LiveReward, dict[str, int]]:
        """(candidate arm's rewards, served arm's rewards, sessions per arm)."""
        with self._lock:
            enrolled = Counter(self._arms.values())
            return (
                self._rewards.get("canary", LiveReward()),
                self._rewards.get("served", LiveReward()),
                {"canary": enrolled["canary"], "served": enrolled["served"]},
            )

    def wait(self, version: int, settings: CanarySettings, interrupted: Callable[[], bool]) -> CanaryResult:
        """Check `canary_decision` every `poll_s` until it decides, `timeout_s` passes or `interrupted()`."""
        t0 = time.perf_counter()
        while True:
            cand, served, sessions = self.snapshot()
            verdict = canary_decision(cand, served, settings.test)
            waited = time.perf_counter() - t0
            if verdict == "continue" and interrupted():
                verdict = "interrupted"
            elif verdict == "continue" and waited >= settings.timeout_s:
                verdict = "timeout"
            if verdict != "continue":
                return CanaryResult(
                    self.canary_id or "", version, settings.fraction, verdict, cand, served,
                    settings.test.interval(cand, served), sessions, waited,
                )  # fmt: skip
            time.sleep(settings.poll_s)
