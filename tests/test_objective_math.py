"""The objective as a whole: device-agnostic, split-invariant, composed right, signed right.

- every registered estimator and loss runs on the `meta` device (a tensor created without the inputs'
  device fails here on a CPU-only machine, as it would on CUDA);
- the gradient of a minibatch is the same for every micro-batch size and 1 or 2 (simulated) DDP
  ranks, for every `loss_agg`, with KL, entropy and top-K terms on (property test);
- `Objective.loss` composes TIS, the top-K gate, the KL coefficient and the entropy sign as written;
- `train_on` with several minibatches and PPO epochs equals a hand-stepped AdamW reference;
- one step raises the log-prob of a positively rewarded response and lowers a negative one's;
- the KL estimators' expected gradients are what `claw/losses/kl.py` says;
- `negative_weight` scales the negative side of every estimator's advantages and nothing else.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claw.advantages import ADVANTAGES, AdvantageInputs, AdvantageResult
from claw.losses import (
    AGGREGATIONS,
    KL_ESTIMATORS,
    LOSSES,
    aggregate,
    tis_weights,
    token_weights,
    topk_reverse_kl,
    value_loss,
)
from claw.module import ClawModule
from claw.objective import LossWeights, Objective, ObjectiveConfig, OldOutputs, PolicyOutputs
from claw.types import Sample, collate
from claw.updates import slice_adv as _slice_adv
from claw.updates import slice_old as _slice_old

# --------------------------------------------------------------------------------------------- meta device


def _meta_inputs(B: int = 4, T: int = 3) -> AdvantageInputs:
    meta = torch.device("meta")
    return AdvantageInputs(
        response_mask=torch.ones(B, T, device=meta),
        rewards=torch.ones(B, device=meta),
        group_index=torch.zeros(B, dtype=torch.long, device=meta),
        reward_mask=torch.ones(B, device=meta),
        old_logprobs=torch.zeros(B, T, device=meta),
        teacher_logprobs=torch.zeros(B, T, device=meta),
        teacher_mask=torch.ones(B, device=meta),
        values=torch.zeros(B, T, device=meta),
        baseline=torch.zeros(B, device=meta),
    )


@pytest.mark.parametrize("name", ADVANTAGES.names())
def test_every_advantage_estimator_runs_on_the_meta_device(name):
    kwargs = {"whiten": True} if name == "gae" else {}
    res = ADVANTAGES.get(name)(_meta_inputs(), **kwargs)
    assert res.advantages.device.type == "meta" and res.advantages.shape == (4, 3)
    for v in res.metrics.values():
        assert v.device.type == "meta"


@pytest.mark.parametrize("loss_agg", list(AGGREGATIONS))
def test_every_loss_runs_on_the_meta_device(loss_agg):
    meta = torch.device("meta")
    x, mask = torch.zeros(2, 3, device=meta), torch.ones(2, 3, device=meta)
    for name in LOSSES.names():
        loss, m = LOSSES.get(name)(x, x, x, mask, loss_agg=loss_agg, loss_agg_norm=8.0, dual_clip=3.0, is_weights=x)
        assert loss.device.type == "meta" and all(v.device.type == "meta" for v in m.values())
    loss, m = value_loss(x, x, x, mask, loss_agg=loss_agg, loss_agg_norm=8.0)
    assert loss.device.type == "meta" and all(v.device.type == "meta" for v in m.values())
    loss, _ = topk_reverse_kl(
        torch.zeros(2, 3, 4, device=meta), torch.zeros(2, 3, 4, device=meta), mask, loss_agg, 8.0
    )
    assert loss.device.type == "meta"
    w, m = tis_weights(x, x, mask)
    assert w.device.type == "meta" and all(v.device.type == "meta" for v in m.values())
    for name in KL_ESTIMATORS.names():
        assert KL_ESTIMATORS.get(name)(x, x).device.type == "meta"


def test_the_objective_runs_on_the_meta_device(tiny_policy):
    batch = _batch(tiny_policy.tokenizer, lengths=[2, 3, 1, 4], hinted=[1, 0, 1, 0], topk=2).to("meta")
    cfg = ObjectiveConfig(
        advantage="combine", advantage_kwargs={"rl_estimator": "grpo"}, kl_coef=0.1, entropy_coef=0.01, topk_coef=0.5
    )
    objective = Objective(cfg)
    T = batch.response_mask.shape[1]
    old = OldOutputs(torch.zeros_like(batch.rollout_logprobs), ref_logprobs=torch.zeros_like(batch.rollout_logprobs))
    adv = objective.advantages(batch, old)
    out = PolicyOutputs(
        torch.zeros_like(batch.rollout_logprobs),
        entropy=torch.zeros_like(batch.rollout_logprobs),
        topk_logprobs=torch.zeros(4, T, 2, device="meta"),
    )
    loss, metrics = objective.loss(out, old, adv, batch)
    assert loss.device.type == "meta" and all(v.device.type == "meta" for v in metrics.values())


# --------------------------------------------------------------------------------------------- batches


def _batch(tok, lengths, rewards=None, hinted=None, groups=None, topk: int = 0, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    samples = []
    for i, n in enumerate(lengths):
        prompt = tok.encode(f"question {i % 3}")
        resp = torch.randint(5, 1000, (n,), generator=g).tolist()
        lp = (-torch.rand(n, generator=g) * 3).tolist()
        teacher = (-torch.rand(n, generator=g) * 3).tolist() if hinted and hinted[i] else None
        tk_ids = tk_lp = None
        if topk and teacher is not None:
            tk_ids = torch.randint(5, 1000, (n, topk), generator=g).tolist()
            tk_lp = (-torch.rand(n, topk, generator=g) * 4 - 1).tolist()
        samples.append(
            Sample(
                prompt, resp, lp, temperature=0.8, policy_version=0,
                reward=None if rewards is None else rewards[i],
                teacher_logprobs=teacher, teacher_topk_ids=tk_ids, teacher_topk_logprobs=tk_lp,
                group_id=str(groups[i] if groups else i // 2),
            )
        )  # fmt: skip
    return collate(samples, tok.pad_token_id)


def _grads(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in module.parameters()])


def _minibatch_grad(tiny_policy, cfg: ObjectiveConfig, batch, mb, micro: int, world: int) -> torch.Tensor:
    """DDP-averaged gradient of minibatch `mb`, accumulated in micro-batches of `micro` over `world` ranks."""
    torch.manual_seed(0)
    module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg), micro_batch_size=micro, fuse_old_pass=False)
    old = module.old_outputs(batch)
    adv = module.objective.advantages(batch, old)
    for rank in range(world):
        module.accumulate(batch, mb, old, adv, rank_world=(rank, world))
    return _grads(module) / world  # DDP averages over ranks


def _reference_grad(tiny_policy, cfg: ObjectiveConfig, batch, mb) -> torch.Tensor:
    """The minibatch's loss computed in one piece, from its own rows only."""
    module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg), fuse_old_pass=False)
    old = module.old_outputs(batch)
    adv = module.objective.advantages(batch, old)
    part = batch.select(mb)
    loss, _ = module.objective.loss(module.policy_outputs(part), _slice_old(old, mb), _slice_adv(adv, mb), part)
    loss.backward()
    return _grads(module)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lengths=st.lists(st.integers(1, 6), min_size=3, max_size=7),
    loss_agg=st.sampled_from(list(AGGREGATIONS)),
    micro=st.integers(1, 4),
    world=st.integers(1, 2),
    data=st.data(),
)
def test_the_update_does_not_depend_on_micro_batch_size_or_world_size(
    tiny_policy, lengths, loss_agg, micro, world, data
):
    B = len(lengths)
    rewards = data.draw(st.lists(st.sampled_from([None, 0.0, 1.0, -1.0]), min_size=B, max_size=B))
    hinted = data.draw(st.lists(st.booleans(), min_size=B, max_size=B))
    mb = torch.tensor(sorted(data.draw(st.sets(st.integers(0, B - 1), min_size=1))))  # any minibatch of the batch
    batch = _batch(tiny_policy.tokenizer, lengths, rewards=rewards, hinted=hinted, topk=3)
    cfg = ObjectiveConfig(
        advantage="combine", advantage_kwargs={"rl_estimator": "grpo"}, loss_agg=loss_agg, loss_agg_norm=6.0,
        kl_coef=0.2, entropy_coef=0.05, topk_coef=0.5,
    )  # fmt: skip
    expected = _reference_grad(tiny_policy, cfg, batch, mb)
    got = _minibatch_grad(tiny_policy, cfg, batch, mb, micro, world)
    assert torch.allclose(got, expected, atol=1e-6, rtol=1e-4), (got - expected).abs().max()


