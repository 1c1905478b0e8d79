"""What the HTTP layer refuses before it reads a request: a body that is not JSON (415; a browser's form or
`text/plain` POST needs no CORS preflight), a `Host` that is not this server (421: DNS rebinding points an attacker's
name at 127.0.0.1), a foreign `Origin` (403: a web page's cross-site request); and the `Authorization` scheme is
case-insensitive, as everywhere in HTTP. Real server on 127.0.0.1, httpx and the official `openai` client."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.test_proxy import make_proxy

HI = {"messages": [{"role": "user", "content": "hi"}]}
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def served(tiny_policy, tmp_path_factory):
    src, _ = make_proxy(
        tiny_policy,
        tmp_path_factory.mktemp("http"),
        mode="rl",
        default_max_tokens=2,
        allowed_hosts=["proxy.internal"],
        allowed_origins=["https://app.example"],
    )
    yield src, httpx.Client(base_url=src.url.removesuffix("/v1"), timeout=60)
    src.stop()


def refusal(resp: httpx.Response) -> tuple[int, str]:
    return resp.status_code, resp.json()["error"]["code"]


def test_a_browser_request_is_refused(served):
    src, http = served
    port = src.server.port
    body = httpx.Request("POST", "http://x", json=HI).content  # the JSON a page could send as text/plain
    browser = {"Content-Type": "text/plain", "Host": "evil.example", "Origin": "http://evil.example"}
    assert refusal(http.post(CHAT, content=body, headers=browser)) == (421, "misdirected_request")
    assert refusal(http.post(CHAT, content=body, headers={**browser, "Host": f"127.0.0.1:{port}"})) == (
        403,
        "foreign_origin",
    )
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
        headers = {"Content-Type": content_type} if content_type else {}
        assert refusal(http.post(CHAT, content=body, headers=headers)) == (415, "unsupported_media_type")
        assert refusal(http.post("/v1/feedback", content=b'{"session_id": "s", "reward": 1}', headers=headers)) == (
            415,
            "unsupported_media_type",
        )
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example:80"):
        assert refusal(http.get("/v1/models", headers={"Host": host})) == (421, "misdirected_request"), host
    for origin in ("http://evil.example", "null", f"http://localhost:{port + 1}", "https://app.example.evil"):
        assert refusal(http.post(CHAT, json=HI, headers={"Origin": origin})) == (403, "foreign_origin"), origin
    assert src.proxy.counts["turns_main"] == 0  # nothing above was served


def test_json_clients_on_this_server_are_served(served):
    src, http = served
    port = src.server.port
    ok = [
        http.post(CHAT, json=HI),  # httpx: application/json, Host 127.0.0.1:port
        http.post(
            CHAT,
            content=httpx.Request("POST", "http://x", json=HI).content,
            headers={"Content-Type": "application/json; charset=utf-8"},
        ),
        http.post(CHAT, json=HI, headers={"Host": f"localhost:{port}"}),
        http.post(CHAT, json=HI, headers={"Host": f"[::1]:{port}"}),
        http.post(CHAT, json=HI, headers={"Host": "proxy.internal"}),  # source.allowed_hosts
        http.post(CHAT, json=HI, headers={"Origin": "https://app.example"}),  # source.allowed_origins
        http.post(CHAT, json=HI, headers={"Origin": f"http://127.0.0.1:{port}"}),  # this server's own origin
        http.get("/healthz", headers={"Host": "k8s-probe.example"}),  # a liveness probe may name any host
    ]
    assert [r.status_code for r in ok] == [200] * len(ok), [r.text[:200] for r in ok]
    assert http.post("/v1/sessions/nobody/end").status_code == 404  # a POST with no body needs no content type
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    assert client.chat.completions.create(model="m", **HI).choices[0].message.role == "assistant"


def test_the_bearer_scheme_is_case_insensitive(tiny_policy, tmp_path):
    src, _ = make_proxy(
        tiny_policy,
        tmp_path,
        mode="rl",
        api_key="s3cret",
        default_max_tokens=2,
        allowed_hosts=["*"],
        allowed_origins=["*"],
    )
    try:
        http = httpx.Client(base_url=src.url.removesuffix("/v1"), timeout=60)
        anyone = {"Authorization": "Bearer s3cret", "Host": "evil.example", "Origin": "http://evil.example"}
        assert http.get("/v1/models", headers=anyone).status_code == 200  # "*": any host, any origin (the key guards)
        for given in ("Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR   s3cret"):
            assert http.get("/v1/models", headers={"Authorization": given}).status_code == 200, given
        for given in ("Basic s3cret", "bearers3cret", "s3cret", "bearer wrong", "Bearer"):
            assert refusal(http.get("/v1/models", headers={"Authorization": given})) == (401, "invalid_api_key"), given
    finally:
        src.stop()
