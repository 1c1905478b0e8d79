"""`POST /admin/rollback` on the proxy (real server on 127.0.0.1, httpx and the official client): API key,
bad bodies, unknown and already-served versions, and a request that the guard then applies like
`python -m claw.rollback`'s."""

import httpx
import openai
import pytest

from claw.guard.state import request_rollback
from tests.test_guard import Run, same_weights
from tests.test_proxy import make_proxy


@pytest.fixture
def guarded(tiny_policy, tmp_path):
    """A guarded run with promoted versions 0, 1, 2 (2 served) and a proxy with an API key in front of it."""
    (tmp_path / "run").mkdir()
    run = Run(tmp_path / "run", tiny_policy)
    assert run.step(label=0, rewards=[1.0, 0.0] * 8, scale=1e-4)["action"] == "promote"
    assert run.step(label=1, rewards=[1.0, 0.0] * 8, scale=1e-4)["action"] == "promote"
    (tmp_path / "proxy").mkdir()
    src, _ = make_proxy(tiny_policy, tmp_path / "proxy", api_key="s3cret", default_max_tokens=3)
    yield run, src
    src.stop()


def test_admin_rollback_over_http(guarded):
    run, src = guarded
    base = src.url.removesuffix("/v1")
    http = httpx.Client(base_url=base, timeout=30)
    key = {"Authorization": "Bearer s3cret"}

    assert http.post("/admin/rollback", json={"to_version": 0}).status_code == 401  # no key
    assert (
        http.post("/admin/rollback", json={"to_version": 0}, headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    r = http.post("/admin/rollback", json={"to_version": 0}, headers=key)
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_guard"  # not wired to a guard yet

    src.serve_admin(lambda version: request_rollback(run.tmp, version))  # what train.py does for a guarded run
    for body in (b"not json", b"", b"[1]", b'{"to_version": "0"}', b'{"to_version": true}', b'{"version": 0}'):
        r = http.post("/admin/rollback", content=body, headers={**key, "Content-Type": "application/json"})
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["type"] == "invalid_request_error"
    r = http.post("/admin/rollback", json={"to_version": 7}, headers=key)
    assert (
        r.status_code == 404
        and r.json()["error"]["code"] == "unknown_version"
        and "kept: [0, 1, 2]" in r.json()["error"]["message"]
    )
    r = http.post("/admin/rollback", json={"to_version": 2}, headers=key)
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_served"
    assert not (run.tmp / "guard" / "rollback_request.json").exists()

    # The official client, with the key: the request is recorded; nothing served changes until the guard acts.
    client = openai.OpenAI(base_url=base, api_key="s3cret", max_retries=0)  # the admin path is outside /v1
    r = client.post("/admin/rollback", body={"to_version": 0}, cast_to=httpx.Response)
    assert r.status_code == 202 and r.json()["status"] == "requested" and r.json()["to_version"] == 0
    assert (run.tmp / "guard" / "rollback_request.json").exists() and run.served()["version"] == 2
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).post(
            "/admin/rollback", body={"to_version": 0}, cast_to=httpx.Response
        )

    # The guard applies it at its next rollout batch, exactly as for `python -m claw.rollback`.
    v0 = run.guard.dir.load_weights("v0-0.safetensors")
    d = run.step(label=2, rewards=[1.0, 0.0] * 8, scale=1e-4)
    assert d["action"] == "rollback" and d["reasons"] == ["manual"] and d["served_version"] == 0
    version, weights = run.engine.loads[-1]
    assert version == 3 and same_weights(weights, v0)
    assert not (run.tmp / "guard" / "rollback_request.json").exists()
    r = http.post("/admin/rollback", json={"to_version": 0}, headers=key)
    assert r.status_code == 409  # now served


def test_admin_rollback_needs_an_api_key_configured(tiny_policy, tmp_path):
    src, _ = make_proxy(
        tiny_policy, tmp_path, default_max_tokens=3
    )  # loopback without a key: open for chat, closed for admin
    try:
        src.serve_admin(lambda version: ("requested", "should never be called"))
        r = httpx.post(src.url.removesuffix("/v1") + "/admin/rollback", json={"to_version": 0}, timeout=30)
        assert r.status_code == 403 and "api_key" in r.json()["error"]["message"]
    finally:
        src.stop()
