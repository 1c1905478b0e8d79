"""Teacher log-probs for OPD: teacher-force the *sampled* response after the hinted context.

The teacher's context is the turn's messages with the accepted hint appended to the last user
message or the system message (`append_hint`; wording from `mode.hint_format`, place from
`mode.hint_role`), rendered with the chat template and a generation prompt; the response ids are the
exact ids the engine sampled (never re-tokenised text).
Log-probs come back aligned one-to-one with the response tokens — no dropped or fake first token —
at the **sample's own temperature**, from full logits (so any temperature works).

Which model is the teacher (`mode.teacher`):
- `frozen`  — a frozen copy of the initial policy (default; OpenClaw-RL's choice);
- `current` — the rollout engine, i.e. the policy as it is now (self-distillation);
- a path    — a separate local HF checkpoint that shares the policy's tokenizer.
"""

from __future__ import annotations

from pathlib import Path

from claw.engine.base import Engine
from claw.judge.hint import append_hint


class Teacher:
    def __init__(
        self, engine: Engine, tokenizer, hint_format: str = "{content}\n\n[hint] {hint}", hint_role: str = "user"
    ) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.hint_format = hint_format
        self.hint_role = hint_role

    def context_ids(self, messages: list[dict], hint: str) -> list[int]:
        hinted = append_hint(messages, hint, self.hint_format, self.hint_role)
        ids = self.tokenizer.apply_chat_template(hinted, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def logprobs(
        self,
        messages: list[list[dict]],
        hints: list[str],
        responses: list[list[int]],
        temperature: float,
        topk: int = 0,
    ) -> list[tuple[list[float], list[list[int]] | None, list[list[float]] | None]]:
        """Per turn: teacher log-probs of each response token, and (topk > 0) the teacher's top-k ids and log-probs."""
        if temperature <= 0:
            raise ValueError(
                "teacher log-probs need the sample's sampling temperature (> 0); greedy turns are not trained"
            )
        return self.score_contexts(
            [self.context_ids(m, h) for m, h in zip(messages, hints)], responses, temperature, topk
        )

    def score_contexts(
        self, contexts: list[list[int]], responses: list[list[int]], temperature: float, topk: int = 0
    ) -> list[tuple[list[float], list[list[int]] | None, list[list[float]] | None]]:
        """The same, from already rendered hinted contexts (the proxy renders its own, tools included)."""
        if temperature <= 0:
            raise ValueError(
                "teacher log-probs need the sample's sampling temperature (> 0); greedy turns are not trained"
            )
        if topk:
            return self.engine.score_topk(contexts, responses, temperature, topk)
        return [(lp, None, None) for lp in self.engine.score(contexts, responses, temperature)]


def build_teacher(
    kind: str | None, policy, engine: Engine, hint_format: str, max_batch_size: int = 64, hint_role: str = "user"
) -> Teacher | None:
    """`mode.teacher`: null (no teacher), frozen, current, or the path of a separate checkpoint."""
    from claw.engine.hf import HFEngine
    from claw.models import load_hf

    if kind is None:
        return None
    if kind == "frozen":
        return Teacher(HFEngine(policy, max_batch_size=max_batch_size), policy.tokenizer, hint_format, hint_role)
    if kind == "current":
        return Teacher(engine, policy.tokenizer, hint_format, hint_role)
    separate = load_hf(Path(kind))
    if separate.tokenizer.get_vocab() != policy.tokenizer.get_vocab():
        raise ValueError(
            f"mode.teacher={kind}: its tokenizer differs from the policy's; "
            "teacher-forcing the policy's token ids needs the same vocabulary"
        )
    return Teacher(HFEngine(separate, max_batch_size=max_batch_size), policy.tokenizer, hint_format, hint_role)
