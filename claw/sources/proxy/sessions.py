"""Sessions: which conversation a request belongs to (a turn is `claw.judge.turn.Turn`).

A session is found, in order, from
1. the `X-Session-Id` header;
2. the conversation itself: a request whose messages, up to its last assistant message, equal an
   earlier turn's request plus that turn's reply belongs to that turn's session. So a plain OpenAI
   client that resends the history (as every chat client does) needs no custom header.
A request with neither starts a new session. The OpenAI `user` field names an end user, not a
conversation: it never names a session (one person's parallel chats stay apart); it scopes the
history lookup, so two users' identical histories never meet in one session.

Within a session, several main turns can wait for their next state at once (parallel requests);
`claw/sources/proxy/continuation.py` reads which of them a new request continues, retries or supersedes.

All session state lives in the server's event loop (one thread): no locks.

Memory is bounded: at most `max_live` sessions (the proxy ends the least recently seen one, reason
`evicted`, when a new one would exceed it); a session keeps its open turns and its newest
`keep_closed_turns` turns that have an outcome (older ones live only in `proxy.jsonl`, and a branch
from them starts a new session); side requests (`X-Turn-Type: side`) never refresh `last_seen`, so
side traffic alone cannot keep a session from its idle timeout.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field

from claw.judge.turn import Message, Turn
from claw.sources.proxy import protocol as P
from claw.sources.proxy.continuation import canonical


@dataclass
class Session:
    session_id: str
    created: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    turns: list[Turn] = field(default_factory=list)  # main turns, oldest first
    keys: list[str] = field(
        default_factory=list
    )  # history keys (a turn's request + its reply) that lead here, one per turn
    n_turns: int = 0  # main turns ever served in this session (`turns` keeps only the recent ones)
    user: str | None = None  # whose session it is: the user of its first turn

    def open_turns(self) -> list[Turn]:
        """Main turns still waiting for their next state, oldest first (more than one after parallel requests)."""
        return [t for t in self.turns if t.next_state is None and not t.judged and t.outcome is None]


def history_key(messages: list[Message], user: str | None = None) -> str:
    blob = json.dumps([user, [canonical(m) for m in messages]], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def last_assistant(messages: list[Message]) -> int:
    """Index of the last assistant message, -1 when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return -1


class Sessions:
    def __init__(self, idle_timeout_s: float = 600.0, max_live: int = 10_000, keep_closed_turns: int = 8) -> None:
        self.idle_timeout_s = idle_timeout_s
        self.max_live, self.keep_closed_turns = max_live, keep_closed_turns
        self.live: dict[str, Session] = {}
        self._by_key: dict[str, str] = {}  # history key → session id

    def resolve(
        self,
        header_id: str | None,
        user: str | None,
        messages: list[Message],
        touch: bool = True,
        keyed: bool = False,
    ) -> tuple[Session, str]:
        """(session, how it was found: header | history | new). `touch=False` (side requests): not a sign of life.

        A header naming no live session opens one under that id, and says "new": the caller decides whether
        the request may open a session (a side request may not, even for an id that was live a moment ago).
        `keyed`: the user is proven by their key, and a header naming another user's session is refused (403).
        """
        if header_id:
            found = header_id in self.live
            if found and keyed and not self.owned_by(self.live[header_id], user):
                raise P.APIError(
                    403,
                    "X-Session-Id names a session of another user: choose another id",
                    "X-Session-Id",
                    "session_of_another_user",
                    "permission_error",
                )
            return self.get_or_create(header_id, touch), "header" if found else "new"
        i = last_assistant(messages)
        if i >= 0:
            sid = self._by_key.get(history_key(messages[: i + 1], user))
            if sid is not None and sid in self.live:
                session = self.live[sid]
                if touch:
                    session.last_seen = time.monotonic()
                return session, "history"
        return self.get_or_create("s-" + uuid.uuid4().hex[:16]), "new"

    @staticmethod
    def owned_by(session: Session, user: str | None) -> bool:
        return session.user is None or session.user == user

    def get_or_create(self, sid: str, touch: bool = True) -> Session:
        session = self.live.get(sid)
        if session is None:
            session = self.live[sid] = Session(sid)
        elif touch:
            session.last_seen = time.monotonic()
        return session

    def over_cap(self, keep: str) -> list[str]:
        """The least recently seen sessions past `max_live` (never `keep`, the one being served)."""
        extra = len(self.live) - self.max_live
        if extra <= 0:
            return []
        oldest = sorted((s for s in self.live.values() if s.session_id != keep), key=lambda s: s.last_seen)
        return [s.session_id for s in oldest[:extra]]

    def add_turn(self, session: Session, turn: Turn) -> None:
        """A turn joins its session; a request that resends its history with its reply finds the session again."""
        session.turns.append(turn)
        session.n_turns += 1
        session.user = session.user or turn.user
        key = history_key(turn.messages + [turn.response], turn.user)
        session.keys.append(key)
        self._by_key[key] = session.session_id
        self.trim(session)

    def trim(self, session: Session) -> None:
        """Forget all but the newest `keep_closed_turns` turns that have an outcome (open turns always stay)."""
        closed = [i for i, t in enumerate(session.turns) if t.outcome is not None]
        drop = set(closed[: max(0, len(closed) - self.keep_closed_turns)])
        if not drop:
            return
        for i in drop:
            if self._by_key.get(session.keys[i]) == session.session_id:
                del self._by_key[session.keys[i]]
        session.turns = [t for i, t in enumerate(session.turns) if i not in drop]
        session.keys = [k for i, k in enumerate(session.keys) if i not in drop]

    def close(self, sid: str) -> Session | None:
        """Forget a session (its state is freed); returns it so its open turns can be flushed."""
        session = self.live.pop(sid, None)
        if session is not None:
            for key in session.keys:
                if self._by_key.get(key) == sid:
                    del self._by_key[key]
        return session

    def idle(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        return [sid for sid, s in self.live.items() if now - s.last_seen > self.idle_timeout_s]

    def find_turn(self, turn_id: str) -> Turn | None:
        for session in self.live.values():
            for turn in session.turns:
                if turn.turn_id == turn_id:
                    return turn
        return None
