"""Per-token estimators of KL(π_θ ‖ π_ref) from the sampled tokens (Schulman, "Approximating KL
divergence", http://joschu.net/blog/kl-approx.html). With log r = log π_ref − log π_θ:

- k1 = −log r                    unbiased, high variance, can be negative
- k2 = ½ (log r)²                biased, low variance
- k3 = (r − 1) − log r           unbiased, low variance, always ≥ 0 ("low_var_kl" in verl)
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.registry import Registry

KL_ESTIMATORS: Registry = Registry("KL estimator")


@KL_ESTIMATORS.register("k1")
def k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return logprobs - ref_logprobs


@KL_ESTIMATORS.register("k2")
def k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    return 0.5 * (ref_logprobs - logprobs) ** 2


@KL_ESTIMATORS.register("k3")
def k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    log_r = (ref_logprobs - logprobs).clamp(-20.0, 20.0)  # guard exp overflow on wild tokens
    return torch.exp(log_r) - 1.0 - log_r
