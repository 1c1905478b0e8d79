"""How a simulated user talks back (`source.habits`): the ways real people answer a reply, as probabilities.

The scripted user rates each reply with its persona's hidden criteria; the habits decide what it then *says*.
With `oracle` it says every failed criterion in its persona's own words and thanks only a perfect reply: the
upper reference. Real users mostly do not (studies of WildChat, LMSYS-Chat-1M and WildFeedback logs: most turns
carry no feedback at all, a complaint names one thing and often no fix, users accept good-enough answers, re-ask
instead of complaining, and leave). `realistic` plays those habits.

Each reply that misses a criterion is answered by the first habit that fires, in this order:

1. `abandon`: the user leaves without a word (the session ends; the turn's outcome is
   `session_ended_without_reply`: no signal);
2. `silence`: the user moves on to another task without a word about the reply (the next state is a new, unrelated
   request: the judge reads it as neutral);
3. `lenient`: when only minor criteria failed, the user thanks the reply anyway (with `reservation`, the thanks
   names the minor problem: "thanks, though it's a bit long");
4. `rephrase`: the user asks the same question again in other words instead of complaining;
5. otherwise a complaint: `vague` ("hmm, not quite": names nothing) or about the unmet criteria — the most salient
   one only with `one_at_a_time`, else every one (at most the persona's `max_complaints`).

Independently, `mistaken` makes the user complain about a criterion the reply *met* (people are sometimes wrong),
on a perfect reply as on an imperfect one.

Wording (`phrasing`): `persona` uses the persona file's `fail_phrases` (the shipped personas' are pinned by the
judge's tests: the oracle's loop is the judge's home ground); `independent` uses `personas/phrasings/<persona>.yaml`
and `personas/phrasings/default.yaml`, written without reference to the judge and kept out of its tests, falling
back to the persona's own phrases for a criterion they do not cover.

A persona file may override any habit (`habits:` in the persona YAML), e.g. a terse user who never thanks.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PRESETS: dict[str, dict[str, Any]] = {
    # today's scripted user: every failed criterion said, in the persona's words; thanks only when all are met
    "oracle": {},
    # The defaults below are reasoned choices, not fitted to any data set: the cited studies report that feedback is
    # sparse and implicit, not these exact rates. The robustness table (experiments/personal_agent/) measures the
    # gain across each habit's range, so a reader can take the level they believe.
    "realistic": {
        "silence": 0.3,  # WildChat / LMSYS-Chat-1M: most conversations end or move on after one reply, no comment
        "abandon": 0.1,  # users leave; a reasoned share of the imperfect replies
        "one_at_a_time": True,  # WildFeedback: dissatisfaction usually names one thing
        "vague": 0.25,  # "that's not what I meant": a complaint that names no fix is common in those logs
        "lenient": 0.3,  # satisficing: a good-enough reply is thanked (reasoned: a third of the nearly-right ones)
        "reservation": 0.5,  # half of those thanks mention the minor problem
        "mistaken": 0.05,  # users misjudge a reply now and then (reasoned: one reply in twenty)
        "rephrase": 0.1,  # re-asking in other words instead of complaining (reasoned: one imperfect reply in ten)
        "phrasing": "independent",
    },
}
PHRASINGS = ("persona", "independent")
PHRASINGS_DIR = Path(__file__).resolve().parents[2] / "personas" / "phrasings"
# criteria about substance (the answer itself): never "minor", so leniency does not forgive them
SUBSTANCE_KINDS = frozenset({"answer_correct", "first_sentence_states_answer", "mentions_number", "if_field",
                             "called_tool"})  # fmt: skip


class HabitsError(ValueError):
    """A habits setting is unknown or out of range."""


@dataclass(frozen=True)
class Habits:
    silence: float = 0.0
    abandon: float = 0.0
    one_at_a_time: bool = False
    vague: float = 0.0
    lenient: float = 0.0
    reservation: float = 0.0
    mistaken: float = 0.0
    rephrase: float = 0.0
    phrasing: str = "persona"
    minor: tuple[str, ...] | None = None  # criterion ids leniency may forgive (None: every non-substance criterion)
    salience: tuple[str, ...] | None = None  # which unmet criterion is named first (None: the persona's order)

    def __post_init__(self) -> None:
        for name in ("silence", "abandon", "vague", "lenient", "reservation", "mistaken", "rephrase"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise HabitsError(f"source.habits.{name} must be a probability in [0, 1] (got {value!r})")
        if self.phrasing not in PHRASINGS:
            raise HabitsError(f"source.habits.phrasing must be one of {PHRASINGS} (got {self.phrasing!r})")

    @classmethod
    def build(cls, spec: str | dict[str, Any] | None, persona_overrides: dict[str, Any] | None = None) -> Habits:
        """A preset name, or a mapping with an optional `preset` and any field; the persona's own `habits:`
        override last. Unknown keys are an error."""
        if spec is None:
            spec = "oracle"
        values: dict[str, Any] = {}
        if isinstance(spec, str):
            values.update(_preset(spec))
        else:
            spec = dict(spec)
            values.update(_preset(spec.pop("preset", "oracle")))
            values.update(spec)
        values.update(persona_overrides or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise HabitsError(f"unknown source.habits keys {unknown}; known: {sorted(known)} and `preset`")
        for key in ("minor", "salience"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _preset(name: str) -> dict[str, Any]:
    if name not in PRESETS:
        raise HabitsError(f"unknown source.habits preset {name!r}; one of {sorted(PRESETS)}")
    return dict(PRESETS[name])


@dataclass
class Phrasings:
    """Wordings written without reference to the judge: per-criterion complaints and reservations, and a user's
    vague complaints, lenient thanks and re-ask templates (`personas/phrasings/`)."""

    complaints: dict[str, list[str]] = field(default_factory=dict)
    reservations: dict[str, list[str]] = field(default_factory=dict)
    vague: list[str] = field(default_factory=list)
    thanks: list[str] = field(default_factory=list)
    rephrase: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, persona: str, directory: Path = PHRASINGS_DIR) -> Phrasings:
        """The persona's file over `default.yaml` (either may be missing; then the lists are empty)."""
        merged: dict[str, Any] = {}
        for name in ("default", persona):
            path = directory / f"{name}.yaml"
            if path.is_file():
                data = yaml.safe_load(path.read_text()) or {}
                unknown = sorted(set(data) - {"persona", *(f.name for f in dataclasses.fields(cls))})
                if unknown:
                    raise HabitsError(f"{path}: unknown keys {unknown}")
                merged.update({k: v for k, v in data.items() if k != "persona"})
        return cls(**merged)


