"""A turn's life after its reply, in one place: the `TurnBook`.

The request handler (claw/sources/proxy/request.py) hands the book a `ServedTurn`, a plain record of what one
request served, before the reply leaves. From there the book owns the turn:
1. `record`: the turn is appended to `proxy.jsonl`, closes the open turns of its session that it retries or
   supersedes (claw/sources/proxy/continuation.py), joins its session, and past `max_open_turns` open turns
   the session's oldest closes (`too_many_open_turns`). A side turn is logged and counted, nothing more.
2. Its **next state** arrives (`take_next_states`: the session's next main request; `end_session`'s final
   messages; a `feedback` correction) and the turn is judged in the background (`start_judging`).
3. `label_and_queue`: the Labeller (claw/judge/labelling.py) turns it into a sample or a reason; the sample goes
   to the rollout queue, a canary turn's reward to the guard, and the outcome is recorded
   (claw/sources/proxy/outcomes.py).
4. A session ends (end call, `X-Session-Done`, idle timeout, eviction): its open turns are judged with whatever
   end signal exists (final messages, explicit feedback) or closed as `session_ended_without_reply`.

A turn is judged at most once at a time: `start_judging` sets `turn.judged` synchronously, before any await, so
whatever runs next on the loop (another feedback, the next request) sees the judgement as started: feedback then
gets 409 `being_judged`, and once the sample is queued 409 `already_judged`.

After a restart, claw/sources/proxy/recovery.py rebuilds the book's turns and sessions from the log. All of it
runs on the server's event loop (one thread): no locks.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from claw.engine.base import Generation
from claw.judge.labelling import Labeller
from claw.judge.turn import Message, Turn
from claw.rollout.queue import RolloutQueue
from claw.rollout.store import JsonlLog
from claw.sources.proxy import protocol as P
from claw.sources.proxy.canary import CanaryRouter, Route, turn_route
from claw.sources.proxy.continuation import read_request
from claw.sources.proxy.outcomes import REOPENABLE, Outcomes
from claw.sources.proxy.sessions import Session, Sessions
from claw.types import Sample

log = logging.getLogger("claw.sources.proxy.service")  # one logger for the proxy


@dataclass(kw_only=True)
class ServedTurn:
    """What one request served, as the request handler hands it over."""

    session: Session
    turn_type: str  # main (trained) | side (served and logged, never trained)
    messages: list[Message]  # the request's messages
    tools: list[dict] | None  # the tools the prompt was rendered with (None: none, or tool_choice none)
    prompt_ids: list[int]  # [P] what the engine consumed
    temperature: float  # the sampling temperature (0: greedy)
    generation: Generation  # [T] sampled ids and their log-probs, the policy version, stopped or cut
    response: Message  # the assistant message returned to the client
    response_text: str  # the raw decoded reply (reasoning and tool-call markup included)
    user: str | None = None  # who is speaking: their key's user, else the request's OpenAI `user`, else the default
    group_id: str | None = None  # `X-Group-Id`
    route: Route | None = None  # (canary id, arm) while a canary runs
    ends_session: bool = False  # `X-Session-Done`


class TurnBook:
    def __init__(
        self, sessions: Sessions, log_file: JsonlLog, labeller: Labeller, counts: Counter[str], max_open_turns: int
    ) -> None:
        self.sessions, self.log, self.labeller, self.counts = sessions, log_file, labeller, counts
        self.max_open_turns = max_open_turns
        self.outcomes = Outcomes(log_file, counts)
        self.queue: RolloutQueue | None = None  # set when the source starts
        self.canary: CanaryRouter | None = None  # set while guard.checks has canary (ProxySource.serve_canary)
        # Samples enter the queue from one thread of their own: while the queue is full (a trainer waiting for a
        # canary's decision), blocked puts wait here instead of filling the loop's default executor, which
        # judges and teachers need (asyncio.to_thread).
        self._queue_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claw-proxy-queue")
        self.judging: set[asyncio.Task] = set()  # judgements in flight

    # -- a served turn ---------------------------------------------------------------------------
    def record(self, served: ServedTurn) -> Turn | None:
        """Append the served turn to the log (before the reply is sent); a main turn joins its session."""
        session, gen = served.session, served.generation
        canary, arm = turn_route(served.route, gen) or (None, None)
        turn = Turn(
            turn_id="t-" + uuid.uuid4().hex[:20],
            session_id=session.session_id,
            turn_index=session.n_turns,
            messages=served.messages,
            tools=served.tools,
            prompt_ids=served.prompt_ids,
            response_ids=gen.response_ids,
            rollout_logprobs=gen.logprobs,
            temperature=served.temperature,
            policy_version=gen.policy_version,
            finished=gen.finished,
            response=served.response,
            response_text=served.response_text,
            user=served.user,
            group_id=served.group_id,
            arm=arm,
            canary=canary,
        )
        if served.turn_type == "side":
            self.log.append({
                "kind": "side", "session_id": session.session_id, "turn_id": turn.turn_id,
                "policy_version": gen.policy_version,
                "n_prompt": len(served.prompt_ids), "n_response": len(gen.response_ids),
                **({"arm": arm, "canary": canary} if arm else {}),
            })  # fmt: skip
            self.counts["turns_side"] += 1
            return None
        self.log.append(turn.to_json())
        reading = read_request(turn.messages, session.open_turns())
        for reason, turns in (("retried", reading.retried), ("superseded", reading.superseded)):
            for earlier in turns:
                self.outcomes.record(earlier, reason, by=turn.turn_id)
        self.sessions.add_turn(session, turn)
        self.close_oldest_open_turns(session)
        self.counts["turns_main"] += 1
        if served.ends_session:
            self.end_session(session.session_id, "done_header")
        return turn

    def close_oldest_open_turns(self, session: Session) -> None:
        """A session holds at most `max_open_turns` turns waiting for their next state: past that its oldest close
        (`too_many_open_turns`), so a client that fans out requests and never answers cannot grow memory."""
        open_turns = session.open_turns()
        for turn in open_turns[: max(0, len(open_turns) - self.max_open_turns)]:
            self.outcomes.record(turn, "too_many_open_turns")
        self.sessions.trim(session)

    # -- what follows a reply ----------------------------------------------------------------------
    def take_next_states(self, session: Session, messages: list[Message]) -> None:
        """A new main request of `session`: each open turn whose reply its history holds gets its next state."""
        for turn, next_state in read_request(messages, session.open_turns()).continued:
            self.attach_next_state(turn, next_state, via="request")

    def attach_next_state(self, turn: Turn, next_state: list[Message], via: str) -> None:
        turn.next_state = next_state
        self.log.append({"kind": "next_state", "turn_id": turn.turn_id, "messages": next_state, "via": via})
        self.start_judging(turn)

    def end_session(
        self, sid: str, reason: str, final_messages: list[Message] | None = None, user: str | None = None
    ) -> bool:
        """End a live session (False when there is none, or `user`, proven by a key, is not its owner)."""
        live = self.sessions.live.get(sid)
        if live is None or (user is not None and not self.sessions.owned_by(live, user)):
            return False
        session = self.sessions.close(sid)
        if session is None:
            return False
        self.log.append(
            {"kind": "end", "session_id": sid, "reason": reason}, sync=reason == "end_call"
        )  # answered over HTTP: on disk first
        self.counts[f"sessions_ended_{reason}"] += 1
        open_turns = session.open_turns()
        if final_messages and open_turns:  # a whole history says which turn it answers; bare messages answer the last
            continued = read_request(final_messages, open_turns).continued or [(open_turns[-1], final_messages)]
            for turn, next_state in continued:
                self.attach_next_state(turn, next_state, via=f"end:{reason}")
        for turn in session.open_turns():
            if turn.feedback is not None:
                self.start_judging(turn)
            else:  # nothing answered the reply: no consequence to judge, and that is written down
                self.outcomes.record(turn, "session_ended_without_reply")
        return True

    def reap_idle(self) -> list[str]:
        ended = self.sessions.idle()
        for sid in ended:
            self.end_session(sid, "idle_timeout")
        return ended

    def feedback(
        self,
        session_id: str,
        turn_id: str | None,
        reward: float | None,
        correction: str | None,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Explicit feedback on a turn; `user` (proven by a key) must own its session (else 404, as for none)."""
        turn = self._feedback_turn(session_id, turn_id, user)
        turn.feedback = {"reward": reward, "correction": correction}
        self.log.append(
            {"kind": "feedback", "turn_id": turn.turn_id, "reward": reward, "correction": correction}, sync=True
        )  # "accepted" means on disk
        self.counts["feedback"] += 1
        if correction and turn.next_state is None:
            turn.next_state = [{"role": "user", "content": correction}]
            self.log.append(
                {"kind": "next_state", "turn_id": turn.turn_id, "messages": turn.next_state, "via": "feedback"}
            )
        # A turn judged without a sample (no signal, judges failed) is judged afresh with the feedback. It reads
        # "being judged" from this line on, before any await: a second feedback now gets 409, never a second sample.
        turn.outcome, turn.judged = None, False
        self.start_judging(turn)
        return {"turn_id": turn.turn_id, "session_id": session_id, "status": "accepted"}

    def _feedback_turn(self, session_id: str, turn_id: str | None, user: str | None = None) -> Turn:
        """The turn feedback names (its session's last when `turn_id` is None), or the APIError that says why not."""
        session = self.sessions.live.get(session_id)
        turn = None
        if session is not None and (user is None or self.sessions.owned_by(session, user)):
            turn = (
                next((t for t in session.turns if t.turn_id == turn_id), None)
                if turn_id
                else (session.turns[-1] if session.turns else None)
            )
        if turn is None:
            raise P.APIError(
                404,
                f"no open session {session_id!r} with turn {turn_id or '(last)'}; "
                "feedback attaches to turns of live sessions",
                "session_id",
                "not_found",
            )
        if turn.outcome == "queued":
            raise P.APIError(
                409,
                f"turn {turn.turn_id} was already judged and queued for training; send feedback before the next turn",
                "turn_id",
                "already_judged",
            )
        if turn.outcome is not None and turn.outcome not in REOPENABLE:
            raise P.APIError(
                409,
                f"turn {turn.turn_id} is closed ({turn.outcome}); feedback cannot train it",
                "turn_id",
                "turn_closed",
            )
        if turn.judged and turn.outcome is None:
            raise P.APIError(
                409,
                f"turn {turn.turn_id} is being judged right now; its feedback came too late",
                "turn_id",
                "being_judged",
            )
        return turn

    # -- judging ---------------------------------------------------------------------------------
    def start_judging(self, turn: Turn) -> None:
        """Judge `turn` in the background, at most once at a time: `turn.judged` is set here, synchronously, so
        whatever runs next on the loop (another feedback, the next request) sees the judgement as started."""
        if turn.judged:
            return
        turn.judged = True
        task = asyncio.get_running_loop().create_task(self.label_and_queue(turn))
        self.judging.add(task)
        task.add_done_callback(self.judging.discard)

    async def label_and_queue(self, turn: Turn) -> None:
        """Label a turn whose judgement `start_judging` started, queue its sample, record its outcome."""
        try:
            reason, verdict, sample = await self.labeller.label(turn)
            if sample is not None and turn.arm is not None and self.canary is not None and sample.reward is not None:
                self.canary.observe(turn.canary, turn.arm, sample.reward)  # canary traffic: its reward to the guard
            if sample is not None:
                if self.queue is None:
                    raise RuntimeError("the proxy has no rollout queue: samples have nowhere to go")
                # the turn and its next state are on disk before its sample is (restart order)
                await self.log.durable()
                put = asyncio.get_running_loop().run_in_executor(self._queue_thread, self._put, sample)
                reason = "queued" if await put else "queue_closed"
            self.outcomes.record(turn, reason, verdict.to_json() if verdict else None)
        except Exception as e:  # never lose the turn: it stays on disk, unjudged, and is re-judged on restart
            log.exception("judging turn %s failed", turn.turn_id)
            self.counts["judge_errors"] += 1
            self.log.append({"kind": "error", "turn_id": turn.turn_id, "error": repr(e)})

    def _put(self, sample: Sample) -> bool:
        while not self.queue.put([sample], timeout=1.0):
            if self.queue.closed:
                return False
        return True

    async def drain(self, timeout: float = 60.0) -> None:
        """Wait for judgements in flight (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while self.judging and time.monotonic() < deadline:
            await asyncio.wait(list(self.judging), timeout=max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Stop handing samples to the queue (the source stops)."""
        self._queue_thread.shutdown(wait=False, cancel_futures=True)
