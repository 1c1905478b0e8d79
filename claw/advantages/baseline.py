"""`baseline`: a running per-source baseline for groups of one (live turns).

A_i = r_i − b_{source(i)}, with b an exponential moving average of that source's recent rewards
(`RunningBaseline`, updated *after* the batch's advantages are computed, so a sample never sees its
own reward in its baseline). A lone +1 or −1 thus has a baseline; OpenClaw-RL uses the raw reward
(b = 0), which is `baseline=none` here (`momentum: 1.0` keeps b at its initial 0).
"""

from __future__ import annotations

from torch import Tensor

from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult


@ADVANTAGES.register("baseline")
def running_baseline(inputs: AdvantageInputs) -> AdvantageResult:
    if inputs.baseline is None:
        raise ValueError("the `baseline` estimator needs inputs.baseline (the objective's RunningBaseline)")
    adv = (inputs.rewards.float() - inputs.baseline.float()) * inputs.reward_present()  # r − b
    return AdvantageResult(advantages=adv.unsqueeze(-1) * inputs.response_mask)


class RunningBaseline:
    """EMA of rewards per source: b ← momentum · b + (1 − momentum) · mean(batch rewards of that source)."""

    def __init__(self, momentum: float = 0.9, initial: float = 0.0) -> None:
        if not 0.0 <= momentum <= 1.0:
            raise ValueError("baseline momentum must be in [0, 1]")
        self.momentum = momentum
        self.initial = initial
        self.values: dict[str, float] = {}

    def lookup(self, sources: list[str]) -> list[float]:
        return [self.values.get(s, self.initial) for s in sources]

    def update(self, sources: list[str], rewards: Tensor, present: Tensor) -> None:
        by_source: dict[str, list[float]] = {}
        for s, r, p in zip(sources, rewards.tolist(), present.tolist()):
            if p:
                by_source.setdefault(s, []).append(r)
        for s, rs in by_source.items():
            b = self.values.get(s, self.initial)
            self.values[s] = self.momentum * b + (1 - self.momentum) * sum(rs) / len(rs)

    def state_dict(self) -> dict:
        return {"values": dict(self.values)}

    def load_state_dict(self, state: dict) -> None:
        self.values = dict(state["values"])
