"""Where samples come from (sources) and where they wait (the `RolloutQueue`)."""

from claw.rollout.queue import RolloutQueue, SampleStore

__all__ = ["RolloutQueue", "SampleStore"]
