"""Per-token estimators of KL(π_θ ‖ π_ref) from the sampled tokens (Schulman, "Approximating KL
divergence", http://joschu.net/blog/kl-approx.html). With log r = log π_ref − log π_θ, a ~ π_θ:

| name | value               | as a *value*: E_θ[k] | as a *loss*: E_θ[∇_θ k]                           |
|------|---------------------|----------------------|---------------------------------------------------|
| k1   | −log r              | KL(π_θ‖π_ref), exact | **0** — Σ_a π_θ ∇log π_θ = 0: no pull to π_ref     |
| k2   | ½ (log r)²          | biased (≥ 0)         | **∇ KL(π_θ ‖ π_ref)**, the reverse KL: use this    |
| k3   | (r − 1) − log r     | KL(π_θ‖π_ref), exact | ∇ KL(π_ref ‖ π_θ), the *forward* KL ("low_var_kl") |

Derivations (per token, on-policy): ∇k1 = ∇log π_θ; ∇k2 = (log π_θ − log π_ref) ∇log π_θ, whose
expectation Σ_a π_θ (log π_θ − log π_ref) ∇log π_θ is ∇ Σ_a π_θ log(π_θ/π_ref); ∇k3 = (1 − r) ∇log π_θ,
whose expectation is −Σ_a π_ref ∇log π_θ = ∇ KL(π_ref ‖ π_θ). So k3 — verl's popular "low_var_kl" —
is an unbiased *value* of the reverse KL but, as a loss, follows the forward KL's gradient; k1 as a
loss does nothing in expectation (verl users learned both the hard way). claw's default is **k2**,
the estimator whose gradient is the reverse KL that the penalty is meant to be. The sampled tokens
come from π_old, not π_θ; within one PPO update the two agree to first order.
`tests/test_losses.py::test_kl_estimator_expected_gradients` checks the table on an exact categorical.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.registry import Registry

KL_ESTIMATORS: Registry = Registry("KL estimator")


@KL_ESTIMATORS.register("k1")
def k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return logprobs - ref_logprobs  # −log r


@KL_ESTIMATORS.register("k2")
def k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return 0.5 * (ref_logprobs - logprobs) ** 2  # ½ (log r)²


@KL_ESTIMATORS.register("k3")
def k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    log_r = (ref_logprobs - logprobs).clamp(-20.0, 20.0)  # guard exp overflow on wild tokens
    return torch.exp(log_r) - 1.0 - log_r  # (r − 1) − log r
