"""A persona is data: a YAML file under `personas/` describing one simulated user.

It holds the task generator, the opening message templates, the turn limit, the hidden
preference (a list of criteria from `claw.users.checks`, each with what the user says when it is
met or not), the thanks and closing lines, optional tools with the environment that serves them,
and the prompt for the `llm` user type. Any new file built from the check library works without
code changes.

`Persona.rate` is the hidden scorer — the paper's metric (the rating of the agent's first
response). It is for evaluation only: the training signal must come from what the user *says*,
read by the judge, never from this number.

Every template is formatted with the task dict (`{question}`, `{answer}`, ...). A persona is
checked when it loads — unknown keys, unknown check kinds, bad params, templates naming a field
the task lacks — and the error names the file and the criterion.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import posixpath
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from claw.tasks.word_problems import GENERATORS
from claw.users.checks import CheckError, Response, make_check

REPO_ROOT = Path(__file__).resolve().parents[2]
PERSONA_DIR = REPO_ROOT / "personas"
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)

Message = dict[str, Any]


class PersonaError(ValueError):
    """A persona file is missing, malformed, or names something that does not exist."""


def strip_think(text: str | None) -> str:
    """Drop `<think>…</think>` blocks (and an unclosed trailing one): what a user would not read."""
    return _THINK.sub("", text or "").strip()


@dataclass
class Criterion:
    id: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    pass_phrases: list[str] = field(default_factory=list)  # said when met (an acknowledgement; no correction words)
    fail_phrases: list[str] = field(
        default_factory=list
    )  # said when not met: a correction that carries the instruction


@dataclass
class LLMSpec:
    """The `llm` user type: `prompt` is the simulator's system prompt (formatted with the task)."""

    prompt: str = ""
    done_marker: str = "[DONE]"
    reply_prefix: str = "The AI assistant replied:\n"  # the agent's words, shown to the simulator as its `user` turn
    temperature: float = 0.7
    max_tokens: int = 256


@dataclass
class Rating:
    """Hidden score of one response: the fraction of criteria met, and which were."""

    score: float
    passed: dict[str, bool]


