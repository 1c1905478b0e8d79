"""`ClawModule`: the thin LightningModule. It knows nothing of engines, HTTP or judges.

One `training_step` per rollout batch (manual optimization; the step pulls its own batch, so
nothing is prefetched):
  1. π_old log-probs (and V_old, π_ref when needed) once, without grad, at each sample's temperature
     (skipped when one update per batch makes π_old the training forward itself: `fuse_old_pass`);
  2. advantages once, from the objective;
  3. `ppo_epochs` × minibatches: forward, objective loss, `manual_backward` per micro-batch
     (hand-rolled, token-weighted accumulation), `clip_gradients`, one optimizer step per minibatch.
With several minibatches or epochs the ratio π_θ/π_old departs from 1, so clipping really acts.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import time
from collections.abc import Iterator
from typing import Any

import lightning as L
import torch
from omegaconf import DictConfig
from torch import Tensor

from claw import updates
from claw.clock import PolicyClock
from claw.config import objective_from_cfg
from claw.distributed import all_sum, no_sync, rank_and_world, sum_rows
from claw.logprobs import entropy_from_logits, position_ids, token_logprobs, widened
from claw.objective import SUMMED_METRICS, Objective, OldOutputs, PolicyOutputs
from claw.types import Batch
from claw.updates import ceil_div, grad_norm, lr_factor, slice_adv, slice_old


class ClawModule(L.LightningModule):
    def __init__(
        self,
        model: torch.nn.Module,
        objective: Objective,
        lr: float = 1e-5,
        critic_lr: float = 1e-5,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        warmup_steps: int = 0,
        total_steps: int | None = None,
        schedule: str = "constant",
        max_grad_norm: float = 1.0,
        ppo_epochs: int = 1,
        minibatches: int = 1,
        micro_batch_size: int = 8,
        gradient_checkpointing: bool = False,
        seed: int = 0,
        fuse_old_pass: bool = True,
        skip_still_rows: bool = True,
        critic_detach_trunk: bool = True,
        clock: PolicyClock | None = None,
        adapters=None,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        # personalize=per_user (claw/users/adapters.py `AdapterBank`): each batch is one user's and trains that
        # user's adapter with its own optimizer; the checkpoint holds their versions, not the frozen base
        self.adapters = adapters
        self.strict_loading = adapters is None
        self.model = model
        self.objective = objective
        cfg = objective.config
        self.value_head = torch.nn.Linear(model.config.hidden_size, 1) if cfg.critic else None
        # The value head reads the policy's last hidden state. Detached (default), the value loss trains
        # the head alone at `critic_lr`; attached, its gradient also moves the shared trunk at the policy's lr.
        self.critic_detach_trunk = critic_detach_trunk
        if self.value_head is not None:
            torch.nn.init.zeros_(self.value_head.weight)
            torch.nn.init.zeros_(self.value_head.bias)
        # The frozen reference exists only when it is used (kl_coef > 0): no wasted forward passes.
        self.ref_model = copy.deepcopy(model).eval().requires_grad_(False) if cfg.kl_coef else None
        self.lr, self.critic_lr, self.weight_decay, self.betas = lr, critic_lr, weight_decay, tuple(betas)
        self.warmup_steps, self.total_steps, self.schedule = warmup_steps, total_steps, schedule
        self.max_grad_norm = max_grad_norm
        self.ppo_epochs, self.minibatches, self.micro_batch_size = ppo_epochs, minibatches, micro_batch_size
        self.seed = seed
        # One update per rollout batch, advantages from rewards alone, no reference model: π_old is π_θ before that
        # update, so its log-probs are the training forward's, detached (the same values; a third less compute).
        self.fuse_old_pass = (
            fuse_old_pass
            and ppo_epochs * minibatches == 1
            and not objective.config.reads_policy
            and not objective.config.kl_coef
        )
        self.skip_still_rows = skip_still_rows  # rows that cannot move the loss are not forwarded (`accumulate`)
        # The run's one version counter (claw/clock.py), shared with the datamodule.
        self.clock = clock or PolicyClock()
        if gradient_checkpointing:
            model.gradient_checkpointing_enable()
        model.config.use_cache = False
        model.train()

    @property
    def policy_version(self) -> int:
        """Rollout batches trained (the clock's `trained`), bumped by the weight-sync callback after each batch."""
        return self.clock.trained

    @policy_version.setter
    def policy_version(self, value: int) -> None:
        self.clock.trained = value

    @classmethod
    def from_cfg(
        cls, cfg: DictConfig, model: torch.nn.Module, clock: PolicyClock | None = None, adapters=None
    ) -> ClawModule:
        """The module for a run's config around `model` (train.py; also replays a run, tests/test_ddp.py)."""
        algo, o = cfg.algo, cfg.optim
        return cls(
            model,
            Objective(objective_from_cfg(cfg)),
            lr=o.lr,
            critic_lr=algo.get("critic_lr", o.lr),
            weight_decay=o.weight_decay,
            betas=tuple(o.betas),
            warmup_steps=o.warmup_steps,
            total_steps=cfg.steps,
            schedule=o.schedule,
            max_grad_norm=o.max_grad_norm,
            ppo_epochs=algo.ppo_epochs,
            minibatches=algo.minibatches,
            micro_batch_size=o.micro_batch_size,
            gradient_checkpointing=o.gradient_checkpointing,
            seed=cfg.seed,
            fuse_old_pass=o.get("fuse_old_pass", True),
            skip_still_rows=o.get("skip_still_rows", True),
            critic_detach_trunk=algo.get("critic_detach_trunk", True),
            clock=clock,
            adapters=adapters,
        )

    # -- forward ---------------------------------------------------------------------------
    def _forward(self, model: torch.nn.Module, batch: Batch, with_values: bool) -> tuple[Tensor, Tensor | None]:
        """Logits predicting the response [B, T, V] and, with a critic, hidden states [B, T+1, H]."""
        T = batch.input_ids.shape[1] - batch.prompt_len
        out = model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=position_ids(batch.attention_mask),
            use_cache=False,
            logits_to_keep=T + 1,  # the prompt's logits are never needed
            output_hidden_states=with_values,
        )
        hidden = out.hidden_states[-1][:, -(T + 1) :] if with_values else None
        return out.logits[:, :-1], hidden

    def policy_outputs(self, batch: Batch) -> PolicyOutputs:
        """Per-token outputs [B, T] of the policy, with grad. The model runs on the batch without its padding-only
        columns (`padding_free`); the outputs are padded back with zeros on those (masked) columns."""
        cfg = self.objective.config
        width = batch.response_mask.shape[1]
        batch = updates.crop(batch, updates.padding_free(batch))
        logits, hidden = self._forward(self.model, batch, with_values=self.value_head is not None)
        logprobs = token_logprobs(logits, batch.response_ids, batch.temperature)
        with torch.set_grad_enabled(torch.is_grad_enabled() and cfg.entropy_coef != 0):
            entropy = entropy_from_logits(logits, batch.temperature)
        values = None
        if hidden is not None:  # detached trunk: the value loss trains the head only (critic_lr), never the policy
            values = self._values(hidden.detach() if self.critic_detach_trunk else hidden)
        topk = None
        if cfg.topk_coef and batch.teacher_topk_ids is not None:
            scaled = widened(logits) / batch.temperature.view(-1, 1, 1)
            topk = scaled.gather(-1, batch.teacher_topk_ids) - torch.logsumexp(scaled, dim=-1, keepdim=True)
        logprobs, entropy, values, topk = (updates.pad_columns(t, width) for t in (logprobs, entropy, values, topk))
        return PolicyOutputs(logprobs=logprobs, entropy=entropy, values=values, topk_logprobs=topk)

    def _values(self, hidden: Tensor) -> Tensor:
        """[B, T] V(s_t) from the hidden states [B, T+1, H]. The head stays in fp32 whatever `model.dtype` (a
        bf16 trunk under `precision=32-true` hands it bf16 states): the states are cast at its input (with
        `critic_detach_trunk=false` the value loss's gradient flows back through the cast into the trunk)."""
        return self.value_head(hidden[:, :-1].to(self.value_head.weight.dtype)).squeeze(-1)

    @torch.no_grad()
    def old_outputs(self, batch: Batch) -> OldOutputs:
        """π_old (and V_old, π_ref) for the whole batch. Under DDP each rank computes its share of
        the rows and the shares are summed, so every rank holds the full tensors."""
        rank, world = rank_and_world()
        rows = torch.arange(rank, batch.size, world)
        parts = []
        real = updates.chunks(len(rows), self.micro_batch_size, rows)
        # as many forward passes on every rank (under FSDP each gathers the units' weights): a rank short of rows runs
        # its last ones on row 0 and drops them
        pad = ceil_div(ceil_div(batch.size, world), self.micro_batch_size) - len(real)
        for n, idx in enumerate(real + [torch.zeros(1, dtype=torch.long)] * pad):
            part = batch.select(idx.to(batch.input_ids.device))
            part = updates.crop(part, updates.padding_free(part))  # padded back below
            logits, hidden = self._forward(self.model, part, with_values=self.value_head is not None)
            lp = token_logprobs(logits, part.response_ids, part.temperature)
            values = ref = None
            if hidden is not None:
                values = self._values(hidden)
            if self.ref_model is not None:
                ref_logits, _ = self._forward(self.ref_model, part, with_values=False)
                ref = token_logprobs(ref_logits, part.response_ids, part.temperature)
            if n < len(real):
                width = batch.response_mask.shape[1]
                parts.append(OldOutputs(*(updates.pad_columns(t, width) for t in (lp, values, ref))))
        shape = tuple(batch.response_ids.shape)

        def full(name: str) -> Tensor | None:
            local = torch.cat([getattr(p, name) for p in parts]) if parts else None
            return sum_rows(local, rows, shape, batch.response_mask.to(self.model.dtype))

        return OldOutputs(
            full("logprobs"),
            full("values") if self.value_head is not None else None,
            full("ref_logprobs") if self.ref_model is not None else None,
        )

    # -- training ----------------------------------------------------------------------------
    def training_step(self, dataloader_iter) -> None:
        # Fetch the rollout batch here rather than letting Lightning prefetch one ahead: a batch
        # that is ready trains now, not once the *next* batch has also been collected.
        t0 = time.perf_counter()
        batch, _, _ = next(dataloader_iter)
        batch = self.trainer.strategy.batch_to_device(batch)
        t1 = time.perf_counter()
        self.train_on(batch)
        # where the step's time goes (bench/bench.py reads them): waiting for a rollout batch, then training on it
        timing = {"system/wait_s": t1 - t0, "system/train_s": time.perf_counter() - t1}
        self.log_dict({k: torch.tensor(v) for k, v in timing.items()}, on_step=True, batch_size=batch.size)

    def train_on(self, rollout: Batch) -> None:
        """One rollout batch: π_old once, advantages once, PPO epochs × minibatches of updates."""
        if self.adapters is None:
            opt, sched = self.optimizers(), self.lr_schedulers()
        else:  # one user's batch: their adapter trains, with their optimizer (constant lr)
            opt, sched = self.adapters.activate(rollout.meta["user"]), None
        self.model.train()
        batch = self.objective.shape(rollout)  # what trains: cut replies shaped by algo.overlong
        old = None if self.fuse_old_pass else self.old_outputs(batch)
        adv = self.objective.advantages(batch, old)
        metrics: dict[str, list[Tensor]] = {}
        grad_norms: list[Tensor] = []
        moves = self.objective.rows_that_move(batch, adv) if self.skip_still_rows else None
        for epoch in range(self.ppo_epochs):
            for mb in self.minibatch_rows(batch.size, epoch):
                for k, v in self.accumulate(batch, mb, old, adv, moves=moves).items():
                    metrics.setdefault(k, []).append(v)
                grad_norms.append(grad_norm(self))  # DDP has synced: the same on every rank
                self.clip_gradients(opt, gradient_clip_val=self.max_grad_norm, gradient_clip_algorithm="norm")
                opt.step()
                opt.zero_grad(set_to_none=True)
        if sched is not None:
            sched.step()
        # each metric's mean over the updates that report it (a minibatch where no row moves reports none)
        logged = {k: all_sum(torch.stack(v).sum()) / len(v) for k, v in sorted(metrics.items())}
        logged["grad_norm"] = torch.stack(grad_norms).mean()  # before clipping, mean over the updates
        values = None if old is None else old.values
        logged.update(self.objective.advantage_stats(adv.advantages, batch.response_mask, adv.returns, values))
        if batch is not rollout:
            shaped = batch.rewards * batch.reward_mask
            logged["reward_shaped_mean"] = shaped.sum() / batch.reward_mask.sum().clamp(min=1.0)
        logged["lr"] = torch.tensor(opt.param_groups[0]["lr"])
        self._log_metrics(rollout, logged)  # rollout/*: what was served and judged, before shaping

    def minibatch_rows(self, n: int, epoch: int) -> list[Tensor]:
        """The minibatches of one epoch over a rollout batch of `n` rows: exactly `minibatches` parts, as equal
        as possible (sizes differ by at most one: 5 rows in 4 parts are 2, 1, 1, 1), so a batch whose size is
        no multiple of `minibatches` still gets one optimizer step per part. With fewer rows than
        `minibatches` (stale samples dropped, the end of a round) each row is its own part: n steps, never an
        empty one. The same shuffle on every rank and on a resumed run, seeded by (seed, policy version, epoch)."""
        shuffle = torch.Generator().manual_seed(self.seed * 1_000_003 + self.policy_version * 101 + epoch)
        order = torch.randperm(n, generator=shuffle) if self.minibatches > 1 else torch.arange(n)
        return list(torch.tensor_split(order, max(1, min(self.minibatches, n))))

    def accumulate(
        self, batch: Batch, mb: Tensor, old: OldOutputs | None, adv, rank_world=None, moves: Tensor | None = None
    ) -> dict[str, Tensor]:
        """Forward and backward over minibatch `mb` (row indices), in micro-batches: afterwards the gradients hold
        ∇ of the minibatch's loss, exactly, whatever `micro_batch_size` and world size.

        The aggregation weights are computed once over the whole minibatch (`Objective.loss_weights`), so each
        micro-batch's loss is its rows' part of one weighted sum; rows that cannot move it (`moves` False) are not
        forwarded. Under DDP rank r takes rows r, r+W, …, each part scaled by W (DDP *averages*); every rank runs
        the same number of backward passes (one out of rows runs a zero-weighted one), the last one all-reduces.
        Returns this rank's part of the metrics, summing over ranks to the minibatch's value: a loss term
        (`SUMMED_METRICS`) is its rows' part of the weighted sum, any other metric a mean over the micro-batch's
        tokens weighted by their share of the forwarded rows' tokens; when nothing moves, the loss terms only (0)."""
        rank, world = rank_and_world() if rank_world is None else rank_world
        weights = self.objective.loss_weights(batch.select(mb.to(batch.input_ids.device)))
        live = torch.arange(len(mb)) if moves is None else moves.cpu()[mb].nonzero().flatten()  # in the minibatch
        mb_tokens = batch.response_mask[mb[live]].sum().clamp(min=1.0)
        mine = updates.longest_first(live[rank::world], mb, batch)
        n_micro = max(1, ceil_div(ceil_div(len(live), world), self.micro_batch_size))  # the same on every rank
        metrics: dict[str, Tensor] = {}
        for i in range(n_micro):
            pos = mine[i * self.micro_batch_size : (i + 1) * self.micro_batch_size]
            empty = len(pos) == 0
            pos = pos if not empty else torch.zeros(1, dtype=torch.long)
            idx = mb[pos].to(batch.input_ids.device)
            part = batch.select(idx)
            share = part.response_mask.sum() / mb_tokens * (0.0 if empty else 1.0)
            with self._no_sync(sync=i == n_micro - 1):
                out = self.policy_outputs(part)
                part_old = OldOutputs(out.logprobs.detach()) if old is None else slice_old(old, idx)
                loss, m = self.objective.loss(
                    out, part_old, slice_adv(adv, idx), part, weights.select(pos.to(idx.device))
                )
                self._backward(loss * world * (0.0 if empty else 1.0))
            for k, v in m.items():
                part = (0.0 if empty else 1.0) if k in SUMMED_METRICS else share
                metrics[k] = metrics.get(k, 0.0) + v.detach() * part
        if "entropy" in metrics and len(live) < len(mb):  # a monitor, not a loss: the trained rows' weighted mean
            metrics["entropy"] *= weights.policy.sum() / weights.policy[live].sum().clamp(min=1e-12)
        return metrics if len(live) else {k: v for k, v in metrics.items() if k in SUMMED_METRICS - {"entropy"}}

    def _backward(self, loss: Tensor) -> None:
        if self._trainer is None:  # a bare module (tests, scripts): plain autograd
            loss.backward()
        else:
            self.manual_backward(loss)

    def _no_sync(self, sync: bool):
        return contextlib.nullcontext() if self._trainer is None else no_sync(self.trainer.strategy, sync=sync)

    def _log_metrics(self, batch: Batch, metrics: dict[str, Tensor]) -> None:
        logged = {f"train/{k}": v for k, v in metrics.items()}
        user = batch.meta.get("user")
        current = self.policy_version if self.adapters is None else self.adapters.version(user)
        lengths = (batch.attention_mask[:, batch.prompt_len :]).sum(-1).float()
        logged["rollout/reward_mean"] = (batch.rewards * batch.reward_mask).sum() / batch.reward_mask.sum().clamp(
            min=1.0
        )
        logged["rollout/response_len"] = lengths.mean()
        logged["rollout/teacher_frac"] = batch.teacher_mask.mean()
        logged["rollout/staleness"] = (current - batch.policy_version).float().clamp(min=0).mean()
        for key in ("queue_depth", "dropped_stale_total", "finished_frac"):
            if key in batch.meta:
                logged[f"rollout/{key}"] = torch.tensor(float(batch.meta[key]))
        self.log_dict(logged, on_step=True, batch_size=batch.size)
        bar = {"reward": logged["rollout/reward_mean"], "stale": logged["rollout/staleness"]}
        if "rollout/queue_depth" in logged:
            bar["queue"] = logged["rollout/queue_depth"]
        self.log_dict(bar, prog_bar=True, logger=False, batch_size=batch.size)

    def configure_optimizers(self) -> Any:
        if self.adapters is not None:
            return None  # each user's optimizer lives with their adapter
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        groups = [
            {"params": [p for n, p in named if p.ndim >= 2], "weight_decay": self.weight_decay, "lr": self.lr},
            {"params": [p for n, p in named if p.ndim < 2], "weight_decay": 0.0, "lr": self.lr},
        ]
        if self.value_head is not None:
            groups.append({"params": list(self.value_head.parameters()), "weight_decay": 0.0, "lr": self.critic_lr})
        opt = torch.optim.AdamW([g for g in groups if g["params"]], betas=self.betas)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, functools.partial(lr_factor, warmup=self.warmup_steps, schedule=self.schedule, total=self.total_steps)
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    # -- weights for the engine -----------------------------------------------------------------
    def export_weights(self) -> dict[str, Tensor]:
        """The policy's weights under the plain model's names (LoRA merged), for the rollout engine."""
        from claw.lora import is_lora, merged_state_dict

        return merged_state_dict(self.model) if is_lora(self.model) else self.model.state_dict()

    def engine_weights(self) -> Iterator[tuple[str, Tensor]]:
        """`export_weights`, one tensor at a time. Sharded (layout.strategy=fsdp), each is gathered when reached:
        no second full model is held, and every rank must iterate, since each gather is a collective."""
        from claw.fsdp import full, is_sharded
        from claw.lora import is_lora, merged_weights

        if not is_sharded(self.model):
            yield from self.export_weights().items()
        elif is_lora(self.model):
            yield from merged_weights(self.model, gather=full)
        else:
            yield from ((name, full(t)) for name, t in self.model.state_dict().items())

    def configure_model(self) -> None:
        """Under layout.strategy=fsdp Lightning hands the module a device mesh: shard it over its data-parallel
        dimension (claw/fsdp.py; a two-dimensional mesh would make FSDP replicate instead)."""
        if self.device_mesh is not None:
            from claw.fsdp import shard

            shard(self, self.device_mesh["data_parallel"], self.trainer.strategy.root_device)

    # -- checkpoint ----------------------------------------------------------------------------
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["policy_version"] = self.policy_version
        checkpoint["objective"] = self.objective.state_dict()
        if self.adapters is not None:  # the base is frozen: the adapters' versions (on disk) are the state
            checkpoint["state_dict"] = {}
            checkpoint["adapters"] = self.adapters.save()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.policy_version = int(checkpoint.get("policy_version", 0))
        if self.adapters is not None:
            self.adapters.load(checkpoint.get("adapters", {}))
        if "objective" in checkpoint:
            self.objective.load_state_dict(checkpoint["objective"])
