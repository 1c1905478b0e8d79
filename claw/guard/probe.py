"""The probe-set check: score the candidate on a small held-out set before it is promoted.

The candidate is the trainer's model (the engine still serves the promoted version), so the probe
decodes greedily with the trainer's own weights (`greedy_generate`; no copy, no engine load).
The served version's probe score is the score it had as a candidate when it was promoted
(`served.json` keeps it); the initial version is scored at the start of a fresh run.

Which probe set, by source:

- `simulated_user`: the persona's hidden scorer on the agent's first response, as in the final
  evaluation, on `size` tasks of the persona's eval split (never trained on) drawn with another
  seed and with every task of the final evaluation set removed (`probe_tasks`): deciding on the
  final evaluation's own tasks would select on the test set.
- `dataset`: the verifier on held-out prompts — rows `eval_size .. eval_size + size` of the
  source's `eval_path` (the final evaluation uses the first `eval_size` rows), loaded as the source
  loads them and scored by the source's own verifier (`source.reward`).
- `proxy`: a user-supplied JSONL file, one probe per line: `{"messages": [...]}` or
  `{"prompt": "..."}` plus whatever the reward function reads (`answer`, `expected`, ...), scored
  by the reward function `reward` (a name in `REWARDS` or `package.module:function`, called as
  `fn(response_text, item) -> float`).

Greedy decoding makes a probe score a deterministic function of the weights: two versions differ
on the probe only where their argmax answers differ. With 16 tasks the score moves in steps of
1/16 of a task's range, so `thresholds.probe_margin` should be at least one step.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from claw.engine.base import Generation, SamplingParams
from claw.logprobs import position_ids
from claw.sources.proxy.render import ChatRenderer
from claw.tasks import arithmetic
from claw.tasks.rows import load_rows

REPO = Path(__file__).resolve().parents[2]
PROBE_SEED = 7_919  # probe tasks are drawn with seed + PROBE_SEED: never the final evaluation's draw


@dataclass(frozen=True)
class ProbeScore:
    score: float  # mean over the probe items
    n: int
    scores: tuple[float, ...]  # per item, in a fixed order (paired comparisons)

    def to_json(self) -> dict[str, Any]:
        return {"score": self.score, "n": self.n}


def probe_score(scores: list[float]) -> ProbeScore:
    return ProbeScore(sum(scores) / len(scores) if scores else math.nan, len(scores), tuple(scores))


# -- decoding with the trainer's weights -----------------------------------------------------------
@torch.no_grad()
def greedy_generate(
    model: torch.nn.Module,
    prompts: list[list[int]],
    max_new_tokens: int,
    eos_ids: set[int],
    pad_id: int,
    batch_size: int = 16,
) -> list[list[int]]:
    """Greedy continuation of each prompt by `model` (left-padded batches, KV cache); stops at an EOS id."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    out: list[list[int]] = []
    try:
        for start in range(0, len(prompts), batch_size):
            chunk = prompts[start : start + batch_size]
            B, P = len(chunk), max(len(p) for p in chunk)
            ids = torch.full((B, P), pad_id, dtype=torch.long)
            mask = torch.zeros((B, P), dtype=torch.long)
            for i, p in enumerate(chunk):
                ids[i, P - len(p) :] = torch.tensor(p)
                mask[i, P - len(p) :] = 1
            ids, mask = ids.to(device), mask.to(device)
            tokens: list[list[int]] = [[] for _ in range(B)]
            done = [False] * B
            pos = position_ids(mask)
            res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
            pos = pos[:, -1:]
            for _ in range(max_new_tokens):
                nxt = res.logits[:, -1].argmax(-1)
                for i, tok in enumerate(nxt.tolist()):
                    if not done[i]:
                        tokens[i].append(tok)
                        done[i] = tok in eos_ids
                if all(done):
                    break
                # finished rows keep decoding (simpler than dropping them from the cache); their tokens are ignored
                mask = torch.cat([mask, mask.new_ones((B, 1))], dim=1)
                pos = pos + 1
                res = model(
                    input_ids=nxt.unsqueeze(-1),
                    attention_mask=mask,
                    position_ids=pos,
                    past_key_values=res.past_key_values,
                    use_cache=True,
                )
            out.extend(tokens)
    finally:
        model.train(was_training)
    return out


class ModelGenerator:
    """The engine's `generate` for a model in the trainer: greedy only (what a probe decodes with)."""

    def __init__(self, model: torch.nn.Module, tokenizer, version: int, batch_size: int = 16) -> None:
        self.model, self.version, self.batch_size = model, version, batch_size
        self.eos_ids, self.pad_id = {tokenizer.eos_token_id}, tokenizer.pad_token_id

    def generate(self, prompts: list[list[int]], sampling: SamplingParams) -> list[Generation]:
        if sampling.temperature > 0:
            raise ValueError("the probe decodes greedily (temperature 0)")
        ids = greedy_generate(self.model, prompts, sampling.max_new_tokens, self.eos_ids, self.pad_id, self.batch_size)
        return [Generation(t, [0.0] * len(t), bool(t) and t[-1] in self.eos_ids, self.version) for t in ids]


# -- probe sets ------------------------------------------------------------------------------------
class PersonaProbe:
    """`source=simulated_user`: the persona's rating of the first response on probe tasks."""

    def __init__(self, source, size: int, max_new_tokens: int | None) -> None:
        self.source = source
        self.tasks = probe_tasks(source.persona, source.eval_tasks, size, source.seed)
        self.sampling = SamplingParams(0.0, max_new_tokens or source.eval_sampling.max_new_tokens)

    def score(self, generator: ModelGenerator) -> ProbeScore:
        result = self.source.evaluate(tasks=self.tasks, generate=generator.generate, sampling=self.sampling)
        return probe_score(result.scores)


