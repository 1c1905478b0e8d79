"""`source=simulated_user`: personas drive the agent through the real proxy over HTTP (tiny model)."""

from __future__ import annotations

import json
import math
import time

import pytest
import yaml

from claw.engine.hf import HFEngine
from claw.evaluation import PersonaEval, mean_ci, paired_test, seeds_summary
from claw.judge.build import build_judges
from claw.judge.drift import opens_with_apology
from claw.judge.teacher import build_teacher
from claw.rollout.queue import RolloutQueue
from claw.sources.simulated_user import SimulatedUserSource
from tests.conftest import make_cfg
from tests.test_proxy import JUDGE


def run_source(
    policy,
    run_dir,
    persona="student",
    sessions=6,
    mode="combine",
    engine=None,
    concurrency=4,
    schedule="free",
    **kwargs,
):
    engine = engine or HFEngine(policy, seed=0)
    teacher = build_teacher("frozen", policy, engine, "{content}\n\n[hint] {hint}") if mode != "rl" else None
    src = SimulatedUserSource(engine, policy.tokenizer, run_dir, mode=mode, judges=build_judges(JUDGE),
                              teacher=teacher, fsync=False, persona=persona, max_sessions=sessions, max_new_tokens=12,
                              eval_size=4, concurrency=concurrency, schedule=schedule, **kwargs)  # fmt: skip
    queue = RolloutQueue(run_dir / "samples.jsonl", max_size=10_000, fsync=False)
    src.start(queue)
    deadline = time.monotonic() + 120
    while not src.exhausted and time.monotonic() < deadline:
        time.sleep(0.1)
    src.proxy.run_in_loop(src.proxy.proxy.drain(30), timeout=60)
    src.stop()
    return src, list(queue.store.samples()), [r for r in src.proxy.proxy.log.read()]


def test_sessions_run_concurrently_through_the_proxy_and_become_samples(tiny_policy, tmp_path):
    src, samples, log = run_source(tiny_policy, tmp_path, sessions=6)
    turns = [r for r in log if r["kind"] == "turn"]
    sessions = {t["session_id"] for t in turns}
    assert src.sessions_done == 6 and len(sessions) == 6 and all(s.startswith("sim-") for s in sessions)
    assert src.proxy.batcher.stats()["batch_size_max"] > 1  # concurrent sessions shared engine calls
    # the tiny random model fails the student's criteria: every turn is corrected, so every turn has a signal
    assert samples and all(s.reward == -1.0 for s in samples)
    assert all(s.teacher_logprobs is not None and len(s.teacher_logprobs) == len(s.response_ids) for s in samples)
    ends = [r for r in log if r["kind"] == "end"]
    assert len(ends) == 6 and all(
        r["reason"] == "end_call" for r in ends
    )  # each session's last turn got its final message
    assert len(samples) == len(turns)  # no turn lost: every main turn was judged into a sample


def test_the_training_signal_comes_only_from_what_the_user_says(tiny_policy, tmp_path):
    """A persona whose hidden criteria can never be met but whose user *says* thanks for a miss: the
    samples must carry +1 (the words), not the rating of 0. Reading the hidden score would give −1/0."""
    persona = yaml.safe_load(open("personas/student.yaml"))
    persona["name"] = "polite_liar"
    persona["turn_limit"] = 1
    persona["criteria"] = [{"id": "impossible", "kind": "matches", "params": {"pattern": "^ZZZ-never-ZZZ$"},
                            "pass_phrases": [], "fail_phrases": ["Thanks, that's great!"]}]  # fmt: skip
    persona["closing"] = ["Cheers, perfect."]
    persona["ack_probability"] = 0.0
    path = tmp_path / "polite_liar.yaml"
    path.write_text(yaml.safe_dump(persona))
    src, samples, _ = run_source(tiny_policy, tmp_path, persona=str(path), sessions=3, mode="rl")
    assert src.evaluate().score == 0.0  # the hidden rating: nothing met
    assert samples and all(s.reward == 1.0 for s in samples)
    leaked = [k for s in samples for k in ("rating", "score", "passed") if k in s.info or k in s.to_json()]
    assert not leaked


