"""`cfg.judge` → the PRM judge and the hint extractor, sharing one backend."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from claw.engine.base import Engine
from claw.judge.backends import Backend, build_backend
from claw.judge.hint import HintJudge
from claw.judge.prm import PRMJudge
from claw.judge.prompts import load_prompt

# Keys of conf/judge/<kind>.yaml that configure the backend rather than the judges.
_BACKEND_KEYS = {
    "openai": ("base_url", "api_key", "model", "timeout_s", "max_retries", "backoff_s"),
    "rule": ("credit_points", "credit_floor", "reader_head", "reader_head_min_p", "reader_head_flips", "reask_credit"),
    "policy": (),
}


@dataclass
class Judges:
    prm: PRMJudge
    hint: HintJudge
    backend: Backend


def build_judges(judge_cfg: DictConfig, engine: Engine | None = None, tokenizer: Any = None) -> Judges:
    """Build both judges from `cfg.judge`. `judge=policy` needs the colocated engine and its tokenizer."""
    kind = judge_cfg.kind
    if kind not in _BACKEND_KEYS:
        raise ValueError(f"judge={kind} has no LLM judge; choose judge=rule, judge=openai or judge=policy")
    # a key the config leaves out takes the backend's default
    kwargs: dict[str, Any] = {key: judge_cfg[key] for key in _BACKEND_KEYS[kind] if key in judge_cfg}
    if kind == "policy":
        if engine is None or tokenizer is None:
            raise ValueError("judge=policy judges with the colocated engine: pass engine= and tokenizer=")
        kwargs = {"engine": engine, "tokenizer": tokenizer}
    backend = build_backend(kind, **kwargs)
    sampling = {"temperature": judge_cfg.get("temperature", 0.6), "max_tokens": judge_cfg.get("max_tokens", 512)}
    common = {
        "m": judge_cfg.m,
        "timeout_s": judge_cfg.timeout_s,
        "max_concurrency": judge_cfg.max_concurrency,
        **sampling,
    }
    return Judges(
        prm=PRMJudge(
            backend, prompt=load_prompt(judge_cfg.prm_prompt), credit=judge_cfg.get("credit", "binary"), **common
        ),
        hint=HintJudge(
            backend, min_hint_chars=judge_cfg.min_hint_chars, prompt=load_prompt(judge_cfg.hint_prompt), **common
        ),
        backend=backend,
    )