def probe_tasks(persona, eval_tasks: list[dict], size: int, seed: int) -> list[dict]:
    """`size` tasks of the persona's eval split, none of them in `eval_tasks` (the final evaluation set)."""
    held = {t["id"] for t in eval_tasks}
    drawn = persona.tasks("eval", size + len(held), seed=seed + PROBE_SEED)
    tasks = [t for t in drawn if t["id"] not in held][:size]
    if len(tasks) < size:
        raise ValueError(f"only {len(tasks)} probe tasks outside the evaluation set; lower guard.probe.size")
    return tasks


class VerifierProbe:
    """`source=dataset`: the verifier on held-out prompts the final evaluation does not use."""

    def __init__(self, source, eval_path: str, eval_size: int, size: int, max_new_tokens: int | None,
                 eval_split: str = "test", dataset_config: str | None = None) -> None:  # fmt: skip
        rows = load_rows(eval_path, eval_split, dataset_config)
        self.items = rows[eval_size : eval_size + size]
        if len(self.items) < size:
            raise ValueError(
                f"{eval_path} has {len(rows)} rows: the evaluation takes the first {eval_size}, "
                f"leaving {len(rows) - eval_size} for a probe of {size}; lower guard.probe.size or source.eval_size"
            )
        self.source = source
        self.sampling = SamplingParams(0.0, max_new_tokens or source.eval_sampling.max_new_tokens)

    def score(self, generator: ModelGenerator) -> ProbeScore:
        """The source's own template and verifier (`source.reward`), on rows its evaluation does not use."""
        gens = generator.generate([self.source.render(row) for row in self.items], self.sampling)
        texts = [self.source.tokenizer.decode(g.response_ids, skip_special_tokens=True) for g in gens]
        return probe_score(self.source.score(self.items, texts, [f"probe row {i}" for i in range(len(texts))]))


def _contains(text: str, item: dict) -> float:
    """1 when the item's `expected` string is in the response (case-insensitive), else 0."""
    return float(str(item["expected"]).lower() in text.lower())


def _answer(text: str, item: dict) -> float:
    """The arithmetic verifier: 1 when the response's final number is the item's integer `answer`."""
    return arithmetic.reward(text, int(item["answer"]))


REWARDS: dict[str, Callable[[str, dict], float]] = {"contains": _contains, "answer": _answer}


def reward_function(name: str) -> Callable[[str, dict], float]:
    """A name in `REWARDS`, or `package.module:function`."""
    if name in REWARDS:
        return REWARDS[name]
    if ":" not in name:
        raise ValueError(f"guard.probe.reward={name!r}: one of {sorted(REWARDS)} or 'package.module:function'")
    module, fn = name.split(":", 1)
    return getattr(importlib.import_module(module), fn)


class FileProbe:
    """`source=proxy`: prompts from a JSONL file, scored by a reward function."""

    def __init__(self, path: str, reward: str, tokenizer, size: int, max_new_tokens: int | None) -> None:
        lines = [line for line in resolve_path(path).read_text().splitlines() if line.strip()]
        self.items = [json.loads(line) for line in lines][:size]
        for k, item in enumerate(self.items):
            if not isinstance(item, dict) or not (
                isinstance(item.get("messages"), list) or isinstance(item.get("prompt"), str)
            ):
                raise ValueError(
                    f"{path} line {k + 1}: a probe is {{'messages': [...]}} or {{'prompt': '...'}} "
                    "(plus what the reward reads)"
                )
        if not self.items:
            raise ValueError(f"{path}: no probes")
        self.reward = reward_function(reward)
        self.tokenizer = tokenizer
        self.renderer = ChatRenderer(tokenizer)
        self.sampling = SamplingParams(0.0, max_new_tokens or 128)

    def score(self, generator: ModelGenerator) -> ProbeScore:
        msgs = [item.get("messages") or [{"role": "user", "content": item["prompt"]}] for item in self.items]
        gens = generator.generate([self.renderer.render(m, None) for m in msgs], self.sampling)
        texts = [self.tokenizer.decode(g.response_ids, skip_special_tokens=True) for g in gens]
        return probe_score([float(self.reward(t, item)) for t, item in zip(texts, self.items)])


def build_probe(cfg, source, tokenizer):
    """The probe set for `cfg.source` (see the module docstring); `cfg.guard.probe` sizes it."""
    p = cfg.guard.probe
    kind = cfg.source.name
    if kind == "simulated_user":
        return PersonaProbe(source, p.size, p.max_new_tokens)
    if kind == "dataset":
        return VerifierProbe(
            source, cfg.source.eval_path, cfg.source.eval_size, p.size, p.max_new_tokens,
            cfg.source.get("eval_split", "test"), cfg.source.get("dataset_config"),
        )  # fmt: skip
    if kind == "proxy":
        if not p.file:
            raise ValueError(
                "guard.checks has probe with source=proxy: set guard.probe.file "
                "(JSONL of prompts) and guard.probe.reward"
            )
        return FileProbe(p.file, p.reward, tokenizer, p.size, p.max_new_tokens)
    raise ValueError(f"no probe set for source {kind!r}")


def resolve_path(path: str) -> Path:
    """A relative path is taken from the working directory, else from the repository root (as the sources do)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or p.exists() else REPO / p
