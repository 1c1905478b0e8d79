"""The OpenAI chat-completions wire format, outbound: completion bodies, SSE chunks and in-stream errors."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from claw.sources.proxy.protocol import APIError, internal_error


def completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def logprob_content(tokens: list[str], logprobs: list[float]) -> dict[str, Any]:
    return {
        "content": [
            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8")), "top_logprobs": []}
            for t, lp in zip(tokens, logprobs)
        ]
    }


def completion_body(
    cid: str,
    model: str,
    message: dict[str, Any],
    finish_reason: str,
    usage: dict[str, int],
    logprobs: dict | None,
    extra: dict | None = None,
) -> dict[str, Any]:
    body = {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish_reason}],
        "usage": usage,
    }
    if extra:
        body.update(extra)
    return body


def chunk(
    cid: str, model: str, delta: dict[str, Any], finish_reason: str | None = None, logprobs: dict | None = None
) -> str:
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}],
    }
    return sse(body)


def usage_chunk(cid: str, model: str, usage: dict[str, int]) -> str:
    return sse(
        {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [],
            "usage": usage,
        }
    )


def sse(body: dict[str, Any]) -> str:
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


def stream_error(err: Exception, request_id: str) -> str:
    """An error after the first SSE chunk, as OpenAI's API sends one (`data: {"error": ...}`), then the end."""
    api_error = err if isinstance(err, APIError) else internal_error(request_id)
    return sse(api_error.body()) + "data: [DONE]\n\n"
