"""Teacher log-probs for OPD: teacher-force the *sampled* response after the hinted context.

The teacher's context is the turn's messages with the accepted hint appended to the last user
message or the system message (`append_hint`; wording from `mode.hint_format`, place from
`mode.hint_role`), rendered with the chat template and a generation prompt; or (`mode.hint_role=assistant`)
the plain rendered context with the hint's text after the generation prompt, so the hint opens the assistant's own
turn like a note it wrote before replying, and the response is scored after it. The response ids are the
exact ids the engine sampled (never re-tokenised text).
Log-probs come back aligned one-to-one with the response tokens — no dropped or fake first token —
at the **sample's own temperature**, from full logits (so any temperature works).

The guided teacher (`mode.hint_contrast`, a hint that says nothing, e.g. "That's not what I wanted. Please try
again."): the teacher's next-token logits are l(s) + l(s + hint) − l(s + contrast), all three contexts
scored by one model, so the OPD gap distils what *this* hint changes and cancels what *any* complaint changes.
On the 135M model a complaint in the user turn draws an apology ("I'm sorry for your loss…") whatever it
says; that shift is in both hinted contexts and drops out. The gap becomes
log π_G(a_t) − log π_old(a_t | s): towards π(· | s) tilted by the hint's own effect (classifier-free
guidance, Ho & Salimans 2022, https://arxiv.org/abs/2207.12598, with the contentless hint as the
unconditional context). It costs three teacher passes instead of one and needs full logits: an hf-engine teacher.
`mode.hint_contrast_scale` γ (default 1) sets how much is cancelled: l(s + hint) + γ · (l(s) − l(s + contrast)),
so γ = 0 is the plain hinted teacher and γ = 1 the above.
Measured on the personal-agent runs it over-cancels (the contrast carries "redo it" and a warm tone, which the
real hint means too): the held-out parent gains where the default fell, the student and the teacher lose
(experiments/personal_agent/log.md, measured 2026-12-01). Off by default.

The gate (`mode.hint_gate=apology`): the teacher first decodes its own greedy reply to the hinted context for a few
tokens; if that reply opens by conceding or apologising (claw/judge/drift.py), the hint drew an answer to the
complaint, not a better reply, and the turn gets no teacher log-probs (the reward alone trains it). Runs of
2026-12-01 and 2026-12-02 (experiments/personal_agent/log.md) found the OPD term helps where the hinted model acts
on the hint and costs where it apologises; the gate makes that call per turn.

Which model is the teacher (`mode.teacher`):
- `frozen`  — a frozen copy of the initial policy (default; OpenClaw-RL's choice);
- `current` — the rollout engine, i.e. the policy as it is now (self-distillation);
- a path    — a separate local HF checkpoint that shares the policy's tokenizer;
- a URL     — a model served elsewhere (an OpenAI-compatible vLLM server) that shares the policy's tokenizer,
              `mode.teacher=http://HOST:PORT/v1` with `mode.teacher_model` and friends (claw/judge/teacher_served.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from claw.engine.base import Engine, SamplingParams
from claw.judge.drift import opens_with_apology
from claw.judge.hint import append_hint
from claw.judge.teacher_served import ServedTeacher, is_served
from claw.modes import DEFAULT_HINT_FORMAT, Hinting


class TeacherScores(NamedTuple):
    """A turn's teacher log-probs, aligned with its response tokens; all None where the gate dropped the turn."""

    logprobs: list[float] | None  # log π_teacher(a_t | hinted context), one per response token
    topk_ids: list[list[int]] | None = None  # topk > 0: the teacher's top-K token ids at each position
    topk_logprobs: list[list[float]] | None = None  # and their log-probs

    @property
    def scored(self) -> bool:
        """Whether the teacher scored the turn (the gate keeps it)."""
        return self.logprobs is not None


UNSCORED = TeacherScores(None)  # a turn the gate drops: no teacher log-probs, the reward alone trains it


