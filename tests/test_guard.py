"""Guarded updates (claw/guard): the decision rule, the guard on the tiny model with logged turns
written by hand (promotion, hold, trainer reset, automatic and manual rollback), and the whole loop
(`guard=ope` composes with train.py; a held candidate is not served after a restart)."""

import copy
import json
import math

import lightning as L
import pytest
import torch

from claw.guard import GuardCallback, Thresholds, decide
from claw.guard.decision import Evidence, LiveReward
from claw.guard.logged import candidate_logprobs, lines_backwards, recent_judged
from claw.guard.ope import OPEEstimate
from claw.guard.state import GuardDir
from claw.rollback import main as rollback_main
from claw.rollout.store import JsonlLog
from claw.types import Sample, collate
from tests.conftest import TINY, make_cfg

T = Thresholds(
    max_kl=0.05,
    margin=0.0,
    min_ess_fraction=0.1,
    min_samples=8,
    probe_margin=0.0,
    rollback_margin=0.0,
    min_live_samples=16,
)


def ope(value, half=0.1, ess=16.0, n=16):
    return OPEEstimate(value, value - half, value + half, ess, n, "snis")


# -- the decision rule -------------------------------------------------------------------------
def test_decide_promotes_a_candidate_that_is_not_worse_and_close():
    assert decide(Evidence(candidate=ope(0.5), served=ope(0.55), kl=0.01), T).action == "promote"


@pytest.mark.parametrize(
    "evidence, reason",
    [
        (Evidence(candidate=ope(0.5), served=ope(0.5), kl=0.2), "KL"),
        (Evidence(candidate=ope(0.3), served=ope(0.5), kl=0.01), "OPE"),  # upper bound 0.4 < 0.5
        (Evidence(candidate=ope(0.5, ess=1.0), served=ope(0.5), kl=0.01), "ESS"),  # 1 < 0.1 x 16
        (Evidence(candidate=ope(0.5, n=4), served=ope(0.5, n=4), kl=0.01), "fewer than 8"),
        (Evidence(), "fewer than 8"),  # nothing logged yet: never promote unchecked
        (Evidence(candidate=ope(0.5), served=ope(0.5), kl=0.01, probe_candidate=0.4, probe_served=0.6), "probe"),
    ],
)
def test_decide_holds(evidence, reason):
    d = decide(evidence, T)
    assert d.action == "hold" and any(reason in r for r in d.reasons), d


def test_decide_rolls_back_a_served_version_whose_live_reward_fell():
    prev = LiveReward().add([1.0] * 16)  # mean 1
    bad = LiveReward().add([1.0, -1.0] * 8)  # mean 0, sd ~1.03: upper bound 0 + 1.96·1.03/4 ≈ 0.51 < 1
    good_enough = LiveReward().add([1.0] * 15 + [-1.0])  # mean 0.875, sd 0.5: upper bound 0.875 + 1.96·0.5/4 ≈ 1.12
    assert decide(Evidence(live_served=bad, live_previous=prev), T).action == "rollback"
    assert decide(Evidence(live_served=good_enough, live_previous=prev), T).action == "hold"
    assert (
        decide(Evidence(live_served=bad, live_previous=LiveReward().add([1.0] * 15)), T).action == "hold"
    )  # too few turns of the previous
    assert decide(Evidence(live_served=bad, live_previous=None), T).action == "hold"  # nothing to roll back to


def test_live_reward_interval():
    live = LiveReward().add([1.0, 0.0, 1.0, 0.0])  # mean 0.5, sample variance 1/3
    assert live.mean == 0.5 and live.ci_high() == pytest.approx(0.5 + 1.959964 * math.sqrt(1 / 3) / 2)
    assert LiveReward().add([1.0]).ci_high() == math.inf


