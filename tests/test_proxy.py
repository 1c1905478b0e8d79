"""The proxy against the official `openai` client, on a real server on 127.0.0.1 (tiny model, rule judge)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import openai
import pytest
from omegaconf import OmegaConf

from claw.judge.build import build_judges
from claw.judge.teacher import build_teacher
from claw.logprobs import token_logprobs
from claw.proxy.source import ProxySource
from claw.rollout.queue import RolloutQueue

JUDGE = OmegaConf.create({"kind": "rule", "m": 1, "timeout_s": 5.0, "max_concurrency": 8, "min_hint_chars": 10, "prm_prompt": "prm.yaml", "hint_prompt": "hint.yaml"})


def make_proxy(policy, run_dir, mode="combine", **kwargs):
    from claw.engine.hf import HFEngine

    engine = HFEngine(policy, seed=0)
    teacher = build_teacher("frozen", policy, engine, "{content}\n\n[hint] {hint}") if mode != "rl" else None
    src = ProxySource(engine, policy.tokenizer, run_dir, mode=mode, judges=build_judges(JUDGE), teacher=teacher, port=0, fsync=False, **kwargs)
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
    r = client.chat.completions.create(model="claw-policy", messages=[{"role": "user", "content": "What is 2 + 3?"}], max_tokens=8, temperature=0.7)
    assert r.choices[0].message.role == "assistant"
    assert r.usage.completion_tokens >= 1 and r.choices[0].finish_reason in ("stop", "length")
    turn_id = r.model_extra["claw"]["turn_id"]
    turn = next(t for t in records(src, "turn") if t["turn_id"] == turn_id)
    # exact provenance: the prompt ids are the rendered conversation, the response ids what the engine sampled
    assert turn["prompt_ids"] == src.proxy.renderer.render([{"role": "user", "content": "What is 2 + 3?"}])
    assert len(turn["response_ids"]) == len(turn["logprobs"]) == r.usage.completion_tokens
    assert turn["temperature"] == 0.7 and turn["policy_version"] == 0


def test_streaming_matches_and_reports_usage(served):
    _, _, client = served
    stream = client.chat.completions.create(
        model="claw-policy", messages=[{"role": "user", "content": "Count to five."}], max_tokens=10, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = [c.usage for c in chunks if c.usage]
    assert finish and usage and usage[0].completion_tokens >= 1
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 2  # several content chunks: tokens arrive as sampled
    assert isinstance(text, str)
