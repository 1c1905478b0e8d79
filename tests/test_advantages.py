"""Advantage estimators (`claw.advantages`) against values worked out by hand.

Every expected literal carries its arithmetic in a comment; nothing here recomputes the formula.
"""

from __future__ import annotations

import math

import pytest
import torch

from claw.advantages import ADVANTAGES, AdvantageInputs, RunningBaseline
from claw.advantages.opd import end_of_turn_tokens, teacher_agreement

ATOL = 1e-5


def _t(x, dtype=torch.float32):
    return torch.tensor(x, dtype=dtype)


def _run(name: str, inputs: AdvantageInputs, **kwargs):
    return ADVANTAGES.get(name)(inputs, **kwargs)


def _close(actual, expected, atol=ATOL):
    expected = _t(expected) if not isinstance(expected, torch.Tensor) else expected
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert torch.allclose(actual.float(), expected.float(), atol=atol), f"\n{actual}\n!=\n{expected}"


# Two groups plus a lone sample, shared by the GRPO-family tests.
#   group 0: r = [1, 0, 0, -1]   group 1: r = [3, 1, 2]   group 2: r = [5] (a group of one)
GROUP_REWARDS = [1.0, 0.0, 0.0, -1.0, 3.0, 1.0, 2.0, 5.0]
GROUP_INDEX = [0, 0, 0, 0, 1, 1, 1, 2]


def _group_inputs(T: int = 2) -> AdvantageInputs:
    return AdvantageInputs(
        response_mask=torch.ones(len(GROUP_REWARDS), T),
        rewards=_t(GROUP_REWARDS),
        group_index=torch.tensor(GROUP_INDEX),
    )


# --------------------------------------------------------------------------------------------- GRPO family


def test_registry_names():
    assert set(ADVANTAGES.names()) >= {"grpo", "dr_grpo", "rloo", "baseline", "opd", "combine", "gae"}
    with pytest.raises(KeyError):
        ADVANTAGES.get("no_such_estimator")


def test_grpo_hand_computed_eps0():
    # group 0: mean (1+0+0-1)/4 = 0; squared deviations 1+0+0+1 = 2; unbiased var 2/3; std sqrt(2/3) = 0.81649658
    #          A = r/0.81649658 = [1.22474487, 0, 0, -1.22474487]
    # group 1: mean (3+1+2)/3 = 2; squared deviations 1+1+0 = 2; unbiased var 2/2 = 1; std 1 -> A = [1, -1, 0]
    # group 2: one sample -> A = 0 (documented: no spread)
    res = _run("grpo", _group_inputs(), eps=0.0)
    col = [1.22474487, 0.0, 0.0, -1.22474487, 1.0, -1.0, 0.0, 0.0]
    _close(res.advantages, [[a, a] for a in col])
    assert res.returns is None


def test_grpo_group_of_one_is_zero_with_default_eps():
    # lone sample: r - mean = 5 - 5 = 0; 0 / (0 + 1e-6) = 0
    inputs = AdvantageInputs(response_mask=torch.ones(1, 3), rewards=_t([5.0]), group_index=torch.tensor([0]))
    assert torch.equal(_run("grpo", inputs).advantages, torch.zeros(1, 3))


def test_grpo_constant_group_is_zero():
    # r = [1, 1, 1]: r - mean = 0 everywhere -> A = 0
    inputs = AdvantageInputs(
        response_mask=torch.ones(3, 1), rewards=_t([1.0, 1.0, 1.0]), group_index=torch.tensor([0, 0, 0])
    )
    assert torch.equal(_run("grpo", inputs).advantages, torch.zeros(3, 1))


def test_dr_grpo_hand_computed():
    # A = r - mean_g r:  group 0 (mean 0): [1, 0, 0, -1];  group 1 (mean 2): [3-2, 1-2, 2-2] = [1, -1, 0];
    #                    group 2: 5-5 = 0
    res = _run("dr_grpo", _group_inputs())
    col = [1.0, 0.0, 0.0, -1.0, 1.0, -1.0, 0.0, 0.0]
    _close(res.advantages, [[a, a] for a in col])


def test_rloo_hand_computed():
    # group 0: r=1: others [0,0,-1] mean -1/3 -> 1+1/3 = 1.33333333;  r=0: others [1,0,-1] mean 0 -> 0 (twice)
    #          r=-1: others [1,0,0] mean 1/3 -> -1-1/3 = -1.33333333
    # group 1: r=3: others [1,2] mean 1.5 -> 1.5;  r=1: others [3,2] mean 2.5 -> -1.5;  r=2: others [3,1] mean 2 -> 0
    # group 2: a group of one has no leave-one-out mean -> 0
    res = _run("rloo", _group_inputs())
    col = [1.33333333, 0.0, 0.0, -1.33333333, 1.5, -1.5, 0.0, 0.0]
    _close(res.advantages, [[a, a] for a in col])


