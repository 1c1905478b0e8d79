"""What every simulated user shares: the reply type, the opening, and the tool environment.

A user never exposes its persona's rating: `UserReply` carries only what the user *says*, so
the training signal can come only from the judge reading those words.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from claw.users.persona import Persona

Message = dict[str, Any]


@dataclass(frozen=True)
class UserReply:
    text: str | None  # the user's next message; None when the user leaves without a word
    done: bool  # the session ends after this reply


class SimulatedUser:
    """Base of `ScriptedUser` and `LLMUser`: opens the session and serves the persona's tools."""

    def __init__(self, persona: Persona, task: dict, seed: int = 0) -> None:
        self.persona = persona
        self.task = task
        self.seed = seed
        self.rng = random.Random(f"{seed}/{task.get('id', '')}")
        self.turns = 0  # agent responses answered so far
        self.opening: str | None = None

    def open(self) -> str:
        """The first user message (the task, phrased by one of the persona's opening templates)."""
        self.opening = self.persona.opening(self.task, self.rng)
        return self.opening

    def tool_results(self, assistant_message: Message) -> list[Message]:
        """`role: tool` messages answering each tool call of `assistant_message`, from the persona's environment.
        The driver sends these back to the agent instead of a user reply."""
        out = []
        for call in assistant_message.get("tool_calls") or []:
            fn = call.get("function") or {}
            content = self.persona.run_tool(fn.get("name", ""), fn.get("arguments") or "{}", self.task)
            out.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": content})
        return out

    @property
    def at_turn_limit(self) -> bool:
        return self.turns >= self.persona.turn_limit
