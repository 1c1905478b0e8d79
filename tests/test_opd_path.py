"""OPD without judges on source=dataset: the verifier's feedback is the hint, a frozen copy of the
initial policy is the teacher, and its log-probs are aligned with the response at the sample's temperature."""

import asyncio

import pytest
import torch

from claw.engine import HFEngine
from claw.engine.base import Generation
from claw.judge.hint import append_hint
from claw.judge.teacher import Teacher
from claw.sources.dataset import DatasetSource

PATHS = ("data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl")
MSGS = [{"role": "user", "content": "What is 2 + 3?"}]


def source(policy, hint_format="{content}\n\n[hint] {hint}", **kw):
    engine = HFEngine(policy, seed=3)
    teacher = Teacher(HFEngine(policy), policy.tokenizer, hint_format)
    return DatasetSource(
        engine,
        policy.tokenizer,
        *PATHS,
        n=2,
        prompts_per_generate=2,
        max_new_tokens=6,
        temperature=0.7,
        teacher=teacher,
        **kw,
    )


def test_teacher_equals_student_when_the_hint_changes_nothing(tiny_policy):
    # Identical context and weights => teacher log-probs == the engine's own rollout log-probs,
    # token for token: no fake first-token value, no off-by-one, same temperature.
    src = source(tiny_policy, hint_format="{content}")
    for group in src.make_groups(0, 2):
        for s in group:
            assert s.teacher_logprobs is not None and len(s.teacher_logprobs) == len(s.response_ids)
            assert torch.allclose(torch.tensor(s.teacher_logprobs), torch.tensor(s.rollout_logprobs), atol=1e-4)


def test_hint_is_the_verifier_feedback_in_the_last_user_message(tiny_policy):
    src = source(tiny_policy)
    group = src.make_groups(0, 1)[0]
    answer = group[0].info["answer"]
    assert group[0].info["hint"] == f"The correct answer is {answer}."
    hinted = tiny_policy.tokenizer.decode(
        src.teacher.context_ids(src.messages(group[0].info["question"]), group[0].info["hint"])
    )
    assert f"[hint] The correct answer is {answer}." in hinted
    assert hinted.rstrip().endswith("assistant")  # hint sits inside the user turn, before the generation prompt
    gap = torch.tensor(group[0].teacher_logprobs) - torch.tensor(group[0].rollout_logprobs)
    assert gap.abs().max() > 1e-4  # the hint really changes the teacher


def test_topk_rows_are_sorted_and_contain_the_sampled_token_value(tiny_policy):
    src = source(tiny_policy, hint_format="{content}", topk=5)
    s = src.make_groups(0, 1)[0][0]
    assert len(s.teacher_topk_ids) == len(s.response_ids) and all(len(r) == 5 for r in s.teacher_topk_ids)
    for tok, lp, ids, lps in zip(s.response_ids, s.teacher_logprobs, s.teacher_topk_ids, s.teacher_topk_logprobs):
        assert lps == sorted(lps, reverse=True)
        assert lps[0] >= lp - 1e-5
        if tok in ids:
            assert abs(lps[ids.index(tok)] - lp) < 1e-4


def test_no_teacher_no_teacher_logprobs(tiny_policy):
    src = DatasetSource(HFEngine(tiny_policy), tiny_policy.tokenizer, *PATHS, n=2, max_new_tokens=4)
    assert all(s.teacher_logprobs is None for s in src.make_groups(0, 1)[0])


def test_the_teacher_puts_the_hint_where_mode_hint_role_says(tiny_policy):
    tok = tiny_policy.tokenizer
    messages = [{"role": "user", "content": "What is 2 + 2?"}]

    def rendered(msgs):
        ids = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    in_system = Teacher(HFEngine(tiny_policy), tok, "{content} {hint}", hint_role="system")
    assert in_system.context_ids(messages, "Answer with the number.") == rendered(
        [{"role": "system", "content": "Answer with the number."}, *messages]
    )
    in_user = Teacher(HFEngine(tiny_policy), tok, "{content} {hint}")
    assert in_user.context_ids(messages, "Answer with the number.") == rendered(
        [{"role": "user", "content": "What is 2 + 2? Answer with the number."}]
    )
    # the hint opens the assistant's turn: the plain prompt, then the note's tokens, then (when scored) the response
    in_reply = Teacher(HFEngine(tiny_policy), tok, "({hint})\n\n", hint_role="assistant")
    note = tok.encode("(Answer with the number.)\n\n", add_special_tokens=False)
    assert in_reply.context_ids(messages, "Answer with the number.") == rendered(messages) + note
    assert in_reply.contexts(messages, "Be brief.") == (
        rendered(messages) + tok.encode("(Be brief.)\n\n", add_special_tokens=False),
    )
    with pytest.raises(ValueError, match="must not name \\{content\\}"):
        Teacher(HFEngine(tiny_policy), tok, "{content} {hint}", hint_role="assistant")
    with pytest.raises(ValueError, match="in token space, not in a message"):
        append_hint(messages, "Be brief.", "({hint})", "assistant")


