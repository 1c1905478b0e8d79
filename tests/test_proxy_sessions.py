"""Which message is the consequence of which reply: retries, regenerations, branches, parallel requests and the
`user` field, over real HTTP with the official `openai` client (tiny model, rule judge). Every served main turn
ends in exactly one recorded outcome."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import openai
import pytest

from claw.sources.proxy.outcomes import OUTCOMES
from tests.conftest import ROOT
from tests.test_proxy import make_proxy, records, wait_for


@pytest.fixture(scope="module")
def served(tiny_policy, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("sessions")
    src, queue = make_proxy(tiny_policy, run_dir, mode="rl", default_max_tokens=6, idle_timeout_s=600)
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    yield src, queue, client
    src.stop()


def ask(client, messages, sid=None, **kw):
    headers = {"X-Session-Id": sid} if sid else {}
    r = client.chat.completions.create(model="m", messages=messages, temperature=0.8, extra_headers=headers, **kw)
    return r, r.model_extra["claw"]["turn_id"], {"role": "assistant", "content": r.choices[0].message.content}


def next_states(src, turn_id):
    return [r for r in records(src, "next_state") if r["turn_id"] == turn_id]


def outcome(src, turn_id):
    reasons = [r["reason"] for r in records(src, "verdict") if r["turn_id"] == turn_id]
    return reasons[-1] if reasons else None


def test_a_retried_request_is_not_the_previous_turns_next_state(served):
    src, queue, client = served
    question = [{"role": "user", "content": "Say hello."}]
    _, t1, _ = ask(client, question, sid="retry-1")
    _, t2, a2 = ask(client, question, sid="retry-1")  # the same history again: an SDK retry or a regenerate button
    assert not next_states(src, t1), "a retry was recorded as the first turn's consequence"
    assert outcome(src, t1) == "retried"
    _, t3, _ = ask(client, [*question, a2, {"role": "user", "content": "Thanks, perfect!"}], sid="retry-1")
    assert wait_for(lambda: any(s.sample_id == t2 for s in queue.store.samples()))
    assert next_states(src, t2)[0]["messages"] == [{"role": "user", "content": "Thanks, perfect!"}]
    assert not any(s.sample_id == t1 for s in queue.store.samples())
    # headerless: a regenerated later turn finds its session by history and is a retry too
    _, h1, b1 = ask(client, [{"role": "user", "content": "Pick a number."}])
    follow = [{"role": "user", "content": "Pick a number."}, b1, {"role": "user", "content": "Another one."}]
    r2, h2, _ = ask(client, follow)
    r3, h3, _ = ask(client, follow)
    assert r2.model_extra["claw"]["session_id"] == r3.model_extra["claw"]["session_id"]
    assert outcome(src, h2) == "retried" and not next_states(src, h2)
    assert len(next_states(src, h1)) == 1  # the first turn got exactly one next state, from the first of the two


def test_an_edited_message_supersedes_the_turn_it_replaces(served):
    src, _, client = served
    q = [{"role": "user", "content": "Name a fruit."}]
    _, t1, a1 = ask(client, q, sid="branch-1")
    _, t2, _ = ask(client, [*q, a1, {"role": "user", "content": "A red one."}], sid="branch-1")
    _, t3, _ = ask(client, [*q, a1, {"role": "user", "content": "A yellow one."}], sid="branch-1")  # the user edited
    assert [r["messages"] for r in next_states(src, t1)] == [[{"role": "user", "content": "A red one."}]]
    assert not next_states(src, t2) and outcome(src, t2) == "superseded"
    assert outcome(src, t3) is None  # still open: it waits for its own consequence


def test_the_user_field_names_a_person_not_a_conversation(served):
    src, queue, client = served
    r1, a, reply_a = ask(client, [{"role": "user", "content": "Chat A: plan a trip."}], user="alice")
    r2, b, _ = ask(client, [{"role": "user", "content": "Chat B: write a poem."}], user="alice")
    assert r1.model_extra["claw"]["session_id"] != r2.model_extra["claw"]["session_id"]
    assert not next_states(src, a), "alice's second chat was judged as the first chat's consequence"
    # her first chat continues by its history, within her own scope
    r3, _, _ = ask(
        client,
        [{"role": "user", "content": "Chat A: plan a trip."}, reply_a, {"role": "user", "content": "Thanks!"}],
        user="alice",
    )
    assert r3.model_extra["claw"]["session_id"] == r1.model_extra["claw"]["session_id"]
    assert wait_for(lambda: any(s.sample_id == a for s in queue.store.samples()))
    # the same history from someone else is someone else's conversation
    r4, _, _ = ask(
        client,
        [{"role": "user", "content": "Chat A: plan a trip."}, reply_a, {"role": "user", "content": "Thanks!"}],
        user="bob",
    )
    assert r4.model_extra["claw"]["session_id"] != r1.model_extra["claw"]["session_id"]


def test_parallel_requests_in_one_session_each_keep_their_turn(served):
    src, queue, _ = served
    aclient = openai.AsyncOpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    sid = "par-1"
    questions = [[{"role": "user", "content": f"Task {i}: list a tool."}] for i in range(3)]

    async def first():
        return await asyncio.gather(
            *(
                aclient.chat.completions.create(
                    model="m", messages=q, temperature=0.8, extra_headers={"X-Session-Id": sid}
                )
                for q in questions
            )
        )

    replies = asyncio.run(first())
    turns = [r.model_extra["claw"]["turn_id"] for r in replies]
    assert len(set(turns)) == 3
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    for i in (1, 0):  # answered out of order; the third is never answered
        reply = {"role": "assistant", "content": replies[i].choices[0].message.content}
        ask(client, [*questions[i], reply, {"role": "user", "content": "Thanks, perfect!"}], sid=sid)
    assert wait_for(lambda: {turns[0], turns[1]} <= {s.sample_id for s in queue.store.samples()})
    for i in (0, 1):
        assert next_states(src, turns[i])[0]["messages"] == [{"role": "user", "content": "Thanks, perfect!"}]
        assert next(s for s in queue.store.samples() if s.sample_id == turns[i]).reward == 1.0
    assert not next_states(src, turns[2])
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    assert http.post(f"/v1/sessions/{sid}/end").status_code == 200
    assert outcome(src, turns[2]) == "session_ended_without_reply"


def test_every_served_main_turn_has_exactly_one_outcome(served):
    """Runs after the others in this module: every main turn they served ends in one named outcome."""
    src, _, client = served
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    for sid in list(src.proxy.sessions.live):
        http.post(f"/v1/sessions/{sid}/end")
    assert wait_for(lambda: not src.proxy.turns.judging)
    served_turns = {r["turn_id"] for r in records(src, "turn")}
    counted = Counter(r["turn_id"] for r in records(src, "verdict"))
    assert served_turns and set(counted) == served_turns, served_turns - set(counted)
    assert all(n == 1 for n in counted.values()), {t: n for t, n in counted.items() if n > 1}
    assert {r["reason"] for r in records(src, "verdict")} <= set(OUTCOMES)
    metrics = http.get("/metrics").text
    for reason in ("retried", "superseded", "session_ended_without_reply", "queued"):
        assert f"proxy_verdict_{reason}_total " in metrics
    total = sum(float(line.split()[1]) for line in metrics.splitlines() if line.startswith("proxy_verdict_"))
    assert total == len(served_turns)


def test_the_readme_names_every_outcome():
    section = (ROOT / "README.md").read_text().split("## Connect your agent", 1)[1].split("\n## ", 1)[0]
    missing = [reason for reason in OUTCOMES if f"`{reason}`" not in section]
    assert not missing, missing


def test_a_turn_log_written_before_the_rename_still_loads() -> None:
    """`logprobs` was renamed `rollout_logprobs` (the Sample's name for it), `group_id` and `user` came later, and
    the proxy's `TurnRecord` became `claw.judge.turn.Turn`: old proxy.jsonl records still load."""
    from dataclasses import replace

    from claw.judge.turn import Turn

    old = {"kind": "turn", "turn_id": "t", "session_id": "s", "turn_index": 0, "messages": [], "tools": None,
           "prompt_ids": [1], "response_ids": [2], "logprobs": [-0.5], "temperature": 0.7, "policy_version": 0,
           "finished": True, "response": {"role": "assistant", "content": "x"}, "response_text": "x"}  # fmt: skip
    turn = Turn.from_json(old)
    assert turn.rollout_logprobs == [-0.5] and turn.group_id is None and turn.user is None
    served = replace(turn)
    turn.next_state, turn.feedback, turn.judged, turn.outcome = [{"role": "user", "content": "ok"}], {}, True, "queued"
    record = turn.to_json()
    assert record["rollout_logprobs"] == [-0.5] and "logprobs" not in record
    assert not {"next_state", "feedback", "judged", "outcome"} & set(record)  # each is a record of its own
    assert Turn.from_json(record) == served
