"""Off-policy evaluation (claw/guard/ope.py) on numbers worked out by hand.

Three logged turns, rewards r = [1, -1, 1]:
  A: behaviour [-1, -2],     candidate [-1 + ln2, -2]                 -> log w = ln 2,  w = 2
  B: behaviour [-0.3],       candidate [-0.3]                         -> log w = 0,     w = 1
  C: behaviour [-1, -1, -1], candidate [-1 - ln2, -1, 5], mask [1,1,0] -> log w = -ln 2, w = 1/2
     (the masked third token's +6 log-ratio must not count)
"""

import math

import pytest
import torch

from claw.guard.ope import (
    Z95,
    clipped_is,
    effective_sample_size,
    estimate,
    k3_kl,
    log_importance_weights,
    on_policy,
    self_normalized_is,
)

LN2 = math.log(2.0)
# [N=3, T=3], right-padded; padding has mask 0
BEHAVIOUR = torch.tensor([[-1.0, -2.0, 0.0], [-0.3, 0.0, 0.0], [-1.0, -1.0, -1.0]])
CANDIDATE = torch.tensor([[-1.0 + LN2, -2.0, 0.0], [-0.3, 0.0, 0.0], [-1.0 - LN2, -1.0, 5.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
REWARDS = torch.tensor([1.0, -1.0, 1.0])


def test_sequence_weights_sum_the_masked_log_ratios():
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK)
    assert torch.allclose(log_w.exp(), torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64), atol=1e-6)


def test_token_mean_weights_average_the_log_ratios():
    # A: ln2 / 2 tokens -> sqrt 2;  B: 0 / 1 -> 1;  C: -ln2 / 2 tokens -> 1/sqrt 2
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK, weight="token_mean")
    assert torch.allclose(
        log_w.exp(), torch.tensor([math.sqrt(2), 1.0, 1 / math.sqrt(2)], dtype=torch.float64), atol=1e-6
    )
    with pytest.raises(ValueError, match="sequence"):
        log_importance_weights(CANDIDATE, BEHAVIOUR, MASK, weight="bogus")


def test_clipped_is_clips_then_averages_with_a_normal_interval():
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK)
    # c = 1.5: min(w, c) = [1.5, 1, 0.5]; terms min(w,c)·r = [1.5, -1, 0.5]; mean = 1/3.
    # deviations [7/6, -4/3, 1/6]: squares 49/36 + 64/36 + 1/36 = 19/6; sample variance 19/12.
    est = clipped_is(log_w, REWARDS, clip=1.5)
    assert est.value == pytest.approx(1 / 3)
    half = Z95 * math.sqrt(19 / 12) / math.sqrt(3)
    assert (est.ci_low, est.ci_high) == pytest.approx((1 / 3 - half, 1 / 3 + half))
    assert est.n == 3 and est.estimator == "clipped_is"
    # A cap above every weight is plain IS: terms [2, -1, 0.5], mean 1.5 / 3 = 0.5.
    assert clipped_is(log_w, REWARDS, clip=10.0).value == pytest.approx(0.5)


def test_self_normalised_is_and_its_delta_method_interval():
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK)
    # Σw = 3.5, Σwr = 2 - 1 + 0.5 = 1.5  ->  V = 3/7.
    # r - V = [4/7, -10/7, 4/7]; Σ w²(r-V)² = 4·16/49 + 1·100/49 + 0.25·16/49 = 168/49 = 24/7;
    # sd = sqrt(24/7) / 3.5.
    est = self_normalized_is(log_w, REWARDS)
    assert est.value == pytest.approx(3 / 7)
    half = Z95 * math.sqrt(24 / 7) / 3.5
    assert (est.ci_low, est.ci_high) == pytest.approx((3 / 7 - half, 3 / 7 + half))
    assert est.estimator == "snis"
    assert estimate(log_w, REWARDS, "snis", clip=1.0).value == pytest.approx(3 / 7)  # the clip is not used by SNIS


def test_effective_sample_size():
    # (Σw)² / Σw² = 3.5² / (4 + 1 + 0.25) = 12.25 / 5.25 = 7/3
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK)
    assert effective_sample_size(log_w) == pytest.approx(7 / 3)
    assert effective_sample_size(torch.zeros(5)) == pytest.approx(5.0)  # equal weights: every turn counts


def test_huge_log_weights_do_not_overflow():
    # log w = [1000, 1000 + ln2]: w ∝ [1, 2]. SNIS with r = [0, 1]: 2/3; ESS = 9/5;
    # clipped at 10: terms [0, 10] -> 5.
    log_w = torch.tensor([1000.0, 1000.0 + LN2], dtype=torch.float64)
    r = torch.tensor([0.0, 1.0])
    assert self_normalized_is(log_w, r).value == pytest.approx(2 / 3)
    assert effective_sample_size(log_w) == pytest.approx(9 / 5)
    assert clipped_is(log_w, r, clip=10.0).value == pytest.approx(5.0)


def test_self_normalised_is_is_invariant_to_a_reward_shift_and_clipped_is_is_not():
    log_w = log_importance_weights(CANDIDATE, BEHAVIOUR, MASK)
    assert self_normalized_is(log_w, REWARDS + 1).value == pytest.approx(3 / 7 + 1)
    assert clipped_is(log_w, REWARDS + 1, clip=10.0).value == pytest.approx(0.5 + 3.5 / 3)  # + mean w = 3.5/3, not + 1


def test_on_policy_is_the_mean_with_a_normal_interval():
    # r = [1, 0, 1, 0]: mean 0.5, sample variance 1/3.
    est = on_policy(torch.tensor([1.0, 0.0, 1.0, 0.0]))
    half = Z95 * math.sqrt(1 / 3) / 2
    assert (est.value, est.ci_low, est.ci_high, est.ess) == pytest.approx((0.5, 0.5 - half, 0.5 + half, 4.0))


def test_unknown_estimator_and_empty_window_are_refused():
    with pytest.raises(ValueError, match="estimator"):
        estimate(torch.zeros(2), torch.zeros(2), "dr", clip=1.0)
    with pytest.raises(ValueError, match="at least one"):
        self_normalized_is(torch.zeros(0), torch.zeros(0))


def test_k3_drift_bound():
    # Per-token log ratio ln2: k3 = (2 - 1) - ln2;  -ln2: (1/2 - 1) + ln2;  0: 0.
    # Masked tokens: A [ln2, 0], B [0], C [-ln2, 0].
    # Sum = 1 - ln2 - 1/2 + ln2 = 1/2 over 5 tokens = 0.1.
    assert k3_kl(CANDIDATE, BEHAVIOUR, MASK) == pytest.approx(0.1)
    assert k3_kl(BEHAVIOUR, BEHAVIOUR, MASK) == 0.0
