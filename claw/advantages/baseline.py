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
    """EMA of rewards per source: b ← momentum · b + (1 − momentum) · mean(batch rewards of that source).

    `warm_start` (default): an EMA that starts at `initial` (0) is biased towards it for its first
    batches — with rewards that are mostly −1 (a strict user), every sampled response then gets a
    strongly negative advantage, and the update pushes down whatever was sampled. So, as Adam does
    for its moments, the EMA is bias-corrected by 1 − momentumⁿ after n batches, and a source with no
    history yet uses the leave-one-out mean of the other rewarded samples of its own batch (a sample
    still never sees its own reward). `warm_start=False` is the plain EMA from `initial`.
    """

    def __init__(self, momentum: float = 0.9, initial: float = 0.0, warm_start: bool = True) -> None:
        if not 0.0 <= momentum <= 1.0:
            raise ValueError("baseline momentum must be in [0, 1]")
        self.momentum = momentum
        self.initial = initial
        self.warm_start = warm_start and momentum < 1.0  # momentum 1 keeps b at `initial` (`baseline=none`)
        self.values: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def _value(self, source: str) -> float | None:
        """The baseline of a source with history (None without)."""
        if source not in self.values:
            return None
        if not self.warm_start:
            return self.values[source]
        decay = self.momentum ** self.counts.get(source, 0)
        return (self.values[source] - decay * self.initial) / (1.0 - decay) if decay < 1.0 else self.initial

    def lookup(self, sources: list[str], rewards: Tensor | None = None, present: Tensor | None = None) -> list[float]:
        """Per sample: its source's baseline; without history (warm start), the leave-one-out mean of the
        batch's other rewarded samples of that source (needs `rewards` and `present`), else `initial`."""
        out = []
        for i, s in enumerate(sources):
            value = self._value(s)
            if value is None and self.warm_start and rewards is not None and present is not None:
                others = [
                    float(r)
                    for j, (t, r, p) in enumerate(zip(sources, rewards.tolist(), present.tolist()))
                    if j != i and t == s and p
                ]
                value = sum(others) / len(others) if others else None
            out.append(self.initial if value is None else value)
        return out

    def update(self, sources: list[str], rewards: Tensor, present: Tensor) -> None:
        by_source: dict[str, list[float]] = {}
        for s, r, p in zip(sources, rewards.tolist(), present.tolist()):
            if p:
                by_source.setdefault(s, []).append(r)
        for s, rs in by_source.items():
            b = self.values.get(s, self.initial)
            self.values[s] = self.momentum * b + (1 - self.momentum) * sum(rs) / len(rs)
            self.counts[s] = self.counts.get(s, 0) + 1

    def state_dict(self) -> dict:
        return {"values": dict(self.values), "counts": dict(self.counts)}

    def load_state_dict(self, state: dict) -> None:
        self.values = dict(state["values"])
        self.counts = dict(state.get("counts", {}))