def test_a_persona_written_for_the_test_yields_training_signal(tiny_policy, tmp_path):
    persona = {
        "name": "terse_sailor",
        "description": "wants replies with a number and nothing else",
        "tasks": {"generator": "word_problems", "params": {"kinds": ["shopping"], "max_steps": 1}},
        "opening": ["Ahoy, quick one: {question}"],
        "turn_limit": 2,
        "criteria": [
            {
                "id": "tiny",
                "kind": "max_words",
                "params": {"n": 3},
                "pass_phrases": [],
                "fail_phrases": ["Way too wordy, sailor, three words at most instead."],
            }
        ],  # fmt: skip
        "thanks": ["Aye, cheers!"],
        "closing": ["I'll sail on alone."],
    }
    path = tmp_path / "terse_sailor.yaml"
    path.write_text(yaml.safe_dump(persona))
    _, samples, _ = run_source(tiny_policy, tmp_path, persona=str(path), sessions=3)
    assert (
        samples and any(s.reward is not None for s in samples) and any(s.teacher_logprobs is not None for s in samples)
    )
    assert any("three words" in (s.info.get("hint") or "") for s in samples)


def test_tool_persona_runs_the_tool_path_end_to_end(tiny_policy, tmp_path):
    from tests.test_proxy import ScriptedEngine

    call = '<tool_call>\n{"name": "read_file", "arguments": {"path": "homework.txt"}}\n</tool_call>'
    engine = ScriptedEngine(HFEngine(tiny_policy), [call, "It is 12."] * 20)
    _, samples, log = run_source(
        tiny_policy, tmp_path, persona="student_file", sessions=1, mode="rl", engine=engine, concurrency=1
    )
    next_states = [r for r in log if r["kind"] == "next_state"]
    assert (
        next_states and next_states[0]["messages"][0]["role"] == "tool"
    )  # the tool result is the tool-call turn's next state
    first = next(s for s in samples if s.turn_index == 0)
    assert first.reward == 1.0  # the file was read: the tool succeeded


def test_statistics_are_scipys_named_tests():
    from scipy import stats

    m, lo, hi = mean_ci([0.0, 1.0] * 20)
    t_half = stats.t.ppf(0.975, 39) * stats.tstd([0.0, 1.0] * 20) / 40**0.5  # Student's t interval, not a normal one
    assert m == 0.5 and abs((hi - lo) / 2 - t_half) < 1e-12
    assert paired_test([0.0] * 40, [1.0] * 40).p == 0.0 and paired_test([0.5] * 40, [0.5] * 40).p == 1.0
    assert paired_test([0.0, 1.0] * 20, [0.0, 1.0] * 20).p == 1.0
    rng = __import__("random").Random(0)
    before = [rng.choice([0.25, 0.5, 0.75]) for _ in range(64)]
    after = [min(1.0, b + rng.choice([0.0, 0.25, 0.5])) for b in before]
    test = paired_test(before, after)
    assert test.p == stats.ttest_rel(after, before).pvalue  # the real t distribution, not a normal approximation
    assert test.gain_low < test.gain < test.gain_high and test.gain == sum(after) / 64 - sum(before) / 64
    assert seeds_summary([0.9, 0.95, 1.0]) == pytest.approx((0.95, stats.tstd([0.9, 0.95, 1.0])))


@pytest.mark.parametrize(
    "reply",
    ["You're right, I was too quick. The correct answer is 24.", "I'm sorry for the confusion, I will clarify.",
     "Sorry! 4 x 6 = 24.", "  My apologies: the answer is 8.", "You are correct, it is 6.", "I apologize, 12."],
)  # fmt: skip
def test_a_reply_that_opens_by_conceding_counts_as_apology_drift(reply):
    assert opens_with_apology(reply)


@pytest.mark.parametrize(
    "reply",
    ["You got it right, well done: 24 is correct.", "Good effort! You're close, but 4 x 6 = 24.",
     "4 x 6 = 24, so she spends $24.", "Your answer is not right, sorry: it should be 8.", "", None],
)  # fmt: skip
def test_a_comment_that_only_mentions_right_or_sorry_later_is_not_apology_drift(reply):
    assert not opens_with_apology(reply)


