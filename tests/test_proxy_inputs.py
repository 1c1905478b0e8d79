"""No input gives a 500: targeted cases, an error after the first SSE chunk, and a schema-driven fuzz of every
endpoint (hypothesis builds bodies and headers from the chat-completions request schema, mutated at every level)
against the real server over HTTP; the server keeps serving afterwards."""

from __future__ import annotations

import json
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
    http = httpx.Client(base_url=src.url.removesuffix("/v1"), headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
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
leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), printable)
anything = st.recursive(
    leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(printable, c, max_size=3), max_leaves=8
)


def field(valid):
    """Mostly a value of the schema's type, sometimes any JSON at all."""
    return st.one_of(valid, valid, valid, anything)


function_call = st.fixed_dictionaries({"name": field(printable)}, optional={"arguments": field(printable | anything)})
tool_call = st.fixed_dictionaries(
    {"function": field(function_call)}, optional={"id": field(printable), "type": field(st.just("function"))}
)
message = st.fixed_dictionaries(
    {
        "role": field(st.sampled_from([*ROLES, "wizard"])),
        "content": st.one_of(printable, printable, printable, st.none(), anything),
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
        "max_tokens": field(st.integers(-2, 4)),
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
    },
)
request = st.one_of(
    st.tuples(st.just("/v1/chat/completions"), chat_body.map(json.dumps)),
    st.tuples(st.just("/v1/chat/completions"), anything.map(json.dumps)),
    st.tuples(st.just("/v1/chat/completions"), st.binary(max_size=40)),
    st.tuples(
        st.just("/v1/feedback"),
        field(
            st.fixed_dictionaries(
                {"session_id": field(printable)},
                optional={
                    "turn_id": field(printable),
                    "reward": field(st.floats(-2, 2)),
                    "correction": field(printable),
                },
            )
        ).map(json.dumps),
    ),
    st.tuples(
        printable.map(lambda sid: f"/v1/sessions/{quote(sid, safe='')}/end"),
        st.one_of(
            st.just(""),
            st.binary(max_size=20),
            field(st.fixed_dictionaries({}, optional={"messages": field(st.lists(message, max_size=2))})).map(
                json.dumps
            ),
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