def _logits_alone(model, context: list[int], response: list[int]) -> torch.Tensor:
    """[T, V] next-token logits over `response` after `context`, one unpadded sequence (a reference)."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([context + response]))
    return out.logits[0, len(context) - 1 : -1].float()


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_the_guided_teacher_scores_under_plain_plus_hinted_minus_contrast_logits(tiny_policy, scale):
    # mode.hint_contrast: softmax((l(s + hint) + γ · (l(s) − l(s + contrast))) / T), checked against three unpadded
    # forward passes; two turns of different lengths, so the batched contexts are left-padded differently.
    tok, model = tiny_policy.tokenizer, tiny_policy.model
    teacher = Teacher(HFEngine(tiny_policy), tok, contrast="Please try again.", contrast_scale=scale)
    turns = [
        [{"role": "user", "content": "What is 2 + 3?"}],
        [{"role": "user", "content": "Name a prime number above 10."}],
    ]
    hints = ["Answer with the number only.", "Give one number, no words."]
    responses, T = [[11, 12, 13, 14], [21, 22]], 0.7
    scored = teacher.logprobs(turns, hints, responses, T, topk=3)
    for messages, hint, response, (lp, top_ids, top_lp) in zip(turns, hints, responses, scored):
        plain, hinted, contrast = teacher.contexts(messages, hint)
        assert hinted == teacher.context_ids(messages, hint) and plain != hinted != contrast
        weights = (scale, 1.0, -scale)
        mixed = sum(w * _logits_alone(model, c, response) for c, w in zip((plain, hinted, contrast), weights))
        ref = torch.log_softmax(mixed / T, dim=-1)
        assert torch.allclose(torch.tensor(lp), ref[torch.arange(len(response)), response], atol=1e-4)
        assert torch.allclose(torch.tensor(top_lp), ref.topk(3, dim=-1).values, atol=1e-4)
        assert top_ids == ref.topk(3, dim=-1).indices.tolist()


def test_a_contrast_equal_to_the_hint_leaves_the_unhinted_policy(tiny_policy):
    # The hint's own effect is what the guided teacher adds: a contrast that says what the hint says adds nothing.
    same = Teacher(HFEngine(tiny_policy), tiny_policy.tokenizer, contrast="Answer with the number only.")
    plain = HFEngine(tiny_policy).score([same.render(MSGS)], [[11, 12, 13]], 0.7)[0]
    guided = same.logprobs([MSGS], ["Answer with the number only."], [[11, 12, 13]], 0.7)[0][0]
    unguided = Teacher(HFEngine(tiny_policy), tiny_policy.tokenizer).logprobs(
        [MSGS], ["Answer with the number only."], [[11, 12, 13]], 0.7
    )[0][0]
    assert guided == pytest.approx(plain, abs=1e-4)
    assert max(abs(a - b) for a, b in zip(unguided, plain)) > 1e-3  # the hint alone does move the teacher


def test_the_guided_teacher_needs_full_logits_and_whole_contexts(tiny_policy):
    class ScoresOnly:  # an engine that returns log-probs of the sampled tokens only (as vLLM does)
        def score(self, prompts, responses, temperature=1.0):
            return [[0.0] * len(r) for r in responses]

    with pytest.raises(ValueError, match="mode.hint_contrast"):
        Teacher(ScoresOnly(), tiny_policy.tokenizer, contrast="Please try again.")
    guided = Teacher(HFEngine(tiny_policy), tiny_policy.tokenizer, contrast="Please try again.")
    with pytest.raises(ValueError, match="one rendered context per guidance term"):
        guided.score_contexts([(guided.context_ids(MSGS, "Be brief."),)], [[11]], 0.7)


def test_dataset_opd_with_a_contrast_gives_guided_teacher_logprobs(tiny_policy):
    engine = HFEngine(tiny_policy, seed=3)
    teacher = Teacher(HFEngine(tiny_policy), tiny_policy.tokenizer, contrast="That is not right.")
    src = DatasetSource(
        engine, tiny_policy.tokenizer, *PATHS, n=2, prompts_per_generate=2, max_new_tokens=6, temperature=0.7,
        teacher=teacher,
    )  # fmt: skip
    s = src.make_groups(0, 1)[0][0]
    contexts = teacher.contexts(src.messages(s.info["question"]), s.info["hint"])
    expected = HFEngine(tiny_policy).score_guided([[c] for c in contexts], (1.0, 1.0, -1.0), [s.response_ids], 0.7)
    assert s.teacher_logprobs == pytest.approx(expected[0][0], abs=1e-5)


class ScriptedReplies(HFEngine):
    """The tiny model's real log-probs, with its greedy replies scripted: an apology to a context whose hint
    says APOLOGISE, an answer to any other. (The tiny model's own greedy text is noise; the gate reads text.)"""

    def generate(self, prompts, sampling, on_token=None, canary=False):
        tok = self.model_tokenizer
        texts = ["I'm sorry, you are right." if "APOLOGISE" in tok.decode(p) else "2 + 3 = 5." for p in prompts]
        return [Generation(tok.encode(t), [0.0] * len(tok.encode(t)), True, self.version) for t in texts]


def test_the_apology_gate_drops_the_teacher_of_a_turn_whose_hinted_reply_apologises(tiny_policy):
    engine = ScriptedReplies(tiny_policy)
    engine.model_tokenizer = tiny_policy.tokenizer
    plain = Teacher(engine, tiny_policy.tokenizer)
    gated = Teacher(engine, tiny_policy.tokenizer, gate="apology")
    contexts = [gated.contexts(MSGS, "APOLOGISE for it."), gated.contexts(MSGS, "Be brief.")]
    responses = [[11, 12, 13], [14, 15]]
    assert gated.apologising(contexts) == [True, False]
    got = gated.score_contexts(contexts, responses, 0.7)
    assert got[0] == (None, None, None)  # the hinted teacher answers the complaint: nothing to distil
    assert got[1][0] == pytest.approx(plain.score_contexts(contexts, responses, 0.7)[1][0])  # kept as scored
    assert plain.score_contexts(contexts, responses, 0.7)[0][0] is not None  # no gate: every turn scored
    with pytest.raises(ValueError, match="mode.hint_gate='polite' is unknown"):
        Teacher(engine, tiny_policy.tokenizer, gate="polite")


@pytest.mark.parametrize("mode", ["combine", "opd"])
def test_a_gated_turn_trains_on_its_reward_alone_and_without_one_is_recorded_as_gated(tiny_policy, mode):
    from collections import Counter

    from claw.judge.build import build_judges
    from claw.judge.labelling import Labeller
    from claw.judge.metrics import JudgeStats
    from claw.judge.turn import Turn
    from claw.sources.proxy.render import ChatRenderer
    from tests.test_proxy import JUDGE

    engine = ScriptedReplies(tiny_policy)
    engine.model_tokenizer = tiny_policy.tokenizer
    teacher = Teacher(engine, tiny_policy.tokenizer, "{content}\n\n[hint] {hint} APOLOGISE", gate="apology")
    counts: Counter[str] = Counter()
    labeller = Labeller(build_judges(JUDGE), teacher, ChatRenderer(tiny_policy.tokenizer).render, mode, 0, 0, 0.0,
                        JudgeStats(), counts)  # fmt: skip
    correction = {"role": "user", "content": "That's wrong, it should be 5. Please recheck the sum."}
    turn = Turn(messages=MSGS, prompt_ids=[1, 2], response_ids=[11, 12], rollout_logprobs=[-1.0, -1.0],
                temperature=0.7, response_text="It is 6.", next_state=[correction])  # fmt: skip
    reason, verdict, sample = asyncio.run(labeller.label(turn))
    assert verdict.hint and counts["hint_gated"] == 1
    if mode == "combine":
        assert reason == "queued" and sample.reward < 0 and sample.teacher_logprobs is None
        assert sample.info["hint_gated"] is True
    else:
        assert (reason, sample) == ("hint_gated", None)


def test_the_dataset_source_goes_through_the_same_gate(tiny_policy):
    engine = ScriptedReplies(tiny_policy)
    engine.model_tokenizer = tiny_policy.tokenizer
    gated = Teacher(engine, tiny_policy.tokenizer, "{content}\n\n[hint] {hint} APOLOGISE", gate="apology")
    src = DatasetSource(HFEngine(tiny_policy, seed=3), tiny_policy.tokenizer, *PATHS, n=2, max_new_tokens=4,
                        temperature=0.7, teacher=gated)  # fmt: skip
    samples = src.make_groups(0, 1)[0]
    assert samples and all(s.teacher_logprobs is None for s in samples)  # every hinted teacher apologised
    kept = Teacher(engine, tiny_policy.tokenizer, "{content}\n\n[hint] {hint}", gate="apology")
    src.teacher = kept
    assert all(s.teacher_logprobs is not None for s in src.make_groups(0, 1)[0])  # none did
