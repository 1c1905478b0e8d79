"""Where samples wait and how the trainer reads them: the on-disk store, the `RolloutQueue`, the
`RolloutDataModule`, and the `Source` protocol every source in `claw/sources/` implements."""

from claw.rollout.queue import RolloutQueue, SampleStore

__all__ = ["RolloutQueue", "SampleStore"]
