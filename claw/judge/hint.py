"""The hint extractor (OPD): m votes on "does the next state reveal what the response should have done?"

A vote is `\\boxed{1}` with a hint between `[HINT_START]` and `[HINT_END]`, or `\\boxed{-1}`. The
hint is appended to the last user message (or the system message) to build the teacher's context (`append_hint`), so a
bad hint teaches the policy the wrong thing: acceptance is stricter than OpenClaw-RL's any-vote
rule. It needs a majority of ALL m votes (abstentions count against) and at
least one positive vote whose hint is longer than `min_hint_chars`; the longest such hint wins,
since the most specific hint carries the most to distil.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass

from claw.judge.backends import Backend, VotePrompt, as_voter
from claw.judge.prompts import PromptTemplate, load_prompt
from claw.judge.turn import Message, Turn
from claw.judge.voting import (
    LoopSemaphore,
    failure_summary,
    gather_votes,
    majority,
    parse_score,
    strip_think,
)
from claw.modes import HINT_ROLES

_HINT = re.compile(r"\[HINT_START\](.*?)\[HINT_END\]", re.DOTALL)


@dataclass
class HintResult:
    accepted: bool
    hint: str | None  # the accepted hint (stripped), None when rejected
    votes: list[int | None]  # m votes in {1, -1}, None = abstained (unparseable, 0, error, timeout)
    n_positive: int
    agreement: float  # fraction of valid votes equal to their majority
    latency_s: float
    error: str | None = None  # set when every vote failed


def parse_hint_vote(text: str) -> tuple[int | None, str | None]:
    """(vote, hint): the vote is ±1 or None; the hint is the last [HINT_START]…[HINT_END] of a +1 vote."""
    score = parse_score(text)
    if score not in (1, -1):
        return None, None
    if score == -1:
        return -1, None
    hints = _HINT.findall(strip_think(text) or "")
    return 1, (hints[-1].strip() if hints else None)


def select_hint(votes: list[int | None], hints: list[str | None], min_hint_chars: int) -> str | None:
    """The longest hint of a positive vote, if positives are a strict majority of all votes and it is
    longer than min_hint_chars; else None."""
    n_positive = sum(v == 1 for v in votes)
    if n_positive * 2 <= len(votes):
        return None
    candidates = [h for v, h in zip(votes, hints) if v == 1 and h is not None and len(h.strip()) > min_hint_chars]
    return max(candidates, key=len).strip() if candidates else None


def append_hint(
    messages: list[Message], hint: str, fmt: str = "{content}\n\n[hint] {hint}", role: str = "user"
) -> list[Message]:
    """A deep copy of `messages` with the hint added to one message (the teacher's context).

    `role="user"` (OpenClaw-RL's place): the last user message. `role="system"` (`mode.hint_role=system`):
    the system message that opens the conversation, or a new one put first when there is none — the hint
    as an instruction about the reply rather than a remark the model answers (a 135M model told "You forgot
    to mention the answer" in the user turn apologises; experiments/personal_agent/log.md).
    String content becomes fmt(content, hint); list content (parts) gets it on its last text part,
    or a new text part if it has none. Raises ValueError without a user message: a hint must answer
    something the user asked, and guessing another place would teach from a context no user produced.
    """
    if role not in HINT_ROLES:
        raise ValueError(f"mode.hint_role={role!r} is unknown; use {' or '.join(HINT_ROLES)}")
    if role == "assistant":
        raise ValueError(
            "mode.hint_role=assistant puts the hint after the generation prompt, in token space, not in a message: "
            "use Teacher.hinted (claw/judge/teacher.py)"
        )
    out = copy.deepcopy(messages)
    users = [m for m in out if m.get("role") == "user"]
    if not users:
        raise ValueError("append_hint needs a user message to carry the hint; the turn has none")
    last = users[-1]
    if role == "system":
        if not out or out[0].get("role") != "system":
            out.insert(0, {"role": "system", "content": ""})
        last = out[0]
    content = last.get("content")
    if isinstance(content, list):
        texts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            texts[-1]["text"] = fmt.format(content=texts[-1].get("text", ""), hint=hint)
        else:
            content.append({"type": "text", "text": fmt.format(content="", hint=hint).lstrip()})
    else:
        text = fmt.format(content=content or "", hint=hint)
        last["content"] = text if content else text.lstrip()
    return out


class HintJudge:
    def __init__(
        self,
        backend: Backend,
        m: int = 3,
        min_hint_chars: int = 10,
        prompt: PromptTemplate | None = None,
        timeout_s: float = 60.0,  # per vote, retries included
        max_concurrency: int = 8,  # votes in flight at once, over all turns
        temperature: float = 0.6,
        max_tokens: int = 512,
    ) -> None:
        if m < 1:
            raise ValueError(f"m must be >= 1 (got {m})")
        self.voter, self.m, self.min_hint_chars, self.timeout_s = as_voter(backend), m, min_hint_chars, timeout_s
        self.vote_prompt = VotePrompt(prompt or load_prompt("hint.yaml"), temperature, max_tokens)
        self._slots = LoopSemaphore(max_concurrency)

    async def extract(self, turn: Turn) -> HintResult:
        start = time.perf_counter()
        timeout_s = self.timeout_s if self.voter.needs_timeout else None
        outcomes = await gather_votes(
            lambda: self.voter.hint_vote(turn, self.vote_prompt), self.m, timeout_s, self._slots.get()
        )
        parsed = [parse_hint_vote(o) if isinstance(o, str) else (None, None) for o in outcomes]
        votes = [v for v, _ in parsed]
        hint = select_hint(votes, [h for _, h in parsed], self.min_hint_chars)
        return HintResult(
            accepted=hint is not None,
            hint=hint,
            votes=votes,
            n_positive=sum(v == 1 for v in votes),
            agreement=majority(votes).agreement,
            latency_s=time.perf_counter() - start,
            error=failure_summary(outcomes),
        )
