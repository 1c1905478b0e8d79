"""`user=scripted`: a deterministic user that answers from its persona's criteria, by its habits.

It rates each final agent response with the persona's hidden criteria, then its habits (`claw.users.habits`,
`source.habits`) decide what it says: with `oracle`, thanks when everything is met, otherwise a correction built
from the phrases of every unmet criterion ("Don't start with 'To solve this problem'. Keep it under 60 words."),
optionally after acknowledging one met criterion; with `realistic`, it may also say nothing and move on, leave,
name one thing, say "hmm, not quite", thank a good-enough reply, re-ask the question, or blame the wrong thing.
At the turn limit a complaint comes with a closing line and ends the session. Every choice comes from
`random.Random(seed, task id)`, so a session replays exactly.
"""

from __future__ import annotations

from claw.users.base import Message, SimulatedUser, UserReply
from claw.users.habits import Habits, Speaker
from claw.users.persona import Persona


class ScriptedUser(SimulatedUser):
    kind = "scripted"

    def __init__(
        self, persona: Persona, task: dict, seed: int = 0, habits: Habits | None = None, next_task: dict | None = None
    ) -> None:
        super().__init__(persona, task, seed)
        self.habits = habits or Habits.build(None, persona.habits)
        self.speaker = Speaker(persona, self.habits, self.rng)
        self.next_task = next_task  # what a user who moves on asks next (`silence`); None: they leave instead
        self.actions: list[str] = []  # what the user did after each reply: thanks, complain, silence, ...

    def respond(self, assistant: Message | list[Message]) -> UserReply:
        """The user's reply to the agent's final message — or, for a tool persona, to the agent's messages
        since the last user message (tool calls, tool results, final answer), so criteria such as
        `called_tool` see the calls. Tool calls themselves are answered by `tool_results`, not here."""
        final = assistant if isinstance(assistant, dict) else (assistant[-1] if assistant else {})
        if final.get("tool_calls"):
            raise ValueError(
                "the agent's last message calls tools: send user.tool_results(message) to the agent, not a user reply"
            )
        self.turns += 1
        passed = self.persona.rate(assistant, self.task).passed
        action, text = self.speaker.react(passed)
        if action == "silence" and self.next_task is None:
            action = "abandon"
        self.actions.append(action)
        if action == "thanks":
            return UserReply(self._say(text), done=True)
        if action == "abandon":
            return UserReply(None, done=True)
        if action == "silence":  # a new request on another task: this session's reply gets no word
            return UserReply(self.persona.opening(self.next_task, self.rng), done=True)
        if action == "rephrase":
            text = self.speaker.rephrased(self.task)
        else:
            text = self._say(text)
        if self.at_turn_limit:
            closing = self._say(self.rng.choice(self.persona.closing))
            return UserReply(text if action == "rephrase" else f"{text} {closing}", done=True)
        return UserReply(text, done=False)

    async def arespond(self, assistant: Message | list[Message]) -> UserReply:
        return self.respond(assistant)

    def _say(self, template: str) -> str:
        return template.format(**self.task).strip()
