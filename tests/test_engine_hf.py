"""The hf engine: exact sampled ids and log-probs, full-distribution sampling, weight sync."""

import torch

from claw.engine import HFEngine, SamplingParams
from claw.logprobs import response_logits, token_logprobs


def prompts(tok, n=4):
    out = []
    for k in range(n):
        ids = tok.apply_chat_template(
            [{"role": "user", "content": f"What is {k} + {k + 3}?"}], add_generation_prompt=True, tokenize=True
        )
        out.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    return out


def test_logprobs_match_trainer_recompute(tiny_policy):
    eng = HFEngine(tiny_policy, seed=1)
    ps = prompts(tiny_policy.tokenizer, 4)
    gens = eng.generate(ps, SamplingParams(temperature=0.7, max_new_tokens=12))
    for p, g in zip(ps, gens):
        assert len(g.response_ids) == len(g.logprobs) > 0
        ids = torch.tensor([p + g.response_ids])
        logits = response_logits(tiny_policy.model, ids, torch.ones_like(ids), len(p))
        lp = token_logprobs(logits, ids[:, len(p) :], 0.7)[0]
        assert torch.allclose(lp, torch.tensor(g.logprobs), atol=1e-4)
    # batched scoring of the same responses agrees as well (left padding handled)
    scored = eng.score(ps, [g.response_ids for g in gens], temperature=0.7)
    for s, g in zip(scored, gens):
        assert torch.allclose(torch.tensor(s), torch.tensor(g.logprobs), atol=1e-4)


def test_samples_beyond_top50(tiny_policy):
    # A random tiny model is near-uniform over 49k tokens: top_k=50 sampling would almost never
    # pick a token ranked below 50. Full-distribution sampling does so nearly always.
    eng = HFEngine(tiny_policy, seed=2)
    p = prompts(tiny_policy.tokenizer, 1)[0]
    g = eng.generate([p], SamplingParams(temperature=1.0, max_new_tokens=1))[0]
    ids = torch.tensor([p])
    logits = tiny_policy.model(input_ids=ids).logits[0, -1]
    ranks = []
    for _ in range(20):
        tok = eng.generate([p], SamplingParams(temperature=1.0, max_new_tokens=1))[0].response_ids[0]
        ranks.append(int((logits > logits[tok]).sum()))
    assert max(ranks) >= 50, ranks
    assert g.policy_version == 0


def test_greedy_is_deterministic_and_stops_at_eos(tiny_policy):
    eng = HFEngine(tiny_policy)
    ps = prompts(tiny_policy.tokenizer, 3)
    a = eng.generate(ps, SamplingParams(temperature=0.0, max_new_tokens=6))
    b = eng.generate(ps, SamplingParams(temperature=0.0, max_new_tokens=6))
    assert [g.response_ids for g in a] == [g.response_ids for g in b]
    eos = tiny_policy.tokenizer.eos_token_id
    forced = eng.generate(
        ps, SamplingParams(temperature=0.0, max_new_tokens=6, stop_token_ids=(a[0].response_ids[0],))
    )
    assert forced[0].response_ids == a[0].response_ids[:1] and forced[0].finished
    assert all(g.finished == (g.response_ids[-1] in (eos, a[0].response_ids[0])) for g in forced)


def test_finished_rows_do_not_change_others(tiny_policy):
    # Dropping finished rows from the batch must not alter the remaining rows' outputs.
    eng = HFEngine(tiny_policy)
    ps = prompts(tiny_policy.tokenizer, 3)
    full = eng.generate(ps, SamplingParams(temperature=0.0, max_new_tokens=8))
    stop = full[0].response_ids[1]
    cut = eng.generate(ps, SamplingParams(temperature=0.0, max_new_tokens=8, stop_token_ids=(stop,)))
    for f, c in zip(full, cut):
        n = len(c.response_ids)
        assert c.response_ids == f.response_ids[:n]
        assert torch.allclose(torch.tensor(c.logprobs), torch.tensor(f.logprobs[:n]), atol=1e-4)


