"""The proxy against the official `openai` client, on a real server on 127.0.0.1 (tiny model, rule judge)."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest
from omegaconf import OmegaConf

from claw.judge.build import build_judges
from claw.judge.teacher import build_teacher
from claw.logprobs import token_logprobs
from claw.rollout.queue import RolloutQueue
from claw.sources.proxy.source import ProxySource

JUDGE = OmegaConf.create(
    {
        "kind": "rule",
        "m": 1,
        "timeout_s": 5.0,
        "max_concurrency": 8,
        "min_hint_chars": 10,
        "prm_prompt": "prm.yaml",
        "hint_prompt": "hint.yaml",
    }
)


def make_proxy(policy, run_dir, mode="combine", engine=None, contrast=None, **kwargs):
    from claw.engine.hf import HFEngine

    engine = engine or HFEngine(policy, seed=0)
    teacher = (
        build_teacher("frozen", policy, engine, "{content}\n\n[hint] {hint}", contrast=contrast)
        if mode != "rl"
        else None
    )
    src = ProxySource(
        engine,
        policy.tokenizer,
        run_dir,
        mode=mode,
        judges=build_judges(JUDGE),
        teacher=teacher,
        port=0,
        fsync=False,
        **kwargs,
    )
    queue = RolloutQueue(run_dir / "samples.jsonl", max_size=1024, fsync=False)
    src.start(queue)
    return src, queue


@pytest.fixture(scope="module")
def served(tiny_policy, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("proxy")
    src, queue = make_proxy(tiny_policy, run_dir, default_max_tokens=12, idle_timeout_s=600)
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
    yield src, queue, client
    src.stop()


def wait_for(pred, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def records(src, kind):
    return [r for r in src.proxy.log.read() if r.get("kind") == kind]


def test_chat_nonstreaming_records_exact_turn(served):
    src, _, client = served
    r = client.chat.completions.create(
        model="claw-policy", messages=[{"role": "user", "content": "What is 2 + 3?"}], max_tokens=8, temperature=0.7
    )
    assert r.choices[0].message.role == "assistant"
    assert r.usage.completion_tokens >= 1 and r.choices[0].finish_reason in ("stop", "length")
    turn_id = r.model_extra["claw"]["turn_id"]
    turn = next(t for t in records(src, "turn") if t["turn_id"] == turn_id)
    # exact provenance: the prompt ids are the rendered conversation, the response ids what the engine sampled
    assert turn["prompt_ids"] == src.proxy.renderer.render([{"role": "user", "content": "What is 2 + 3?"}])
    assert len(turn["response_ids"]) == len(turn["rollout_logprobs"]) == r.usage.completion_tokens
    assert turn["temperature"] == 0.7 and turn["policy_version"] == 0


def test_streaming_matches_and_reports_usage(served):
    src, _, client = served
    stream = client.chat.completions.create(
        model="claw-policy",
        messages=[{"role": "user", "content": "Count to five."}],
        max_tokens=10,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = [c.usage for c in chunks if c.usage]
    assert finish and usage and usage[0].completion_tokens >= 1
    turn = records(src, "turn")[-1]
    assert turn["response"]["content"] == text  # the streamed text is exactly the recorded turn's reply
    assert len(turn["response_ids"]) == usage[0].completion_tokens


class SlowEngine:
    """The real hf engine, sampling as usual, with a pause after each token (so arrival times can be told apart)."""

    def __init__(self, engine, pause_s):
        self.engine, self.pause_s = engine, pause_s

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, prompts, sampling, on_token=None):
        def slow(row, token, logprob):
            time.sleep(self.pause_s)
            return on_token(row, token, logprob) if on_token is not None else False

        return self.engine.generate(prompts, sampling, on_token=slow)


def test_streamed_tokens_arrive_while_they_are_sampled(tiny_policy, tmp_path):
    from claw.engine.hf import HFEngine

    src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", engine=SlowEngine(HFEngine(tiny_policy, seed=0), 0.1))
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        t0 = time.perf_counter()
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Tell a story."}], max_tokens=8, stream=True
        )
        arrivals, text = [], ""
        for c in stream:
            if c.choices and c.choices[0].delta.content:
                arrivals.append(time.perf_counter() - t0)
                text += c.choices[0].delta.content
        turn = records(src, "turn")[-1]
        assert turn["response"]["content"] == text
        n = len(turn["response_ids"])
        assert len(arrivals) >= 2, arrivals
        # 0.1 s per sampled token: the first text arrives long before the last token is sampled, not all at the end
        assert arrivals[0] < arrivals[-1] - 0.25 and arrivals[0] < 0.1 * n - 0.2, (arrivals, n)
    finally:
        src.stop()


def test_multiturn_session_produces_samples_with_exact_ids_and_logprobs(served, tiny_policy):
    src, queue, client = served
    sid = "multi-1"
    msgs = [{"role": "user", "content": "Say hello."}]
    r1 = client.chat.completions.create(
        model="m", messages=msgs, max_tokens=6, temperature=0.8, extra_headers={"X-Session-Id": sid}
    )
    msgs += [
        {"role": "assistant", "content": r1.choices[0].message.content},
        {"role": "user", "content": "No, that's wrong, answer in one word instead."},
    ]
    r2 = client.chat.completions.create(
        model="m", messages=msgs, max_tokens=6, temperature=0.8, extra_headers={"X-Session-Id": sid}
    )
    t1 = r1.model_extra["claw"]["turn_id"]
    assert r2.model_extra["claw"]["session_id"] == sid
    assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()))
    sample = next(s for s in queue.store.samples() if s.sample_id == t1)
    turn = next(t for t in records(src, "turn") if t["turn_id"] == t1)
    assert sample.prompt_ids == turn["prompt_ids"] and sample.response_ids == turn["response_ids"]
    assert sample.reward == -1.0  # the rule judge read the correction
    assert sample.teacher_logprobs is not None and len(sample.teacher_logprobs) == len(sample.response_ids)
    assert sample.info["hint"] and "one word" in sample.info["hint"]
    # the stored behaviour log-probs are the trainer's log-probs of the same ids at the same temperature
    import torch

    ids = torch.tensor([sample.prompt_ids + sample.response_ids])
    with torch.no_grad():
        logits = tiny_policy.model(ids).logits[:, len(sample.prompt_ids) - 1 : -1]
    recomputed = token_logprobs(logits, torch.tensor([sample.response_ids]), sample.temperature)[0]
    assert torch.allclose(recomputed, torch.tensor(sample.rollout_logprobs), atol=1e-4)


def test_a_guided_teacher_scores_the_proxy_turn_after_its_three_contexts(tiny_policy, tmp_path):
    # mode.hint_contrast through the proxy: the sample's teacher log-probs are the hf engine's guided score of the
    # response after the turn's messages as served, with the hint, and with the contrast, rendered as the proxy does.
    from claw.engine.hf import HFEngine
    from claw.judge.hint import append_hint
    from claw.sources.proxy.render import ChatRenderer

    src, queue = make_proxy(tiny_policy, tmp_path, contrast="Please try again.", default_max_tokens=6)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)
        msgs = [{"role": "user", "content": "Say hello."}]
        r1 = client.chat.completions.create(
            model="m", messages=msgs, temperature=0.8, extra_headers={"X-Session-Id": "guided"}
        )
        client.chat.completions.create(
            model="m",
            messages=msgs
            + [
                {"role": "assistant", "content": r1.choices[0].message.content},
                {"role": "user", "content": "No, that's wrong, answer in one word instead."},
            ],
            temperature=0.8,
            extra_headers={"X-Session-Id": "guided"},
        )
        t1 = r1.model_extra["claw"]["turn_id"]
        assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()))
        sample = next(s for s in queue.store.samples() if s.sample_id == t1)
        render = ChatRenderer(tiny_policy.tokenizer).render
        fmt = "{content}\n\n[hint] {hint}"
        contexts = [msgs, append_hint(msgs, sample.info["hint"], fmt), append_hint(msgs, "Please try again.", fmt)]
        assert render(contexts[0]) == sample.prompt_ids
        expected = HFEngine(tiny_policy).score_guided(
            [[render(c)] for c in contexts], (1.0, 1.0, -1.0), [sample.response_ids], sample.temperature
        )[0][0]
        assert sample.teacher_logprobs == pytest.approx(expected, abs=1e-5)
    finally:
        src.stop()


def test_headerless_client_continues_its_session_by_history(served):
    src, queue, client = served
    msgs = [{"role": "user", "content": "Name a colour."}]
    r1 = client.chat.completions.create(model="m", messages=msgs, max_tokens=5)
    sid = r1.model_extra["claw"]["session_id"]
    msgs += [
        {"role": "assistant", "content": r1.choices[0].message.content},
        {"role": "user", "content": "Thanks, perfect!"},
    ]
    r2 = client.chat.completions.create(model="m", messages=msgs, max_tokens=5)
    assert r2.model_extra["claw"]["session_id"] == sid
    t1 = r1.model_extra["claw"]["turn_id"]
    assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()))
    assert next(s for s in queue.store.samples() if s.sample_id == t1).reward == 1.0
    # an unrelated conversation opens another session
    r3 = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Name a colour."}], max_tokens=5
    )
    assert r3.model_extra["claw"]["session_id"] != sid


def test_side_turns_produce_no_samples_and_do_not_consume_the_pending_turn(served):
    src, queue, client = served
    sid = "side-1"
    h = {"X-Session-Id": sid}
    r1 = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Plan my day."}], max_tokens=5, extra_headers=h
    )
    before = len(list(queue.store.samples()))
    side = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "heartbeat"}],
        max_tokens=3,
        extra_headers={**h, "X-Turn-Type": "side"},
    )
    assert side.model_extra["claw"]["turn_id"] is None and side.model_extra["claw"]["turn_type"] == "side"
    time.sleep(0.3)
    assert len(list(queue.store.samples())) == before
    assert [t.turn_id for t in src.proxy.sessions.live[sid].open_turns()] == [r1.model_extra["claw"]["turn_id"]]
    assert any(r["session_id"] == sid for r in records(src, "side"))


def test_turns_that_declare_one_group_share_their_samples_group(served):
    """X-Group-Id: two sessions' answers to one prompt form one GRPO group; a turn without it is a group of one."""
    src, queue, client = served
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    ids = {}
    for sid, group in (("grp-a", "task-7"), ("grp-b", "task-7"), ("grp-c", None)):
        h = {"X-Session-Id": sid, **({"X-Group-Id": group} if group else {})}
        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "What is 6 x 7?"}], max_tokens=4, extra_headers=h
        )
        ids[sid] = r.model_extra["claw"]["turn_id"]
        http.post(f"/v1/sessions/{sid}/end", json={"messages": [{"role": "user", "content": "Thanks, perfect!"}]})
    assert wait_for(lambda: set(ids.values()) <= {s.sample_id for s in queue.store.samples()})
    group = {s.sample_id: s.group_id for s in queue.store.samples()}
    assert group[ids["grp-a"]] == group[ids["grp-b"]] == "task-7"
    assert group[ids["grp-c"]] == ids["grp-c"]
    assert [t["group_id"] for t in records(src, "turn") if t["turn_id"] == ids["grp-a"]] == ["task-7"]


