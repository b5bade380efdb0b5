"""ADK events (the `event_data` JSON of schema v1: the Event model's dump) as agentctl's
chat messages, and the state fold.

One message per event: `role` "user" for the user's content, "tool" for an event of
function responses, else "assistant"; `name` the event's author; `content` its text
parts; `tool_calls` its function calls (id, name, args); extra keys shown as they are:
`invocation_id`, `state_delta`, `artifact_delta` (artifact name → version), `error`
(code and message), `transfer_to_agent`, `escalate`, `rewind_before_invocation_id`,
`branch`.

State (what ADK's `get_session` reports, rebuilt for step N):
- session keys: the session row's `state` holds the initial state folded with every
  delta. A key no event's delta sets kept its initial value, which the row still
  holds; a key some delta sets starts unknown (the database keeps no copy of the
  initial state; adk-python#4933) and is absent until the first delta that sets it;
- `app:` / `user:` keys: the same, from `app_states` / `user_states`, folded with the
  deltas of every session that shares them (the app's sessions for `app:`, the user's
  for `user:`) in time order: a key some delta sets is unknown (the value `UNKNOWN`)
  until the first such delta before the step, then has the latest one's value (its
  value before its first change, if it had one, is stored nowhere: create_session
  writes it into the row, which the first delta overwrites);
- `temp:` keys are never stored. A delta's `None` value stays as a `None` value, as
  `append_event` stores it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentctl import deep
from agentctl.storage.sqlconn import one_line

APP, USER, TEMP = "app:", "user:", "temp:"
#: the value shown for an `app:`/`user:` key at a step before its first change
UNKNOWN = "(unknown: its value before its first change is stored nowhere)"


def decode_json(value: Any) -> tuple[Any, str | None]:
    if value is None:
        return None, None
    if isinstance(value, (dict, list)):
        return value, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    try:
        return deep.loads(value), None
    except (TypeError, ValueError) as exc:
        return None, str(exc)


def state_delta(event: dict[str, Any]) -> dict[str, Any]:
    actions = event.get("actions") if isinstance(event, dict) else None
    delta = actions.get("state_delta") if isinstance(actions, dict) else None
    return delta if isinstance(delta, dict) else {}


def split_delta(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(session, app, user) parts of a delta; app/user keys without their prefix."""
    s: dict[str, Any] = {}
    a: dict[str, Any] = {}
    u: dict[str, Any] = {}
    for k, v in delta.items():
        if k.startswith(APP):
            a[k[len(APP) :]] = v
        elif k.startswith(USER):
            u[k[len(USER) :]] = v
        elif not k.startswith(TEMP):
            s[k] = v
    return s, a, u


class StateFold:
    """The state of a session step by step: `start(...)` with the stored final states and
    every event of the session, then `apply(event)` per event, `state()` merged as ADK
    merges it (session keys, then `app:` and `user:` keys)."""

    def __init__(
        self,
        session_state: dict[str, Any],
        app_state: dict[str, Any],
        user_state: dict[str, Any],
        events: list[dict[str, Any]],
        shared: Sequence[dict[str, Any]] = (),
    ):
        """`shared`: the `app:`/`user:` parts of other sessions' deltas (see `apply_shared`)."""
        touched: tuple[set[str], set[str], set[str]] = (set(), set(), set())
        for ev in events:
            for part, keys in zip(split_delta(state_delta(ev)), touched, strict=False):
                keys.update(part)
        for delta in shared:
            for part, keys in list(zip(split_delta(delta), touched, strict=False))[1:]:
                keys.update(part)
        self.session = {k: v for k, v in session_state.items() if k not in touched[0]}
        self.app = {k: v for k, v in app_state.items() if k not in touched[1]}
        self.user = {k: v for k, v in user_state.items() if k not in touched[2]}
        #: the `app:`/`user:` keys (with their prefix) not yet set by a delta: unknown
        self.unknown = {APP + k for k in touched[1]} | {USER + k for k in touched[2]}

    def apply(self, event: dict[str, Any]) -> None:
        delta = state_delta(event)
        self.session.update(split_delta(delta)[0])
        self.apply_shared(delta)

    def apply_shared(self, delta: dict[str, Any]) -> None:
        """Another session's delta of the `app:` and `user:` keys this one shares."""
        _s, a, u = split_delta(delta)
        self.app.update(a)
        self.user.update(u)
        self.unknown -= {APP + k for k in a} | {USER + k for k in u}

    def state(self) -> dict[str, Any]:
        merged = json.loads(json.dumps(self.session))
        for k, v in self.app.items():
            merged[APP + k] = json.loads(json.dumps(v))
        for k, v in self.user.items():
            merged[USER + k] = json.loads(json.dumps(v))
        for k in sorted(self.unknown):
            merged[k] = UNKNOWN
        return merged


def rewind_target(event: Any) -> str | None:
    """The invocation a rewind event rewinds (`actions.rewind_before_invocation_id`)."""
    actions = event.get("actions") if isinstance(event, dict) else None
    target = actions.get("rewind_before_invocation_id") if isinstance(actions, dict) else None
    return target if isinstance(target, str) and target else None


def first_of(invocations: Sequence[str | None]) -> dict[str, int]:
    """The index of each invocation's first event."""
    first: dict[str, int] = {}
    for i, inv in enumerate(invocations):
        if inv and inv not in first:
            first[inv] = i
    return first


