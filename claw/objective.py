"""The objective: which advantage estimator and which policy loss, picked by name from the registries.

Pure composition — no Lightning, no config objects inside the math. `mode` and `algo` configs
fill an `ObjectiveConfig`; the module calls `advantages()` once per rollout batch and `loss()`
once per minibatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from claw.advantages import ADVANTAGES
from claw.losses import LOSSES
from claw.types import Batch


@dataclass
class ObjectiveConfig:
    advantage: str = "grpo"
    advantage_kwargs: dict[str, Any] = field(default_factory=dict)
    loss: str = "ppo_clip"
    loss_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ADVANTAGES.get(self.advantage)  # fail at start-up, naming the registered choices
        LOSSES.get(self.loss)


class Objective:
    def __init__(self, config: ObjectiveConfig) -> None:
        self.config = config
        self._advantage = ADVANTAGES.get(config.advantage)
        self._loss = LOSSES.get(config.loss)

    def advantages(self, batch: Batch, old_logprobs: Tensor) -> Tensor:
        """[B, T] advantages for a whole rollout batch (computed once, before the PPO epochs)."""
        return self._advantage(batch.rewards, batch.response_mask, batch.group_index, **self.config.advantage_kwargs)

    def loss(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, response_mask: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        return self._loss(logprobs, old_logprobs, advantages, response_mask, **self.config.loss_kwargs)
