"""Rows that cannot move the loss are not forwarded (`Objective.rows_that_move`, `optim.skip_still_rows`): a GRPO
group whose samples all got the same reward has A = 0 on every token, and without a KL, entropy or critic term its
rows add exactly nothing to the update. Skipping them gives the same gradients and the same optimizer step."""

from __future__ import annotations

import copy

import pytest
import torch

from claw.module import ClawModule
from claw.objective import Objective, ObjectiveConfig
from claw.types import Sample, collate


def _batch(tok, rewards=((1, 1, 1, 1), (0, 1, 0, 0), (0, 0, 0, 0))):
    """Three GRPO groups of four: all right, one right, all wrong. Only the middle group has an advantage."""
    torch.manual_seed(0)
    samples = []
    for g, group in enumerate(rewards):
        prompt = tok.encode(f"question {g}")
        for k, r in enumerate(group):
            resp = torch.randint(5, 1000, (4 + 3 * k,)).tolist()
            samples.append(Sample(prompt, resp, [-2.0] * len(resp), 1.0, 0, reward=float(r), group_id=str(g)))
    return collate(samples, tok.pad_token_id)


def test_rows_that_move_are_those_with_an_advantage_unless_a_term_reads_every_row(tiny_policy):
    batch = _batch(tiny_policy.tokenizer)
    objective = Objective(ObjectiveConfig())
    adv = objective.advantages(batch, None)
    assert objective.rows_that_move(batch, adv).tolist() == [False] * 4 + [True] * 4 + [False] * 4
    for extra in ({"kl_coef": 0.1}, {"entropy_coef": 0.01}):
        every = Objective(ObjectiveConfig(**extra))
        assert every.rows_that_move(batch, every.advantages(batch, None)).all(), extra


def _one_step(policy, batch, skip: bool, weight_decay: float = 1.0):
    module = ClawModule(
        copy.deepcopy(policy.model),
        Objective(ObjectiveConfig()),
        lr=1e-3,
        weight_decay=weight_decay,
        micro_batch_size=3,
        skip_still_rows=skip,
    )
    rows = []
    module.model.register_forward_pre_hook(lambda m, a, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True)
    opt = torch.optim.AdamW(module.model.parameters(), lr=1e-3, weight_decay=weight_decay)
    adv = module.objective.advantages(batch, None)
    moves = module.objective.rows_that_move(batch, adv) if skip else None
    module.accumulate(batch, torch.arange(batch.size), None, adv, moves=moves)
    grads = {n: p.grad.clone() for n, p in module.model.named_parameters() if p.grad is not None}
    opt.step()
    return grads, dict(module.model.named_parameters()), sum(rows)


@pytest.mark.parametrize("rewards", [((1, 1, 1, 1), (0, 1, 0, 0), (0, 0, 0, 0)), ((1, 1, 1, 1), (0, 0, 0, 0))])
def test_skipping_still_rows_gives_the_same_update(tiny_policy, rewards):
    batch = _batch(tiny_policy.tokenizer, rewards)
    g_all, p_all, rows_all = _one_step(tiny_policy, batch, skip=False)
    g_skip, p_skip, rows_skip = _one_step(tiny_policy, batch, skip=True)
    assert rows_all == batch.size
    moving = sum(1 for group in rewards if len(set(group)) > 1) * 4
    assert rows_skip == max(moving, 1)  # nothing moves: one zero-weighted row keeps the step (and its metrics)
    assert g_skip.keys() == g_all.keys()
    for name, g in g_all.items():
        torch.testing.assert_close(g_skip[name], g, atol=1e-7, rtol=1e-5, msg=name)
    # weight decay and the moments step alike (a step without gradients would skip the decay: 1e-3 × |p|); Adam's
    # g / (|g| + ε) turns the summation order's last bits in gradients near ε into differences below 1e-6
    for name, p in p_all.items():
        torch.testing.assert_close(p_skip[name], p, atol=1e-6, rtol=1e-5, msg=name)