class Speaker:
    """Turns a rating into what the user says, by its habits. Pure given its `rng` (the session's)."""

    def __init__(self, persona: Any, habits: Habits, rng: random.Random) -> None:
        self.persona, self.habits, self.rng = persona, habits, rng
        self.phrasings = Phrasings.load(persona.name) if habits.phrasing == "independent" else Phrasings()
        criteria = {c.id: c for c in persona.criteria}
        self.order = [criteria[i] for i in habits.salience] if habits.salience else list(persona.criteria)
        self.minor = (
            set(habits.minor) if habits.minor is not None
            else {c.id for c in persona.criteria if c.kind not in SUBSTANCE_KINDS}
        )  # fmt: skip

    def react(self, passed: dict[str, bool]) -> tuple[str, str | None]:
        """(what the user does, the words or None): `thanks`, `complain`, `abandon`, `silence`, `rephrase`.
        `silence` and `rephrase` return no words: the caller knows the next task and the question."""
        h, rng = self.habits, self.rng
        unmet = [c for c in self.order if not passed[c.id]]
        met = [c for c in self.order if passed[c.id]]
        if met and h.mistaken and rng.random() < h.mistaken:  # wrong about the reply: a met criterion is blamed
            return "complain", self.complaint(rng.choice(met))
        if not unmet:
            return "thanks", self.thanks()
        if h.abandon and rng.random() < h.abandon:
            return "abandon", None
        if h.silence and rng.random() < h.silence:
            return "silence", None
        if h.lenient and all(c.id in self.minor for c in unmet) and rng.random() < h.lenient:
            if h.reservation and rng.random() < h.reservation:
                return "thanks", self.reservation(unmet[0])
            return "thanks", self.thanks(lenient=True)
        if h.rephrase and rng.random() < h.rephrase:
            return "rephrase", None
        if h.vague and self.phrasings.vague and rng.random() < h.vague:
            return "complain", rng.choice(self.phrasings.vague)
        named = unmet[:1] if h.one_at_a_time else unmet[: self.persona.max_complaints]
        parts = []
        acks = [c for c in met if c.pass_phrases]
        if acks and rng.random() < self.persona.ack_probability:  # an acknowledgement of one met criterion first
            parts.append(rng.choice(rng.choice(acks).pass_phrases))
        parts += [self.complaint(c) for c in named]
        return "complain", " ".join(parts)

    def complaint(self, criterion: Any) -> str:
        return self.rng.choice(self.phrasings.complaints.get(criterion.id) or criterion.fail_phrases)

    def reservation(self, criterion: Any) -> str:
        options = self.phrasings.reservations.get(criterion.id)
        if options:
            return self.rng.choice(options)
        return f"{self.thanks(lenient=True)} {self.complaint(criterion)}"

    def thanks(self, lenient: bool = False) -> str:
        options = (self.phrasings.thanks if lenient else None) or self.persona.thanks
        return self.rng.choice(options)

    def rephrased(self, task: dict) -> str:
        templates = self.phrasings.rephrase or ["Let me ask again: {question}"]
        return self.rng.choice(templates).format(**task)
