"""What one guard decision leaves behind: its line of `guard.jsonl`, its metrics, and its log line.

`GuardCallback` (claw/guard/callback.py) decides and acts; these functions only describe what it did, from the
decision, the evidence and the served state it left, so the decision log and the metrics always say the same.
"""

from __future__ import annotations

import time

from claw.guard.decision import Decision, Evidence
from claw.guard.state import ServedState


def decision_line(
    step: int,
    decision: Decision,
    ev: Evidence,
    state: ServedState,
    cost_s: float,
    reset_trainer: bool = False,
    would: Decision | None = None,
) -> dict:
    """The `guard.jsonl` line of a decision at `step`. `would`: in shadow mode (guard.observe), what the guard
    decided but did not do."""
    line = {
        "step": step,
        "time": time.time(),
        "action": decision.action,
        "reasons": list(decision.reasons),
        "served_version": state.version,
        "engine_version": state.engine_version,
        "promoted": [p.version for p in state.promoted],
        "reset_trainer": reset_trainer,
        "evidence": ev.to_json(),
        "cost_s": cost_s,
    }
    if would is not None:
        line["would"] = {"action": would.action, "reasons": list(would.reasons)}
    return line


def decision_metrics(
    decision: Decision,
    ev: Evidence,
    state: ServedState,
    cost_s: float,
    reset_trainer: bool = False,
    would: Decision | None = None,
    probe_s: float = 0.0,
) -> dict[str, float]:
    """The `guard/*` metrics of a decision: what it did, then each piece of evidence it had."""
    metrics = {
        "guard/promote": float(decision.action == "promote"),
        "guard/hold": float(decision.action == "hold"),
        "guard/rollback": float(decision.action == "rollback"),
        "guard/served_version": float(state.version),
        "guard/reset_trainer": float(reset_trainer),
        "guard/cost_s": cost_s,
    }
    if would is not None:
        metrics["guard/would_hold"] = float(would.action == "hold")
        metrics["guard/would_rollback"] = float(would.action == "rollback")
    return {**metrics, **evidence_metrics(ev, probe_s)}


def evidence_metrics(ev: Evidence, probe_s: float = 0.0) -> dict[str, float]:
    """The metrics of the evidence a decision had (none for a check that did not run)."""
    metrics: dict[str, float] = {}
    if ev.candidate is not None and ev.served is not None:
        metrics.update(
            {
                "guard/ope_value": ev.candidate.value,
                "guard/ope_ci_low": ev.candidate.ci_low,
                "guard/ope_ci_high": ev.candidate.ci_high,
                "guard/ess": ev.candidate.ess,
                "guard/ope_n": float(ev.candidate.n),
                "guard/served_value": ev.served.value,
            }
        )
    if ev.kl is not None:
        metrics["guard/kl"] = ev.kl
    if ev.probe_candidate is not None:
        metrics["guard/probe_candidate"] = ev.probe_candidate
        metrics["guard/probe_s"] = probe_s
    if ev.probe_served is not None:
        metrics["guard/probe_served"] = ev.probe_served
    if ev.live_served.n:
        metrics["guard/live_reward"] = ev.live_served.mean
    if ev.canary is not None:
        metrics.update(canary_metrics(ev.canary))
    return metrics


def canary_metrics(canary: dict) -> dict[str, float]:
    """The canary's arms (claw/guard/canary.py `CanaryResult.to_json`): turns, wait, and mean rewards when both
    arms have judged turns."""
    metrics = {
        "guard/canary_n": float(canary["candidate"]["n"]),
        "guard/canary_served_n": float(canary["served"]["n"]),
        "guard/canary_wait_s": canary["waited_s"],
    }
    if canary["candidate"]["n"] and canary["served"]["n"]:
        metrics["guard/canary_reward"] = canary["candidate"]["mean"]
        metrics["guard/canary_served_reward"] = canary["served"]["mean"]
    return metrics


def decision_summary(decision: Decision, would: Decision | None = None) -> str:
    """The reasons of a decision as the log line shows them, and in shadow mode what the guard would have done."""
    tag = f" ({'; '.join(decision.reasons)})" if decision.reasons else ""
    if would is not None:
        tag += f" [observe: would {would.action}{': ' + '; '.join(would.reasons) if would.reasons else ''}]"
    return tag
