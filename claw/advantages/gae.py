"""`gae`: token-level generalised advantage estimation with a critic (Schulman et al. 2016,
https://arxiv.org/abs/1506.02438), for `algo=ppo`.

Token rewards r_t = w_opd · (log π_T − log π_old)_t  [OPD gap, when a hint was accepted]
                  + w_rl · R · 1[t = last trainable token]   [scalar reward, when present]
δ_t = r_t + γ V_{t+1} − V_t,   A_t = δ_t + γλ A_{t+1},   returns_t = A_t + V_t.

Masked tokens (observation / tool-output tokens inside a multi-turn sample, and padding) are
skipped: the recursion runs over trainable tokens only, so their values never enter (V_{t+1} is the
value at the *next trainable* token). After the last token, V = 0 for a terminal sample (the session
really ended) and V = `bootstrap_values` for a truncated one (turn limit, idle timeout).
With γ = 0 and no scalar reward the advantage is r_t − V_t: the plain OPD gap minus the critic's baseline.
"""

from __future__ import annotations

import torch

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult
from claw.advantages.opd import opd_gap


@ADVANTAGES.register("gae", reads_policy=True)
def gae(inputs: AdvantageInputs, gamma: float = 1.0, lam: float = 0.95, w_rl: float = 1.0, w_opd: float = 0.0) -> AdvantageResult:
    if inputs.values is None:
        raise ValueError("gae needs critic values: use algo=ppo (it has a value head)")
    mask = inputs.response_mask.float()
    values = inputs.values.float() * mask
    B, T = mask.shape
    # Scalar reward on the last trainable token of each sample.
    positions = torch.arange(T, device=mask.device).expand(B, T)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(dim=1).values  # [B]
    token_rewards = w_opd * opd_gap(inputs) if w_opd else torch.zeros_like(mask)
    has_last = last >= 0
    scalar = w_rl * inputs.rewards.float() * inputs.reward_present()
    token_rewards[has_last, last[has_last]] += scalar[has_last]

    next_value = torch.zeros(B, dtype=mask.dtype, device=mask.device)
    if inputs.truncated is not None and inputs.bootstrap_values is not None:
        next_value = torch.where(inputs.truncated.bool(), inputs.bootstrap_values.float(), next_value)
    next_adv = torch.zeros_like(next_value)
    adv = torch.zeros_like(mask)
    for t in reversed(range(T)):
        m = mask[:, t]
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]
        a = delta + gamma * lam * next_adv
        adv[:, t] = a * m
        # Masked tokens pass the next trainable token's value and advantage through unchanged.
        next_value = torch.where(m > 0, values[:, t], next_value)
        next_adv = torch.where(m > 0, a, next_adv)
    returns = (adv + values) * mask
    return AdvantageResult(advantages=adv, returns=returns)
