"""The proxy's logic, independent of HTTP: `Proxy.chat` serves one chat request; what follows a reply (record,
next state, feedback, judging, queueing, session ends) is the turn book's (claw/sources/proxy/turns.py).

Serving a request
1. It is rendered once to prompt ids (in a worker thread) and checked against the context, before its session
   is touched: a refused request opens, refreshes and evicts no session.
2. Its session is resolved (`Sessions.resolve`). A main request gives each of the session's open turns whose
   reply its history contains the messages after that reply as **next state** (`TurnBook.take_next_states`);
   those turns are judged in the background. A request that re-sends an open turn's history, or branches away
   from it, does not judge it: when its own turn is recorded, the open turn's outcome is `retried` or
   `superseded` (claw/sources/proxy/continuation.py).
3. The engine generates from the prompt ids (batched with other requests), and claw/sources/proxy/request.py
   streams the reply and hands what was served to the turn book (`ServedTurn`), which appends the turn —
   prompt ids, sampled ids, their log-probs, temperature, policy version — to `proxy.jsonl` *before* the reply
   leaves the server.
Every main turn ends in exactly one recorded outcome (claw/sources/proxy/outcomes.py).

Canary traffic (guard.checks has canary; claw/sources/proxy/canary.py): while the guard runs a canary,
a new session's first turn enrols it in the candidate's arm or the served arm; its requests are decoded
by that arm's weights, its turns record the arm, and their judged rewards go to the guard.

Restart (claw/sources/proxy/recovery.py): `recover()` rebuilds the turn book from `proxy.jsonl`: turns that had a
next state but no sample (or whose judges all failed) are judged again, and open sessions come back, so a client
that continues after the crash links up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from claw.engine.base import Engine, SamplingParams
from claw.judge.build import Judges
from claw.judge.labelling import Labeller
from claw.judge.metrics import JudgeStats
from claw.judge.teacher import Teacher
from claw.rollout.store import JsonlLog
from claw.sources.proxy import protocol as P
from claw.sources.proxy import responses as R
from claw.sources.proxy.batcher import Batcher
from claw.sources.proxy.recovery import recover
from claw.sources.proxy.render import ChatRenderer
from claw.sources.proxy.request import RequestContext
from claw.sources.proxy.sessions import Sessions
from claw.sources.proxy.settings import ProxySettings
from claw.sources.proxy.telemetry import Telemetry
from claw.sources.proxy.turns import TurnBook
from claw.users.keys import DEFAULT_USER


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
        self.engine, self.tokenizer, self.settings = engine, tokenizer, settings
        self.renderer = ChatRenderer(tokenizer)
        self.batcher = batcher
        self.judges, self.teacher = judges, teacher
        self.sessions = Sessions(settings.idle_timeout_s, settings.max_live_sessions, settings.keep_closed_turns)
        # group commit: lines are written at once, fsynced by a writer thread; a reply awaits its turn's fsync
        self.log = JsonlLog(Path(run_dir) / "proxy.jsonl", fsync=fsync, group_commit=True)
        self.judge_stats = JudgeStats()
        self.counts: Counter[str] = Counter()
        labeller = Labeller(
            judges, teacher, self.renderer.render, settings.mode, settings.topk, settings.judge_retries,
            settings.judge_retry_backoff_s, self.judge_stats, self.counts,
        )  # fmt: skip
        self.turns = TurnBook(self.sessions, self.log, labeller, self.counts, settings.max_open_turns)
        self.telemetry = Telemetry()  # latency / TTFT / queue wait / batch size: histograms + fixed windows
        batcher.on_batch = self.telemetry.observe_batch

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
        self, req: P.ChatRequest, headers: dict[str, str], keyed_user: str | None = None
    ) -> tuple[dict[str, Any] | AsyncIterator[str], dict[str, str]]:
        """Serve one request: (a completion body, or an SSE stream of chunks; response headers). Its user is
        `keyed_user` (the user whose key it carried, claw/users/keys.py), else its OpenAI `user`, else the default."""
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
        user = keyed_user or req.user or DEFAULT_USER
        sampling = dataclasses.replace(self.sampling_for(req, len(prompt_ids)), user=user)  # per_user: their adapter
        session, found_by = self.sessions.resolve(
            headers.get("x-session-id"), user, req.messages, touch=turn_type == "main", keyed=keyed_user is not None
        )
        self.counts[f"requests_session_{found_by}"] += 1
        if turn_type == "side" and found_by == "new":
            self.sessions.close(session.session_id)  # a side request outside any session opens none
        for sid in self.sessions.over_cap(keep=session.session_id):
            self.turns.end_session(sid, "evicted")
        if turn_type == "main":
            self.turns.take_next_states(session, req.messages)
        canary = self.turns.canary
        route = (
            None
            if canary is None
            else canary.route(session.session_id, new=turn_type == "main" and session.n_turns == 0)
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
        out_headers = {"X-Session-Id": session.session_id}
        ctx = RequestContext(
            req=req, user=user, session=session, turn_type=turn_type, done_header=done_header, group_id=group_id,
            route=route,
            tools=tools, prompt_ids=prompt_ids, sampling=sampling, job=job, cid=R.completion_id(), t0=t0,
            tokenizer=self.tokenizer, batcher=self.batcher, telemetry=self.telemetry, turns=self.turns,
            counts=self.counts, model_name=self.settings.model_name,
        )  # fmt: skip
        if req.stream:
            return ctx.stream(first), out_headers
        return await ctx.complete(first), out_headers

    # -- what the server asks of a turn's life (claw/sources/proxy/turns.py) -----------------------
    def end_session(
        self, sid: str, reason: str, final_messages: list[dict[str, Any]] | None = None, user: str | None = None
    ) -> bool:
        return self.turns.end_session(sid, reason, final_messages, user)

    def feedback(
        self,
        session_id: str,
        turn_id: str | None,
        reward: float | None,
        correction: str | None,
        user: str | None = None,
    ) -> dict[str, Any]:
        return self.turns.feedback(session_id, turn_id, reward, correction, user)

    def reap_idle(self) -> list[str]:
        return self.turns.reap_idle()

    async def drain(self, timeout: float = 60.0) -> None:
        """Wait for judgements in flight (tests, shutdown)."""
        await self.turns.drain(timeout)

    def recover(self) -> dict[str, int]:
        """Rebuild the turn book from `proxy.jsonl` after a restart (claw/sources/proxy/recovery.py)."""
        return recover(self.turns)

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
            "proxy_judging_in_flight": float(len(self.turns.judging)),
        })  # fmt: skip
        return out
