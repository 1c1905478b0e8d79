"""One chat request inside the proxy, from its first token to the stored turn: text deltas streamed as
they are sampled (stop strings and tool-call markup held back), the final message, the OpenAI body or
SSE chunks. `Proxy.chat` makes one per request; what it served goes to the turn book as a `ServedTurn`
(claw/sources/proxy/turns.py) before the reply leaves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from claw.engine.base import Generation, SamplingParams
from claw.judge.turn import Turn
from claw.sources.proxy import protocol as P
from claw.sources.proxy import responses as R
from claw.sources.proxy.batcher import _END, Batcher, Job
from claw.sources.proxy.canary import Route, turn_route
from claw.sources.proxy.render import parse_tool_calls
from claw.sources.proxy.sessions import Session
from claw.sources.proxy.telemetry import Telemetry
from claw.sources.proxy.turns import ServedTurn, TurnBook

log = logging.getLogger("claw.sources.proxy.service")  # one logger for the proxy

TOOL_CALL_TAG = "<tool_call>"


@dataclass(kw_only=True, eq=False)
class RequestContext:
    """One request from the first token to the stored turn: streaming text deltas, the final message."""

    # the request, checked and rendered
    req: P.ChatRequest
    user: str  # who is speaking (claw/sources/proxy/service.py `Proxy.chat`)
    session: Session
    turn_type: str  # main | side (`X-Turn-Type`)
    done_header: bool  # `X-Session-Done`
    group_id: str | None  # `X-Group-Id`
    route: Route | None  # (canary id, arm) while a canary runs (claw/sources/proxy/canary.py)
    tools: list[dict] | None  # rendered into the prompt (None: no tools, or tool_choice none)
    prompt_ids: list[int]
    sampling: SamplingParams
    # its place in the engine and on the wire
    job: Job
    cid: str  # the completion id
    t0: float  # arrival (perf_counter): latency and TTFT are measured from here
    # the proxy's parts it uses
    tokenizer: Any
    batcher: Batcher
    telemetry: Telemetry
    turns: TurnBook  # where the served turn goes
    counts: Counter[str]
    model_name: str
    # filled while it runs
    ids: list[int] = field(default_factory=list, init=False)
    lps: list[float] = field(default_factory=list, init=False)
    gen: Generation | None = field(default=None, init=False)
    turn: Turn | None = field(default=None, init=False)  # the recorded main turn (None for a side turn)

    def text(self) -> str:
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        for stop in self.req.stop:  # the reply ends before the stop string (its tokens were sampled and are trained)
            cut = text.find(stop)
            if cut >= 0:
                text = text[:cut]
        return text

    def visible(self, text: str) -> int:
        """How much of the text so far can be streamed without revealing a stop string or tool-call markup."""
        n = len(text)
        while n and text[n - 1] == "\ufffd":  # an incomplete UTF-8 character
            n -= 1
        holds = list(self.req.stop) + ([TOOL_CALL_TAG] if self.tools else [])
        for tag in holds:
            cut = text.find(tag)
            if cut >= 0:
                n = min(n, cut)
            for k in range(min(len(tag) - 1, n), 0, -1):  # a suffix that may be the start of the tag
                if text[:n].endswith(tag[:k]):
                    n -= k
                    break
        return max(n, 0)

    async def _tokens(self, first) -> AsyncIterator[int]:
        """Yields the number of new tokens each time some arrive; returns at the Generation."""
        item = first
        while True:
            if item is _END:
                raise P.APIError(499, "request cancelled", code="cancelled")
            if isinstance(item, P.APIError):
                raise item
            if isinstance(item, Generation):
                self.gen = item
                return
            self.ids.append(item[0])
            self.lps.append(item[1])
            yield 1
            item = await self.job.tokens.get()

    def finish(self) -> tuple[dict[str, Any], str, str]:
        """(assistant message, finish_reason, raw text); records the turn."""
        gen = self.gen
        raw = self.tokenizer.decode(gen.response_ids, skip_special_tokens=True)
        text = self.text()
        content, calls = parse_tool_calls(text) if self.tools else (text, [])
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        reason = "tool_calls" if calls else ("stop" if gen.finished else "length")
        self.turn = self.turns.record(
            ServedTurn(
                session=self.session, turn_type=self.turn_type, messages=self.req.messages, tools=self.tools,
                prompt_ids=self.prompt_ids, temperature=self.sampling.temperature, generation=gen,
                response=message, response_text=raw, user=self.user, group_id=self.group_id,
                route=self.route, ends_session=self.done_header,
            )
        )  # fmt: skip
        self.telemetry.observe_latency(time.perf_counter() - self.t0)
        return message, reason, text

    def usage(self) -> dict[str, int]:
        n = len(self.gen.response_ids)
        return {
            "prompt_tokens": len(self.prompt_ids),
            "completion_tokens": n,
            "total_tokens": len(self.prompt_ids) + n,
        }

    def _logprobs(self, ids: list[int], lps: list[float]) -> dict | None:
        if not self.req.logprobs:
            return None
        return R.logprob_content([self.tokenizer.decode([i]) for i in ids], lps)

    def _extra(self) -> dict[str, Any]:
        turn = self.turn
        return {"claw": {
            "session_id": self.session.session_id, "turn_id": turn.turn_id if turn else None,
            "policy_version": self.gen.policy_version, "turn_type": self.turn_type,
            "arm": (turn_route(self.route, self.gen) or (None, None))[1],
        }}  # fmt: skip

    async def complete(self, first) -> dict[str, Any]:
        try:
            async for _ in self._tokens(first):
                pass
        finally:
            self.batcher.done(self.job)
        message, reason, _ = self.finish()
        await self.turns.log.durable()  # the reply leaves only once its turn is on disk (group commit: off the loop)
        return R.completion_body(
            self.cid,
            self.model_name,
            message,
            reason,
            self.usage(),
            self._logprobs(self.gen.response_ids, self.gen.logprobs),
            self._extra(),
        )

    async def stream(self, first) -> AsyncIterator[str]:
        model = self.model_name
        sent, lp_sent = 0, 0
        try:
            yield R.chunk(self.cid, model, {"role": "assistant", "content": ""})
            async for _ in self._tokens(first):
                if lp_sent == 0:
                    self.telemetry.observe_ttft(time.perf_counter() - self.t0)
                text = self.text()
                n = self.visible(text)
                if n > sent:
                    lps = self._logprobs(self.ids[lp_sent:], self.lps[lp_sent:])
                    yield R.chunk(self.cid, model, {"content": text[sent:n]}, logprobs=lps)
                    sent, lp_sent = n, len(self.ids)
            message, reason, text = self.finish()
            await (
                self.turns.log.durable()
            )  # the stream ends only once its turn is on disk (group commit: off the loop)
            content = message["content"] or ""
            rest = content[sent:] if content.startswith(text[:sent]) else ""
            if rest or lp_sent < len(self.ids):
                yield R.chunk(
                    self.cid, model, {"content": rest}, logprobs=self._logprobs(self.ids[lp_sent:], self.lps[lp_sent:])
                )
            if message.get("tool_calls"):
                calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
                yield R.chunk(self.cid, model, {"tool_calls": calls})
            yield R.chunk(self.cid, model, {}, finish_reason=reason)
            if self.req.include_usage:
                yield R.usage_chunk(self.cid, model, self.usage())
            yield "data: [DONE]\n\n"
        except Exception as e:  # the 200 and the first chunks are sent: the error travels as an event, the stream ends
            self.counts["streams_failed"] += 1
            if not isinstance(e, P.APIError):
                log.exception("streaming %s failed", self.cid)
            yield R.stream_error(e, self.cid)  # an unexpected one is logged above under this id
        except (asyncio.CancelledError, GeneratorExit):
            self.job.cancelled = True  # the client went away: stop decoding this row
            self.counts["streams_cancelled"] += 1
            raise
        finally:
            self.batcher.done(self.job)
