"""The History methods every format on the journal shares: `oplog`, `undo`, `redo`,
`purge`, and how a write starts and ends (`journal_begin` / `journal_finish`).

A format's History mixes this in and gives:

- `fingerprint(tx, thread)` (abstract: every format gives it): what "nothing changed since" compares for a thread (JSON-able);
- `lock(tx, threads)` (optional): the format's own locks, taken before a move (the OpenAI
  store locks its sessions' rows first, as the SDK does);
- `migrate(tx)` (optional): the format's previous op log and trash into the journal, run
  first in every write's transaction (ops keep their ids; the old tables are dropped);
- `old_log` (optional): the previous op log (a journal/legacy.py `OldLog`), read as it
  stands by the reads that come before the first write (a read migrates nothing);
- `journal_ready()` / `journal_moved()` (optional): before an undo, redo or purge (a check,
  the store opened) and after a move, written or refused (the store's caches dropped);
- `undo_result(record, image)` (optional): the checkpoint ids a move created, deleted or
  moved, for the OpResult (default: none named);
- `undo_by_thread` True and `undo_threads(record, threads)` (optional): `undo --thread`,
  the threads the user named as the op's threads (the op's tables written with a thread
  column: `op.delete(..., thread="thread_id")`); default: undone whole only.

Its writes then read:

    async with self.journal_tx(threads) as tx:
        op = await self.journal_begin(tx, "rewind", summary, threads, details)
        await op.delete(...); await op.update(...); ...; await op.inserted(...)
        await self.journal_finish(op)
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentctl.errors import NotFoundError, OperationError, ReadOnlyDatabase
from agentctl.storage.contract import retried_write
from agentctl.storage.journal import ops, trash

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.storage.results import OpRecord, OpResult, PurgeResult

#: the log's own lines: they changed no row and are not undone or redone themselves
ENTRIES = ("undo", "redo")


class _Reader:
    """A read-only connection of a store dressed as a transaction (`fetch`, `kind`, `table_exists`)
    for the checks of a dry run."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.kind = db.kind

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return list(await self.db.query(sql, *params))

    async def table_exists(self, name: str) -> bool:
        return bool(await self.db.table_exists(name))


class _Rehearsed(Exception):
    """Leaves a rehearsal's transaction: rolled back."""


@asynccontextmanager
async def _rehearsal(db: Any) -> AsyncIterator[Any]:
    """A write transaction whose writes do not stay: on SQLite in a copy of the file,
    on Postgres rolled back (on a writable twin of a connection opened read-only;
    ReadOnlyDatabase where the role may not write)."""
    if db.kind != "sqlite":
        writer = db.twin() if db.readonly else db
        try:
            async with writer.transaction() as tx:
                yield tx
                raise _Rehearsed
        except _Rehearsed:
            return
        finally:
            if writer is not db:
                await writer.close()
    import tempfile

    from agentctl.storage.backup import sqlite_backup

    with tempfile.TemporaryDirectory(prefix="agentctl-rehearsal-") as tmp:
        copy = f"{tmp}/copy.db"
        await asyncio.to_thread(sqlite_backup, db.local_file, copy)
        twin = db.twin(copy)  # the same connection (its schema check) on the copy
        try:
            async with twin.transaction() as tx:
                yield tx
        finally:
            await twin.close()


