"""`agentctl edit` on the article's store: a message changed in place, and its session's fields.

REF names a message (a session id names its last message, as everywhere). What KEY names
(the edit view, built from the checkpoint as `show --json` shows it):

    {"role": ..., "content": ..., "tool_calls": ..., "tool_call_id": ...,      <- that message
     "session": {"title": ..., "status": ..., "model": ..., "metadata": ...}}  <- its session's row

`content`, `role` (system/user/assistant/tool), `tool_calls` (any JSON; written to
tool_calls_json as the article's save_message writes it: `json.dumps(..., ensure_ascii=False)`,
NULL when empty) and `tool_call_id` change the message row in place (its id, session and
created_at stay: the transcript is the same length, the step the same); `session.title`,
`session.status` (active/paused/completed/cancelled), `session.model` and `session.metadata`
(nested keys too: `session.metadata.topic`) change the session row, whose `updated_at` is set
to now as the article's own updates do. Only the columns whose value changes are written.

One transaction, one op (kind "edit") in the journal: the message row and the session row
updated, their images kept, and undo (redo) writes them back column for column (updated_at
included). messages_fts is kept in step when agentctl maintains it (see history.py): the
old content's index entry is deleted and the new one inserted, and undo and redo do the
same. Undo refuses when the session changed after the edit (its fingerprint) or either
row is no longer what the edit wrote.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.storage.article.store import decode_json, message_id_of
from agentctl.storage.results import OpResult

if TYPE_CHECKING:
    from agentctl.storage.article.store import ArticleStore
    from agentctl.storage.journal import ops


class Editor(Protocol):
    """What `edit_state` needs of its History (history.py's ArticleHistory, which
    imports this module: the type is named here, not imported back)."""

    @property
    def store(self) -> ArticleStore: ...

    def _write(self, threads: Sequence[str]) -> AbstractAsyncContextManager[Any]: ...

    async def _session(self, reader: Any, sid: str) -> dict[str, Any] | None: ...

    async def _begin(
        self,
        tx: Any,
        kind: str,
        summary: str,
        threads: Sequence[str],
        details: dict[str, Any],
        tables: Sequence[str],
    ) -> ops.Op: ...

    async def _fts_index(self, tx: Any, action: str, where: str, params: Sequence[Any] = ()) -> None: ...

    def _ts(self, table: str, column: str) -> str: ...

    def _now(self) -> str: ...

    async def journal_finish(self, op: ops.Op) -> int: ...


#: view key -> messages column
MESSAGE_FIELDS = {
    "role": "role",
    "content": "content",
    "tool_calls": "tool_calls_json",
    "tool_call_id": "tool_call_id",
}
#: session view key -> sessions column
SESSION_FIELDS = {"title": "title", "status": "status", "model": "model", "metadata": "metadata_json"}
ROLES = ("system", "user", "assistant", "tool")
STATUSES = ("active", "paused", "completed", "cancelled")
MESSAGE_COLUMNS = tuple(MESSAGE_FIELDS.values())


def _decoded(field: str, raw: Any) -> Any:
    return decode_json(raw)[0] if field in ("tool_calls", "metadata") else raw


def view_of(message: dict[str, Any], session: dict[str, Any] | None) -> dict[str, Any]:
    """The edit view of a message row and its session row (raw columns)."""
    view = {k: _decoded(k, message.get(col)) for k, col in MESSAGE_FIELDS.items()}
    if session is not None:
        view["session"] = {
            k: _decoded(k, session[col]) for k, col in SESSION_FIELDS.items() if col in session
        }
    return view


def edit_view(cp: Any) -> dict[str, Any]:
    """The edit view of a checkpoint as the store reads it (its last message, its session)."""
    msg = cp.messages[-1] if cp.messages else {}
    view = {k: msg.get(k) for k in MESSAGE_FIELDS}
    session = (cp.state or {}).get("session")
    if isinstance(session, dict):
        view["session"] = {
            k: session.get(k) for k, col in SESSION_FIELDS.items() if k in session or col in session
        }
    return view


def edit_check(old: dict[str, Any], new: dict[str, Any]) -> None:
    """UsageError (exit 2) when `new` is no message / session the article could hold."""
    for key in ("role", "content"):
        if key not in new:
            raise UsageError(f"--unset {key}: a message always has a {key}; set it instead")
    if "session" in old:
        if not isinstance(new.get("session"), dict):
            raise UsageError(f"--unset session: set its fields instead ({_names(old['session'])})")
        extra = sorted(set(new["session"]) - set(old["session"]))
        if extra:
            raise UsageError(
                f"the session has no field {extra[0]!r} that edit changes "
                f"(its fields: {_names(old['session'])})"
            )

    def changed(key: str, where: dict[str, Any] = new, was: dict[str, Any] = old) -> bool:
        return key in where and where.get(key) != was.get(key)

    if changed("content") and not isinstance(new["content"], str):
        raise UsageError("content: a message's content is a string (e.g. --set content='\"new text\"')")
    if changed("role") and new["role"] not in ROLES:
        raise UsageError(f"role: {new['role']!r} is no role of the article's messages ({', '.join(ROLES)})")
    if (
        changed("tool_call_id")
        and new["tool_call_id"] is not None
        and not isinstance(new["tool_call_id"], str)
    ):
        raise UsageError("tool_call_id: a string or null")
    session, before = new.get("session") or {}, old.get("session") or {}
    for key in ("title", "model"):
        if changed(key, session, before) and session[key] is not None and not isinstance(session[key], str):
            raise UsageError(f"session.{key}: a string or null")
    if changed("status", session, before) and session["status"] not in STATUSES:
        raise UsageError(
            f"session.status: {session['status']!r} is no session status ({', '.join(STATUSES)})"
        )
    if "status" in before and "status" not in session:
        raise UsageError("--unset session.status: a session has a status; set it instead")


def _names(d: dict[str, Any]) -> str:
    return ", ".join(sorted(d))


def _encoded(field: str, value: Any) -> Any:
    """A view value as its column holds it (the article's save_message: JSON text, NULL when empty)."""
    if field == "tool_calls":
        return json.dumps(value, ensure_ascii=False) if value else None
    if field == "metadata":
        return None if value is None else json.dumps(value, ensure_ascii=False)
    return value


async def edit_state(h: Editor, checkpoint_id: str, new: dict[str, Any], what: str) -> OpResult:
    """Write the edited view `new` of message REF (see the module doc); one op."""
    mid = message_id_of(checkpoint_id)
    first = await h.store.q("SELECT session_id FROM messages WHERE id = ?", mid) if mid is not None else []
    if mid is None or not first:
        raise CheckpointNotFound(checkpoint_id)
    cols = ", ".join(MESSAGE_COLUMNS)
    async with h._write([first[0]["session_id"]]) as tx:
        rows = await tx.fetch(f"SELECT session_id, {cols} FROM messages WHERE id = ?", mid)
        if not rows:
            raise CheckpointNotFound(checkpoint_id)
        sid = rows[0]["session_id"]
        if sid != first[0]["session_id"]:
            raise OperationError(f"message {checkpoint_id} moved to another session meanwhile; retry")
        session = await h._session(tx, sid)
        old = view_of(rows[0], session)
        edit_check(old, new)
        msg_set = {
            MESSAGE_FIELDS[k]: _encoded(k, new.get(k)) for k in MESSAGE_FIELDS if new.get(k) != old.get(k)
        }
        old_s, new_s = old.get("session") or {}, new.get("session") or {}
        ses_set = {
            SESSION_FIELDS[k]: _encoded(k, new_s.get(k)) for k in old_s if new_s.get(k) != old_s.get(k)
        }
        step = int(
            (await tx.fetch("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND id <= ?", sid, mid))[
                0
            ]["n"]
        )
        if not msg_set and not ses_set:
            return OpResult(
                None,
                "edit",
                f"nothing to change: {checkpoint_id} (step {step} of {sid}) already holds these values",
            )
        summary = f"edit {sid} at step {step} ({checkpoint_id}): {what}"
        details: dict[str, Any] = {
            "thread": sid,
            "ref": checkpoint_id,
            "message_id": mid,
            "message_columns": sorted(msg_set),
            "session_columns": sorted(ses_set),
        }
        op = await h._begin(tx, "edit", summary, [sid], details, ("sessions", "messages"))
        if msg_set:
            if "content" in msg_set:  # the old content's entry (FTS5 needs the old value)
                await h._fts_index(tx, "delete", "id = ?", (mid,))
            assign = ", ".join(f"{c} = {h._ts('messages', c)}" for c in msg_set)
            await op.update("messages", ("id",), "id = ?", (mid,), assign, tuple(msg_set.values()))
            if "content" in msg_set:
                await h._fts_index(tx, "insert", "id = ?", (mid,))
        if session is not None:
            sets = [f"{c} = {h._ts('sessions', c)}" for c in ses_set] + [
                f"updated_at = {h._ts('sessions', 'updated_at')}"
            ]
            await op.update(
                "sessions", ("id",), "id = ?", (sid,), ", ".join(sets), (*ses_set.values(), h._now())
            )
        op_id = await h.journal_finish(op)
    return OpResult(
        op_id,
        "edit",
        f"edited {sid}: message {checkpoint_id} (step {step})"
        + (f" in place ({', '.join(sorted(msg_set))})" if msg_set else "")
        + (f"; session {', '.join(sorted(ses_set)) or 'updated_at'}" if session is not None else ""),
    )
