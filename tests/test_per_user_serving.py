"""vLLM serves each request with its user's adapter (enable_lora, a `LoRARequest` per row): checked against peft's
own model with that adapter, greedy token for token, in mixed batches, past the number resident, across a promotion;
and train.py with personalize=per_user end to end, through the proxy, then resumed."""

import copy
import json

import pytest
import torch

from claw.engine.base import BASE, SamplingParams, ServesAdapters
from claw.users.adapters import PLACEHOLDER, AdapterBank, adapter_name
from tests.conftest import make_cfg
from tests.test_engine_vllm import VLLM_TINY
from tests.test_engine_vllm import pytestmark as needs_vllm

pytestmark = needs_vllm

USERS = ("alice", "bob", "carol")


@pytest.fixture(scope="module")
def policy():
    from claw.models import load_tiny

    return load_tiny(num_heads=2, num_kv_heads=1)


@pytest.fixture(scope="module")
def bank(policy, tmp_path_factory):
    """Three users' adapters, each with a random B (so each visibly moves the base), promoted to version 1."""
    bank = AdapterBank(copy.deepcopy(policy.model), tmp_path_factory.mktemp("run"), seed=0)
    for k, user in enumerate(USERS):
        bank.activate(user)
        with torch.no_grad(), torch.random.fork_rng():
            torch.manual_seed(k)
            for p in bank.parameters(user):
                if "lora_B" in next(n for n, q in bank.model.named_parameters() if q is p):
                    p.normal_(0, 0.5)
        bank.promote(user)
    return bank


@pytest.fixture(scope="module", params=["vllm", "hf"])
def engine(policy, request):
    """Two users' adapters resident at most (and the base's): three users make one go out and come back."""
    if request.param == "vllm":
        from claw.engine.vllm import VLLMEngine

        e = VLLMEngine(policy, max_batch_size=16, max_model_len=256, adapters={"max_resident": 2, "rank": 8})
    else:
        from claw.engine.hf import HFEngine

        e = HFEngine(policy, max_batch_size=3, adapters={"max_resident": 2})  # batches of 3: groups split too
    yield e
    e.close()


def peft_gap(bank: AdapterBank, adapter: str, prompt: list[int], gen) -> float:
    """max |Δ| between the log-probs vLLM reported for its tokens and peft's, with `adapter` active, teacher-forced
    (greedy rows: under softmax(logits), as the engines report them)."""
    bank.model.set_adapter(adapter)
    with torch.no_grad():
        logits = bank.model.eval()(torch.tensor([prompt + gen.response_ids])).logits[0, len(prompt) - 1 : -1]
    mine = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(gen.response_ids).unsqueeze(-1)).squeeze(-1)
    return float((mine - torch.tensor(gen.logprobs)).abs().max())


def test_each_row_decodes_with_its_users_adapter(policy, bank, engine):
    assert isinstance(engine, ServesAdapters)
    engine.serve_adapter(BASE, 0, str(bank.base_path()))  # a zero adapter serves whoever has none
    for user, version, path in bank.served():
        engine.serve_adapter(user, version, str(path))
    tok = policy.tokenizer
    prompts = [tok.encode(f"question {i}: how many apples?") for i in range(8)]
    users = ["alice", "bob", "carol", "dave", "carol", "alice", "dave", "bob"]  # 3 adapters, 2 resident; dave: none
    rows = [SamplingParams(temperature=0.0, max_new_tokens=10, user=u) for u in users]
    gens = engine.generate(prompts, rows)
    for prompt, user, gen in zip(prompts, users, gens, strict=True):
        adapter = adapter_name(user) if user in USERS else PLACEHOLDER
        assert peft_gap(bank, adapter, prompt, gen) < 1e-3, user
        others = [adapter_name(u) for u in USERS if u != user] + ([PLACEHOLDER] if user in USERS else [])
        assert min(peft_gap(bank, a, prompt, gen) for a in others) > 1e-2, user  # no other adapter decoded it
        assert gen.policy_version == bank.version(user)  # dave: 0, the base


def test_a_promoted_version_serves_new_requests(policy, bank, engine):
    tok = policy.tokenizer
    prompt = tok.encode("question 9: how many pears?")
    row = SamplingParams(temperature=0.0, max_new_tokens=8, user="alice")
    before = engine.generate([prompt], row)[0]
    bank.activate("alice")
    with torch.no_grad():
        for p in bank.parameters("alice"):
            p.add_(0.3 * torch.randn_like(p))
    version, path = bank.promote("alice")
    engine.serve_adapter("alice", version, str(path))
    after = engine.generate([prompt], row)[0]
    assert after.policy_version == before.policy_version + 1 == version
    assert peft_gap(bank, adapter_name("alice"), prompt, after) < 1e-3


def test_train_py_per_user_through_the_proxy_then_resumed(tmp_path):
    from train import run

    overrides = [
        "source=simulated_user", "judge=rule", "mode=rl", "algo=reinforce", "model=tiny", *VLLM_TINY, "engine=vllm",
        "logger=none", "batch_size=4", "optim.micro_batch_size=4", "source.max_new_tokens=8", "source.eval_size=2",
        "fsync=false", "eval_every=0", "checkpoint_interval_s=0", "personalize=per_user",
        "source.persona=[student,teacher]", "source.sessions_per_round=8",
    ]  # fmt: skip
    assert run(make_cfg([*overrides, "steps=2"], tmp_path))["steps"] == 2
    first = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert run(make_cfg([*overrides, "steps=4", f"resume={tmp_path}"], tmp_path))["steps"] == 4
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert ledger[: len(first)] == first
    samples = {}
    for line in (tmp_path / "samples.jsonl").read_text().splitlines():
        s = json.loads(line)
        samples[s["sample_id"]] = s
    trained = [i for r in ledger for i in r["trained"]]
    assert len(trained) == len(set(trained))  # no turn trained twice, across the restart
    users = [{samples[i]["user"] for i in r["trained"]} for r in ledger if r["trained"]]
    assert all(len(u) == 1 for u in users)  # each batch is one person's
    assert {u for (u,) in users} == {"student", "teacher"}
    for user in ("student", "teacher"):  # every sample records the version of its user's adapter that decoded it
        versions = [samples[i]["policy_version"] for r in ledger for i in r["trained"] if samples[i]["user"] == user]
        assert versions == sorted(versions) and versions[0] == 0
        assert (tmp_path / "adapters" / adapter_name(user) / f"v{max(versions)}").is_dir() or max(versions) == 0
    eval_after = json.loads((tmp_path / "eval.json").read_text())["after"]
    assert set(eval_after["people"]) == {"student", "teacher"}
