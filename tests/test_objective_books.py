"""The objective's bookkeeping: what is logged, how a batch is split into optimizer steps, which samples feed the
running baseline, how the credit cap and the mode weights read, and that the critic runs on a bf16 trunk.

- the logged metrics (loss terms and means alike) are the same for every micro-batch size and world size, and the
  loss terms are the batch's own aggregates;
- `algo.minibatches = m` takes exactly m optimizer steps (B ≥ m) or B (B < m), and the metrics are means over the
  steps taken;
- a greedy turn (temperature 0) never enters the warm start's leave-one-out baseline;
- `model.dtype=bfloat16` with `algo=ppo` under `precision=32-true` trains a step;
- `opd_credit` never puts a token above its cap; `w_opd` (and `w_rl`) weigh their terms the same under every algo;
- a warning raised from claw's own code fails the tests (pyproject.toml's `filterwarnings`).
"""

from __future__ import annotations

import copy
import math
import warnings

import lightning as L
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from claw.advantages import ADVANTAGES, AdvantageInputs
from claw.advantages.opd import end_of_turn_tokens
from claw.config import objective_from_cfg
from claw.losses import masked_mean
from claw.module import ClawModule
from claw.objective import Objective, ObjectiveConfig
from claw.types import Sample, collate
from tests.conftest import TINY, make_cfg
from tests.test_objective_math import _batch


def _fit(module: ClawModule, batch, precision: str = "32-true") -> tuple[dict[str, float], int]:
    """Train `module` on one rollout batch; (the logged metrics, the optimizer steps taken)."""
    logged: dict[str, float] = {}
    steps = []

    class Capture(L.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            steps.append(1)

        def on_train_batch_end(self, trainer, pl_module, outputs, b, i):
            logged.update({k: float(v) for k, v in trainer.callback_metrics.items()})

    trainer = L.Trainer(
        accelerator="cpu",
        precision=precision,
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[Capture()],
    )
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None, collate_fn=lambda b: b)
    )
    return logged, len(steps)


# --------------------------------------------------------------------------------------------- logged metrics

OBJECTIVES = {
    "grpo+kl+entropy": ObjectiveConfig(advantage="grpo", kl_coef=0.1, entropy_coef=0.01),
    "ppo critic": ObjectiveConfig(advantage="gae", critic=True, loss_agg="seq-mean-token-mean"),
    "combine+topk": ObjectiveConfig(
        advantage="combine", advantage_kwargs={"rl_estimator": "grpo"}, topk_coef=0.5, loss_agg="seq-mean-token-mean"
    ),
}


def _rollout(tiny_policy):
    return _batch(
        tiny_policy.tokenizer,
        [3, 5, 2, 4, 1, 6, 2, 3],
        rewards=[1.0, -1.0, 1.0, 0.0, -1.0, 1.0, 0.0, 1.0],
        hinted=[1, 0, 1, 1, 0, 0, 1, 0],
        topk=3,
    )


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_logged_metrics_do_not_depend_on_the_micro_batch_size(tiny_policy, name):
    # One update on the same batch, in 1, 2, 4 and 8 micro-batches: the gradients are the same (tested in
    # test_objective_math.py) and so must every logged number be. Weighing each micro-batch's part of a loss term
    # by its share of the tokens once more logged entropy 10.78 / 2.78 / 1.66 at micro-batch 8 / 2 / 1.
    cfg = OBJECTIVES[name]
    batch = _rollout(tiny_policy)
    runs = {}
    for micro in (8, 4, 2, 1):
        torch.manual_seed(0)
        module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg), lr=1e-3, micro_batch_size=micro)
        runs[micro], _ = _fit(module, batch)
    terms = {"loss", "policy_loss", "entropy", "kl_ref", "value_loss", "topk_kl"}  # the loss terms
    assert {"train/loss", "train/policy_loss", "train/entropy"} <= {f"train/{k}" for k in terms} & set(runs[8])
    for micro in (4, 2, 1):
        assert runs[micro].keys() == runs[8].keys()
        for k, v in runs[8].items():
            if k.startswith("train/"):
                assert runs[micro][k] == pytest.approx(v, rel=1e-4, abs=1e-5), (micro, k, runs[micro][k], v)
    # The batch's own aggregate: the token-mean entropy of the whole batch under the initial weights.
    module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg))
    with torch.no_grad():
        entropy = module.policy_outputs(batch).entropy
    assert runs[1]["train/entropy"] == pytest.approx(
        float(module.objective.loss_weights(batch).policy.mul(entropy).sum()), rel=1e-4
    )