def test_session_end_flushes_last_turn_and_counts_drops(served):
    src, queue, client = served
    h = {"X-Session-Id": "end-1"}
    r1 = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Write a haiku."}], max_tokens=5, extra_headers=h
    )
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    resp = http.post("/v1/sessions/end-1/end", json={"messages": [{"role": "user", "content": "Great, thank you!"}]})
    assert resp.status_code == 200 and "end-1" not in src.proxy.sessions.live
    t1 = r1.model_extra["claw"]["turn_id"]
    assert wait_for(lambda: any(s.sample_id == t1 and s.reward == 1.0 for s in queue.store.samples()))
    # ended with no end signal: dropped with a counted, recorded reason
    client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Bye"}],
        max_tokens=3,
        extra_headers={"X-Session-Id": "end-2", "X-Session-Done": "true"},
    )
    assert "end-2" not in src.proxy.sessions.live
    assert src.proxy.counts["verdict_session_ended_without_reply"] >= 1
    assert http.post("/v1/sessions/nope/end").status_code == 404


def test_explicit_feedback_feeds_the_sample_path(served):
    src, queue, client = served
    r = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Suggest a title."}],
        max_tokens=5,
        extra_headers={"X-Session-Id": "fb-1"},
    )
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    resp = http.post(
        "/v1/feedback", json={"session_id": "fb-1", "reward": 1, "correction": "Make it shorter, at most three words."}
    )
    assert resp.status_code == 200, resp.text
    tid = r.model_extra["claw"]["turn_id"]
    assert wait_for(lambda: any(s.sample_id == tid for s in queue.store.samples()))
    s = next(s for s in queue.store.samples() if s.sample_id == tid)
    assert s.reward == 1.0 and s.teacher_logprobs is not None  # explicit rating wins; the correction is the hint
    assert (
        http.post("/v1/feedback", json={"session_id": "fb-1", "reward": -1}).status_code == 409
    )  # already trained on
    assert http.post("/v1/feedback", json={"session_id": "fb-1", "reward": 3}).status_code == 400
    assert http.post("/v1/feedback", json={"session_id": "nobody", "reward": 1}).status_code == 404