def test_the_issue_case_seq_mean_token_mean_accumulates_exactly(tiny_policy):
    # 8 sequences of lengths 1 and 6, micro-batch 4: the old share-of-tokens scaling gave 0.1260 for a true −0.0052
    batch = _batch(tiny_policy.tokenizer, [1, 6] * 4, rewards=[1.0, -1.0, 0.0, 1.0, -1.0, 1.0, 0.0, -1.0])
    cfg = ObjectiveConfig(advantage="grpo", loss_agg="seq-mean-token-mean")
    mb = torch.arange(8)
    assert torch.allclose(
        _minibatch_grad(tiny_policy, cfg, batch, mb, 4, 1),
        _reference_grad(tiny_policy, cfg, batch, mb),
        atol=1e-7,
        rtol=1e-5,
    )


def test_dr_grpo_normaliser_is_a_constant_not_the_batch_width():
    # the same two responses in a batch padded to width 3 or to width 9 (a longer response elsewhere) weigh the same
    narrow = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    wide = torch.cat([narrow, torch.zeros(2, 6)], dim=1)
    w_narrow = token_weights(narrow, "seq-mean-token-sum-norm", 96.0)
    w_wide = token_weights(wide, "seq-mean-token-sum-norm", 96.0)
    assert torch.equal(w_wide[:, :3], w_narrow) and w_wide[:, 3:].abs().sum() == 0
    assert w_narrow[0, 0].item() == pytest.approx(1 / (2 * 96))  # 1 / (n_seq · N)