def test_grpo_zero_mean_per_group():
    torch.manual_seed(0)
    rewards = torch.randn(12)
    groups = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 3])
    inputs = AdvantageInputs(response_mask=torch.ones(12, 4), rewards=rewards, group_index=groups)
    for name in ("grpo", "dr_grpo", "rloo"):
        adv = _run(name, inputs).advantages[:, 0]
        for g in range(4):
            assert adv[groups == g].sum().abs() < 1e-5, (name, g)


def test_reward_mask_zeroes_grpo_family_and_leaves_group_statistics():
    # sample 0 has no reward signal: its advantage is 0, and it is not a 0 in the group's statistics.
    # The rewarded samples 1, 2 have r = [0, 1]: mean 0.5, unbiased std 0.7071, leave-one-out means [1, 0].
    inputs = AdvantageInputs(
        response_mask=torch.ones(3, 2),
        rewards=_t([1.0, 0.0, 1.0]),
        group_index=torch.tensor([0, 0, 0]),
        reward_mask=_t([0.0, 1.0, 1.0]),
    )
    _close(_run("dr_grpo", inputs).advantages, [[0.0, 0.0], [-0.5, -0.5], [0.5, 0.5]])  # r − 0.5 (not r − 2/3)
    s = 0.5 / (0.5**0.5 + 1e-6)
    _close(_run("grpo", inputs).advantages, [[0.0, 0.0], [-s, -s], [s, s]])
    _close(_run("rloo", inputs).advantages, [[0.0, 0.0], [-1.0, -1.0], [1.0, 1.0]])  # r − the other rewarded one


def test_greedy_sample_takes_no_part_in_group_statistics():
    # sample 2 is greedy (all-zero response mask) but was judged (+1): it must not move the group's mean
    inputs = AdvantageInputs(
        response_mask=_t([[1.0], [1.0], [0.0]]), rewards=_t([1.0, 0.0, 1.0]), group_index=torch.tensor([0, 0, 0])
    )
    _close(_run("dr_grpo", inputs).advantages, [[0.5], [-0.5], [0.0]])


# --------------------------------------------------------------------------------------------- baseline


def test_baseline_hand_computed_and_reward_mask():
    # A = (r - b) * present:  1 - 0.25 = 0.75;  -1 - 0.25 = -1.25;  sample 2 has no reward -> 0
    inputs = AdvantageInputs(
        response_mask=_t([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]),
        rewards=_t([1.0, -1.0, 1.0]),
        group_index=torch.tensor([0, 1, 2]),
        reward_mask=_t([1.0, 1.0, 0.0]),
        baseline=_t([0.25, 0.25, -0.5]),
    )
    # sample 1 token 1 is masked -> 0
    _close(_run("baseline", inputs).advantages, [[0.75, 0.75], [-1.25, 0.0], [0.0, 0.0]])


def test_baseline_requires_baseline():
    inputs = AdvantageInputs(response_mask=torch.ones(1, 1), rewards=_t([1.0]), group_index=torch.tensor([0]))
    with pytest.raises(ValueError):
        _run("baseline", inputs)


def test_running_baseline_ema_per_source_and_state_dict():
    rb = RunningBaseline(momentum=0.9, initial=0.0, warm_start=False)
    assert rb.lookup(["a", "b"]) == [0.0, 0.0]  # nothing seen yet -> initial
    rb.update(["a", "b", "a"], _t([1.0, -1.0, 0.0]), _t([1.0, 1.0, 1.0]))
    # a: batch mean (1 + 0)/2 = 0.5 -> 0.9*0 + 0.1*0.5 = 0.05
    # b: batch mean -1            -> 0.9*0 + 0.1*(-1) = -0.1
    # c: never seen               -> initial 0
    got = rb.lookup(["a", "b", "c"])
    assert got == pytest.approx([0.05, -0.1, 0.0])
    # second batch: a gets r=1; b's sample has no reward (present 0) -> b unchanged
    rb.update(["a", "b"], _t([1.0, 5.0]), _t([1.0, 0.0]))
    # a: 0.9*0.05 + 0.1*1 = 0.045 + 0.1 = 0.145;  b stays -0.1
    assert rb.lookup(["a", "b"]) == pytest.approx([0.145, -0.1])

    restored = RunningBaseline(momentum=0.9, warm_start=False)
    restored.load_state_dict(rb.state_dict())
    assert restored.lookup(["a", "b", "c"]) == pytest.approx([0.145, -0.1, 0.0])
    # the state dict is a copy: mutating the restored object leaves the original alone
    restored.update(["a"], _t([0.0]), _t([1.0]))
    assert rb.lookup(["a"]) == pytest.approx([0.145])


