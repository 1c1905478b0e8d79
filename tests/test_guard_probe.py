"""The guard's probe-set check (claw/guard/probe.py): probe sets distinct from the final evaluation set,
greedy decoding with the trainer's weights, the decision with `guard.checks`, and `guard=probe` in train.py."""

import json

import pytest
import torch

from claw.engine.base import SamplingParams
from claw.engine.hf import HFEngine
from claw.guard import Thresholds, decide
from claw.guard.decision import Evidence
from claw.guard.ope import OPEEstimate
from claw.guard.probe import FileProbe, ModelGenerator, VerifierProbe, greedy_generate, probe_tasks
from claw.sources.simulated_user import SimulatedUserSource
from claw.tasks import arithmetic
from claw.users import Persona
from tests.conftest import TINY, make_cfg

T = Thresholds(probe_margin=0.05)


def prompts(tokenizer, texts):
    return [
        tokenizer.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True)[
            "input_ids"
        ]
        for t in texts
    ]


# -- which items a probe uses --------------------------------------------------------------------
@pytest.mark.parametrize("persona", ["student", "teacher"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_persona_probe_tasks_never_overlap_the_final_evaluation_set(persona, seed):
    p = Persona.load(persona)
    for eval_size in (8, 64):
        final = p.tasks("eval", eval_size, seed=seed)  # what SimulatedUserSource evaluates
        probe = probe_tasks(p, final, 16, seed)
        train = p.tasks("train", 512, seed=seed * 100003)  # the first block of training tasks
        assert len(probe) == 16 and len({t["id"] for t in probe}) == 16
        assert not {t["id"] for t in probe} & {t["id"] for t in final}
        assert not {t["question"] for t in probe} & {t["question"] for t in final}
        assert not {t["id"] for t in probe} & {t["id"] for t in train}  # held out from training too
        assert probe == probe_tasks(p, final, 16, seed)  # fixed for the run


def test_verifier_probe_uses_held_out_rows_after_the_evaluation_set(tiny_policy):
    cfg = make_cfg(TINY)
    rows = arithmetic.load(cfg.source.eval_path)

    class Source:
        tokenizer = tiny_policy.tokenizer
        eval_sampling = SamplingParams(0.0, 8)

    probe = VerifierProbe(Source(), cfg.source.eval_path, eval_size=4, size=3, max_new_tokens=None)
    assert probe.items == rows[4:7] and not {r["question"] for r in probe.items} & {r["question"] for r in rows[:4]}
    assert probe.sampling == SamplingParams(0.0, 8)
    with pytest.raises(ValueError, match="lower guard.probe.size"):
        VerifierProbe(Source(), cfg.source.eval_path, eval_size=len(rows) - 2, size=3, max_new_tokens=None)


# -- decoding with the trainer's weights -----------------------------------------------------------
def test_greedy_generate_matches_the_hf_engine_greedy(tiny_policy):
    tok = tiny_policy.tokenizer
    ps = prompts(tok, ["What is 3 times 4?", "Name a colour."])
    engine = HFEngine(tiny_policy, seed=0)
    for p in ps:  # one prompt at a time: the engine drops finished rows, so batches differ in shape
        ours = greedy_generate(tiny_policy.model, [p], 10, {tok.eos_token_id}, tok.pad_token_id)[0]
        theirs = engine.generate([p], SamplingParams(temperature=0.0, max_new_tokens=10))[0].response_ids
        assert ours == theirs and len(ours) >= 1
    gens = ModelGenerator(tiny_policy.model, tok, version=5).generate(ps, SamplingParams(0.0, 10))
    assert [g.policy_version for g in gens] == [5, 5]
    with pytest.raises(ValueError, match="greedily"):
        ModelGenerator(tiny_policy.model, tok, 0).generate(ps, SamplingParams(0.7, 10))


def test_greedy_generate_follows_the_weights_it_is_given(tiny_policy):
    import copy

    tok = tiny_policy.tokenizer
    ps = prompts(tok, ["What is 3 times 4?", "Name a colour.", "Hello"])
    model = copy.deepcopy(tiny_policy.model)
    before = greedy_generate(model, ps, 8, {tok.eos_token_id}, tok.pad_token_id)
    torch.manual_seed(0)
    with torch.no_grad():
        for w in model.parameters():
            w.add_(torch.randn_like(w))
    after = greedy_generate(model, ps, 8, {tok.eos_token_id}, tok.pad_token_id)
    assert before != after


def length_reward(text: str, item: dict) -> float:
    """A reward that varies with the reply (the tiny model passes no real criterion): for the file-probe test."""
    return min(len(text), 40) / 40


def test_file_probe_scores_replies_with_the_configured_reward(tiny_policy, tmp_path):
    tok = tiny_policy.tokenizer
    path = tmp_path / "probes.jsonl"
    items = [
        {"prompt": "What is 3 times 4?", "expected": "12"},
        {"messages": [{"role": "user", "content": "Say hi"}], "expected": "hi"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in items) + "\n\n")
    gen = ModelGenerator(tiny_policy.model, tok, 0)
    texts = [
        tok.decode(t, skip_special_tokens=True)
        for t in greedy_generate(
            tiny_policy.model, prompts(tok, ["What is 3 times 4?", "Say hi"]), 6, {tok.eos_token_id}, tok.pad_token_id
        )
    ]

    custom = FileProbe(str(path), "tests.test_guard_probe:length_reward", tok, size=16, max_new_tokens=6).score(gen)
    assert custom.n == 2 and custom.scores == tuple(length_reward(t, {}) for t in texts)
    assert custom.score == pytest.approx(sum(custom.scores) / 2)
    contains = FileProbe(str(path), "contains", tok, size=1, max_new_tokens=6).score(gen)
    assert contains.n == 1 and contains.score == float("12" in texts[0].lower())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no prompt"}\n')
    with pytest.raises(ValueError, match="line 1"):
        FileProbe(str(bad), "contains", tok, size=4, max_new_tokens=6)
    with pytest.raises(ValueError, match="package.module:function"):
        FileProbe(str(path), "nonsense", tok, size=4, max_new_tokens=6)


def test_persona_probe_rates_the_trainer_s_weights_like_the_evaluation_rates_the_engine_s(tiny_policy, tmp_path):
    engine = HFEngine(tiny_policy, seed=0)
    src = SimulatedUserSource(
        engine, tiny_policy.tokenizer, tmp_path, persona="student", eval_size=4, max_new_tokens=8, fsync=False
    )
    from claw.guard.probe import PersonaProbe

    probe = PersonaProbe(src, size=2, max_new_tokens=None)
    assert not {t["id"] for t in probe.tasks} & {t["id"] for t in src.eval_tasks}
    via_trainer = src.evaluate(
        tasks=probe.tasks[:1],
        generate=ModelGenerator(tiny_policy.model, tiny_policy.tokenizer, 3).generate,
        sampling=probe.sampling,
    )
    via_engine = src.evaluate(
        tasks=probe.tasks[:1]
    )  # the same weights in the engine: the same replies, the same rating
    assert (
        via_trainer.examples[0]["response"] == via_engine.examples[0]["response"]
        and via_trainer.scores == via_engine.scores
    )
    assert via_trainer.policy_version == 3 and via_trainer.n == 1
    assert probe.score(ModelGenerator(tiny_policy.model, tiny_policy.tokenizer, 0)).n == 2


# -- the decision --------------------------------------------------------------------------------
def ope(value, n=16):
    return OPEEstimate(value, value - 0.1, value + 0.1, 16.0, n, "snis")


def test_decide_with_the_probe_check():
    probe_only = ("probe",)
    assert (
        decide(Evidence(probe_candidate=0.6, probe_served=0.62), T, probe_only).action == "promote"
    )  # within the margin
    d = decide(Evidence(probe_candidate=0.5, probe_served=0.6), T, probe_only)
    assert d.action == "hold" and "probe 0.500 < served 0.600" in d.reasons[0]
    d = decide(Evidence(probe_candidate=0.5), T, probe_only)
    assert d.action == "hold" and "no probe score" in d.reasons[0]  # never promote unchecked
    # the OPE check is off: no logged turns needed; on: the same evidence holds for lack of turns
    assert decide(Evidence(probe_candidate=0.6, probe_served=0.6), T, ("probe", "kl")).action == "promote"
    assert decide(Evidence(probe_candidate=0.6, probe_served=0.6), T, ("ope", "kl", "probe")).action == "hold"
    both = Evidence(candidate=ope(0.5), served=ope(0.5), kl=0.01, probe_candidate=0.3, probe_served=0.6)
    assert decide(both, T, ("ope", "kl", "probe")).reasons == ("probe 0.300 < served 0.600 - 0.05",)
    assert decide(Evidence(candidate=ope(0.5), served=ope(0.5), kl=0.2), T, ("ope",)).action == "promote"  # kl off


# -- the whole loop --------------------------------------------------------------------------------
PROBE = [*TINY, "guard=probe", "engine=hf", "guard.probe.size=4", "guard.probe.max_new_tokens=6"]


def test_train_with_the_probe_alone_promotes_and_records_probe_scores(tmp_path):
    import train

    train.run(
        make_cfg([*PROBE, "guard.checks=[probe]", "guard.thresholds.probe_margin=1"], tmp_path)
    )  # probe scores lie in [0, 1]
    lines = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines] == ["promote", "promote"]
    for x in lines:
        ev = x["evidence"]
        assert (
            0.0 <= ev["probe_candidate"] <= 1.0 and ev["probe_served"] is not None and ev["candidate"] is None
        )  # no OPE
    served = json.loads((tmp_path / "guard" / "served.json").read_text())
    assert served["version"] == 2 and set(served["probe"]) == {"0", "1", "2"}
    assert served["probe"]["2"] == lines[1]["evidence"]["probe_candidate"]
    assert (
        lines[1]["evidence"]["probe_served"] == lines[0]["evidence"]["probe_candidate"]
    )  # version 1 served at step 2


def test_train_with_ope_and_probe_holds_on_a_probe_that_cannot_pass(tmp_path):
    import train

    permissive = [
        "guard.thresholds.max_kl=100",
        "guard.thresholds.min_samples=1",
        "guard.thresholds.min_ess_fraction=0",
    ]
    train.run(
        make_cfg([*PROBE, *permissive, "guard.thresholds.probe_margin=-1.5"], tmp_path)
    )  # cand < served + 1.5: always
    lines = [json.loads(x) for x in (tmp_path / "guard.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines] == ["hold", "hold"]
    assert all(any(r.startswith("probe ") for r in x["reasons"]) for x in lines)
    assert json.loads((tmp_path / "guard" / "served.json").read_text())["version"] == 0
