"""OPD without judges on source=dataset: the verifier's feedback is the hint, a frozen copy of the
initial policy is the teacher, and its log-probs are aligned with the response at the sample's temperature."""

import torch

from claw.engine import HFEngine
from claw.judge.teacher import Teacher
from claw.sources.dataset import DatasetSource

PATHS = ("data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl")


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
