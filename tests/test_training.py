"""One real training step on the tiny model, and train.py end to end (in-process)."""

import csv
import json
import time

import lightning as L
import pytest
import torch

from claw.module import ClawModule
from claw.objective import Objective, ObjectiveConfig
from claw.types import Sample, collate
from claw.updates import chunks
from claw.updates import slice_adv as _slice_adv
from claw.updates import slice_old as _slice_old
from tests.conftest import TINY, make_cfg


def make_batch(tok, n_groups=2, n=4):
    torch.manual_seed(0)
    samples = []
    for g in range(n_groups):
        prompt = tok.encode(f"question {g}")
        for k in range(n):
            resp = torch.randint(5, 1000, (3 + k,)).tolist()
            samples.append(
                Sample(
                    prompt,
                    resp,
                    [-2.0] * len(resp),
                    temperature=0.8,
                    policy_version=0,
                    reward=float(k % 2),
                    group_id=str(g),
                )
            )
    return collate(samples, tok.pad_token_id)


def test_one_step_every_parameter_gets_a_gradient_and_changes(tiny_policy):
    import copy

    import lightning as L

    model = copy.deepcopy(tiny_policy.model)
    module = ClawModule(
        model, Objective(ObjectiveConfig(clip_low=0.2, clip_high=0.28)), lr=1e-3, weight_decay=0.0, micro_batch_size=3
    )
    batch = make_batch(tiny_policy.tokenizer)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {}

    class Capture(L.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            for n, p in pl_module.model.named_parameters():
                grads[n] = None if p.grad is None else p.grad.detach().clone()

    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[Capture()],
    )
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None, collate_fn=lambda b: b)
    )
    for n, p in model.named_parameters():
        assert grads[n] is not None, f"{n} got no gradient"
        assert torch.isfinite(grads[n]).all(), n
        assert grads[n].abs().sum() > 0, f"{n} has an all-zero gradient"
        assert not torch.equal(before[n], p.detach()), f"{n} did not change"


def test_accumulation_matches_one_big_batch(tiny_policy):
    import copy

    batch = make_batch(tiny_policy.tokenizer)
    grads = []
    for micro in (8, 3):
        model = copy.deepcopy(tiny_policy.model)
        module = ClawModule(model, Objective(ObjectiveConfig()), micro_batch_size=micro)
        old = module.old_outputs(batch)
        adv = module.objective.advantages(batch, old)
        mb_tokens = batch.response_mask.sum()
        for idx in chunks(batch.size, micro):
            part = batch.select(idx)
            loss, _ = module.objective.loss(
                module.policy_outputs(part), _slice_old(old, idx), _slice_adv(adv, idx), part
            )
            (loss * part.response_mask.sum() / mb_tokens).backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6, rtol=1e-4)