def test_topk_term_weight_does_not_depend_on_how_hinted_samples_share_a_micro_batch():
    # 8 samples, 1 hinted: its top-K loss weighs 1/|its tokens| whatever micro-batch it falls in
    mask = torch.ones(8, 2)
    hinted = torch.tensor([0, 0, 0, 1, 0, 0, 0, 0.0])
    w = token_weights(mask * hinted.unsqueeze(-1), "token-mean")
    assert w[3].tolist() == [0.5, 0.5] and w.sum().item() == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------- composition


def test_objective_loss_composes_tis_topk_gate_kl_and_entropy_sign(tiny_policy):
    # Two samples of 2 tokens; π_θ = π_old, so ρ = 1 and the policy term is −Σ w_is · A / 4 (token-mean).
    batch = _batch(tiny_policy.tokenizer, [2, 2], rewards=[1.0, 1.0], hinted=[True, False], topk=2)
    old_lp = torch.tensor([[-1.0, -2.0], [-0.5, -1.5]])
    batch.rollout_logprobs = old_lp - torch.tensor([[0.0, math.log(3.0)], [0.0, 0.0]])  # TIS weight 3 → capped at 2
    A = torch.tensor([[1.0, 2.0], [-1.0, 0.5]])
    ref = old_lp - 1.0  # log r = −1 on every token: k2 = ½
    entropy = torch.tensor([[0.4, 0.2], [0.6, 0.8]])
    s_topk = torch.log(torch.tensor([[[0.5, 0.2], [0.3, 0.3]], [[0.9, 0.05], [0.4, 0.4]]]))
    batch.teacher_topk_logprobs = torch.log(torch.tensor([[[0.4, 0.4], [0.3, 0.3]], [[0.1, 0.1], [0.1, 0.1]]]))
    cfg = ObjectiveConfig(
        advantage="grpo", kl_coef=0.3, kl_estimator="k2", entropy_coef=0.1, topk_coef=2.0, tis={"cap": 2.0}
    )
    loss, m = Objective(cfg).loss(
        PolicyOutputs(old_lp.clone(), entropy=entropy, topk_logprobs=s_topk),
        OldOutputs(old_lp, ref_logprobs=ref),
        AdvantageResult(A),
        batch,
    )
    policy = -(1 * 1 + 2 * 2 + (-1) * 1 + 0.5 * 1) / 4  # −Σ w A / 4 with w = [[1, 2], [1, 1]] = −1.125
    kl = 0.5
    ent = (0.4 + 0.2 + 0.6 + 0.8) / 4
    # top-K on sample 0 only (the hinted one): KL per token over {k1, k2, tail}
    t0 = 0.5 * math.log(0.5 / 0.4) + 0.2 * math.log(0.2 / 0.4) + 0.3 * math.log(0.3 / 0.2)
    t1 = 0.3 * math.log(1.0) * 2 + 0.4 * math.log(0.4 / 0.4)
    topk = (t0 + t1) / 2
    expected = policy + 0.3 * kl - 0.1 * ent + 2.0 * topk
    assert loss.item() == pytest.approx(expected, abs=1e-5)
    assert m["topk_kl"].item() == pytest.approx(topk, abs=1e-5) and m["entropy"].item() == pytest.approx(ent)


