"""Canary traffic with real parts: the tiny model in a real `HFEngine` holding two weight sets, a real proxy on
127.0.0.1, the official `openai` client, judged rewards sent as explicit `/v1/feedback`. Sessions split by arm;
canary replies decoded by the candidate's weights; the guard promoting a better candidate, rejecting a worse
one, timing out, stopping for a manual rollback; and a SIGKILL mid-canary followed by a restart that serves
the promoted version."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import threading
from types import SimpleNamespace

import httpx
import lightning as L
import openai
import pytest
import torch

from claw.engine.base import SamplingParams
from claw.engine.hf import HFEngine
from claw.guard.callback import GuardCallback
from claw.guard.canary import CanarySettings, CanaryTest, CanaryTraffic, canary_arm
from claw.guard.decision import Thresholds
from claw.guard.state import GuardDir
from tests.conftest import ROOT, make_cfg
from tests.test_guard import EngineWeights, FakeModule, same_weights
from tests.test_proxy import make_proxy, wait_for
from tests.test_proxy_training import wait_url


def perturbed(model, scale: float, seed: int = 0):
    """A copy of `model` whose weights differ by Gaussian noise: a candidate the served weights cannot pass for."""
    out = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return out


def scorer(tiny_policy, model) -> HFEngine:
    """An engine holding `model`'s weights, to score recorded turns under them."""
    return HFEngine(SimpleNamespace(model=model, tokenizer=tiny_policy.tokenizer))


def turn_records(run_dir) -> dict[str, dict]:
    lines = (run_dir / "proxy.jsonl").read_text().splitlines()
    return {r["turn_id"]: r for r in map(json.loads, lines) if r.get("kind") == "turn"}


class Users:
    """Sessions through the official client; each reply judged at once with an explicit reward."""

    def __init__(self, url: str):
        self.client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=60)
        self.http = httpx.Client(base_url=url.removesuffix("/v1"), timeout=60)

    def ask(self, session: str, text: str = "Tell me a fact.", history: list | None = None):
        messages = [*(history or []), {"role": "user", "content": text}]
        return self.client.chat.completions.create(
            model="m",
            messages=messages,
            temperature=1.0,
            max_tokens=4,
            logprobs=True,
            extra_headers={"X-Session-Id": session},
        )

    def rate(self, session: str, reward: float) -> None:
        r = self.http.post("/v1/feedback", json={"session_id": session, "reward": reward})
        assert r.status_code == 200, r.text


@pytest.fixture
def engine(tiny_policy):
    return HFEngine(tiny_policy, seed=0)