class Teacher:
    def __init__(
        self,
        engine: Engine,
        tokenizer,
        hint_format: str = DEFAULT_HINT_FORMAT,
        hint_role: str = "user",
        contrast: str | None = None,
        contrast_scale: float = 1.0,
        gate: str | None = None,
    ) -> None:
        """The keywords after `tokenizer` are `Hinting`'s fields (claw/modes.py), which checks them."""
        hinting = Hinting(hint_format, hint_role, contrast, contrast_scale, gate)
        if contrast is not None and not hasattr(engine, "score_guided"):
            raise ValueError(
                f"mode.hint_contrast={contrast!r} needs a teacher with full logits (an hf engine): "
                f"mode.teacher=frozen or a checkpoint path; this teacher's engine is {type(engine).__name__}"
            )
        self.engine = engine
        self.tokenizer = tokenizer
        self.hinting = hinting
        # the weights on the logits of (s, s + hint, s + contrast): l(s + hint) + γ · (l(s) − l(s + contrast))
        self.guidance = (hinting.contrast_scale, 1.0, -hinting.contrast_scale)

    def render(self, messages: list[dict]) -> list[int]:
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def context_ids(self, messages: list[dict], hint: str) -> list[int]:
        """The hinted context: the turn's messages with the hint where `hint_role` says."""
        return self.hinted(messages, hint, self.render)

    def hinted(self, messages: list[dict], hint: str, render: Callable[[list[dict]], list[int]]) -> list[int]:
        """Prompt ids with `hint` where `hint_role` says: in a message (`append_hint`), or after the generation
        prompt, opening the assistant's turn (`assistant`)."""
        if self.hinting.hint_role == "assistant":
            note = self.hinting.hint_format.format(hint=hint)
            return render(messages) + list(self.tokenizer.encode(note, add_special_tokens=False))
        return render(append_hint(messages, hint, self.hinting.hint_format, self.hinting.hint_role))

    def contexts(self, messages: list[dict], hint: str, render: Callable[[list[dict]], list[int]] | None = None):
        """The contexts this teacher scores a response after: (hinted,), or with a contrast (plain, hinted,
        contrast), in `guidance`'s order; `render` turns messages into prompt ids (default: the chat template)."""
        render = render or self.render
        hinted = self.hinted(messages, hint, render)
        if self.hinting.contrast is None:
            return (hinted,)
        return (render(messages), hinted, self.hinted(messages, self.hinting.contrast, render))

    def apologising(self, contexts: list[tuple[list[int], ...]], max_new_tokens: int = 12) -> list[bool]:
        """Per turn: whether this teacher, shown the hint, opens its own greedy reply by conceding or apologising
        (claw/judge/drift.py) — it answers the complaint instead of acting on it. Decodes each hinted context
        (`Teacher.contexts`; with a contrast, its plain hinted one) for a few tokens."""
        hinted = [c[1] if self.hinting.contrast is not None else c[0] for c in contexts]
        gens = self.engine.generate(hinted, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens))
        return [opens_with_apology(self.tokenizer.decode(g.response_ids, skip_special_tokens=True)) for g in gens]

    def logprobs(
        self,
        messages: list[list[dict]],
        hints: list[str],
        responses: list[list[int]],
        temperature: float,
        topk: int = 0,
    ) -> list[TeacherScores]:
        """Per turn: teacher log-probs of each response token, and (topk > 0) the teacher's top-k ids and log-probs;
        `UNSCORED` for a turn the gate drops."""
        if temperature <= 0:
            raise ValueError(
                "teacher log-probs need the sample's sampling temperature (> 0); greedy turns are not trained"
            )
        return self.score_contexts(
            [self.contexts(m, h) for m, h in zip(messages, hints)], responses, temperature, topk
        )

    def score_contexts(
        self, contexts: list[tuple[list[int], ...]], responses: list[list[int]], temperature: float, topk: int = 0
    ) -> list[TeacherScores]:
        """The same, from each turn's already rendered `contexts` (the proxy renders its own, tools included)."""
        if temperature <= 0:
            raise ValueError(
                "teacher log-probs need the sample's sampling temperature (> 0); greedy turns are not trained"
            )
        if any(len(c) != (1 if self.hinting.contrast is None else len(self.guidance)) for c in contexts):
            raise ValueError(
                "score_contexts takes each turn's `Teacher.contexts`, one rendered context per guidance term"
            )
        if self.hinting.gate == "apology":  # a teacher that apologises at this hint teaches nothing from it
            keep = [i for i, sorry in enumerate(self.apologising(contexts)) if not sorry]
            scored = self._score(
                [contexts[i] for i in keep], [responses[i] for i in keep], temperature, topk
            ) if keep else []  # fmt: skip
            out = [UNSCORED] * len(contexts)
            for i, row in zip(keep, scored):
                out[i] = row
            return out
        return self._score(contexts, responses, temperature, topk)

    def _score(
        self, contexts: list[tuple[list[int], ...]], responses: list[list[int]], temperature: float, topk: int
    ) -> list[TeacherScores]:
        """Every turn's teacher log-probs, ungated."""
        if self.hinting.contrast is not None:
            sets = [[c[j] for c in contexts] for j in range(len(self.guidance))]
            rows = self.engine.score_guided(sets, self.guidance, responses, temperature, topk)
            return [TeacherScores(*row) for row in rows]
        hinted = [c[0] for c in contexts]
        if topk:
            return [TeacherScores(*row) for row in self.engine.score_topk(hinted, responses, temperature, topk)]
        return [TeacherScores(lp) for lp in self.engine.score(hinted, responses, temperature)]


def build_teacher(
    kind: str | None,
    policy,
    engine: Engine,
    hint_format: str = DEFAULT_HINT_FORMAT,
    max_batch_size: int = 64,
    served: dict[str, Any] | None = None,
    **hinting: Any,
) -> Teacher | None:
    """`mode.teacher`: null (no teacher), frozen, current, the path of a separate checkpoint, or the URL of a served
    one (`served`: `ServedTeacher`'s keywords, `served_options(cfg.mode)`). `hint_format` and `hinting` are
    `Hinting`'s fields (claw/modes.py), by name: a run passes its `Mode.hinting` as keywords."""
    from claw.engine.hf import HFEngine
    from claw.models import load_hf

    if kind is None:
        return None
    if is_served(kind):
        return Teacher(ServedTeacher(kind, **(served or {})), policy.tokenizer, hint_format, **hinting)
    if kind == "current":
        return Teacher(engine, policy.tokenizer, hint_format, **hinting)
    model = policy if kind == "frozen" else load_hf(Path(kind))
    if model.tokenizer.get_vocab() != policy.tokenizer.get_vocab():
        raise ValueError(
            f"mode.teacher={kind}: its tokenizer differs from the policy's; "
            "teacher-forcing the policy's token ids needs the same vocabulary"
        )
    scorer = HFEngine(model, max_batch_size=max_batch_size)
    return Teacher(scorer, policy.tokenizer, hint_format, **hinting)
