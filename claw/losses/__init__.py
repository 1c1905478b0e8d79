"""Policy losses: pure functions in one registry (`LOSSES`), plus aggregation modes.

Uniform signature: ``fn(logprobs, old_logprobs, advantages, response_mask, **kwargs) -> (loss, metrics)``
with every tensor [B, T] and `loss` a scalar.
"""

from claw.losses.aggregate import AGGREGATIONS, aggregate
from claw.losses.ppo import LOSSES, ppo_clip_loss

__all__ = ["AGGREGATIONS", "LOSSES", "aggregate", "ppo_clip_loss"]
