"""No input gives a 500: targeted cases, an error after the first SSE chunk, and a schema-driven fuzz of every
endpoint (hypothesis builds bodies and headers from the chat-completions request schema, mutated at every level,
with hostile values: integers past Python's 4,300 digits, lone surrogates, deep nesting, also inside tool-call
arguments that are parsed later) against the real server over HTTP; the server keeps serving afterwards, on the
same keep-alive connection. An unexpected exception is a 500 that names a request id and nothing else."""

from __future__ import annotations

import http.client
import json
import logging
import re
from urllib.parse import quote

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claw.sources.proxy.protocol import ROLES
from tests.test_proxy import make_proxy

KEY = "s3cret-key"


@pytest.fixture(scope="module")
def served(tiny_policy, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("inputs")
    src, _ = make_proxy(
        tiny_policy, run_dir, mode="rl", api_key=KEY, default_max_tokens=2, max_tokens_cap=2, max_body_bytes=1 << 16
    )
    http = httpx.Client(
        base_url=src.url.removesuffix("/v1"),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        timeout=60,
    )
    yield src, http
    src.stop()


HI = [{"role": "user", "content": "hi"}]
READ = {"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}


def test_named_bad_inputs_get_4xx(served):
    src, http = served
    url = "/v1/chat/completions"
    non_ascii = {"Authorization": "Bearer clé-ü".encode()}
    cases = [
        (http.get("/v1/models", headers=non_ascii), 401),
        (http.post(url, json={"messages": HI}, headers=non_ascii), 401),
        (http.post("/v1/sessions/x/end", content=b"{not json"), 400),
        (http.post("/v1/sessions/x/end", content=b"[1, 2]"), 400),
        (http.post("/v1/sessions/x/end", json={"messages": "hi"}), 400),
        (http.post("/v1/sessions/x/end", content=b"{" * 70000), 413),
        (http.post(url, json={"messages": HI, "tools": [{"type": "function", "function": "read"}]}), 400),
        (http.post(url, json={"messages": HI, "tools": ["read"]}), 400),
        (http.post(url, json={"messages": HI, "stop": ""}), 400),
        (http.post(url, json={"messages": HI, "stop": ["a", ""]}), 400),
        (http.post(url, json={"messages": HI, "tools": [READ], "tool_choice": "required"}), 400),
        (http.post(url, content=b"[" * 60000 + b"]" * 60000), 413),
        (http.post(url, content=b"[" * 30000 + b"]" * 30000), 400),
    ]
    for resp, status in cases:
        assert resp.status_code == status, (resp.request.url, resp.text[:300])
        assert resp.json()["error"]["message"]
    assert http.post("/v1/sessions/nobody/end").status_code == 404  # an empty body is still allowed
    assert http.post(url, json={"messages": HI, "tools": [READ], "tool_choice": "auto"}).status_code == 200


def calls(arguments: str) -> list[dict]:
    """A history whose assistant message called a tool with `arguments` (a string the proxy parses as JSON)."""
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": arguments}}
    return [*HI, {"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "content": "ok"}]


def exchange(
    src, requests: list[tuple[str, str, bytes]], headers: dict | None = None
) -> list[tuple[int, dict, bytes]]:
    """Send `requests` (method, path, body) one after another on ONE keep-alive connection; fails if the server
    drops it (http.client would reconnect only after a `Connection: close`, and then `sock` changes)."""
    conn = http.client.HTTPConnection("127.0.0.1", src.server.port, timeout=60)
    key = {"Authorization": f"Bearer {src.proxy_api_key}"} if src.proxy_api_key else {}
    head = {**key, "Content-Type": "application/json", **(headers or {})}
    out, sock = [], None
    try:
        for method, path, body in requests:
            conn.request(method, path, body=body, headers=head)
            resp = conn.getresponse()
            out.append((resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()))
            assert sock is None or conn.sock is sock, f"the connection was dropped after {path}"
            sock = conn.sock
            assert sock is not None, f"the server closed the connection after {path}: {out[-1]}"
    finally:
        conn.close()
    return out


# Values JSON can carry that Python cannot hold once parsed: an integer past int's 4,300-digit limit, a lone UTF-16
# surrogate (the tokenizer and the UTF-8 log refuse it), nesting past the recursion limit in a string parsed later.
HUGE = "9" * 5000


def test_unreadable_values_get_400_in_openai_shape_on_a_kept_connection(served):
    src, http = served
    chat = "/v1/chat/completions"
    deep = "[" * 50000 + "]" * 50000
    cases = [
        (chat, f'{{"messages": {json.dumps(HI)}, "max_tokens": {HUGE}}}', "max_tokens"),
        (chat, f'{{"messages": {json.dumps(HI)}, "seed": -{HUGE}}}', "seed"),
        ("/v1/feedback", f'{{"session_id": "s", "reward": {HUGE}}}', "reward"),
        (chat, json.dumps({"messages": calls(HUGE)}), "arguments of 5,000 digits"),
        (chat, json.dumps({"messages": calls(f'{{"path": {HUGE}}}')}), "a 5,000-digit number inside arguments"),
        (chat, json.dumps({"messages": calls(deep[:30000] + deep[-30000:])}), "arguments nested 30,000 deep"),
        (chat, json.dumps({"messages": calls('{"a": "x\\ud800"}')}), "a lone surrogate inside arguments"),
        (chat, '{"messages": [{"role": "user", "content": "a\\ud800b"}]}', "a lone surrogate (JSON escape)"),
        (chat, b'{"messages": [{"role": "user", "content": "a\xed\xa0\x80b"}]}', "a surrogate encoded in UTF-8"),
        (chat, '{"messages": [{"role": "user", "content": "hi", "\\udfff": 1}]}', "a lone surrogate in a key"),
        ("/v1/sessions/s/end", '{"messages": [{"role": "user", "content": "\\udc00"}]}', "in a session end"),
        (chat, json.dumps({"messages": HI, "tools": [nested_tool(500)]}), "a tool's parameters nested 500 deep"),
    ]
    answers = exchange(
        src, [("POST", path, body if isinstance(body, bytes) else body.encode()) for path, body, _ in cases]
    )
    for (_, _, what), (status, _, raw) in zip(cases, answers):
        assert status == 400, (what, raw[:300])
        error = json.loads(raw)["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error", what
        assert not re.search(r"Error\(|Traceback|set_int_max_str_digits|\.py", error["message"]), (what, error)
    assert exchange(src, [("POST", chat, json.dumps({"messages": HI}).encode())])[0][0] == 200  # and it serves on


def nested_tool(depth: int) -> dict:
    """A tool whose parameter schema holds arrays nested `depth` deep (json.loads reads about 1,000 levels)."""
    return {
        "type": "function",
        "function": {"name": "read", "parameters": {"default": json.loads("[" * depth + "]" * depth)}},
    }


def test_arguments_nested_50000_deep_get_400_under_the_default_body_limit(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=2, max_tokens_cap=2)  # 4 MiB bodies
    try:
        deep = json.dumps({"messages": calls("[" * 50000 + "]" * 50000)}).encode()
        answers = exchange(src, [("POST", "/v1/chat/completions", deep)] * 2)
        assert [status for status, _, _ in answers] == [400, 400], answers
    finally:
        src.stop()


def test_an_unexpected_error_is_a_bare_500_with_a_request_id_and_the_connection_stays(served, monkeypatch, caplog):
    src, http = served

    def broken(*_):
        raise RuntimeError("secret detail from /srv/claw/internals.py")

    monkeypatch.setattr(src.proxy.telemetry, "expose", broken)
    with caplog.at_level(logging.ERROR):
        answers = exchange(src, [("GET", "/metrics", b""), ("GET", "/healthz", b"")])
    (status, headers, raw), (after, _, _) = answers
    error = json.loads(raw)["error"]
    request_id = headers["x-request-id"]
    assert status == 500 and error["message"] == f"internal error (request id {request_id})", error
    assert error["type"] == "server_error" and "secret" not in raw.decode() and after == 200
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert logged and logged[0].exc_info and "secret detail" in str(logged[0].exc_info[1])  # the traceback, logged
    # an unexpected error after the first SSE chunk: an error event that names the request, nothing more
    monkeypatch.setattr(src.proxy.turns, "record", broken)
    with http.stream("POST", "/v1/chat/completions", json={"messages": HI, "stream": True}) as resp:
        events = [line for line in resp.iter_lines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1] == "data: [DONE]"
    error = json.loads(events[-2].removeprefix("data: "))["error"]
    cid = json.loads(events[0].removeprefix("data: "))["id"]
    assert error["message"] == f"internal error (request id {cid})" and "secret" not in events[-2], error


class DiesMidStream:
    """The real hf engine, made to fail after sampling two tokens (an engine crash mid-generation)."""

    def __init__(self, engine):
        self.engine = engine

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, prompts, sampling, on_token=None):
        ids = self.engine.tokenizer("Hello there", add_special_tokens=False)["input_ids"][:2]
        for row in range(len(prompts)):
            for t in ids:
                on_token(row, t, -0.5)
        raise RuntimeError("the engine died")


def test_an_error_after_the_first_chunk_is_an_error_event_and_the_stream_ends(tiny_policy, tmp_path):
    from claw.engine.hf import HFEngine

    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", engine=DiesMidStream(HFEngine(tiny_policy)))
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=30)
        stream = client.chat.completions.create(model="m", messages=HI, stream=True)
        got = []
        with pytest.raises(openai.APIError, match="the engine died"):
            for chunk in stream:
                got.append(chunk)
        assert got and got[0].choices[0].delta.role == "assistant"  # the stream had begun
        with httpx.stream(
            "POST", src.url + "/chat/completions", json={"messages": HI, "stream": True}, timeout=30
        ) as r:
            assert r.status_code == 200
            events = [line for line in r.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "data: [DONE]"  # ended cleanly, not cut off
        error = json.loads(events[-2].removeprefix("data: "))["error"]
        assert error["code"] == "engine_error" and "the engine died" in error["message"]
        assert src.proxy.counts["streams_failed"] == 2
        assert httpx.get(src.url.removesuffix("/v1") + "/healthz").json()["status"] == "ok"
    finally:
        src.stop()


# -- schema-driven fuzz ---------------------------------------------------------------------------
printable = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
# Hostile values. JSON text can carry what json.dumps cannot write from Python (an integer past 4,300 digits) and
# what Python holds but cannot encode (a lone surrogate): the first two are placeholders that `wire` replaces in the
# dumped text; `json.dumps` writes a lone surrogate as its \\udXXX escape, as a hostile client would.
huge_int = st.integers(4_301, 6_000).map(lambda n: f"\x00int:{n}")  # an integer of n digits
deep_value = st.integers(60, 3_000).map(lambda n: f"\x00deep:{n}")  # n nested arrays
surrogate = st.builds(lambda a, c, b: a + chr(c) + b, printable, st.integers(0xD800, 0xDFFF), printable)
hostile = st.one_of(huge_int, deep_value, surrogate)
# strings parsed as JSON later (tool-call arguments): huge numbers and deep nesting inside the string
parsed_later = st.one_of(
    st.integers(4_000, 6_000).map(lambda n: "7" * n),
    st.integers(4_301, 6_000).map(lambda n: '{"n": ' + "7" * n + "}"),
    st.integers(1, 30_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 3_000).map(lambda n: '{"a": ' * n + "1" + "}" * n),
    surrogate.map(json.dumps),
)


def wire(value) -> str:
    """`value` as JSON text, placeholders replaced by the values they stand for."""

    def raw(m: re.Match) -> str:
        n = int(m[2])
        return "9" * n if m[1] == "int" else "[" * n + "]" * n

    return re.sub(r'"\\u0000(int|deep):(\d+)"', raw, json.dumps(value))


ordinary = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), printable)
leaf = st.integers(0, 15).flatmap(lambda k: hostile if k == 0 else ordinary)  # one leaf in 16 is hostile
anything = st.recursive(
    leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(printable, c, max_size=3), max_leaves=8
)


def field(valid):
    """Mostly a value of the schema's type, sometimes any JSON at all."""
    return st.one_of(valid, valid, valid, anything)


function_call = st.fixed_dictionaries(
    {"name": field(printable)}, optional={"arguments": field(printable | parsed_later | anything)}
)
tool_call = st.fixed_dictionaries(
    {"function": field(function_call)}, optional={"id": field(printable), "type": field(st.just("function"))}
)
message = st.fixed_dictionaries(
    {
        "role": field(st.sampled_from([*ROLES, "wizard"])),
        "content": st.one_of(printable, printable, printable, st.none(), surrogate, anything),
    },
    optional={
        "tool_calls": field(st.lists(tool_call, max_size=2)),
        "tool_call_id": field(printable),
        "name": field(printable),
    },
)
tool = st.fixed_dictionaries(
    {"type": field(st.just("function"))},
    optional={
        "function": field(
            st.fixed_dictionaries(
                {"name": field(printable)}, optional={"parameters": anything, "description": field(printable)}
            )
        )
    },
)
chat_body = st.fixed_dictionaries(
    {"messages": field(st.lists(message, min_size=1, max_size=3))},
    optional={
        "model": field(printable),
        "temperature": field(st.floats(-1, 3, allow_nan=False)),
        "top_p": field(st.floats(0, 1)),
        "n": field(st.integers(0, 3)),
        "max_tokens": field(st.integers(-2, 4) | huge_int),
        "seed": field(st.integers(-(2**70), 2**70) | huge_int),
        "max_completion_tokens": field(st.integers(-2, 4)),
        "stop": field(printable | st.lists(printable, max_size=5)),
        "stream": field(st.booleans()),
        "stream_options": field(st.fixed_dictionaries({}, optional={"include_usage": field(st.booleans())})),
        "tools": field(st.lists(tool, max_size=2)),
        "tool_choice": field(st.sampled_from(["auto", "none", "required"])),
        "logprobs": field(st.booleans()),
        "top_logprobs": field(st.integers(0, 3)),
        "user": field(printable),
    },
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "Authorization": st.one_of(st.just(f"Bearer {KEY}"), printable.map(lambda t: f"Bearer {t}")),
        "X-Session-Id": printable,
        "X-Turn-Type": st.sampled_from(["main", "side", "both", ""]),
        "X-Session-Done": st.sampled_from(["true", "0", "maybe"]),
        "Content-Type": st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain"]),
    },
)
request = st.one_of(
    st.tuples(st.just("/v1/chat/completions"), chat_body.map(wire)),
    st.tuples(st.just("/v1/chat/completions"), anything.map(wire)),
    st.tuples(st.just("/v1/chat/completions"), st.binary(max_size=40)),
    st.tuples(
        st.just("/v1/feedback"),
        field(
            st.fixed_dictionaries(
                {"session_id": field(printable)},
                optional={
                    "turn_id": field(printable),
                    "reward": field(st.floats(-2, 2) | huge_int),
                    "correction": field(printable),
                },
            )
        ).map(wire),
    ),
    st.tuples(
        printable.map(lambda sid: f"/v1/sessions/{quote(sid, safe='')}/end"),
        st.one_of(
            st.just(""),
            st.binary(max_size=20),
            field(st.fixed_dictionaries({}, optional={"messages": field(st.lists(message, max_size=2))})).map(wire),
        ),
    ),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(req=request, extra=headers)
def test_fuzzed_requests_never_get_a_5xx(served, req, extra):
    src, http = served
    path, body = req
    head = {k: v.strip().encode() for k, v in extra.items()}
    with http.stream("POST", path, content=body.encode() if isinstance(body, str) else body, headers=head) as resp:
        text = resp.read().decode("utf-8", "replace")
    assert resp.status_code < 500, (path, body, extra, text[:500])
    assert '"type": "server_error"' not in text, (path, body, extra, text[:500])  # nor one inside a stream


def test_the_server_still_serves_after_the_fuzz(served):
    src, http = served
    client = openai.OpenAI(base_url=src.url, api_key=KEY, max_retries=0, timeout=30)
    assert client.chat.completions.create(model="m", messages=HI).choices[0].message.role == "assistant"
    assert http.get("/healthz").json()["status"] == "ok"