def test_the_apology_rate_is_reported_beside_the_rating_and_never_changes_it():
    ev = PersonaEval("teacher", 0.5, 4, 0.4, 0.6, 8, {"you": 1.0}, [0.5] * 4, [],
                     ["You're right, 24.", "Well done, you got 24.", "I'm sorry, 8.", "Good effort: 6."])  # fmt: skip
    assert ev.apology_rate == 0.5 and ev.score == 0.5
    assert ev.metrics()["eval/apology_rate"] == 0.5 and ev.to_json()["apology_rate"] == 0.5
    before = {**ev.to_json(), "apology_rate": 0.0}
    table, _ = ev.report(before, steps=8, wall_s=60.0)
    assert "apology opening (unrated)    0.000    0.500" in table
    assert math.isnan(PersonaEval("teacher", 0.5, 0, 0.0, 1.0, 0, {}).apology_rate)  # no responses kept, no rate


def test_a_short_combine_run_trains_from_simulated_users(tmp_path):
    from train import run

    cfg = make_cfg(["model=tiny", "logger=none", "experiment=personal_agent", "model=tiny", "steps=2", "batch_size=8",
                    "optim.micro_batch_size=8", "source.max_new_tokens=12", "source.eval_size=4", "fsync=false",
                    "eval_every=1"], tmp_path)  # fmt: skip
    summary = run(cfg)
    assert summary["steps"] == 2
    ev = summary["eval"]
    assert {"before", "step_1", "after"} <= set(ev) and ev["after"]["n"] == 4 and "ttest_rel_p" in ev
    assert set(ev["after"]["pass_rates"]) == {"no_stock_opener", "short", "shows_working", "answer_correct"}
    assert len(ev["after"]["responses"]) == 4 and 0.0 <= ev["after"]["apology_rate"] <= 1.0


def test_llm_user_type_drives_sessions_with_any_openai_compatible_model(tiny_policy, tmp_path):
    """user=llm: the persona prompt drives a chat model behind an OpenAI-compatible server — here a second
    claw proxy serving the tiny model (its own run directory), so every call is a real HTTP round trip."""
    from claw.sources.proxy.source import ProxySource

    sim_dir = tmp_path / "simulator"
    sim_dir.mkdir()
    simulator = ProxySource(
        HFEngine(tiny_policy, seed=1), tiny_policy.tokenizer, sim_dir, port=0, fsync=False, default_max_tokens=8
    )
    simulator.start(RolloutQueue(sim_dir / "samples.jsonl", fsync=False))
    try:
        agent_dir = tmp_path / "agent"
        agent_dir.mkdir()
        src, samples, log = run_source(
            tiny_policy,
            agent_dir,
            sessions=2,
            mode="rl",
            user="llm",
            user_llm={"base_url": simulator.url, "model": "sim"},
        )
    finally:
        simulator.stop()
    assert src.sessions_done == 2
    assert len([r for r in log if r["kind"] == "turn"]) >= 2  # the agent was asked and answered
    sim_turns = [r for r in simulator.proxy.log.read() if r["kind"] == "turn"]
    assert sim_turns and sim_turns[0]["messages"][0]["role"] == "system"  # the simulator got the persona prompt
    assert "homework" in sim_turns[0]["messages"][0]["content"].lower()


