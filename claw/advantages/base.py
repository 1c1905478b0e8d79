"""The advantage-estimator interface: one registry, one input record, one result record.

Every estimator is a pure function ``fn(inputs: AdvantageInputs, **kwargs) -> AdvantageResult``;
`kwargs` come from the `algo` / `mode` config. Shapes: B samples, T response tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from claw.registry import Registry

# Trait `reads_policy=True`: the estimator reads π_old log-probs or critic values (opd, combine, gae).
# The others (grpo, rloo, baseline, …) read only rewards and groups, so with one update per rollout
# batch the trainer can skip the separate π_old pass (ClawModule.fuse_old_pass).
ADVANTAGES: Registry = Registry("advantage estimator")


@dataclass
class AdvantageInputs:
    response_mask: Tensor  # [B, T] 1 on trainable response tokens (0 on padding / observation tokens)
    rewards: Tensor  # [B] scalar reward per sample (0 where absent)
    group_index: Tensor  # [B] long; samples with equal index answer the same prompt
    reward_mask: Tensor | None = None  # [B] 1 = the sample has a reward signal (judge said ±1 / verifier ran)
    old_logprobs: Tensor | None = None  # [B, T] log π_old(a_t)
    teacher_logprobs: Tensor | None = None  # [B, T] log π_teacher(a_t | s + hint)  (OPD)
    teacher_mask: Tensor | None = None  # [B] 1 = an accepted hint (teacher log-probs are real)
    values: Tensor | None = None  # [B, T] critic V(s_t) before each response token
    baseline: Tensor | None = None  # [B] running per-source baseline (groups of one)
    finished: Tensor | None = None  # [B] 1 = the reply ended on its end-of-turn token, 0 = cut at the budget

    def reward_present(self) -> Tensor:  # [B] float
        """1 where the sample has a reward *and* a trainable token. A greedy turn (all-zero response mask)
        is served and judged but is not part of the objective: it feeds no group mean, std or baseline."""
        present = (
            self.rewards.new_ones(self.rewards.shape)
            if self.reward_mask is None
            else self.reward_mask.to(self.rewards.dtype)
        )
        return present * (self.response_mask.sum(-1) > 0).to(present.dtype)


@dataclass
class AdvantageResult:
    advantages: Tensor  # [B, T], zero on masked tokens
    returns: Tensor | None = None  # [B, T] value targets (critic estimators only)
    metrics: dict[str, Tensor] = field(default_factory=dict)
