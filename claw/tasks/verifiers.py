"""Verifiers: the reward functions of `source=dataset`, with TRL's signature, chosen by `source.reward._target_`.

A reward function scores a batch of completions the way TRL's `GRPOTrainer` calls one, so a TRL
user's function works unchanged:

    def my_reward(prompts: list[str], completions: list[str], answer: list, **columns) -> list[float]: ...

- `prompts[i]` is the user message (`source.instruction` filled from the row), `completions[i]` the
  decoded response, `answer[i]` the row's `source.answer_field`, and every column of the row comes as a
  keyword of the same name (lists aligned with `completions`). A function without `**kwargs` is given
  only the arguments it names.
- It returns one number per completion; 1.0 means correct. Held-out accuracy counts a response as
  correct when its reward is >= 1, so a partial-credit reward should stay within [0, 1].

`source.reward` is `{_target_: <a registered name, or any importable function or class>, <its keyword
arguments>...}`; the keyword arguments are bound to the function (a class is constructed with them and
its instance called). Registered here: `numeric_answer`, `exact_match`, `regex_match`.

**A verifier that raises on a row** does not stop training: that completion scores 0.0 and a warning
names the row and the error (`Verifier.errors` counts them). A verifier that raises on *every*
completion of a batch is broken rather than unlucky, and stops the run with its error. A result of the
wrong shape (not one number per completion) stops the run too.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from claw.registry import Registry
from claw.tasks.arithmetic import parse_answer

log = logging.getLogger(__name__)

RewardFunction = Callable[..., Sequence[float]]
VERIFIERS: Registry[RewardFunction] = Registry("verifier")
SIGNATURE = (
    "a reward function takes (prompts, completions, answer, **columns) "
    "and returns one float per completion (TRL's signature)"
)


@VERIFIERS.register("numeric_answer")
def numeric_answer(completions: list[str], answer: list, tolerance: float = 1e-9, **_: Any) -> list[float]:
    """1.0 when the completion's final number (after the last "answer is"/"Answer:", else the last number
    in the text) is within `tolerance` of the answer, else 0.0. The arithmetic task's verifier."""
    out = []
    for text, target in zip(completions, answer):
        value = parse_answer(text)
        out.append(1.0 if value is not None and abs(value - _number(target)) <= tolerance else 0.0)
    return out


@VERIFIERS.register("exact_match")
def exact_match(completions: list[str], answer: list, ignore_case: bool = True, **_: Any) -> list[float]:
    """1.0 when the whole completion equals the answer once both are normalised: surrounding whitespace,
    quotes and a final full stop dropped, inner whitespace collapsed, case folded unless `ignore_case=false`."""
    return [
        float(_normalise(text, ignore_case) == _normalise(str(target), ignore_case))
        for text, target in zip(completions, answer)
    ]


@VERIFIERS.register("regex_match")
def regex_match(
    completions: list[str], answer: list, pattern: str = r"(?<!\w){answer}(?!\w)", ignore_case: bool = False, **_: Any
) -> list[float]:
    """1.0 when `pattern` is found in the completion (`re.search`), with `{answer}` in it replaced by the
    row's answer, escaped. The default: the answer appears as a whole word. `"<answer>\\s*{answer}\\s*</answer>"`
    asks for a tagged answer; a pattern without `{answer}` checks a format alone."""
    flags = re.IGNORECASE if ignore_case else 0
    return [
        float(re.search(pattern.replace("{answer}", re.escape(str(target))), text, flags) is not None)
        for text, target in zip(completions, answer)
    ]


def _number(value: Any) -> float:
    try:
        return float(str(value).replace(",", "").strip())
    except ValueError:
        raise ValueError(
            f"numeric_answer: the answer {value!r} is not a number; use exact_match or regex_match for text answers"
        ) from None


def _normalise(text: str, ignore_case: bool) -> str:
    text = " ".join(text.split()).strip().strip("\"'`").rstrip(".").strip().strip("\"'`")
    return text.casefold() if ignore_case else text


class VerifierError(RuntimeError):
    """The reward function is broken (it raised on every completion, or returned the wrong shape)."""


