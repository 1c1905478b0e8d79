"""Sessions and turns: which conversation a request continues, and what a turn records.

A session is found, in order, from
1. the `X-Session-Id` header;
2. the request's `user` field;
3. the conversation itself: a request whose messages, up to its last assistant message, equal an
   earlier turn's request plus that turn's reply continues that turn's session. So a plain
   OpenAI client that resends the history (as every chat client does) needs no custom header.
A request with no assistant message and no id starts a new session.

All session state lives in the server's event loop (one thread): no locks.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from claw.proxy.render import _arguments, text_of

Message = dict[str, Any]


@dataclass
class TurnRecord:
    """One served main turn, with the exact ids the engine consumed and sampled."""

    turn_id: str
    session_id: str
    turn_index: int
    messages: list[Message]  # the request's messages: the context of this turn
    tools: list[dict] | None
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    temperature: float  # 0 = greedy: served and judged, never trained
    policy_version: int
    finished: bool
    response: Message  # the assistant message returned to the client
    response_text: str  # the raw decoded text (tool-call markup included) the judges read
    created: float = field(default_factory=time.time)
    next_state: list[Message] | None = None
    feedback: dict[str, Any] | None = None  # explicit {"reward": float | None, "correction": str | None}
    judged: bool = False  # a judgement has started (or finished) for this turn

    def to_json(self) -> dict[str, Any]:
        return {"kind": "turn", **{k: v for k, v in asdict(self).items() if k not in ("next_state", "feedback", "judged")}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TurnRecord:
        return cls(**{k: v for k, v in d.items() if k != "kind"})


@dataclass
class Session:
    session_id: str
    created: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    turns: list[TurnRecord] = field(default_factory=list)  # main turns, oldest first
    prefix_key: str | None = None  # key of (last request + its reply): the next request's history

    @property
    def pending(self) -> TurnRecord | None:
        """The last main turn, while it waits for its next state."""
        if self.turns and not self.turns[-1].judged and self.turns[-1].next_state is None:
            return self.turns[-1]
        return None


def _canonical(m: Message) -> dict[str, Any]:
    """What identifies a message across client round trips (whitespace and call ids may change)."""
    out: dict[str, Any] = {"role": m.get("role"), "content": text_of(m.get("content")).strip()}
    if m.get("tool_calls"):
        out["tool_calls"] = [(c.get("function", {}).get("name"), _arguments(c)) for c in m["tool_calls"]]
    return out


def history_key(messages: list[Message]) -> str:
    blob = json.dumps([_canonical(m) for m in messages], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def last_assistant(messages: list[Message]) -> int:
    """Index of the last assistant message, -1 when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return -1


def next_state_of(messages: list[Message]) -> list[Message]:
    """The messages after the previous assistant turn: the user's reply or the tool results.
    A client that does not resend history sends only the new message, which is then the next state."""
    i = last_assistant(messages)
    if i >= 0:
        return messages[i + 1 :]
    return [m for m in messages if m.get("role") not in ("system", "developer")][-1:]


class Sessions:
    def __init__(self, idle_timeout_s: float = 600.0) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.live: dict[str, Session] = {}
        self._by_key: dict[str, str] = {}  # history key → session id

    def resolve(self, header_id: str | None, user: str | None, messages: list[Message]) -> tuple[Session, str]:
        """(session, how it was found: header | user | history | new)."""
        if header_id:
            return self.get_or_create(header_id), "header"
        if user:
            return self.get_or_create(f"user-{user}"), "user"
        i = last_assistant(messages)
        if i >= 0:
            sid = self._by_key.get(history_key(messages[: i + 1]))
            if sid is not None and sid in self.live:
                session = self.live[sid]
                session.last_seen = time.monotonic()
                return session, "history"
        return self.get_or_create("s-" + uuid.uuid4().hex[:16]), "new"

    def get_or_create(self, sid: str) -> Session:
        session = self.live.get(sid)
        if session is None:
            session = self.live[sid] = Session(sid)
        session.last_seen = time.monotonic()
        return session

    def add_turn(self, session: Session, turn: TurnRecord) -> None:
        session.turns.append(turn)
        self.remember(session, turn.messages + [turn.response])

    def remember(self, session: Session, history: list[Message]) -> None:
        if session.prefix_key is not None:
            self._by_key.pop(session.prefix_key, None)
        session.prefix_key = history_key(history)
        self._by_key[session.prefix_key] = session.session_id

    def close(self, sid: str) -> Session | None:
        """Forget a session (its state is freed); returns it so its last turn can be flushed."""
        session = self.live.pop(sid, None)
        if session is not None and session.prefix_key is not None:
            self._by_key.pop(session.prefix_key, None)
        return session

    def idle(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        return [sid for sid, s in self.live.items() if now - s.last_seen > self.idle_timeout_s]

    def find_turn(self, turn_id: str) -> TurnRecord | None:
        for session in self.live.values():
            for turn in session.turns:
                if turn.turn_id == turn_id:
                    return turn
        return None
