"""`cfg.judge` → the PRM judge and the hint extractor, sharing one backend.

The backend is the class `judge.backend` names by import path (a backend of your own, docs/judges.md#adding-a-judge-
backend), else the shipped backend of `judge.kind`. Its constructor takes each parameter the judge config sets by
name, and the colocated engine and tokenizer where it names them; so a new backend is one module and one
`conf/judge/<name>.yaml`, and nothing here changes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from hydra.utils import get_class
from omegaconf import DictConfig

from claw.engine.base import Engine
from claw.judge.backends import SHIPPED_BACKENDS, Backend, one_of
from claw.judge.hint import HintJudge
from claw.judge.prm import PRMJudge
from claw.judge.prompts import load_prompt


@dataclass
class Judges:
    prm: PRMJudge
    hint: HintJudge
    backend: Backend


def build_judges(judge_cfg: DictConfig, engine: Engine | None = None, tokenizer: Any = None) -> Judges:
    """Build both judges from `cfg.judge`. `judge=policy` needs the colocated engine and its tokenizer."""
    cls = backend_class(judge_cfg)
    backend = cls(**backend_arguments(cls, judge_cfg, {"engine": engine, "tokenizer": tokenizer}))
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


def backend_class(judge_cfg: DictConfig) -> type[Backend]:
    """The class `judge.backend` names by import path, else the shipped backend of `judge.kind`."""
    if judge_cfg.get("backend"):
        return get_class(judge_cfg.backend)
    kind = judge_cfg.get("kind")
    if kind not in SHIPPED_BACKENDS:
        choices = one_of([f"judge={name}" for name in SHIPPED_BACKENDS])
        raise ValueError(f"judge={kind} has no LLM judge; choose {choices}, or name a backend class in judge.backend")
    return SHIPPED_BACKENDS[kind]


def backend_arguments(cls: type, judge_cfg: DictConfig, colocated: dict[str, Any]) -> dict[str, Any]:
    """The constructor's arguments: each parameter the judge config sets by name, and each of `colocated` (the engine
    and its tokenizer) that the constructor names. A parameter neither sets keeps its default; a colocated one
    without a default must be passed."""
    parameters = {
        name: p
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    arguments = {name: judge_cfg[name] for name in parameters if name in judge_cfg and name not in colocated}
    for name, value in colocated.items():
        if name not in parameters:
            continue
        if value is None and parameters[name].default is inspect.Parameter.empty:
            raise ValueError(
                f"judge={judge_cfg.get('kind')} judges with the colocated engine: pass engine= and tokenizer="
            )
        if value is not None:
            arguments[name] = value
    return arguments
