"""`mode`: which training signals a run learns from, built once from `cfg.mode` (`Mode.from_cfg`).

| mode    | signals        | judges it runs           | advantage (critic-free algo)                          |
|---------|----------------|--------------------------|-------------------------------------------------------|
| rl      | reward         | PRM                      | w_rl · the algo's estimator (grpo, rloo, baseline, …) |
| opd     | hint           | hint extractor + teacher | opd: w_opd · A_opd                                    |
| combine | reward + hint  | both                     | combine: w_rl · A_rl + w_opd · A_opd                  |

`w_rl` and `w_opd` weigh their terms the same way under every algo; with a critic (algo=ppo) they weigh the
token rewards GAE reads (w_rl · R on the last token, w_opd · A_opd on every token).

The list of modes is `SIGNALS`, written here once; everything else asks a `Mode` what it needs
(`uses_reward`, `uses_hint`, `advantage`, `hinting`) instead of comparing names or reading `cfg.mode` again.
Every `mode.*` key is checked here, when the `Mode` is built (claw/config.py's `validate` reports it at start-up);
how the teacher is shown a hint is a `Hinting`, checked once, whether a `Mode` or a hand-built `Teacher` holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SIGNALS: dict[str, tuple[str, ...]] = {"rl": ("reward",), "opd": ("hint",), "combine": ("reward", "hint")}
# `mode.hint_role`: where the hint goes in the teacher's context: the last user message, the system message, or the
# opening of the assistant's own turn (a note it wrote before the reply: no complaint for the model to answer)
HINT_ROLES = ("user", "system", "assistant")
# `mode.hint_gate`: null (distil from every hinted turn) | apology (none where it apologises: claw/judge/teacher.py)
HINT_GATES = (None, "apology")
DEFAULT_HINT_FORMAT = "{content}\n\n[hint] {hint}"
DEFAULT_TEACHER = "frozen"  # the teacher of a mode with a hint that `Mode.named` builds from its name alone
OPD_ROLES = ("term", "credit")  # `mode.opd_role`: the gap as a second term, or as where the reward lands
# (w_rl, w_opd) of a mode that does not set them (conf/mode/*.yaml set both): each signal the mode has at weight 1
WEIGHTS: dict[str, tuple[float, float]] = {"rl": (1.0, 0.0), "opd": (0.0, 1.0), "combine": (1.0, 1.0)}


@dataclass(frozen=True)
class Hinting:
    """How the teacher is shown a hint (`mode.hint_*`): its wording, the message that carries it, the contentless
    contrast and the gate (claw/judge/teacher.py reads them). The field names are `Teacher`'s keyword arguments."""

    hint_format: str = DEFAULT_HINT_FORMAT  # {content}: the carrying message's text; {hint}: the hint
    hint_role: str = "user"  # the last user message | the system message | the assistant turn's start
    contrast: str | None = None  # `mode.hint_contrast`
    contrast_scale: float = 1.0  # `mode.hint_contrast_scale`
    gate: str | None = None  # `mode.hint_gate`

    def __post_init__(self) -> None:
        if self.hint_role not in HINT_ROLES:
            raise ValueError(f"mode.hint_role={self.hint_role!r} is unknown; use {' or '.join(HINT_ROLES)}")
        if self.hint_role == "assistant" and "{content}" in self.hint_format:
            raise ValueError(
                "mode.hint_role=assistant opens the assistant's turn with the hint, where there is no message content "
                f"to put it beside: mode.hint_format={self.hint_format!r} must not name {{content}}; give one "
                "without {content}, e.g. '({hint})\\n\\n'"
            )
        if self.contrast_scale < 0:
            raise ValueError(f"mode.hint_contrast_scale={self.contrast_scale} must be ≥ 0 (0: no contrast)")
        if self.gate not in HINT_GATES:
            known = " or ".join(g for g in HINT_GATES if g)
            raise ValueError(f"mode.hint_gate={self.gate!r} is unknown; use null or {known}")


