"""A turn trains at most once, whatever arrives for it: concurrent feedback on a real proxy (tiny model, rule
judge, the official client for the turns, raw HTTP for the feedback), the queue and store refusing a second
sample with an id they hold, and feedback accepted after a no-signal verdict surviving a crash."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import openai
import pytest

from claw.rollout.queue import DuplicateSample, RolloutQueue
from claw.types import Sample
from tests.test_proxy import make_proxy, records, wait_for

NEUTRAL = "Unrelated: which day comes after Monday?"  # a new request: the rule judge reads no signal in it


def _sample(sid: str) -> Sample:
    return Sample(prompt_ids=[1, 2], response_ids=[3], rollout_logprobs=[-0.5], temperature=1.0, policy_version=0,
                  reward=1.0, sample_id=sid, group_id=sid)  # fmt: skip


def test_the_queue_and_the_store_refuse_a_sample_id_twice_across_restarts(tmp_path):
    queue = RolloutQueue(tmp_path / "samples.jsonl", fsync=False)
    assert queue.put([_sample("a")])
    with pytest.raises(DuplicateSample, match="'a'"):
        queue.put([_sample("a")])
    with pytest.raises(DuplicateSample, match="'b'"):
        queue.put([_sample("b"), _sample("b")])  # one id twice in a group
    assert len(queue) == 1 and [s.sample_id for s in queue.store.samples()] == ["a"]  # nothing half-stored
    queue.store.close()
    again = RolloutQueue(tmp_path / "samples.jsonl", fsync=False)  # a restarted run knows what it accepted
    with pytest.raises(DuplicateSample):
        again.put([_sample("a")])
    assert again.put([_sample("c")])
    assert again.store.sample_ids() == {"a", "c"}


def _no_signal_turns(src, client, sessions: list[str]) -> list[str]:
    """One judged turn per session whose outcome is `no_signal`: the user moved on to an unrelated request."""
    tids = []
    for sid in sessions:
        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Name a colour."}], max_tokens=4,
            extra_headers={"X-Session-Id": sid},
        )  # fmt: skip
        tid = r.model_extra["claw"]["turn_id"]
        history = [
            {"role": "user", "content": "Name a colour."},
            {"role": "assistant", "content": r.choices[0].message.content},
        ]
        client.chat.completions.create(
            model="m", messages=[*history, {"role": "user", "content": NEUTRAL}], max_tokens=2,
            extra_headers={"X-Session-Id": sid},
        )  # fmt: skip
        assert wait_for(lambda tid=tid: any(v["turn_id"] == tid for v in records(src, "verdict")))
        reasons = [v["reason"] for v in records(src, "verdict") if v["turn_id"] == tid]
        assert reasons == ["no_signal"], reasons
        tids.append(tid)
    return tids


async def _fire(base: str, bodies: list[dict]) -> list[int]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        responses = await asyncio.gather(*(http.post("/v1/feedback", json=b) for b in bodies))
    return [r.status_code for r in responses]


@pytest.mark.parametrize("n_turns", [1, 4])
def test_fifty_concurrent_feedbacks_give_each_turn_one_sample(tiny_policy, tmp_path, n_turns):
    src, queue = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=6)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        sessions = [f"many-{n_turns}-{i}" for i in range(n_turns)]
        tids = _no_signal_turns(src, client, sessions)
        bodies = [{"session_id": sessions[i % n_turns], "turn_id": tids[i % n_turns], "reward": 1} for i in range(50)]
        codes = asyncio.run(_fire(src.url.removesuffix("/v1"), bodies))
        assert set(codes) <= {200, 409}, codes
        assert codes.count(200) == n_turns  # the first feedback of each turn; every later one is told why not
        assert wait_for(lambda: sum(s.sample_id in tids for s in queue.store.samples()) == n_turns)
        asyncio.run(asyncio.sleep(0.5))  # anything still in flight would land now
        per_turn = Counter(s.sample_id for s in queue.store.samples() if s.sample_id in tids)
        assert per_turn == Counter({t: 1 for t in tids})
        assert src.proxy.counts["outcome_conflicts"] == 0
        for tid in tids:
            assert [v["reason"] for v in records(src, "verdict") if v["turn_id"] == tid] == ["no_signal", "queued"]
    finally:
        src.stop()


def test_a_correction_on_a_turn_with_a_next_state_is_what_is_judged(tiny_policy, tmp_path):
    src, queue = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=6)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        (tid,) = _no_signal_turns(src, client, ["corr-1"])
        http = httpx.Client(base_url=src.url.removesuffix("/v1"))
        body = {"session_id": "corr-1", "turn_id": tid, "correction": "That is wrong, name a colour like blue."}
        assert http.post("/v1/feedback", json=body).status_code == 200
        assert wait_for(lambda: any(s.sample_id == tid for s in queue.store.samples()))
        sample = next(s for s in queue.store.samples() if s.sample_id == tid)
        assert sample.reward is not None and sample.reward < 0  # the correction, not the earlier neutral reply
        assert sample.info["next_state"][-1]["content"] == body["correction"]
    finally:
        src.stop()


def test_feedback_accepted_after_no_signal_is_judged_after_a_crash(tiny_policy, tmp_path):
    src, queue = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=6)
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    (tid,) = _no_signal_turns(src, client, ["crash-1"])
    src.stop()
    queue.store.close()
    # What a kill -9 leaves when the feedback was on disk ("accepted") and its judgement had not finished: the
    # feedback record after the no_signal verdict, and no sample.
    from claw.rollout.store import JsonlLog

    log = JsonlLog(tmp_path / "proxy.jsonl", fsync=False)
    log.append({"kind": "feedback", "turn_id": tid, "reward": 1, "correction": None})
    log.close()
    src2, queue2 = make_proxy(tiny_policy, tmp_path, mode="rl", default_max_tokens=6)
    try:
        assert wait_for(lambda: any(s.sample_id == tid for s in queue2.store.samples()))
        assert next(s for s in queue2.store.samples() if s.sample_id == tid).reward == 1.0
        assert [v["reason"] for v in records(src2, "verdict") if v["turn_id"] == tid] == ["no_signal", "queued"]
    finally:
        src2.stop()
