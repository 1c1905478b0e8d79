"""Losses (`claw.losses`) against values worked out by hand.

Every expected literal carries its arithmetic in a comment; nothing here recomputes the formula.
"""

from __future__ import annotations

import math

import pytest
import torch

from claw.losses import (
    AGGREGATIONS,
    KL_ESTIMATORS,
    LOSSES,
    aggregate,
    explained_variance,
    ppo_clip_loss,
    tis_weights,
    topk_reverse_kl,
    value_loss,
)

D = torch.float64


def _t(x):
    return torch.tensor(x, dtype=D)


def _approx(x: torch.Tensor, expected: float, abs: float = 1e-6):
    assert x.item() == pytest.approx(expected, abs=abs)


# --------------------------------------------------------------------------------------------- PPO


def _ppo_case():
    # ratios ρ and advantages:
    #   tok0: ρ = 1.5,  A = +1 -> max(-1.5, -clip(1.5)=-1.28)  = -1.28  (clipped above at 1 + 0.28)
    #   tok1: ρ = 0.5,  A = -1 -> max(+0.5, +clip(0.5)=+0.8)   = +0.8   (clipped below at 1 - 0.2)
    #   tok2: ρ = 1.1,  A = +2 -> max(-2.2, -2.2)              = -2.2   (inside the range)
    #   tok3: ρ = 1.25, A = +1 -> max(-1.25, -1.25)            = -1.25  (inside: only the asymmetric 0.28 keeps it)
    ratios = [1.5, 0.5, 1.1, 1.25]
    logprobs = torch.log(_t([ratios])).requires_grad_(True)
    old = torch.zeros(1, 4, dtype=D)
    adv = _t([[1.0, -1.0, 2.0, 1.0]])
    return logprobs, old, adv, torch.ones(1, 4, dtype=D)


def test_ppo_registry():
    assert LOSSES.get("ppo_clip") is ppo_clip_loss


def test_ppo_asymmetric_clip_hand_computed():
    logprobs, old, adv, mask = _ppo_case()
    loss, m = ppo_clip_loss(logprobs, old, adv, mask, clip_low=0.2, clip_high=0.28)
    _approx(loss, -0.9825)  # (-1.28 + 0.8 - 2.2 - 1.25) / 4 = -3.93 / 4
    _approx(m["clip_frac"], 0.5)  # tok0 and tok1 clipped: 2 / 4
    _approx(m["ratio_mean"], 1.0875)  # (1.5 + 0.5 + 1.1 + 1.25) / 4 = 4.35 / 4
    _approx(m["dual_clip_frac"], 0.0)
    # approx_kl = mean ½ (log ρ)²: ½ (0.16440195 + 0.48045301 + 0.00908403 + 0.04979304) / 4
    #   (ln1.5)² = 0.405465² = 0.16440195; (ln0.5)² = 0.693147² = 0.48045301; (ln1.1)² = 0.0953102² = 0.00908403;
    #   (ln1.25)² = 0.223144² = 0.04979304; sum 0.70373203 -> ½·sum/4 = 0.08796650
    _approx(m["approx_kl"], 0.0879665)
    # gradient: clipped tokens carry none; unclipped tok2: d(-A ρ)/d logp / 4 = -2·1.1/4 = -0.55;
    #   tok3: -1·1.25/4 = -0.3125
    loss.backward()
    assert torch.allclose(logprobs.grad, _t([[0.0, 0.0, -0.55, -0.3125]]), atol=1e-9)


def test_ppo_symmetric_clip_would_clip_tok3():
    # with clip_high = 0.2: tok3 becomes max(-1.25, -1.2) = -1.2
    #   -> loss (-1.2 + 0.8 - 2.2 - 1.2)/4 = -3.8/4 = -0.95, 3 of 4 clipped
    logprobs, old, adv, mask = _ppo_case()
    loss, m = ppo_clip_loss(logprobs, old, adv, mask, clip_low=0.2, clip_high=0.2)
    _approx(loss, -0.95)
    _approx(m["clip_frac"], 0.75)


