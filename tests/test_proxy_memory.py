"""The proxy's memory is bounded: live sessions capped (least recently seen ended as `evicted`), refused requests
open no session, a session keeps only its recent judged turns and at most `max_open_turns` unanswered ones, and
side requests alone do not keep a session alive (real HTTP, the official openai client, the tiny model)."""

from __future__ import annotations

import time
from collections import Counter

import httpx
import openai

from tests.test_proxy import make_proxy, records, wait_for


def ask(client, content, session=None, side=False, history=()):
    headers = {**({"X-Session-Id": session} if session else {}), **({"X-Turn-Type": "side"} if side else {})}
    messages = [*history, {"role": "user", "content": content}]
    r = client.chat.completions.create(model="m", messages=messages, max_tokens=3, extra_headers=headers)
    return messages + [r.choices[0].message.model_dump(exclude_none=True)]


def test_live_sessions_are_capped_and_the_least_recently_seen_ends_first(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3, idle_timeout_s=600, max_live_sessions=2)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        for sid in ("a", "b", "c"):
            ask(client, f"hello {sid}", session=sid)
        assert set(src.proxy.sessions.live) == {"b", "c"}
        ends = records(src, "end")
        assert [(e["session_id"], e["reason"]) for e in ends] == [("a", "evicted")]
        assert wait_for(lambda: any(r["reason"] == "session_ended_without_reply" for r in records(src, "verdict")))
    finally:
        src.stop()


def test_a_session_keeps_its_open_turns_and_only_the_newest_judged_ones(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3, idle_timeout_s=600, keep_closed_turns=1)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        history: list = []
        for i in range(5):  # each request answers the previous reply: that turn gets judged and closed
            history = ask(client, f"step {i}, no bold please", session="long", history=history)
            assert wait_for(lambda: all(t.outcome is not None for t in src.proxy.sessions.live["long"].turns[:-1]))
        session = src.proxy.sessions.live["long"]
        assert len(session.turns) <= 2 and session.n_turns == 5
        assert [t["turn_index"] for t in records(src, "turn")] == [0, 1, 2, 3, 4]  # indices count every turn
        history = ask(client, "and again", history=history)  # no header: found by its history
        assert src.proxy.sessions.live["long"].n_turns == 6
    finally:
        src.stop()


def test_a_side_request_does_not_reopen_an_ended_session(tiny_policy, tmp_path):
    """The race behind a flaky CI run: the reaper ends a session, then a side request naming it arrives."""
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        ask(client, "hello", session="quiet")
        assert src.proxy.end_session("quiet", "idle_timeout")
        ask(client, "summarise the chat so far", session="quiet", side=True)
        ask(client, "a title for a chat never seen", session="ghost", side=True)
        assert "quiet" not in src.proxy.sessions.live and "ghost" not in src.proxy.sessions.live
        assert not src.proxy.end_session("quiet", "idle_timeout")  # nothing left to end a second time
        assert [(e["session_id"], e["reason"]) for e in records(src, "end")] == [("quiet", "idle_timeout")]
    finally:
        src.stop()


def test_side_requests_do_not_keep_a_session_alive(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3, idle_timeout_s=1.0)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        ask(client, "hello", session="quiet")
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline and "quiet" in src.proxy.sessions.live:
            ask(client, "summarise the chat so far", session="quiet", side=True)  # e.g. a title generator
            time.sleep(0.2)
        assert "quiet" not in src.proxy.sessions.live
        assert [(e["session_id"], e["reason"]) for e in records(src, "end")] == [("quiet", "idle_timeout")]
    finally:
        src.stop()


def test_refused_requests_open_no_session_and_evict_none(tiny_policy, tmp_path):
    """A request is checked (its render, its length, its sampling parameters) before any session is created or
    touched: refusals naming new session ids can neither fill the session table nor push a real session out."""
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3, idle_timeout_s=600, max_live_sessions=5)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        ask(client, "hello", session="real")
        seen = src.proxy.sessions.live["real"].last_seen
        too_long = [
            "word " * 3_000,  # within the character bound, past the context once tokenised
            "x" * 200_000,  # past max_context_tokens x the longest token's characters: refused untokenised
        ]
        http = httpx.Client(base_url=src.url.removesuffix("/v1"), timeout=60)
        for i in range(200):
            resp = http.post(
                "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": too_long[i % 2]}]},
                headers={"X-Session-Id": f"refused-{i}"},
            )
            assert resp.status_code == 400 and resp.json()["error"]["code"] == "context_length_exceeded", resp.text
        resp = http.post(  # a refused request naming a live session does not refresh it either
            "/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "x" * 200_000}]},
            headers={"X-Session-Id": "real"},
        )
        assert resp.status_code == 400
        assert set(src.proxy.sessions.live) == {"real"} and src.proxy.sessions.live["real"].last_seen == seen
        assert not records(src, "end") and src.proxy.counts["requests_session_new"] == 1
    finally:
        src.stop()


def test_a_session_holds_at_most_max_open_turns_and_closes_the_oldest(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, default_max_tokens=3, max_open_turns=3)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        turn_ids = []
        for i in range(5):  # parallel requests of one session: none answers another's reply, all stay open
            r = client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"question {i}"}],
                extra_headers={"X-Session-Id": "busy"},
            )
            turn_ids.append(r.model_extra["claw"]["turn_id"])
        session = src.proxy.sessions.live["busy"]
        assert [t.turn_id for t in session.open_turns()] == turn_ids[2:]
        closed = [(r["turn_id"], r["reason"]) for r in records(src, "verdict")]
        assert closed == [(turn_ids[0], "too_many_open_turns"), (turn_ids[1], "too_many_open_turns")]
        assert src.proxy.counts["verdict_too_many_open_turns"] == 2
        assert httpx.post(src.url + "/sessions/busy/end").status_code == 200  # the open ones end as usual
        reasons = Counter(r["reason"] for r in records(src, "verdict"))
        assert reasons == {"too_many_open_turns": 2, "session_ended_without_reply": 3}
    finally:
        src.stop()