def test_logged_metrics_do_not_depend_on_the_world_size(tiny_policy):
    # Simulated DDP: each rank accumulates its rows; train_on all-sums the ranks' metrics.
    cfg = OBJECTIVES["grpo+kl+entropy"]
    batch = _rollout(tiny_policy)
    mb = torch.arange(batch.size)
    by_world = {}
    for world in (1, 2, 3):
        module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(cfg), micro_batch_size=2, fuse_old_pass=False)
        old = module.old_outputs(batch)
        adv = module.objective.advantages(batch, old)
        parts = [module.accumulate(batch, mb, old, adv, rank_world=(r, world)) for r in range(world)]
        by_world[world] = {k: float(sum(p[k] for p in parts)) for k in parts[0]}
    for world in (2, 3):
        for k, v in by_world[1].items():
            assert by_world[world][k] == pytest.approx(v, rel=1e-4, abs=1e-6), (world, k)


# --------------------------------------------------------------------------------------------- minibatches


def test_minibatches_are_exactly_m_parts_as_equal_as_possible(tiny_policy):
    module = ClawModule(tiny_policy.model, Objective(ObjectiveConfig()), minibatches=4)
    for n, sizes in [(5, [2, 1, 1, 1]), (8, [2, 2, 2, 2]), (7, [2, 2, 2, 1]), (3, [1, 1, 1]), (1, [1])]:
        parts = module.minibatch_rows(n, epoch=0)
        assert [len(p) for p in parts] == sizes, n
        assert sorted(torch.cat(parts).tolist()) == list(range(n))  # every row once
    one = ClawModule(tiny_policy.model, Objective(ObjectiveConfig()), minibatches=1)
    assert [p.tolist() for p in one.minibatch_rows(5, 0)] == [[0, 1, 2, 3, 4]]


