"""Who is speaking: people's keys (a keys file of hashes), the user each turn is recorded under, and what one user's
key may not do to another's sessions. Real proxy on 127.0.0.1, the official `openai` client, httpx, a real file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import httpx
import openai
import pytest
import yaml

from claw.users.keys import DEFAULT_USER, KeysError, KeysFile, add_key, key_hash, parse_keys
from tests.test_proxy import make_proxy, wait_for

HI = [{"role": "user", "content": "hi"}]
ADMIN = "admin-key"


def test_the_keys_file_keeps_hashes_only(tmp_path):
    path = tmp_path / "keys.yaml"
    alice, alice2, bob = add_key(path, "alice"), add_key(path, "alice"), add_key(path, "bob")
    text = path.read_text()
    assert alice not in text and bob not in text and key_hash(alice) in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    keys = KeysFile(path)
    assert (keys.user_for(alice), keys.user_for(alice2), keys.user_for(bob)) == ("alice", "alice", "bob")
    assert keys.user_for("claw-guess") is None and keys.user_for("") is None
    assert len(keys) == 3


def test_a_keys_file_that_does_not_read_is_refused(tmp_path):
    with pytest.raises(KeysError, match="not a 'sha256"):
        parse_keys({"alice": ["plaintext-key"]})
    with pytest.raises(KeysError, match="both"):
        parse_keys({"alice": [key_hash("k")], "bob": [key_hash("k")]})
    with pytest.raises(KeysError, match="user id"):
        parse_keys({"../etc": [key_hash("k")]})
    with pytest.raises(KeysError, match="mapping"):
        parse_keys(["alice"])
    with pytest.raises(KeysError, match="user id"):
        add_key(tmp_path / "k.yaml", "a b")
    with pytest.raises(FileNotFoundError):
        KeysFile(tmp_path / "missing.yaml")  # at start, not at the first request


def test_the_command_line_prints_a_key_that_the_file_knows(tmp_path):
    path = tmp_path / "keys.yaml"
    out = subprocess.run(
        [sys.executable, "-m", "claw.users", "add-key", str(path), "carol"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    key = out.stdout.strip()
    assert KeysFile(path).user_for(key) == "carol"
    bad = subprocess.run(
        [sys.executable, "-m", "claw.users", "add-key", str(path), "no/slash"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "user id" in bad.stderr


@pytest.fixture(scope="module")
def keyed(tiny_policy, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("keyed")
    keys_file = run_dir / "keys.yaml"
    keys = {"alice": add_key(keys_file, "alice"), "bob": add_key(keys_file, "bob")}
    src, _ = make_proxy(tiny_policy, run_dir, mode="rl", default_max_tokens=2, api_key=ADMIN, keys_file=str(keys_file))
    yield src, keys, keys_file
    src.stop()


def client(src, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=src.url, api_key=key, max_retries=0, timeout=60)


def logged_turns(src) -> list[dict]:
    lines = (src.run_dir / "proxy.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("kind") == "turn"]


def test_each_key_speaks_for_its_user(keyed):
    src, keys, _ = keyed
    alice = client(src, keys["alice"]).chat.completions.with_raw_response.create(model="m", messages=HI, user="bob")
    bob = client(src, keys["bob"]).chat.completions.with_raw_response.create(model="m", messages=HI)
    admin = client(src, ADMIN).chat.completions.with_raw_response.create(model="m", messages=HI, user="dora")
    users = {r["session_id"]: r["user"] for r in logged_turns(src)}
    assert users[alice.headers["x-session-id"]] == "alice"  # the key decides, not the body's `user`
    assert users[bob.headers["x-session-id"]] == "bob"
    assert users[admin.headers["x-session-id"]] == "dora"  # the proxy's own key speaks for no one in particular
    with pytest.raises(openai.AuthenticationError):
        client(src, "claw-not-a-key").chat.completions.create(model="m", messages=HI)


def test_one_user_cannot_touch_another_users_session(keyed):
    src, keys, _ = keyed
    http = {u: httpx.Client(base_url=src.url.removesuffix("/v1"), timeout=60, headers={"Authorization": f"Bearer {k}"})
            for u, k in (*keys.items(), ("admin", ADMIN))}  # fmt: skip
    body = {"messages": HI}
    sid = http["alice"].post("/v1/chat/completions", json=body).headers["x-session-id"]
    stolen = http["bob"].post("/v1/chat/completions", json=body, headers={"X-Session-Id": sid})
    assert (stolen.status_code, stolen.json()["error"]["code"]) == (403, "session_of_another_user")
    fb = http["bob"].post("/v1/feedback", json={"session_id": sid, "reward": -1})
    assert (fb.status_code, fb.json()["error"]["code"]) == (404, "not_found")  # as for no session at all
    assert http["bob"].post(f"/v1/sessions/{sid}/end").status_code == 404
    own = http["alice"].post("/v1/chat/completions", json=body, headers={"X-Session-Id": sid})
    assert own.status_code == 200
    assert http["alice"].post("/v1/feedback", json={"session_id": sid, "reward": 1}).json()["status"] == "accepted"
    assert http["alice"].post(f"/v1/sessions/{sid}/end").status_code == 200
    roll = http["bob"].post("/admin/rollback", json={"to_version": 0})
    assert (roll.status_code, roll.json()["error"]["code"]) == (403, "not_admin")
    roll = http["admin"].post("/admin/rollback", json={"to_version": 0})
    assert (roll.status_code, roll.json()["error"]["code"]) == (404, "no_guard")  # past the key check


def test_a_person_added_while_serving_needs_no_restart(keyed):
    src, keys, keys_file = keyed
    time.sleep(0.01)  # a later mtime
    carol = add_key(keys_file, "carol")
    out = client(src, carol).chat.completions.with_raw_response.create(model="m", messages=HI)
    assert wait_for(lambda: any(r["session_id"] == out.headers["x-session-id"] for r in logged_turns(src)))
    assert {r["session_id"]: r["user"] for r in logged_turns(src)}[out.headers["x-session-id"]] == "carol"
    data = yaml.safe_load(keys_file.read_text())  # and a key taken away stops working
    data.pop("bob")
    keys_file.write_text(yaml.safe_dump(data))
    os.utime(keys_file, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(openai.AuthenticationError):
        client(src, keys["bob"]).chat.completions.create(model="m", messages=HI)


def test_without_keys_the_request_names_its_user(tiny_policy, tmp_path):
    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=2)
    try:
        c = client(src, "unused")
        named = c.chat.completions.with_raw_response.create(model="m", messages=HI, user="erin")
        anonymous = c.chat.completions.with_raw_response.create(model="m", messages=HI)
        users = {r["session_id"]: r["user"] for r in logged_turns(src)}
        assert users[named.headers["x-session-id"]] == "erin"
        assert users[anonymous.headers["x-session-id"]] == DEFAULT_USER
    finally:
        src.stop()
