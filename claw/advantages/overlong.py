"""Ending a turn: what a reply cut at the token budget is worth (DAPO's overlong shaping, Yu et al. 2025).

A reply the engine cut at `max_new_tokens` has no end-of-turn token. When the judge's rewards barely
separate a cut reply from a finished one — a user who never approves makes every reward negative —
negative advantages on finished replies push their end-of-turn token down while nothing pushes it
up, and greedy replies drift into repetition until they are cut (experiments/personal_agent/log.md,
the teacher persona). `algo.overlong` makes ending within the budget part of the signal:

    | mode      | reward of a cut reply | its tokens train |
    |-----------|-----------------------|------------------|
    | `none`    | r                     | yes              |
    | `penalty` | r − penalty           | yes              |
    | `mask`    | none                  | no               |

`penalty` is DAPO's overlong punishment at its simplest (a fixed cost instead of a ramp over the last
tokens of the budget); `mask` is DAPO's overlong filtering: a cut reply is dropped from the objective,
its reward feeds no group mean or baseline and its teacher gap trains nothing. A cut reply without a
reward (nothing judged) is left alone by `penalty`. Pure: the caller's tensors are not modified.
"""

from __future__ import annotations

from torch import Tensor

OVERLONG_MODES = ("none", "penalty", "mask")


def shape_overlong(
    rewards: Tensor,  # [B]
    reward_mask: Tensor,  # [B] 1 = the sample has a reward
    response_mask: Tensor,  # [B, T]
    finished: Tensor,  # [B] 1 = the reply ended on a stop token, 0 = cut at the token budget
    mode: str = "none",
    penalty: float = 0.0,
) -> tuple[Tensor, Tensor, Tensor]:
    """(rewards, reward_mask, response_mask) with cut replies shaped as `mode` says."""
    if mode not in OVERLONG_MODES:
        raise ValueError(f"algo.overlong.mode must be one of {OVERLONG_MODES} (got {mode!r})")
    cut = 1.0 - finished.to(rewards.dtype)
    if mode == "penalty":
        return rewards - penalty * cut * reward_mask.to(rewards.dtype), reward_mask, response_mask
    if mode == "mask":
        keep = 1.0 - cut
        return rewards * keep, reward_mask * keep.to(reward_mask.dtype), response_mask * keep.unsqueeze(-1)
    return rewards, reward_mask, response_mask
