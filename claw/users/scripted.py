"""`user=scripted`: a deterministic user that answers from its persona's criteria.

It rates each final agent response with the persona's hidden criteria and *says* the result the
way a person would: thanks when everything is met, otherwise a correction built from the
`fail_phrases` of the unmet criteria ("Don't start with 'To solve this problem'. Keep it under 60
words."), optionally after acknowledging one met criterion. At the turn limit it closes with the
last correction and a closing line. Every choice of wording comes from `random.Random(seed, task id)`,
so a session replays exactly.
"""

from __future__ import annotations

from claw.users.base import Message, SimulatedUser, UserReply


class ScriptedUser(SimulatedUser):
    kind = "scripted"

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
        if all(passed.values()):
            return UserReply(self._say(self.rng.choice(self.persona.thanks)), done=True)
        text = self._feedback(passed)
        if self.at_turn_limit:
            return UserReply(f"{text} {self._say(self.rng.choice(self.persona.closing))}", done=True)
        return UserReply(text, done=False)

    async def arespond(self, assistant: Message | list[Message]) -> UserReply:
        return self.respond(assistant)

    def _feedback(self, passed: dict[str, bool]) -> str:
        """Corrections for the unmet criteria (persona order, at most `max_complaints`),
        after an optional acknowledgement."""
        met = [c for c in self.persona.criteria if passed[c.id] and c.pass_phrases]
        unmet = [c for c in self.persona.criteria if not passed[c.id]][: self.persona.max_complaints]
        parts = []
        if met and self.rng.random() < self.persona.ack_probability:
            parts.append(self.rng.choice(self.rng.choice(met).pass_phrases))
        parts += [self.rng.choice(c.fail_phrases) for c in unmet]
        return " ".join(self._say(p) for p in parts)

    def _say(self, template: str) -> str:
        return template.format(**self.task).strip()