def test_running_baseline_warm_start_is_unbiased_from_the_first_batch():
    """A strict user: every reward −1. The plain EMA from 0 gives every sample a negative advantage for
    many batches (−0.9, −0.81, …); the warm start gives 0 from the first batch on."""
    plain, warm = RunningBaseline(0.9, warm_start=False), RunningBaseline(0.9)
    rewards, present, src = _t([-1.0, -1.0, -1.0, 1.0]), _t([1.0, 1.0, 1.0, 1.0]), ["a"] * 4
    # first batch, no history: leave-one-out mean of the others
    # (the +1 sample sees -1; a -1 sample sees (-1 - 1 + 1)/3)
    assert warm.lookup(src, rewards, present) == pytest.approx([-1 / 3, -1 / 3, -1 / 3, -1.0])
    assert plain.lookup(src, rewards, present) == [0.0] * 4
    all_bad = _t([-1.0] * 4)
    for _ in range(3):
        warm.update(src, all_bad, present)
        plain.update(src, all_bad, present)
    assert warm.lookup(["a"]) == pytest.approx([-1.0])  # bias-corrected: exactly the mean so far
    assert plain.lookup(["a"]) == pytest.approx([-0.271])  # 0.1·(−1)·(1 + 0.9 + 0.81)
    restored = RunningBaseline(0.9)
    restored.load_state_dict(warm.state_dict())
    assert restored.lookup(["a"]) == pytest.approx([-1.0])
    assert (
        RunningBaseline(1.0).lookup(["a"], rewards, present) == [0.0] * 1
    )  # momentum 1: `baseline=none`, no warm start


def test_running_baseline_initial_and_momentum_one():
    rb = RunningBaseline(momentum=1.0, initial=0.0)
    rb.update(["a"], _t([1.0]), _t([1.0]))
    assert rb.lookup(["a"]) == [0.0]  # 1.0*0 + 0*1 = 0: `baseline=none`
    rb2 = RunningBaseline(momentum=0.5, initial=0.2, warm_start=False)
    rb2.update(["a"], _t([1.0]), _t([1.0]))
    assert rb2.lookup(["a", "z"]) == pytest.approx([0.6, 0.2])  # 0.5*0.2 + 0.5*1 = 0.6; unseen -> 0.2
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError):
            RunningBaseline(momentum=bad)


# --------------------------------------------------------------------------------------------- OPD / combine


def _opd_inputs(**kw) -> AdvantageInputs:
    base = dict(
        response_mask=_t([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]),
        rewards=_t([1.0, 0.0]),
        group_index=torch.tensor([0, 0]),
        old_logprobs=_t([[-1.5, -1.0, -0.5], [-2.0, -2.0, -2.0]]),
        teacher_logprobs=_t([[-1.0, -2.0, 0.0], [-1.0, -1.0, -1.0]]),
        teacher_mask=_t([1.0, 0.0]),
    )
    base.update(kw)
    return AdvantageInputs(**base)


def test_opd_hand_computed():
    # sample 0 (hint accepted): teacher - old = [-1+1.5, -2+1, 0+0.5] = [0.5, -1, 0.5],
    #   last token masked -> [0.5, -1, 0]
    # sample 1 (no accepted hint, teacher_mask 0): the gap would be +1 per token, but it is zeroed -> [0, 0, 0]
    _close(_run("opd", _opd_inputs()).advantages, [[0.5, -1.0, 0.0], [0.0, 0.0, 0.0]])


def test_opd_without_teacher_is_zero():
    inputs = _opd_inputs(teacher_logprobs=None, teacher_mask=None)
    assert torch.equal(_run("opd", inputs).advantages, torch.zeros(2, 3))


def test_opd_without_teacher_mask_uses_all_samples():
    # no teacher_mask: sample 1 keeps its gap -1 - (-2) = 1 per token
    _close(_run("opd", _opd_inputs(teacher_mask=None)).advantages, [[0.5, -1.0, 0.0], [1.0, 1.0, 1.0]])