def test_new_sessions_split_by_arm_and_canary_replies_come_from_the_candidate(tiny_policy, engine, tmp_path):
    candidate = perturbed(tiny_policy.model, 0.05)
    src, queue = make_proxy(tiny_policy, tmp_path, mode="rl", engine=engine, default_max_tokens=4)
    traffic = CanaryTraffic()
    src.serve_canary(traffic)
    users = Users(src.url)
    try:
        old = users.ask("old-session")  # began before the canary: stays on the served weights
        assert old.model_extra["claw"]["arm"] is None and old.model_extra["claw"]["policy_version"] == 0

        engine.load_canary(candidate.state_dict().items(), version=1)
        traffic.start("c1-v1", fraction=0.3, salt="v1")
        sids = [f"user-{k}" for k in range(40)]
        replies = {sid: users.ask(sid) for sid in sids}
        expected = {sid: "canary" if canary_arm(sid, 0.3, "v1") else "served" for sid in sids}
        assert {sid: r.model_extra["claw"]["arm"] for sid, r in replies.items()} == expected  # by session id
        assert 5 <= sum(a == "canary" for a in expected.values()) <= 20  # both arms, about 0.3 of 40
        for sid, r in replies.items():  # the candidate's version on canary turns, the served one's on the rest
            assert r.model_extra["claw"]["policy_version"] == (1 if expected[sid] == "canary" else 0)

        # The turn records say which arm and weights decoded them, and the log-probs prove it: each turn's
        # recorded log-probs are its arm's weights' (teacher-forced), not the other arm's.
        records = turn_records(tmp_path)
        served_w, cand_w = scorer(tiny_policy, tiny_policy.model), scorer(tiny_policy, candidate)
        for sid, r in replies.items():
            rec = records[r.model_extra["claw"]["turn_id"]]
            assert rec["arm"] == expected[sid] and rec["canary"] == "c1-v1"
            own, other = (cand_w, served_w) if expected[sid] == "canary" else (served_w, cand_w)
            lp = torch.tensor(rec["rollout_logprobs"])
            mine = torch.tensor(own.score([rec["prompt_ids"]], [rec["response_ids"]], rec["temperature"])[0])
            theirs = torch.tensor(other.score([rec["prompt_ids"]], [rec["response_ids"]], rec["temperature"])[0])
            assert torch.allclose(lp, mine, atol=1e-4), sid
            assert (lp - theirs).abs().max() > 1e-3, sid
            returned = [t.logprob for t in r.choices[0].logprobs.content]
            assert returned == pytest.approx(rec["rollout_logprobs"][: len(returned)], abs=1e-5)

        # Judged rewards of both arms reach the traffic (before training); samples carry their arm.
        for sid in sids:
            users.rate(sid, 1.0 if expected[sid] == "canary" else -1.0)
        n_canary = sum(a == "canary" for a in expected.values())
        assert wait_for(lambda: traffic.snapshot()[0].n + traffic.snapshot()[1].n == len(sids))
        cand, served, sessions = traffic.snapshot()
        assert (cand.n, cand.mean, served.n, served.mean) == (n_canary, 1.0, len(sids) - n_canary, -1.0)
        assert sessions == {"canary": n_canary, "served": len(sids) - n_canary}
        turn_ids = {r.model_extra["claw"]["turn_id"] for r in replies.values()}
        assert wait_for(lambda: turn_ids <= {s.sample_id for s in queue.store.samples()})
        samples = {s.sample_id: s for s in queue.store.samples()}
        for sid, r in replies.items():
            s = samples[r.model_extra["claw"]["turn_id"]]
            assert s.info["arm"] == expected[sid] and s.policy_version == (1 if expected[sid] == "canary" else 0)

        again = users.ask("old-session", "And another?", [{"role": "user", "content": "Tell me a fact."}])
        assert again.model_extra["claw"]["arm"] is None  # no switch mid-conversation
        first = next(sid for sid in sids if expected[sid] == "canary")
        follow = users.ask(first, "More?", [{"role": "user", "content": "Tell me a fact."}])
        assert follow.model_extra["claw"]["arm"] == "canary"  # a session keeps its arm on every turn

        # The canary ends: every session back on the served weights, and the candidate's copy freed.
        traffic.stop()
        engine.stop_canary()
        assert engine.canary_model is None
        after = users.ask(first, "Still there?", [{"role": "user", "content": "Tell me a fact."}])
        assert after.model_extra["claw"]["arm"] is None and after.model_extra["claw"]["policy_version"] == 0
    finally:
        src.stop()


def test_a_row_routed_to_a_canary_that_ended_is_decoded_by_the_served_weights(tiny_policy, engine):
    prompt = tiny_policy.tokenizer("hello there").input_ids
    greedy = SamplingParams(temperature=0.0, max_new_tokens=3)
    [plain] = engine.generate([prompt], greedy, canary=True)  # no canary loaded
    assert not plain.canary and plain.policy_version == 0
    engine.load_canary(perturbed(tiny_policy.model, 0.05).state_dict().items(), version=7)
    [canary] = engine.generate([prompt], greedy, canary=True)
    [served] = engine.generate([prompt], greedy)
    assert canary.canary and canary.policy_version == 7 and not served.canary and served.policy_version == 0
    assert served.response_ids == plain.response_ids and served.logprobs == pytest.approx(plain.logprobs)
    assert canary.logprobs != pytest.approx(served.logprobs, abs=1e-3)


# -- the guard deciding on live traffic ---------------------------------------------------------------
NO_BATCH = SimpleNamespace(
    policy_version=torch.zeros(0, dtype=torch.long), rewards=torch.zeros(0), reward_mask=torch.zeros(0), size=0
)


