"""`policy_version` names one set of weights, and a run directory never gives one number to two sets.

The trainer pushes new weights to the engine after every rollout batch but makes them durable only at
the next checkpoint (every `checkpoint_every` batches, at least `checkpoint_interval_s` apart). A crash
in between loses weights whose samples are already in the store (or in the proxy's turn log, judged on
resume). Restarting from the checkpoint's step and counting on would give those numbers to new,
different weights. So every number is written to `policy_versions.jsonl` (fsynced) *before* the engine
serves it, and a restart that finds numbers past its checkpoint's serves the restored weights under a
fresh number, `highest issued + 1`, and counts on from there.

Two counters follow, held in one `PolicyClock` (`claw/clock.py`) that the module, the datamodule and the
sync share: `trained` counts trained rollout batches (what `steps`, the ledger and evaluation count) and
`served` names weights (what samples carry and what staleness is measured in). They are equal until a
restart that lost versions, then differ by a constant. Measured in served versions, samples replayed
after such a restart look older by the number of lost versions plus one; those past `max_staleness` are
dropped and listed in the ledger, never trained on a guess of their age.
"""

from __future__ import annotations

from pathlib import Path

from claw.rollout.store import JsonlLog


class VersionLog:
    """Every served policy_version of a run directory, in issue order: `{"policy_version": v, "step": s}`."""

    def __init__(self, path: str | Path, fsync: bool = True) -> None:
        self.log = JsonlLog(path, fsync=fsync)

    def highest(self) -> int:
        """The highest number ever issued here (0, the initial weights, when none was)."""
        return max((int(r["policy_version"]) for r in self.log.read()), default=0)

    def issue(self, version: int, step: int) -> None:
        """Make `version` durable before any engine serves it (the weights trained for `step` batches)."""
        self.log.append({"policy_version": version, "step": step})

    def close(self) -> None:
        self.log.close()


def restart_version(checkpointed: int, highest: int) -> int:
    """The number under which a restarted run serves its restored weights.

    `checkpointed` names the restored weights; if a later number was ever issued, those weights were lost
    with the crash and the number may already label samples, so the restored weights get a fresh one.
    """
    return checkpointed if highest <= checkpointed else highest + 1
