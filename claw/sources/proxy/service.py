"""The proxy's logic, independent of HTTP: serve a chat request, record the turn, judge it when its
next state arrives, and hand the resulting sample to the rollout queue.

Life of a main turn
1. A request arrives and is rendered once to prompt ids (in a worker thread) and checked against the
   context, before its session is touched: a refused request opens, refreshes and evicts no session.
   Its session is resolved (`Sessions.resolve`). For each of the session's open
   turns whose reply the request's history contains, the messages after that reply are its **next
   state**: it is recorded and the turn is judged in the background (`label_and_queue`). A request that
   re-sends an open turn's history, or branches away from it, does not judge it: when its own turn
   is recorded, the open turn's outcome is `retried` or `superseded` (claw/sources/proxy/continuation.py).
2. The engine generates from the prompt ids (batched with other
   requests), and the turn — prompt ids, sampled ids, their log-probs, temperature, policy
   version — is appended to `proxy.jsonl` *before* the reply leaves the server. A session holds at most
   `max_open_turns` turns waiting for their next state; past that its oldest closes (`too_many_open_turns`).
3. `label_and_queue` labels the turn (claw/judge/labelling.py: judges with retries → verdict → sample) and
   puts a one-sample group into the rollout queue (persisted there).
4. A session ends on `X-Session-Done`, `POST /v1/sessions/{id}/end`, or idle timeout: its open
   turns are judged with whatever end signal exists (final messages, explicit feedback) or closed
   as `session_ended_without_reply`.
Every main turn ends in exactly one recorded outcome (claw/sources/proxy/outcomes.py).

Canary traffic (guard.checks has canary; claw/sources/proxy/canary.py): while the guard runs a canary,
a new session's first turn enrols it in the candidate's arm or the served arm; its requests are decoded
by that arm's weights, its turns record the arm, and their judged rewards go to the guard.

One request's streaming and final message: claw/sources/proxy/request.py. Restart (claw/sources/proxy/recovery.py):
`recover()` replays `proxy.jsonl`: turns that had a next state but no sample (or whose
judges all failed) are judged again, and open sessions come back, so a client that continues after
the crash links up.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from claw.engine.base import Engine, Generation, SamplingParams
from claw.judge.build import Judges
from claw.judge.labelling import Labeller
from claw.judge.metrics import JudgeStats
from claw.judge.teacher import Teacher
from claw.judge.turn import Turn
from claw.rollout.queue import RolloutQueue
from claw.rollout.store import JsonlLog
from claw.sources.proxy import protocol as P
from claw.sources.proxy.batcher import Batcher
from claw.sources.proxy.canary import CanaryRouter, turn_route
from claw.sources.proxy.continuation import read_request
from claw.sources.proxy.outcomes import REOPENABLE, Outcomes
from claw.sources.proxy.recovery import recover
from claw.sources.proxy.render import ChatRenderer
from claw.sources.proxy.request import RequestContext
from claw.sources.proxy.sessions import Session, Sessions
from claw.sources.proxy.telemetry import Telemetry
from claw.types import Sample

log = logging.getLogger(__name__)


@dataclass
class ProxySettings:
    model_name: str = "claw-policy"
    mode: str = "combine"  # rl | opd | combine: which judges run
    min_temperature: float = 0.2  # trainable turns are sampled at the request's temperature clamped to this range
    max_temperature: float = 1.5
    default_max_tokens: int = 256
    max_tokens_cap: int = 1024
    max_context_tokens: int = 2048  # prompt + max tokens must fit
    ignore_top_p: bool = False
    idle_timeout_s: float = 600.0
    max_live_sessions: int = 10_000  # past this, the least recently seen session ends (reason `evicted`)
    max_open_turns: int = 64  # unanswered turns a session holds; past this the oldest closes (`too_many_open_turns`)
    keep_closed_turns: int = 8  # judged turns a live session keeps in memory (all are in proxy.jsonl)
    topk: int = 0
    judge_retries: int = 3  # a turn whose judge calls all failed is judged again this many times...
    judge_retry_backoff_s: float = 5.0  # ...after this wait, doubled each time


class Proxy:
    def __init__(
        self,
        engine: Engine,
        tokenizer,
        run_dir: str | Path,
        settings: ProxySettings,
        batcher: Batcher,
        judges: Judges | None = None,
        teacher: Teacher | None = None,
        fsync: bool = True,
    ) -> None:
        if settings.max_open_turns < 1:
            raise ValueError(
                f"source.max_open_turns={settings.max_open_turns}: a session must hold at least its newest turn "
                "until it is answered; set it to 1 or more"
            )
        self.engine, self.tokenizer, self.settings = engine, tokenizer, settings
        self.renderer = ChatRenderer(tokenizer)
        self.batcher = batcher
        self.judges, self.teacher = judges, teacher
        self.sessions = Sessions(settings.idle_timeout_s, settings.max_live_sessions, settings.keep_closed_turns)
        # group commit: lines are written at once, fsynced by a writer thread; a reply awaits its turn's fsync
        self.log = JsonlLog(Path(run_dir) / "proxy.jsonl", fsync=fsync, group_commit=True)
        self.queue: RolloutQueue | None = None
        self.canary: CanaryRouter | None = None  # set while guard.checks has canary (ProxySource.serve_canary)
        # Samples enter the queue from one thread of their own: while the queue is full (a trainer waiting for a
        # canary's decision), blocked puts wait here instead of filling the loop's default executor, which
        # judges and teachers need (asyncio.to_thread).
        self._queue_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="claw-proxy-queue")
        self.judge_stats = JudgeStats()
        self.counts: Counter[str] = Counter()
        self.outcomes = Outcomes(self.log, self.counts)
        self.labeller = Labeller(
            judges, teacher, self.renderer.render, settings.mode, settings.topk, settings.judge_retries,
            settings.judge_retry_backoff_s, self.judge_stats, self.counts,
        )  # fmt: skip
        self.telemetry = Telemetry()  # latency / TTFT / queue wait / batch size: histograms + fixed windows
        batcher.on_batch = self.telemetry.observe_batch
        self._tasks: set[asyncio.Task] = set()

    # -- requests --------------------------------------------------------------------------------
    def sampling_for(self, req: P.ChatRequest, prompt_len: int) -> SamplingParams:
        s = self.settings
        max_new = min(req.max_tokens or s.default_max_tokens, s.max_tokens_cap)
        if prompt_len + max_new > s.max_context_tokens:
            if prompt_len >= s.max_context_tokens:
                raise P.APIError(
                    400,
                    f"the prompt is {prompt_len} tokens; this model's context is {s.max_context_tokens}",
                    "messages",
                    "context_length_exceeded",
                )
            max_new = s.max_context_tokens - prompt_len
        temperature = 0.0 if req.temperature == 0 else min(max(req.temperature, s.min_temperature), s.max_temperature)
        return SamplingParams(temperature=temperature, max_new_tokens=max_new, seed=req.seed)

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> list[int]:
        """The request's prompt ids; run in a worker thread (tokenising 4 MB takes seconds). A rendered prompt of
        more characters than the context holds at the tokenizer's longest token cannot fit, and is refused before it
        is tokenised."""
        ctx, per_token = self.settings.max_context_tokens, self.renderer.max_chars_per_token
        try:
            if per_token is not None:
                n = len(self.renderer.render_text(messages, tools))
                if n > ctx * per_token:
                    raise P.APIError(
                        400,
                        f"the prompt is {n} characters; this model's context is {ctx} tokens "
                        f"(at most {ctx * per_token} characters: no token is longer than {per_token})",
                        "messages",
                        "context_length_exceeded",
                    )
            return self.renderer.render(messages, tools)
        except TemplateError as e:  # the model's chat template refused the conversation (e.g. roles out of order)
            raise P.bad(f"the chat template cannot render these messages: {e.message}", "messages") from None

    async def chat(
        self, req: P.ChatRequest, headers: dict[str, str]
    ) -> tuple[dict[str, Any] | AsyncIterator[str], dict[str, str]]:
        """Serve one request: (a completion body, or an SSE stream of chunks; response headers)."""
        t0 = time.perf_counter()
        turn_type = headers.get("x-turn-type", "main").lower()
        if turn_type not in ("main", "side"):
            raise P.bad("X-Turn-Type must be 'main' or 'side'", "X-Turn-Type")
        done_header = headers.get("x-session-done", "").lower() in ("1", "true", "yes")
        group_id = headers.get("x-group-id") or None
        if group_id is not None and (len(group_id) > 200 or not group_id.isprintable()):
            raise P.bad("X-Group-Id must be printable and at most 200 characters", "X-Group-Id")
        # Whatever can refuse the request runs before its session is created or touched: refused requests neither
        # open sessions (nor evict live ones for them) nor count as a session's sign of life.
        tools = req.tools if req.tool_choice != "none" else None
        prompt_ids = await asyncio.to_thread(self.prompt_ids, req.messages, tools)
        sampling = self.sampling_for(req, len(prompt_ids))
        session, found_by = self.sessions.resolve(
            headers.get("x-session-id"), req.user, req.messages, touch=turn_type == "main"
        )
        self.counts[f"requests_session_{found_by}"] += 1
        if turn_type == "side" and found_by == "new":
            self.sessions.close(session.session_id)  # a side request outside any session opens none
        for sid in self.sessions.over_cap(keep=session.session_id):
            self.end_session(sid, "evicted")
        if turn_type == "main":
            for turn, next_state in read_request(req.messages, session.open_turns()).continued:
                self.attach_next_state(turn, next_state, via="request")
        route = (
            None
            if self.canary is None
            else self.canary.route(session.session_id, new=turn_type == "main" and session.n_turns == 0)
        )
        # stop strings are matched in the engine thread, so no token past one is sampled
        job = self.batcher.submit(
            prompt_ids, sampling, stops=req.stop, canary=route is not None and route[1] == "canary"
        )
        try:
            first = await self.batcher.first_item(job)  # a 503 once the request has waited max_wait_s without starting
        except BaseException:  # waited past max_wait_s (503), or the client went away while waiting
            job.cancelled = True
            self.batcher.done(job)
            raise
        if isinstance(first, P.APIError):
            self.batcher.done(job)
            raise first
        cid = P.completion_id()
        out_headers = {"X-Session-Id": session.session_id}
        ctx = RequestContext(
            self, req, session, turn_type, done_header, prompt_ids, sampling, job, cid, t0, tools, group_id, route
        )
        if req.stream:
            return ctx.stream(first), out_headers
        return await ctx.complete(first), out_headers

    # -- turns -----------------------------------------------------------------------------------
    def record_turn(self, ctx: RequestContext, gen: Generation, text: str, message: dict[str, Any]) -> Turn | None:
        """Append the served turn to the store (before the reply is sent); main turns join their session."""
        session = ctx.session
        canary, arm = turn_route(ctx.route, gen) or (None, None)
        turn = Turn(
            turn_id="t-" + uuid.uuid4().hex[:20],
            session_id=session.session_id,
            turn_index=session.n_turns,
            messages=ctx.req.messages,
            tools=ctx.tools,
            prompt_ids=ctx.prompt_ids,
            response_ids=gen.response_ids,
            rollout_logprobs=gen.logprobs,
            temperature=ctx.sampling.temperature,
            policy_version=gen.policy_version,
            finished=gen.finished,
            response=message,
            response_text=text,
            user=ctx.req.user,
            group_id=ctx.group_id,
            arm=arm,
            canary=canary,
        )
        if ctx.turn_type == "side":
            self.log.append({
                "kind": "side", "session_id": session.session_id, "turn_id": turn.turn_id,
                "policy_version": gen.policy_version,
                "n_prompt": len(ctx.prompt_ids), "n_response": len(gen.response_ids),
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
        if ctx.done_header:
            self.end_session(session.session_id, "done_header")
        return turn

    def close_oldest_open_turns(self, session: Session) -> None:
        """A session holds at most `max_open_turns` turns waiting for their next state: past that its oldest close
        (`too_many_open_turns`), so a client that fans out requests and never answers cannot grow memory."""
        open_turns = session.open_turns()
        for turn in open_turns[: max(0, len(open_turns) - self.settings.max_open_turns)]:
            self.outcomes.record(turn, "too_many_open_turns")
        self.sessions.trim(session)

    def attach_next_state(self, turn: Turn, next_state: list[dict[str, Any]], via: str) -> None:
        turn.next_state = next_state
        self.log.append({"kind": "next_state", "turn_id": turn.turn_id, "messages": next_state, "via": via})
        self.start_judging(turn)

    def end_session(self, sid: str, reason: str, final_messages: list[dict[str, Any]] | None = None) -> bool:
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

    def feedback(
        self, session_id: str, turn_id: str | None, reward: float | None, correction: str | None
    ) -> dict[str, Any]:
        session = self.sessions.live.get(session_id)
        turn = None
        if session is not None:
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

    # -- judging ---------------------------------------------------------------------------------
    def spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def start_judging(self, turn: Turn) -> None:
        """Judge `turn` in the background, at most once at a time: `turn.judged` is set here, synchronously, so
        whatever runs next on the loop (another feedback, the next request) sees the judgement as started."""
        if turn.judged:
            return
        turn.judged = True
        self.spawn(self.label_and_queue(turn))

    async def label_and_queue(self, turn: Turn) -> None:
        """Label a turn whose judgement `start_judging` started, queue its sample, record its outcome."""
        try:
            reason, verdict, sample = await self.labeller.label(turn)
            if sample is not None and turn.arm is not None:  # canary traffic: the arm goes with the sample...
                sample.info.update(arm=turn.arm, canary=turn.canary)
                if self.canary is not None and sample.reward is not None:  # ...and its reward to the guard, now
                    self.canary.observe(turn.canary, turn.arm, sample.reward)
            if sample is not None:
                if self.queue is None:
                    raise RuntimeError("the proxy has no rollout queue: samples have nowhere to go")
                await (
                    self.log.durable()
                )  # the turn and its next state are on disk before its sample is (restart order)
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
        while self._tasks and time.monotonic() < deadline:
            await asyncio.wait(list(self._tasks), timeout=max(0.0, deadline - time.monotonic()))

    def reap_idle(self) -> list[str]:
        ended = self.sessions.idle()
        for sid in ended:
            self.end_session(sid, "idle_timeout")
        return ended

    # -- restart ---------------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """Rebuild state from `proxy.jsonl` after a restart (claw/sources/proxy/recovery.py)."""
        return recover(self)

    def metrics(self) -> dict[str, float]:
        lat, ttft = self.telemetry.latencies, self.telemetry.ttfts
        out: dict[str, float] = {f"proxy_{k}": float(v) for k, v in self.counts.items()}
        out.update({f"proxy_engine_{k}": float(v) for k, v in self.batcher.stats().items()})
        out.update({
            "proxy_sessions_live": float(len(self.sessions.live)),
            "proxy_latency_p50_s": lat.quantile(0.5),
            "proxy_latency_p95_s": lat.quantile(0.95),
            "proxy_ttft_p50_s": ttft.quantile(0.5),
            "proxy_ttft_p95_s": ttft.quantile(0.95),
            "proxy_policy_version": float(self.engine.version),
            "proxy_judging_in_flight": float(len(self._tasks)),
        })  # fmt: skip
        return out
