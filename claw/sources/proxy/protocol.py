"""The OpenAI chat-completions wire format, inbound: request validation and errors (response bodies:
claw/sources/proxy/responses.py).

Validation is hand-written rather than a pydantic model because every rejection must be an
OpenAI-style 400 that names the offending field (`param`) and says what to send instead; a
client library shows `message` to its user verbatim.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")
# Containers inside containers in a body, or in a string parsed as JSON later (tool-call arguments). A tool's
# parameter schema needs a handful of levels; past a few hundred the template, the log and the history keys
# (all recursive) run out of stack.
MAX_DEPTH = 64


class APIError(Exception):
    """An error the client caused (4xx) or that it may retry (503), in OpenAI's error format."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        type_: str | None = None,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.type = type_ or ("invalid_request_error" if status < 500 else "server_error")
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(message: str, param: str | None = None, code: str = "invalid_value") -> APIError:
    return APIError(400, message, param, code)


# -- JSON a request may carry ------------------------------------------------------------------------
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how JSON text spells a UTF-16 surrogate
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # one left unpaired after decoding: no UTF-8 encodes it


def parse_json(text: str, what: str, param: str | None = None) -> Any:
    """`text` as JSON, checked to be a value the proxy can hold: APIError(400) for an integer past Python's digit
    limit, nesting past MAX_DEPTH, or a lone surrogate (the tokenizer and the UTF-8 log both refuse one). Text that
    is not JSON at all raises json.JSONDecodeError: the caller says what that means."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise bad(f"{what} nests too deeply (at most {MAX_DEPTH} levels)", param, "invalid_json") from None
    except ValueError:  # int() refuses the digits: str -> int is quadratic, so Python caps it
        limit = sys.get_int_max_str_digits()
        raise bad(f"{what} holds an integer of more than {limit} digits", param, "invalid_json") from None
    check_json(value, what, param, surrogates=_SURROGATE_ESCAPE.search(text) is not None)
    return value


def check_json(value: Any, what: str, param: str | None = None, surrogates: bool = True) -> None:
    """Refuse nesting past MAX_DEPTH and (with `surrogates`) any string or key holding a lone surrogate. Level by
    level, without recursion: the value may be as deep as json.loads reads."""
    level, depth = [value], 0
    while level:
        if surrogates and any(isinstance(v, str) and _SURROGATE.search(v) for v in level):
            raise bad(
                f"{what} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape): send valid Unicode text",
                param,
                "invalid_json",
            )
        containers = [v for v in level if isinstance(v, (dict, list))]
        if containers and depth == MAX_DEPTH:
            raise bad(f"{what} nests too deeply (at most {MAX_DEPTH} levels)", param, "invalid_json")
        depth += 1
        level = []
        for c in containers:
            if isinstance(c, dict):
                level.extend(c)  # the keys, checked for surrogates like any string
                level.extend(c.values())
            else:
                level.extend(c)


def decode_body(raw: bytes) -> Any:
    """A request body as JSON (UTF-8, as RFC 8259 requires between systems), or APIError(400) saying why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise bad(f"the request body is not UTF-8 text: {e}", None, "invalid_json") from None
    try:
        return parse_json(text, "the request body")
    except json.JSONDecodeError as e:
        raise bad(f"the request body is not valid JSON: {e}", None, "invalid_json") from None


@dataclass
class ChatRequest:
    messages: list[dict[str, Any]]
    model: str
    temperature: float = 1.0  # OpenAI's default
    max_tokens: int | None = None
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    logprobs: bool = False
    user: str | None = None
    top_p: float | None = None
    seed: int | None = None  # per-request sampling seed: the same request and seed sample the same tokens


def _number(body: dict, key: str, lo: float, hi: float, integer: bool = False) -> float | int | None:
    value = body.get(key)
    if value is None:
        return None
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        raise bad(
            f"'{key}' must be {'an integer' if integer else 'a number'} (got {type(value).__name__})",
            key,
            "invalid_type",
        )
    if not lo <= value <= hi:
        raise bad(f"'{key}' must be between {lo} and {hi} (got {value})", key)
    return value


