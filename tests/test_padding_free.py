"""Micro-batches run without their padding-only response columns (claw/updates.py `padding_free`, `crop`): the outputs
and the update are those of the padded batch, and a micro-batch of short replies runs on fewer columns."""

from __future__ import annotations

import copy

import torch

from claw.module import ClawModule
from claw.objective import Objective, ObjectiveConfig
from claw.types import Sample, collate
from claw.updates import crop, padding_free


def _batch(tok, lengths=((2, 40), (9, 3), (5, 12), (3, 6), (9, 1), (4, 25))):
    """Rows of (prompt length, response length) far apart, so most of each row is padding."""
    torch.manual_seed(0)
    samples = [
        Sample(
            torch.randint(5, 1000, (p,)).tolist(),
            torch.randint(5, 1000, (r,)).tolist(),
            [-2.0] * r,
            temperature=0.9,
            policy_version=0,
            reward=float(k % 2),
            group_id=str(k // 2),
        )
        for k, (p, r) in enumerate(lengths)
    ]
    return collate(samples, tok.pad_token_id)


def test_padding_free_finds_the_real_columns(tiny_policy):
    batch = _batch(tiny_policy.tokenizer)
    assert (batch.prompt_len, batch.response_mask.shape[1]) == (9, 40)
    short = batch.select(torch.tensor([1, 4]))  # responses of 3 and 1
    assert padding_free(short) == 3
    assert padding_free(batch.select(torch.tensor([0, 3]))) == 40
    cut = crop(short, padding_free(short))
    assert cut.input_ids.shape == (2, 12) and cut.prompt_len == 9 and cut.response_mask.shape == (2, 3)
    assert torch.equal(cut.response_ids[0], short.response_ids[0, :3])


def test_outputs_are_those_of_the_padded_batch(tiny_policy):
    """The cropped forward gives each real token the log-prob the full-width forward gives it."""
    from claw.logprobs import token_logprobs

    batch = _batch(tiny_policy.tokenizer)
    module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(ObjectiveConfig()))
    module.model.eval()
    for rows in ([1, 4], [2, 3]):  # responses of 3 and 1, of 12 and 6, in a batch 40 wide
        part = batch.select(torch.tensor(rows))
        assert padding_free(part) < 40
        with torch.no_grad():
            out = module.policy_outputs(part)
            logits, _ = module._forward(module.model, part, with_values=False)  # the padded rows, uncropped
        full = token_logprobs(logits, part.response_ids, part.temperature)
        mask = part.response_mask.bool()
        assert out.logprobs.shape == full.shape == (2, 40)
        torch.testing.assert_close(out.logprobs[mask], full[mask], atol=1e-5, rtol=1e-5)


def test_micro_batches_of_short_rows_run_on_fewer_columns_and_the_gradient_holds(tiny_policy):
    batch = _batch(tiny_policy.tokenizer)
    widths, grads = {}, {}
    for size in (2, 6):
        module = ClawModule(copy.deepcopy(tiny_policy.model), Objective(ObjectiveConfig()), micro_batch_size=size)
        seen = widths.setdefault(size, [])
        module.model.register_forward_pre_hook(
            lambda m, a, kw, seen=seen: seen.append(kw["input_ids"].shape[1]), with_kwargs=True
        )
        old = module.old_outputs(batch)
        adv = module.objective.advantages(batch, old)
        seen.clear()  # the training forwards only
        module.accumulate(batch, torch.arange(batch.size), old, adv)
        grads[size] = {n: p.grad.clone() for n, p in module.model.named_parameters() if p.grad is not None}
    # longest replies first (40, 25, 12, 6, 3, 1): micro-batches [0, 5], [2, 3], [1, 4], each as wide as the batch's
    # prompts and its own longest reply
    assert widths[2] == [9 + 40, 9 + 12, 9 + 3], widths
    assert widths[6] == [9 + 40]
    for name, g in grads[6].items():
        torch.testing.assert_close(grads[2][name], g, atol=1e-6, rtol=1e-4, msg=name)
