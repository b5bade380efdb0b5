"""Agno's runs as plain data: decoding its JSON columns, merging the legacy array with
the runs table, and what a run shows (messages, tools, summary). No SQL here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctl import deep

#: the roles Agno's `get_chat_history` leaves out of the conversation
HIDDEN_ROLES = ("system", "tool")


def decode(value: Any) -> tuple[Any, str | None]:
    """A JSON column's value: SQLite's text (Agno 2 encodes it twice: a JSON string whose
    text is the JSON, decoded again), Postgres' JSONB text, or a value a driver decoded;
    (value, None), or (None, why) when it is not JSON. The text 'null' is None."""
    if value is None or isinstance(value, (dict, list)):
        return value, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None, "not UTF-8 text"
    if not isinstance(value, str):
        return value, None
    try:
        data = deep.loads(value)
        if isinstance(data, str) and data[:1] in ("{", "["):
            data = deep.loads(data)
    except (ValueError, RecursionError) as exc:
        return None, f"not JSON ({exc})"
    return data, None


def encode(value: Any, like: Any) -> str:
    """JSON text of `value` for a column whose stored value was `like`: encoded twice
    when that was (Agno 2 on SQLite), else once."""
    text = json.dumps(value, ensure_ascii=False)
    if isinstance(like, str):
        try:
            if isinstance(json.loads(like), str):
                return json.dumps(text)
        except ValueError:
            pass
    return text


def obj(value: Any) -> dict[str, Any]:
    """A JSON column that should hold an object, as a dict ({} otherwise)."""
    data, _ = decode(value)
    return data if isinstance(data, dict) else {}


@dataclass
class Run:
    """One run of a session in Agno's order: its row's columns (the table's, or the
    legacy array's entry) and its run_data once decoded (`data`, None until read;
    `error` when it is not JSON)."""

    run_id: str
    parent: str | None
    status: str | None
    index: Any
    created: Any
    run_type: str = ""
    data: dict[str, Any] | None = None
    error: str | None = None
    #: "table", "legacy" or "both" (in the array and the table)
    source: str = "table"
    raw_size: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def legacy_runs(value: Any) -> list[dict[str, Any]]:
    """The legacy `runs` column's entries (dicts with a run id), in their order."""
    data, _ = decode(value)
    if not isinstance(data, list):
        return []
    return [r for r in data if isinstance(r, dict) and r.get("run_id") is not None]


def run_type_of(data: dict[str, Any]) -> str:
    if "workflow_id" in data and ("step_results" in data or "step_executor_runs" in data):
        return "workflow"
    if "team_id" in data and "agent_id" not in data:
        return "team"
    return "agent"


def from_legacy(data: dict[str, Any]) -> Run:
    status = data.get("status")
    return Run(
        run_id=str(data["run_id"]),
        parent=data.get("parent_run_id"),
        status=str(status) if status is not None else None,
        index=None,
        created=data.get("created_at"),
        run_type=run_type_of(data),
        data=data,
        source="legacy",
    )


def merge(table: Sequence[Run], legacy: Iterable[dict[str, Any]]) -> list[Run]:
    """Agno's `merge_runs_table_with_legacy_blob`: the array's order first, the table's
    copy in place of an entry with the same run id, then the runs only in the table."""
    by_id = {r.run_id: r for r in table}
    out: list[Run] = []
    seen: set[str] = set()
    for entry in legacy:
        rid = str(entry["run_id"])
        if rid in seen:
            continue
        seen.add(rid)
        row = by_id.get(rid)
        if row is not None:
            row.source = "both"
            row.extra["legacy"] = entry
            out.append(row)
        else:
            out.append(from_legacy(entry))
    out.extend(r for r in table if r.run_id not in seen)
    return out


def top_level(runs: Sequence[Run]) -> list[Run]:
    """The runs that are steps: those without a parent run."""
    return [r for r in runs if not r.parent]


def input_text(data: dict[str, Any]) -> str:
    value = data.get("input")
    if isinstance(value, dict):
        value = value.get("input_content", value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def content_text(data: dict[str, Any]) -> str:
    value = data.get("content")
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def one_line(text: str, width: int = 80) -> str:
    s = " ".join(text[: 64 * width].split())
    return s if len(s) <= width else s[: width - 1] + "…"


def summary_of(data: dict[str, Any] | None, error: str | None = None) -> str:
    if data is None:
        return f"(run_data: {error})" if error else ""
    asked, said = input_text(data), content_text(data)
    if asked and said:
        return one_line(f"{one_line(asked, 38)} → {said}")
    return one_line(asked or said)


def tags_of(run: Run, sources: bool = True) -> list[str]:
    """A run's tags: its type, its status unless COMPLETED, fork / regenerate, and
    (`sources`: a layout with both places) where it is stored when not in both."""
    data = run.data or {}
    tags = [run.run_type or run_type_of(data)]
    status = run.status or data.get("status") or ""
    if status and str(status).upper() != "COMPLETED":
        tags.append(str(status).lower())
    if data.get("forked_from_run_id"):
        tags.append("regenerate" if data.get("regenerated_from") else "fork")
    if data.get("forked_from_session_id"):
        tags.append("forked-session")
    if sources and run.source == "legacy":
        tags.append("legacy-only")
    return tags


def chat_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's messages as `get_chat_history` keeps them (not system or tool ones, not
    those a run was given as history); a workflow's run as its input and output (the
    workflow session's `get_chat_history`: one interaction per run with both)."""
    if run_type_of(data) == "workflow":
        if not (data.get("input") and data.get("content")):
            return []
        return [{"role": "user", "content": data["input"]}, {"role": "assistant", "content": data["content"]}]
    out = []
    for m in data.get("messages") or []:
        if not isinstance(m, dict) or m.get("from_history") or m.get("role") in HIDDEN_ROLES:
            continue
        out.append(m)
    return out


def tools_by_call(data: dict[str, Any], out: dict[str, Any], who: str | None = None) -> None:
    """A run's tool executions, by call id (its tool messages' results where a run keeps
    no `tools` list)."""
    for t in data.get("tools") or []:
        if isinstance(t, dict):
            key = str(t.get("tool_call_id") or f"{t.get('tool_name')}#{len(out)}")
            out[key] = dict(t, agent=who) if who else t
    for m in data.get("messages") or []:
        if (
            isinstance(m, dict)
            and m.get("role") == "tool"
            and m.get("tool_call_id")
            and str(m["tool_call_id"]) not in out
        ):
            out[str(m["tool_call_id"])] = {
                "tool_name": m.get("tool_name"),
                "tool_args": m.get("tool_args"),
                "result": m.get("content"),
                **({"agent": who} if who else {}),
            }


RUN_KEYS = (
    "run_id",
    "agent_id",
    "agent_name",
    "team_id",
    "team_name",
    "workflow_id",
    "workflow_name",
    "user_id",
    "status",
    "input",
    "content",
    "content_type",
    "model",
    "model_provider",
    "metrics",
    "messages",
    "forked_from_run_id",
    "forked_from_message_index",
    "regenerated_from",
    "forked_from_session_id",
    "requirements",
    "events",
    "step_results",
)


def run_view(data: dict[str, Any]) -> dict[str, Any]:
    """What `show` gives of a run (its session_state is the checkpoint's state)."""
    return {k: data[k] for k in RUN_KEYS if data.get(k) is not None}


def searchable(message: dict[str, Any]) -> str:
    """A message's text as search matches it: its content, and its tool calls' names
    and arguments."""
    parts = [content_text(message)]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"{fn.get('name', '')} {fn.get('arguments', '')}")
    return "\n".join(p for p in parts if p)
