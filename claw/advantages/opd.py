"""Hindsight-guided on-policy distillation and its combination with scalar RL.

- `opd`:     A_t = log π_teacher(a_t | s + hint) − log π_old(a_t | s)   (per token; 0 without an accepted hint)
             The policy, shown the hint, is the teacher; the gap is a per-token reverse-KL policy gradient
             towards it on tokens the student sampled (Agarwal et al. 2024, https://arxiv.org/abs/2306.13649).
- `combine`: A_t = w_rl · A_rl + w_opd · A_opd — one sample per turn; A_rl from any scalar estimator
             (`rl_estimator`, default the running `baseline`), 0 when the sample has no reward signal;
             A_opd = 0 when no hint was accepted.
"""

from __future__ import annotations

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult


def opd_gap(inputs: AdvantageInputs):
    """[B, T] (teacher − old) · mask, zero for samples without an accepted hint."""
    if inputs.teacher_logprobs is None or inputs.old_logprobs is None:
        return inputs.response_mask.new_zeros(inputs.response_mask.shape)
    gap = inputs.teacher_logprobs - inputs.old_logprobs  # log π_T(a_t | s + hint) − log π_old(a_t | s)
    if inputs.teacher_mask is not None:
        gap = gap * inputs.teacher_mask.float().unsqueeze(-1)
    return gap * inputs.response_mask


@ADVANTAGES.register("opd", reads_policy=True)
def opd(inputs: AdvantageInputs) -> AdvantageResult:
    return AdvantageResult(advantages=opd_gap(inputs))


@ADVANTAGES.register("combine", reads_policy=True)
def combine(inputs: AdvantageInputs, w_rl: float = 1.0, w_opd: float = 1.0, rl_estimator: str = "baseline", rl_kwargs: dict | None = None) -> AdvantageResult:
    a_rl = ADVANTAGES.get(rl_estimator)(inputs, **(rl_kwargs or {})).advantages
    a_opd = opd_gap(inputs)
    adv = w_rl * a_rl + w_opd * a_opd
    return AdvantageResult(advantages=adv, metrics={"adv_rl_mean": _masked_mean(w_rl * a_rl, inputs), "adv_opd_mean": _masked_mean(w_opd * a_opd, inputs)})


def _masked_mean(x, inputs: AdvantageInputs):
    m = inputs.response_mask
    return (x * m).sum() / m.sum().clamp(min=1.0)
