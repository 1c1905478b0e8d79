"""personalize=per_user: an adapter per user (claw/users/adapters.py), trained only on that user's batches, formed
fairly (RolloutQueue.take_fair), kept on disk past `max_resident`, and restored from a checkpoint."""

import copy
import json

import lightning as L
import pytest
import torch

from claw.config import ConfigError, validate
from claw.module import ClawModule
from claw.objective import Objective, ObjectiveConfig
from claw.rollout.queue import RolloutQueue
from claw.types import Sample, collate
from claw.users.adapters import PLACEHOLDER, AdapterBank, adapter_name
from tests.conftest import make_cfg


def sample(user: str, i: int, version: int = 0, reward: float = 1.0, tok=None) -> Sample:
    torch.manual_seed(i)
    prompt = list(range(5, 9)) if tok is None else tok.encode(f"question {i}")
    resp = torch.randint(5, 500, (4,)).tolist()
    return Sample(prompt, resp, [-2.0] * 4, temperature=0.8, policy_version=version, reward=reward,
                  sample_id=f"{user}-{i}", group_id=f"{user}-{i}", user=user)  # fmt: skip


# -- the fair schedule ------------------------------------------------------------------------------------------
def test_batches_are_one_users_and_users_take_turns(tmp_path):
    q = RolloutQueue(tmp_path / "samples.jsonl", max_size=100, fsync=False)
    for i in range(12):  # alice floods the queue before bob and carol say anything
        q.put([sample("alice", i)])
    q.put([sample("bob", 0)])
    q.put([sample("carol", 0)])
    q.put([sample("bob", 1)])
    served = []
    for _ in range(5):
        t = q.take_fair(4, lambda u: 0, timeout=0.1)
        assert {s.user for s in t.samples} == {t.user}
        served.append((t.user, len(t.samples)))
    # alice's backlog never holds the others up: each user gets a batch before alice gets a second
    assert served == [("alice", 4), ("bob", 2), ("carol", 1), ("alice", 4), ("alice", 4)]
    assert q.take_fair(4, lambda u: 0, timeout=0.05) is None


def test_the_cursor_is_the_first_position_not_taken(tmp_path):
    q = RolloutQueue(tmp_path / "samples.jsonl", max_size=100, fsync=False)
    for user, i in [("a", 0), ("b", 0), ("a", 1), ("b", 1)]:
        q.put([sample(user, i)])
    first = q.take_fair(8, lambda u: 0, timeout=0.1)  # a's two samples: positions 0 and 2
    assert [s.sample_id for s in first.samples] == ["a-0", "a-1"] and first.cursor_end == 1
    assert first.last_id == "a-0"  # the line before position 1
    second = q.take_fair(8, lambda u: 0, timeout=0.1)
    assert second.cursor_end == 4 and second.last_id == "b-1" and second.offset_end == q.store.size


def test_staleness_is_counted_against_the_users_own_adapter(tmp_path):
    q = RolloutQueue(tmp_path / "samples.jsonl", max_size=100, max_staleness=1, fsync=False)
    q.put([sample("a", 0, version=0)])
    q.put([sample("a", 1, version=3)])
    q.put([sample("b", 0, version=0)])
    t = q.take_fair(8, {"a": 3, "b": 0}.get, timeout=0.1)
    assert [s.sample_id for s in t.samples] == ["a-1"] and [s.sample_id for s in t.dropped] == ["a-0"]
    assert [s.sample_id for s in q.take_fair(8, {"a": 3, "b": 0}.get, timeout=0.1).samples] == ["b-0"]


