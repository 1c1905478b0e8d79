"""Reading a judge's vote out of its text, and the majority over m votes.

A judge is sampled m times (temperature > 0), so single votes are noisy; the majority with
"ties → 0" only turns a step into a training signal when the votes lean one way
(as in OpenClaw-RL). A vote that cannot be read *abstains*: it is dropped, never guessed.

Departures from OpenClaw-RL's `_parse_prm_score`:
- `<think>…</think>` is stripped first, so a box written while reasoning never counts; an
  unterminated `<think>` (output cut off mid-thought) abstains instead of reading a draft box.
  Text before a lone `</think>` is reasoning too (chat templates that open `<think>` in the prompt).
- The box content must be exactly 1, +1, -1, −1 (unicode minus) or 0, spaces allowed; the last
  such box wins. `\\boxed{2}`, `\\boxed{yes}`, `\\boxed{}` are not votes.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_SCORES = {"1": 1, "+1": 1, "-1": -1, "\u22121": -1, "0": 0}


def strip_think(text: str) -> str | None:
    """The text outside reasoning blocks; None when a `<think>` is never closed."""
    text = _THINK_BLOCK.sub("", text)
    if "<think>" in text:
        return None
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text


def parse_score(text: str) -> int | None:
    """The last `\\boxed{…}` outside reasoning that holds exactly one of 1, +1, -1, −1, 0; else None."""
    visible = strip_think(text)
    if visible is None:
        return None
    scores = [_SCORES[box.strip()] for box in _BOX.findall(visible) if box.strip() in _SCORES]
    return scores[-1] if scores else None


@dataclass
class Verdict:
    score: int  # the majority vote; 0 when no vote is valid or the top counts tie
    votes: list[int | None]  # every vote as cast, None = abstained
    n_valid: int
    n_abstain: int
    agreement: float  # fraction of valid votes equal to `score` (0.0 with no valid vote)


def majority(votes: list[int | None]) -> Verdict:
    """Majority of the valid votes: [1, None, None] → 1, [1, -1, 0] → 0 (tie), [1, 1, -1] → 1."""
    valid = [v for v in votes if v is not None]
    counts = Counter(valid).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        score = 0
    else:
        score = counts[0][0]
    agreement = sum(v == score for v in valid) / len(valid) if valid else 0.0
    return Verdict(
        score=score, votes=list(votes), n_valid=len(valid), n_abstain=len(votes) - len(valid), agreement=agreement
    )


class LoopSemaphore:
    """One `asyncio.Semaphore` per event loop. A judge is built at config time, outside any loop, and a
    semaphore is bound to the loop that first waits on it; this keeps the judge usable from any loop."""

    def __init__(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"max_concurrency must be >= 1 (got {value})")
        self.value = value
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._by_loop:
            self._by_loop[loop] = asyncio.Semaphore(self.value)
        return self._by_loop[loop]


async def gather_votes(
    vote: Callable[[], Awaitable[str]], m: int, timeout_s: float | None, semaphore: asyncio.Semaphore
) -> list[str | Exception]:
    """Cast m votes concurrently. Each waits its turn on `semaphore` (shared by every turn the judge is
    scoring, so the endpoint sees at most max_concurrency requests) and then has `timeout_s` to answer
    (None: no limit, for a local computation that always ends — `Backend.needs_timeout`).
    A vote that raises or times out comes back as its exception: the caller counts it as an abstention."""

    async def one() -> str:
        async with semaphore:
            return await asyncio.wait_for(vote(), timeout_s)

    return list(await asyncio.gather(*(one() for _ in range(m)), return_exceptions=True))


def failure_summary(outcomes: list[str | Exception]) -> str | None:
    """An error message when *every* vote failed (the judge itself is down), else None."""
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if not outcomes or len(errors) < len(outcomes):
        return None
    first = errors[0]
    return f"all {len(outcomes)} votes failed; first: {type(first).__name__}: {first}".rstrip(": ")
