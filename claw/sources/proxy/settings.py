"""`ProxySettings`: every setting of the proxy, with its default, in one place.

`source=proxy` (conf/source/proxy.yaml) and the simulated users' `source.proxy` block reach `ProxySource` as
keyword arguments, and every one that is not a field here is refused, naming it (`ProxySettings.from_keys`): a
misspelt key is an error, never a silently ignored one. conf/source/proxy.yaml documents each key next to the
same default (tests/test_proxy_settings.py holds the two equal).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any


@dataclass
class ProxySettings:
    # HTTP (claw/sources/proxy/server.py, gate.py)
    host: str = "127.0.0.1"  # any other address requires api_key
    port: int = 8000  # 0 = any free port
    api_key: str | None = None  # when set, every endpoint but /healthz needs "Authorization: Bearer <key>"
    keys_file: str | None = None  # people's keys (claw/users/keys.py): a request with one speaks for its user
    model_name: str = "claw-policy"  # what /v1/models lists (requests may name any model)
    max_body_bytes: int = 4 << 20
    allowed_hosts: Sequence[str] = ()  # Host names served besides the loopback names and the bound host
    allowed_origins: Sequence[str] = ()  # browser origins allowed to call the proxy
    # sampling
    min_temperature: float = 0.2  # trainable turns are sampled at the request's temperature clamped to this range
    max_temperature: float = 1.5
    default_max_tokens: int = 256
    max_tokens_cap: int = 1024
    max_context_tokens: int = 2048  # prompt + max tokens must fit
    ignore_top_p: bool = False
    # sessions (claw/sources/proxy/sessions.py)
    idle_timeout_s: float = 600.0
    max_live_sessions: int = 10_000  # past this, the least recently seen session ends (reason `evicted`)
    max_open_turns: int = 64  # unanswered turns a session holds; past this the oldest closes (`too_many_open_turns`)
    keep_closed_turns: int = 8  # judged turns a live session keeps in memory (all are in proxy.jsonl)
    # judging (claw/judge/labelling.py); train.py passes the mode and OPD's top-k
    mode: str = "combine"  # rl | opd | combine: which judges run
    topk: int = 0
    judge_retries: int = 3  # a turn whose judge calls all failed is judged again this many times...
    judge_retry_backoff_s: float = 5.0  # ...after this wait, doubled each time
    # the engine's micro-batcher (claw/sources/proxy/batcher.py)
    max_batch_size: int = 32  # requests decoded together in one engine call
    batch_window_s: float = 0.02  # how long the batcher waits for near-simultaneous requests to join
    max_wait_s: float = 120.0  # a request not started within this gets 503 + Retry-After
    max_waiting: int = 256  # requests not started beyond this: 503 at once

    def __post_init__(self) -> None:
        if self.max_open_turns < 1:
            raise ValueError(
                f"source.max_open_turns={self.max_open_turns}: a session must hold at least its newest turn "
                "until it is answered; set it to 1 or more"
            )

    @classmethod
    def from_keys(cls, keys: Mapping[str, Any]) -> ProxySettings:
        """The settings `keys` name (the rest keep their defaults); a key that names no setting is a TypeError."""
        names = [f.name for f in fields(cls)]
        unknown = [k for k in keys if k not in names]
        if unknown:
            hints = []
            for key in unknown:
                close = difflib.get_close_matches(key, names, n=1)
                hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise TypeError(
                f"unknown proxy setting {', '.join(hints)}: conf/source/proxy.yaml lists every key "
                f"({', '.join(names)})"
            )
        return cls(**keys)
