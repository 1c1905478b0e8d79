"""`Turn`: what a judge sees of one agent step, and how its messages read as text.

A judge scores an action by its consequence (DESIGN.md §4): the conversation up to the
request, the agent's response, and the *next state* — the user's reply, or the tool results
the action produced. The next state is the evidence; the judge never needs the future beyond it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]  # OpenAI-style: {"role": ..., "content": str | list[part] | None, ...}


@dataclass
class Turn:
    messages: list[Message]  # the conversation up to and including the user's request
    response: str  # the agent's reply being judged (raw text: reasoning and tool-call markup included)
    next_state: list[Message] = field(
        default_factory=list
    )  # what followed: a user reply, or one or more `role: tool` results


def message_text(message: Message) -> str:
    """The plain text of a message. List content (multimodal parts) keeps its text parts; None is ""."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def render_message(message: Message) -> str:
    """`[role] content`. An assistant turn that only calls tools shows `(tool call)` and the calls' JSON,
    so the judge can see *which* action the tool results answer."""
    text = message_text(message)
    if message.get("tool_calls"):
        calls = json.dumps(message["tool_calls"], ensure_ascii=False, default=str)
        text = f"{text}\n(tool call) {calls}" if text else f"(tool call) {calls}"
    return f"[{message.get('role', 'unknown')}] {text}" if text else f"[{message.get('role', 'unknown')}] (empty)"


def render_messages(messages: list[Message]) -> str:
    return "\n".join(render_message(m) for m in messages) if messages else "(none)"