def test_combine_with_grpo():
    # A_rl (grpo, eps=0): r = [1, 0], mean 0.5, unbiased std sqrt((0.25+0.25)/1) = 0.70710678
    #   -> [+0.70710678, -0.70710678]
    # A_opd: [[0.5, -1, 0], [0, 0, 0]] (see test_opd_hand_computed)
    # A = 0.5*A_rl + 2*A_opd:
    #   sample 0: [0.35355339 + 1.0, 0.35355339 - 2.0, 0 (masked)] = [1.35355339, -1.64644661, 0]
    #   sample 1: [-0.35355339] * 3
    res = _run("combine", _opd_inputs(), w_rl=0.5, w_opd=2.0, rl_estimator="grpo", rl_kwargs={"eps": 0.0})
    _close(res.advantages, [[1.35355339, -1.64644661, 0.0], [-0.35355339, -0.35355339, -0.35355339]])
    # metrics over the 5 trainable tokens: rl (0.35355339*2 - 0.35355339*3)/5 = -0.07071068; opd 2*(0.5 - 1)/5 = -0.2
    assert res.metrics["adv_rl_mean"].item() == pytest.approx(-0.07071068, abs=1e-6)
    assert res.metrics["adv_opd_mean"].item() == pytest.approx(-0.2, abs=1e-6)


def test_combine_with_baseline():
    # A_rl (baseline): r - b = [1 - 0.5, 0 - 0.0] = [0.5, 0]; A_opd as above
    # A = 0.5*A_rl + 2*A_opd: sample 0: [0.25 + 1.0, 0.25 - 2.0, 0] = [1.25, -1.75, 0];  sample 1: [0, 0, 0]
    inputs = _opd_inputs(baseline=_t([0.5, 0.0]))
    res = _run("combine", inputs, w_rl=0.5, w_opd=2.0, rl_estimator="baseline")
    _close(res.advantages, [[1.25, -1.75, 0.0], [0.0, 0.0, 0.0]])
    # default rl_estimator is baseline, default weights 1, 1: sample 0: [0.5 + 0.5, 0.5 - 1, 0] = [1, -0.5, 0]
    _close(_run("combine", inputs).advantages, [[1.0, -0.5, 0.0], [0.0, 0.0, 0.0]])


def test_combine_without_reward_signal_is_pure_opd():
    # reward_mask 0 on sample 0 -> A_rl = 0 there; A = 2 * [0.5, -1, 0] = [1, -2, 0]
    # sample 1: r - b = 0 - (-1) = 1 -> 0.5*1 = 0.5 per token, no accepted hint
    inputs = _opd_inputs(baseline=_t([0.5, -1.0]), reward_mask=_t([0.0, 1.0]))
    res = _run("combine", inputs, w_rl=0.5, w_opd=2.0)
    _close(res.advantages, [[1.0, -2.0, 0.0], [0.5, 0.5, 0.5]])


# --------------------------------------------------------------------------------------------- GAE


def test_gae_three_tokens_terminal():
    # V = [0.5, 0.4, 0.2], R = 1 on the last token, gamma = 0.9, lambda = 0.8 (gamma*lambda = 0.72);
    # V after the end = 0:
    #   t=2: delta = 1 + 0.9*0   - 0.2 = 0.8;    A2 = 0.8
    #   t=1: delta = 0 + 0.9*0.2 - 0.4 = -0.22;  A1 = -0.22 + 0.72*0.8   = -0.22 + 0.576   = 0.356
    #   t=0: delta = 0 + 0.9*0.4 - 0.5 = -0.14;  A0 = -0.14 + 0.72*0.356 = -0.14 + 0.25632 = 0.11632
    #   returns = A + V = [0.61632, 0.756, 1.0]
    inputs = AdvantageInputs(
        response_mask=torch.ones(1, 3), rewards=_t([1.0]), group_index=torch.tensor([0]), values=_t([[0.5, 0.4, 0.2]])
    )
    res = _run("gae", inputs, gamma=0.9, lam=0.8)
    _close(res.advantages, [[0.11632, 0.356, 0.8]])
    _close(res.returns, [[0.61632, 0.756, 1.0]])


def test_gae_whitening_hand_computed_and_returns_unchanged():
    # advantages [0.11632, 0.356, 0.8]: mean 0.42411, population std 0.28341 -> whitened = (A - mean) / std
    inputs = AdvantageInputs(
        response_mask=_t([[1.0, 1.0, 1.0, 0.0]]),
        rewards=_t([1.0]),
        group_index=torch.tensor([0]),
        values=_t([[0.5, 0.4, 0.2, 3.0]]),
    )
    res = _run("gae", inputs, gamma=0.9, lam=0.8, whiten=True)
    a = torch.tensor([0.11632, 0.356, 0.8], dtype=torch.float64)
    expected = ((a - a.mean()) / a.std(unbiased=False)).tolist() + [0.0]
    _close(res.advantages, [expected])
    _close(res.returns, [[0.61632, 0.756, 1.0, 0.0]])  # the critic's targets are not whitened


