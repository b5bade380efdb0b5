"""The engine's operation log, trash and undo, in side tables of the same database.

The `checkpoints` table keeps its exact shape; what the engine needs to undo a write
lives next to it, in four tables created inside the first write transaction that needs
them (never by a read, never by an agent's plain `snapshot`):

- `agentctl_oplog`: one row per operation: op_id, created_at, kind (rewind, branch,
  merge, prune, delete_thread, import, undo, purge), summary, threads (JSON list),
  details (JSON), undone_by (the op id of the undo that reverted it), undo_of (for an
  undo: the op it reverted), purged (1 when its trash was purged).
- `agentctl_oplog_rows`: what an op inserted (`action = 'insert'`) or moved to another
  thread (`action = 'move'`, with the row's old thread_id and parent_id; a prune's
  re-parented rows are moves within their thread).
- `agentctl_trash`: the exact rows an op deleted (every column of `checkpoints`, the row
  `id` included, plus op_id). Filled with `INSERT INTO agentctl_trash SELECT ...` and
  emptied from `checkpoints` with `DELETE`: on Postgres one statement each; on SQLite a
  chunk of row ids at a time in row-id order (see `trash`).
  On SQLite it is created with `CREATE TABLE ... AS SELECT` (the same column affinities),
  on Postgres with `LIKE checkpoints` (the same column types), so rows copy back exactly.
- `agentctl_oplog_threads`: for each thread an op changed, a fingerprint of the thread
  right after the op: row count, min, max and sum of row ids. Row ids only grow (SQLite
  AUTOINCREMENT, Postgres sequences), so a new checkpoint, a deleted one or a moved one
  changes the fingerprint.

Undo of an op is allowed when the op is not undone, is not itself an undo or a purge,
its trash was not purged, and every thread it changed still has its fingerprint (so
undo works like a stack per thread: undo later operations on those threads first, and
a thread an agent wrote to since cannot be silently mixed with its restored rows). It
also refuses when a restored row's id or checkpoint_id is taken, or when another row
names a row it would delete as its parent. Then, in one transaction, it deletes the
rows the op inserted, moves the moved rows back (thread and parent), and copies the
trashed rows back with their row ids. Undo itself is recorded but cannot be undone.

`purge` deletes the trash (those ops can no longer be undone); the caller VACUUMs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Sequence

from agentctl.storage.agentos.rows import ALL_COLUMNS, loads
from agentctl.errors import OperationError
from agentctl.storage.results import (  # re-exported: agentctl.storage.agentos.oplog's names
    NOT_UNDOABLE as NOT_UNDOABLE,
    OpRecord as OpRecord,
    OpResult as OpResult,
    PurgeResult as PurgeResult,
)
from agentctl.storage.sqlutil import chunks, in_chunks, marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Reader, RowReads, Transaction

OPLOG = "agentctl_oplog"
OPLOG_ROWS = "agentctl_oplog_rows"
OPLOG_THREADS = "agentctl_oplog_threads"
TRASH = "agentctl_trash"
SIDE_TABLES = (OPLOG, OPLOG_ROWS, OPLOG_THREADS, TRASH)

_DDL_TEMPLATE = """
CREATE TABLE IF NOT EXISTS {oplog} (
    op_id {serial} PRIMARY KEY{autoincrement},
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    threads TEXT NOT NULL DEFAULT '[]',
    details TEXT NOT NULL DEFAULT '{{}}',
    undone_by {int},
    undo_of {int},
    purged INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS {rows} (
    op_id {int} NOT NULL,
    checkpoint_id TEXT NOT NULL,
    action TEXT NOT NULL,
    thread_id TEXT,
    old_thread_id TEXT,
    old_parent_id TEXT,
    parent_id TEXT
);
CREATE INDEX IF NOT EXISTS idx_agentctl_oplog_rows_op ON {rows}(op_id, checkpoint_id);
CREATE TABLE IF NOT EXISTS {threads} (
    op_id {int} NOT NULL,
    thread_id TEXT NOT NULL,
    n {int} NOT NULL,
    min_id {int} NOT NULL,
    max_id {int} NOT NULL,
    sum_id {bignum} NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_agentctl_oplog_threads_op ON {threads}(op_id);
{trash};
CREATE INDEX IF NOT EXISTS idx_agentctl_trash_op ON {trash_name}(op_id);
"""
_NAMES = {"oplog": OPLOG, "rows": OPLOG_ROWS, "threads": OPLOG_THREADS, "trash_name": TRASH}
# The trash copies the checkpoints table's columns: their affinities on SQLite (CREATE
# TABLE AS), their types on Postgres (LIKE), so rows copy back exactly.
_SQLITE_DDL = _DDL_TEMPLATE.format(
    serial="INTEGER", autoincrement=" AUTOINCREMENT", int="INTEGER", bignum="INTEGER", **_NAMES,
    trash=f"CREATE TABLE IF NOT EXISTS {TRASH} AS SELECT CAST(NULL AS INTEGER) AS op_id, "
          f"{ALL_COLUMNS} FROM checkpoints WHERE 0")
_POSTGRES_DDL = _DDL_TEMPLATE.format(
    serial="BIGSERIAL", autoincrement="", int="BIGINT", bignum="NUMERIC", **_NAMES,
    trash=f"CREATE TABLE IF NOT EXISTS {TRASH} (op_id BIGINT NOT NULL, LIKE checkpoints)")


# ---- writing the log ------------------------------------------------------------------


async def ensure_tables(tx: Transaction) -> None:
    """Create the side tables (inside the caller's write transaction) if missing."""
    if await tx.table_exists(OPLOG) and await tx.table_exists(TRASH):
        return
    if tx.kind == "postgres":
        # Two first writes at once would both create the tables (one fails): serialize
        # them (SQLite's BEGIN IMMEDIATE already does), then look again.
        await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended('agentctl_oplog', 7340))")
        if await tx.table_exists(OPLOG) and await tx.table_exists(TRASH):
            return
    ddl = _SQLITE_DDL if tx.kind == "sqlite" else _POSTGRES_DDL
    for statement in ddl.split(";"):
        if statement.strip():
            await tx.execute(statement)


async def start(tx: Transaction, kind: str, summary: str, threads: Sequence[str],
                details: dict[str, Any], created_at: str, undo_of: int | None = None) -> int:
    """Record a new operation; return its op_id."""
    await ensure_tables(tx)
    rows = await tx.fetch(
        f"INSERT INTO {OPLOG} (created_at, kind, summary, threads, details, undo_of) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING op_id",
        created_at, kind, summary, json.dumps(list(dict.fromkeys(threads)), ensure_ascii=False),
        json.dumps(details, ensure_ascii=False), undo_of)
    return int(rows[0]["op_id"])


async def set_summary(tx: Transaction, op_id: int, summary: str,
                      details: dict[str, Any] | None = None) -> None:
    if details is None:
        await tx.execute(f"UPDATE {OPLOG} SET summary = ? WHERE op_id = ?", summary, op_id)
    else:
        await tx.execute(f"UPDATE {OPLOG} SET summary = ?, details = ? WHERE op_id = ?",
                         summary, json.dumps(details, ensure_ascii=False), op_id)


async def finish(tx: Transaction, op_id: int, changed_threads: Iterable[str]) -> None:
    """Fingerprint every thread the op changed, as it is now."""
    for thread in dict.fromkeys(changed_threads):
        await tx.execute(
            f"INSERT INTO {OPLOG_THREADS} (op_id, thread_id, n, min_id, max_id, sum_id) "
            "SELECT CAST(? AS BIGINT), CAST(? AS TEXT), COUNT(*), COALESCE(MIN(id), 0), "
            "COALESCE(MAX(id), 0), COALESCE(SUM(id), 0) FROM checkpoints WHERE thread_id = ?",
            op_id, thread, thread)


async def record_inserts(tx: Transaction, op_id: int, rows: Sequence[tuple[str, str]]) -> None:
    """Record checkpoints (checkpoint_id, thread_id) the op inserted."""
    if rows:
        await tx.executemany(
            f"INSERT INTO {OPLOG_ROWS} (op_id, checkpoint_id, action, thread_id) "
            "VALUES (?, ?, 'insert', ?)", [(op_id, cid, thread) for cid, thread in rows])


async def record_reparents(tx: Transaction, op_id: int, thread_id: str,
                           rows: Sequence[tuple[str, str | None, str | None]]) -> None:
    """Set the parent of checkpoints of `thread_id` (checkpoint_id, old parent, new
    parent), recorded as moves within the thread, so that undo puts the old parent back."""
    if not rows:
        return
    await tx.executemany("UPDATE checkpoints SET parent_id = ? WHERE checkpoint_id = ?",
                         [(new, cid) for cid, _, new in rows])
    await tx.executemany(
        f"INSERT INTO {OPLOG_ROWS} (op_id, checkpoint_id, action, thread_id, old_thread_id, "
        "old_parent_id, parent_id) VALUES (?, ?, 'move', ?, ?, ?, ?)",
        [(op_id, cid, thread_id, thread_id, old, new) for cid, old, new in rows])


# SQLite: rows move into the trash a chunk of row ids at a time, in row-id order (the
# order of the table's pages), each chunk read, copied and deleted while its pages are
# in the page cache: every row is read once and every page is changed (and journaled)
# in file order. A chunk stays well under what a 64 MB cache keeps clean while the
# transaction's dirty pages fill the rest (SQLiteCheckpointer.bulk_write).
_TRASH_CHUNK = 500
_CHUNK_ROWS = "rowid IN (SELECT value FROM json_each(?))"


def _sql_order(value: Any) -> tuple[int, Any]:
    """Sort key of a column value as SQL orders mixed types: NULL, numbers, text, blobs
    (a SQLite column may hold several types)."""
    if value is None:
        return (0, 0)
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return (3, bytes(value))
    return (1, value)


async def trash(tx: Transaction, op_id: int, where: str, *params: Any) -> list[str]:
    """Move the checkpoints matching `where` into the trash of op_id; return their ids
    in thread order (thread, step, created_at, id)."""
    if tx.kind != "sqlite":
        # Two set-based statements; the server sorts the ids. Only the rows this call
        # moved (an op may fill its trash in several calls: a prune of many threads).
        moved = await tx.fetch(
            f"WITH moved AS (INSERT INTO {TRASH} (op_id, {ALL_COLUMNS}) SELECT CAST(? AS BIGINT), "
            f"{ALL_COLUMNS} FROM checkpoints WHERE {where} "
            "RETURNING id, checkpoint_id, thread_id, step, created_at) "
            "SELECT id, checkpoint_id FROM moved ORDER BY thread_id, step, created_at, id",
            op_id, *params)
        if not moved:
            return []
        await tx.execute("DELETE FROM checkpoints WHERE id = ANY(CAST(? AS BIGINT[]))",
                         [r["id"] for r in moved])
        return [r["checkpoint_id"] for r in moved]
    # The row ids (rowid: the row itself, whatever the file's `id` column holds) in the
    # order of the (thread_id, step) index, as one JSON text rather than a row each, and
    # how many steps occur twice in a thread. Row-id order is thread order when the two
    # orders agree and no step needs created_at and id to order it.
    found = (await tx.fetch(
        "SELECT json_group_array(r) AS ids, (SELECT COUNT(*) FROM (SELECT 1 AS x FROM checkpoints "
        f"WHERE {where} GROUP BY thread_id, step HAVING COUNT(*) > 1)) AS twice "
        f"FROM (SELECT rowid AS r FROM checkpoints WHERE {where} ORDER BY thread_id, step)",
        *params, *params))[0]
    by_step = loads(found["ids"])
    rowids = sorted(by_step)
    in_order = not found["twice"] and rowids == by_step
    ids: list[str] = []
    keyed: list[tuple[Any, ...]] = []
    for part in chunks(rowids, _TRASH_CHUNK):
        chunk = json.dumps(part)
        copy = (f"INSERT INTO {TRASH} (op_id, {ALL_COLUMNS}) SELECT ?, {ALL_COLUMNS} "
                f"FROM checkpoints WHERE {_CHUNK_ROWS}")
        if in_order:
            # The chunk's ids as one JSON text (this reads its pages into the cache).
            ids += loads((await tx.fetch(
                "SELECT json_group_array(CASE WHEN typeof(checkpoint_id) = 'blob' "
                "THEN CAST(checkpoint_id AS TEXT) ELSE checkpoint_id END) AS ids FROM "
                f"(SELECT checkpoint_id FROM checkpoints WHERE {_CHUNK_ROWS} ORDER BY rowid)",
                chunk))[0]["ids"])
            await tx.execute(copy, op_id, chunk)
        else:
            keyed.extend(((_sql_order(r["thread_id"]), _sql_order(r["step"]),
                           _sql_order(r["created_at"]), _sql_order(r["id"])), r["checkpoint_id"])
                         for r in await tx.fetch(
                copy + " RETURNING thread_id, step, created_at, id, checkpoint_id", op_id, chunk))
        await tx.execute(f"DELETE FROM checkpoints WHERE {_CHUNK_ROWS}", chunk)
    if not in_order:
        keyed.sort(key=lambda k: k[0])
        ids = [cid for _, cid in keyed]
    return ids


async def trashed_ids(reader: RowReads, op_id: int) -> list[str]:
    # Sorting in SQL is cheaper than returning the sort keys to Python.
    rows = await reader.query(
        f"SELECT checkpoint_id FROM {TRASH} WHERE op_id = ? ORDER BY thread_id, step, created_at, id",
        op_id)
    return [r["checkpoint_id"] for r in rows]


# ---- reading the log ------------------------------------------------------------------


def _record(row: dict[str, Any], purgeable: int) -> OpRecord:
    def parse(text: Any, default: Any) -> Any:
        try:
            value = loads(text)
        except ValueError:
            return default
        return value if isinstance(value, type(default)) else default

    return OpRecord(
        op_id=int(row["op_id"]), created_at=row["created_at"], kind=row["kind"],
        summary=row["summary"], threads=[str(t) for t in parse(row["threads"], [])],
        undone=row["undone_by"] is not None,
        undo_of=int(row["undo_of"]) if row["undo_of"] is not None else None,
        purgeable_rows=purgeable,
        undone_by=int(row["undone_by"]) if row["undone_by"] is not None else None,
        purged=bool(row["purged"]), details=parse(row["details"], {}))


_RECORD_SQL = (f"SELECT o.op_id, o.created_at, o.kind, o.summary, o.threads, o.details, "
               f"o.undone_by, o.undo_of, o.purged, "
               f"(SELECT COUNT(*) FROM {TRASH} t WHERE t.op_id = o.op_id) AS purgeable FROM {OPLOG} o")


async def has_log(reader: Reader) -> bool:
    return bool(await reader.table_exists(OPLOG))


async def list_ops(reader: Reader, limit: int = 50) -> list[OpRecord]:
    if not await has_log(reader):
        return []
    rows = await reader.query(f"{_RECORD_SQL} ORDER BY o.op_id DESC LIMIT ?", limit)
    return [_record(r, int(r["purgeable"])) for r in rows]


async def get_op(reader: Reader, op_id: int) -> OpRecord | None:
    if not await has_log(reader):
        return None
    rows = await reader.query(f"{_RECORD_SQL} WHERE o.op_id = ?", op_id)
    return _record(rows[0], int(rows[0]["purgeable"])) if rows else None


async def last_undoable(reader: Reader) -> int | None:
    if not await has_log(reader):
        return None
    rows = await reader.query(
        f"SELECT op_id FROM {OPLOG} WHERE undone_by IS NULL AND kind NOT IN ('undo', 'purge') "
        "ORDER BY op_id DESC LIMIT 1")
    return int(rows[0]["op_id"]) if rows else None


async def changed_threads(reader: Reader, op_id: int) -> list[str]:
    rows = await reader.query(
        f"SELECT thread_id FROM {OPLOG_THREADS} WHERE op_id = ? ORDER BY thread_id", op_id)
    return [r["thread_id"] for r in rows]


async def archive_threads(reader: Reader) -> set[str]:
    """Threads that rewinds (not undone) set the abandoned future aside into."""
    if not await has_log(reader):
        return set()
    rows = await reader.query(
        f"SELECT DISTINCT thread_id FROM {OPLOG_ROWS} r JOIN {OPLOG} o ON o.op_id = r.op_id "
        "WHERE o.kind = 'rewind' AND o.undone_by IS NULL AND r.action = 'move'")
    return {r["thread_id"] for r in rows}


# ---- undo and purge -------------------------------------------------------------------


def _short(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


def restored_threads(op: OpRecord) -> list[str]:
    """The threads of a prune that an undo with `--thread` already restored."""
    return [str(t) for t in op.details.get("restored") or []]


def only_threads(op: OpRecord, left: Sequence[str], threads: Sequence[str] | None) -> list[str] | None:
    """`threads` checked against the threads `op` has left to restore (None: all)."""
    from agentctl.errors import UsageError

    if threads is None:
        return None
    if op.kind != "prune":
        raise UsageError(f"--thread restores some threads of a prune; operation {op.op_id} is a {op.kind} "
                         "(undo it whole)")
    for t in threads:
        if t not in left:
            raise UsageError(f"operation {op.op_id} has no thread {t!r} left to restore "
                             f"(it has: {', '.join(left[:10]) or 'none'})")
    return list(dict.fromkeys(threads))


async def check_undo(tx: Transaction, op: OpRecord, only: Sequence[str] | None = None) -> None:
    """Raise OperationError when `op` cannot be reverted exactly now (`only`: its
    restore of these threads alone)."""
    if op.undone:
        raise OperationError(f"operation {op.op_id} ({op.kind}) was already undone by operation {op.undone_by}")
    if op.kind in NOT_UNDOABLE:
        raise OperationError(f"operation {op.op_id} is {'an' if op.kind == 'undo' else 'a'} "
                             f"{op.kind}; it cannot be undone")
    if op.purged:
        raise OperationError(f"operation {op.op_id} ({op.kind}) cannot be undone: its deleted "
                             "checkpoints were purged")
    skip = restored_threads(op)
    among = ""
    if only is not None:
        among = f" AND f.thread_id IN ({marks(len(only))})" if only else " AND 1 = 0"
    elif skip:
        among = f" AND f.thread_id NOT IN ({marks(len(skip))})"
    stale = await tx.fetch(
        f"SELECT f.thread_id FROM {OPLOG_THREADS} f WHERE f.op_id = ?{among} AND ("
        "f.n <> (SELECT COUNT(*) FROM checkpoints c WHERE c.thread_id = f.thread_id) OR "
        "f.min_id <> (SELECT COALESCE(MIN(id), 0) FROM checkpoints c WHERE c.thread_id = f.thread_id) OR "
        "f.max_id <> (SELECT COALESCE(MAX(id), 0) FROM checkpoints c WHERE c.thread_id = f.thread_id) OR "
        "f.sum_id <> (SELECT COALESCE(SUM(id), 0) FROM checkpoints c WHERE c.thread_id = f.thread_id)) "
        "ORDER BY f.thread_id", op.op_id, *(only if only is not None else skip))
    if stale:
        threads = [r["thread_id"] for r in stale]
        later = await tx.fetch(
            f"SELECT DISTINCT o.op_id FROM {OPLOG} o JOIN {OPLOG_THREADS} f ON f.op_id = o.op_id "
            f"WHERE o.op_id > ? AND o.undone_by IS NULL AND o.kind NOT IN ('undo', 'purge') "
            f"AND f.thread_id IN ({marks(len(threads))}) ORDER BY o.op_id DESC",
            op.op_id, *threads)
        hint = (f"; undo operation{'s' if len(later) > 1 else ''} "
                f"{', '.join(str(r['op_id']) for r in later)} first" if later
                else "; checkpoints were written to or removed from it since")
        if op.kind == "prune" and only is None:
            still = [r["thread_id"] for r in await tx.fetch(
                f"SELECT thread_id FROM {OPLOG_THREADS} WHERE op_id = ? ORDER BY thread_id", op.op_id)
                if r["thread_id"] not in threads and r["thread_id"] not in skip]
            if still:
                hint += (f"; `agentctl undo {op.op_id} --thread THREAD` (repeatable) restores the {len(still)} "
                         f"that did not: {_short(still, 10)}")
        raise OperationError(
            f"cannot undo operation {op.op_id} ({op.kind}): thread{'s' if len(threads) > 1 else ''} "
            f"{_short(threads)} changed after it{hint}")
    # Rows the undo deletes first (what the op inserted) do not count as taken.
    mine = f"(SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'insert')"
    of = "" if only is None else f" AND t.thread_id IN ({marks(len(only))})" if only else " AND 1 = 0"
    taken = await tx.fetch(
        f"SELECT t.checkpoint_id FROM {TRASH} t WHERE t.op_id = ?{of} AND (EXISTS "
        f"(SELECT 1 FROM checkpoints c WHERE c.checkpoint_id = t.checkpoint_id AND c.checkpoint_id NOT IN {mine}) "
        f"OR EXISTS (SELECT 1 FROM checkpoints c WHERE c.id = t.id AND c.checkpoint_id NOT IN {mine})) "
        "ORDER BY t.checkpoint_id LIMIT 6", op.op_id, *(only or []), op.op_id, op.op_id)
    _refuse_undo(op, taken, "exist again; delete them first")
    # A row the undo deletes must not be the parent of a row that stays (unless the
    # undo brings back an older row of that id, as after an import that replaced it).
    children = await tx.fetch(
        f"SELECT c.checkpoint_id FROM checkpoints c WHERE c.parent_id IN {mine} "
        f"AND c.checkpoint_id NOT IN {mine} "
        f"AND c.parent_id NOT IN (SELECT checkpoint_id FROM {TRASH} WHERE op_id = ?) "
        "ORDER BY c.checkpoint_id LIMIT 6", op.op_id, op.op_id, op.op_id)
    _refuse_undo(op, children, "continue from what it created")


def _refuse_undo(op: Any, rows: list[dict[str, Any]], why: str) -> None:
    """Refuse the undo of `op` when `rows` (checkpoint ids) stand in its way."""
    if rows:
        raise OperationError(
            f"cannot undo operation {op.op_id} ({op.kind}): checkpoint(s) "
            f"{_short([r['checkpoint_id'] for r in rows])} {why}")


class Reverted(NamedTuple):
    """The checkpoint ids an undo brought back, deleted (the op's inserts) and moved back."""

    restored: list[str]
    deleted: list[str]
    moved: list[str]


async def revert(tx: Transaction, op_id: int, only: Sequence[str] | None = None) -> Reverted:
    """Revert op_id (checked by check_undo): the ids it restored, deleted and moved.
    `only` (a prune's threads): restore the trashed rows of those threads alone."""
    if only is not None:
        if not only:
            return Reverted([], [], [])
        of = f" AND thread_id IN ({marks(len(only))})"
        restored = [r["checkpoint_id"] for r in await tx.fetch(
            f"SELECT checkpoint_id FROM {TRASH} WHERE op_id = ?{of} ORDER BY thread_id, step, created_at, id",
            op_id, *only)]
        await tx.execute(f"INSERT INTO checkpoints ({ALL_COLUMNS}) SELECT {ALL_COLUMNS} FROM {TRASH} "
                         f"WHERE op_id = ?{of} ORDER BY id", op_id, *only)
        await tx.execute(f"DELETE FROM {TRASH} WHERE op_id = ?{of}", op_id, *only)
        # the parents a prune changed in those threads (kept rows whose parent went) back
        moved = [r["checkpoint_id"] for r in await tx.fetch(
            f"SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'move' "
            f"AND old_thread_id IN ({marks(len(only))}) ORDER BY checkpoint_id", op_id, *only)]
        if moved:
            await tx.execute(
                f"UPDATE checkpoints SET parent_id = (SELECT r.old_parent_id FROM {OPLOG_ROWS} r "
                "WHERE r.op_id = ? AND r.action = 'move' AND r.checkpoint_id = checkpoints.checkpoint_id) "
                f"WHERE checkpoint_id IN (SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? "
                f"AND action = 'move' AND old_thread_id IN ({marks(len(only))}))", op_id, op_id, *only)
        return Reverted(restored=restored, deleted=[], moved=moved)
    inserted = [r["checkpoint_id"] for r in await tx.fetch(
        f"SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'insert' "
        "ORDER BY checkpoint_id", op_id)]
    moved = [r["checkpoint_id"] for r in await tx.fetch(
        f"SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'move' "
        "ORDER BY checkpoint_id", op_id)]
    if inserted:
        await tx.execute(
            "DELETE FROM checkpoints WHERE checkpoint_id IN "
            f"(SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'insert')", op_id)
    if moved:
        # One set-based UPDATE per thread the rows came from (a rewind: one), then the
        # parents the op changed (a rewind: at most one row) back to their old value.
        for r in await tx.fetch(
                f"SELECT DISTINCT old_thread_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'move'",
                op_id):
            await tx.execute(
                "UPDATE checkpoints SET thread_id = ? WHERE checkpoint_id IN "
                f"(SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? AND action = 'move' "
                "AND old_thread_id = ?)", r["old_thread_id"], op_id, r["old_thread_id"])
        await tx.execute(
            f"UPDATE checkpoints SET parent_id = (SELECT r.old_parent_id FROM {OPLOG_ROWS} r "
            "WHERE r.op_id = ? AND r.action = 'move' AND r.checkpoint_id = checkpoints.checkpoint_id) "
            f"WHERE checkpoint_id IN (SELECT checkpoint_id FROM {OPLOG_ROWS} WHERE op_id = ? "
            "AND action = 'move' AND COALESCE(parent_id, '') <> COALESCE(old_parent_id, ''))",
            op_id, op_id)
    restored = await trashed_ids(tx, op_id)
    if restored:
        await tx.execute(
            f"INSERT INTO checkpoints ({ALL_COLUMNS}) SELECT {ALL_COLUMNS} FROM {TRASH} "
            "WHERE op_id = ? ORDER BY id", op_id)
        await tx.execute(f"DELETE FROM {TRASH} WHERE op_id = ?", op_id)
    return Reverted(restored=restored, deleted=inserted, moved=moved)


async def mark_undone(tx: Transaction, op_id: int, undo_op_id: int) -> None:
    await tx.execute(f"UPDATE {OPLOG} SET undone_by = ? WHERE op_id = ?", undo_op_id, op_id)


async def trash_counts(reader: Reader) -> list[tuple[int, int]]:
    """[(op_id, rows)] of every op whose trash still holds rows."""
    if not await reader.table_exists(TRASH):
        return []
    rows = await reader.query(
        f"SELECT op_id, COUNT(*) AS n FROM {TRASH} GROUP BY op_id ORDER BY op_id")
    return [(int(r["op_id"]), int(r["n"])) for r in rows]


async def purge_ops(tx: Transaction, op_ids: Sequence[int]) -> int:
    """Delete the trash of these ops and mark them purged; return the rows freed."""
    total = 0
    for ph, chunk in in_chunks(list(op_ids)):
        total += await tx.execute(f"DELETE FROM {TRASH} WHERE op_id IN ({ph})", *chunk)
        await tx.execute(f"UPDATE {OPLOG} SET purged = 1 WHERE op_id IN ({ph})", *chunk)
        await tx.execute(f"DELETE FROM {OPLOG_ROWS} WHERE op_id IN ({ph})", *chunk)
    return total
