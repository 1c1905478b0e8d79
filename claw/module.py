"""`ClawModule`: the thin LightningModule. It knows nothing of engines, HTTP or judges.

One `training_step` per rollout batch (manual optimization; the step pulls its batch itself so
nothing is prefetched):
  1. π_old log-probs once, without grad, at each sample's rollout temperature;
  2. advantages once, from the objective;
  3. `ppo_epochs` × minibatches: forward, objective loss, `manual_backward` per micro-batch
     (hand-rolled accumulation), `clip_gradients`, one optimizer step per minibatch.
With several minibatches or epochs the ratio π_θ/π_old departs from 1, so clipping really acts.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from torch import Tensor

from claw.logprobs import response_logits, token_logprobs
from claw.objective import Objective
from claw.types import Batch


class ClawModule(L.LightningModule):
    def __init__(
        self,
        model: torch.nn.Module,
        objective: Objective,
        lr: float = 1e-5,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        warmup_steps: int = 0,
        max_grad_norm: float = 1.0,
        ppo_epochs: int = 1,
        minibatches: int = 1,
        micro_batch_size: int = 8,
        gradient_checkpointing: bool = False,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.model = model
        self.objective = objective
        self.lr, self.weight_decay, self.betas, self.warmup_steps = lr, weight_decay, tuple(betas), warmup_steps
        self.max_grad_norm = max_grad_norm
        self.ppo_epochs, self.minibatches, self.micro_batch_size = ppo_epochs, minibatches, micro_batch_size
        self.policy_version = 0  # bumped by the weight-sync callback after each rollout batch
        if gradient_checkpointing:
            model.gradient_checkpointing_enable()
        model.config.use_cache = False
        model.train()

    # -- log-probs -------------------------------------------------------------------------
    def logprobs(self, batch: Batch) -> Tensor:
        """[B, T] log π_θ(response) at each sample's own temperature."""
        logits = response_logits(self.model, batch.input_ids, batch.attention_mask, batch.prompt_len)
        return token_logprobs(logits, batch.response_ids, batch.temperature)

    @torch.no_grad()
    def old_logprobs(self, batch: Batch) -> Tensor:
        chunks = [self.logprobs(batch.select(idx)) for idx in self._chunks(batch.size, self.micro_batch_size)]
        return torch.cat(chunks)

    def _chunks(self, n: int, size: int, perm: Tensor | None = None) -> list[Tensor]:
        order = torch.arange(n) if perm is None else perm
        return [order[i : i + size] for i in range(0, n, size)]

    # -- training ----------------------------------------------------------------------------
    def training_step(self, dataloader_iter) -> None:
        # Fetch the rollout batch here rather than letting Lightning prefetch one ahead: a batch
        # that is ready trains now, not once the *next* batch has also been collected.
        batch, _, _ = next(dataloader_iter)
        batch = self.trainer.strategy.batch_to_device(batch)
        self.train_on(batch)

    def train_on(self, batch: Batch) -> None:
        """One rollout batch: π_old once, advantages once, PPO epochs × minibatches of updates."""
        opt = self.optimizers()
        sched = self.lr_schedulers()
        self.model.train()
        old = self.old_logprobs(batch)
        adv = self.objective.advantages(batch, old)
        mb_size = -(-batch.size // self.minibatches)
        metrics: dict[str, list[Tensor]] = {}
        for _epoch in range(self.ppo_epochs):
            perm = torch.randperm(batch.size) if self.minibatches > 1 else None
            for mb in self._chunks(batch.size, mb_size, perm):
                # Token-weighted accumulation: each micro-batch's token-mean loss is scaled by its
                # share of the minibatch's trainable tokens, so the sum equals the minibatch loss.
                mb_tokens = batch.response_mask[mb].sum().clamp(min=1.0)
                for micro in self._chunks(len(mb), self.micro_batch_size):
                    idx = mb[micro]
                    part = batch.select(idx)
                    lp = self.logprobs(part)
                    loss, m = self.objective.loss(lp, old[idx], adv[idx], part.response_mask)
                    weight = part.response_mask.sum() / mb_tokens
                    self.manual_backward(loss * weight)
                    for k, v in {"loss": loss.detach(), **m}.items():
                        metrics.setdefault(k, []).append(v.detach() * weight)
                self.clip_gradients(opt, gradient_clip_val=self.max_grad_norm, gradient_clip_algorithm="norm")
                opt.step()
                opt.zero_grad(set_to_none=True)
        sched.step()
        n_updates = self.ppo_epochs * self.minibatches
        self._log_metrics(batch, adv, {k: torch.stack(v).sum() / n_updates for k, v in metrics.items()})

    def _log_metrics(self, batch: Batch, adv: Tensor, metrics: dict[str, Tensor]) -> None:
        mask = batch.response_mask
        n_tok = mask.sum().clamp(min=1.0)
        adv_mean = (adv * mask).sum() / n_tok
        logged = {f"train/{k}": v for k, v in metrics.items()}
        logged["train/adv_mean"] = adv_mean
        logged["train/adv_std"] = (((adv - adv_mean) ** 2 * mask).sum() / n_tok).sqrt()
        logged["train/lr"] = torch.tensor(self.optimizers().param_groups[0]["lr"])
        lengths = (batch.attention_mask[:, batch.prompt_len :]).sum(-1).float()
        logged["rollout/reward_mean"] = batch.rewards.float().mean()
        logged["rollout/response_len"] = lengths.mean()
        logged["rollout/staleness"] = (self.policy_version - batch.policy_version).float().clamp(min=0).mean()
        for key in ("queue_depth", "dropped_stale_total", "finished_frac"):
            if key in batch.meta:
                logged[f"rollout/{key}"] = torch.tensor(float(batch.meta[key]))
        self.log_dict(logged, on_step=True, batch_size=batch.size)
        self.log("reward", logged["rollout/reward_mean"], prog_bar=True, logger=False, batch_size=batch.size)

    def configure_optimizers(self) -> Any:
        decay = [p for n, p in self.model.named_parameters() if p.requires_grad and p.ndim >= 2]
        no_decay = [p for n, p in self.model.named_parameters() if p.requires_grad and p.ndim < 2]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.lr,
            betas=self.betas,
        )
        warmup = max(self.warmup_steps, 0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    # -- checkpoint ----------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["policy_version"] = self.policy_version

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.policy_version = int(checkpoint.get("policy_version", 0))
