"""A progress bar that counts rollout batches out of `steps` (the stream itself is unbounded), with the
key numbers: reward, latest eval score, queue depth, staleness, tokens/s."""

from __future__ import annotations

from lightning.pytorch.callbacks import TQDMProgressBar


class ClawProgressBar(TQDMProgressBar):
    def __init__(self, steps: int, evaluation=None) -> None:
        super().__init__(refresh_rate=1)
        self.steps = steps
        self.evaluation = evaluation  # HeldOutEval: its latest accuracy joins the bar

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
        results = getattr(self.evaluation, "results", None)
        if results:
            latest = max(
                (r for r in results.values() if isinstance(r, dict)), key=lambda r: r.get("policy_version", -1)
            )
            items["eval"] = f"{latest.get('headline', latest.get('accuracy', 0.0)):.3f}"
        return items
