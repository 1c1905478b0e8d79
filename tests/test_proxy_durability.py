"""The turn log's durability without fsync on the event loop (group commit): a reply leaves only once its
turn is on disk, while the fsync runs in a writer thread and other streams go on being served and recorded
behind it. Real server on 127.0.0.1, the `openai` client, the hf engine on the tiny model, fsync on."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai

from claw.engine.hf import HFEngine
from claw.judge.build import build_judges
from claw.rollout.queue import RolloutQueue
from claw.sources.proxy.source import ProxySource
from tests.test_proxy import JUDGE, wait_for


def test_replies_wait_for_their_fsync_which_runs_off_the_event_loop_in_groups(tiny_policy, tmp_path, monkeypatch):
    real_fsync = os.fsync
    entered, release = threading.Event(), threading.Event()
    synced: list[tuple[int, str]] = []  # (bytes of proxy.jsonl on disk after an fsync, the thread that ran it)

    def gated_fsync(fd):  # a slow disk, for proxy.jsonl only: each fsync waits for the test to release it
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("proxy.jsonl"):
            return real_fsync(fd)
        size = os.fstat(fd).st_size
        entered.set()
        release.wait(60)
        real_fsync(fd)
        synced.append((size, threading.current_thread().name))

    monkeypatch.setattr(os, "fsync", gated_fsync)
    src = ProxySource(HFEngine(tiny_policy, seed=0), tiny_policy.tokenizer, tmp_path, mode="rl",
                      judges=build_judges(JUDGE), port=0, fsync=True, default_max_tokens=4)  # fmt: skip
    src.start(RolloutQueue(tmp_path / "samples.jsonl", fsync=False))
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    log_path = tmp_path / "proxy.jsonl"

    def ask(i: int):
        """Chat (streamed for odd i); returns (turn_id, bytes of proxy.jsonl known on disk when the reply ended)."""
        kw = dict(
            model="m",
            messages=[{"role": "user", "content": f"Hello {i}"}],
            max_tokens=4,
            extra_headers={"X-Session-Id": f"d{i}"},
        )
        if i % 2:
            chunks = list(client.chat.completions.create(**kw, stream=True))
            assert chunks[-1].choices[0].finish_reason
            on_disk = max((s for s, _ in synced), default=0)
            turn_id = next(
                r["turn_id"] for r in src.proxy.log.read() if r.get("kind") == "turn" and r["session_id"] == f"d{i}"
            )
        else:
            r = client.chat.completions.create(**kw)
            on_disk = max((s for s, _ in synced), default=0)
            turn_id = r.model_extra["claw"]["turn_id"]
        return turn_id, on_disk

    def turns() -> list[str]:
        return [r["session_id"] for r in src.proxy.log.read() if r.get("kind") == "turn"]

    try:
        with ThreadPoolExecutor(6) as pool:
            first = pool.submit(ask, 0)
            assert entered.wait(60), "the first turn was never fsynced"
            # its fsync hangs: the reply waits for it, and the event loop does not
            assert not first.done()
            assert httpx.get(src.url.removesuffix("/v1") + "/healthz", timeout=10).status_code == 200
            others = [pool.submit(ask, i) for i in range(1, 6)]
            assert wait_for(lambda: len(turns()) == 6, 60), f"streams were serialised behind the fsync: {turns()}"
            early = [f.result() for f in [first, *others] if f.done()]  # (raises what a finished one raised)
            assert not early, f"replied before their turn was on disk: {early}"  # recorded, not on disk: no reply yet
            release.set()
            replies = [first.result(60)] + [f.result(60) for f in others]
        ends = {}
        offset = 0
        for line in log_path.read_bytes().splitlines(keepends=True):
            offset += len(line)
            if b'"kind":"turn"' in line:
                ends[line.split(b'"turn_id":"')[1].split(b'"')[0].decode()] = offset
        for turn_id, on_disk in replies:  # when its client had the reply, its turn's line was fsynced
            assert ends[turn_id] <= on_disk, (turn_id, ends[turn_id], on_disk)
        assert all(name.startswith("claw-fsync") for _, name in synced), synced  # never on the server's loop thread
        assert len(synced) < 6, f"{len(synced)} fsyncs for 6 turns finishing together: no group commit"
    finally:
        release.set()
        src.stop()
