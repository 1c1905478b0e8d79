"""`user=llm`: the persona's prompt drives any OpenAI-compatible chat model as the user.

As in OpenClaw-RL's student/teacher scripts, the roles are flipped in the simulator's history:
its own (user) messages are `assistant`, the agent's replies are `user`, prefixed with
`persona.llm.reply_prefix`. `<think>` blocks are stripped both from what the agent said (the
user reads the answer, not the reasoning) and from what the simulator says (its reasoning is not
part of its reply). The simulator ends the session by writing `persona.llm.done_marker`; the
marker is removed from the text the agent sees. The turn limit ends it regardless.
"""

from __future__ import annotations

import inspect
from typing import Any

from claw.users.base import Message, SimulatedUser, UserReply
from claw.users.persona import Persona, as_response, strip_think


class LLMUser(SimulatedUser):
    kind = "llm"

    def __init__(
        self, persona: Persona, task: dict, seed: int = 0, client: Any = None, model: str | None = None
    ) -> None:
        if client is None or not model:
            raise ValueError(
                "user=llm needs an OpenAI-compatible `client` (openai.OpenAI / AsyncOpenAI) and a `model` name"
            )
        super().__init__(persona, task, seed)
        self.client, self.model = client, model
        self.history: list[Message] = []  # the simulator's view, roles flipped (no system prompt)

    def open(self) -> str:
        text = super().open()
        self.history.append({"role": "assistant", "content": text})
        return text

    def simulator_messages(self) -> list[Message]:
        """What the simulator model is sent: the persona prompt as system, then the flipped history."""
        return [{"role": "system", "content": self.persona.llm.prompt.format(**self.task)}, *self.history]

    def _see(self, assistant: Message | list[Message]) -> None:
        text = as_response(assistant).text  # the final answer's text, <think> stripped
        self.history.append({"role": "user", "content": f"{self.persona.llm.reply_prefix}{text}"})
        self.turns += 1

    def _reply(self, completion: Any) -> UserReply:
        raw = completion.choices[0].message.content or ""
        text = strip_think(raw)
        marker = self.persona.llm.done_marker
        done = marker in text or self.at_turn_limit
        text = text.replace(marker, "").strip()
        self.history.append({"role": "assistant", "content": text})
        return UserReply(text or None, done=done)

    def _request(self) -> dict[str, Any]:
        spec = self.persona.llm
        return {
            "model": self.model,
            "messages": self.simulator_messages(),
            "temperature": spec.temperature,
            "max_tokens": spec.max_tokens,
        }

    async def arespond(self, assistant: Message | list[Message]) -> UserReply:
        """The simulator's reply to the agent's final message (or its messages since the last user turn)."""
        self._see(assistant)
        result = self.client.chat.completions.create(**self._request())
        if inspect.isawaitable(result):
            result = await result
        return self._reply(result)

    def respond(self, assistant: Message | list[Message]) -> UserReply:
        """Synchronous variant for a synchronous `openai.OpenAI` client."""
        self._see(assistant)
        result = self.client.chat.completions.create(**self._request())
        if inspect.isawaitable(result):
            result.close()
            raise TypeError(
                "LLMUser.respond needs a synchronous client; with openai.AsyncOpenAI use `await user.arespond(...)`"
            )
        return self._reply(result)
