"""Hindsight-guided on-policy distillation and its combination with scalar RL.

- `opd`:     A_t = w_opd · (log π_teacher(a_t | s + hint) − log π_old(a_t | s))   (per token; 0 without a hint)
             The policy, shown the hint, is the teacher; the gap is a per-token reverse-KL policy gradient
             towards it on tokens the student sampled (Agarwal et al. 2024, https://arxiv.org/abs/2306.13649).
             With `mode.hint_contrast` the teacher's log-probs are the guided teacher's (claw/judge/teacher.py);
             the gap here is the same.
- `combine`: A_t = w_rl · A_rl + w_opd · A_opd — one sample per turn; A_rl from any scalar estimator
             (`rl_estimator`, default the running `baseline`), 0 when the sample has no reward signal;
             A_opd = 0 when no hint was accepted (`role="term"`, the default: the gap is a second term).
             `role="credit"`: A_t = w_rl · A_rl · c_t — the reward decides how much a turn is pushed and in
             which direction; the hinted teacher decides only *where* in the turn it lands (`opd_credit`).

`center` (mode.opd_center, off by default): subtract the batch's mean gap over hinted tokens. The
gap's expectation under the student is −KL(π_θ ‖ π_teacher) ≤ 0 at every position, so uncentred it
pushes down *every* sampled token a little (measured on the main job: mean A_opd −0.10 … −0.19 per
token in every batch) — with one sample per position that constant is variance, not signal, and in
small batches it drifts the policy as a biased reward baseline does. The mean is a baseline: it
leaves the expected gradient unchanged (up to the sample's own share of the mean).

`skip_end` (mode.opd_skip_end): the gap trains nothing on end-of-turn tokens, so when to stop is left to
the reward. The teacher sees the hint and the student does not, and where the student ended its reply the
hinted teacher would rather go on: on the personal-agent runs the gap on the end-of-turn token averages
−0.26 … −2.65 against −0.16 … −0.24 on the other tokens (below them in 44 of 50 runs, 2–11× as far) — per
token, the OPD term is a push against stopping. Off by default: removing the push kept the trained replies
shorter but rated lower on all three single-seed screens (experiments/personal_agent/log.md, 2026-12-01).

`skip_start` (mode.opd_skip_start = k): the gap trains nothing on the first k tokens of each turn, so how a reply
opens is left to the reward. Shown a complaint, the 135M model mostly wants to change how its reply *starts*
(to "You're right, …"): with `mode.teacher=current` the hint's own effect on the gap is −0.60 on token 1, −0.35 on
token 2, −0.18 on tokens 3–5 and −0.09 after (`experiments/personal_agent/gap_by_position.py`, 2026-12-03) —
the concession the apology drift is made of. 0 (the default) skips nothing.
"""

from __future__ import annotations

import torch
from torch import Tensor

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult


def end_of_turn_tokens(response_mask: Tensor, finished: Tensor | None) -> Tensor:
    """[B, T] 1 on the tokens that end a turn: the last trainable token of every segment of the response that
    an observation (a user's or a tool's tokens) follows, and of the last segment when the reply `finished`
    (a reply cut at the budget has no end-of-turn token). `finished` None: every reply counts as finished."""
    mask = (response_mask > 0).to(response_mask.dtype)
    after = torch.cat([mask[:, 1:], mask.new_zeros(mask.shape[0], 1)], dim=1)
    ends = mask * (1 - after)  # the last token of each run of trainable tokens
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = (positions == (positions * mask).amax(dim=1, keepdim=True)).to(mask.dtype) * ends
    if finished is not None:
        ends = ends - last * (1 - finished.to(mask.dtype)).unsqueeze(-1)
    return ends


def opening_tokens(response_mask: Tensor, k: int) -> Tensor:
    """[B, T] 1 on the first `k` trainable tokens of every segment of the response (each run of trainable tokens:
    a turn's reply, in a multi-turn sample one per assistant turn)."""
    mask = (response_mask > 0).to(response_mask.dtype)
    count = mask.cumsum(dim=1)  # trainable tokens so far
    before_run = (count * (1 - mask)).cummax(dim=1).values  # the count at the last non-trainable position
    return mask * ((count - before_run) <= k).to(mask.dtype)


