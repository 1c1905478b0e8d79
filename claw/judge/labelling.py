"""The one place a served turn becomes training data: a turn with its next state → a verdict → a `Sample`, or
the reason there is none (`Labeller.label`).

It owns everything between the served turn and the sample: which judges the mode needs (`Mode`), the
explicit user rating outranking the judge, the hint applied to the teacher's context, the teacher's
log-probs, the reward, and the `Sample` itself (a canary turn's arm goes into its `info` from `Turn.arm`).
Its input is a served `Turn` (claw/judge/turn.py) and a function that renders a conversation to the
policy's prompt ids; it never calls back into the proxy. The proxy only serves, records and queues what
this returns.

The judges the mode needs run on the turn (PRM → reward, hint → teacher log-probs). A judge outage
is retried: when every judge call failed, the turn is judged again up to `judge_retries` times,
waiting `judge_retry_backoff_s`, then twice that, and so on. An explicit `/v1/feedback` reward is
a signal of its own: if the judges still fail, the sample is made from that reward alone (no hint). A teacher that
fails (`TeacherError`: a served teacher down, or its log-probs misaligned) leaves the turn to its reward alone too,
counted as `teacher_failed` (and the outcome `teacher_failed` where there is no reward).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from claw.judge.build import Judges
from claw.judge.metrics import JudgeStats
from claw.judge.teacher import UNSCORED, Teacher, TeacherScores
from claw.judge.teacher_served import TeacherError
from claw.judge.turn import Message, Turn
from claw.judge.verdict import TurnVerdict, judge_turn
from claw.modes import Mode
from claw.types import Sample

log = logging.getLogger(__name__)

RenderContext = Callable[[list[Message], list[dict] | None], list[int]]  # (messages, tools) → prompt ids


class Labeller:
    def __init__(
        self,
        judges: Judges | None,
        teacher: Teacher | None,
        render: RenderContext,
        mode: Mode | str,
        topk: int,
        judge_retries: int,
        judge_retry_backoff_s: float,
        stats: JudgeStats,
        counts: Counter[str],
    ) -> None:
        self.judges, self.teacher, self.render, self.mode, self.topk = judges, teacher, render, Mode.named(mode), topk
        self.judge_retries, self.judge_retry_backoff_s = judge_retries, judge_retry_backoff_s
        self.stats, self.counts = stats, counts

    async def verdict(self, turn: Turn) -> TurnVerdict:
        """The judges' verdict, retried with backoff while every judge call fails."""
        for attempt in range(self.judge_retries + 1):
            verdict = await judge_turn(self.judges, turn, self.mode, self.stats)
            if verdict.status != "unjudged" or attempt == self.judge_retries:
                return verdict
            self.counts["judge_retries"] += 1
            await asyncio.sleep(self.judge_retry_backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    async def label(self, turn: Turn) -> tuple[str, TurnVerdict | None, Sample | None]:
        """(outcome reason, verdict, sample); the sample is None unless the reason is `queued`."""
        mode, fb = self.mode, turn.feedback or {}
        if turn.temperature <= 0:
            return "greedy_not_trained", None, None
        if self.judges is None:
            return "no_judge", None, None
        next_state = with_correction(turn.next_state, fb.get("correction"))
        verdict = await self.verdict(replace(turn, next_state=next_state))
        explicit = fb.get("reward") is not None and mode.uses_reward
        if explicit:
            verdict.reward = float(fb["reward"])  # an explicit user rating outranks the judge's reading
        if verdict.status == "unjudged" and not explicit:
            return "judge_failed", verdict, None
        if not mode.uses_hint:
            verdict.hint = None
        if not mode.uses_reward:
            verdict.reward = None
        if not verdict.trainable:
            return "no_signal", verdict, None
        teacher, gated, failed = UNSCORED, False, False
        if verdict.hint is not None and self.teacher is not None:
            teacher, failed = await self.teacher_scores(turn, verdict.hint)
            gated = (
                not teacher.scored and not failed
            )  # the gate (`mode.hint_gate`) dropped it: the reward alone trains
            if gated:
                self.counts["hint_gated"] += 1
            if not teacher.scored and verdict.reward is None:
                return ("teacher_failed" if failed else "hint_gated"), verdict, None
        sample = Sample(
            prompt_ids=turn.prompt_ids,
            response_ids=turn.response_ids,
            rollout_logprobs=turn.rollout_logprobs,
            temperature=turn.temperature,
            policy_version=turn.policy_version,
            reward=verdict.reward,
            teacher_logprobs=teacher.logprobs,
            teacher_topk_ids=teacher.topk_ids,
            teacher_topk_logprobs=teacher.topk_logprobs,
            group_id=turn.group_id or turn.turn_id,  # the advantage's group (samples of one batch sharing it)
            group_size=1,  # accepted alone: a session's turn reaches the queue when it is judged
            source="proxy",
            session_id=turn.session_id,
            user=turn.user or "",
            turn_index=turn.turn_index,
            finished=turn.finished,
            sample_id=turn.turn_id,
            info={
                "response": turn.response_text,
                "next_state": next_state,
                "hint": verdict.hint,
                "hint_gated": gated,
                **({"teacher_failed": True} if failed else {}),
                "prompt": turn.messages[-1].get("content"),
                # canary traffic: the arm that served the turn (claw/sources/proxy/canary.py)
                **({"arm": turn.arm, "canary": turn.canary} if turn.arm is not None else {}),
            },
        )
        return "queued", verdict, sample

    async def teacher_scores(self, turn: Turn, hint: str) -> tuple[TeacherScores, bool]:
        """(the teacher's scores of the turn under `hint`, whether the teacher failed). A teacher that fails (a served
        one down, or its answer misaligned: `TeacherError`) leaves the turn to its reward, counted and logged."""
        contexts = self.teacher.contexts(turn.messages, hint, lambda m: self.render(m, turn.tools))
        try:
            scores = await asyncio.to_thread(
                self.teacher.score_contexts, [contexts], [turn.response_ids], turn.temperature, self.topk
            )
        except TeacherError as e:
            self.counts["teacher_failed"] += 1
            log.warning("turn %s: no teacher log-probs, the reward alone trains it: %s", turn.turn_id, e)
            return UNSCORED, True
        return scores[0], False


def with_correction(next_state: list[Message] | None, correction: str | None) -> list[Message]:
    """The next state a judge reads: what followed the reply, then an explicit `/v1/feedback` correction as the
    user's last word (it is what the user says of this reply, so it outranks a reply that came before it)."""
    state = list(next_state or [])
    said = {"role": "user", "content": correction}
    if correction and (not state or state[-1] != said):
        state.append(said)
    return state
