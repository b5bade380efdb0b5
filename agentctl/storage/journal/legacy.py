"""What the formats' previous op logs (their legacy.py) share: each is read as it stands
until the first write (`oplog`, `purge_plan`), which moves it into the journal
(`records`, adopted by the format's `migrate` with its images, then `drop`).

The previous release's log of every format has one row per op (op_id, created_at, kind,
summary, threads and details as JSON, undo_of, undone_by or an `undone` flag, purged) and
trash tables holding the rows its ops deleted (rows by op id: column `op`). An op it
undid kept no image (its undo emptied its trash): adopted, it stays listed as undone and
its redo is refused (`ops.NO_REDO`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentctl.storage.journal import ops

#: the old logs' own lines: no op to undo or redo
ENTRIES = ("undo", "purge")


def _parse(text: Any, default: Any) -> Any:
    try:
        v = json.loads(text)
    except (TypeError, ValueError):
        return default
    return v if isinstance(v, type(default)) else default


def record(r: Any) -> dict[str, Any]:
    """A row of an old log as the journal's record (what `ops.adopt` takes)."""
    return {
        "op_id": int(r["op_id"]),
        "created_at": r["created_at"],
        "kind": r["kind"],
        "summary": r["summary"],
        "threads": [str(t) for t in _parse(r["threads"], [])],
        "details": _parse(r["details"], {}),
        "undone": bool(r["undone"]) if "undone" in r else r["undone_by"] is not None,
        "purged": bool(r["purged"]),
        "undo_of": r["undo_of"],
        "undone_by": r["undone_by"],
    }


def done(rec: dict[str, Any]) -> bool:
    """Whether an old op is still done with its images kept (undo may move it)."""
    return rec["kind"] not in ENTRIES and not rec["undone"] and not rec["purged"]


@dataclass(frozen=True)
class OldLog:
    """A format's previous op log: its table, its trash tables (rows by op id in column
    `op`; a purge frees the rows matching `freed`) and its other tables."""

    log: str
    trashes: tuple[str, ...] = ()
    op: str = "op_id"
    freed: str = "1 = 1"
    others: tuple[str, ...] = ()

    async def held(self, db: Any) -> dict[int, int]:
        """{op id: rows a purge would free} (`db`: a store's connection)."""
        counts: dict[int, int] = {}
        for t in self.trashes:
            if await db.table_exists(t):
                for r in await db.query(
                    f"SELECT {self.op} AS op, COUNT(*) AS n FROM {t} WHERE {self.freed} GROUP BY {self.op}"
                ):
                    counts[int(r["op"])] = counts.get(int(r["op"]), 0) + int(r["n"])
        return counts

    async def oplog(self, db: Any, limit: int) -> list[Any] | None:
        """The old log's records (OpRecord), newest first; None: there is none."""
        from agentctl.storage.journal.history import _record

        if not await db.table_exists(self.log):
            return None
        held = await self.held(db)
        return [
            _record(record(r), held.get(int(r["op_id"]), 0))
            for r in await db.query(f"SELECT * FROM {self.log} ORDER BY op_id DESC LIMIT ?", int(limit))
        ]

    async def purge_plan(self, db: Any) -> Any | None:
        """What a purge would free of the old trash (PurgeResult); None: there is no old log."""
        from agentctl.storage.results import PurgeResult

        if not await db.table_exists(self.log):
            return None
        held = await self.held(db)
        return PurgeResult(ops=sorted(held), rows=sum(held.values()), dry_run=True)

    async def records(self, tx: Any, newest_first: bool = False) -> list[dict[str, Any]] | None:
        """The old log's records in the caller's transaction, an op the old code undid
        marked NO_REDO; None: there is no old log (nothing to migrate)."""
        if not await tx.table_exists(self.log):
            return None
        out = [
            record(r)
            for r in await tx.fetch(
                f"SELECT * FROM {self.log} ORDER BY op_id {'DESC' if newest_first else 'ASC'}"
            )
        ]
        for rec in out:
            if rec["undone"] and rec["kind"] not in ENTRIES:
                rec["details"][ops.NO_REDO] = True
        return out

    async def drop(self, tx: Any) -> None:
        """The old tables dropped (the end of the migration)."""
        for t in (self.log, *self.trashes, *self.others):
            await tx.execute(f"DROP TABLE IF EXISTS {t}")