def test_kl_opening_penalises_only_the_first_tokens_of_each_turn_at_the_full_weight(tiny_policy):
    # One sample of 4 reply tokens; log r = −1, −1, −2, −2, so k2 = ½, ½, 2, 2. With kl_opening=2 the KL term is
    # the first two tokens' k2 at the same per-token weight (token-mean over all 4) and its gradient is 0 after them.
    batch = _batch(tiny_policy.tokenizer, [4], rewards=[0.0])
    old_lp = torch.tensor([[-1.0, -1.0, -1.0, -1.0]])
    ref = old_lp - torch.tensor([[1.0, 1.0, 2.0, 2.0]])
    terms = {}
    for opening in (0, 2):
        cfg = ObjectiveConfig(advantage="grpo", kl_coef=0.5, kl_opening=opening, tis={"enabled": False})
        logprobs = old_lp.clone().requires_grad_(True)
        loss, m = Objective(cfg).loss(
            PolicyOutputs(logprobs), OldOutputs(old_lp, ref_logprobs=ref), AdvantageResult(torch.zeros(1, 4)), batch
        )
        loss.backward()
        terms[opening] = (m["kl_ref"].item(), logprobs.grad[0].tolist())
    assert terms[0][0] == pytest.approx((0.5 + 0.5 + 2 + 2) / 4)
    assert terms[2][0] == pytest.approx((0.5 + 0.5) / 4)
    # d/dlogπ of 0.5 · ½(logπ − logπ_ref)² / 4 = 0.5 · log r / 4: the full weight on the opening, nothing after it
    assert terms[2][1] == pytest.approx([0.125, 0.125, 0.0, 0.0]) and terms[0][1][:2] == pytest.approx([0.125, 0.125])
    with pytest.raises(ValueError, match="kl_opening"):
        ObjectiveConfig(advantage="grpo", kl_coef=0.5, kl_opening=-1)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=12),
    st.floats(0.0, 2.0, allow_nan=False),
)
def test_weight_negatives_scales_the_negative_side_only(values, w):
    from claw.advantages.negatives import weight_negatives

    adv = torch.tensor(values)
    out = weight_negatives(adv, w)
    assert torch.equal(out[adv >= 0], adv[adv >= 0])  # a push up is untouched
    assert torch.allclose(out[adv < 0], w * adv[adv < 0])  # a push down weighs w
    assert torch.equal(adv, torch.tensor(values))  # the input is not modified