class Verifier:
    """A reward function with its config's keyword arguments bound; `score` isolates rows that raise."""

    def __init__(self, fn: RewardFunction, name: str, bound: Mapping[str, Any] | None = None) -> None:
        self.fn, self.name = fn, name
        self.bound = dict(bound or {})  # keyword arguments from the config; they win over a column of the same name
        self.errors = 0  # completions that scored 0.0 because the function raised on them
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature: give it everything
            params = []
            self._takes_all = True
        else:
            self._takes_all = any(p.kind is p.VAR_KEYWORD for p in params)
        self._named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        self._required = {
            p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
        } - set(self.bound)

    def check(self, columns: Sequence[str]) -> None:
        """Fail before training when the function needs an argument that claw does not pass."""
        given = {"prompts", "completions", "answer", *columns}
        if missing := sorted(self._required - given):
            raise TypeError(
                f"source.reward {self.name} needs {', '.join(repr(m) for m in missing)}, which claw does not pass: "
                f"it passes prompts, completions, answer (source.answer_field) and the columns {', '.join(columns)}. "
                f"{SIGNATURE}; rename the parameter or give it a default"
            )

    def __call__(self, prompts: list[str], completions: list[str], rows: list[dict], answers: list) -> list[float]:
        """The function's rewards for aligned prompts / completions / rows / answers (raises as it raises)."""
        kwargs: dict[str, Any] = {col: [row.get(col) for row in rows] for col in rows[0]} if rows else {}
        kwargs.update(prompts=prompts, completions=completions, answer=answers)
        if not self._takes_all:
            kwargs = {k: v for k, v in kwargs.items() if k in self._named}
        out = self.fn(**{**kwargs, **self.bound})
        if isinstance(out, (str, bytes)) or not isinstance(out, Sequence) and not hasattr(out, "tolist"):
            raise VerifierError(f"source.reward {self.name} returned {type(out).__name__}; {SIGNATURE}")
        out = list(out.tolist() if hasattr(out, "tolist") else out)
        if len(out) != len(completions):
            raise VerifierError(
                f"source.reward {self.name} returned {len(out)} values for {len(completions)} completions; {SIGNATURE}"
            )
        return out

    def score(
        self, prompts: list[str], completions: list[str], rows: list[dict], answers: list, where: list[str]
    ) -> tuple[list[float], list[str | None]]:
        """(reward, error) per completion. A completion whose scoring raised, or gave None or a non-finite
        number, scores 0.0 with its error; `where[i]` names the row in the warning."""
        try:
            raw = self(prompts, completions, rows, answers)
            errors: list[str | None] = [None] * len(raw)
        except VerifierError:
            raise
        except Exception:  # find the rows it fails on: one completion at a time
            raw, errors = [], []
            for i in range(len(completions)):
                try:
                    raw.append(
                        self(prompts[i : i + 1], completions[i : i + 1], rows[i : i + 1], answers[i : i + 1])[0]
                    )
                    errors.append(None)
                except VerifierError:
                    raise
                except Exception as e:
                    raw.append(None)
                    errors.append(f"{type(e).__name__}: {e}")
        rewards = []
        for i, value in enumerate(raw):
            reward = _finite(value)
            if reward is None and errors[i] is None:
                errors[i] = f"returned {value!r}, not a finite number"
            rewards.append(0.0 if reward is None else reward)
        failed = [i for i, e in enumerate(errors) if e is not None]
        if failed and len(failed) == len(completions):
            raise VerifierError(
                f"source.reward {self.name} failed on every completion of the batch; the first, {where[0]}: "
                f"{errors[0]}. {SIGNATURE}"
            )
        for i in failed:
            self.errors += 1
            if self.errors <= 10 or self.errors % 100 == 0:
                log.warning(
                    "source.reward %s failed on %s (%s); it scores 0.0 (%d so far)",
                    self.name,
                    where[i],
                    errors[i],
                    self.errors,
                )
        return rewards, errors


def _finite(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def build_verifier(spec: str | Mapping | Callable) -> Verifier:
    """`source.reward` → a Verifier.

    Accepts `{_target_: name-or-import-path, **kwargs}`, a bare name or path, or a callable."""
    if callable(spec) and not isinstance(spec, Mapping):
        return Verifier(spec, getattr(spec, "__name__", type(spec).__name__))
    if isinstance(spec, str):
        spec = {"_target_": spec}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("_target_"), str):
        raise ValueError(
            f"source.reward={spec!r}: give {{_target_: "
            f"<one of {', '.join(VERIFIERS.names())}, or module.function>, ...keyword arguments}}"
        )
    target = spec["_target_"]
    kwargs = {k: v for k, v in spec.items() if not (k.startswith("_") and k.endswith("_"))}  # _target_, _partial_ ...
    obj = VERIFIERS.get(target) if target in VERIFIERS else _import(target)
    if target in VERIFIERS and (unknown := set(kwargs) - set(inspect.signature(obj).parameters) - {"_"}):
        options = [p for p in inspect.signature(obj).parameters if p not in ("completions", "answer", "_")]
        raise TypeError(
            f"source.reward: {target} has no option {', '.join(sorted(unknown))}; its options: {', '.join(options)}"
        )
    if inspect.isclass(obj):
        return Verifier(obj(**kwargs), target)
    if not callable(obj):
        raise ValueError(f"source.reward._target_={target}: {type(obj).__name__} is not callable; {SIGNATURE}")
    try:
        inspect.signature(obj).bind_partial(**kwargs)
    except TypeError as e:
        raise TypeError(f"source.reward: {target} does not take {', '.join(kwargs)} ({e})") from None
    except ValueError:  # no signature to check against
        pass
    return Verifier(obj, target, bound=kwargs)


def _import(path: str) -> Any:
    """`package.module:function`, `package.module.function` or `package.module.Class`."""
    module, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not module:
        raise ValueError(
            f"source.reward._target_={path!r} is not registered ({', '.join(VERIFIERS.names())}) nor an import path "
            "(module.function)"
        )
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(
            f"source.reward._target_={path!r}: cannot import {module!r} ({e}); registered verifiers: "
            f"{', '.join(VERIFIERS.names())}; your own function must be importable (on PYTHONPATH or installed)"
        ) from e
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"source.reward._target_={path!r}: {module} has no {attr!r}")
        obj = getattr(obj, part)
    return obj