def test_bad_inputs_get_clear_4xx_and_the_server_keeps_serving(served):
    src, _, client = served
    http = httpx.Client(base_url=src.url.removesuffix("/v1"))
    url = "/v1/chat/completions"
    cases = [
        (http.post(url, content=b"{not json", headers={"content-type": "application/json"}), 400, "invalid_json"),
        (http.post(url, json={"messages": "hi"}), 400, "invalid_type"),
        (http.post(url, json={"messages": []}), 400, "invalid_value"),
        (http.post(url, json={"messages": [{"role": "wizard", "content": "hi"}]}), 400, "invalid_value"),
        (http.post(url, json={"messages": [{"role": "user", "content": 5}]}), 400, "invalid_type"),
        (
            http.post(url, json={"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}),
            400,
            "invalid_type",
        ),
        (http.post(url, json={"messages": [{"role": "user", "content": "hi"}], "n": 2}), 400, "invalid_value"),
        (
            http.post(url, json={"messages": [{"role": "user", "content": "hi"}], "top_p": 0.5}),
            400,
            "unsupported_value",
        ),
        (
            http.post(url, content=b"x" * (5 << 20), headers={"content-type": "application/json"}),
            413,
            "body_too_large",
        ),
        (
            http.post(url, json={"messages": [{"role": "user", "content": "hi"}]}, headers={"X-Turn-Type": "weird"}),
            400,
            "invalid_value",
        ),
        (
            http.post(url, json={"messages": [{"role": "user", "content": "hi"}]}, headers={"X-Group-Id": "g" * 201}),
            400,
            "invalid_value",
        ),
        (http.get("/v1/nothing-here"), 404, "not_found"),
    ]
    for resp, status, code in cases:
        assert resp.status_code == status, resp.text
        err = resp.json()["error"]
        assert err["code"] == code and err["message"], err
    with pytest.raises(openai.BadRequestError, match="role"):
        client.chat.completions.create(model="m", messages=[{"role": "wizard", "content": "hi"}])
    assert client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "still there?"}], max_tokens=3
    ).choices
    assert http.get("/healthz").json()["status"] == "ok"
    assert "proxy_turns_main" in http.get("/metrics").text
    assert client.models.list().data[0].id == "claw-policy"