def opd_gap(inputs: AdvantageInputs, center: bool = False, skip_end: bool = False, skip_start: int = 0):
    """[B, T] (teacher − old) · mask, zero for samples without an accepted hint; `center`: minus the
    mean gap over the batch's hinted trainable tokens; `skip_end`: zero on end-of-turn tokens; `skip_start`:
    zero on the first `skip_start` tokens of each turn."""
    if inputs.teacher_logprobs is None or inputs.old_logprobs is None:
        return inputs.response_mask.new_zeros(inputs.response_mask.shape)
    gap = inputs.teacher_logprobs - inputs.old_logprobs  # log π_T(a_t | s + hint) − log π_old(a_t | s)
    hinted = inputs.response_mask
    if inputs.teacher_mask is not None:
        hinted = hinted * inputs.teacher_mask.to(hinted.dtype).unsqueeze(-1)
    if skip_end:
        hinted = hinted * (1 - end_of_turn_tokens(inputs.response_mask, inputs.finished))
    if skip_start > 0:
        hinted = hinted * (1 - opening_tokens(inputs.response_mask, skip_start))
    if center:
        gap = gap - (gap * hinted).sum() / hinted.sum().clamp(min=1.0)  # a baseline: E[gap] = −KL ≤ 0
    return gap * hinted