class EndMarker(L.Callback):
    """A callback named in the config (`+callbacks.<name>._target_=...`): train.py builds it, the trainer calls it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def on_train_end(self, trainer, module) -> None:
        with open(self.path, "w") as f:
            f.write(str(module.policy_version))


def test_train_py_two_steps_end_to_end(tmp_path):
    from train import run

    marker = ["+callbacks.marker._target_=tests.test_training.EndMarker", f"+callbacks.marker.path={tmp_path}/end"]
    summary = run(make_cfg([*TINY, *marker], tmp_path))
    assert summary["steps"] == 2
    assert (tmp_path / "end").read_text() == "2"  # the config's callback ran, after claw's own
    assert (tmp_path / "checkpoints" / "last.ckpt").exists()
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ledger if r["trained"]] == [1, 2]
    stored = {json.loads(line)["sample_id"] for line in (tmp_path / "samples.jsonl").read_text().splitlines()}
    trained = [i for r in ledger for i in r["trained"]]
    assert len(trained) == len(set(trained)) == 16 and set(trained) <= stored
    ev = json.loads((tmp_path / "eval.json").read_text())
    assert {"before", "after"} <= set(ev) and ev["after"]["n"] == 4 and ev["after"]["policy_version"] == 2
    ckpt = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["policy_version"] == 2


def test_csv_metrics_are_namespaced(tmp_path):
    from train import run

    # every row trains: the tiny random model earns no reward, and a batch where nothing moves logs no monitors
    run(make_cfg([*TINY, "logger=csv", "optim.skip_still_rows=false"], tmp_path))
    header = (tmp_path / "csv" / "0" / "metrics.csv").read_text().splitlines()[0].split(",")
    for key in (
        "train/loss",
        "train/clip_frac",
        "train/approx_kl",
        "rollout/reward_mean",
        "rollout/staleness",
        "engine/sync_s",
        "eval/accuracy",
    ):
        assert key in header, key


@pytest.mark.parametrize("release", [True, False])
def test_release_memory_runs_after_every_step_and_logs_the_resident_size(tmp_path, monkeypatch, release):
    import claw.callbacks
    from train import run

    calls = []
    monkeypatch.setattr(claw.callbacks, "release_freed_memory", lambda: calls.append(1) or True)
    summary = run(make_cfg([*TINY, "logger=csv", f"release_memory={str(release).lower()}"], tmp_path))
    assert len(calls) == (summary["steps"] if release else 0)
    rows = list(csv.DictReader((tmp_path / "csv" / "0" / "metrics.csv").read_text().splitlines()))
    rss = [float(r["system/rss_gb"]) for r in rows if r.get("system/rss_gb")]
    assert len(rss) == summary["steps"] and all(0.05 < v < 64 for v in rss)
    assert all(float(r["system/release_s"]) >= 0 for r in rows if r.get("system/release_s"))


def test_wandb_logger_works_offline_without_an_account(tmp_path, monkeypatch):
    from train import run

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    run(make_cfg([*TINY, "logger=wandb"], tmp_path))
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    needles = (
        b"train/loss",
        b"rollout/reward_mean",
        b"eval/accuracy",
        b"micro_batch_size",
        b"mode=rl",
        b"checkpoint-",
    )
    deadline = time.monotonic() + 60
    while (
        True
    ):  # W&B's service process writes the offline record log (protobuf, strings stored raw) after `finish` returns
        record = next(runs[0].glob("*.wandb")).read_bytes()
        if all(n in record for n in needles) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for needle in needles:
        assert needle in record, needle  # metrics, the resolved config, tags, the checkpoint artifact
    tables = list((runs[0] / "files" / "media" / "table" / "rollout").glob("samples_*.table.json"))
    assert tables
    table = json.loads(tables[0].read_text())
    assert table["columns"][:4] == ["step", "prompt", "response", "reward"] and len(table["data"]) == 8
    assert (tmp_path / "samples_table.jsonl").exists()


def one_update(policy, batch, fused: bool) -> tuple[dict, dict, int]:
    """One optimizer step through Lightning: (gradients, logged metrics, π_old passes run)."""
    import copy

    import lightning as L

    module = ClawModule(
        copy.deepcopy(policy.model), Objective(ObjectiveConfig()), lr=1e-3, micro_batch_size=3, fuse_old_pass=fused
    )
    assert module.fuse_old_pass is fused
    calls, grads, metrics = [], {}, {}
    module.old_outputs = lambda b, f=module.old_outputs: calls.append(1) or f(b)

    class Capture(L.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            grads.update({n: p.grad.detach().clone() for n, p in pl_module.model.named_parameters()})

        def on_train_batch_end(self, trainer, pl_module, outputs, b, i):
            metrics.update({k: float(v) for k, v in trainer.callback_metrics.items()})

    trainer = L.Trainer(
        accelerator="cpu",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[Capture()],
    )
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None, collate_fn=lambda b: b)
    )
    return grads, metrics, len(calls)


def test_fused_old_pass_gives_the_two_pass_update(tiny_policy):
    """With one update per batch and reward-only advantages, π_old is read off the training forward
    (no separate no-grad pass): the gradients and logged metrics are those of the two-pass path."""
    batch = make_batch(tiny_policy.tokenizer)
    g_fused, m_fused, passes_fused = one_update(tiny_policy, batch, fused=True)
    g_two, m_two, passes_two = one_update(tiny_policy, batch, fused=False)
    assert (passes_fused, passes_two) == (0, 1)
    assert m_fused.keys() == m_two.keys() and "train/grad_norm" in m_fused
    for k, v in m_fused.items():
        if k.startswith("system/"):  # wall-clock timings
            continue
        assert abs(v - m_two[k]) <= 1e-5 * max(1.0, abs(v)), k
    for name, g in g_fused.items():
        assert torch.allclose(g, g_two[name], atol=1e-7, rtol=1e-5), name
    # Not fused where π_old must exist before the first update.
    for cfg, kw in [
        (ObjectiveConfig(advantage="opd"), {}),
        (ObjectiveConfig(kl_coef=0.1), {}),
        (ObjectiveConfig(), {"ppo_epochs": 2}),
        (ObjectiveConfig(), {"minibatches": 2}),
    ]:
        assert not ClawModule(tiny_policy.model, Objective(cfg), **kw).fuse_old_pass