def test_ppo_clip_is_pessimistic_only():
    # ρ = 0.5 with A = +1: max(-0.5, -0.8) = -0.5 (the clip does not bind); ρ = 1.5 with A = -1: max(1.5, 1.28) = 1.5
    logprobs = torch.log(_t([[0.5, 1.5]]))
    loss, m = ppo_clip_loss(logprobs, torch.zeros(1, 2, dtype=D), _t([[1.0, -1.0]]), torch.ones(1, 2, dtype=D))
    _approx(loss, 0.5)  # (-0.5 + 1.5) / 2
    _approx(m["clip_frac"], 0.0)


def test_ppo_dual_clip():
    # c = 3:
    #   tok0: A = -1, ρ = e^3 = 20.0855: max(20.0855, 1.28) = 20.0855 > -c·A = 3 -> 3 (dual clip hit)
    #   tok1: A = -1, ρ = 2:             max(2, 1.28) = 2 < 3                  -> 2
    #   tok2: A = +1, ρ = e^3:           max(-20.0855, -1.28) = -1.28 (A > 0: no dual clip)
    logprobs = _t([[3.0, math.log(2.0), 3.0]]).requires_grad_(True)
    old = torch.zeros(1, 3, dtype=D)
    adv = _t([[-1.0, -1.0, 1.0]])
    loss, m = ppo_clip_loss(logprobs, old, adv, torch.ones(1, 3, dtype=D), dual_clip=3.0)
    _approx(loss, 1.24)  # (3 + 2 - 1.28) / 3 = 3.72 / 3
    _approx(m["dual_clip_frac"], 1.0 / 3.0)  # one of three tokens
    loss.backward()
    # tok0 is bounded by a constant -> no gradient; tok1: d(-A ρ)/dlogp / 3 = 2/3; tok2: clipped -> 0
    assert torch.allclose(logprobs.grad, _t([[0.0, 2.0 / 3.0, 0.0]]), atol=1e-9)
    # without the dual clip tok0 costs 20.0855: (20.085537 + 2 - 1.28) / 3 = 20.805537 / 3 = 6.935179
    loss_nodual, _ = ppo_clip_loss(logprobs.detach(), old, adv, torch.ones(1, 3, dtype=D))
    _approx(loss_nodual, 6.935179)


@pytest.mark.parametrize("c", [1.0, 0.5])
def test_ppo_dual_clip_must_exceed_one(c):
    with pytest.raises(ValueError):
        ppo_clip_loss(torch.zeros(1, 1), torch.zeros(1, 1), -torch.ones(1, 1), torch.ones(1, 1), dual_clip=c)


def test_ppo_is_weights_multiply_per_token():
    # per-token losses [-1.28, 0.8, -2.2, -1.25] times w = [0.5, 2, 1, 0] = [-0.64, 1.6, -2.2, 0]
    #   -> sum -1.24, /4 = -0.31
    logprobs, old, adv, mask = _ppo_case()
    loss, _ = ppo_clip_loss(logprobs, old, adv, mask, is_weights=_t([[0.5, 2.0, 1.0, 0.0]]))
    _approx(loss, -0.31)


def test_ppo_ratio_one():
    # ρ = 1 everywhere: nothing clipped, loss = -mean(A) = -(1 - 2 + 4)/3 = -1
    lp = _t([[-0.3, -1.2, -2.0]])
    loss, m = ppo_clip_loss(lp, lp.clone(), _t([[1.0, -2.0, 4.0]]), torch.ones(1, 3, dtype=D))
    _approx(loss, -1.0)
    _approx(m["clip_frac"], 0.0)
    _approx(m["approx_kl"], 0.0)
    _approx(m["ratio_mean"], 1.0)