@pytest.mark.parametrize("skip", [False, True])
def test_a_batch_no_multiple_of_the_minibatches_takes_m_steps_and_logs_their_mean(tiny_policy, skip):
    # B = 5, m = 4: 4 steps (the old ceil-sized chunks made 3: 2, 2, 1). At lr 0 every step sees the weights π_old
    # was taken with, so ρ = 1 on every token of every step and the logged ratio_mean is 1 (3 steps summed and
    # divided by m = 4 logged 0.75).
    batch = _batch(tiny_policy.tokenizer, [3, 5, 2, 4, 1], rewards=[1.0, -1.0, 1.0, 0.0, -1.0])
    objective = Objective(ObjectiveConfig())
    module = ClawModule(copy.deepcopy(tiny_policy.model), objective, lr=0.0, minibatches=4, skip_still_rows=skip)
    moves = objective.rows_that_move(batch, Objective(ObjectiveConfig()).advantages(batch, None))
    assert not moves.all()  # a row with A = 0: skipped, it is left out of the metrics
    logged, steps = _fit(module, batch)
    assert steps == 4
    assert logged["train/ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    # entropy: the mean over the steps of each step's token-mean entropy, over the rows that trained
    with torch.no_grad():
        entropy = module.policy_outputs(batch).entropy
    parts = module.minibatch_rows(batch.size, epoch=0)  # policy_version is still 0 before the sync callback
    parts = [p[moves[p]] for p in parts] if skip else parts
    means = [float(masked_mean(entropy[p], batch.response_mask[p])) for p in parts if len(p)]
    assert logged["train/entropy"] == pytest.approx(sum(means) / len(means), rel=1e-4)


# --------------------------------------------------------------------------------------------- baseline


def test_a_greedy_turn_is_not_in_the_warm_start_baseline():
    # One source, no history: rewards +1, −1 and a greedy (temperature 0) +1. The warm start's baseline is the
    # leave-one-out mean over the *trained* samples: A₀ = 1 − (−1) = 2, A₁ = −1 − 1 = −2, the greedy turn 0.
    # (With the greedy turn among the others: A₀ = 1 − (−1 + 1)/2 = 1.)
    samples = [
        Sample([1, 2], [5, 6], [-1.0, -1.0], temperature=t, policy_version=0, reward=r, source="user")
        for r, t in [(1.0, 0.8), (-1.0, 0.8), (1.0, 0.0)]
    ]
    batch = collate(samples, pad_id=0)
    objective = Objective(ObjectiveConfig(advantage="baseline"))
    adv = objective.advantages(batch, None).advantages
    assert adv[:, 0].tolist() == pytest.approx([2.0, -2.0, 0.0])
    # and after the batch the EMA holds the trained samples' mean (0), bias-corrected: 0
    assert objective.baseline.lookup(["user"]) == pytest.approx([0.0])


# --------------------------------------------------------------------------------------------- bf16 critic


def test_a_bf16_model_trains_a_ppo_step_under_32_true(tmp_path):
    from hydra.utils import instantiate

    cfg = make_cfg([*TINY, "algo=ppo", "model.dtype=bfloat16"], tmp_path)
    policy = instantiate(cfg.model)
    assert next(policy.model.parameters()).dtype == torch.bfloat16
    module = ClawModule.from_cfg(cfg, policy.model)
    torch.nn.init.normal_(module.value_head.weight, std=0.1)  # a zero head reads nothing of the trunk
    head = module.value_head.weight.detach().clone()
    batch = _batch(policy.tokenizer, [3, 4, 2, 5], rewards=[1.0, -1.0, 1.0, -1.0], groups=[0, 0, 1, 1])
    logged, steps = _fit(module, batch, precision="32-true")
    assert steps == cfg.algo.ppo_epochs * cfg.algo.minibatches
    assert math.isfinite(logged["train/value_loss"]) and math.isfinite(logged["train/loss"])
    assert not torch.equal(head, module.value_head.weight.detach())  # the critic learned


# --------------------------------------------------------------------------------------------- credit and weights


@settings(max_examples=40, deadline=None)
@given(
    gaps=st.lists(st.lists(st.floats(-6, 6), min_size=6, max_size=6), min_size=3, max_size=3),
    lengths=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    cap=st.floats(1.0, 5.0),
    scale=st.floats(0.1, 3.0),
)
def test_credit_never_exceeds_its_cap_and_keeps_each_turns_sum(gaps, lengths, cap, scale):
    mask = torch.tensor([[1.0] * n + [0.0] * (6 - n) for n in lengths])
    inputs = AdvantageInputs(
        response_mask=mask,
        rewards=torch.tensor([1.0, -1.0, 1.0]),
        group_index=torch.arange(3),
        baseline=torch.zeros(3),
        old_logprobs=torch.full((3, 6), -1.0),
        teacher_logprobs=torch.tensor(gaps) - 1.0,
        teacher_mask=torch.ones(3),
        finished=torch.ones(3),
    )
    adv = ADVANTAGES.get("combine")(inputs, role="credit", credit_scale=scale, credit_cap=cap).advantages
    credit = adv.abs()  # A_rl = ±1 on every token
    assert float(credit.max()) <= cap + 1e-5
    assert credit.sum(-1).tolist() == pytest.approx(mask.sum(-1).tolist(), abs=1e-4)  # Σ_t A_rl · c_t = Σ_t A_rl
    ends = end_of_turn_tokens(mask, inputs.finished) > 0
    assert credit[ends].tolist() == pytest.approx([1.0] * int(ends.sum()))  # when to stop stays the reward's


def _gap_inputs() -> AdvantageInputs:
    # one hinted 3-token sample, gaps (teacher − old) = [0.5, −1, 2]; its reward is absent (mode=opd judges none)
    return AdvantageInputs(
        response_mask=torch.ones(1, 3),
        rewards=torch.zeros(1),
        group_index=torch.zeros(1, dtype=torch.long),
        reward_mask=torch.zeros(1),
        old_logprobs=torch.tensor([[-1.5, -1.0, -3.0]]),
        teacher_logprobs=torch.tensor([[-1.0, -2.0, -1.0]]),
        teacher_mask=torch.ones(1),
        values=torch.zeros(1, 3),
    )


def test_w_opd_weighs_the_opd_term_the_same_under_every_algo():
    # mode=opd, w_opd = 0.5: critic-free, A = 0.5 · gap = [0.25, −0.5, 1]; algo=ppo with γ = 0, no whitening and
    # V = 0, GAE's A_t = r_t − V_t with r_t = 0.5 · gap_t: the same [0.25, −0.5, 1]. (w_opd was not read
    # critic-free: A = gap = [0.5, −1, 2].)
    expected = [0.25, -0.5, 1.0]
    for algo in (["algo=grpo"], ["algo=rloo"], ["algo=ppo", "algo.gamma=0", "algo.whiten_advantages=false"]):
        obj = objective_from_cfg(make_cfg(["mode=opd", "mode.w_opd=0.5", *algo]))
        adv = ADVANTAGES.get(obj.advantage)(_gap_inputs(), **obj.advantage_kwargs).advantages
        assert adv[0].tolist() == pytest.approx(expected), algo


def test_w_rl_weighs_the_reward_term_the_same_under_every_algo():
    # mode=rl, w_rl = 0.5, one group of two with rewards +1, −1: dr_grpo's A = r − mean = ±1, times 0.5 = ±0.5 on
    # every token. Under algo=ppo (γ = 0, no whitening, V = 0) the last token's reward is 0.5 · r, the rest 0.
    inputs = AdvantageInputs(
        response_mask=torch.ones(2, 2),
        rewards=torch.tensor([1.0, -1.0]),
        group_index=torch.zeros(2, dtype=torch.long),
        values=torch.zeros(2, 2),
    )
    obj = objective_from_cfg(make_cfg(["mode=rl", "mode.w_rl=0.5", "algo=dr_grpo"]))
    adv = ADVANTAGES.get(obj.advantage)(inputs, **obj.advantage_kwargs).advantages
    assert adv.flatten().tolist() == pytest.approx([0.5, 0.5, -0.5, -0.5])
    obj = objective_from_cfg(
        make_cfg(["mode=rl", "mode.w_rl=0.5", "algo=ppo", "algo.gamma=0", "algo.whiten_advantages=false"])
    )
    adv = ADVANTAGES.get(obj.advantage)(inputs, **obj.advantage_kwargs).advantages
    assert adv.flatten().tolist() == pytest.approx([0.0, 0.5, 0.0, -0.5])
    assert objective_from_cfg(make_cfg(["mode=rl", "algo=grpo"])).advantage == "grpo"  # weight 1: the estimator


# --------------------------------------------------------------------------------------------- warnings


def test_a_warning_raised_in_claw_fails_the_tests():
    # pyproject.toml turns every warning whose origin is a claw module into an error; third parties' are filtered
    # one by one there, each with its reason
    with pytest.raises(UserWarning, match="from claw"):
        warnings.warn_explicit("from claw", UserWarning, "claw/objective.py", 1, module="claw.objective")
