"""Translation between the Anthropic-style requests our callers build and OpenAI chat completions.

Callers (extractor, reporter, summarizer, generator, global map) speak one dialect: a system
prompt, messages whose content is text or blocks (`text`, `tool_use`, `tool_result`), tools with
an `input_schema` and a forced `tool_choice`. This module turns that into a `/v1/chat/completions`
body, in one of two modes, and the reply back into content blocks:

* tools: OpenAI function calling (`tools` + `tool_choice`);
* json: no tools on the wire (servers without tool support); the tool's schema goes into the
  system prompt, `response_format` asks for a JSON object, and the reply's text becomes the call;
* json_schema: as json, but `response_format` carries the tool's schema itself, which servers
  with grammar-constrained decoding (llama.cpp server, vLLM, Ollama) enforce token by token.

Model output is untrusted: arguments that are not valid JSON are repaired (fences, trailing
commas, a reply cut off by the token limit keeps its complete elements); what cannot be repaired
stays a string, which every caller treats as "no usable call" and answers with a retry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from graphunified_query.core.providers.json_repair import loads_lenient

Mode = Literal["tools", "json", "json_schema"]
Blocks = list[dict[str, Any]]
# OpenAI finish reasons in the Anthropic stop-reason vocabulary the callers know.
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}


@dataclass(frozen=True)
class ParsedReply:
    content: Blocks
    stop_reason: str | None
    repaired: int  # tool inputs that were not valid JSON as sent and had to be repaired or salvaged


def chat_request(
    *,
    model: str,
    system: str | Blocks,
    messages: Blocks,
    tools: Blocks | None,
    tool_choice: dict[str, Any] | None,
    max_tokens: int,
    temperature: float | None,
    mode: Mode,
) -> dict[str, Any]:
    """The chat-completions body for an Anthropic-style request."""
    system_text = _text_of(system)
    if tools and mode != "tools":
        instructions = _json_instructions(tools, tool_choice, with_schema=mode == "json")
        system_text = f"{system_text}\n\n{instructions}".strip()
    wire: list[dict[str, Any]] = [{"role": "system", "content": system_text}] if system_text else []
    for message in messages:
        wire.extend(_chat_messages(message, json_mode=mode != "tools"))
    body: dict[str, Any] = {"model": model, "messages": wire, "max_tokens": max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    if tools and mode == "tools":
        body["tools"] = [_function(tool) for tool in tools]
        if tool_choice:
            body["tool_choice"] = _tool_choice(tool_choice)
    elif tools and mode == "json_schema":
        body["response_format"] = _json_schema_format(tools, tool_choice)
    elif tools:
        body["response_format"] = {"type": "json_object"}
    return body


def parse_reply(
    message: dict[str, Any],
    finish_reason: str | None,
    *,
    tools: Blocks | None,
    tool_choice: dict[str, Any] | None,
) -> ParsedReply:
    """Content blocks from a chat-completion message (a dict), tool calls salvaged where possible."""
    content: Blocks = []
    repaired = 0
    text = message.get("content") or ""
    if isinstance(text, list):  # some servers return content parts
        text = "".join(str(part.get("text", "")) for part in text if isinstance(part, dict))
    calls = message.get("tool_calls") or []
    for n, call in enumerate(calls):
        function = call.get("function") or {}
        value, was_repaired = _arguments(function.get("arguments"))
        repaired += was_repaired
        call_id = str(call.get("id") or f"call_{n}")
        content.append({"type": "tool_use", "id": call_id, "name": function.get("name", ""), "input": value})
    forced = _forced_tool(tools, tool_choice)
    if not calls and forced and text.strip():
        # JSON mode, or a small model that wrote the call as text: the text is the tool input.
        value, was_repaired = _arguments(text)
        if isinstance(value, dict):
            content.append({"type": "tool_use", "id": "call_text_0", "name": forced, "input": value})
            repaired += was_repaired
            text = ""
    if text:
        content.insert(0, {"type": "text", "text": text})
    stop = _STOP_REASONS.get(finish_reason or "", finish_reason)
    if calls and stop == "end_turn":
        stop = "tool_use"  # some servers say "stop" after a tool call
    return ParsedReply(content, stop, repaired)


def _arguments(raw: Any) -> tuple[Any, bool]:
    """Parsed tool arguments and whether they needed repair; unreadable ones stay a string."""
    if isinstance(raw, dict):
        return raw, False
    if not isinstance(raw, str):
        return raw, True
    try:
        value = json.loads(raw)
        repaired = False
    except json.JSONDecodeError:
        try:
            value = loads_lenient(raw)
        except ValueError:
            return raw, True
        repaired = True
    if isinstance(value, str):  # double-encoded arguments ("{\"entities\": ...}")
        inner, _ = _arguments(value)
        return inner, True
    return value, repaired


def _forced_tool(tools: Blocks | None, tool_choice: dict[str, Any] | None) -> str | None:
    if not tools:
        return None
    if tool_choice and tool_choice.get("type") == "tool":
        return str(tool_choice.get("name"))
    return str(tools[0]["name"]) if len(tools) == 1 else None


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("input_schema", {"type": "object"}),
        },
    }


def _tool_choice(choice: dict[str, Any]) -> Any:
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"any": "required", "none": "none"}.get(str(kind), "auto")


def _json_schema_format(tools: Blocks, tool_choice: dict[str, Any] | None) -> dict[str, Any]:
    name = _forced_tool(tools, tool_choice) or tools[0]["name"]
    tool = next((t for t in tools if t["name"] == name), tools[0])
    schema = tool.get("input_schema", {"type": "object"})
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _json_instructions(tools: Blocks, tool_choice: dict[str, Any] | None, *, with_schema: bool) -> str:
    """What to reply; the schema is spelled out only when the server does not enforce it (a
    json_schema server constrains decoding to it, so the prompt stays short for small models)."""
    name = _forced_tool(tools, tool_choice) or tools[0]["name"]
    tool = next((t for t in tools if t["name"] == name), tools[0])
    ask = (
        f"Reply with exactly one JSON object and nothing else: the arguments of `{name}` "
        f"({tool.get('description', '')})."
    )
    if not with_schema:
        return ask
    schema = json.dumps(tool.get("input_schema", {}), ensure_ascii=False)
    return f"{ask} It must match this JSON schema:\n{schema}"


def _chat_messages(message: dict[str, Any], *, json_mode: bool) -> Blocks:
    """One Anthropic-style message as one or more chat messages (tool results are their own)."""
    role, content = message["role"], message.get("content", "")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    if role == "assistant":
        calls = [b for b in content if b.get("type") == "tool_use"]
        if json_mode:  # the call was the reply's text; replay it as such
            texts += [_dump(b.get("input")) for b in calls]
            return [{"role": "assistant", "content": "\n".join(texts)}]
        out: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
        if calls:
            out["tool_calls"] = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {"name": b.get("name", ""), "arguments": _dump(b.get("input"))},
                }
                for b in calls
            ]
        return [out]
    results = [b for b in content if b.get("type") == "tool_result"]
    if json_mode:
        notes = [
            f"{'Error' if r.get('is_error') else 'Result'}: {_text_of(r.get('content', ''))}" for r in results
        ]
        return [{"role": role, "content": "\n\n".join([*notes, *texts])}]
    out_messages: Blocks = [
        {"role": "tool", "tool_call_id": str(r.get("tool_use_id")), "content": _text_of(r.get("content", ""))}
        for r in results
    ]
    if texts or not results:
        out_messages.append({"role": role, "content": "\n\n".join(texts)})
    return out_messages


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _text_of(value: str | Blocks | Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n\n".join(
            str(b.get("text", "")) for b in value if isinstance(b, dict) and b.get("type") == "text"
        )
    return str(value)