def test_stop_strings_end_the_generation_at_the_stop(served):
    src, _, client = served
    r = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Spell the alphabet."}], max_tokens=12, temperature=0
    )
    text = r.choices[0].message.content
    if len(text) < 3:
        pytest.skip("the random tiny model answered too briefly to pick a stop string")
    stop = text[1:3]  # greedy decoding repeats itself: the same request with a stop string must end there
    r2 = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Spell the alphabet."}],
        max_tokens=12,
        temperature=0,
        stop=[stop],
    )
    assert stop not in r2.choices[0].message.content
    turn = next(t for t in records(src, "turn") if t["turn_id"] == r2.model_extra["claw"]["turn_id"])
    assert stop in src.proxy.tokenizer.decode(turn["response_ids"]) and r2.choices[0].finish_reason == "stop"


def test_greedy_turns_are_served_but_not_trained(served):
    src, queue, client = served
    h = {"X-Session-Id": "greedy-1"}
    r1 = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, temperature=0, extra_headers=h
    )
    msgs = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": r1.choices[0].message.content},
        {"role": "user", "content": "Thanks!"},
    ]
    client.chat.completions.create(model="m", messages=msgs, max_tokens=4, extra_headers=h)
    tid = r1.model_extra["claw"]["turn_id"]
    assert wait_for(lambda: any(r["turn_id"] == tid for r in records(src, "verdict")))
    assert next(r for r in records(src, "verdict") if r["turn_id"] == tid)["reason"] == "greedy_not_trained"
    assert not any(s.sample_id == tid for s in queue.store.samples())