def _validate_message(i: int, m: Any) -> dict[str, Any]:
    param = f"messages[{i}]"
    if not isinstance(m, dict):
        raise bad(f"{param} must be an object with 'role' and 'content'", param, "invalid_type")
    role = m.get("role")
    if role not in ROLES:
        raise bad(f"{param}.role must be one of {', '.join(ROLES)} (got {role!r})", f"{param}.role")
    content = m.get("content")
    if content is None:
        if not (role == "assistant" and m.get("tool_calls")):
            raise bad(
                f"{param}.content is required (null is allowed only for an assistant message with tool_calls)",
                f"{param}.content",
            )
    elif isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise bad(
                    f"{param}.content[{j}]: only text parts are supported ({{'type': 'text', 'text': ...}})",
                    f"{param}.content",
                    "unsupported_content",
                )
    elif not isinstance(content, str):
        raise bad(
            f"{param}.content must be a string or a list of text parts (got {type(content).__name__})",
            f"{param}.content",
            "invalid_type",
        )
    if role == "tool" and not isinstance(m.get("tool_call_id", ""), str):
        raise bad(f"{param}.tool_call_id must be a string", f"{param}.tool_call_id", "invalid_type")
    calls = m.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            raise bad(
                f"{param}.tool_calls must be a list on an assistant message", f"{param}.tool_calls", "invalid_type"
            )
        for j, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise bad(
                    f"{param}.tool_calls[{j}] must be {{'type': 'function', 'function': {{'name', 'arguments'}}}}",
                    f"{param}.tool_calls",
                )
            arguments = fn.get("arguments")
            if isinstance(arguments, str):  # parsed as JSON when rendered and compared: it must be JSON we can hold
                where = f"{param}.tool_calls[{j}].function.arguments"
                try:
                    parse_json(arguments, where, where)
                except json.JSONDecodeError:
                    pass  # not JSON: rendered as the text it is
    return m


def parse_chat_request(body: Any, allow_top_p: bool = False) -> ChatRequest:
    """Validate a decoded JSON body. Raises APIError(400) naming the field at fault."""
    if not isinstance(body, dict):
        raise bad("the request body must be a JSON object", None, "invalid_type")
    messages = _messages(body)  # checked in this order: the first fault found is the one named
    model = body.get("model", "")
    if not isinstance(model, str):
        raise bad("'model' must be a string", "model", "invalid_type")
    temperature, top_p, max_tokens, seed = _sampling(body, allow_top_p)
    stream, include_usage = _streaming(body)
    tools, tool_choice = _tools(body)
    logprobs, user = _logprobs(body), _user(body)
    return ChatRequest(
        messages=messages,
        model=model,
        temperature=1.0 if temperature is None else float(temperature),
        max_tokens=max_tokens,
        stop=_stops(body),
        stream=stream,
        include_usage=include_usage,
        tools=tools,
        tool_choice=tool_choice,
        logprobs=logprobs,
        user=user,
        top_p=top_p,
        seed=seed,
    )


def _messages(body: dict) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise bad("'messages' is required and must be a list", "messages", "invalid_type")
    if not messages:
        raise bad("'messages' must contain at least one message", "messages")
    return [_validate_message(i, m) for i, m in enumerate(messages)]


def _sampling(body: dict, allow_top_p: bool) -> tuple[float | None, float | None, int | None, int | None]:
    """(temperature, top_p, max tokens, seed); n must be 1 and top_p 1 (trainable turns are sampled from the full
    distribution)."""
    n = _number(body, "n", 1, 1, integer=True)
    if n not in (None, 1):
        raise bad("only n=1 is supported", "n")
    temperature = _number(body, "temperature", 0.0, 2.0)
    top_p = _number(body, "top_p", 0.0, 1.0)
    if top_p is not None and top_p < 1.0 and not allow_top_p:
        raise bad(
            "top_p < 1 is not supported: claw samples trainable turns from the full distribution "
            "(top_p = 1) so that their log-probs match the trainer's; omit top_p "
            "(or start the proxy with source.ignore_top_p=true to serve such requests at top_p = 1)",
            "top_p",
            "unsupported_value",
        )
    max_tokens = _number(body, "max_completion_tokens", 1, 1 << 20, integer=True)
    if max_tokens is None:
        max_tokens = _number(body, "max_tokens", 1, 1 << 20, integer=True)
    seed = _number(body, "seed", -(1 << 63), (1 << 63) - 1, integer=True)
    return temperature, top_p, max_tokens, seed


def _stops(body: dict) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        stops: list[str] = []
    elif isinstance(stop, str):
        stops = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop) and len(stop) <= 4:
        stops = list(stop)
    else:
        raise bad("'stop' must be a string or a list of at most 4 strings", "stop", "invalid_type")
    if any(not s for s in stops):
        raise bad("'stop' strings must not be empty (an empty string would stop before the first token)", "stop")
    return stops