class Canary:
    """A guard with only the canary check, a real engine and a real proxy; the module holds candidate 1."""

    def __init__(self, tmp_path, tiny_policy, engine, **settings):
        self.tmp = tmp_path
        self.v0 = {k: v.clone() for k, v in tiny_policy.model.state_dict().items()}
        self.module = FakeModule(copy.deepcopy(tiny_policy.model))
        self.engine = engine
        canary = CanarySettings(**{"fraction": 0.5, "timeout_s": 120.0, "poll_s": 0.02, **settings})
        pad = tiny_policy.tokenizer.pad_token_id
        self.guard = GuardCallback(tmp_path, engine, pad, Thresholds(), checks=("canary",), canary=canary)
        self.guard.on_fit_start(None, self.module)
        self.src, _ = make_proxy(tiny_policy, tmp_path, mode="rl", engine=engine, default_max_tokens=4)
        self.src.serve_canary(self.guard.traffic)
        self.users = Users(self.src.url)

    def train(self, scale: float = 0.05, seed: int = 0) -> None:
        """One update: the module's weights become the next candidate."""
        self.module.model = perturbed(self.module.model, scale, seed)
        self.module.policy_version += 1
        self.candidate = {k: v.clone() for k, v in self.module.model.state_dict().items()}

    def publish(self, rewards=None, sessions: int = 400) -> dict:
        """`publish` in the trainer's thread; meanwhile users open sessions and rate each reply by its arm
        (`rewards[arm]`; None: no traffic). Returns the decision's guard.jsonl line."""
        done = threading.Event()
        trainer = threading.Thread(target=lambda: (self.guard.publish(None, self.module, NO_BATCH), done.set()))
        trainer.start()
        if rewards is not None:
            assert wait_for(lambda: self.guard.traffic.canary_id is not None or done.is_set())
            k = 0
            while not done.is_set() and k < sessions:
                sid = f"s{self.module.policy_version}-{k}"
                k += 1
                r = self.users.ask(sid)
                arm = r.model_extra["claw"]["arm"]
                if arm is not None:
                    self.users.rate(sid, rewards[arm])
        trainer.join(timeout=120)
        assert not trainer.is_alive(), "the guard never decided"
        return self.decisions()[-1]

    def decisions(self):
        return [json.loads(x) for x in (self.tmp / "guard.jsonl").read_text().splitlines()]

    def served(self):
        return json.loads((self.tmp / "guard" / "served.json").read_text())

    def stop(self):
        self.src.stop()


@pytest.fixture
def live(tmp_path, tiny_policy, engine, request):
    run = Canary(tmp_path, tiny_policy, engine, **getattr(request, "param", {}))
    yield run
    run.stop()


def test_a_clearly_better_candidate_is_promoted_and_then_served_to_everyone(live):
    live.train()
    d = live.publish(rewards={"canary": 1.0, "served": -1.0})
    c = d["evidence"]["canary"]
    assert d["action"] == "promote" and d["step"] == 1 and d["reasons"][0].startswith("canary: Δ ∈")
    assert c["verdict"] == "promote" and c["id"] == "c1-v1" and c["fraction"] == 0.5
    assert c["candidate"]["mean"] == 1.0 and c["served"]["mean"] == -1.0 and c["interval"][0] > -0.0
    assert c["candidate"]["n"] >= 2 and c["served"]["n"] >= 2 and c["waited_s"] > 0
    assert c["sessions"]["canary"] >= c["candidate"]["n"] and c["sessions"]["served"] >= c["served"]["n"]
    assert live.served()["version"] == 1 and live.served()["canary"] is None and live.served()["canaries"] == 1
    assert live.module.logged["guard/promote"] == 1.0 and live.module.logged["guard/canary_n"] == c["candidate"]["n"]
    # Everyone now gets the candidate's weights, from the engine's one (served) weight set.
    assert live.engine.canary_model is None and live.guard.traffic.canary_id is None
    r = live.users.ask("after-promotion")
    assert r.model_extra["claw"]["arm"] is None and r.model_extra["claw"]["policy_version"] == 1
    assert same_weights(live.engine.model.state_dict(), live.candidate)


@pytest.mark.parametrize("live", [{"after_reject": "reset"}, {"after_reject": "continue"}], indirect=True)
def test_a_clearly_worse_candidate_is_rejected(live):
    live.train()
    d = live.publish(rewards={"canary": -1.0, "served": 1.0})
    c = d["evidence"]["canary"]
    assert d["action"] == "hold" and d["reasons"][0].startswith("canary rejected") and c["verdict"] == "reject"
    assert c["interval"][1] < 0 and c["candidate"]["mean"] == -1.0 and c["served"]["mean"] == 1.0
    assert live.served()["version"] == 0 and live.served()["canary"] is None
    reset = live.guard.canary.after_reject == "reset"
    assert d["reset_trainer"] == reset
    assert same_weights(live.module.model.state_dict(), live.v0 if reset else live.candidate)
    assert live.engine.canary_model is None and live.engine.version == 0  # nothing was pushed
    r = live.users.ask("after-rejection")
    assert r.model_extra["claw"]["arm"] is None and r.model_extra["claw"]["policy_version"] == 0


