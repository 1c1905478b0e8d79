"""A progress bar that counts rollout batches out of `steps` (the stream itself is unbounded)."""

from __future__ import annotations

from lightning.pytorch.callbacks import TQDMProgressBar


class ClawProgressBar(TQDMProgressBar):
    def __init__(self, steps: int) -> None:
        super().__init__(refresh_rate=1)
        self.steps = steps

    def on_train_epoch_start(self, trainer, module) -> None:
        super().on_train_epoch_start(trainer, module)
        self.train_progress_bar.reset(total=self.steps)
        self.train_progress_bar.initial = module.policy_version
        self.train_progress_bar.set_description("rollout batches")

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        bar = self.train_progress_bar
        bar.n = module.policy_version
        bar.set_postfix(self.get_metrics(trainer, module), refresh=False)
        bar.refresh()

    def get_metrics(self, trainer, module):
        items = super().get_metrics(trainer, module)
        items.pop("v_num", None)
        return items