# -- the store, read backwards -------------------------------------------------------------------
def test_store_is_read_newest_first_skipping_a_torn_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n{"a":4')  # the last line is being written
    assert [json.loads(x)["a"] for x in lines_backwards(path, block=5)] == [3, 2, 1]
    path.write_bytes(b'{"a":4')
    assert list(lines_backwards(path)) == []


# -- the guard on the tiny model -----------------------------------------------------------------
class FakeModule:
    """What the guard uses of ClawModule."""

    def __init__(self, model):
        self.model, self.policy_version, self.device, self.logged = model, 0, torch.device("cpu"), {}

    def export_weights(self):
        return self.model.state_dict()

    def log_dict(self, metrics, **_):
        self.logged.update(metrics)

    def log(self, key, value, **_):
        self.logged[key] = value


class RecordingEngine:
    def __init__(self):
        self.loads = []  # (version, weights)

    def load_weights(self, named, version):
        self.loads.append((version, {n: t.clone() for n, t in named}))


def same_weights(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


class Run:
    """A guard, a module holding the tiny model, an engine, and a store of logged turns."""

    def __init__(self, tmp_path, tiny_policy, **kwargs):
        self.tmp, self.pad = tmp_path, tiny_policy.tokenizer.pad_token_id
        self.module = FakeModule(copy.deepcopy(tiny_policy.model))
        self.engine = RecordingEngine()
        self.store = JsonlLog(tmp_path / "samples.jsonl", fsync=False)
        self.guard = GuardCallback(tmp_path, self.engine, self.pad, T, window=64, **kwargs)
        self.guard.on_fit_start(None, self.module)
        self.n = 0

    def log_turns(self, label, rewards):
        """Turns the served weights (the module's, before the next update) generated under `label`."""
        g = torch.Generator().manual_seed(self.n)
        samples = [
            Sample(
                torch.randint(10, 2000, (4,), generator=g).tolist(),
                torch.randint(10, 2000, (5,), generator=g).tolist(),
                [0.0] * 5,
                1.0,
                label,
                reward=r,
            )
            for r in rewards
        ]
        self.n += len(samples)
        cand, _, _, _ = candidate_logprobs(self.module.model, samples, self.pad, 8, "cpu")
        for s, lp in zip(samples, cand):
            s.rollout_logprobs = lp[: len(s.response_ids)].tolist()
            self.store.append(s.to_json())
        return collate(samples, self.pad)

    def update(self, scale):
        """A training step: perturb the weights (small: a close candidate; large: a destructive one)."""
        torch.manual_seed(self.module.policy_version)
        with torch.no_grad():
            for p in self.module.model.parameters():
                p.add_(scale * torch.randn_like(p))
        self.module.policy_version += 1

    def step(self, label, rewards, scale):
        batch = self.log_turns(label, rewards)
        self.update(scale)
        self.guard.publish(None, self.module, batch)
        return self.decisions()[-1]

    def decisions(self):
        path = self.tmp / "guard.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def served(self):
        return json.loads((self.tmp / "guard" / "served.json").read_text())


def test_promotion_writes_weights_and_state_before_serving(tmp_path, tiny_policy):
    run = Run(tmp_path, tiny_policy)
    v0 = {k: v.clone() for k, v in run.module.model.state_dict().items()}
    assert run.served()["version"] == 0 and (tmp_path / "guard" / "v0-0.safetensors").exists()
    assert run.engine.loads == []  # a fresh engine already holds the initial weights

    d = run.step(label=0, rewards=[1.0, -1.0] * 8, scale=1e-4)
    assert d["action"] == "promote", d
    assert d["evidence"]["candidate"]["n"] == 16 and d["evidence"]["kl"] < T.max_kl and d["cost_s"] > 0
    assert run.served()["version"] == 1 and run.served()["labels"] == {"0": 0, "1": 1}
    version, weights = run.engine.loads[-1]
    assert version == 1 and same_weights(weights, run.module.model.state_dict()) and not same_weights(weights, v0)
    assert same_weights(GuardDir(tmp_path).load_weights("v1-1.safetensors"), weights)
    assert (
        run.module.logged["guard/promote"] == 1.0
        and run.module.logged["guard/served_version"] == 1.0
        and "guard/ess" in run.module.logged
    )


def test_hold_keeps_serving_then_resets_the_trainer_past_max_lag(tmp_path, tiny_policy):
    run = Run(tmp_path, tiny_policy, max_lag=1)
    v0 = {k: v.clone() for k, v in run.module.model.state_dict().items()}

    d = run.step(label=0, rewards=[1.0, 0.0] * 8, scale=0.3)  # a destructive update
    assert d["action"] == "hold" and any("KL" in r for r in d["reasons"]) and not d["reset_trainer"]
    assert run.engine.loads == [] and run.served()["version"] == 0
    assert run.module.logged["guard/hold"] == 1.0

    # The engine still serves version 0 (label 0); a second hold would leave it 2 > max_lag behind: reset.
    d = run.step(label=0, rewards=[1.0, 0.0] * 8, scale=0.3)
    assert d["action"] == "hold" and d["reset_trainer"]
    assert same_weights(run.module.model.state_dict(), v0), "the trainer restarts from the served weights"
    version, weights = run.engine.loads[-1]
    assert version == 2 and same_weights(weights, v0)  # the same weights, re-published under the trainer's version
    assert run.served()["version"] == 0 and run.served()["engine_version"] == 2
    assert run.served()["labels"]["2"] == 0


def test_automatic_rollback_when_the_promoted_version_s_live_reward_falls(tmp_path, tiny_policy):
    run = Run(tmp_path, tiny_policy)
    v0 = {k: v.clone() for k, v in run.module.model.state_dict().items()}
    assert run.step(label=0, rewards=[1.0] * 16, scale=1e-4)["action"] == "promote"  # version 0 earned live reward 1
    v1 = {k: v.clone() for k, v in run.module.model.state_dict().items()}

    d = run.step(label=1, rewards=[-1.0] * 16, scale=1e-4)  # version 1's users judged it bad
    assert d["action"] == "rollback" and "live reward" in d["reasons"][0]
    assert d["served_version"] == 0 and d["promoted"] == [0] and d["reset_trainer"]
    version, weights = run.engine.loads[-1]
    assert version == 2 and same_weights(weights, v0)
    assert same_weights(run.module.model.state_dict(), v0)  # after_rollback=reset
    assert not (tmp_path / "guard" / "v1-1.safetensors").exists()
    assert run.served()["labels"]["2"] == 0 and run.served()["live"]["1"][0] == 16
    assert not same_weights(v1, v0)


def test_observe_mode_logs_what_it_would_do_and_serves_every_candidate(tmp_path, tiny_policy):
    """guard.observe: the destructive update the enforcing guard holds (the test above) is served, and the
    decision line says the guard would have held it and why; an ordinary update would have been promoted."""
    run = Run(tmp_path, tiny_policy, observe=True)
    d = run.step(label=0, rewards=[1.0, 0.0] * 8, scale=0.3)
    assert d["action"] == "promote" and d["would"]["action"] == "hold"
    assert any("KL" in r for r in d["would"]["reasons"])
    assert run.served()["version"] == 1 and run.engine.loads[-1][0] == 1
    assert run.module.logged["guard/would_hold"] == 1.0 and run.module.logged["guard/promote"] == 1.0
    d = run.step(label=1, rewards=[1.0, 0.0] * 8, scale=1e-4)
    assert d["would"] == {"action": "promote", "reasons": []} and run.served()["version"] == 2
    assert run.module.logged["guard/would_hold"] == 0.0


def test_observe_mode_refuses_a_canary(tmp_path):
    from claw.guard.canary import CanarySettings, CanaryTest

    settings = CanarySettings(fraction=0.1, test=CanaryTest(alpha=0.05, margin=0.05, max_turns=64), timeout_s=1.0)
    with pytest.raises(ValueError, match="shadow guard serves no canary"):
        GuardCallback(tmp_path, None, 0, T, checks=("ope", "canary"), canary=settings, observe=True)


def test_manual_rollback_cli(tmp_path, tiny_policy, capsys):
    run = Run(tmp_path, tiny_policy, after_rollback="continue")
    v0 = {k: v.clone() for k, v in run.module.model.state_dict().items()}
    assert run.step(label=0, rewards=[1.0, 0.0] * 8, scale=1e-4)["action"] == "promote"
    assert run.step(label=1, rewards=[1.0, 0.0] * 8, scale=1e-4)["action"] == "promote"
    assert run.served()["promoted"][-1]["version"] == 2

    assert rollback_main([str(tmp_path)]) == 0
    assert "promoted versions kept: [0, 1, 2]" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not a kept promoted version"):
        rollback_main([str(tmp_path), "--to-version", "5"])
    assert rollback_main([str(tmp_path), "--to-version", "0"]) == 0
    assert (tmp_path / "guard" / "rollback_request.json").exists()
    assert run.served()["version"] == 2  # nothing served changes until the guard applies it

    candidate = run.module.model.state_dict()
    d = run.step(label=2, rewards=[1.0, 0.0] * 8, scale=1e-4)
    assert (
        d["action"] == "rollback" and d["reasons"] == ["manual"] and d["served_version"] == 0 and d["promoted"] == [0]
    )
    version, weights = run.engine.loads[-1]
    assert version == 3 and same_weights(weights, v0)
    assert same_weights(run.module.model.state_dict(), candidate) and not same_weights(
        candidate, v0
    )  # after_rollback=continue
    assert not (tmp_path / "guard" / "rollback_request.json").exists()


def test_window_holds_only_judged_sampled_turns_of_the_served_version(tmp_path, tiny_policy):
    run = Run(tmp_path, tiny_policy)
    run.log_turns(label=0, rewards=[1.0] * 3)
    run.log_turns(label=7, rewards=[1.0] * 2)  # another version's turns
    greedy = Sample([1, 2], [3], [0.0], 0.0, 0, reward=1.0)
    unjudged = Sample([1, 2], [3], [0.0], 1.0, 0, reward=None)
    for s in (greedy, unjudged):
        run.store.append(s.to_json())
    got = recent_judged(tmp_path / "samples.jsonl", lambda s: s.policy_version == 0, limit=2)
    assert [s.policy_version for s in got] == [0, 0] and all(s.temperature > 0 and s.reward is not None for s in got)


# -- the whole loop --------------------------------------------------------------------------------
class EngineWeights(L.Callback):
    """What the engine serves and what the trainer holds when training starts (after the guard's on_fit_start)."""

    def on_fit_start(self, trainer, module):
        engine = next(cb.engine for cb in trainer.callbacks if hasattr(cb, "guard"))
        engine._apply_staged()  # the hf engine applies staged weights before its next call; do it now to read them
        self.engine = {k: v.clone() for k, v in engine.model.state_dict().items()}
        self.trainer = {k: v.detach().clone() for k, v in module.model.state_dict().items()}
        self.version = module.policy_version


PERMISSIVE = ["guard.thresholds.max_kl=100", "guard.thresholds.min_samples=1", "guard.thresholds.min_ess_fraction=0"]


def test_train_with_guard_promotes_and_logs(tmp_path):
    import train

    summary = train.run(make_cfg([*TINY, "guard=ope", *PERMISSIVE, "engine=hf"], tmp_path))
    assert summary["steps"] == 2
    lines = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2] and lines[0]["action"] == "promote", lines
    # Step 2 promotes when version 1 has judged turns in the store by then; the dataset source runs ahead,
    # so it may still be sampling under version 0: then the guard holds (it never promotes unchecked).
    assert lines[1]["action"] == "promote" or lines[1]["reasons"] == [
        "fewer than 1 judged turns of the served version"
    ]
    promoted = [x["step"] for x in lines if x["action"] == "promote"]
    served = json.loads((tmp_path / "guard" / "served.json").read_text())
    assert served["version"] == promoted[-1] and [p["version"] for p in served["promoted"]] == [0, *promoted]


def test_restart_with_a_held_candidate_serves_the_promoted_version(tmp_path):
    import train

    # Every candidate held (max_kl < 0). The tiny model's rewards are all 0 (zero advantages):
    # an entropy bonus moves its weights.
    hold = [
        *TINY,
        "guard=ope",
        "guard.thresholds.max_kl=-1",
        "engine=hf",
        "checkpoint_interval_s=0",
        "algo.entropy_coef=0.1",
        "optim.lr=1e-3",
    ]
    train.run(make_cfg(hold, tmp_path))
    lines = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines] == ["hold", "hold"] and not any(
        x["reset_trainer"] for x in lines
    )  # lag 2 = max_lag
    v0 = GuardDir(tmp_path).load_weights("v0-0.safetensors")

    probe = EngineWeights()
    train.run(
        make_cfg([*hold, "steps=3"], tmp_path), extra_callbacks=[probe]
    )  # restart from last.ckpt (trainer version 2)
    assert probe.version == 2
    assert same_weights(v0, probe.engine), "the engine must serve the promoted version 0, not the held candidate"
    assert not same_weights(v0, probe.trainer), "the trainer resumed from its candidate"
    served = json.loads((tmp_path / "guard" / "served.json").read_text())
    assert served["version"] == 0 and served["labels"]["2"] == 0
    third = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()][-1]
    # The engine was re-labelled 2 at the restart, so step 3 is 1 version ahead of it: no reset yet.
    assert third["step"] == 3 and third["action"] == "hold" and not third["reset_trainer"]


def test_build_guard_refuses_what_is_not_built(tmp_path):
    from claw.config import ConfigError
    from claw.guard import build_guard

    assert build_guard(make_cfg(TINY, tmp_path), tmp_path, None, 0) is None  # guard=none: the plain weight sync
    assert isinstance(build_guard(make_cfg([*TINY, "guard=ope"], tmp_path), tmp_path, None, 0), GuardCallback)
    with pytest.raises(ConfigError, match="lora"):
        build_guard(make_cfg([*TINY, "guard=ope", "lora.enabled=true"], tmp_path), tmp_path, None, 0)
    with pytest.raises(ConfigError, match="DDP"):
        build_guard(make_cfg([*TINY, "guard=ope", "layout=cpu_ddp"], tmp_path), tmp_path, None, 0)
    with pytest.raises(ConfigError, match="max_staleness"):
        build_guard(make_cfg([*TINY, "guard=ope", "guard.max_lag=5"], tmp_path), tmp_path, None, 0)
