"""Teacher forcing over vLLM's OpenAI `/v1/completions`: the request that scores a response after a prompt, both
sent as token ids, and the reading of its answer, aligned with the response and checked.

One request per row: the prompt is `prompt + response` as token ids (never re-tokenised text), `max_tokens=1`,
`prompt_logprobs=k` (the log-prob of each prompt token given those before it, and the top k at each position)
and `return_token_ids` (the server echoes the ids it scored). The answer is trusted only where it lines up:
the echoed ids must be ours, there must be an entry for every response position, each with our token and, for
k > 0, k ranked alternatives; anything else is a `ScoreMismatch` naming the position. vLLM computes prompt
log-probs from raw logits, so they are log-probs at T = 1.

Used by `engine=vllm_server` (claw/engine/vllm_server.py) and by a teacher served elsewhere
(claw/judge/teacher_served.py).
"""

from __future__ import annotations

from typing import Any

Scores = tuple[list[float], list[list[int]] | None, list[list[float]] | None]  # log-probs, top-k ids, their log-probs


class ScoreMismatch(ValueError):
    """A server's prompt log-probs that do not line up with the ids we sent."""


def score_body(model: str, prompt: list[int], response: list[int], k: int) -> dict[str, Any]:
    """The `/v1/completions` body that scores `response` after `prompt` (and its top `k`) at T = 1."""
    return {
        "model": model,
        "prompt": list(prompt) + list(response),
        "max_tokens": 1,
        "temperature": 1.0,
        "prompt_logprobs": k,
        "return_token_ids": True,
    }


def read_scores(answer: dict[str, Any], prompt: list[int], response: list[int], k: int) -> Scores:
    """The response's log-probs (and top-k) out of a `/v1/completions` answer to `score_body`, checked."""
    try:
        choice = answer["choices"][0]
        entries = choice["prompt_logprobs"]
    except (KeyError, IndexError, TypeError) as e:
        raise ScoreMismatch(f"the answer has no choices[0].prompt_logprobs ({e!r}): {str(answer)[:300]}") from e
    sent = list(prompt) + list(response)
    echoed = choice.get("prompt_token_ids")
    if echoed is not None:
        _check_echo(list(echoed), sent, len(prompt))
    if entries is None or len(entries) < len(sent):
        have = 0 if entries is None else len(entries)
        raise ScoreMismatch(
            f"{have} prompt log-probs for {len(sent)} prompt tokens: none for response position "
            f"{max(have - len(prompt), 0)} (token {max(have, len(prompt))} of the prompt) onwards"
        )
    lps, top_ids, top_lps = [], [] if k else None, [] if k else None
    for i, (tok, entry) in enumerate(zip(response, entries[len(prompt) : len(sent)])):
        if not entry or str(tok) not in entry:
            raise ScoreMismatch(
                f"response position {i} (token {len(prompt) + i} of the prompt): no log-prob for our token {tok}; "
                f"the server scored {sorted(entry or {})[:5]}"
            )
        lps.append(float(entry[str(tok)]["logprob"]))
        if k:
            ranked = ((v["rank"], int(t), float(v["logprob"])) for t, v in entry.items())
            best = sorted(r for r in ranked if r[0] is not None and 0 < r[0] <= k)[:k]  # a tie may rank k + 1
            if len(best) < k:
                raise ScoreMismatch(f"response position {i}: {len(best)} top-k log-probs, asked for {k}")
            top_ids.append([t for _, t, _ in best])
            top_lps.append([lp for _, _, lp in best])
    return lps, top_ids, top_lps


def _check_echo(echoed: list[int], sent: list[int], prompt_len: int) -> None:
    for i, (theirs, ours) in enumerate(zip(echoed, sent)):
        if theirs != ours:
            where = f"response position {i - prompt_len}" if i >= prompt_len else f"context position {i}"
            raise ScoreMismatch(
                f"the server scored token {theirs} at {where} (token {i} of the prompt); we sent {ours}"
            )
    if len(echoed) != len(sent):
        raise ScoreMismatch(f"the server scored {len(echoed)} prompt tokens; we sent {len(sent)}")
