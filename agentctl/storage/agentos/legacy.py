"""The previous release's op log of the AgentOS engine (`agentctl_oplog`,
`agentctl_oplog_rows`, `agentctl_oplog_threads`, `agentctl_trash`), read as it stands
until the first write, then moved into the journal inside that write's transaction
(`migrate`): each op adopted under its own id, with the images its undo and redo need,
and the old tables dropped.

The images of an op still done: the rows it deleted (its rows in the old trash:
"before"), the rows it inserted (standing now: "after"), the rows it moved to another
thread or re-parented (standing now: "after"; "before": the same row with the old
thread and parent its `agentctl_oplog_rows` kept). An op the old code undid kept no
image (its undo emptied its trash): it stays listed as undone, marked purged, and its
redo is refused (`ops.NO_REDO`). Its fingerprints are the old ones (the same function),
so an op whose thread moved since stays refused."""

from __future__ import annotations

import json
from typing import Any

from agentctl.storage.agentos.rows import ALL_COLUMNS, COLUMNS
from agentctl.storage.agentos.rows import JOURNAL_KEY as KEY
from agentctl.storage.agentos.rows import JOURNAL_THREAD as THREAD
from agentctl.storage.journal import ops, trash

TABLE = "checkpoints"
OPLOG = "agentctl_oplog"
ROWS = "agentctl_oplog_rows"
THREADS = "agentctl_oplog_threads"
TRASH = "agentctl_trash"
OLD = (OPLOG, ROWS, THREADS, TRASH)

#: what an op the previous release undid says when asked to redo it


def _record(r: dict[str, Any], held: int) -> Any:
    from agentctl.storage.results import OpRecord

    return OpRecord(op_id=int(r["op_id"]), created_at=r["created_at"], kind=r["kind"], summary=r["summary"],
                    threads=[str(t) for t in json.loads(r["threads"] or "[]")], undone=r["undone_by"] is not None,
                    undo_of=None if r["undo_of"] is None else int(r["undo_of"]),
                    undone_by=None if r["undone_by"] is None else int(r["undone_by"]),
                    purged=bool(r["purged"]), purgeable_rows=held, details=json.loads(r["details"] or "{}"))


async def _held(db: Any) -> dict[int, int]:
    if not await db.table_exists(TRASH):
        return {}
    return {int(r["op_id"]): int(r["n"])
            for r in await db.query(f"SELECT op_id, COUNT(*) AS n FROM {TRASH} GROUP BY op_id")}


async def oplog(db: Any, limit: int) -> list[Any] | None:
    """The old log's records, newest first (None: there is none); a read."""
    if not await db.table_exists(OPLOG):
        return None
    held = await _held(db)
    return [_record(r, held.get(int(r["op_id"]), 0))
            for r in await db.query(f"SELECT * FROM {OPLOG} ORDER BY op_id DESC LIMIT ?", int(limit))]


async def purge_plan(db: Any) -> Any | None:
    """What purge would free of the old trash (None: there is no old log)."""
    from agentctl.storage.results import PurgeResult

    if not await db.table_exists(OPLOG):
        return None
    held = await _held(db)
    return PurgeResult(ops=sorted(op for op, n in held.items() if n), rows=sum(held.values()), dry_run=True)


async def migrate(tx: Any) -> None:
    """The old op log and trash into the journal, in the caller's transaction."""
    if not await tx.table_exists(OPLOG):
        return
    has_trash = await tx.table_exists(TRASH)
    # a moved row as it was: the standing row with the thread and parent it had
    was = ", ".join("r.old_thread_id AS thread_id" if c == THREAD else "r.old_parent_id AS parent_id"
                    if c == "parent_id" else f"c.{c}" for c in ["id", *COLUMNS])
    moved = (f"SELECT {was} FROM checkpoints c JOIN {ROWS} r ON r.checkpoint_id = c.checkpoint_id "
             "WHERE r.op_id = ? AND r.action = 'move'")
    standing = f"checkpoint_id IN (SELECT checkpoint_id FROM {ROWS} WHERE op_id = ?)"
    for r in await tx.fetch(f"SELECT * FROM {OPLOG} ORDER BY op_id"):
        op_id, kind = int(r["op_id"]), r["kind"]
        details = json.loads(r["details"] or "{}")
        threads = [str(t) for t in json.loads(r["threads"] or "[]")]
        prints = {f["thread_id"]: [int(f["n"]), int(f["min_id"]), int(f["max_id"]), str(f["sum_id"])]
                  for f in await tx.fetch(f"SELECT * FROM {THREADS} WHERE op_id = ?", op_id)}
        entry = kind in ("undo", "purge")
        undone = r["undone_by"] is not None
        gone = entry or undone or bool(r["purged"])
        if undone and not entry:
            details[ops.NO_REDO] = True
        tables: dict[str, Any] = {}
        if not gone:
            tables = {TABLE: {"key": list(KEY), "thread": THREAD}}
            if has_trash:
                await trash.add_images(tx, op_id, TABLE, "before", f"SELECT {ALL_COLUMNS} FROM {TRASH} WHERE op_id = ?",
                                       (op_id,))
            await trash.add_images(tx, op_id, TABLE, "before", moved, (op_id,))
            await trash.set_aside(tx, op_id, TABLE, standing, (op_id,), image="after")
            threads = list(prints) or threads  # the threads it changed: those undo compares
        await ops.adopt(tx, {"op_id": op_id, "created_at": r["created_at"], "kind": kind, "summary": r["summary"],
                             "threads": threads, "details": details, "tables": tables, "fingerprints": prints,
                             "undone": undone, "purged": gone and kind != "undo",
                             "undo_of": r["undo_of"], "undone_by": r["undone_by"]})
    for old in OLD:
        if await tx.table_exists(old):
            await tx.execute(f"DROP TABLE {old}")

