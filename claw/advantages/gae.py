"""`gae`: token-level generalised advantage estimation with a critic (Schulman et al. 2016,
https://arxiv.org/abs/1506.02438), for `algo=ppo`.

Token rewards r_t = w_opd · (log π_T − log π_old)_t  [OPD gap, when a hint was accepted]
                  + w_rl · R · 1[t = last trainable token]   [scalar reward, when present]
δ_t = r_t + γ V_{t+1} − V_t,   A_t = δ_t + γλ A_{t+1},   returns_t = A_t + V_t.

Masked tokens (observation / tool-output tokens inside a multi-turn sample, and padding) are
skipped: the recursion runs over trainable tokens only, so their values never enter (V_{t+1} is the
value at the *next trainable* token). After the last token V = 0: every claw sample is one agent
turn whose reward was observed *after* the turn ended (the user's reply, the verifier), so the turn
is a terminal episode for the critic — also when the response was cut at `max_new_tokens`, since its
reward judges the cut response. (Bootstrapping from V there would count the future twice; an earlier
`truncated` option that no source ever set was removed for that reason.)

`whiten` (default on in `algo=ppo`): A ← (A − mean) / (std + ε) over the batch's trainable tokens,
after the returns are formed — as in PPO's reference implementations, so the policy's step size does
not follow the scale of the token rewards; the critic's targets are unaffected.
With γ = 0 and no scalar reward the advantage is r_t − V_t: the plain OPD gap minus the critic's baseline.
"""

from __future__ import annotations

import torch

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult
from claw.advantages.opd import opd_gap


@ADVANTAGES.register("gae", reads_policy=True)
def gae(
    inputs: AdvantageInputs,
    gamma: float = 1.0,
    lam: float = 0.95,
    w_rl: float = 1.0,
    w_opd: float = 0.0,
    whiten: bool = False,
    eps: float = 1e-8,
) -> AdvantageResult:
    if inputs.values is None:
        raise ValueError("gae needs critic values: use algo=ppo (it has a value head)")
    mask = inputs.response_mask.float()
    values = inputs.values.float() * mask
    B, T = mask.shape
    # Scalar reward on the last trainable token of each sample.
    positions = torch.arange(T, device=mask.device).expand(B, T)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(dim=1).values  # [B]
    token_rewards = w_opd * opd_gap(inputs).float() if w_opd else torch.zeros_like(mask)
    scalar = w_rl * inputs.rewards.float() * inputs.reward_present()
    token_rewards = token_rewards + scalar.unsqueeze(-1) * (positions == last.unsqueeze(-1)).float()

    next_value = mask.new_zeros(B)  # V after the last token: 0 (terminal turn)
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
    if whiten:
        n = mask.sum().clamp(min=1.0)
        mean = (adv * mask).sum() / n
        std = (((adv - mean) * mask) ** 2).sum().div(n).sqrt()
        adv = (adv - mean) / (std + eps) * mask  # A ← (A − mean) / (std + ε) on trainable tokens
    return AdvantageResult(advantages=adv, returns=returns)
