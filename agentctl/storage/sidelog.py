"""The operation log of the formats that write into another program's tables (the
OpenAI Agents SDK's sessions, Google ADK's): one side table per format,
`agentctl_<format>_oplog(op_id, created_at, kind, summary, threads, details, undone,
undo_of, undone_by, purged)`, written in the caller's write transaction. `details`
(JSON) holds what undo needs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction


class SideLog:
    def __init__(self, table: str, kind: str) -> None:
        self.table = table
        self.kind = kind  # "sqlite" or "postgres"

    async def ensure(self, tx: Transaction) -> None:
        await tx.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} (op_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, "
            "kind TEXT NOT NULL, summary TEXT NOT NULL, threads TEXT NOT NULL, details TEXT NOT NULL, "
            "undone INTEGER NOT NULL DEFAULT 0, undo_of INTEGER, undone_by INTEGER, "
            "purged INTEGER NOT NULL DEFAULT 0)")
        if self.kind == "postgres":  # op ids: one writer at a time
            await tx.execute(f"LOCK TABLE {self.table} IN EXCLUSIVE MODE")

    async def record(self, tx: Transaction, now: str, kind: str, summary: str, threads: list[str],
                     details: dict[str, Any], undo_of: int | None = None) -> int:
        rows = await tx.fetch(f"SELECT COALESCE(MAX(op_id), 0) + 1 AS n FROM {self.table}")
        op_id = int(rows[0]["n"])
        await tx.execute(
            f"INSERT INTO {self.table} (op_id, created_at, kind, summary, threads, details, undo_of) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", op_id, now, kind, summary, json.dumps(threads),
            json.dumps(details), undo_of)
        return op_id

    async def set_details(self, tx: Transaction, op_id: int, details: dict[str, Any]) -> None:
        await tx.execute(f"UPDATE {self.table} SET details = ? WHERE op_id = ?", json.dumps(details), op_id)

    async def mark_undone(self, tx: Transaction, op_id: int, by: int) -> None:
        await tx.execute(f"UPDATE {self.table} SET undone = 1, undone_by = ? WHERE op_id = ?", by, op_id)

    @staticmethod
    def record_of(row: dict[str, Any], purgeable: int = 0) -> Any:
        from agentctl.storage.results import OpRecord

        return OpRecord(op_id=int(row["op_id"]), created_at=row["created_at"], kind=row["kind"],
                        summary=row["summary"], threads=json.loads(row["threads"]),
                        undone=bool(row["undone"]), undo_of=row["undo_of"], undone_by=row["undone_by"],
                        purged=bool(row["purged"]), purgeable_rows=purgeable,
                        details=json.loads(row["details"]))

    async def rows(self, store: Any, limit: int) -> list[dict[str, Any]]:
        await store.connect()
        if not await store._db.table_exists(self.table):
            return []
        return await store._q(f"SELECT * FROM {self.table} ORDER BY op_id DESC LIMIT ?", int(limit))

    async def pick(self, store: Any, op_id: int | None, kinds: tuple[str, ...]) -> Any:
        """The OpRecord to undo: `op_id`, or the newest of `kinds` not undone; raises
        OperationError / NotFoundError."""
        from agentctl.errors import NotFoundError, OperationError

        await store.connect()
        if not await store._db.table_exists(self.table):
            raise OperationError("nothing to undo")
        if op_id is None:
            rows = await store._q(f"SELECT * FROM {self.table} WHERE kind IN ({marks(len(kinds))}) AND undone = 0 "
                                  "AND purged = 0 ORDER BY op_id DESC LIMIT 1", *kinds)
            if not rows:
                raise OperationError("nothing to undo")
        else:
            rows = await store._q(f"SELECT * FROM {self.table} WHERE op_id = ?", int(op_id))
            if not rows:
                raise NotFoundError(f"operation {op_id} not found")
        op = self.record_of(rows[0])
        if op.kind not in kinds:
            raise OperationError(f"operation {op.op_id} ({op.kind}) cannot be undone")
        if op.undone or op.purged:
            raise OperationError(f"operation {op.op_id} was already {'undone' if op.undone else 'purged'}")
        return op


async def purge_trash(store: Any, trash: str, oplog: str, dry_run: bool) -> Any:
    """Empty a format's trash table (`trash`, rows by op_id) and mark its operations
    purged in `oplog`; a PurgeResult (what it would free, with dry_run)."""
    from agentctl.storage.results import PurgeResult

    await store.connect()
    if not await store._db.table_exists(trash):
        return PurgeResult(ops=[], rows=0, dry_run=dry_run)
    rows = await store._q(f"SELECT op_id, COUNT(*) AS n FROM {trash} GROUP BY op_id ORDER BY op_id")
    ops = [int(r["op_id"]) for r in rows]
    total = sum(int(r["n"]) for r in rows)
    if dry_run or not ops:
        return PurgeResult(ops=ops, rows=total, dry_run=dry_run)
    async with store._db.transaction() as tx:
        await tx.execute(f"DELETE FROM {trash}")
        for op in ops:
            await tx.execute(f"UPDATE {oplog} SET purged = 1 WHERE op_id = ?", op)
    return PurgeResult(ops=ops, rows=total, dry_run=False)


# moved to agentctl.storage.contract (the formats on the journal use it too)
from agentctl.storage.contract import RewindAndBranchOnly  # noqa: E402,F401