def test_ppo_masked_tokens_do_not_change_loss_or_gradient():
    old = _t([[-1.0, -1.0, -1.0], [-2.0, -0.5, -0.5]])
    adv = _t([[1.0, -0.5, 2.0], [-1.0, 0.7, 0.3]])
    mask = _t([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    results = []
    for masked_val in (-1.0, -6.0):  # the masked positions' log-probs: near old, then far off (ratio e^{±5})
        lp = _t([[-0.9, -1.1, masked_val], [-2.1, masked_val, masked_val + 3.0]]).requires_grad_(True)
        loss, m = ppo_clip_loss(lp, old, adv, mask, dual_clip=3.0)
        loss.backward()
        results.append((loss.detach(), lp.grad.clone(), m))
    (l1, g1, m1), (l2, g2, m2) = results
    assert torch.equal(l1, l2)
    assert torch.equal(g1, g2)
    assert (g1[mask == 0] == 0).all()
    for k in m1:
        assert torch.equal(m1[k], m2[k]), k


# --------------------------------------------------------------------------------------------- aggregation


def test_aggregation_modes():
    # row 0: 4 trainable tokens [1, 2, 3, 4] (sum 10); row 1: 2 trainable [5, 6] (sum 11), then masked garbage 100
    loss = _t([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 100.0, 100.0]])
    mask = _t([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    _approx(aggregate(loss, mask, "token-mean"), 3.5)  # 21 / 6
    _approx(aggregate(loss, mask, "seq-mean-token-mean"), 4.0)  # mean(10/4 = 2.5, 11/2 = 5.5)
    _approx(aggregate(loss, mask, "seq-mean-token-sum-norm", norm=4.0), 2.625)  # mean(10, 11) / N = 10.5 / 4
    _approx(aggregate(loss, mask, "seq-mean-token-sum-norm", norm=2.0), 5.25)  # 10.5 / 2
    with pytest.raises(ValueError, match="constant"):  # never the batch's padded width
        aggregate(loss, mask, "seq-mean-token-sum-norm")
    assert set(AGGREGATIONS) == {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"}
    with pytest.raises(KeyError):
        aggregate(loss, mask, "sum")


def test_ppo_passes_loss_agg():
    # ρ = 1 -> per-token loss = -A; with A = -[[1,2,3,4],[5,6,·,·]] the modes give the values above
    adv = -_t([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 100.0, 100.0]])
    mask = _t([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    lp = torch.zeros(2, 4, dtype=D)
    for mode, expected in (("token-mean", 3.5), ("seq-mean-token-mean", 4.0), ("seq-mean-token-sum-norm", 2.625)):
        loss, _ = ppo_clip_loss(lp, lp, adv, mask, loss_agg=mode, loss_agg_norm=4.0)
        _approx(loss, expected)


# --------------------------------------------------------------------------------------------- value loss


def test_value_loss_clipping():
    # clip ε = 0.2, V_old = 0 on all three tokens:
    #   tok0: V = 1.0, R = 1.0: unclipped (1-1)² = 0; clipped V -> 0.2: (0.2-1)² = 0.64
    #                                                                            -> 0.64 (clipped term dominates)
    #   tok1: V = 1.0, R = 0.0: unclipped (1-0)² = 1; clipped (0.2-0)² = 0.04    -> 1    (unclipped dominates)
    #   tok2: V = 0.1, R = 0.5: inside the range: (0.1-0.5)² = 0.16 both         -> 0.16
    #   L = ½ (0.64 + 1 + 0.16) / 3 = ½ · 1.8 / 3 = 0.3;  masked tok3 (garbage) does not count
    values = _t([[1.0, 1.0, 0.1, 50.0]]).requires_grad_(True)
    old = _t([[0.0, 0.0, 0.0, 0.0]])
    returns = _t([[1.0, 0.0, 0.5, -50.0]])
    mask = _t([[1.0, 1.0, 1.0, 0.0]])
    loss, m = value_loss(values, old, returns, mask, clip=0.2)
    _approx(loss, 0.3)
    _approx(m["value_clip_frac"], 1.0 / 3.0)  # only tok0
    _approx(m["value_mean"], 0.7)  # (1 + 1 + 0.1) / 3
    loss.backward()
    # dL/dV: tok0 clipped -> 0; tok1: ½·2·(1-0)/3 = 1/3; tok2: ½·2·(0.1-0.5)/3 = -0.4/3 = -0.13333333; tok3 masked -> 0
    assert torch.allclose(values.grad, _t([[0.0, 1.0 / 3.0, -0.4 / 3.0, 0.0]]), atol=1e-9)


def test_value_loss_no_clip_effect_is_half_mse():
    # V = V_old: clipping is inert. L = ½ mean((V-R)²) = ½ (0.25 + 4) / 2 = 1.0625
    v = _t([[0.5, -1.0]])
    loss, m = value_loss(v, v.clone(), _t([[1.0, 1.0]]), torch.ones(1, 2, dtype=D))
    _approx(loss, 1.0625)
    _approx(m["value_clip_frac"], 0.0)


def test_explained_variance():
    R = _t([[1.0, 2.0, 3.0, 4.0]])
    mask = torch.ones(1, 4, dtype=D)
    _approx(explained_variance(R.clone(), R, mask), 1.0)  # perfect critic: Var(R - V) = 0
    _approx(explained_variance(torch.zeros(1, 4, dtype=D), R, mask), 0.0)  # V = 0: Var(R - V) = Var(R)
    # V = [1, 2, 3, 2]: R - V = [0, 0, 0, 2], mean 0.5, var (3·0.25 + 2.25)/4 = 0.75
    # Var(R): mean 2.5, (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25  ->  EV = 1 - 0.75/1.25 = 0.4
    _approx(explained_variance(_t([[1.0, 2.0, 3.0, 2.0]]), R, mask), 0.4)


# --------------------------------------------------------------------------------------------- KL estimators


def test_kl_estimators_hand_computed():
    # column 0: logπ = -1, logπ_ref = -2 -> log r = -1:  k1 = 1,  k2 = ½·1 = 0.5,  k3 = e^{-1} - 1 + 1 = 0.36787944
    # column 1: logπ = -2, logπ_ref = -1 -> log r = +1:  k1 = -1, k2 = 0.5,        k3 = e - 1 - 1 = 0.71828183
    # column 2: equal -> all 0
    lp = _t([[-1.0, -2.0, -0.7]])
    ref = _t([[-2.0, -1.0, -0.7]])
    assert torch.allclose(KL_ESTIMATORS.get("k1")(lp, ref), _t([[1.0, -1.0, 0.0]]), atol=1e-8)
    assert torch.allclose(KL_ESTIMATORS.get("k2")(lp, ref), _t([[0.5, 0.5, 0.0]]), atol=1e-8)
    assert torch.allclose(KL_ESTIMATORS.get("k3")(lp, ref), _t([[0.36787944, 0.71828183, 0.0]]), atol=1e-8)
    assert set(KL_ESTIMATORS.names()) == {"k1", "k2", "k3"}


# --------------------------------------------------------------------------------------------- TIS


def _tis_token_case():
    # old - rollout = [0, ln 1.5, ln 3, -ln 2, (masked) 5]
    old = torch.log(_t([[1.0, 1.5, 3.0, 0.5, math.exp(5.0)]]))
    rollout = torch.zeros(1, 5, dtype=D)
    mask = _t([[1.0, 1.0, 1.0, 1.0, 0.0]])
    return old, rollout, mask


def test_tis_token_truncate():
    old, rollout, mask = _tis_token_case()
    w, m = tis_weights(old, rollout, mask, cap=2.0, level="token", mode="truncate")
    # w = min(exp(old - rollout), 2) = [1, 1.5, min(3, 2) = 2, 0.5], masked -> 0
    assert torch.allclose(w, _t([[1.0, 1.5, 2.0, 0.5, 0.0]]), atol=1e-9)
    _approx(m["is_weight_mean"], 1.25)  # (1 + 1.5 + 2 + 0.5) / 4 = 5 / 4
    _approx(m["is_truncated_frac"], 0.25)  # only the ratio 3 exceeds the cap: 1 / 4
    assert not w.requires_grad


def test_tis_token_mask_mode():
    old, rollout, mask = _tis_token_case()
    w, m = tis_weights(old, rollout, mask, cap=2.0, level="token", mode="mask")
    # w = exp(old - rollout) · 1[w ≤ 2] = [1, 1.5, 0 (3 > 2), 0.5], masked -> 0
    assert torch.allclose(w, _t([[1.0, 1.5, 0.0, 0.5, 0.0]]), atol=1e-9)
    _approx(m["is_weight_mean"], 0.75)  # (1 + 1.5 + 0 + 0.5) / 4 = 3 / 4
    _approx(m["is_truncated_frac"], 0.25)


def test_tis_sequence_level():
    # sample 0: ratios [2, 1.5, (masked) e^7] -> product over trainable tokens 2·1.5 = 3
    # sample 1: ratios [2, 0.25, 1]           -> product 2·0.25·1 = 0.5
    old = torch.log(_t([[2.0, 1.5, math.exp(7.0)], [2.0, 0.25, 1.0]]))
    rollout = torch.zeros(2, 3, dtype=D)
    mask = _t([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    w, m = tis_weights(old, rollout, mask, cap=4.0, level="sequence")
    assert torch.allclose(w, _t([[3.0, 3.0, 0.0], [0.5, 0.5, 0.5]]), atol=1e-9)  # 3 ≤ 4: kept
    w, m = tis_weights(old, rollout, mask, cap=2.0, level="sequence", mode="truncate")
    assert torch.allclose(w, _t([[2.0, 2.0, 0.0], [0.5, 0.5, 0.5]]), atol=1e-9)  # min(3, 2) = 2
    _approx(m["is_weight_mean"], 1.1)  # (2 + 2 + 0.5·3) / 5 = 5.5 / 5
    _approx(m["is_truncated_frac"], 0.4)  # sample 0's two trainable tokens: 2 / 5
    w, m = tis_weights(old, rollout, mask, cap=2.0, level="sequence", mode="mask")
    assert torch.allclose(w, _t([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]), atol=1e-9)  # 3 > 2: sample 0 dropped
    _approx(m["is_weight_mean"], 0.3)  # 0.5·3 / 5 = 1.5 / 5


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("mode", ["truncate", "mask"])
def test_tis_weight_exactly_one_when_old_equals_rollout(level, mode):
    lp = _t([[-0.3, -1.7, -4.0], [-0.01, -2.5, -0.2]])
    mask = _t([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    w, m = tis_weights(lp, lp.clone(), mask, cap=1.5, level=level, mode=mode)
    assert torch.equal(w, mask)  # exp(0) = 1 exactly on trainable tokens, 0 on masked
    assert m["is_weight_mean"].item() == 1.0
    assert m["is_truncated_frac"].item() == 0.0


def test_tis_invalid_level_or_mode():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError):
        tis_weights(x, x, torch.ones(1, 2), level="batch")
    with pytest.raises(ValueError):
        tis_weights(x, x, torch.ones(1, 2), mode="clip")


# --------------------------------------------------------------------------------------------- top-K reverse KL


def test_topk_reverse_kl_zero_when_equal():
    s = torch.log(_t([[[0.6, 0.1], [0.3, 0.3]]])).requires_grad_(True)
    loss, m = topk_reverse_kl(s, s.detach().clone(), torch.ones(1, 2, dtype=D))
    _approx(loss, 0.0, abs=1e-12)
    _approx(m["topk_kl"], 0.0, abs=1e-12)


def test_topk_reverse_kl_hand_computed_with_tail():
    # position 0: student [0.5, 0.25] -> tail 0.25; teacher [0.25, 0.25] -> tail 0.5
    #   KL = 0.5·ln(0.5/0.25) + 0.25·ln(0.25/0.25) + 0.25·ln(0.25/0.5)
    #      = 0.5·0.69314718 + 0 - 0.25·0.69314718 = 0.25·0.69314718 = 0.17328680
    # position 1 is masked (garbage student / teacher) and must not count
    student = torch.log(_t([[[0.5, 0.25], [0.9, 0.05]]])).requires_grad_(True)
    teacher = torch.log(_t([[[0.25, 0.25], [0.01, 0.01]]]))
    mask = _t([[1.0, 0.0]])
    loss, m = topk_reverse_kl(student, teacher, mask)
    _approx(loss, 0.1732868)
    _approx(m["topk_kl"], 0.1732868)
    assert not m["topk_kl"].requires_grad
    loss.backward()
    assert (student.grad[0, 1] == 0).all()
    assert student.grad[0, 0].abs().sum() > 0
    # two identical unmasked positions: token-mean keeps 0.1732868;
    # seq-mean-token-sum-norm with N = 2: (2·0.1732868)/2 as well
    both = torch.log(_t([[[0.5, 0.25], [0.5, 0.25]]]))
    both_t = torch.log(_t([[[0.25, 0.25], [0.25, 0.25]]]))
    loss2, _ = topk_reverse_kl(
        both, both_t, torch.ones(1, 2, dtype=D), loss_agg="seq-mean-token-sum-norm", loss_agg_norm=2.0
    )
    _approx(loss2, 0.1732868)