def _streaming(body: dict) -> tuple[bool, bool]:
    """(stream, include_usage)."""
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad("'stream' must be a boolean", "stream", "invalid_type")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise bad("'stream_options' must be an object", "stream_options", "invalid_type")
    return stream, bool(options.get("include_usage", False))


def _tools(body: dict) -> tuple[list[dict[str, Any]] | None, Any]:
    """(tools or None, tool_choice): only 'auto' and 'none', as a trainable turn is sampled freely."""
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise bad(
                "'tools' must be a list of {'type': 'function', 'function': {'name', 'description', 'parameters'}}",
                "tools",
                "invalid_type",
            )
        for i, t in enumerate(tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if not (
                isinstance(fn, dict) and isinstance(fn.get("name"), str) and isinstance(fn.get("parameters", {}), dict)
            ):
                shape = "{'type': 'function', 'function': {'name': str, 'parameters': object}}"
                raise bad(f"tools[{i}] must be {shape}", f"tools[{i}].function", "invalid_type")
    tool_choice = body.get("tool_choice")
    if tool_choice not in (None, "auto", "none"):
        raise bad(
            "'tool_choice' supports 'auto' and 'none': claw samples trainable turns freely, "
            "so it cannot force a tool call ('required' or a named function); ask for the tool in the prompt instead",
            "tool_choice",
            "unsupported_value",
        )
    return tools or None, tool_choice


def _logprobs(body: dict) -> bool:
    logprobs = body.get("logprobs", False)
    if not isinstance(logprobs, bool):
        raise bad("'logprobs' must be a boolean", "logprobs", "invalid_type")
    if body.get("top_logprobs"):
        raise bad(
            "'top_logprobs' is not supported (the sampled tokens' log-probs are, with logprobs=true)",
            "top_logprobs",
            "unsupported_value",
        )
    return logprobs


def _user(body: dict) -> str | None:
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise bad("'user' must be a string", "user", "invalid_type")
    return user


# -- the proxy's own endpoints -------------------------------------------------------------------
@dataclass(frozen=True)
class Feedback:
    """`POST /v1/feedback`: a reward in [-1, 1] and/or a correction on a session's turn (its newest open one when
    `turn_id` is None)."""

    session_id: str
    turn_id: str | None
    reward: float | None
    correction: str | None


def parse_feedback(body: Any) -> Feedback:
    if not isinstance(body, dict) or not isinstance(body.get("session_id"), str):
        raise bad(
            "feedback needs 'session_id' (string), and 'reward' (number in [-1, 1]) and/or 'correction' (string)",
            "session_id",
        )
    reward, correction = body.get("reward"), body.get("correction")
    number = isinstance(reward, (int, float)) and not isinstance(reward, bool)
    if reward is not None and not (number and -1 <= reward <= 1):
        raise bad("'reward' must be a number in [-1, 1] (thumbs up = 1, thumbs down = -1)", "reward")
    if correction is not None and (not isinstance(correction, str) or not correction.strip()):
        raise bad("'correction' must be a non-empty string", "correction")
    if reward is None and correction is None:
        raise bad("feedback needs 'reward' and/or 'correction'", "reward")
    turn_id = body.get("turn_id")
    if turn_id is not None and not isinstance(turn_id, str):
        raise bad("'turn_id' must be a string", "turn_id")
    return Feedback(body["session_id"], turn_id, reward, correction)


def parse_session_end(body: Any) -> list[dict[str, Any]] | None:
    """`POST /v1/sessions/{id}/end`: the last turn's next state (`messages`), or None."""
    if not isinstance(body, dict):
        raise bad(
            "a session end's body is empty or {'messages': [...]} (the last turn's next state)", None, "invalid_type"
        )
    messages = body.get("messages")
    return None if messages is None else parse_chat_request({"messages": messages}).messages


def parse_rollback(body: Any) -> int:
    """`POST /admin/rollback`: the promoted version to serve again."""
    version = body.get("to_version") if isinstance(body, dict) else None
    if isinstance(version, bool) or not isinstance(version, int):
        raise bad("a rollback's body is {'to_version': <int>}: a promoted version of this run", "to_version")
    return version


def internal_error(request_id: str) -> APIError:
    """An unexpected exception, as the client sees it: no detail of ours, only the id its traceback is logged under."""
    return APIError(500, f"internal error (request id {request_id})", None, "internal_error")
