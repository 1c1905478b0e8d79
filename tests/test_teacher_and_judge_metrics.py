"""Teacher choice (frozen / current / separate checkpoint) and the judge/ metrics."""

import copy

import pytest
import torch

from claw.engine import HFEngine
from claw.judge.hint import HintResult
from claw.judge.metrics import JudgeStats
from claw.judge.prm import PRMResult
from claw.judge.teacher import build_teacher

MSGS = [{"role": "user", "content": "What is 2 + 3?"}]


def test_frozen_teacher_ignores_weight_sync_and_current_follows_it(tiny_policy):
    engine = HFEngine(tiny_policy)
    frozen = build_teacher("frozen", tiny_policy, engine, "{content}\n\n[hint] {hint}")
    current = build_teacher("current", tiny_policy, engine, "{content}\n\n[hint] {hint}")
    resp = [[11, 12, 13]]
    f0 = frozen.logprobs([MSGS], ["It is 5."], resp, 0.8)[0][0]
    c0 = current.logprobs([MSGS], ["It is 5."], resp, 0.8)[0][0]
    assert f0 == pytest.approx(c0, abs=1e-5)
    moved = copy.deepcopy(tiny_policy.model)
    with torch.no_grad():
        for p in moved.parameters():
            p.add_(0.05 * torch.randn_like(p))
    engine.load_weights(moved.state_dict().items(), version=1)  # the trainer's sync reaches only the rollout engine
    f1 = frozen.logprobs([MSGS], ["It is 5."], resp, 0.8)[0][0]
    c1 = current.logprobs([MSGS], ["It is 5."], resp, 0.8)[0][0]
    assert f1 == pytest.approx(f0, abs=1e-6)
    assert max(abs(a - b) for a, b in zip(c1, c0)) > 1e-3


def test_teacher_rejects_greedy_and_a_checkpoint_with_another_vocabulary(tiny_policy, tmp_path):
    teacher = build_teacher("frozen", tiny_policy, HFEngine(tiny_policy), "{content} {hint}")
    with pytest.raises(ValueError, match="temperature"):
        teacher.logprobs([MSGS], ["h"], [[5]], 0.0)
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_policy.tokenizer.name_or_path)
    tok.add_tokens(["<extra-token>"])
    other = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=64,
        )
    )
    other.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="vocabulary"):
        build_teacher(str(tmp_path), tiny_policy, HFEngine(tiny_policy), "{content} {hint}")


def test_judge_stats_hand_computed():
    stats = JudgeStats()
    stats.add_prm(PRMResult(score=1, votes=[1, 1, None], agreement=1.0, n_abstain=1, rationale="", latency_s=0.2))
    stats.add_prm(PRMResult(score=0, votes=[1, -1, 0], agreement=1 / 3, n_abstain=0, rationale="", latency_s=0.4))
    stats.add_prm(
        PRMResult(
            score=0, votes=[None, None, None], agreement=0.0, n_abstain=3, rationale="", latency_s=0.6, error="timeout"
        )
    )
    stats.add_hint(
        HintResult(accepted=True, hint="shorter", votes=[1, 1, -1], n_positive=2, agreement=2 / 3, latency_s=1.0)
    )
    stats.add_hint(
        HintResult(accepted=False, hint=None, votes=[-1, -1, 1], n_positive=1, agreement=2 / 3, latency_s=3.0)
    )
    s = stats.summary()
    assert s["judge/turns"] == 3
    assert s["judge/score_pos_frac"] == pytest.approx(1 / 3) and s["judge/score_zero_frac"] == pytest.approx(2 / 3)
    assert s["judge/abstain_rate"] == pytest.approx(4 / 9)  # 1 + 0 + 3 abstentions over 9 votes
    assert s["judge/vote_agreement"] == pytest.approx((1.0 + 1 / 3) / 2)  # the all-abstain turn has no agreement
    assert s["judge/prm_latency_s"] == pytest.approx(0.4)
    assert s["judge/hint_accept_rate"] == 0.5 and s["judge/hint_latency_s"] == 2.0
    assert s["judge/failed_calls"] == 1
    assert stats.summary()["judge/turns"] == 0  # reset after reading
