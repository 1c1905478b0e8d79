"""Several people at once for `source=simulated_user`: `source.persona=[terse,explainer,plain]`.

Each `Person` is one persona with its habits, its training tasks and its held-out evaluation. Session k belongs to
person k mod P and opens that person's task k div P; every request it sends names the person (`user`), so the proxy
records whose turn it is and, under personalize=per_user, serves it with that person's adapter. The evaluation
rates each person's first responses with their own adapter (the request's `user`); `PopulationEval` holds one
`PersonaEval` per person and reports each, and their mean as the headline.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from claw.evaluation import PersonaEval, paired_test
from claw.sources.persona_eval import PersonaEvaluation
from claw.users import Habits, Persona


@dataclass
class Person:
    persona: Persona
    habits: Habits
    seed: int
    eval_tasks: list[dict] = field(default_factory=list)
    evaluation: PersonaEvaluation | None = None
    _train_tasks: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.persona.name

    def task(self, j: int) -> dict:
        """This person's j-th training task; drawn in blocks of 512, none depending on a later one."""
        while j >= len(self._train_tasks):
            block = len(self._train_tasks) // 512
            self._train_tasks += self.persona.tasks("train", 512, seed=self.seed * 100003 + block)
        return self._train_tasks[j]

    def evaluate(self, generate, sampling, version: int, tasks: list[dict] | None = None) -> PersonaEval:
        """The rating of this person's first responses, each decoded as their request would be (their `user`)."""
        mine = dataclasses.replace(sampling, user=self.name)
        return self.evaluation.evaluate(self.eval_tasks if tasks is None else tasks, generate, mine, version)


@dataclass
class PopulationEval:
    """One `PersonaEval` per person; the headline is their mean rating."""

    people: dict[str, PersonaEval]

    @property
    def headline(self) -> float:
        return sum(e.score for e in self.people.values()) / len(self.people)

    def summary(self) -> str:
        return f"mean rating {self.headline:.3f}; " + "; ".join(e.summary() for e in self.people.values())

    def metrics(self) -> dict[str, float]:
        out = {"eval/score": self.headline}
        for name, e in self.people.items():
            out.update({k.replace("eval/", f"eval/{name}/", 1): v for k, v in e.metrics().items()})
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "score": self.headline,
            "people": {n: e.to_json() for n, e in self.people.items()},
        }

    def report(self, before: dict, steps: int, wall_s: float) -> tuple[str, dict]:
        """Each person's before/after table and paired test (`PersonaEval.report`). The stats: the test of every
        person's tasks pooled (as one persona's), and each person's under `people`."""
        texts, each = [], {}
        for name, e in self.people.items():
            text, each[name] = e.report(before["people"][name], steps, wall_s)
            texts.append(text)
        both = [(before["people"][n]["scores"], e.scores) for n, e in self.people.items()]
        pooled = paired_test([x for b, _ in both for x in b], [x for _, a in both for x in a])
        stats = {**pooled.to_json(), "people": each}
        texts.append(
            f"[claw] all {len(self.people)} people: gain {pooled.gain:+.3f}, 95% bootstrap CI "
            f"[{pooled.gain_low:+.3f}, {pooled.gain_high:+.3f}], ttest_rel p = {pooled.p:.3g}\n"
        )
        return "\n".join(texts), stats
