"""Simulated users: personas (YAML data), the check library, and the scripted / llm user types.

The driver (`source=simulated_user`) builds one user per session with `make_user`, sends
`user.open()` to the agent, answers tool calls with `user.tool_results(message)`, and the agent's
final messages with `user.respond(...)` / `await user.arespond(...)` until `reply.done`.
`persona.rate(...)` is the hidden scorer, for evaluation only.
"""

from __future__ import annotations

from typing import Any

from claw.users.base import SimulatedUser, UserReply
from claw.users.checks import CHECKS, CheckError, Response, make_check
from claw.users.habits import PRESETS, Habits, HabitsError, Phrasings
from claw.users.llm import LLMUser
from claw.users.persona import Criterion, Persona, PersonaError, Rating, strip_think
from claw.users.scripted import ScriptedUser

USER_KINDS = {"scripted": ScriptedUser, "llm": LLMUser}


def make_user(
    kind: str,
    persona: Persona | str,
    task: dict,
    seed: int = 0,
    client: Any = None,
    model: str | None = None,
    habits: Habits | None = None,
    next_task: dict | None = None,
) -> SimulatedUser:
    """One simulated user for one session. `persona` is a Persona or a name/path for `Persona.load`; `habits`
    (scripted users) how it talks back, default the oracle with the persona's overrides; `next_task` what it asks
    when it moves on without a word."""
    if kind not in USER_KINDS:
        raise ValueError(f"user kind {kind!r} is not one of {sorted(USER_KINDS)}")
    persona = persona if isinstance(persona, Persona) else Persona.load(persona)
    if kind == "llm":
        return LLMUser(persona, task, seed, client=client, model=model)
    return ScriptedUser(persona, task, seed, habits=habits, next_task=next_task)


__all__ = [
    "CHECKS", "CheckError", "Criterion", "Habits", "HabitsError", "PRESETS", "Phrasings", "LLMUser", "Persona",
    "PersonaError", "Rating", "Response", "ScriptedUser", "SimulatedUser", "UserReply", "USER_KINDS", "make_check",
    "make_user", "strip_think",
]  # fmt: skip