@dataclass
class Persona:
    name: str
    description: str
    tasks_generator: str
    tasks_params: dict[str, Any]
    opening_templates: list[str]
    criteria: list[Criterion]
    thanks: list[str]
    closing: list[str]
    turn_limit: int = 3
    system_prompt: str | None = None
    max_complaints: int | None = None  # how many unmet criteria the user names per reply (None: all)
    ack_probability: float = 0.0  # chance the user first acknowledges one met criterion (its pass phrase)
    tools: list[dict] = field(default_factory=list)  # OpenAI tool specs offered to the agent
    tool_env: dict[str, dict] = field(default_factory=dict)  # tool name -> {kind: file_reader, argument, files}
    llm: LLMSpec = field(default_factory=LLMSpec)
    habits: dict[str, Any] = field(default_factory=dict)  # this user's overrides of `source.habits`
    source: str = field(default="<memory>", compare=False)  # the file it came from, for error messages

    def __post_init__(self) -> None:
        self.validate()

    # ---- loading and dumping ---------------------------------------------------------------

    @classmethod
    def load(cls, path_or_name: str | Path) -> Persona:
        """`student` → personas/student.yaml; a path is tried from the cwd, then from the repo root."""
        path = resolve(path_or_name)
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise PersonaError(f"{path}: not valid YAML: {e}") from e
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<memory>") -> Persona:
        if not isinstance(data, dict):
            raise PersonaError(f"{source}: a persona file must be a mapping, got {type(data).__name__}")
        known = {
            "name",
            "description",
            "tasks",
            "system_prompt",
            "opening",
            "turn_limit",
            "criteria",
            "thanks",
            "closing",
            "max_complaints",
        }
        known |= {"ack_probability", "tools", "tool_env", "llm", "habits"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise PersonaError(f"{source}: unknown keys {unknown}; known: {sorted(known)}")
        missing = [k for k in ("name", "tasks", "opening", "criteria", "thanks") if not data.get(k)]
        if missing:
            raise PersonaError(f"{source}: missing {missing}")
        tasks = data["tasks"]
        if not isinstance(tasks, dict) or "generator" not in tasks:
            raise PersonaError(
                f"{source}: `tasks` must be a mapping with `generator` "
                f"(one of {sorted(GENERATORS)}) and optional `params`"
            )
        llm_data = data.get("llm") or {}
        bad_llm = sorted(set(llm_data) - {f.name for f in dataclasses.fields(LLMSpec)})
        if bad_llm:
            raise PersonaError(f"{source}: unknown llm keys {bad_llm}")
        return cls(
            name=str(data["name"]),
            description=str(data.get("description", "")),
            tasks_generator=str(tasks["generator"]),
            tasks_params=dict(tasks.get("params") or {}),
            opening_templates=_strings(data["opening"], source, "opening"),
            criteria=[_criterion(c, source, i) for i, c in enumerate(data["criteria"])],
            thanks=_strings(data["thanks"], source, "thanks"),
            closing=_strings(data.get("closing") or ["Never mind, I'll finish it myself."], source, "closing"),
            turn_limit=int(data.get("turn_limit", 3)),
            system_prompt=data.get("system_prompt"),
            max_complaints=data.get("max_complaints"),
            ack_probability=float(data.get("ack_probability", 0.0)),
            tools=list(data.get("tools") or []),
            tool_env=dict(data.get("tool_env") or {}),
            llm=LLMSpec(**llm_data),
            habits=dict(data.get("habits") or {}),
            source=source,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        out["tasks"] = {"generator": self.tasks_generator, "params": self.tasks_params}
        out["system_prompt"] = self.system_prompt
        out["opening"] = self.opening_templates
        out["turn_limit"] = self.turn_limit
        out["max_complaints"] = self.max_complaints
        out["ack_probability"] = self.ack_probability
        out["criteria"] = [dataclasses.asdict(c) for c in self.criteria]
        out["thanks"], out["closing"] = self.thanks, self.closing
        out["tools"], out["tool_env"] = self.tools, self.tool_env
        out["llm"] = dataclasses.asdict(self.llm)
        if self.habits:
            out["habits"] = self.habits
        return out

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True, width=1000)

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(self.to_yaml())

    def validate(self) -> None:
        """Fail now, naming file and criterion, rather than mid-run: checks, generator, templates, tools."""
        where = self.source
        if self.turn_limit < 1:
            raise PersonaError(f"{where}: turn_limit must be >= 1")
        if self.tasks_generator not in GENERATORS:
            raise PersonaError(
                f"{where}: unknown task generator {self.tasks_generator!r}; known: {sorted(GENERATORS)}"
            )
        try:
            inspect.signature(GENERATORS[self.tasks_generator]).bind("train", 1, 0, **self.tasks_params)
        except TypeError as e:
            raise PersonaError(f"{where}: bad params for task generator {self.tasks_generator!r}: {e}") from e
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise PersonaError(f"{where}: duplicate criterion ids in {ids}")
        from claw.users.habits import Habits, HabitsError

        try:
            habits = Habits.build(None, self.habits)
        except HabitsError as e:
            raise PersonaError(f"{where}: habits: {e}") from e
        for key in ("minor", "salience"):
            unknown = sorted(set(getattr(habits, key) or ()) - set(ids))
            if unknown:
                raise PersonaError(f"{where}: habits.{key} names unknown criteria {unknown}; criteria: {ids}")
        self._checks = {}
        for c in self.criteria:
            try:
                self._checks[c.id] = make_check(c.kind, c.params)
            except CheckError as e:
                raise PersonaError(f"{where}: criterion {c.id!r}: {e}") from e
        names = {(t.get("function") or {}).get("name") for t in self.tools}
        for name, env in self.tool_env.items():
            if name not in names:
                raise PersonaError(
                    f"{where}: tool_env serves {name!r} but `tools` declares only {sorted(n for n in names if n)}"
                )
            if env.get("kind") != "file_reader" or not isinstance(env.get("files"), dict):
                raise PersonaError(
                    f"{where}: tool_env[{name!r}] must be "
                    f"{{kind: file_reader, argument: <name>, files: {{path: template}}}}"
                )
        sample = self.tasks("train", 1, seed=0)[0]  # every template must format with a real task
        templates = (
            [("opening", t) for t in self.opening_templates]
            + [("thanks", t) for t in self.thanks]
            + [("closing", t) for t in self.closing]
        )
        templates += [(f"criterion {c.id!r}", p) for c in self.criteria for p in c.pass_phrases + c.fail_phrases]
        templates += [
            (f"tool_env {n} file {p!r}", t) for n, env in self.tool_env.items() for p, t in env["files"].items()
        ]
        templates += [("llm.prompt", self.llm.prompt)] + (
            [("system_prompt", self.system_prompt)] if self.system_prompt else []
        )
        for what, template in templates:
            try:
                template.format(**sample)
            except (KeyError, IndexError, ValueError) as e:
                raise PersonaError(
                    f"{where}: {what}: template {template!r} does not format with a task "
                    f"({e!r}; fields: {sorted(sample)})"
                ) from e

    # ---- what the driver and the users call -------------------------------------------------

    def tasks(self, split: str, n: int, seed: int = 0) -> list[dict]:
        """n tasks of `split` ("train" | "eval"); the splits are disjoint for every seed."""
        return GENERATORS[self.tasks_generator](split, n, seed, **self.tasks_params)

    def opening(self, task: dict, rng: random.Random) -> str:
        return rng.choice(self.opening_templates).format(**task)

    def rate(self, response: str | Message | list[Message], task: dict) -> Rating:
        """The hidden rating: fraction of criteria met by `response` (text, one assistant message, or the
        agent's messages from the request to its first final answer, tool calls included)."""
        resp = as_response(response)
        passed = {c.id: self._checks[c.id](resp, task) for c in self.criteria}
        return Rating(score=sum(passed.values()) / len(passed), passed=passed)

    def run_tool(self, name: str, arguments_json: str, task: dict) -> str:
        """The environment's answer to a tool call: the file text, or an error string the agent can read."""
        env = self.tool_env.get(name)
        if env is None:
            return f"Error: unknown tool {name!r}. Available tools: {', '.join(sorted(self.tool_env)) or 'none'}."
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError as e:
            return f"Error: the arguments are not valid JSON ({e.msg})."
        argument = env.get("argument", "path")
        if not isinstance(arguments, dict) or not isinstance(arguments.get(argument), str):
            return f"Error: {name} needs a string argument {argument!r}."
        wanted = posixpath.normpath(arguments[argument].strip())
        for path, template in env["files"].items():
            if posixpath.normpath(path) == wanted:
                return template.format(**task)
        return f"Error: no such file {arguments[argument]!r}. Files here: {', '.join(env['files'])}."


def as_response(response: str | Message | list[Message]) -> Response:
    """Text and tool calls of what the agent produced. For a message list, the text is the last
    assistant message's and the tool calls are every assistant message's."""
    if isinstance(response, str):
        return Response(strip_think(response))
    messages = (
        [response]
        if isinstance(response, dict)
        else [m for m in response if m.get("role", "assistant") == "assistant"]
    )
    calls = tuple(call for m in messages for call in (m.get("tool_calls") or ()))
    text = strip_think(_content(messages[-1])) if messages else ""
    return Response(text, calls)


def _content(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content or ""


def resolve(path_or_name: str | Path) -> Path:
    """A bare name is personas/<name>.yaml; a path is tried from the cwd, then from the repo root."""
    text = str(path_or_name)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        candidates = [PERSONA_DIR / f"{text}.yaml"]
    else:
        candidates = [Path(text), REPO_ROOT / text]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    shipped = sorted(p.stem for p in PERSONA_DIR.glob("*.yaml"))
    raise PersonaError(
        f"persona {text!r} not found (tried {', '.join(map(str, candidates))}); shipped personas: {shipped}"
    )


def _strings(value: Any, source: str, what: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise PersonaError(f"{source}: `{what}` must be a non-empty list of strings")
    return list(value)


def _criterion(data: Any, source: str, index: int) -> Criterion:
    if not isinstance(data, dict) or "kind" not in data:
        raise PersonaError(f"{source}: criterion #{index} must be a mapping with at least `id` and `kind`")
    cid = str(data.get("id", f"#{index}"))
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(Criterion)})
    if unknown:
        raise PersonaError(f"{source}: criterion {cid!r}: unknown keys {unknown}")
    if not data.get("fail_phrases"):
        raise PersonaError(
            f"{source}: criterion {cid!r}: needs `fail_phrases` (what the user says when it is not met)"
        )
    return Criterion(
        id=cid,
        kind=str(data["kind"]),
        params=dict(data.get("params") or {}),
        pass_phrases=_strings(data.get("pass_phrases") or [], source, f"{cid}.pass_phrases")
        if data.get("pass_phrases")
        else [],
        fail_phrases=_strings(data["fail_phrases"], source, f"{cid}.fail_phrases"),
    )
