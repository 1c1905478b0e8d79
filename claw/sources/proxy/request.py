"""One chat request inside the proxy, from its first token to the stored turn: text deltas streamed as
they are sampled (stop strings and tool-call markup held back), the final message, the OpenAI body or
SSE chunks. `Proxy.chat` makes one per request; the turn is recorded through `Proxy.record_turn`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from claw.engine.base import Generation, SamplingParams
from claw.sources.proxy import protocol as P
from claw.sources.proxy.batcher import _END, Job
from claw.sources.proxy.canary import turn_route
from claw.sources.proxy.render import parse_tool_calls
from claw.sources.proxy.sessions import Session

if TYPE_CHECKING:
    from claw.sources.proxy.service import Proxy

log = logging.getLogger("claw.sources.proxy.service")  # one logger for the proxy

TOOL_CALL_TAG = "<tool_call>"


class RequestContext:
    """One request from the first token to the stored turn: streaming text deltas, the final message."""

    def __init__(
        self,
        proxy: Proxy,
        req: P.ChatRequest,
        session: Session,
        turn_type: str,
        done_header: bool,
        prompt_ids: list[int],
        sampling: SamplingParams,
        job: Job,
        cid: str,
        t0: float,
        tools,
        group_id: str | None = None,
        route: tuple[str, str] | None = None,
    ) -> None:
        self.group_id = group_id
        self.route = route  # (canary id, arm) while a canary runs (claw/sources/proxy/canary.py)
        self.proxy, self.req, self.session, self.turn_type, self.done_header = (
            proxy,
            req,
            session,
            turn_type,
            done_header,
        )
        self.prompt_ids, self.sampling, self.job, self.cid, self.t0, self.tools = (
            prompt_ids,
            sampling,
            job,
            cid,
            t0,
            tools,
        )
        self.ids: list[int] = []
        self.lps: list[float] = []

    def text(self) -> str:
        text = self.proxy.tokenizer.decode(self.ids, skip_special_tokens=True)
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
        raw = self.proxy.tokenizer.decode(gen.response_ids, skip_special_tokens=True)
        text = self.text()
        content, calls = parse_tool_calls(text) if self.tools else (text, [])
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        reason = "tool_calls" if calls else ("stop" if gen.finished else "length")
        self.turn = self.proxy.record_turn(self, gen, raw, message)
        self.proxy.telemetry.observe_latency(time.perf_counter() - self.t0)
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
        return P.logprob_content([self.proxy.tokenizer.decode([i]) for i in ids], lps)

    def _extra(self) -> dict[str, Any]:
        turn = getattr(self, "turn", None)
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
            self.proxy.batcher.done(self.job)
        message, reason, _ = self.finish()
        await self.proxy.log.durable()  # the reply leaves only once its turn is on disk (group commit: off the loop)
        return P.completion_body(
            self.cid,
            self.proxy.settings.model_name,
            message,
            reason,
            self.usage(),
            self._logprobs(self.gen.response_ids, self.gen.logprobs),
            self._extra(),
        )

    async def stream(self, first) -> AsyncIterator[str]:
        model = self.proxy.settings.model_name
        sent, lp_sent = 0, 0
        try:
            yield P.chunk(self.cid, model, {"role": "assistant", "content": ""})
            async for _ in self._tokens(first):
                if lp_sent == 0:
                    self.proxy.telemetry.observe_ttft(time.perf_counter() - self.t0)
                text = self.text()
                n = self.visible(text)
                if n > sent:
                    lps = self._logprobs(self.ids[lp_sent:], self.lps[lp_sent:])
                    yield P.chunk(self.cid, model, {"content": text[sent:n]}, logprobs=lps)
                    sent, lp_sent = n, len(self.ids)
            message, reason, text = self.finish()
            await (
                self.proxy.log.durable()
            )  # the stream ends only once its turn is on disk (group commit: off the loop)
            content = message["content"] or ""
            rest = content[sent:] if content.startswith(text[:sent]) else ""
            if rest or lp_sent < len(self.ids):
                yield P.chunk(
                    self.cid, model, {"content": rest}, logprobs=self._logprobs(self.ids[lp_sent:], self.lps[lp_sent:])
                )
            if message.get("tool_calls"):
                calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
                yield P.chunk(self.cid, model, {"tool_calls": calls})
            yield P.chunk(self.cid, model, {}, finish_reason=reason)
            if self.req.include_usage:
                yield P.usage_chunk(self.cid, model, self.usage())
            yield "data: [DONE]\n\n"
        except Exception as e:  # the 200 and the first chunks are sent: the error travels as an event, the stream ends
            self.proxy.counts["streams_failed"] += 1
            if not isinstance(e, P.APIError):
                log.exception("streaming %s failed", self.cid)
            yield P.stream_error(e, self.cid)  # an unexpected one is logged above under this id
        except (asyncio.CancelledError, GeneratorExit):
            self.job.cancelled = True  # the client went away: stop decoding this row
            self.proxy.counts["streams_cancelled"] += 1
            raise
        finally:
            self.proxy.batcher.done(self.job)
