"""Advantage estimators: pure functions in one registry (`ADVANTAGES`).

Uniform signature: ``fn(rewards [B], response_mask [B, T], group_index [B], **kwargs) -> [B, T]``.
"""

from claw.advantages.grpo import ADVANTAGES, grpo_advantages

__all__ = ["ADVANTAGES", "grpo_advantages"]
