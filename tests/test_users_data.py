"""A person's data is theirs: `python -m claw.users export` writes only their turns and samples; `forget` deletes
them from a stopped run, keeps every line's place (the queue's resume offsets hold), records that it happened and
not what was said; a restarted proxy and a resumed queue see nothing of theirs. Real proxy on 127.0.0.1, the
official `openai` client, real files, the command line in a subprocess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import openai
import pytest

from claw.rollout.queue import DuplicateSample, RolloutQueue
from claw.users.data import RunIsLive, forget
from claw.users.keys import add_key
from tests.test_proxy import make_proxy, wait_for

SECRET = {"alice": "alice-zebra-quartz", "bob": "bob-mango-violet"}


def converse(src, key: str, user: str) -> list[str]:
    """Two judged turns of `user`: each reply answered with thanks, so the rule judge makes a sample of it."""
    client = openai.OpenAI(base_url=src.url, api_key=key, max_retries=0, timeout=60)
    turn_ids = []
    for i in range(2):
        sid = f"{user}-{i}"
        first = [{"role": "user", "content": f"{SECRET[user]} question {i}: what is 2 + 2?"}]
        r = client.chat.completions.create(
            model="m", messages=first, max_tokens=4, extra_headers={"X-Session-Id": sid}
        )
        turn_ids.append(r.model_extra["claw"]["turn_id"])
        follow = [
            *first,
            r.choices[0].message.model_dump(exclude_none=True),
            {"role": "user", "content": "Perfect, thanks!"},
        ]
        client.chat.completions.create(model="m", messages=follow, max_tokens=2, extra_headers={"X-Session-Id": sid})
    return turn_ids


@pytest.fixture
def run(tiny_policy, tmp_path):
    keys_file = tmp_path / "keys.yaml"
    keys = {u: add_key(keys_file, u) for u in SECRET}
    src, queue = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=4, keys_file=str(keys_file))
    turns = {u: converse(src, keys[u], u) for u in SECRET}
    stored = lambda: {s.sample_id for s in queue.store.samples()}  # noqa: E731
    assert wait_for(lambda: set(turns["alice"] + turns["bob"]) <= stored(), timeout=60)
    return src, queue, keys_file, turns


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "claw.users", *args], capture_output=True, text=True, timeout=120)


def test_forget_refuses_a_serving_run_then_deletes_one_user_and_nothing_else(run, tiny_policy, tmp_path):
    src, queue, keys_file, turns = run
    with pytest.raises(RunIsLive):
        forget(tmp_path, "alice")
    src.stop()
    queue.store.close()
    sizes = {name: (tmp_path / name).stat().st_size for name in ("proxy.jsonl", "samples.jsonl")}

    out = cli("export", str(tmp_path), "alice", "--out", str(tmp_path / "alice_export"))
    assert out.returncode == 0, out.stderr
    exported = [json.loads(line) for line in (tmp_path / "alice_export" / "proxy.jsonl").read_text().splitlines()]
    assert {r["user"] for r in exported if r["kind"] == "turn"} == {"alice"}
    assert SECRET["alice"] in json.dumps(exported) and SECRET["bob"] not in json.dumps(exported)
    samples = [json.loads(line) for line in (tmp_path / "alice_export" / "samples.jsonl").read_text().splitlines()]
    assert {s["sample_id"] for s in samples} == set(turns["alice"])
    assert {s["user"] for s in samples} == {"alice"}  # every sample says whose turn it was

    gone = cli("forget", str(tmp_path), "alice")
    assert gone.returncode == 0, gone.stderr
    counts = json.loads(gone.stdout)
    assert counts["samples"] == 2 and counts["turn_records"] >= 2
    for name in ("proxy.jsonl", "samples.jsonl"):
        text = (tmp_path / name).read_text()
        assert SECRET["alice"] not in text and SECRET["bob"] in text
        assert (tmp_path / name).stat().st_size == sizes[name]  # every line keeps its place
    record = (tmp_path / "forgotten.jsonl").read_text()
    assert "alice" not in record and json.loads(record)["user_sha256"]

    queue2 = RolloutQueue(tmp_path / "samples.jsonl", fsync=False)  # a resumed run
    assert queue2.replay(0) == 2
    replayed = [s.sample_id for e in queue2._groups if e.group for s in e.group]
    assert sorted(replayed) == sorted(turns["bob"])
    with pytest.raises(DuplicateSample):  # a forgotten turn can never come back as a sample
        queue2.put([dataclasses.replace(next(queue2.store.samples()), sample_id=turns["alice"][0])])


def test_a_restarted_proxy_recovers_no_forgotten_turn(run, tiny_policy, tmp_path):
    src, queue, keys_file, turns = run
    src.stop()
    queue.store.close()
    forget(tmp_path, "bob")
    src2, _ = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=4, keys_file=str(keys_file))
    try:
        recovered = src2.server.app.state.claw["recovered"]
        assert recovered["turns"] == 4  # alice's four turns (two sessions, two turns each); none of bob's
        assert all(s.startswith("alice") for s in src2.proxy.sessions.live)
    finally:
        src2.stop()
