"""`Turn`: one agent step — what the proxy served and what a judge reads of it — and how messages read as text.

One type end to end: the proxy records a served turn with the exact ids the engine consumed and sampled
(`claw/sources/proxy/`), labelling turns it into a `Sample` (`claw/judge/labelling.py`), and the judges
read three of its fields: `messages`, `response_text` and `next_state`. A turn built only to be judged
(`claw.judge.evaluate`, the tests) names just those three; every served field has a default.

A judge scores an action by its consequence (docs/judges.md): the conversation up to the request, the
agent's response, and the *next state* — the user's reply, or the tool results the action produced. The
next state is the evidence; the judge never needs the future beyond it.

Names: `response` is the assistant *message* the client received; `response_text` is the raw decoded
text (reasoning and tool-call markup included), which is what the judges read.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, Any]  # OpenAI-style: {"role": ..., "content": str | list[part] | None, ...}

# Set after serving, each written to the turn log as a record of its own (so `to_json` leaves them out).
LIVE_FIELDS = ("next_state", "feedback", "judged", "outcome")
RENAMED = {"logprobs": "rollout_logprobs"}  # turn logs written before the field took the Sample's name


@dataclass(kw_only=True)
class Turn:
    turn_id: str = ""
    session_id: str = ""
    turn_index: int = 0  # main turns served before this one in its session
    messages: list[Message]  # the request's messages: the conversation up to and including the user's request
    tools: list[dict] | None = None
    prompt_ids: list[int] = field(default_factory=list)  # [P] the rendered `messages` (+ tools) the engine consumed
    response_ids: list[int] = field(default_factory=list)  # [T] the tokens it sampled
    rollout_logprobs: list[float] = field(default_factory=list)  # [T] log-probs of response_ids at `temperature`
    temperature: float = 1.0  # 0 = greedy: served and judged, never trained
    policy_version: int = 0
    finished: bool = True  # stopped on a stop token rather than at the token budget
    response: Message | None = None  # the assistant message returned to the client (None: a turn built to be judged)
    response_text: str  # the agent's reply as the judges read it: raw text, reasoning and tool-call markup included
    user: str | None = None  # the request's OpenAI `user` (an end user): scopes the proxy's history lookup
    group_id: str | None = None  # `X-Group-Id`: turns answering the same prompt in several sessions (a GRPO group)
    arm: str | None = None  # canary traffic: "canary" (the candidate's weights) | "served"; None: no canary
    canary: str | None = None  # the id of the canary whose arm served it (claw/sources/proxy/canary.py)
    created: float = field(default_factory=time.time)
    # live fields: set after serving, each written to the turn log as its own record
    next_state: list[Message] | None = None  # what followed: a user reply or `role: tool` results; None while open
    feedback: dict[str, Any] | None = None  # explicit {"reward": float | None, "correction": str | None}
    judged: bool = False  # a judgement has started (or finished) for this turn
    outcome: str | None = None  # the recorded outcome (claw/sources/proxy/outcomes.py), None while the turn is open

    def to_json(self) -> dict[str, Any]:
        """The `turn` record of the turn log: what was served, without the live fields."""
        return {"kind": "turn", **{k: v for k, v in asdict(self).items() if k not in LIVE_FIELDS}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Turn:
        """A `turn` record back (older logs: `logprobs` for `rollout_logprobs`, no `group_id` or `user`)."""
        return cls(**{RENAMED.get(k, k): v for k, v in d.items() if k != "kind"})


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
