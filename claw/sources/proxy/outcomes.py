"""Every served main turn ends in exactly one recorded outcome: a sample, or a named reason.

An outcome is one `{"kind": "verdict", "turn_id", "sample", "reason", "verdict"}` line in
`proxy.jsonl` and one count in `/metrics` (`proxy_verdict_<reason>`; `proxy_samples` counts the
samples). The reasons are `OUTCOMES` below; docs/serving.md lists them too.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from claw.rollout.store import JsonlLog

log = logging.getLogger(__name__)

OUTCOMES: dict[str, str] = {
    "queued": "judged, and its sample is in the rollout queue (the only outcome that trains)",
    "no_signal": "judged: the PRM gave no reward (0 or abstained) and no hint was accepted",
    "hint_gated": "judged: only a hint, and the teacher shown it apologises instead of acting on it (mode.hint_gate)",
    "teacher_failed": "judged: only a hint, and the teacher failed to score it (a served teacher down or misaligned)",
    "judge_failed": "every judge call failed, `source.judge_retries` times over; feedback or a restart judge it again",
    "greedy_not_trained": "served at temperature 0: never trained (its log-probs describe no sampling)",
    "no_judge": "the proxy runs without judges",
    "retried": "a later request of the session sent the same history again (an SDK retry, a regenerate button)",
    "superseded": "a later request of the session branched away from this turn (an edited message)",
    "session_ended_without_reply": "the session ended (end call, X-Session-Done, idle timeout), its reply unanswered",
    "too_many_open_turns": "its session held more than `source.max_open_turns` unanswered turns; the oldest closes",
    "queue_closed": "the rollout queue closed (shutdown) before the sample could go in; a restart judges it again",
}
RECOVERABLE = frozenset({"judge_failed", "queue_closed"})  # judged again by `resume=` (they have a next state)
# outcomes after which the turn may still be judged (explicit feedback, a restart): the later record wins
REOPENABLE = frozenset({"no_signal"}) | RECOVERABLE


class Outcomes:
    """Writes and counts outcomes; refuses a second outcome for a turn unless the first can be reopened."""

    def __init__(self, log_file: JsonlLog, counts: Counter[str]) -> None:
        self.log, self.counts = log_file, counts

    def record(self, turn: Any, reason: str, verdict: dict[str, Any] | None = None, **extra: Any) -> bool:
        """Record `reason` for `turn` (a `Turn`: `turn.outcome` is set). False when it already had a final one."""
        if reason not in OUTCOMES:
            raise ValueError(f"unknown outcome {reason!r}; one of {', '.join(OUTCOMES)}")
        if turn.outcome is not None and turn.outcome not in REOPENABLE:
            self.counts["outcome_conflicts"] += 1
            log.warning("turn %s already has the outcome %s; %s not recorded", turn.turn_id, turn.outcome, reason)
            return False
        turn.outcome = reason
        sample = reason == "queued"
        self.counts[f"verdict_{reason}"] += 1
        self.counts["samples"] += sample
        self.log.append(
            {
                "kind": "verdict",
                "turn_id": turn.turn_id,
                "sample": sample,
                "reason": reason,
                "verdict": verdict,
                **extra,
            }
        )
        return True