class JournalHistory(ABC):
    """The journal's half of a format's History (mixed in before `History`): the hooks
    below marked abstract are the format's to give; the others have defaults."""

    store: Any
    last_op_id: int | None = None
    #: whether `undo --thread` is offered (the format's `undo_threads` names the threads)
    undo_by_thread = False
    #: the format's previous op log (journal/legacy.py's OldLog; None: it had none)
    old_log: Any = None

    # ---- what a format gives ---------------------------------------------------------------

    @abstractmethod
    async def fingerprint(self, tx: Any, thread: str) -> Any:
        """What "nothing changed since" compares for a thread, read in `tx` (JSON-able)."""

    async def lock(self, tx: Any, threads: Sequence[str]) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """The format's own locks on these threads (default: none beyond the transaction's)."""

    async def migrate(self, tx: Any) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """The previous op log into the journal (default: there was none)."""

    async def legacy_oplog(self, limit: int) -> list[OpRecord] | None:
        """The previous op log's records, newest first, while it is not migrated (None: none)."""
        if self.old_log is None:
            return None
        await self.store.connect()
        return await self.old_log.oplog(self.store.connection, limit)

    async def legacy_purge(self) -> PurgeResult | None:
        """What purge frees while the previous op log is not migrated (None: there is none).
        The purge migrates first, and frees the trash the migration made (the old trash's
        rows and the images of the ops still done), so this rehearses both where nothing
        stays: on SQLite in a copy of the file (thrown away), on Postgres in a transaction
        rolled back. A store that cannot write there (Postgres opened read-only) gets the
        old trash's count, which leaves the images out."""
        if self.old_log is None:
            return None
        await self.store.connect()
        db = self.store.connection
        if not await db.table_exists(self.old_log.log):
            return None
        try:
            async with _rehearsal(db) as tx:
                await self.migrate(tx)
                held, rows = await ops.purge(tx, dry_run=True)
        except ReadOnlyDatabase:
            return await self.old_log.purge_plan(db)
        from agentctl.storage.results import PurgeResult

        return PurgeResult(ops=held, rows=rows, dry_run=True)

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        """{created|deleted|moved: [checkpoint ids]} of putting `image` of `record` back."""
        return {}

    async def preview_result(self, reader: Any, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        """undo_result for a dry run, before anything moves (`reader`: reads only)."""
        return self.undo_result(record, image)

    async def journal_ready(self) -> None:
        """Before an undo, a redo or a purge: what the format checks or opens first."""
        await self.store.connect()

    async def journal_moved(self) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """After an undo or a redo, written or refused: what the format drops (its store's
        caches of threads and branches)."""

    def describe_rows(self, table: str, keys: Sequence[tuple[Any, ...]]) -> str:
        """How a refusal names rows of `table` by their keys (a format may say "message 3")."""
        return f"{table} row(s) {', '.join('/'.join(map(str, k)) for k in keys)}"

    async def undo_threads(self, record: dict[str, Any], threads: Sequence[str]) -> list[str]:
        """The op's threads the user named with `undo --thread` (UsageError for a thread
        or an op kind the format does not undo so); default: as given."""
        return list(threads)

    async def journal_move(
        self, tx: Any, record: dict[str, Any], image: str, threads: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Put `image` of the op of `record` back ("before": undo, "after": redo; `threads`:
        an undo of those threads alone), in the move's transaction; what `ops.undo` returns.
        A format extends it for what the journal does not hold (an index it keeps in step
        by hand) or checks more first (OperationError: nothing changed)."""
        for table in record["tables"]:  # a trash made before its table gained a column gets it
            await trash.ensure(tx, table)
        if image == "after":
            return await ops.redo(tx, int(record["op_id"]), self.fingerprint, self.describe_rows)
        return await ops.undo(tx, int(record["op_id"]), self.fingerprint, threads, self.describe_rows)

    def journal_now(self) -> str:
        now = getattr(self, "_now", None)
        if now is None:
            from agentctl.model import utc_now_iso

            now = utc_now_iso
        return str(now())

    # ---- a write -----------------------------------------------------------------------------

    @asynccontextmanager
    async def journal_tx(self, threads: Sequence[str] = ()) -> AsyncIterator[Any]:
        """A write transaction, the previous op log migrated first and the format's locks taken."""
        await self.store.connect()
        async with self.store.connection.transaction(list(threads)) as tx:
            await self.migrate(tx)
            await self.lock(tx, list(threads))
            yield tx

    async def journal_begin(
        self, tx: Any, kind: str, summary: str, threads: Sequence[str], details: dict[str, Any] | None = None
    ) -> ops.Op:
        op = await ops.begin(tx, kind, summary, list(threads), details or {}, self.journal_now())
        self.last_op_id = op.op_id
        return op

    async def journal_finish(self, op: ops.Op) -> int:
        """The op's fingerprints, as it leaves its threads, recorded."""
        return await op.finish({t: await self.fingerprint(op.tx, t) for t in op.threads})

    # ---- the log -------------------------------------------------------------------------------

    async def oplog(self, limit: int = 50) -> list[OpRecord]:
        legacy = await self.legacy_oplog(limit)
        if legacy is not None:
            return legacy
        await self.store.connect()
        rows = await ops.listing(self.store.connection, limit)
        counts = await self._trash_counts(rows)
        return [_record(r, counts.get(int(r["op_id"]), 0)) for r in rows]

    async def _trash_counts(self, rows: list[dict[str, Any]]) -> dict[int, int]:
        """Rows each op (not purged) holds in the trash: what purge would free of it."""
        held = [r for r in rows if not r["purged"] and r["tables"]]
        counts: dict[int, int] = {}
        db = self.store.connection
        for table in sorted({t for r in held for t in r["tables"]}):
            ids = [int(r["op_id"]) for r in held if table in r["tables"]]
            marks = ", ".join("?" for _ in ids)
            for c in await db.query(
                f'SELECT {trash.OP} AS op, COUNT(*) AS n FROM "{trash.trash_name(table)}" '
                f"WHERE {trash.OP} IN ({marks}) GROUP BY {trash.OP}",
                *ids,
            ):
                counts[int(c["op"])] = counts.get(int(c["op"]), 0) + int(c["n"])
        return counts

    async def _pick(self, tx: Any, op_id: int | None, undone: bool) -> dict[str, Any]:
        verb = "redo" if undone else "undo"
        if op_id is None:
            if not await tx.table_exists(ops.LOG):
                raise OperationError(f"nothing to {verb}")
            if undone:  # the op the newest undo entry undid, still undone
                rows = await tx.fetch(
                    f"SELECT t.op_id FROM {ops.LOG} AS e JOIN {ops.LOG} AS t ON t.op_id = e.undo_of "
                    "WHERE e.kind = 'undo' AND t.undone = 1 AND t.purged = 0 "
                    "ORDER BY e.op_id DESC LIMIT 1"
                )
            else:
                rows = await tx.fetch(
                    f"SELECT op_id FROM {ops.LOG} WHERE undone = 0 AND purged = 0 "
                    f"AND kind NOT IN ('undo', 'redo') ORDER BY op_id DESC LIMIT 1"
                )
            if not rows:
                raise OperationError(f"nothing to {verb}")
            op_id = int(rows[0]["op_id"])
        elif not await tx.table_exists(ops.LOG):
            raise NotFoundError(f"operation {op_id} not found")
        try:
            rec = await ops.record(tx, int(op_id))
        except LookupError:
            raise NotFoundError(f"operation {op_id} not found") from None
        if rec["kind"] == "redo" and not undone:  # the redo is undone as the op it redid
            return await self._pick(tx, int(rec["undo_of"]), undone)
        if rec["kind"] in ENTRIES:
            raise OperationError(
                f"operation {op_id} is {'an undo' if rec['kind'] == 'undo' else 'a redo'} (of "
                f"operation {rec['undo_of']}); {verb} operation {rec['undo_of']} instead"
            )
        return rec

    async def _move(
        self, op_id: int | None, undone: bool, dry_run: bool = False, threads: Sequence[str] | None = None
    ) -> OpResult:
        await self.journal_ready()
        try:
            return await self._move_once(op_id, undone, dry_run, threads)
        finally:
            await self.journal_moved()

    async def _move_once(
        self, op_id: int | None, undone: bool, dry_run: bool, threads: Sequence[str] | None
    ) -> OpResult:
        from agentctl.storage.results import OpResult

        verb, kind = ("redid", "redo") if undone else ("undid", "undo")
        if dry_run:  # read only: what the move would do, when it would be refused
            legacy = await self.legacy_oplog(1)
            if legacy:
                raise OperationError(
                    f"{kind} --dry-run: this database's op log is of an older layout; "
                    f"it is moved to the journal by the first write"
                )
            await self.store.connect()
            reader = _Reader(self.store.connection)
            rec = await self._pick(reader, op_id, undone)
            await ops.check(reader, rec, 0 if undone else 1, self.fingerprint)
            ids = await self.preview_result(reader, rec, "after" if undone else "before")
            # what it would do, said as a plan is (the verb, not "redid")
            return OpResult(
                None,
                kind,
                f"{kind} operation {rec['op_id']} ({rec['summary']})",
                ids.get("created", []),
                ids.get("deleted", []),
                ids.get("moved", []),
            )
        async with self.journal_tx() as tx:
            rec = await self._pick(tx, op_id, undone)
            if tx.kind == "postgres":  # the op's threads locked as every agentctl write locks them
                for thread in sorted(set(rec["threads"])):
                    await tx.execute(ops.THREAD_LOCK, thread)
            await self.lock(tx, rec["threads"])
            only = None if threads is None else await self.undo_threads(rec, threads)
            moved = await self.journal_move(tx, rec, "after" if undone else "before", only)
            summary = f"{verb} operation {rec['op_id']} ({rec['summary']})"
            if moved.get("left") or rec["details"].get("restored") or only is not None:
                summary += f" for thread(s) {', '.join(moved['moved'])}"
            new = await ops.entry(tx, kind, summary, moved["moved"], int(rec["op_id"]), self.journal_now())
            if moved["done"]:
                await tx.execute(
                    f"UPDATE {ops.LOG} SET undone_by = ? WHERE op_id = ?",
                    None if undone else new,
                    int(rec["op_id"]),
                )
        self.last_op_id = new
        if moved.get("left"):
            summary += (
                f"; left {ops.brief(moved['left'])} (`agentctl undo {rec['op_id']} --thread THREAD` "
                "restores them while they do not change)"
            )
        ids = self.undo_result(rec, "after" if undone else "before")
        return OpResult(
            new, kind, summary, ids.get("created", []), ids.get("deleted", []), ids.get("moved", [])
        )

    @retried_write
    async def undo(
        self, op_id: int | None = None, threads: Sequence[str] | None = None, dry_run: bool = False
    ) -> OpResult:
        from agentctl.storage.contract import whole_undo_only

        if not self.undo_by_thread:
            whole_undo_only(self.store.format.name, threads)
        if dry_run and threads:
            from agentctl.errors import UsageError

            raise UsageError(
                "undo --dry-run of some threads (--thread) is not offered; leave out --thread "
                "to see what undoing the whole operation would do"
            )
        return await self._move(op_id, False, dry_run, threads)

    @retried_write
    async def redo(self, op_id: int | None = None, dry_run: bool = False) -> OpResult:
        return await self._move(op_id, True, dry_run)

    @retried_write
    async def purge(self, dry_run: bool = False) -> PurgeResult:
        from agentctl.storage.results import PurgeResult

        await self.journal_ready()
        if dry_run:
            legacy = await self.legacy_purge()
            if legacy is not None:
                return legacy
            await self.store.connect()
            rows = [r for r in await ops.listing(self.store.connection, 2**31) if not r["purged"]]
            counts = await self._trash_counts(rows)
            held = sorted(op for op, n in counts.items() if n)
            undone = sorted(int(r["op_id"]) for r in rows if r["undone"] and counts.get(r["op_id"]))
            return PurgeResult(ops=held, rows=sum(counts.values()), dry_run=True, undone=undone)
        async with self.journal_tx() as tx:
            freed, n = await ops.purge(tx)
        return PurgeResult(ops=freed, rows=n, dry_run=False)


def _record(row: dict[str, Any], held: int) -> OpRecord:
    from agentctl.storage.results import OpRecord

    return OpRecord(
        op_id=int(row["op_id"]),
        created_at=row["created_at"],
        kind=row["kind"],
        summary=row["summary"],
        threads=list(row["threads"]),
        undone=bool(row["undone"]),
        undo_of=row.get("undo_of"),
        undone_by=row.get("undone_by"),
        purged=bool(row["purged"]),
        purgeable_rows=held,
        details=json.loads(json.dumps(row["details"])),
    )
