"""The objective: which advantage estimator and which loss terms, picked by name from the registries.

Pure composition — no Lightning, no config objects inside the math. `config.objective_from_cfg`
turns the `mode` × `algo` configs into an `ObjectiveConfig`; the module calls `advantages()` once
per rollout batch (before the PPO epochs) and `loss()` once per micro-batch.

    loss = policy_loss(ρ, A; clip, dual clip, TIS weights)              (registry: LOSSES)
         + value_coef   · value_loss(V, V_old, returns; value_clip)     (critic only)
         + kl_coef      · agg(KL_k(π_θ ‖ π_ref))                        (registry: KL_ESTIMATORS; ref loaded only if kl_coef > 0)
         − entropy_coef · agg(H(π_θ))
         + topk_coef    · topk_reverse_kl(π_θ, π_teacher)               (top-K distillation)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from claw.advantages import ADVANTAGES, AdvantageInputs, AdvantageResult, RunningBaseline
from claw.losses import KL_ESTIMATORS, LOSSES, aggregate, masked_mean, tis_weights, topk_reverse_kl, value_loss
from claw.types import Batch


@dataclass
class TISConfig:
    enabled: bool = True
    cap: float = 2.0  # C in min(exp(log π_old − log π_rollout), C)
    level: str = "token"  # token | sequence
    mode: str = "truncate"  # truncate | mask


@dataclass
class ObjectiveConfig:
    advantage: str = "grpo"
    advantage_kwargs: dict[str, Any] = field(default_factory=dict)
    loss: str = "ppo_clip"
    clip_low: float = 0.2
    clip_high: float = 0.28
    dual_clip: float | None = None
    loss_agg: str = "token-mean"
    tis: TISConfig = field(default_factory=TISConfig)
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    critic: bool = False
    value_coef: float = 0.5
    value_clip: float = 0.2
    topk_coef: float = 0.0
    baseline_momentum: float = 0.9
    baseline_warm_start: bool = True  # bias-corrected EMA; leave-one-out batch mean before any history

    def __post_init__(self) -> None:
        ADVANTAGES.get(self.advantage)  # fail at start-up, naming the registered choices
        LOSSES.get(self.loss)
        KL_ESTIMATORS.get(self.kl_estimator)
        if isinstance(self.tis, dict):
            self.tis = TISConfig(**self.tis)
        if self.advantage == "gae" and not self.critic:
            raise ValueError("advantage=gae needs a critic: use algo=ppo (algo.critic=true)")

    @property
    def reads_policy(self) -> bool:
        """Whether the advantages need π_old log-probs / values before the first update."""
        return bool(ADVANTAGES.trait(self.advantage, "reads_policy", False)) or self.critic

    @property
    def uses_baseline(self) -> bool:
        return self.advantage == "baseline" or self.advantage_kwargs.get("rl_estimator") == "baseline"


@dataclass
class PolicyOutputs:
    """What the module computed for a micro-batch, with grad. Shapes [B, T] unless noted."""

    logprobs: Tensor
    entropy: Tensor | None = None
    values: Tensor | None = None
    topk_logprobs: Tensor | None = None  # [B, T, K] student log-probs at the teacher's top-K ids


@dataclass
class OldOutputs:
    """Computed once per rollout batch, without grad."""

    logprobs: Tensor  # [B, T] log π_old
    values: Tensor | None = None  # [B, T] V_old
    bootstrap_values: Tensor | None = None  # [B] V after the last token
    ref_logprobs: Tensor | None = None  # [B, T] log π_ref (only when kl_coef > 0)


class Objective:
    def __init__(self, config: ObjectiveConfig) -> None:
        self.config = config
        self._advantage = ADVANTAGES.get(config.advantage)
        self._loss = LOSSES.get(config.loss)
        self._kl = KL_ESTIMATORS.get(config.kl_estimator)
        self.baseline = RunningBaseline(config.baseline_momentum, warm_start=config.baseline_warm_start)

    def advantages(self, batch: Batch, old: OldOutputs | None) -> AdvantageResult:
        """[B, T] advantages (and returns, with a critic) for a whole rollout batch.
        `old` may be None when the estimator does not read the policy (`config.reads_policy`)."""
        baseline = None
        if self.config.uses_baseline:
            baseline = torch.tensor(self.baseline.lookup(batch.sources, batch.rewards, batch.reward_mask), dtype=torch.float, device=batch.rewards.device)
        inputs = AdvantageInputs(
            response_mask=batch.response_mask,
            rewards=batch.rewards,
            group_index=batch.group_index,
            reward_mask=batch.reward_mask,
            old_logprobs=None if old is None else old.logprobs,
            teacher_logprobs=batch.teacher_logprobs,
            teacher_mask=batch.teacher_mask,
            values=None if old is None else old.values,
            truncated=batch.truncated,
            bootstrap_values=None if old is None else old.bootstrap_values,
            baseline=baseline,
        )
        result = self._advantage(inputs, **self.config.advantage_kwargs)
        if self.config.uses_baseline:  # after use: a sample never sees its own reward in its baseline
            self.baseline.update(batch.sources, batch.rewards, batch.reward_mask)
        return result

    def loss(
        self,
        out: PolicyOutputs,
        old: OldOutputs,
        adv: AdvantageResult,
        batch: Batch,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Total loss for one micro-batch (`old` and `adv` already sliced to it)."""
        c = self.config
        mask = batch.response_mask
        weights = None
        metrics: dict[str, Tensor] = {}
        if c.tis.enabled:
            weights, m = tis_weights(old.logprobs, batch.rollout_logprobs, mask, c.tis.cap, c.tis.level, c.tis.mode)
            metrics.update(m)
        policy, m = self._loss(
            out.logprobs,
            old.logprobs,
            adv.advantages,
            mask,
            clip_low=c.clip_low,
            clip_high=c.clip_high,
            dual_clip=c.dual_clip,
            loss_agg=c.loss_agg,
            is_weights=weights,
        )
        metrics.update(m)
        metrics["policy_loss"] = policy.detach()
        total = policy
        if c.critic:
            if out.values is None or old.values is None or adv.returns is None:
                raise ValueError("a critic objective needs values and returns")
            v_loss, m = value_loss(out.values, old.values, adv.returns, mask, c.value_clip, c.loss_agg)
            metrics.update(m)
            metrics["value_loss"] = v_loss.detach()
            total = total + c.value_coef * v_loss
        if c.kl_coef:
            if old.ref_logprobs is None:
                raise ValueError("kl_coef > 0 needs reference log-probs")
            kl = aggregate(self._kl(out.logprobs, old.ref_logprobs), mask, c.loss_agg)
            metrics["kl_ref"] = kl.detach()
            total = total + c.kl_coef * kl
        if out.entropy is not None:
            ent = aggregate(out.entropy, mask, c.loss_agg)
            metrics["entropy"] = ent.detach()
            if c.entropy_coef:
                total = total - c.entropy_coef * ent
        if c.topk_coef and out.topk_logprobs is not None and batch.teacher_topk_logprobs is not None:
            tk_mask = mask * batch.teacher_mask.unsqueeze(-1)
            tk, m = topk_reverse_kl(out.topk_logprobs, batch.teacher_topk_logprobs, tk_mask, c.loss_agg)
            metrics.update(m)
            total = total + c.topk_coef * tk
        for key, value in adv.metrics.items():
            metrics[key] = value
        metrics["loss"] = total.detach()
        return total, metrics

    def advantage_stats(self, adv: Tensor, mask: Tensor) -> dict[str, Tensor]:
        mean = masked_mean(adv, mask)
        return {"adv_mean": mean, "adv_std": masked_mean((adv - mean) ** 2, mask).sqrt()}

    def state_dict(self) -> dict:
        return {"baseline": self.baseline.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.baseline.load_state_dict(state["baseline"])