def test_weight_sync_changes_generation_and_version(tiny_policy):
    import copy

    eng = HFEngine(tiny_policy)
    ps = prompts(tiny_policy.tokenizer, 2)
    before = eng.score(ps, [[10, 11, 12]] * 2)
    model = copy.deepcopy(tiny_policy.model)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    eng.load_weights(model.state_dict().items(), version=3)
    after = eng.score(ps, [[10, 11, 12]] * 2)
    assert eng.version == 3
    assert max(abs(x - y) for a, b in zip(before, after) for x, y in zip(a, b)) > 1e-3
    # and the trainer's copy was untouched by the engine
    assert not any(
        p.data_ptr() == q.data_ptr() for p, q in zip(eng.model.parameters(), tiny_policy.model.parameters())
    )


def test_weight_sync_does_not_wait_for_a_generation_in_flight(tiny_policy):
    import copy
    import threading
    import time

    eng = HFEngine(tiny_policy)
    ps = prompts(tiny_policy.tokenizer, 2)
    new = copy.deepcopy(tiny_policy.model)
    with torch.no_grad():
        for p in new.parameters():
            p.mul_(1.5)
    eng.lock.acquire()  # a generation is in flight
    t0 = time.perf_counter()
    eng.load_weights(new.state_dict().items(), version=7)
    assert time.perf_counter() - t0 < 5 and eng.version == 0  # staged, not yet applied
    result = []
    th = threading.Thread(target=lambda: result.append(eng.generate(ps, SamplingParams(0.0, 2))))
    th.start()
    eng.lock.release()
    th.join(30)
    assert eng.version == 7 and all(g.policy_version == 7 for g in result[0])


def test_scoring_in_row_chunks_gives_the_rows_one_pass_gives(tiny_policy):
    # Rows are scored `score_batch_size` at a time so memory does not grow with the row count; each row's
    # log-probs, top-k and guided mixture must be what one pass over every row gives (uneven lengths: the
    # left padding and the response width differ per chunk).
    tok = tiny_policy.tokenizer
    ps = prompts(tok, 5)
    ps[3] = ps[3] + tok.encode(" and then some more words", add_special_tokens=False)
    responses = [[10, 11, 12], [13], [14, 15, 16, 17, 18, 19], [20, 21], [22, 23, 24, 25]]
    whole, chunked = HFEngine(tiny_policy, score_batch_size=None), HFEngine(tiny_policy, score_batch_size=2)
    a = whole.score_topk(ps, responses, temperature=0.7, k=3)
    b = chunked.score_topk(ps, responses, temperature=0.7, k=3)
    assert len(a) == len(b) == len(responses)
    for (lp_a, ids_a, top_a), (lp_b, ids_b, top_b), r in zip(a, b, responses):
        assert len(lp_b) == len(r)
        assert torch.allclose(torch.tensor(lp_a), torch.tensor(lp_b), atol=1e-5)
        assert ids_a == ids_b
        assert torch.allclose(torch.tensor(top_a), torch.tensor(top_b), atol=1e-5)
    other = [p[:-1] for p in ps]
    g_a = whole.score_guided([ps, other], (1.5, -0.5), responses, temperature=1.0)
    g_b = chunked.score_guided([ps, other], (1.5, -0.5), responses, temperature=1.0)
    for (lp_a, _, _), (lp_b, _, _) in zip(g_a, g_b):
        assert torch.allclose(torch.tensor(lp_a), torch.tensor(lp_b), atol=1e-5)


def test_score_batch_size_must_be_positive(tiny_policy):
    import pytest

    with pytest.raises(ValueError, match="score_batch_size"):
        HFEngine(tiny_policy, score_batch_size=0)


def test_score_batch_size_comes_from_the_engine_config(tiny_policy):
    # `engine.score_batch_size` (conf/engine/hf.yaml) reaches the engine `python train.py` builds; null = one pass
    from claw.config import build
    from tests.conftest import make_cfg

    for value, expected in (("3", 3), ("null", None)):
        cfg = make_cfg(["model=tiny", "engine=hf", f"engine.score_batch_size={value}"])
        engine = build(cfg.engine, policy=tiny_policy, seed=0)
        assert isinstance(engine, HFEngine) and engine.score_batch_size == expected