def _run_lockstep(policy, run_dir, sessions=6, per_round=3, batch_size=4, **kwargs):
    """A lockstep source with a stand-in trainer: it takes batches, bumps the engine's version (same
    weights) and commits, as the real trainer does after its weight sync."""
    import threading

    engine = HFEngine(policy, seed=0)
    teacher = build_teacher("frozen", policy, engine, "{content}\n\n[hint] {hint}")
    src = SimulatedUserSource(engine, policy.tokenizer, run_dir, mode="combine", judges=build_judges(JUDGE),
                              teacher=teacher, fsync=False, persona="student", max_sessions=sessions,
                              max_new_tokens=12, eval_size=4, schedule="lockstep", sessions_per_round=per_round,
                              proxy={"max_batch_size": 1}, **kwargs)  # fmt: skip
    # max_batch_size=1: each request decodes alone, so the logits are bit-identical between the two runs. With
    # batching, left padding changes the float sums by ~1e-7 and, on this near-uniform random model, a seeded
    # draw can land on a neighbouring token now and then; the real model's runs repeated exactly (README).
    queue = RolloutQueue(run_dir / "samples.jsonl", max_size=10_000, fsync=False)
    batches: list[list] = []
    stop = threading.Event()
    weights = dict(policy.model.state_dict())

    def trainer():
        while not stop.is_set():
            taken = queue.take(batch_size, engine.version, timeout=0.2)
            if taken is None:
                continue
            batches.append(taken.samples)
            engine.load_weights(weights.items(), version=engine.version + 1)
            queue.commit(taken.cursor_end)

    t = threading.Thread(target=trainer, daemon=True)
    t.start()
    src.start(queue)
    deadline = time.monotonic() + 180
    while not src.exhausted and time.monotonic() < deadline:
        time.sleep(0.1)
    while len(queue) and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    t.join(5)
    src.stop()
    return src, batches


def test_lockstep_rounds_form_their_own_batches_on_one_version_and_repeat_exactly(tiny_policy, tmp_path):
    src, batches = _run_lockstep(tiny_policy, tmp_path / "a")
    assert src.sessions_done == 6 and batches
    for batch in batches:
        rounds = {int(s.session_id.rsplit("-", 1)[1]) // 3 for s in batch}
        assert len(rounds) == 1, f"a batch spans rounds {rounds}"
        assert len({s.policy_version for s in batch}) == 1  # one version per batch: staleness 0
    first_round = [s for b in batches for s in b if int(s.session_id.rsplit("-", 1)[1]) < 3]
    later = [s for b in batches for s in b if int(s.session_id.rsplit("-", 1)[1]) >= 3]
    assert max(s.policy_version for s in first_round) < min(
        s.policy_version for s in later
    )  # round 2 waited for training
    # the same config and seed: the same turns, token for token, whatever the timing
    _, again = _run_lockstep(tiny_policy, tmp_path / "b")
    key = lambda s: (s.session_id, s.turn_index)  # noqa: E731
    one = sorted(((key(s), s.response_ids, s.reward) for b in batches for s in b), key=lambda x: x[0])
    two = sorted(((key(s), s.response_ids, s.reward) for b in again for s in b), key=lambda x: x[0])
    assert one == two


def test_sessions_of_one_task_form_a_group_that_trains_in_one_batch(tiny_policy, tmp_path):
    """source.n=2: sessions 2j and 2j+1 open task j; their first turns share a group id (so GRPO compares
    them), later turns stay groups of one, and every group lands whole in one batch."""
    from claw.types import collate

    src, batches = _run_lockstep(tiny_policy, tmp_path, sessions=8, per_round=4, batch_size=4, n=2)
    samples = [s for b in batches for s in b]
    assert src.sessions_done == 8 and samples
    k = lambda s: int(s.session_id.rsplit("-", 1)[1])  # noqa: E731
    first = [s for s in samples if s.turn_index == 0]
    assert {s.group_id for s in first} <= {f"sim-0-task-{j}" for j in range(4)}
    for s in first:
        assert s.group_id == f"sim-0-task-{k(s) // 2}"
    assert len({s.group_id for s in first}) < len(first)  # some task's two sessions both trained
    assert all(s.group_id == s.sample_id for s in samples if s.turn_index > 0)
    for a in first:  # the same task: the same opening message
        for b in first:
            if a.group_id == b.group_id:
                assert a.info["prompt"] == b.info["prompt"]
    for batch in batches:  # a group never straddles two batches
        groups = {s.group_id for s in batch}
        assert all(s.group_id not in groups for other in batches if other is not batch for s in other)
        index = collate(batch, pad_id=0).group_index.tolist()
        for i, a in enumerate(batch):
            for j, b in enumerate(batch):
                assert (index[i] == index[j]) == (a.group_id == b.group_id)


@pytest.mark.parametrize("kwargs", [{"n": 3, "sessions_per_round": 4}, {"n": 2, "schedule": "free"}, {"n": 0}])
def test_sessions_per_task_must_fit_a_round(tiny_policy, tmp_path, kwargs):
    with pytest.raises(ValueError, match="source.n"):
        SimulatedUserSource(HFEngine(tiny_policy, seed=0), tiny_policy.tokenizer, tmp_path, persona="student",
                            **{"schedule": "lockstep", **kwargs})  # fmt: skip


def test_round_boundaries_end_a_batch_early(tmp_path):
    from claw.types import Sample

    q = RolloutQueue(tmp_path / "s.jsonl", fsync=False)
    q.rounds = True  # as the lockstep driver sets it (outside rounds, a boundary never cuts a batch)
    mk = lambda i: Sample([1], [2], [-0.1], 0.7, 0, reward=1.0, group_id=str(i))  # noqa: E731
    q.put([mk(0)])
    q.put([mk(1)])
    q.end_round()
    q.end_round()  # an empty round adds no second boundary
    q.put([mk(2)])
    assert [s.group_id for s in q.take(8, 0, timeout=0.1).samples] == ["0", "1"]
    assert q.take(8, 0, timeout=0.1) is None  # the next round is not complete: its sample waits
    q.end_round()
    assert [s.group_id for s in q.take(8, 0, timeout=0.1).samples] == ["2"]


@pytest.mark.parametrize("schedule", ["free", "lockstep"])
def test_a_resumed_source_never_reuses_a_session_id_that_recovery_reopened(tiny_policy, tmp_path, schedule):
    run_source(tiny_policy, tmp_path, sessions=2, concurrency=2, schedule=schedule)
    # What a kill -9 can leave: session 0's first request still in flight (nothing logged), session 1 with a
    # turn and no end, so the restarted proxy reopens sim-0-1.
    path = tmp_path / "proxy.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    gone = {r["turn_id"] for r in records if r.get("session_id") == "sim-0-0" and "turn_id" in r}
    kept = [
        r for r in records if r.get("session_id") != "sim-0-0" and r.get("turn_id") not in gone and r["kind"] != "end"
    ]
    assert any(r["kind"] == "turn" and r["session_id"] == "sim-0-1" for r in kept)
    assert {r["user"] for r in kept if r["kind"] == "turn"} == {"student"}  # each turn says whose it is
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))

    src, _, log = run_source(tiny_policy, tmp_path, sessions=4, concurrency=2, schedule=schedule)
    assert src.proxy.proxy.counts["recovered_turns"] >= 1  # sim-0-1 came back open
    new = {r["session_id"] for r in log[len(kept) :] if r["kind"] == "turn"}
    assert new == {"sim-0-2", "sim-0-3"}, f"sessions run after the restart: {sorted(new)}"
    assert src.sessions_done == 4