def test_replay_skips_what_was_trained_past_the_cursor(tmp_path):
    q = RolloutQueue(tmp_path / "samples.jsonl", max_size=100, fsync=False)
    for user, i in [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2)]:
        q.put([sample(user, i)])
    t = q.take_fair(8, lambda u: 0, timeout=0.1)  # a-0, a-1, a-2 trained; b's still waiting
    assert t.cursor_end == 1
    q.close()
    again = RolloutQueue(tmp_path / "samples.jsonl", max_size=100, fsync=False)
    done = {s.sample_id for s in t.samples}
    assert again.replay(t.cursor_end, t.offset_end, t.last_id, done) == 2
    left = again.take_fair(8, lambda u: 0, timeout=0.1)
    assert [s.sample_id for s in left.samples] == ["b-0", "b-1"]  # each sample trains once, whatever the order
    assert again.take_fair(8, lambda u: 0, timeout=0.05) is None
    assert sum(again.groups_after.values()) == 4  # every group past the cursor is counted as produced


# -- the adapters ------------------------------------------------------------------------------------------------
@pytest.fixture
def base():
    from claw.models import load_tiny

    return load_tiny(num_heads=2, num_kv_heads=1)


def fit(module: ClawModule, batches) -> None:
    trainer = L.Trainer(accelerator="cpu", max_steps=-1, max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader(batches, batch_size=None, collate_fn=lambda b: b)
    )


def batch_of(user: str, tok, start: int = 0):
    """One GRPO group of four (rewards 0, 1, 0, 1: every advantage is non-zero)."""
    rows = [sample(user, start + i, reward=float(i % 2), tok=tok) for i in range(4)]
    for s in rows:
        s.group_id = f"{user}-g{start}"
    b = collate(rows, tok.pad_token_id)
    b.meta = {"user": user}
    return b


def bank_module(policy, tmp_path, **kw) -> tuple[AdapterBank, ClawModule]:
    bank = AdapterBank(copy.deepcopy(policy.model), tmp_path, lr=1e-2, seed=0, **kw)
    module = ClawModule(bank.model, Objective(ObjectiveConfig()), micro_batch_size=4, adapters=bank)
    return bank, module


def adapter_weights(bank: AdapterBank, user: str) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in bank.model.named_parameters() if f".{adapter_name(user)}." in n}


def test_a_users_batch_trains_their_adapter_and_nothing_else(base, tmp_path):
    bank, module = bank_module(base, tmp_path)
    tok = base.tokenizer
    fit(module, [batch_of("alice", tok), batch_of("bob", tok, 10)])
    frozen = {n: p.detach().clone() for n, p in bank.model.named_parameters() if "lora_" not in n}
    alice, bob = adapter_weights(bank, "alice"), adapter_weights(bank, "bob")
    assert alice and bob
    fit(module, [batch_of("alice", tok, 20)])
    assert any(not torch.equal(v, adapter_weights(bank, "alice")[n]) for n, v in alice.items())  # alice learned
    assert all(torch.equal(v, adapter_weights(bank, "bob")[n]) for n, v in bob.items())  # bob's is untouched
    after = {n: p.detach() for n, p in bank.model.named_parameters() if "lora_" not in n}
    assert all(torch.equal(v, after[n]) for n, v in frozen.items())  # the base never moves
    assert bank.version("alice") == 0  # versions are the callback's to promote (claw/callbacks.py publish_adapter)


def test_an_evicted_adapter_comes_back_exactly(base, tmp_path):
    """Trained with one adapter resident (alice's goes to disk and back, optimizer state included) or with all
    resident, alice's adapter ends the same."""
    tok = base.tokenizer
    ends = []
    for resident in (1, 8):
        bank, module = bank_module(base, tmp_path / str(resident), max_resident=resident)
        for user, start in [("alice", 0), ("bob", 10), ("alice", 20), ("bob", 30), ("alice", 40)]:
            fit(module, [batch_of(user, tok, start)])
            bank.promote(user)
        ends.append(adapter_weights(bank, "alice"))
        assert bank.loads == (5 if resident == 1 else 2)
    assert ends[0].keys() == ends[1].keys()
    for n in ends[0]:
        torch.testing.assert_close(ends[0][n], ends[1][n], rtol=0, atol=0)


