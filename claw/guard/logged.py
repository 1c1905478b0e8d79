"""The logged judged turns the guard evaluates on: the newest ones in the run's sample store.

The store (`<run dir>/samples.jsonl`, claw/rollout/store.py) is append-only and grows for the
whole run, so it is read backwards in blocks until `limit` matching turns are found: the cost of a
decision does not grow with the run. A torn last line (a writer mid-append) is skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from claw.logprobs import response_logits, token_logprobs
from claw.types import Sample, collate


def lines_backwards(path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """Complete lines of a file, last first."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        pos = f.seek(0, os.SEEK_END)
        while pos > 0:  # the complete part ends at the last newline; anything after it is torn
            step = min(block, pos)
            f.seek(pos - step)
            k = f.read(step).rfind(b"\n")
            if k >= 0:
                end = pos - step + k + 1
                break
            pos -= step
        else:
            return  # no complete line
        pos, tail = end, b""
        while pos > 0:
            step = min(block, pos)
            pos -= step
            f.seek(pos)
            lines = (f.read(step) + tail).split(b"\n")
            tail = lines[0]  # may continue in the previous block
            yield from reversed([line for line in lines[1:] if line])
        if tail:
            yield tail


def recent_judged(store: Path, keep: Callable[[Sample], bool], limit: int) -> list[Sample]:
    """Up to `limit` newest samples that have a reward, a sampled (T > 0) response and pass `keep`; oldest first."""
    out: list[Sample] = []
    for line in lines_backwards(store):
        s = Sample.from_json(json.loads(line))
        if s.reward is not None and s.temperature > 0 and s.response_ids and keep(s):
            out.append(s)
            if len(out) >= limit:
                break
    return out[::-1]


@torch.no_grad()
def candidate_logprobs(
    model: torch.nn.Module, samples: list[Sample], pad_id: int, micro_batch_size: int, device
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Teacher-force the logged responses through `model` at each sample's temperature.

    Returns candidate [N, T], behaviour [N, T] (the stored rollout log-probs), mask [N, T] (loss
    mask) and rewards [N]."""
    cand, beh, mask = [], [], []
    was_training = model.training
    model.eval()
    try:
        for i in range(0, len(samples), micro_batch_size):
            b = collate(samples[i : i + micro_batch_size], pad_id).to(device)
            lp = token_logprobs(
                response_logits(model, b.input_ids, b.attention_mask, b.prompt_len), b.response_ids, b.temperature
            )
            for row in range(b.size):
                t = len(samples[i + row].response_ids)
                cand.append(lp[row, :t].cpu())
                beh.append(b.rollout_logprobs[row, :t].cpu())
                mask.append(b.response_mask[row, :t].cpu())
    finally:
        model.train(was_training)
    rewards = torch.tensor([float(s.reward) for s in samples])  # type: ignore[arg-type]
    return (
        pad_sequence(cand, batch_first=True),
        pad_sequence(beh, batch_first=True),
        pad_sequence(mask, batch_first=True),
        rewards,
    )
