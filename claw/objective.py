"""The objective: which advantage estimator and which loss terms, picked by name from the registries.

Pure composition — no Lightning, no config objects inside the math. `config.objective_from_cfg`
turns the `mode` × `algo` configs into an `ObjectiveConfig`; the module calls `advantages()` once
per rollout batch (before the PPO epochs), `loss_weights()` once per minibatch and `loss()` once per
micro-batch. Every term is a weighted token sum with the minibatch's weights, so the micro-batch
losses add up to the minibatch loss exactly, for every `loss_agg` (see `claw/losses/aggregate.py`).

    loss = policy_loss(ρ, A; clip, dual clip, TIS weights)              (registry: LOSSES)
         + value_coef   · value_loss(V, V_old, returns; value_clip)     (critic only)
         + kl_coef      · agg(KL_k(π_θ ‖ π_ref) · [t ≤ kl_opening])      (registry: KL_ESTIMATORS;
                                                                         ref loaded only if kl_coef > 0;
                                                                         kl_opening 0: every token)
         − entropy_coef · agg(H(π_θ))
         + topk_coef    · topk_reverse_kl(π_θ, π_teacher)               (top-K distillation)

    A: the estimator's advantages, negative entries × negative_weight (claw/advantages/negatives.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from claw.advantages import ADVANTAGES, AdvantageInputs, AdvantageResult, RunningBaseline
from claw.advantages.negatives import weight_negatives
from claw.advantages.opd import opening_tokens
from claw.advantages.overlong import OVERLONG_MODES, shape_overlong
from claw.losses import (
    KL_ESTIMATORS,
    LOSSES,
    aggregate,
    explained_variance,
    masked_mean,
    tis_weights,
    token_weights,
    topk_reverse_kl,
    value_loss,
)
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
    loss_agg_norm: float | None = None  # N of seq-mean-token-sum-norm: a constant (the generation budget)
    tis: TISConfig = field(default_factory=TISConfig)
    kl_coef: float = 0.0
    kl_estimator: str = "k2"  # as a loss, k2's gradient is the reverse KL's (claw/losses/kl.py)
    kl_opening: int = 0  # > 0: the KL only on the first k tokens of each turn (how a reply opens); 0: every token
    entropy_coef: float = 0.0
    critic: bool = False
    value_coef: float = 0.5
    value_clip: float = 0.2
    topk_coef: float = 0.0
    baseline_momentum: float = 0.9
    baseline_warm_start: bool = True  # bias-corrected EMA; leave-one-out batch mean before any history
    overlong: str = "none"  # none | penalty | mask: what a reply cut at the token budget is worth (overlong.py)
    overlong_penalty: float = 0.0  # overlong=penalty: subtracted from a cut reply's reward
    negative_weight: float = 1.0  # negative advantages × this (claw/advantages/negatives.py); 1: unchanged

    def __post_init__(self) -> None:
        # The names (advantage, loss, KL estimator, aggregation), gae's critic, the Dr. GRPO normaliser and the
        # dual clip are claw/config.py's `validate`'s to check, at start-up; these keys are checked here only.
        if self.negative_weight < 0:
            raise ValueError(f"algo.negative_weight={self.negative_weight} must be ≥ 0 (1: unchanged)")
        if self.kl_opening < 0:
            raise ValueError(f"algo.kl_opening={self.kl_opening} must be ≥ 0 (0: the KL on every token)")
        if self.overlong not in OVERLONG_MODES:
            raise ValueError(f"algo.overlong.mode must be one of {OVERLONG_MODES} (got {self.overlong!r})")
        if isinstance(self.tis, dict):
            self.tis = TISConfig(**self.tis)

    @property
    def reads_policy(self) -> bool:
        """Whether the advantages need π_old log-probs / values before the first update."""
        return bool(ADVANTAGES.trait(self.advantage, "reads_policy", False)) or self.critic

    @property
    def uses_baseline(self) -> bool:
        return self.advantage == "baseline" or self.advantage_kwargs.get("rl_estimator") == "baseline"


# The metrics that are a micro-batch's part of the minibatch's weighted sum Σ w ℓ (the minibatch's weights, sliced
# to its rows): over micro-batches and DDP ranks they add up to the minibatch's value. Every other metric of `loss`
# is a mean over the micro-batch's own tokens (or a constant of the rollout batch), which the parts weigh by their
# share of the tokens instead (ClawModule.accumulate).
SUMMED_METRICS = frozenset({"loss", "policy_loss", "value_loss", "kl_ref", "entropy", "topk_kl"})


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
    ref_logprobs: Tensor | None = None  # [B, T] log π_ref (only when kl_coef > 0)


@dataclass
class LossWeights:
    """Aggregation weights computed over a whole minibatch (`Objective.loss_weights`), sliced to rows."""

    policy: Tensor  # [B, T] over the trainable tokens: policy, value, KL and entropy terms
    teacher: Tensor | None = None  # [B, T] over the hinted samples' trainable tokens: the top-K term

    def select(self, idx: Tensor) -> LossWeights:
        return LossWeights(self.policy[idx], None if self.teacher is None else self.teacher[idx])


class Objective:
    def __init__(self, config: ObjectiveConfig) -> None:
        self.config = config
        self._advantage = ADVANTAGES.get(config.advantage)
        self._loss = LOSSES.get(config.loss)
        self._kl = KL_ESTIMATORS.get(config.kl_estimator)
        self.baseline = RunningBaseline(config.baseline_momentum, warm_start=config.baseline_warm_start)

    def shape(self, batch: Batch) -> Batch:
        """The batch the objective trains on: cut replies shaped by `overlong` (a new Batch; rewards and masks
        replaced, nothing modified in place). Called once per rollout batch, before `advantages`."""
        if self.config.overlong == "none" or batch.finished is None:
            return batch
        rewards, reward_mask, response_mask = shape_overlong(
            batch.rewards,
            batch.reward_mask,
            batch.response_mask,
            batch.finished,
            self.config.overlong,
            self.config.overlong_penalty,
        )
        return replace(batch, rewards=rewards, reward_mask=reward_mask, response_mask=response_mask)

    def advantages(self, batch: Batch, old: OldOutputs | None) -> AdvantageResult:
        """[B, T] advantages (and returns, with a critic) for a whole rollout batch.
        `old` may be None when the estimator does not read the policy (`config.reads_policy`)."""
        inputs = AdvantageInputs(
            response_mask=batch.response_mask,
            rewards=batch.rewards,
            group_index=batch.group_index,
            reward_mask=batch.reward_mask,
            old_logprobs=None if old is None else old.logprobs,
            teacher_logprobs=batch.teacher_logprobs,
            teacher_mask=batch.teacher_mask,
            values=None if old is None else old.values,
            finished=batch.finished,
        )
        if self.config.uses_baseline:
            # The warm start's leave-one-out mean reads the samples of the objective only: a greedy turn
            # (temperature 0, no trainable token) is judged but is neither trained nor anyone's baseline.
            baseline = self.baseline.lookup(batch.sources, batch.rewards, inputs.reward_present())
            inputs = replace(inputs, baseline=torch.tensor(baseline, dtype=torch.float, device=batch.rewards.device))
        result = self._advantage(inputs, **self.config.advantage_kwargs)
        if self.config.negative_weight != 1.0:
            result = replace(result, advantages=weight_negatives(result.advantages, self.config.negative_weight))
        if self.config.uses_baseline:  # after use: a sample never sees its own reward in its baseline
            self.baseline.update(batch.sources, batch.rewards, inputs.reward_present())  # greedy turns excluded
        return result

    def rows_that_move(self, batch: Batch, adv: AdvantageResult) -> Tensor:
        """[B] bool: the rows whose loss, and so whose gradient, can be non-zero. With a policy loss that is zero
        where the advantage is (`zero_without_advantage`) and no term that reads every row (KL, entropy bonus,
        critic), a row whose advantage is zero on every token adds exactly nothing to the update (a GRPO group
        that all got the same reward); the top-K term moves the hinted rows."""
        c = self.config
        if c.kl_coef or c.entropy_coef or c.critic or not LOSSES.trait(c.loss, "zero_without_advantage", False):
            return torch.ones(batch.size, dtype=torch.bool, device=batch.response_mask.device)
        moves = ((adv.advantages * batch.response_mask) != 0).any(-1)
        if c.topk_coef:
            moves |= batch.teacher_mask > 0
        return moves

    def loss_weights(self, batch: Batch) -> LossWeights:
        """The aggregation weights of a minibatch: computed once, before it is split into micro-batches
        (or DDP ranks), so that Σ over the parts of Σ w ℓ is the minibatch's loss whatever the split."""
        c = self.config
        mask = batch.response_mask
        teacher = None
        if c.topk_coef:
            teacher = token_weights(mask * batch.teacher_mask.unsqueeze(-1), c.loss_agg, c.loss_agg_norm)
        return LossWeights(token_weights(mask, c.loss_agg, c.loss_agg_norm), teacher)

    def loss(
        self,
        out: PolicyOutputs,
        old: OldOutputs,
        adv: AdvantageResult,
        batch: Batch,
        weights: LossWeights | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Total loss for one micro-batch (`old`, `adv` and `weights` already sliced to it; `weights`
        None: this micro-batch is the whole minibatch)."""
        c = self.config
        mask = batch.response_mask
        w = self.loss_weights(batch) if weights is None else weights
        is_weights = None
        metrics: dict[str, Tensor] = {}
        if c.tis.enabled:
            is_weights, m = tis_weights(old.logprobs, batch.rollout_logprobs, mask, c.tis.cap, c.tis.level, c.tis.mode)
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
            is_weights=is_weights,
            loss_agg_norm=c.loss_agg_norm,
            agg_weights=w.policy,
        )
        metrics.update(m)
        metrics["policy_loss"] = policy.detach()
        total = policy
        if c.critic:
            if out.values is None or old.values is None or adv.returns is None:
                raise ValueError("a critic objective needs values and returns")
            v_loss, m = value_loss(
                out.values, old.values, adv.returns, mask, c.value_clip, c.loss_agg, agg_weights=w.policy
            )
            metrics.update(m)
            metrics["value_loss"] = v_loss.detach()
            total = total + c.value_coef * v_loss
        if c.kl_coef:
            if old.ref_logprobs is None:
                raise ValueError("kl_coef > 0 needs reference log-probs")
            kl_tokens = self._kl(out.logprobs, old.ref_logprobs)
            if c.kl_opening:
                # Same per-token weight as the full KL, on the opening tokens only: the rest of the reply is free.
                kl_tokens = kl_tokens * opening_tokens(mask, c.kl_opening)
            kl = aggregate(kl_tokens, mask, c.loss_agg, weights=w.policy)
            metrics["kl_ref"] = kl.detach()
            total = total + c.kl_coef * kl
        if out.entropy is not None:
            ent = aggregate(out.entropy, mask, c.loss_agg, weights=w.policy)
            metrics["entropy"] = ent.detach()
            if c.entropy_coef:
                total = total - c.entropy_coef * ent
        if c.topk_coef and out.topk_logprobs is not None and batch.teacher_topk_logprobs is not None:
            tk_mask = mask * batch.teacher_mask.unsqueeze(-1)  # only samples with an accepted hint
            tk, m = topk_reverse_kl(
                out.topk_logprobs, batch.teacher_topk_logprobs, tk_mask, c.loss_agg, agg_weights=w.teacher
            )
            metrics.update(m)
            total = total + c.topk_coef * tk
        for key, value in adv.metrics.items():
            metrics[key] = value
        metrics["loss"] = total.detach()
        return total, metrics

    def advantage_stats(
        self, adv: Tensor, mask: Tensor, returns: Tensor | None = None, values: Tensor | None = None
    ) -> dict[str, Tensor]:
        """Statistics of a whole rollout batch: its advantages' mean and spread and, with a critic (the returns
        and V_old), the critic's explained variance — ratios of variances, which no sum of micro-batch parts gives."""
        mean = masked_mean(adv, mask)
        stats = {"adv_mean": mean, "adv_std": masked_mean((adv - mean) ** 2, mask).sqrt()}
        if returns is not None and values is not None:
            stats["explained_variance"] = explained_variance(values, returns, mask)
        return stats

    def state_dict(self) -> dict:
        return {"baseline": self.baseline.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.baseline.load_state_dict(state["baseline"])