def opd_credit(inputs: AdvantageInputs, a_rl: Tensor, scale: float = 1.0, cap: float = 4.0) -> tuple[Tensor, Tensor]:
    """([B, T] per-token credit c_t, [B] 1 where it is shaped): how a turn's scalar advantage is spread over its
    tokens. The mean of c_t over a sample's trainable tokens is 1, so Σ_t A_rl · c_t = Σ_t A_rl: the turn as a
    whole is pushed exactly as the reward says, never more, never the other way.

    On a sample with an accepted hint and A_rl ≠ 0, c_t = n · softmax_t(sign(A_rl) · scale · gap_t) over its n
    trainable tokens: a turn the reward pushes down is pushed down hardest on the tokens the hinted teacher
    likes least (gap = log π_T(a_t | s + hint) − log π_old(a_t | s)); one it pushes up, hardest on those the
    teacher likes most. The softmax is shift-invariant, so the gap's −KL offset (every token a little below
    0) cancels by itself. No c_t exceeds `cap` (a token the teacher finds absurd must not carry the whole turn):
    what the capped tokens lose goes to the others in proportion to their shares (`capped_shares`), so the
    mean stays 1 and the cap holds exactly (cap ≥ 1, checked by `Mode`). End-of-turn tokens keep c_t = 1: the
    hinted teacher
    would rather go on wherever the student stopped (2–11× the gap of other tokens on the personal-agent
    runs), a bias of seeing the hint, not a reading of the reply; when to stop stays the reward's.
    Everywhere else (no hint, A_rl = 0, `scale` 0) c_t = 1: plain RL."""
    mask = (inputs.response_mask > 0).to(a_rl.dtype)
    ones = mask.clone()
    if inputs.teacher_logprobs is None or inputs.old_logprobs is None or scale == 0:
        return ones, mask.new_zeros(mask.shape[0])
    a_turn = (a_rl * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # the scalar estimators broadcast one value
    hinted = mask.new_ones(mask.shape[0]) if inputs.teacher_mask is None else inputs.teacher_mask.to(mask.dtype)
    shaped = hinted * (a_turn != 0).to(mask.dtype) * (mask.sum(-1) > 0).to(mask.dtype)
    ends = end_of_turn_tokens(inputs.response_mask, inputs.finished)
    inner = mask * (1 - ends)  # the tokens the teacher's reading spreads over
    gap = inputs.teacher_logprobs - inputs.old_logprobs
    z = torch.sign(a_turn).unsqueeze(-1) * scale * gap
    z = z.masked_fill(inner == 0, float("-inf"))
    share = torch.softmax(z, dim=-1).nan_to_num(0.0)  # over the inner tokens (rows without any: 0)
    credit = torch.where(inner > 0, capped_shares(share, inner.sum(-1, keepdim=True), cap), ones)
    credit = torch.where(shaped.unsqueeze(-1) > 0, credit, ones)
    return credit, shaped


def capped_shares(p: Tensor, n: Tensor, cap: float) -> Tensor:
    """[B, T] c_t = min(cap, s · p_t), with the one s per row that makes Σ_t c_t = n: `n` [B, 1] tokens' worth of
    credit spread in proportion to the shares `p` [B, T] (≥ 0, each row summing to 1), no token above `cap`
    (water-filling; without the cap, c_t = n · p_t).

    Sort each row's shares p_(0) ≥ p_(1) ≥ …; with the k largest capped, Σ c = k · cap + s · P_k where
    P_k = Σ_{j ≥ k} p_(j), so s_k = (n − k · cap) / P_k. The k that holds is the smallest with s_k · p_(k) ≤ cap
    (the largest uncapped token fits), i.e. p_(k) · (n − k · cap) ≤ cap · P_k — monotone in k, no division, and
    branch-free (no host sync). A row whose nonzero shares cannot hold n even all at the cap (shares that
    underflowed to 0) gets `cap` on each of them and sums below n."""
    sorted_p = p.sort(dim=-1, descending=True).values
    tail = sorted_p.flip(-1).cumsum(-1).flip(-1)  # P_k
    k = torch.arange(p.shape[-1], device=p.device, dtype=p.dtype).expand_as(p)
    fits = sorted_p * (n - k * cap) <= cap * tail
    first = fits.to(torch.uint8).argmax(dim=-1, keepdim=True)  # the first k that fits (argmax: the first maximum)
    s = (n - first.to(p.dtype) * cap) / tail.gather(-1, first)
    return torch.where(p > 0, torch.minimum(s * p, p.new_full((), cap)), p.new_zeros(()))


def teacher_agreement(inputs: AdvantageInputs):
    """Does the hinted teacher prefer what the user prefers? A 0-dim tensor, or None when unmeasurable.

    Over the batch's samples that carry both an accepted hint and a reward: the Pearson correlation of
    each sample's mean teacher-student gap (how much more the teacher likes the reply than the policy
    does) with its reward. Near +1: the replies the teacher favours are the ones the user complained
    about least, so the OPD term pushes where the reward does. Near 0 or below: the hint does not make the
    policy a better judge of its replies, and the OPD term is noise or worse. None with fewer than three
    such samples or no spread in either. A diagnostic read back from a run's samples
    (`experiments/personal_agent/teacher_agreement.py`), not a training metric: it branches on the data,
    which the objective must not (it runs on any device without a sync). One batch's correlation is noisy:
    on the personal-agent runs (8 samples a batch) the run means lie within ±0.35 on every persona, the
    student's included, where the OPD term helps (experiments/personal_agent/log.md, 2026-12-01).
    """
    if inputs.teacher_logprobs is None or inputs.old_logprobs is None or inputs.teacher_mask is None:
        return None
    mask = inputs.response_mask
    n_tokens = mask.sum(-1)
    keep = (inputs.teacher_mask > 0) & (inputs.reward_present() > 0) & (n_tokens > 0)
    if int(keep.sum()) < 3:
        return None
    gap = ((inputs.teacher_logprobs - inputs.old_logprobs) * mask).sum(-1)[keep] / n_tokens[keep]
    reward = inputs.rewards[keep].to(gap.dtype)
    gap, reward = gap - gap.mean(), reward - reward.mean()
    denom = gap.norm() * reward.norm()
    if float(denom) <= 1e-12:
        return None
    return (gap * reward).sum() / denom


@ADVANTAGES.register("opd", reads_policy=True)
def opd(
    inputs: AdvantageInputs, w_opd: float = 1.0, center: bool = False, skip_end: bool = False, skip_start: int = 0
) -> AdvantageResult:
    """A_t = w_opd · gap_t: the OPD term alone, weighed as in `combine` and in GAE's token rewards."""
    return AdvantageResult(advantages=w_opd * opd_gap(inputs, center, skip_end, skip_start))


@ADVANTAGES.register("combine", reads_policy=True)
def combine(
    inputs: AdvantageInputs,
    w_rl: float = 1.0,
    w_opd: float = 1.0,
    rl_estimator: str = "baseline",
    rl_kwargs: dict | None = None,
    opd_center: bool = False,
    opd_skip_end: bool = False,
    opd_skip_start: int = 0,
    role: str = "term",
    credit_scale: float = 1.0,
    credit_cap: float = 4.0,
) -> AdvantageResult:
    a_rl = ADVANTAGES.get(rl_estimator)(inputs, **(rl_kwargs or {})).advantages
    if role == "credit":
        credit, shaped = opd_credit(inputs, a_rl, credit_scale, credit_cap)
        adv = w_rl * a_rl * credit
        mask = inputs.response_mask
        spread = ((credit - 1).abs() * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        return AdvantageResult(
            advantages=adv,
            metrics={
                "adv_rl_mean": _masked_mean(w_rl * a_rl, inputs),
                "credit_shaped_frac": shaped.mean(),  # samples whose reward the teacher spread
                "credit_spread": (spread * shaped).sum() / shaped.sum().clamp(min=1.0),  # mean |c_t − 1| there
            },
        )
    if role != "term":
        raise ValueError(f"combine role={role!r} is unknown; use term or credit")
    a_opd = opd_gap(inputs, opd_center, opd_skip_end, opd_skip_start)
    adv = w_rl * a_rl + w_opd * a_opd
    return AdvantageResult(
        advantages=adv,
        metrics={
            "adv_rl_mean": _masked_mean(w_rl * a_rl, inputs),
            "adv_opd_mean": _masked_mean(w_opd * a_opd, inputs),
        },
    )


def _masked_mean(x, inputs: AdvantageInputs):
    m = inputs.response_mask
    return (x * m).sum() / m.sum().clamp(min=1.0)