def apply_rewinds(
    invocations: Sequence[str | None], targets: Sequence[str | None]
) -> tuple[list[int], set[int]]:
    """ADK's `_apply_rewinds` (google/adk/events/_rewind_events.py) over a session's
    events in order (their invocation ids and rewind targets): the indices of the events
    it keeps, the conversation ADK gives the model (`contents.py` skips the others), and
    the indices of those a rewind drops (not the rewind events themselves, which ADK
    drops too). Walking back from the end, a rewind event drops itself and every event
    back to its invocation's first one; a rewind inside a dropped range does nothing."""
    first = first_of(invocations)
    kept: list[int] = []
    dropped: set[int] = set()
    i = len(targets) - 1
    while i >= 0:
        target = targets[i]
        if target:
            start = first.get(target)
            if start is not None and start < i:
                dropped.update(range(start, i))
                i = start
        else:
            kept.append(i)
        i -= 1
    kept.reverse()
    return kept, dropped


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = event.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def to_message(event: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        return {"role": "invalid", "content": event}
    parts = _parts(event)
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    thoughts = [p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought")]
    calls = [p["function_call"] for p in parts if isinstance(p.get("function_call"), dict)]
    responses = [p["function_response"] for p in parts if isinstance(p.get("function_response"), dict)]
    author = event.get("author") or ""
    content = event.get("content")
    content_role = content.get("role") if isinstance(content, dict) else None
    msg: dict[str, Any]
    if responses and not texts and not calls:
        msg = {"role": "tool", "name": author}
        if len(responses) == 1:
            r = responses[0]
            msg["name"] = r.get("name") or author
            if r.get("id"):
                msg["tool_call_id"] = r["id"]
            msg["content"] = r.get("response")
        else:
            msg["content"] = [
                {"id": r.get("id"), "name": r.get("name"), "response": r.get("response")} for r in responses
            ]
        msg["author"] = author
    else:
        role = "user" if (author == "user" or content_role == "user") else "assistant"
        msg = {"role": role}
        if author != role:  # the user's own events: their role says who (`[0] user`, once)
            msg["name"] = author
        msg["content"] = "\n".join(texts)
        if calls:
            msg["tool_calls"] = [
                {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args", {})} for c in calls
            ]
        if responses:
            msg["function_responses"] = responses
    if thoughts:
        msg["thoughts"] = "\n".join(thoughts)
    other = [p for p in parts if not any(k in p for k in ("text", "function_call", "function_response"))]
    if other:
        msg["other_parts"] = other
    if event.get("invocation_id"):
        msg["invocation_id"] = event["invocation_id"]
    actions = event.get("actions")
    if not isinstance(actions, dict):
        actions = {}
    for key in ("state_delta", "artifact_delta"):
        if actions.get(key):
            msg[key] = actions[key]
    for key in ("transfer_to_agent", "escalate", "rewind_before_invocation_id"):
        if actions.get(key) is not None:
            msg[key] = actions[key]
    if event.get("error_code") or event.get("error_message"):
        msg["error"] = {"code": event.get("error_code"), "message": event.get("error_message")}
    if event.get("branch"):
        msg["branch"] = event["branch"]
    return msg


def tools_of(event: Any, tools: dict[str, Any]) -> None:
    """Record the event's function calls and responses in `tools` (call id → {name,
    args, response})."""
    if not isinstance(event, dict):
        return
    for p in _parts(event):
        call = p.get("function_call")
        if isinstance(call, dict):
            tools[str(call.get("id"))] = {"name": call.get("name"), "args": call.get("args", {})}
        resp = p.get("function_response")
        if isinstance(resp, dict):
            entry = tools.setdefault(str(resp.get("id")), {"name": resp.get("name")})
            entry["response"] = resp.get("response")


def summary_of(msg: dict[str, Any]) -> str:
    who = msg.get("author") or msg.get("name") or msg.get("role")
    if msg.get("error"):
        return one_line(f"{who}: error {msg['error'].get('code')}: {msg['error'].get('message')}")
    if msg.get("rewind_before_invocation_id"):
        return one_line(f"{who}: rewind before invocation {msg['rewind_before_invocation_id']}")
    if msg.get("tool_calls"):
        call = msg["tool_calls"][0]
        return one_line(f"{who}: {call.get('name')}({json.dumps(call.get('arguments'), ensure_ascii=False)})")
    content = msg.get("content")
    if msg.get("role") == "tool":
        return one_line(f"{who} → {msg.get('name')}: {json.dumps(content, ensure_ascii=False)}")
    if content:
        return one_line(f"{who}: {content}")
    if msg.get("state_delta"):
        return one_line(f"{who}: state {json.dumps(msg['state_delta'], ensure_ascii=False)}")
    return one_line(f"{who}: (no content)")


def tags_of(msg: dict[str, Any]) -> list[str]:
    tags = [str(msg.get("author") or msg.get("name") or msg.get("role"))]
    for call in msg.get("tool_calls") or []:
        tags.append(f"call:{call.get('name')}")
    if msg.get("role") == "tool":
        tags.append("function_response")
    if msg.get("state_delta"):
        tags.append("state_delta")
    for name, version in (msg.get("artifact_delta") or {}).items():
        tags.append(f"artifact:{name}@{version}")
    if msg.get("error"):
        tags.append("error")
    if msg.get("rewind_before_invocation_id"):
        tags.append("rewind")
    return tags


def searchable_text(msg: dict[str, Any]) -> str:
    parts = []
    content = msg.get("content")
    parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    for call in msg.get("tool_calls") or []:
        parts.append(f"{call.get('name')} {json.dumps(call.get('arguments'), ensure_ascii=False)}")
    if msg.get("error"):
        parts.append(json.dumps(msg["error"], ensure_ascii=False))
    return "\n".join(parts)
