"""Chat messages → the exact prompt token ids fed to the engine, and tool calls back out of the text.

The prompt ids of a turn are rendered once, here, and stored with the turn: the sample trains on
exactly what the engine consumed (no re-rendering later, which can drift from the sampled ids: docs/architecture.md).

Tools. Many small models' chat templates ignore `tools` (SmolLM2's does, and it also fails on an
assistant message whose `content` is null). `ChatRenderer` probes the template once: if a tool
given to it does not show up in the rendered prompt, it uses a Hermes-style fallback — the tool
signatures go into the system message inside `<tools></tools>`, the model is asked to answer
with `<tool_call>{"name": ..., "arguments": ...}</tool_call>`, earlier assistant tool calls are
written back in that form, and tool results are wrapped in `<tool_response>` tags.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

Message = dict[str, Any]

FALLBACK_SYSTEM = "You are a helpful assistant."
TOOL_INSTRUCTIONS = (
    "You may call functions to help with the user's request. "
    "The function signatures are within <tools></tools> XML tags:\n"
    "<tools>\n{tools}\n</tools>\n"
    "To call a function, answer with a JSON object with the function name "
    "and arguments within <tool_call></tool_call> XML tags:\n"
    '<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _arguments(call: dict[str, Any]) -> Any:
    args = call.get("function", {}).get("arguments", {})
    if isinstance(args, str):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return args
    return args


def longest_token_chars(tokenizer) -> int | None:
    """An upper bound on the characters of text one token covers; None when the tokenizer gives none.

    A byte-level BPE vocabulary spells each byte of text as one character, so a token's spelling is at least as
    long as the text it covers; added and special tokens are spelled as the text they match. A normalizer (NFKC,
    accent stripping) can map many characters to one, so a tokenizer with one gets no bound."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.normalizer is not None:
        return None
    return max(map(len, tokenizer.get_vocab()), default=None)


def format_tool_call(call: dict[str, Any]) -> str:
    body = {"name": call["function"]["name"], "arguments": _arguments(call)}
    return f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>"


class ChatRenderer:
    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.native_tools = self._template_renders_tools()
        # a prompt of more characters than context x this cannot fit: it is refused without tokenising it
        self.max_chars_per_token = longest_token_chars(tokenizer)

    def _template_renders_tools(self) -> bool:
        probe = [
            {
                "type": "function",
                "function": {
                    "name": "claw_probe_fn_7f3a",
                    "description": "probe",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]
        try:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": "hi"}], tools=probe, tokenize=False, add_generation_prompt=True
            )
        except Exception:
            return False
        return "claw_probe_fn_7f3a" in text

    def messages_for_template(self, messages: list[Message], tools: list[dict] | None) -> list[Message]:
        """Messages as the template can take them: text content, `developer` as `system`, and (fallback)
        tool calls and results written out in Hermes markup."""
        out: list[Message] = []
        fallback = not self.native_tools
        for m in messages:
            role = "system" if m["role"] == "developer" else m["role"]
            text = text_of(m.get("content"))
            if role == "assistant" and m.get("tool_calls") and fallback:
                calls = "\n".join(format_tool_call(c) for c in m["tool_calls"])
                out.append({"role": "assistant", "content": f"{text}\n{calls}".strip()})
            elif role == "tool" and fallback:
                out.append({"role": "tool", "content": f"<tool_response>\n{text}\n</tool_response>"})
            else:
                msg = {k: v for k, v in m.items() if k not in ("content", "role")}
                out.append({"role": role, "content": text, **msg})
        if tools and fallback:
            block = TOOL_INSTRUCTIONS.format(
                tools="\n".join(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools)
            )
            if out and out[0]["role"] == "system":
                out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{block}"}
            else:
                out.insert(0, {"role": "system", "content": f"{FALLBACK_SYSTEM}\n\n{block}"})
        return out

    def render_text(self, messages: list[Message], tools: list[dict] | None = None) -> str:
        """The text `render` tokenises (milliseconds even for megabytes: the template only concatenates)."""
        msgs = self.messages_for_template(messages, tools)
        kwargs = {"tools": tools} if tools and self.native_tools else {}
        return self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False, **kwargs)

    def render(self, messages: list[Message], tools: list[dict] | None = None) -> list[int]:
        """Prompt ids with the generation prompt: what the engine is fed for this request."""
        msgs = self.messages_for_template(messages, tools)
        kwargs = {"tools": tools} if tools and self.native_tools else {}
        ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True, **kwargs)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def _tool_call(body: str) -> dict[str, Any] | None:
    """The OpenAI tool call a `<tool_call>` body names, or None when it is not `{"name": str, "arguments": ...}`."""
    try:
        call = json.loads(body)  # surrounding whitespace is allowed
    except json.JSONDecodeError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    args = call.get("arguments", {})
    return {
        "id": "call_" + uuid.uuid4().hex[:16],
        "type": "function",
        "function": {
            "name": call["name"],
            "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        },
    }


def parse_tool_calls(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """(content, tool_calls) from a response: each well-formed `<tool_call>{"name", "arguments"}</tool_call>`
    becomes an OpenAI tool call; a malformed one stays in the content, so nothing the model said is lost."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []  # the text outside well-formed calls, malformed ones included
    # A scan with str.find, not a regex: `<tool_call>\s*(.*?)\s*</tool_call>` backtracked cubically on a run of
    # spaces after an unclosed tag (4,000 spaces: 51 s), and a model's output can be any text.
    pos = 0
    while (start := text.find(_OPEN, pos)) != -1 and (end := text.find(_CLOSE, start + len(_OPEN))) != -1:
        kept.append(text[pos:start])
        pos = end + len(_CLOSE)
        call = _tool_call(text[start + len(_OPEN) : end])
        if call is None:
            kept.append(text[start:pos])
        else:
            calls.append(call)
    kept.append(text[pos:])
    rest = "".join(kept).strip()
    return (rest or None) if calls else text, calls
