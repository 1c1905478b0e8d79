"""Rollout engines behind one protocol (`Engine`): generate, score, load weights, version."""

from claw.engine.base import Engine, Generation, SamplingParams
from claw.engine.build import build_engine, engine_kind
from claw.engine.hf import HFEngine

__all__ = ["Engine", "Generation", "HFEngine", "SamplingParams", "build_engine", "engine_kind"]