def test_objective_weighs_negative_advantages_after_every_estimator(tiny_policy):
    # Two groups of two (grpo): each group's lower reward has A < 0. With negative_weight=0.25 those entries are a
    # quarter of the plain estimator's and the positive ones identical; the combine mode's per-token OPD gap too.
    batch = _batch(tiny_policy.tokenizer, [3, 4, 2, 5], rewards=[1.0, -1.0, 0.5, -0.5], hinted=[1, 1, 1, 1])
    old = OldOutputs(batch.rollout_logprobs.clone())
    for advantage, kwargs in (("grpo", {}), ("combine", {"rl_estimator": "grpo", "w_opd": 0.5})):
        plain = Objective(ObjectiveConfig(advantage=advantage, advantage_kwargs=kwargs)).advantages(batch, old)
        light = Objective(
            ObjectiveConfig(advantage=advantage, advantage_kwargs=kwargs, negative_weight=0.25)
        ).advantages(batch, old)
        neg = plain.advantages < 0
        assert neg.any() and (plain.advantages > 0).any()
        assert torch.allclose(light.advantages[neg], 0.25 * plain.advantages[neg])
        assert torch.equal(light.advantages[~neg], plain.advantages[~neg])
    with pytest.raises(ValueError, match="negative_weight"):
        ObjectiveConfig(advantage="grpo", negative_weight=-0.5)


# --------------------------------------------------------------------------------------------- train_on


def _fit_one_batch(module, batch):
    import lightning as L

    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None, collate_fn=lambda b: b)
    )


def test_train_on_with_minibatches_and_epochs_matches_a_hand_stepped_reference(tiny_policy):
    batch = _batch(
        tiny_policy.tokenizer, [3, 5, 2, 4, 1, 6], rewards=[1.0, 0.0, -1.0, 1.0, 0.0, 1.0], groups=[0, 0, 0, 1, 1, 1]
    )
    cfg = ObjectiveConfig(advantage="grpo", loss_agg="seq-mean-token-mean", clip_low=0.1, clip_high=0.1)
    lr, epochs, minibatches = 5e-3, 2, 2
    module = ClawModule(
        copy.deepcopy(tiny_policy.model),
        Objective(cfg),
        lr=lr,
        ppo_epochs=epochs,
        minibatches=minibatches,
        micro_batch_size=2,
        seed=3,
    )
    _fit_one_batch(module, batch)

    # Hand-stepped: π_old and advantages once; per epoch the same seeded shuffle, 2 minibatches of 3; one
    # AdamW step per minibatch on the minibatch's loss computed in one piece; gradient clipped to norm 1.
    model = copy.deepcopy(tiny_policy.model)
    ref = ClawModule(model, Objective(cfg), micro_batch_size=64)
    old = ref.old_outputs(batch)
    adv = ref.objective.advantages(batch, old)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim >= 2]}, {"params": [p for p in params if p.ndim < 2]}],
        lr=lr,
        weight_decay=0.0,
    )
    n_clipped = 0
    for epoch in range(epochs):
        perm = torch.randperm(6, generator=torch.Generator().manual_seed(3 * 1_000_003 + 0 * 101 + epoch))
        for mb in (perm[:3], perm[3:]):
            part = batch.select(mb)
            loss, _ = ref.objective.loss(ref.policy_outputs(part), _slice_old(old, mb), _slice_adv(adv, mb), part)
            loss.backward()
            n_clipped += float(torch.nn.utils.clip_grad_norm_(params, 1.0)) > 1.0
            opt.step()
            opt.zero_grad()
    for (name, a), b in zip(module.model.named_parameters(), model.parameters()):
        assert torch.allclose(a, b, atol=1e-6), name


def test_one_step_moves_log_probs_in_the_direction_of_the_advantage(tiny_policy):
    # one group of 2: the rewarded response (+1) must become more likely, the other (−1) less likely.
    # A flipped advantage sign (or loss sign) fails this; "parameters changed" would not.
    batch = _batch(tiny_policy.tokenizer, [4, 4], rewards=[1.0, -1.0], groups=[0, 0])
    module = ClawModule(
        copy.deepcopy(tiny_policy.model), Objective(ObjectiveConfig(advantage="grpo")), lr=1e-3, fuse_old_pass=False
    )
    before = module.old_outputs(batch).logprobs.sum(-1)
    _fit_one_batch(module, batch)
    after = module.old_outputs(batch).logprobs.sum(-1)
    assert after[0] > before[0] and after[1] < before[1], (before, after)


