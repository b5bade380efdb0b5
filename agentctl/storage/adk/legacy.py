"""ADK's rows as values (what a run may change, read before it) and the previous op log
(`agentctl_adk_oplog`, trash `agentctl_adk_trash`), moved into the journal by the first
write (`migrate`; the shared part: journal/legacy.py). An op still done gets its images
from what the old log kept: the state and update_time before it of the session (and of
an edit's app/user rows) from its details, the events a hard rewind moved from the old
trash, and as after-images the rows as they stand (or, for an older op on the same row,
as the next op found them); its fingerprint is the update_time it left."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.legacy import OldLog, done
from agentctl.storage.journal.trash import row_select

OPLOG = "agentctl_adk_oplog"
TRASH = "agentctl_adk_trash"
OLD = OldLog(OPLOG, (TRASH,))
#: the key columns of ADK's tables, and the WHERE of a state row by its key
KEYS = {
    "sessions": ("app_name", "user_id", "id"),
    "app_states": ("app_name",),
    "user_states": ("app_name", "user_id"),
    "events": ("id", "app_name", "user_id", "session_id"),
}
WHERE = {
    "sessions": "app_name = ? AND user_id = ? AND id = ?",
    "app_states": "app_name = ?",
    "user_states": "app_name = ? AND user_id = ?",
}
STATE_TABLES = (("sessions", 3), ("app_states", 1), ("user_states", 2))
COLUMNS = {
    "sessions": ("app_name", "user_id", "id", "state", "create_time", "update_time"),
    "app_states": ("app_name", "state", "update_time"),
    "user_states": ("app_name", "user_id", "state", "update_time"),
}
_EVENT_COLS = "id, app_name, user_id, session_id, invocation_id, timestamp, event_data"

Fetch = Callable[..., Awaitable[list[dict[str, Any]]]]


# ---- rows as values ------------------------------------------------------------------------


async def _row(kind: str, fetch: Fetch, table: str, owner: Sequence[str]) -> dict[str, Any] | None:
    """A state row as values: each column as stored (Postgres: as text, exact)."""
    cols = ", ".join(f"CAST({c} AS TEXT) AS {c}" if kind == "postgres" else c for c in COLUMNS[table])
    rows = await fetch(f"SELECT {cols} FROM {table} WHERE {WHERE[table]}", *owner)
    return dict(rows[0]) if rows else None


async def rows_of(store: Any, fetch: Fetch, key: Sequence[str]) -> dict[str, Any]:
    """The session's, app's and user's state rows (None: no row) and the session's event ids."""
    out: dict[str, Any] = {}
    for table, n in STATE_TABLES:
        if table == "sessions" or await store.connection.table_exists(table):
            out[table] = await _row(store.kind, fetch, table, key[:n])
    out["events"] = [
        r["id"]
        for r in await fetch(
            "SELECT id FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?", *key
        )
    ]
    return out


# ---- the migration --------------------------------------------------------------------------


class _Images:
    """The images of the old ops, newest op first: `after[(table, key)]` is the row as the
    op being adopted left it (the rows as they stand, then each op's before-image)."""

    def __init__(self, tx: Any) -> None:
        self.tx = tx
        self.after: dict[tuple[str, tuple[str, ...]], dict[str, Any] | None] = {}
        self.claimed: set[str] = set()  # events a newer op inserted
        self.op_id = 0  # the op being adopted, and {table: key} of its images
        self.tables: dict[str, list[str]] = {}

    async def row_after(self, table: str, owner: tuple[str, ...]) -> dict[str, Any] | None:
        if (table, owner) not in self.after:
            self.after[(table, owner)] = await _row(self.tx.kind, self.tx.fetch, table, owner)
        return self.after[(table, owner)]

    async def state_row(self, table: str, owner: tuple[str, ...], was: dict[str, Any] | None = None) -> None:
        """One state row the op changed: its before-image (the row as the op left it with
        the values `was`; None: the op made it) and the row as it left it; what older ops
        find after them is that before-image."""
        after = await self.row_after(table, owner)
        before = None if was is None else {**(after or dict(zip(KEYS[table], owner, strict=False))), **was}
        for image, row in (("before", before), ("after", after)):
            if row is not None:
                await trash.add_images(
                    self.tx, self.op_id, table, image, *await row_select(self.tx, table, row)
                )
        self.tables[table] = list(KEYS[table])
        self.after[(table, owner)] = before

    async def events(self, key: Sequence[str], ids: Sequence[str]) -> None:
        """Events the op inserted, as they stand."""
        ids = [i for i in ids if i not in self.claimed]
        self.claimed.update(ids)
        for i in ids:
            await trash.set_aside(
                self.tx,
                self.op_id,
                "events",
                "app_name = ? AND user_id = ? AND session_id = ? AND id = ?",
                (*key, i),
                image="after",
            )
        self.tables["events"] = list(KEYS["events"])

    async def of(self, op_id: int, kind: str, d: dict[str, Any]) -> bool:
        """The images of one old op still done; False: the old trash lacks rows it needs."""
        self.op_id, self.tables, key = op_id, {}, tuple(d["key"])
        if kind == "branch":
            await self.state_row("sessions", key)
            rows = await self.tx.fetch(
                "SELECT id FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?", *key
            )
            await self.events(key, [x["id"] for x in rows])
            return True
        if await self.row_after("sessions", key) is None:
            return False
        if kind == "run":
            for table, n in STATE_TABLES:
                if table in d["images"]:
                    was = d["images"][table]
                    await self.state_row(
                        table, key[:n], None if was is None else {"state": was[0], "update_time": was[1]}
                    )
            await self.events(key, d.get("inserted") or [])
            return True
        await self.state_row(
            "sessions", key, {"state": json.dumps(d["state_before"]), "update_time": d["update_time_before"]}
        )
        for table, was in (d.get("shared_before") or {}).items():  # an edit's app:/user: rows
            await self.state_row(table, key[:1] if table == "app_states" else key[:2], was)
        if not d.get("hard"):
            if d.get("event_id"):
                await self.events(key, [d["event_id"]])
            return True
        if not await self.tx.table_exists(TRASH):
            return False
        n = await self.tx.fetch(f"SELECT COUNT(*) AS n FROM {TRASH} WHERE op_id = ?", op_id)
        if int(n[0]["n"]) != len(d["moved"]):
            return False
        await trash.add_images(
            self.tx, op_id, "events", "before", f"SELECT {_EVENT_COLS} FROM {TRASH} WHERE op_id = ?", (op_id,)
        )
        self.tables["events"] = list(KEYS["events"])
        return True


async def migrate(h: Any, tx: Any) -> None:
    """Every op of the old log into the journal, with its images; the old tables dropped
    (in the caller's transaction: all or nothing)."""
    records = await OLD.records(tx, newest_first=True)
    if records is None:
        return
    images = _Images(tx)
    for rec in records:
        d, kind = rec["details"], rec["kind"]
        if done(rec):
            if not await images.of(rec["op_id"], kind, d):
                rec["purged"] = True  # its trash is gone: it can no longer be undone
            rec["tables"] = images.tables
            after = d.get("update_time") if kind == "branch" else d.get("update_time_after")
            rec["fingerprints"] = {
                t: (after if t == "/".join(d["key"]) else await h.fingerprint(tx, t)) for t in rec["threads"]
            }
        await ops.adopt(tx, rec)
    await OLD.drop(tx)
