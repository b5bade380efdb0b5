"""Responses input items (what the SDK stores in `message_data`) as agentctl's chat
messages: `{"role", "content", "name"?, "tool_calls"?, "tool_call_id"?}`.

- messages (`{"role": "user" | "assistant" | "system" | "developer", "content": ...}`,
  with or without `"type": "message"`): their role, the text of their parts;
- `function_call` / `custom_tool_call` and other `*_call` items with a `call_id`: an
  assistant message with one tool call (name, arguments, call id);
- `function_call_output` and other `*_output` items: a `tool` message naming the call
  it answers (`tool_call_id`) and, when that call is earlier in the session, its name;
- `reasoning`: a `reasoning` message with the summary texts;
- anything else: a message whose role is the item's type, content its fields.
"""

from __future__ import annotations

import json
from typing import Any

_TEXT_KEYS = ("text", "refusal", "transcript")


def part_text(part: Any) -> Any:
    if isinstance(part, dict):
        for key in _TEXT_KEYS:
            if isinstance(part.get(key), str):
                return part[key]
    return None


def content_of(content: Any) -> Any:
    """A message's content: the string, or its parts' texts joined (non-text parts as
    they are)."""
    if isinstance(content, str) or content is None:
        return content or ""
    if isinstance(content, list):
        texts = [part_text(p) for p in content]
        if all(t is not None for t in texts):
            return "\n".join(texts)
        return [
            ({"type": "text", "text": t} if t is not None else p)
            for p, t in zip(content, texts, strict=False)
        ]
    return content


def item_kind(item: Any) -> str:
    if not isinstance(item, dict):
        return "invalid"
    kind = item.get("type")
    if isinstance(kind, str) and kind != "message":
        return kind
    return "message" if "role" in item else (kind or "unknown")


def to_message(item: Any, call_names: dict[str, str]) -> dict[str, Any]:
    """One item as a message; `call_names` (call id → tool name) is updated by calls and
    read by outputs."""
    if not isinstance(item, dict):
        return {"role": "invalid", "content": item}
    kind = item_kind(item)
    if kind == "message":
        msg = {"role": str(item.get("role")), "content": content_of(item.get("content"))}
        return msg
    call_id = item.get("call_id")
    if kind == "reasoning":
        summary = [part_text(p) or "" for p in item.get("summary") or []]
        content = [part_text(p) or "" for p in item.get("content") or []]
        msg = {"role": "reasoning", "content": "\n".join(t for t in summary + content if t)}
        if item.get("encrypted_content"):
            msg["encrypted"] = True
        return msg
    if kind.endswith("_output") and isinstance(call_id, str):
        msg = {"role": "tool", "tool_call_id": call_id, "content": _output_text(item.get("output"))}
        if call_id in call_names:
            msg["name"] = call_names[call_id]
        return msg
    if kind.endswith("_call") and isinstance(call_id, str) or kind == "function_call":
        name = item.get("name") or kind
        args = item.get("arguments", item.get("input", item.get("action")))
        call_names[str(call_id)] = str(name)
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call_id, "name": name, "arguments": args}],
        }
    rest = {k: v for k, v in item.items() if k not in ("type", "id")}
    return {"role": kind, "content": json.dumps(rest, ensure_ascii=False, sort_keys=True)}


def _output_text(output: Any) -> Any:
    if isinstance(output, list):
        return content_of(output)
    return output


def searchable_text(msg: dict[str, Any]) -> str:
    """The text of a message that search looks in: content, tool names and arguments."""
    parts: list[str] = []
    content = msg.get("content")
    parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    for call in msg.get("tool_calls") or []:
        args = call.get("arguments")
        parts.append(str(call.get("name") or ""))
        parts.append(args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
    return "\n".join(parts)


#: how much of a text a one-line summary looks at
_HEAD = 8192


def summary_of(item: Any, msg: dict[str, Any]) -> str:
    from agentctl.storage.sqlconn import one_line

    role = msg.get("role", "?")
    if msg.get("tool_calls"):
        call = msg["tool_calls"][0]
        args = call.get("arguments")
        args_s = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return one_line(f"{role}: {call.get('name')}({args_s})")
    if role == "tool":
        return one_line(
            f"tool {msg.get('name') or msg.get('tool_call_id')}: {str(msg.get('content'))[:_HEAD]}"
        )
    content = msg.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return one_line(f"{role}: {text[:_HEAD]}")  # not a copy of a 50 MB text


def tags_of(item: Any, msg: dict[str, Any]) -> list[str]:
    kind = item_kind(item)
    if kind == "message":
        return [str(msg.get("role"))]
    if msg.get("tool_calls"):
        return [kind, f"tool:{msg['tool_calls'][0].get('name')}"]
    return [kind]