@pytest.mark.parametrize("live", [{"timeout_s": 0.5}], indirect=True)
def test_an_undecided_canary_times_out_and_the_candidate_is_held(live):
    live.train()
    d = live.publish(rewards=None)  # nobody comes
    assert d["action"] == "hold" and d["reasons"][0].startswith("canary timed out") and not d["reset_trainer"]
    assert d["evidence"]["canary"]["verdict"] == "timeout" and d["evidence"]["canary"]["candidate"]["n"] == 0
    assert same_weights(live.module.model.state_dict(), live.candidate)  # the trainer goes on from its candidate
    assert live.engine.canary_model is None and live.served()["version"] == 0

    # max_lag=2 (default): the second candidate is 2 versions ahead of the engine and still gets a canary, with a
    # fresh id; its arms are reshuffled (salt v2), and old turns of canary c1 never count for it.
    live.train(seed=1)
    d = live.publish(rewards=None)
    assert d["evidence"]["canary"]["id"] == "c2-v2" and live.served()["canaries"] == 2
    # The third would be 3 > max_lag behind: no canary; the trainer restarts from the served weights, which the
    # engine re-labels with the trainer's version (label 3 never named the candidate's weights).
    live.train(seed=2)
    d = live.publish(rewards=None)
    assert d["action"] == "hold" and d["reasons"][0].startswith("no canary") and d["reset_trainer"]
    assert d["evidence"]["canary"] is None and live.served()["canaries"] == 2
    assert live.served()["labels"]["3"] == 0 and live.engine.version == 3
    assert same_weights(live.module.model.state_dict(), live.v0)


@pytest.mark.parametrize("live", [{"test": CanaryTest(max_turns=4)}], indirect=True)
def test_inconclusive_at_max_turns_and_a_manual_rollback_request_stops_a_canary(live):
    live.train()
    d = live.publish(rewards={"canary": 0.0, "served": 0.0}, sessions=400)  # equal arms: never decided
    c = d["evidence"]["canary"]
    assert d["action"] == "hold" and c["verdict"] == "inconclusive" and min(c["candidate"]["n"], c["served"]["n"]) >= 4

    live.train(seed=1)
    trainer = threading.Thread(target=live.guard.publish, args=(None, live.module, NO_BATCH))
    trainer.start()
    assert wait_for(lambda: live.guard.traffic.canary_id == "c2-v2")
    GuardDir(live.tmp).request(0)  # what `python -m claw.rollback` and POST /admin/rollback write
    trainer.join(timeout=30)
    d = live.decisions()[-1]
    assert d["action"] == "hold" and d["evidence"]["canary"]["verdict"] == "interrupted"
    assert "manual rollback" in d["reasons"][0] and live.engine.canary_model is None
    # The rollback itself is applied at the next step, under the next version number (2 named the candidate).
    live.train(seed=2)
    live.guard.publish(None, live.module, NO_BATCH)
    d = live.decisions()[-1]
    assert d["action"] == "rollback" and d["reasons"] == ["manual"] and live.served()["labels"]["3"] == 0


# -- a SIGKILL mid-canary ------------------------------------------------------------------------------
CANARY_RUN = [
    "model=tiny",
    "logger=none",
    "source=proxy",
    "judge=rule",
    "judge.reader_head=null",  # the rules alone: the default learned head loads the real SmolLM2 (slow tests only)
    "algo=reinforce",
    "mode=rl",
    "engine=hf",
    "source.port=0",
    "source.default_max_tokens=6",
    "batch_size=2",
    "optim.micro_batch_size=2",
    "optim.lr=1e-2",
    "guard=canary",
    "guard.checks=[canary]",
    "guard.canary.fraction=0.5",
    "guard.canary.timeout_s=600",
    "checkpoint_interval_s=0",
]