def test_gae_masked_observation_token_is_skipped():
    # Same sample as the terminal one above with an observation token (V = 9, masked) between tokens 0 and 1
    # and a padding token (V = 7, masked) at the end. The recursion skips both, so the trainable tokens get
    # exactly the 3-token advantages [0.11632, 0.356, 0.8]; the masked ones get 0 (advantage and return).
    inputs = AdvantageInputs(
        response_mask=_t([[1.0, 0.0, 1.0, 1.0, 0.0]]),
        rewards=_t([1.0]),
        group_index=torch.tensor([0]),
        values=_t([[0.5, 9.0, 0.4, 0.2, 7.0]]),
    )
    res = _run("gae", inputs, gamma=0.9, lam=0.8)
    _close(res.advantages, [[0.11632, 0.0, 0.356, 0.8, 0.0]])
    _close(res.returns, [[0.61632, 0.0, 0.756, 1.0, 0.0]])  # A + V on trainable tokens, 0 elsewhere

    # ... and it equals the call on the same sample with the masked tokens removed
    removed = AdvantageInputs(
        response_mask=torch.ones(1, 3), rewards=_t([1.0]), group_index=torch.tensor([0]), values=_t([[0.5, 0.4, 0.2]])
    )
    ref = _run("gae", removed, gamma=0.9, lam=0.8)
    keep = torch.tensor([0, 2, 3])
    assert torch.allclose(res.advantages[:, keep], ref.advantages, atol=1e-6)
    assert torch.allclose(res.returns[:, keep], ref.returns, atol=1e-6)


def test_gae_gamma0_pure_opd_minus_value():
    # gamma = 0, w_rl = 0, w_opd = 1: A_t = (teacher - old)_t - V_t, the scalar reward is ignored.
    # sample 0 (hint accepted): gap = [-1 - (-1.5), -0.5 - (-2)] = [0.5, 1.5]; V = [0.1, 0.3] -> [0.4, 1.2]
    # sample 1 (teacher_mask 0): gap = 0; V = [0.2, 0.6] -> [-0.2, -0.6]
    inputs = AdvantageInputs(
        response_mask=torch.ones(2, 2),
        rewards=_t([1.0, -1.0]),
        group_index=torch.tensor([0, 1]),
        old_logprobs=_t([[-1.5, -2.0], [-1.0, -1.0]]),
        teacher_logprobs=_t([[-1.0, -0.5], [0.0, 0.0]]),
        teacher_mask=_t([1.0, 0.0]),
        values=_t([[0.1, 0.3], [0.2, 0.6]]),
    )
    res = _run("gae", inputs, gamma=0.0, lam=0.95, w_rl=0.0, w_opd=1.0)
    _close(res.advantages, [[0.4, 1.2], [-0.2, -0.6]])
    # returns = A + V = the token reward itself: [0.5, 1.5], [0, 0]
    _close(res.returns, [[0.5, 1.5], [0.0, 0.0]])


def test_gae_reward_mask_drops_scalar_reward():
    # reward_mask 0: no scalar reward; gamma = 1, lambda = 1, terminal, V = [0.5, 0.25]:
    #   t=1: delta = 0 + 0 - 0.25 = -0.25; A1 = -0.25
    #   t=0: delta = 0 + 0.25 - 0.5 = -0.25; A0 = -0.25 + 1*(-0.25) = -0.5
    inputs = AdvantageInputs(
        response_mask=torch.ones(1, 2),
        rewards=_t([1.0]),
        group_index=torch.tensor([0]),
        reward_mask=_t([0.0]),
        values=_t([[0.5, 0.25]]),
    )
    _close(_run("gae", inputs, gamma=1.0, lam=1.0).advantages, [[-0.5, -0.25]])


def test_gae_requires_values():
    inputs = AdvantageInputs(response_mask=torch.ones(1, 2), rewards=_t([1.0]), group_index=torch.tensor([0]))
    with pytest.raises(ValueError):
        _run("gae", inputs)


# --------------------------------------------------------------------------------------------- invariants