def test_every_version_is_a_peft_directory(base, tmp_path):
    from peft import PeftModel

    bank, module = bank_module(base, tmp_path)
    tok = base.tokenizer
    fit(module, [batch_of("alice", tok)])
    version, path = bank.promote("alice")
    assert version == 1 and path == tmp_path / "adapters" / adapter_name("alice") / "v1"
    assert json.loads((path.parent / "user.json").read_text()) == {"user": "alice"}
    loaded = PeftModel.from_pretrained(copy.deepcopy(base.model), str(path)).eval()
    ids = torch.tensor([tok.encode("question 3")])
    bank.model.set_adapter(adapter_name("alice"))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, bank.model.eval()(ids).logits)
    bank.model.set_adapter(PLACEHOLDER)
    with torch.no_grad():  # the placeholder is the base
        torch.testing.assert_close(bank.model(ids).logits, base.model.eval()(ids).logits)


def test_a_restart_loads_the_checkpoints_versions_and_renumbers_a_lost_one(base, tmp_path):
    bank, module = bank_module(base, tmp_path)
    tok = base.tokenizer
    fit(module, [batch_of("alice", tok)])
    bank.promote("alice")
    saved = bank.save()  # the checkpoint holds alice at v1
    at_checkpoint = adapter_weights(bank, "alice")
    fit(module, [batch_of("alice", tok, 10)])
    assert bank.promote("alice")[0] == 2  # served, then lost with the process
    fresh, module2 = bank_module(base, tmp_path)
    fresh.load(saved)
    assert fresh.versions == {"alice": 3}  # the restored v1 weights, under a number no other weights had
    assert [(u, v, p.name) for u, v, p in fresh.served()] == [("alice", 3, "v3")]
    fresh.activate("alice")
    for n, v in adapter_weights(fresh, "alice").items():
        assert torch.equal(v, at_checkpoint[n])


# -- config ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra, says",
    [
        (["engine=vllm_server"], "engine=vllm or engine=hf"),
        (["lora.enabled=true"], "lora.enabled=false"),
        (["optim.schedule=cosine"], "constant"),
        (["mode.teacher=current"], "frozen"),
    ],
)
def test_per_user_refuses_what_it_does_not_combine_with(extra, says):
    cfg = make_cfg(["experiment=per_user", "personalize=per_user", *extra])
    with pytest.raises(ConfigError, match=says):
        validate(cfg)


def test_per_user_composes():
    cfg = make_cfg(["experiment=per_user", "personalize=per_user"])
    validate(cfg)
    assert cfg.engine.options.adapters.max_resident == 8 and cfg.personalize.r == cfg.lora.r
    assert make_cfg(["experiment=per_user"]).personalize is None  # shared: today's single policy


def test_a_batch_that_leaves_the_cursor_in_place_still_trains(tmp_path):
    """Per-user batches can leave the cursor where it was (bob's sample waits at the cursor while alice's train): the
    trainer tells a new batch from the one it already committed by the batch, not by the cursor."""
    from claw.rollout.datamodule import RolloutDataModule

    dm = RolloutDataModule(tmp_path, [], pad_id=0, batch_size=2, poll_seconds=0.1, version_of=lambda u: 0)
    dm.queue.put([sample("bob", 9)])
    first = dm.next_item()
    dm.commit(1, first)
    assert dm.cursor == 1 and not dm.is_new(first)
    for user, i in [("bob", 0), ("alice", 0), ("alice", 1), ("alice", 2)]:
        dm.queue.put([sample(user, i)])
    second = dm.next_item()  # alice has not been served: her two first, bob's sample stays at the cursor
    assert second.meta["user"] == "alice" and second.meta["cursor_end"] == dm.cursor == 1
    assert dm.is_new(second)
    dm.commit(2, second)
    assert not dm.is_new(second)
    third = dm.next_item()
    assert third.meta["user"] == "bob" and dm.is_new(third)