class ScriptedEngine:
    """The real hf engine, made to answer with fixed texts (isolates the tool path from a random model's
    output): the sampled ids are the text's tokens and their log-probs the engine's own, scored at the
    request's temperature."""

    def __init__(self, engine, texts):
        self.engine, self.texts, self.calls = engine, list(texts), 0

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def generate(self, prompts, sampling, on_token=None):
        from claw.engine.base import Generation, per_row

        out = []
        for row, (prompt, sp) in enumerate(zip(prompts, per_row(sampling, len(prompts)))):
            text = self.texts[min(self.calls, len(self.texts) - 1)]
            self.calls += 1
            ids = self.engine.tokenizer(text, add_special_tokens=False)["input_ids"] + [
                self.engine.tokenizer.eos_token_id
            ]
            lps = self.engine.score([prompt], [ids], sp.temperature or 1.0)[0]
            for t, lp in zip(ids, lps):
                if on_token is not None:
                    on_token(row, t, lp)
            out.append(Generation(ids, lps, True, self.engine.version))
        return out


READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def test_tool_calls_round_trip_and_the_tool_result_is_judged(tiny_policy, tmp_path):
    from claw.engine.hf import HFEngine

    call = '<tool_call>\n{"name": "read_file", "arguments": {"path": "homework.txt"}}\n</tool_call>'
    scripted = ScriptedEngine(HFEngine(tiny_policy), [call, "The answer is 12.", call, "done"])
    src, queue = make_proxy(tiny_policy, tmp_path, mode="combine", engine=scripted)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0)
        msgs = [{"role": "user", "content": "My homework is in homework.txt. Solve it."}]
        r = client.chat.completions.create(
            model="m", messages=msgs, tools=[READ_FILE], temperature=0.7, extra_headers={"X-Session-Id": "tool-1"}
        )
        m = r.choices[0].message
        assert r.choices[0].finish_reason == "tool_calls" and m.content is None
        assert m.tool_calls[0].function.name == "read_file" and json.loads(m.tool_calls[0].function.arguments) == {
            "path": "homework.txt"
        }
        turn = next(t for t in records(src, "turn") if t["turn_id"] == r.model_extra["claw"]["turn_id"])
        prompt_text = tiny_policy.tokenizer.decode(turn["prompt_ids"])
        assert "<tools>" in prompt_text and "read_file" in prompt_text  # the fallback template rendered the tools
        # the client runs the tool; its result is the next state (content null on the assistant message is fine)
        msgs += [
            m.model_dump(exclude_none=True) | {"content": None},
            {"role": "tool", "tool_call_id": m.tool_calls[0].id, "content": "Tom has 3 bags of 4 apples."},
        ]
        r2 = client.chat.completions.create(
            model="m", messages=msgs, tools=[READ_FILE], temperature=0.7, extra_headers={"X-Session-Id": "tool-1"}
        )
        assert r2.choices[0].message.content == "The answer is 12."
        t1 = r.model_extra["claw"]["turn_id"]
        assert wait_for(lambda: any(s.sample_id == t1 for s in queue.store.samples()))
        assert next(s for s in queue.store.samples() if s.sample_id == t1).reward == 1.0  # the tool succeeded
        prompt2 = tiny_policy.tokenizer.decode(
            next(t for t in records(src, "turn") if t["turn_id"] == r2.model_extra["claw"]["turn_id"])["prompt_ids"]
        )
        assert "<tool_response>" in prompt2 and '"name": "read_file"' in prompt2
        # a failing tool: −1 and the error becomes the hint; streaming returns the call as a tool_calls delta
        stream = client.chat.completions.create(
            model="m",
            messages=msgs[:1],
            tools=[READ_FILE],
            temperature=0.7,
            stream=True,
            extra_headers={"X-Session-Id": "tool-2"},
        )
        chunks = list(stream)
        calls = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        assert calls and calls[0][0].function.name == "read_file"
        assert not "".join(
            c.choices[0].delta.content or "" for c in chunks if c.choices
        ).strip()  # no markup leaked as text
        t3 = next(t["turn_id"] for t in records(src, "turn") if t["session_id"] == "tool-2")
        call = calls[0][0]  # the history must hold the reply it answers (claw/sources/proxy/continuation.py)
        err = [{"role": "assistant", "content": None,
                "tool_calls": [{"id": call.id, "type": "function",
                                "function": {"name": "read_file", "arguments": call.function.arguments}}]},
               {"role": "tool", "tool_call_id": call.id, "content": "FileNotFoundError: homework.txt"}]  # fmt: skip
        client.chat.completions.create(
            model="m",
            messages=msgs[:1] + err,
            tools=[READ_FILE],
            temperature=0.7,
            max_tokens=4,
            extra_headers={"X-Session-Id": "tool-2"},
        )
        assert wait_for(lambda: any(s.sample_id == t3 for s in queue.store.samples()))
        s3 = next(s for s in queue.store.samples() if s.sample_id == t3)
        assert s3.reward == -1.0 and "FileNotFoundError" in s3.info["hint"]
    finally:
        src.stop()


