"""`PolicyClock`: the run's one policy-version counter, made once by train.py and shared by the module
(which counts its updates and checkpoints them), the datamodule (which measures staleness) and the
weight-sync callback (which stamps what the engine serves).

- `trained`: rollout batches trained = updates made (what `steps`, the ledger and evaluation count).
- `served`: the number the engine's weights carry, which samples are stamped with and staleness is
  measured in. It equals `trained` until a restart that lost served versions (claw/versions.py: the
  restored weights get a fresh number), then differs by a constant.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PolicyClock:
    trained: int = 0
    served: int = 0

    def advance(self) -> None:
        """One more update trained, and its weights served under the next number."""
        self.trained += 1
        self.served += 1
