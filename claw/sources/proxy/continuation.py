"""Does a new request continue a turn that waits for its next state, retry it, or branch away from it?

Real clients re-send a request (the SDK's automatic retry, a "regenerate" button), edit an earlier
message (a branch), and run several requests of one session in parallel. Only a request that has
seen a turn's reply can carry that turn's consequence, so the rules read the request's history
against each open turn of its session (`open` = served, no next state, no outcome yet):

- **continues** T: the request's messages start with T's context followed by T's reply (compared by
  role, stripped text and tool calls, as a client round trip may change whitespace and call ids).
  The messages after the reply, up to the next assistant message, are T's next state.
- **retries** T: the request's messages equal T's context: the client asked the same thing again
  (a retry or a regeneration), so T's reply was never answered.
- **supersedes** T: the request shares T's history up to and including an assistant message and then
  differs from it or stops (an edited message, a regenerated earlier reply), or it puts another
  assistant message where T's reply was: T's line was abandoned.
- anything else is **parallel** to T: both stay open, each waits for its own continuation.

A turn continued is judged at once; a retried or superseded turn gets that outcome only when the new
request's own turn is recorded, so a retry that fails in the engine does not void the turn it retried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claw.sources.proxy.render import _arguments, text_of

Message = dict[str, Any]


def canonical(m: Message) -> dict[str, Any]:
    """What identifies a message across client round trips (whitespace and call ids may change)."""
    out: dict[str, Any] = {"role": m.get("role"), "content": text_of(m.get("content")).strip()}
    if m.get("tool_calls"):
        out["tool_calls"] = [(c.get("function", {}).get("name"), _arguments(c)) for c in m["tool_calls"]]
    return out


def same(a: list[Message], b: list[Message]) -> bool:
    return len(a) == len(b) and all(canonical(x) == canonical(y) for x, y in zip(a, b))


def next_state_after(messages: list[Message], context: list[Message], reply: Message) -> list[Message] | None:
    """The messages after `reply` when `messages` continue `context` + `reply`; None when they do not."""
    k = len(context)
    if len(messages) <= k + 1 or not same(messages[: k + 1], [*context, reply]):
        return None
    rest = messages[k + 1 :]
    end = next((i for i, m in enumerate(rest) if m.get("role") == "assistant"), len(rest))
    return rest[:end] or None


def branches_from(messages: list[Message], context: list[Message]) -> bool:
    """True when `messages` leave `context`'s line after one of its assistant messages, or replace its reply."""
    shared = 0
    for a, b in zip(messages, context):
        if canonical(a) != canonical(b):
            break
        shared += 1
    if shared == len(context):  # the request contains the whole context: another reply in place of the turn's?
        return len(messages) > shared and messages[shared].get("role") == "assistant"
    return any(m.get("role") == "assistant" for m in context[:shared])


@dataclass
class Reading:
    """How one request relates to its session's open turns (each open turn appears at most once)."""

    continued: list[tuple[Any, list[Message]]] = field(default_factory=list)  # (turn, its next state)
    retried: list[Any] = field(default_factory=list)
    superseded: list[Any] = field(default_factory=list)


def read_request(messages: list[Message], open_turns: list[Any]) -> Reading:
    """Classify `open_turns` (`Turn`s: `.messages`, the turn's context, and `.response`, its reply message)."""
    reading = Reading()
    for turn in open_turns:
        next_state = next_state_after(messages, turn.messages, turn.response)
        if next_state is not None:
            reading.continued.append((turn, next_state))
        elif same(messages, turn.messages):
            reading.retried.append(turn)
        elif branches_from(messages, turn.messages):
            reading.superseded.append(turn)
    return reading