@dataclass(frozen=True)
class Mode:
    name: str
    # The weight of each term wherever it enters, under every algo: critic-free, A = w_rl · A_rl + w_opd · gap;
    # algo=ppo, the token rewards GAE reads are w_rl · R (last token) + w_opd · gap. None: `WEIGHTS[name]`.
    w_rl: float | None = None
    w_opd: float | None = None
    teacher: str | None = None  # frozen | current | a checkpoint path | a server's URL (modes with a hint)
    hint_format: str = DEFAULT_HINT_FORMAT
    hint_role: str = "user"  # where the hint goes: the last user message | the system message | the assistant's turn
    hint_contrast: str | None = None  # a contentless hint: the teacher is guided by the hint's own effect (teacher.py)
    hint_contrast_scale: float = 1.0  # γ: l(s + hint) + γ · (l(s) − l(s + contrast)); 0 = the plain hinted teacher
    hint_gate: str | None = None  # apology: no teacher log-probs where the hinted teacher apologises (teacher.py)
    topk: int = 0
    topk_coef: float = 0.0
    opd_center: bool = False
    opd_skip_end: bool = False  # the OPD gap trains nothing on end-of-turn tokens (when to stop: the reward's)
    opd_skip_start: int = 0  # the OPD gap trains nothing on the first k tokens of a turn (how it opens: the reward's)
    opd_role: str = "term"  # term: A = w_rl·A_rl + w_opd·gap | credit: A = w_rl·A_rl·c_t (claw/advantages/opd.py)
    credit_scale: float = 1.0  # credit: the softmax's inverse temperature over the gap (0 = plain RL)
    credit_cap: float = 4.0  # credit: no token carries more than this many times its even share
    # how the teacher is shown the hint: the mode.hint_* keys as one value, built (and so checked) with the Mode;
    # `build_teacher` (claw/judge/teacher.py) takes it as keywords
    hinting: Hinting = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.name not in SIGNALS:
            raise ValueError(f"mode={self.name} is unknown; use {', '.join(SIGNALS)}")
        for key, default in zip(("w_rl", "w_opd"), WEIGHTS[self.name]):
            if getattr(self, key) is None:
                object.__setattr__(self, key, default)
        hinting = Hinting(
            self.hint_format, self.hint_role, self.hint_contrast, self.hint_contrast_scale, self.hint_gate
        )
        object.__setattr__(self, "hinting", hinting)
        if self.hint_contrast and not self.uses_hint:
            raise ValueError(f"mode.hint_contrast is set, but mode={self.name} has no hint to contrast it with")
        if self.hint_gate and not self.uses_hint:
            raise ValueError(f"mode.hint_gate is set, but mode={self.name} has no hint (no teacher) to gate")
        if self.topk and not self.topk_coef:
            raise ValueError(
                "mode.topk > 0 asks for top-K teacher log-probs but mode.topk_coef is 0: set both or neither"
            )
        if self.opd_skip_start < 0:
            raise ValueError(f"mode.opd_skip_start={self.opd_skip_start} must be ≥ 0 (0: skip nothing)")
        if self.opd_role not in OPD_ROLES:
            raise ValueError(f"mode.opd_role={self.opd_role!r} is unknown; use {' or '.join(OPD_ROLES)}")
        if self.opd_role == "credit":
            if self.name != "combine":
                raise ValueError(
                    f"mode.opd_role=credit spreads the reward over a turn's tokens, so it needs mode=combine "
                    f"(reward and hint); got mode={self.name}"
                )
            if self.opd_center or self.opd_skip_end or self.opd_skip_start:
                raise ValueError(
                    "mode.opd_center, mode.opd_skip_end and mode.opd_skip_start shape the OPD term; "
                    "mode.opd_role=credit has none "
                    "(its credit is shift-invariant and leaves end-of-turn tokens to the reward already)"
                )
            if self.credit_scale < 0 or self.credit_cap < 1:
                raise ValueError(
                    f"mode.credit_scale={self.credit_scale} must be ≥ 0 and mode.credit_cap={self.credit_cap} ≥ 1"
                )
        if self.uses_hint and not self.teacher:
            raise ValueError(
                f"mode={self.name} needs a teacher: mode.teacher=frozen|current|<path of a checkpoint>"
                f"|<URL of a server> (got {self.teacher})"
            )

    @classmethod
    def from_cfg(cls, mode_cfg: Any) -> Mode:
        """From `cfg.mode` (a DictConfig or dict); keys a mode file does not set keep their defaults."""
        get = mode_cfg.get
        return cls(
            name=mode_cfg["name"],
            w_rl=None if get("w_rl") is None else float(get("w_rl")),
            w_opd=None if get("w_opd") is None else float(get("w_opd")),
            teacher=get("teacher"),
            hint_format=get("hint_format") or cls.hint_format,
            hint_role=get("hint_role") or cls.hint_role,
            hint_contrast=get("hint_contrast") or None,
            hint_contrast_scale=float(get("hint_contrast_scale", 1.0)),
            hint_gate=get("hint_gate") or None,
            topk=int(get("topk", 0) or 0),
            topk_coef=float(get("topk_coef", 0.0) or 0.0),
            opd_center=bool(get("opd_center", False)),
            opd_skip_end=bool(get("opd_skip_end", False)),
            opd_skip_start=int(get("opd_skip_start", 0) or 0),
            opd_role=get("opd_role") or cls.opd_role,
            credit_scale=float(get("credit_scale", 1.0)),
            credit_cap=float(get("credit_cap", 4.0)),
        )

    @classmethod
    def named(cls, mode: Mode | str) -> Mode:
        """A `Mode` as is, or the one `from_cfg` builds from a mode's name alone: its default weights and, for a mode
        with a hint, the default teacher (for callers that hold only a name)."""
        if isinstance(mode, Mode):
            return mode
        return cls.from_cfg({"name": mode, "teacher": DEFAULT_TEACHER if "hint" in SIGNALS.get(mode, ()) else None})

    @property
    def uses_reward(self) -> bool:
        """The PRM judge runs and its reward (or an explicit user rating) trains."""
        return "reward" in SIGNALS[self.name]

    @property
    def uses_hint(self) -> bool:
        """The hint extractor runs and the teacher scores the response under the hint."""
        return "hint" in SIGNALS[self.name]

    def advantage(self, estimator: str, estimator_kwargs: dict, critic: dict | None = None) -> tuple[str, dict]:
        """(registered advantage, its kwargs) for the algo's `estimator`; `critic` = GAE's settings when the algo
        has a critic, which then carries both terms (w_rl, w_opd)."""
        if critic is not None:
            if self.opd_center or self.opd_skip_end or self.opd_skip_start or self.opd_role != "term":
                raise ValueError(
                    "mode.opd_center, mode.opd_skip_end, mode.opd_skip_start and mode.opd_role=credit apply to "
                    "critic-free algos, not to GAE's"
                )
            return "gae", {**critic, "w_rl": self.w_rl, "w_opd": self.w_opd}
        if self.name == "rl" and self.w_rl == 1.0:
            return estimator, estimator_kwargs  # w_rl · A_rl at weight 1: the estimator alone (no π_old pass)
        if self.name == "opd":
            return "opd", {
                "w_opd": self.w_opd, "center": self.opd_center, "skip_end": self.opd_skip_end,
                "skip_start": self.opd_skip_start,
            }  # fmt: skip
        # combine; also mode=rl at w_rl ≠ 1, where the OPD term is 0 (no hint, no teacher log-probs)
        return "combine", {
            "w_rl": self.w_rl, "w_opd": self.w_opd, "rl_estimator": estimator, "rl_kwargs": estimator_kwargs,
            "opd_center": self.opd_center, "opd_skip_end": self.opd_skip_end, "opd_skip_start": self.opd_skip_start,
            "role": self.opd_role, "credit_scale": self.credit_scale, "credit_cap": self.credit_cap,
        }  # fmt: skip