def test_masked_tokens_get_zero_advantage_for_every_estimator():
    torch.manual_seed(1)
    B, T = 6, 5
    mask = (torch.rand(B, T) > 0.4).float()
    mask[:, 0] = 1.0
    inputs = AdvantageInputs(
        response_mask=mask,
        rewards=torch.randn(B),
        group_index=torch.tensor([0, 0, 0, 1, 1, 2]),
        reward_mask=_t([1.0, 1.0, 0.0, 1.0, 1.0, 1.0]),
        old_logprobs=-torch.rand(B, T) * 3,
        teacher_logprobs=-torch.rand(B, T) * 3,
        teacher_mask=_t([1.0, 0.0, 1.0, 1.0, 0.0, 1.0]),
        values=torch.randn(B, T),
        baseline=torch.randn(B),
    )
    kwargs = {"gae": dict(gamma=0.9, lam=0.8, w_opd=1.0)}
    for name in ADVANTAGES.names():
        res = _run(name, inputs, **kwargs.get(name, {}))
        assert res.advantages.shape == (B, T), name
        assert torch.isfinite(res.advantages).all(), name
        assert (res.advantages[mask == 0] == 0).all(), name
        if res.returns is not None:
            assert (res.returns[mask == 0] == 0).all(), name


def test_opd_center_subtracts_the_mean_gap_over_hinted_tokens_only():
    # hinted sample 0: gaps [-1, -3]; sample 1 has no accepted hint (its garbage gap must not count): mean = -2
    inputs = AdvantageInputs(
        response_mask=torch.ones(2, 2),
        rewards=_t([0.0, 0.0]),
        group_index=torch.tensor([0, 1]),
        old_logprobs=_t([[-1.0, -1.0], [-1.0, -1.0]]),
        teacher_logprobs=_t([[-2.0, -4.0], [5.0, 5.0]]),
        teacher_mask=_t([1.0, 0.0]),
    )
    _close(_run("opd", inputs).advantages, [[-1.0, -3.0], [0.0, 0.0]])
    _close(_run("opd", inputs, center=True).advantages, [[1.0, -1.0], [0.0, 0.0]])
    _close(
        _run("combine", inputs, w_rl=0.0, opd_center=True, rl_estimator="grpo").advantages, [[1.0, -1.0], [0.0, 0.0]]
    )


def test_end_of_turn_tokens_are_the_last_of_each_segment_and_of_a_finished_reply():
    # row 0: one finished reply of 3 tokens, then padding -> its end-of-turn token is position 2
    # row 1: the same reply cut at the budget -> no end-of-turn token
    # row 2: two turns (tool output at positions 2-3 is not trainable), the last one finished -> positions 1 and 5
    # row 3: two turns, the last one cut -> only the first turn's end, position 1
    mask = _t([[1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 1, 1], [1, 1, 0, 0, 1, 1]])
    ends = end_of_turn_tokens(mask, _t([1.0, 0.0, 1.0, 0.0]))
    _close(ends, [[0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0]])
    _close(end_of_turn_tokens(mask, None)[1], [0, 0, 1, 0, 0, 0])  # no finished flags: every reply ended


def test_opd_skip_end_leaves_the_end_of_turn_token_to_the_reward():
    # gaps [-0.1, -0.2, -2.0] on a finished reply: the -2.0 on its end-of-turn token is dropped; a cut reply
    # (row 1) has no end-of-turn token and keeps all three; the reward term still reaches every token
    inputs = AdvantageInputs(
        response_mask=torch.ones(2, 3),
        rewards=_t([1.0, -1.0]),
        group_index=torch.tensor([0, 1]),
        old_logprobs=_t([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]),
        teacher_logprobs=_t([[-1.1, -1.2, -3.0], [-1.1, -1.2, -3.0]]),
        teacher_mask=_t([1.0, 1.0]),
        finished=_t([1.0, 0.0]),
    )
    _close(_run("opd", inputs).advantages, [[-0.1, -0.2, -2.0], [-0.1, -0.2, -2.0]], atol=1e-6)
    _close(_run("opd", inputs, skip_end=True).advantages, [[-0.1, -0.2, 0.0], [-0.1, -0.2, -2.0]], atol=1e-6)
    # combine, w_rl = 1 with groups of one under grpo (A_rl = 0), w_opd = 0.5: only the halved gaps remain
    combined = _run("combine", inputs, w_rl=1.0, w_opd=0.5, rl_estimator="grpo", opd_skip_end=True).advantages
    _close(combined, [[-0.05, -0.1, 0.0], [-0.05, -0.1, -1.0]], atol=1e-6)


def test_opening_tokens_are_the_first_k_of_every_turn():
    from claw.advantages.opd import opening_tokens

    # row 0: one reply of 4 tokens, then padding; row 1: two turns (positions 2-3 are a tool's output)
    mask = _t([[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 1, 1]])
    _close(opening_tokens(mask, 2), [[1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 1, 1]])
    _close(opening_tokens(mask, 1), [[1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 1, 0]])
    _close(opening_tokens(mask, 0), [[0] * 6, [0] * 6])
    _close(opening_tokens(mask, 9), mask)  # k past the reply: all of it