def test_sigkill_mid_canary_then_resume_serves_the_promoted_version(tmp_path, tiny_policy):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    args = [sys.executable, "train.py", *CANARY_RUN, "steps=3", f"run_dir={tmp_path}"]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    served = lambda: json.loads((tmp_path / "guard" / "served.json").read_text())  # noqa: E731
    try:
        users = Users(wait_url(tmp_path))
        for k in range(2):  # one rollout batch: the trainer's step 1 makes candidate 1, and its canary starts
            users.ask(f"warm-{k}")
            users.rate(f"warm-{k}", 1.0 if k else -1.0)
        assert wait_for(lambda: (tmp_path / "guard" / "served.json").exists() and served()["canary"], timeout=120)
        arms = {}
        for k in range(60):  # served.json names the canary (on disk first) a moment before the router is live:
            r = users.ask(f"mid-{k}")  # a session opened in between stays on the served weights, in neither arm
            if r.model_extra["claw"]["arm"] is not None:
                arms[r.model_extra["claw"]["turn_id"]] = r.model_extra["claw"]["arm"]
            if len(arms) >= 12:
                break
        assert set(arms.values()) == {"canary", "served"}
        proc.send_signal(signal.SIGKILL)  # mid-canary: no decision, no checkpoint of step 1
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert served()["canary"]["id"] == "c1-v1" and served()["version"] == 0

    import train

    (tmp_path / "proxy.json").unlink()
    probe = EngineWeights()
    stop = StopAtTrainStart()
    train.run(make_cfg([*CANARY_RUN, "steps=3"], tmp_path), extra_callbacks=[probe, stop])
    v0 = GuardDir(tmp_path).load_weights("v0-0.safetensors")
    assert same_weights(v0, probe.engine), "the engine must serve the promoted version 0, not the candidate"
    assert served()["canary"] is None and served()["version"] == 0 and served()["canaries"] == 1
    cut = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()][-1]
    assert cut["action"] == "hold" and "cut by a restart" in cut["reasons"][0]
    assert cut["evidence"]["canary"]["id"] == "c1-v1" and cut["evidence"]["canary"]["verdict"] == "cut"
    # The candidate really was served to its arm before the kill: its turns' log-probs are not version 0's.
    engine = scorer(tiny_policy, tiny_policy.model)
    engine.load_weights(v0.items(), version=0)
    records = turn_records(tmp_path)
    for turn_id, arm in arms.items():
        rec = records[turn_id]
        assert rec["arm"] == arm and rec["policy_version"] == (1 if arm == "canary" else 0)
        lp = torch.tensor(engine.score([rec["prompt_ids"]], [rec["response_ids"]], rec["temperature"])[0])
        close = torch.allclose(lp, torch.tensor(rec["rollout_logprobs"]), atol=1e-4)
        assert close == (arm == "served"), (arm, rec["rollout_logprobs"], lp.tolist())


class StopAtTrainStart(L.Callback):
    """Ends the resumed run before its first batch: what it serves at start-up is what the test checks."""

    def on_train_start(self, trainer, module):
        trainer.should_stop = True


def test_simulated_users_on_the_free_schedule_feed_a_canary(tmp_path):
    """source=simulated_user drives the proxy over HTTP: with schedule=free its sessions split by arm like live
    ones, and the users keep coming while the trainer waits, although the queue (4 samples) is full."""
    import train

    cfg = make_cfg(
        ["source=simulated_user", "source.schedule=free", "source.concurrency=4", "source.max_new_tokens=8",
         "source.eval_size=2", "model=tiny", "logger=none", "engine=hf", "judge=rule", "algo=reinforce", "mode=rl",
         "steps=1", "batch_size=4", "optim.micro_batch_size=4", "max_queue_size=4", "fsync=false",
         "guard=canary", "guard.checks=[canary]", "guard.canary.fraction=0.5", "guard.canary.timeout_s=10"],
        tmp_path,
    )  # fmt: skip
    train.run(cfg)
    d = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()][-1]
    c = d["evidence"]["canary"]
    assert c["id"] == "c1-v1" and c["sessions"]["canary"] > 0 and c["sessions"]["served"] > 0, c
    assert c["candidate"]["n"] > 0 and c["served"]["n"] > 0 and c["candidate"]["n"] + c["served"]["n"] > 4, c
    if c["verdict"] != "promote":  # the tiny model's arms hardly differ: usually timed out, then held
        assert d["action"] == "hold" and json.loads((tmp_path / "guard" / "served.json").read_text())["version"] == 0
    canary_turns = [r for r in turn_records(tmp_path).values() if r["canary"] == "c1-v1"]
    assert canary_turns and all(
        r["arm"] == ("canary" if canary_arm(r["session_id"], 0.5, "v1") else "served")
        and r["policy_version"] == (1 if r["arm"] == "canary" else 0)
        for r in canary_turns
    )
