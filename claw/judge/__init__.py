"""Judges (docs/judges.md): the PRM evaluator (reward from m votes) and the hint extractor (OPD),
over one of three backends: an OpenAI-compatible endpoint, the colocated engine, or lexical rules."""

from claw.judge.backends import Backend, OpenAIBackend, PolicyBackend, RuleBackend, build_backend
from claw.judge.build import Judges, build_judges
from claw.judge.hint import HintJudge, HintResult, append_hint
from claw.judge.prm import PRMJudge, PRMResult
from claw.judge.prompts import PromptTemplate, load_prompt
from claw.judge.turn import Turn
from claw.judge.voting import Verdict, majority, parse_score

__all__ = [
    "Backend", "HintJudge", "HintResult", "Judges", "OpenAIBackend", "PRMJudge", "PRMResult", "PolicyBackend",
    "PromptTemplate", "RuleBackend", "Turn", "Verdict", "append_hint", "build_backend", "build_judges",
    "load_prompt", "majority", "parse_score",
]  # fmt: skip
