"""A teacher served elsewhere (`mode.teacher=http://HOST:PORT/v1`): an OpenAI-compatible vLLM server of a model that
shares the policy's tokenizer scores the sampled response after the hinted context.

Both are sent as token ids, one `/v1/completions` request per turn with `prompt_logprobs`
(claw/engine/prompt_scores.py, the request `engine=vllm_server` scores with too); the answer is aligned with the
response tokens and checked (the echoed ids must be ours, one entry per response token, K of them for
`mode.topk` > 0), and a mismatch is a `TeacherError` naming the position. vLLM's prompt log-probs come from raw
logits: this teacher scores turns sampled at T = 1 only; a turn at another temperature is a `TeacherError` too.

Requests follow the judge backends' schedule (claw/judge/backends.py): a connection error, a timeout, 429 or 5xx is
retried `mode.teacher_max_retries` times, attempt k waiting `mode.teacher_backoff_s` · 2^k; any other 4xx is not
retried. Then the `TeacherError` is raised; the Labeller (claw/judge/labelling.py) trains that turn on its reward
alone and counts it (`teacher_failed`).

The gate (`mode.hint_gate=apology`) decodes greedily through the same server; the contrast (`mode.hint_contrast`)
needs full logits and an in-process teacher.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from claw.engine.base import Generation, SamplingParams, per_row
from claw.engine.prompt_scores import ScoreMismatch, Scores, read_scores, score_body


class TeacherError(RuntimeError):
    """The teacher could not score a turn: its server is down or failing, or its answer does not line up."""


def is_served(kind: str | None) -> bool:
    """Whether `mode.teacher` names a server (a URL) rather than frozen, current or a checkpoint path."""
    return bool(kind) and kind.startswith(("http://", "https://"))


def served_options(mode_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """`ServedTeacher`'s keywords from the `mode.teacher_*` keys a mode file sets (conf/mode/opd.yaml)."""
    keys = {"model": "teacher_model", "api_key": "teacher_api_key", "timeout_s": "teacher_timeout_s"}
    keys |= {"max_retries": "teacher_max_retries", "backoff_s": "teacher_backoff_s"}
    return {arg: mode_cfg[key] for arg, key in keys.items() if mode_cfg.get(key) is not None}


class ServedTeacher:
    """The engine methods a `Teacher` calls (`score`, `score_topk`, `generate`), over HTTP."""

    version = 0  # its weights are the server's: claw never loads any into it

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        api_key: str = "EMPTY",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        if max_retries < 0 or backoff_s < 0:
            raise ValueError(
                f"mode.teacher_max_retries and mode.teacher_backoff_s must be >= 0 (got {max_retries}, {backoff_s})"
            )
        self.base_url, self.model = base_url.rstrip("/"), model
        self.max_retries, self.backoff_s = max_retries, backoff_s
        self.attempts = 0  # HTTP requests sent, retries included
        headers = {"Authorization": f"Bearer {api_key}"}
        self.client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)

    def score(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0
    ) -> list[list[float]]:
        return [lp for lp, _, _ in self.score_topk(prompts, responses, temperature, 0)]

    def score_topk(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float, k: int
    ) -> list[Scores]:
        if temperature != 1.0:
            raise TeacherError(
                f"the teacher at {self.base_url} scores turns sampled at T = 1 only (vLLM's prompt log-probs come "
                f"from raw logits); this turn was sampled at T = {temperature}"
            )
        out: list[Scores] = []
        for p, r in zip(prompts, responses):
            if not r:
                out.append(([], [] if k else None, [] if k else None))
                continue
            try:
                out.append(read_scores(self._post("/completions", score_body(self.model, p, r, k)), p, r, k))
            except ScoreMismatch as e:
                raise TeacherError(
                    f"the teacher at {self.base_url} answered log-probs that do not line up: {e}"
                ) from e
        return out

    def generate(
        self, prompts: list[list[int]], sampling: SamplingParams | Sequence[SamplingParams], on_token=None
    ) -> list[Generation]:
        """The gate's short decode of each hinted context (`Teacher.apologising`), one request per row."""
        out = []
        for prompt, s in zip(prompts, per_row(sampling, len(prompts))):
            body = {
                "model": self.model,
                "prompt": list(prompt),
                "max_tokens": s.max_new_tokens,
                "temperature": s.temperature,
            }
            body |= {"stop_token_ids": list(s.stop_token_ids), "return_token_ids": True, "skip_special_tokens": False}
            choice = self._post("/completions", body)["choices"][0]
            ids = [int(t) for t in choice.get("token_ids") or []]
            out.append(Generation(ids, [0.0] * len(ids), choice.get("finish_reason") == "stop", self.version))
        return out

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request, retried as the judge backends retry; its JSON answer, or a `TeacherError`."""
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            try:
                resp = self.client.post(path, json=body)
                if resp.status_code == 200:
                    return resp.json()
                error = f"HTTP {resp.status_code}: {resp.text[:300]}"
                retry = resp.status_code == 429 or resp.status_code >= 500
            except httpx.TransportError as e:  # refused, reset, timed out
                error, retry = f"{type(e).__name__}: {e}", True
            except ValueError as e:  # a 200 whose body is not JSON
                error, retry = f"an answer that is not JSON ({e})", False
            if attempt == self.max_retries or not retry:
                raise TeacherError(
                    f"the teacher at {self.base_url}{path} failed after {attempt + 1} attempt(s): {error}"
                )
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def load_weights(self, named_tensors, version: int) -> None:
        raise TypeError(f"the teacher at {self.base_url} is served elsewhere: claw loads no weights into it")

    def sleep(self) -> None:
        pass

    def wake(self) -> None:
        pass

    def close(self) -> None:
        self.client.close()
