"""What the engine serves, on disk: `<run dir>/guard/served.json` and the promoted weights.

Versions. `version` is the trainer's policy version whose weights are served (a promoted
candidate); `engine_version` is the label the engine tags samples with. They differ after a hold
that resets the trainer or after a rollback: the served weights are re-published under the
trainer's current version, so the queue's staleness (counted in labels) stays bounded. `labels`
maps every label ever published to the version whose weights it carried.

Every promoted version's weights (merged, the engine's names) are written as safetensors to
`<run dir>/guard/v<version>-<promotion>.safetensors` *before* served.json names them, and
served.json is replaced atomically (temp file, fsync, rename) *before* the engine loads them: after
`kill -9` at any point, served.json names weights that are complete on disk and were (or were
about to be) served. The last `keep_promoted` promoted versions are kept (rollback targets).

A canary in flight (claw/guard/canary.py) is written to served.json (`canary`) before the engine serves
the candidate to its arm, and cleared with its decision: a restart that finds one records it as cut
(guard.jsonl) and serves the promoted version. `canaries` counts canaries started, so each has an id
(`c<count>-v<version>`) no restart reuses: rewards of an older canary's turns never count for a new one.

Manual rollback (`python -m claw.rollback`) writes `guard/rollback_request.json`; the guard applies
it at its next decision (the next step of a running trainer, or the start of `resume=`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from claw.guard.decision import LiveReward


@dataclass
class Promoted:
    version: int
    file: str  # relative to <run dir>/guard
    step: int  # trainer step at which it was promoted


@dataclass
class ServedState:
    version: int = 0
    engine_version: int = 0
    promoted: list[Promoted] = field(default_factory=list)  # the promotion stack, oldest first; [-1] is served
    labels: dict[int, int] = field(default_factory=dict)  # engine label -> version whose weights it carried
    live: dict[int, LiveReward] = field(default_factory=dict)  # version -> judged rewards of its turns
    promotions: int = 0  # promotions so far (makes weight file names unique across a resume)
    probe: dict[int, float] = field(default_factory=dict)  # version -> its probe score (guard.checks has probe)
    canary: dict | None = None  # the canary in flight: {"id", "version", "fraction", "started"} (claw/guard/canary.py)
    canaries: int = 0  # canaries started so far (makes canary ids unique across a resume)

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "engine_version": self.engine_version,
            "promoted": [asdict(p) for p in self.promoted],
            "labels": {str(k): v for k, v in self.labels.items()},
            "live": {str(k): [v.n, v.total, v.total_sq] for k, v in self.live.items()},
            "promotions": self.promotions,
            "probe": {str(k): v for k, v in self.probe.items()},
            "canary": self.canary,
            "canaries": self.canaries,
        }

    @classmethod
    def from_json(cls, d: dict) -> ServedState:
        return cls(
            version=int(d["version"]),
            engine_version=int(d["engine_version"]),
            promoted=[Promoted(**p) for p in d["promoted"]],
            labels={int(k): int(v) for k, v in d["labels"].items()},
            live={int(k): LiveReward(int(v[0]), float(v[1]), float(v[2])) for k, v in d["live"].items()},
            promotions=int(d.get("promotions", len(d["promoted"]))),
            probe={int(k): float(v) for k, v in d.get("probe", {}).items()},
            canary=d.get("canary"),
            canaries=int(d.get("canaries", 0)),
        )

    def find(self, version: int) -> Promoted | None:
        return next((p for p in reversed(self.promoted) if p.version == version), None)


class GuardDir:
    """`<run dir>/guard`: served.json, promoted weights, the manual rollback request."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / "guard"
        self.served_path = self.path / "served.json"
        self.request_path = self.path / "rollback_request.json"

    def load(self) -> ServedState | None:
        return ServedState.from_json(json.loads(self.served_path.read_text())) if self.served_path.exists() else None

    def save(self, state: ServedState) -> None:
        write_json_atomic(self.served_path, state.to_json())

    def save_weights(self, weights: dict[str, torch.Tensor], name: str) -> None:
        """safetensors refuses shared storage (tied embeddings): every tensor is cloned to its own."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / (name + ".tmp")
        save_file({k: v.detach().to("cpu", copy=True).contiguous() for k, v in weights.items()}, str(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.path / name)

    def load_weights(self, name: str) -> dict[str, torch.Tensor]:
        return load_file(str(self.path / name))

    def remove(self, name: str) -> None:
        (self.path / name).unlink(missing_ok=True)

    def pending_request(self) -> int | None:
        """The version a manual rollback asked for, or None. `clear_request` once served.json reflects it."""
        if not self.request_path.exists():
            return None
        return int(json.loads(self.request_path.read_text())["to_version"])

    def clear_request(self) -> None:
        self.request_path.unlink(missing_ok=True)

    def request(self, version: int) -> None:
        write_json_atomic(self.request_path, {"to_version": version})


def write_json_atomic(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# The outcomes of a rollback request (the CLI prints them; the proxy's POST /admin/rollback maps them to statuses).
REQUESTED, ALREADY_SERVED, UNKNOWN_VERSION, NO_GUARD = "requested", "already_served", "unknown_version", "no_guard"


def request_rollback(run_dir: str | Path, to_version: int) -> tuple[str, str]:
    """Ask the guard of the run in `run_dir` to serve its promoted version `to_version` again.

    Writes `guard/rollback_request.json` when `to_version` is a kept promoted version (its weights on
    disk) that is not already served; the guard applies it at its next decision. Returns (outcome,
    message) with outcome one of REQUESTED, ALREADY_SERVED, UNKNOWN_VERSION, NO_GUARD."""
    guard = GuardDir(run_dir)
    state = guard.load()
    if state is None:
        return (
            NO_GUARD,
            f"{run_dir}: no guard/served.json; only runs trained with a guard (guard=ope) can be rolled back",
        )
    kept = [p.version for p in state.promoted if (guard.path / p.file).exists()]
    if to_version not in kept:
        return (
            UNKNOWN_VERSION,
            f"version {to_version} is not a kept promoted version of this run; kept: {kept} (guard.keep_promoted)",
        )
    if to_version == state.version and guard.pending_request() is None:
        return ALREADY_SERVED, f"version {to_version} is already served"
    guard.request(to_version)
    return (
        REQUESTED,
        f"rollback to version {to_version} requested: the running trainer applies it at its next rollout batch",
    )