def test_opd_skip_start_leaves_how_a_reply_opens_to_the_reward():
    # gaps [-0.6, -0.3, -0.1, -0.1]: skip_start=2 drops the first two; a turn without a hint stays 0, and in
    # combine the reward term still reaches the opening tokens
    inputs = AdvantageInputs(
        response_mask=_t([[1, 1, 1, 1], [1, 1, 1, 0]]),
        rewards=_t([-1.0, 1.0]),
        group_index=torch.tensor([0, 0]),
        old_logprobs=_t([[-1.0, -1.0, -1.0, -1.0], [-1.0, -1.0, -1.0, 0.0]]),
        teacher_logprobs=_t([[-1.6, -1.3, -1.1, -1.1], [-1.6, -1.3, -1.1, 0.0]]),
        teacher_mask=_t([1.0, 0.0]),
    )
    _close(_run("opd", inputs, skip_start=2).advantages, [[0.0, 0.0, -0.1, -0.1], [0.0, 0.0, 0.0, 0.0]], atol=1e-6)
    _close(_run("opd", inputs).advantages[0], [-0.6, -0.3, -0.1, -0.1], atol=1e-6)
    # grpo over the group of two: A_rl = -0.7071 / +0.7071 on every token; w_opd = 1 adds the gap after token 2
    combined = _run("combine", inputs, w_rl=1.0, w_opd=1.0, rl_estimator="grpo", opd_skip_start=2).advantages
    a = 0.70710677
    _close(combined, [[-a, -a, -a - 0.1, -a - 0.1], [a, a, a, 0.0]], atol=1e-5)


def test_end_of_turn_gap_reads_the_last_trainable_token_of_finished_hinted_samples(tmp_path):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("eot", "experiments/personal_agent/end_of_turn_gap.py")
    eot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(eot)
    rows = [  # gaps: [-0.1, -0.3, -2.0] and [-0.2, -1.0]; a cut reply and an unhinted one are skipped
        {"teacher_logprobs": [-1.1, -1.3, -3.0], "rollout_logprobs": [-1.0, -1.0, -1.0], "finished": True},
        {"teacher_logprobs": [-1.2, -2.0, 0.0], "rollout_logprobs": [-1.0, -1.0, 0.0], "finished": True,
         "response_mask": [1, 1, 0]},
        {"teacher_logprobs": [-9.0, -9.0], "rollout_logprobs": [-1.0, -1.0], "finished": False},
        {"teacher_logprobs": None, "rollout_logprobs": [-1.0], "finished": True},
    ]  # fmt: skip
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = eot.end_of_turn_gap(samples)
    assert got["n"] == 2
    assert got["end"] == pytest.approx((-2.0 - 1.0) / 2) and got["other"] == pytest.approx((-0.1 - 0.3 - 0.2) / 3)


def _agreement_inputs(gaps, rewards, hinted=None, lengths=None):
    """One sample per gap: a constant per-token teacher-student gap over `lengths[i]` tokens (of 3)."""
    b = len(gaps)
    lengths = lengths or [3] * b
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(3)] for n in lengths])
    old = torch.full((b, 3), -1.0)
    return AdvantageInputs(
        response_mask=mask,
        rewards=_t(rewards),
        group_index=torch.arange(b),
        old_logprobs=old,
        teacher_logprobs=old + _t(gaps).unsqueeze(-1),
        teacher_mask=_t(hinted if hinted is not None else [1.0] * b),
    )


def test_teacher_agreement_hand_computed():
    # gaps [1, 0, -1] against rewards [-0.25, -0.5, -1]: centred gaps [1, 0, -1], centred rewards
    # [0.3333, 0.0833, -0.4167]; r = (0.3333 + 0.4167) / (sqrt(2) * sqrt(0.1111 + 0.0069 + 0.1736)) = 0.9820
    assert teacher_agreement(_agreement_inputs([1.0, 0.0, -1.0], [-0.25, -0.5, -1.0])).item() == pytest.approx(
        0.98198, abs=1e-4
    )
    # the teacher favouring what the user complained about most: the same magnitude, negative
    assert teacher_agreement(_agreement_inputs([-1.0, 0.0, 1.0], [-0.25, -0.5, -1.0])).item() == pytest.approx(
        -0.98198, abs=1e-4
    )