def test_in_rounds_nothing_is_handed_out_before_its_round_ends(tmp_path):
    # lockstep: a trainer that took 4 of a round's 9 samples mid-round would update the weights the rest of
    # the round still samples with; with `rounds` on the queue waits for the round's end
    from claw.types import Sample

    q = RolloutQueue(tmp_path / "s.jsonl", fsync=False)
    q.rounds = True
    mk = lambda i: Sample([1], [2], [-0.1], 0.7, 0, reward=1.0, group_id=str(i))  # noqa: E731
    for i in range(5):
        q.put([mk(i)])
    assert q.take(4, 0, timeout=0.1) is None  # 5 samples waiting, but the round is still running
    q.end_round()
    assert [s.group_id for s in q.take(4, 0, timeout=0.1).samples] == ["0", "1", "2", "3"]
    assert [s.group_id for s in q.take(4, 0, timeout=0.1).samples] == ["4"]


def test_trained_turns_are_sampled_at_the_configured_temperature(tiny_policy, tmp_path):
    """The agent's requests carry `source.temperature`, and every sample records it (the engine samples and scores
    at it). The class default is the shipped config's, so a source built in code trains as `train.py` does."""
    import inspect

    shipped = yaml.safe_load(open("conf/source/simulated_user.yaml"))["temperature"]
    default = inspect.signature(SimulatedUserSource).parameters["temperature"].default
    assert default == shipped == 0.4
    _, samples, _ = run_source(tiny_policy, tmp_path, sessions=2, temperature=0.3)
    assert samples and all(s.temperature == pytest.approx(0.3) for s in samples)
