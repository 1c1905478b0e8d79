"""Off-policy evaluation: a candidate policy's expected reward from turns another policy sampled.

Logged turn i: prompt x_i, sampled tokens a_i1..a_iT, behaviour log-probs log β(a_it) (the
engine's `rollout_logprobs`, at the sample's temperature), judged reward r_i. A candidate π
is scored by importance weighting (Precup et al. 2000; Owen, *Monte Carlo theory*, ch. 9):

    log w_i = Σ_t m_it (log π(a_it | ·) − log β(a_it | ·))          (weight="sequence", exact)

- clipped IS (Ionides 2008):   V̂ = (1/n) Σ_i min(w_i, c) · r_i
  Unbiased only when no weight reaches c; clipping biases the estimate toward 0 (down for
  r ≥ 0), and buys a variance bounded by c².
- self-normalised IS:          V̂ = Σ_i w_i r_i / Σ_i w_i
  Biased by O(1/n) but consistent, invariant to a constant shift of r, always inside [min r, max r].
- effective sample size (Kong 1992):  ESS = (Σ w)² / Σ w²  ∈ [1, n]; ESS ≪ n means a few turns
  carry the whole estimate, whatever its interval says.

Intervals are **normal approximations** (no bootstrap): clipped IS uses the sample standard
deviation of min(w, c)·r; SNIS the delta method, Var ≈ Σ w_i² (r_i − V̂)² / (Σ w_i)².

weight="token_mean" uses the per-token *average* log-ratio, log w_i = mean_t(...) = (1/T_i) · the
exact log-weight, i.e. the exact weight raised to 1/T_i. That is **not** an importance weight: it
shrinks every weight toward 1, so the estimate is biased toward the behaviour policy's value
(more so for long responses) and the interval is too narrow; its variance is far smaller. Use it
to rank candidates, not to read their value.

Weights are handled in log space (exp of a sum over a few hundred tokens overflows float32):
min(w, c) = exp(min(log w, log c)); SNIS and ESS are invariant to a common factor, so they use
w / max w.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

Z95 = 1.959964  # two-sided 95% normal quantile


@dataclass(frozen=True)
class OPEEstimate:
    value: float  # estimated expected reward of the candidate
    ci_low: float
    ci_high: float
    ess: float  # effective sample size of the (unclipped) weights
    n: int  # logged turns used
    estimator: str  # "clipped_is" | "snis" | "on_policy"

    def to_json(self) -> dict[str, float | int | str]:
        return asdict(self)


def log_importance_weights(
    candidate_logprobs: Tensor, behaviour_logprobs: Tensor, mask: Tensor, weight: str = "sequence"
) -> Tensor:
    """[N] log w_i from [N, T] per-token log-probs and a [N, T] 0/1 mask of the tokens that count.

    weight="sequence": Σ_t m (log π − log β) (the exact sequence weight).
    weight="token_mean": that sum / Σ_t m (biased: see the module docstring).
    """
    diff = (candidate_logprobs.double() - behaviour_logprobs.double()) * mask.double()
    total = diff.sum(-1)
    if weight == "sequence":
        return total
    if weight == "token_mean":
        return total / mask.double().sum(-1).clamp(min=1.0)
    raise ValueError(f"weight must be 'sequence' or 'token_mean' (got {weight!r})")


def effective_sample_size(log_w: Tensor) -> float:
    """(Σ w)² / Σ w², computed on w / max w (the ratio does not change)."""
    w = torch.exp(log_w.double() - log_w.double().max())
    return float(w.sum() ** 2 / (w**2).sum())


def clipped_is(log_w: Tensor, rewards: Tensor, clip: float, z: float = Z95) -> OPEEstimate:
    """(1/n) Σ min(w_i, c) r_i with a normal interval from the sample std of min(w, c)·r."""
    n = int(log_w.numel())
    if n == 0:
        raise ValueError("clipped_is needs at least one logged turn")
    terms = torch.exp(torch.clamp(log_w.double(), max=math.log(clip))) * rewards.double()
    value = float(terms.mean())
    half = z * float(terms.std(unbiased=True)) / math.sqrt(n) if n > 1 else math.inf
    return OPEEstimate(value, value - half, value + half, effective_sample_size(log_w), n, "clipped_is")


def self_normalized_is(log_w: Tensor, rewards: Tensor, z: float = Z95) -> OPEEstimate:
    """Σ w r / Σ w with a delta-method interval, Var ≈ Σ w² (r − V̂)² / (Σ w)²."""
    n = int(log_w.numel())
    if n == 0:
        raise ValueError("self_normalized_is needs at least one logged turn")
    w = torch.exp(log_w.double() - log_w.double().max())
    r = rewards.double()
    value = float((w * r).sum() / w.sum())
    half = z * math.sqrt(float((w**2 * (r - value) ** 2).sum())) / float(w.sum()) if n > 1 else math.inf
    return OPEEstimate(value, value - half, value + half, effective_sample_size(log_w), n, "snis")


def on_policy(rewards: Tensor, z: float = Z95) -> OPEEstimate:
    """The behaviour policy's own value on its turns (every w = 1): mean and a normal interval."""
    est = clipped_is(torch.zeros(rewards.numel(), dtype=torch.float64), rewards, clip=1.0, z=z)
    return OPEEstimate(est.value, est.ci_low, est.ci_high, est.ess, est.n, "on_policy")


ESTIMATORS = {"clipped_is", "snis"}


def estimate(log_w: Tensor, rewards: Tensor, estimator: str, clip: float, z: float = Z95) -> OPEEstimate:
    if estimator == "clipped_is":
        return clipped_is(log_w, rewards, clip, z)
    if estimator == "snis":
        return self_normalized_is(log_w, rewards, z)
    raise ValueError(f"estimator must be one of {sorted(ESTIMATORS)} (got {estimator!r})")


def k3_kl(candidate_logprobs: Tensor, behaviour_logprobs: Tensor, mask: Tensor) -> float:
    """Mean per-token KL(β ‖ π) on tokens sampled from β, by Schulman's k3 estimator:
    k3 = (ρ − 1) − log ρ with ρ = π(a)/β(a); unbiased (E_β[ρ] = 1), and ≥ 0 token by token.
    (Only the sampled token's log-probs are needed: no logits, no second model in memory.)"""
    log_ratio = (candidate_logprobs.double() - behaviour_logprobs.double()).clamp(
        max=20.0
    )  # exp(20) ≈ 5e8: no overflow
    k3 = torch.expm1(log_ratio) - log_ratio
    m = mask.double()
    return float((k3 * m).sum() / m.sum().clamp(min=1.0))