def test_teacher_agreement_uses_only_hinted_samples_with_a_reward():
    # the unhinted fourth sample would flip the sign if it counted; the gap is a per-token mean, not a sum
    inputs = _agreement_inputs(
        [1.0, 0.0, -1.0, -5.0], [-0.25, -0.5, -1.0, 1.0], hinted=[1, 1, 1, 0], lengths=[1, 2, 3, 3]
    )
    assert teacher_agreement(inputs).item() == pytest.approx(0.98198, abs=1e-4)
    assert teacher_agreement(_agreement_inputs([1.0, 0.0], [-0.25, -0.5])) is None  # fewer than three
    assert teacher_agreement(_agreement_inputs([1.0, 0.0, -1.0], [-0.5, -0.5, -0.5])) is None  # no spread in reward


# ------------------------------------------------------------------------- combine, the hint as credit


def _credit_inputs(**kw):
    # two finished 4-token replies, both hinted; rewards -1 and +1 against a zero baseline (A_rl = -1, +1);
    # gaps (teacher - old): row 0 [0, -2, 0, -5] (the -5 on its end-of-turn token), row 1 [1, 0, 0, 0]
    base = dict(
        response_mask=torch.ones(2, 4),
        rewards=_t([-1.0, 1.0]),
        group_index=torch.tensor([0, 1]),
        baseline=_t([0.0, 0.0]),
        old_logprobs=torch.full((2, 4), -1.0),
        teacher_logprobs=_t([[-1.0, -3.0, -1.0, -6.0], [0.0, -1.0, -1.0, -1.0]]),
        teacher_mask=_t([1.0, 1.0]),
        finished=_t([1.0, 1.0]),
    )
    base.update(kw)
    return AdvantageInputs(**base)


def test_combine_credit_spreads_the_reward_where_the_teacher_disagrees_and_keeps_its_sum():
    # row 0 (A_rl = -1): z = -1 * gap on the 3 inner tokens = [0, 2, 0] -> softmax [1, e^2, 1] / (2 + e^2),
    #   times 3: [0.3195, 2.3610, 0.3195]; the end-of-turn token keeps 1; the sum is 4 (= the RL term's)
    # row 1 (A_rl = +1): z = gap = [1, 0, 0] -> 3 * [e, 1, 1] / (e + 2) = [1.7284, 0.6358, 0.6358], end 1
    e = math.e
    row0 = [3 / (2 + e**2), 3 * e**2 / (2 + e**2), 3 / (2 + e**2), 1.0]
    row1 = [3 * e / (e + 2), 3 / (e + 2), 3 / (e + 2), 1.0]
    res = _run("combine", _credit_inputs(), role="credit", credit_scale=1.0, credit_cap=10.0)
    _close(res.advantages, [[-x for x in row0], row1], atol=1e-5)
    assert res.advantages.sum(-1).tolist() == pytest.approx([-4.0, 4.0], abs=1e-5)  # never more, never the other way
    assert res.metrics["credit_shaped_frac"].item() == pytest.approx(1.0)


def test_combine_credit_caps_a_token_and_is_plain_rl_without_a_hint_or_a_scale():
    # cap 2: row 0's 2.3610 -> 2, and the 0.3610 it loses goes to the other inner tokens in proportion to their
    #   equal shares: the three inner tokens hold 3 in all, so 3 - 2 = 1 -> 0.5 each; the end-of-turn token keeps
    #   1; the sum is 4 and no token is above the cap (scaling the whole row back to 4 would put 2.198 on the capped
    #   token and 1.099 on the end-of-turn one)
    res = _run("combine", _credit_inputs(), role="credit", credit_scale=1.0, credit_cap=2.0)
    _close(res.advantages[0], [-0.5, -2.0, -0.5, -1.0])
    rl = _run("combine", _credit_inputs(), w_opd=0.0).advantages  # the RL term alone: -1 and +1 on every token
    unhinted = _credit_inputs(teacher_mask=_t([0.0, 0.0]))
    _close(_run("combine", unhinted, role="credit").advantages, rl)
    _close(_run("combine", _credit_inputs(), role="credit", credit_scale=0.0).advantages, rl)
    zero = _credit_inputs(rewards=_t([0.0, 1.0]))  # A_rl = 0: nothing to spread, nothing pushed
    assert _run("combine", zero, role="credit").advantages[0].abs().sum().item() == 0.0


def test_combine_credit_is_blind_to_the_gap_offset():
    # the gap's -KL offset (every token a little below 0) is no reading: shifting it changes nothing
    inputs = _credit_inputs()
    shifted = _credit_inputs(teacher_logprobs=inputs.teacher_logprobs - 0.7)
    _close(_run("combine", shifted, role="credit").advantages, _run("combine", inputs, role="credit").advantages)
    with pytest.raises(ValueError, match="role"):
        _run("combine", inputs, role="sum")
