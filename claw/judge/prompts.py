"""Judge prompts are templates in `conf/judge/prompts/*.yaml`, so they can be edited without code.

A template has a `system` and a `user` string with the placeholders `{conversation}`,
`{response}` and `{next_state}`. Filling is a single regex pass over exactly those three names,
not `str.format`: the prompts themselves are full of braces (`\\boxed{1}`), and text pasted in
from the conversation must never be expanded again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from claw.judge.turn import Message, Turn, render_messages

PROMPTS_DIR = Path(__file__).resolve().parents[2] / "conf" / "judge" / "prompts"
PLACEHOLDERS = ("conversation", "response", "next_state")
REQUIRED = ("response", "next_state")  # a judge that cannot see the action and its consequence judges nothing
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class PromptTemplate:
    system: str
    user: str

    def __post_init__(self) -> None:
        used = set(_PLACEHOLDER.findall(self.system + self.user))
        missing = [name for name in REQUIRED if name not in used]
        if missing:
            names = ", ".join("{" + name + "}" for name in missing)
            raise ValueError(f"judge prompt lacks {names}: a judge must see the response and the next state")

    def render(self, turn: Turn) -> list[Message]:
        """Chat messages for the judge: [system] (when non-empty) + user."""
        values = {
            "conversation": render_messages(turn.messages),
            "response": turn.response_text,
            "next_state": render_messages(turn.next_state),
        }

        def fill(template: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)

        system = [{"role": "system", "content": fill(self.system)}] if self.system.strip() else []
        return system + [{"role": "user", "content": fill(self.user)}]


def load_prompt(path: str | Path) -> PromptTemplate:
    """Load a template; a relative path is looked up in `conf/judge/prompts/`."""
    path = Path(path)
    if not path.is_absolute():
        path = PROMPTS_DIR / path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or set(data) != {"system", "user"}:
        found = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: a judge prompt has exactly the keys `system` and `user` (found {found})")
    return PromptTemplate(system=str(data["system"]), user=str(data["user"]))


@dataclass(frozen=True)
class VotePrompt:
    """What a judge asks for one vote: its prompt template and how to sample the answer. A backend that completes
    prompts answers it; one that reads the turn itself ignores it."""

    template: PromptTemplate
    temperature: float = 0.6
    max_tokens: int = 512