def test_opd_step_moves_towards_the_teacher(tiny_policy):
    # OPD: tokens where the teacher is more likely than the student get pushed up, and vice versa
    batch = _batch(tiny_policy.tokenizer, [3, 3], hinted=[True, True])
    module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(ObjectiveConfig(advantage="opd")), lr=1e-3)
    old = module.old_outputs(batch).logprobs
    batch.teacher_logprobs = old + torch.tensor([[2.0, 2.0, 2.0], [-2.0, -2.0, -2.0]])
    _fit_one_batch(module, batch)
    after = module.old_outputs(batch).logprobs
    assert after[0].sum() > old[0].sum() and after[1].sum() < old[1].sum()


# --------------------------------------------------------------------------------------------- KL and critic


def _expected_grad(name: str, theta: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """E_{a~π_θ}[∇_θ k(a)]: the gradient a sampled-token KL loss follows in expectation."""
    theta = theta.clone().requires_grad_(True)
    logp = torch.log_softmax(theta, -1)
    k = KL_ESTIMATORS.get(name)(logp, ref_logp)
    (logp.exp().detach() * k).sum().backward()
    return theta.grad


def test_kl_estimator_expected_gradients():
    torch.manual_seed(0)
    theta, ref_logp = torch.randn(6, dtype=torch.float64), torch.log_softmax(torch.randn(6, dtype=torch.float64), -1)

    def grad_of(f):
        t = theta.clone().requires_grad_(True)
        f(torch.log_softmax(t, -1)).backward()
        return t.grad

    reverse = grad_of(lambda lp: (lp.exp() * (lp - ref_logp)).sum())  # ∇ KL(π_θ ‖ π_ref)
    forward = grad_of(lambda lp: (ref_logp.exp() * (ref_logp - lp)).sum())  # ∇ KL(π_ref ‖ π_θ)
    assert torch.allclose(_expected_grad("k1", theta, ref_logp), torch.zeros(6, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(_expected_grad("k2", theta, ref_logp), reverse, atol=1e-12)
    assert torch.allclose(_expected_grad("k3", theta, ref_logp), forward, atol=1e-12)
    assert not torch.allclose(reverse, forward, atol=1e-3)  # the distinction is real on this example


def test_critic_trunk_is_detached_by_default(tiny_policy):
    batch = _batch(tiny_policy.tokenizer, [3, 2], rewards=[1.0, 0.0])
    cfg = ObjectiveConfig(advantage="gae", critic=True)
    for detach in (True, False):
        module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg), critic_detach_trunk=detach)
        torch.nn.init.normal_(module.value_head.weight)  # a zero-initialised head passes no gradient either way
        out = module.policy_outputs(batch)
        v_loss, _ = value_loss(out.values, out.values.detach() + 0.1, torch.ones_like(out.values), batch.response_mask)
        v_loss.backward()
        trunk = sum(float(p.grad.abs().sum()) for p in module.model.parameters() if p.grad is not None)
        head = float(module.value_head.weight.grad.abs().sum())
        assert head > 0
        assert (trunk == 0) if detach else (trunk > 0), (detach, trunk)


def test_loss_weights_select_matches_rows():
    w = LossWeights(torch.arange(6.0).view(3, 2), torch.ones(3, 2))
    s = w.select(torch.tensor([2, 0]))
    assert s.policy.tolist() == [[4.0, 5.0], [0.0, 1.0]] and s.teacher.shape == (2, 2)


def test_aggregate_with_weights_is_a_weighted_sum():
    loss = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert (
        aggregate(loss, torch.ones(2, 2), "token-mean", weights=torch.tensor([[1.0, 0.0], [0.0, 2.0]])).item() == 9.0
    )