def test_idle_sessions_time_out_and_are_freed(tiny_policy, tmp_path):
    src, queue = make_proxy(tiny_policy, tmp_path, idle_timeout_s=0.6, default_max_tokens=4)
    try:
        client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0)
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], extra_headers={"X-Session-Id": "idle-1"}
        )
        assert "idle-1" in src.proxy.sessions.live
        assert wait_for(lambda: "idle-1" not in src.proxy.sessions.live, timeout=10)
        assert src.proxy.counts["sessions_ended_idle_timeout"] == 1
        assert any(r["kind"] == "end" and r["reason"] == "idle_timeout" for r in src.proxy.log.read())
    finally:
        src.stop()


def test_32_concurrent_sessions_are_batched_and_no_turn_is_lost(served):
    import asyncio

    src, queue, _ = served
    client = openai.AsyncOpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=120)
    before_peak = src.batcher.peak_in_flight

    async def session(i):
        msgs = [{"role": "user", "content": f"Session {i}: hello"}]
        ids = []
        for k in range(2):
            r = await client.chat.completions.create(
                model="m", messages=msgs, max_tokens=8, temperature=0.8, extra_headers={"X-Session-Id": f"conc-{i}"}
            )
            ids.append(r.model_extra["claw"]["turn_id"])
            msgs += [
                {"role": "assistant", "content": r.choices[0].message.content},
                {"role": "user", "content": "Thanks!" if k else "No, shorter please."},
            ]
        return ids

    async def main():
        return await asyncio.gather(*(session(i) for i in range(32)))

    received = [t for ids in asyncio.run(main()) for t in ids]
    stored = {t["turn_id"] for t in records(src, "turn")}
    assert len(received) == 64 and set(received) <= stored
    stats = src.batcher.stats()
    assert stats["batch_size_max"] > 1 and max(stats["in_flight_peak"], before_peak) >= 16, stats
    # every first turn got its next state and became a sample
    firsts = {ids for ids in received[::2]}
    assert wait_for(lambda: firsts <= {s.sample_id for s in queue.store.samples()}, timeout=60)


def test_api_key_required_off_loopback_and_checked_everywhere_but_health(tiny_policy, tmp_path):
    from claw.sources.proxy.server import ProxyServer

    with pytest.raises(ValueError, match="api_key"):
        ProxyServer(None, host="0.0.0.0", port=0)
    src, _ = make_proxy(tiny_policy, tmp_path, api_key="s3cret", default_max_tokens=3)
    try:
        http = httpx.Client(base_url=src.url.removesuffix("/v1"))
        assert http.get("/healthz").status_code == 200
        for path in ("/v1/models", "/metrics"):
            assert http.get(path).status_code == 401
            assert http.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=src.url, api_key="wrong", max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        ok = openai.OpenAI(base_url=src.url, api_key="s3cret", max_retries=0)
        assert ok.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}]).choices
    finally:
        src.stop()


def test_logprobs_and_max_completion_tokens(served):
    src, _, client = served
    r = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Go on."}],
        max_completion_tokens=5,
        temperature=0.7,
        logprobs=True,
    )
    assert r.usage.completion_tokens <= 5
    turn = next(t for t in records(src, "turn") if t["turn_id"] == r.model_extra["claw"]["turn_id"])
    assert [c.logprob for c in r.choices[0].logprobs.content] == pytest.approx(
        turn["rollout_logprobs"]
    )  # the sampled tokens' own log-probs
