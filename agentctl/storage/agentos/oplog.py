"""The engine's writes as journal row changes (agentctl/storage/journal): each write of
the engine (rewind, branch, merge, prune, delete_thread, import, edit) is one op of the
journal `agentctl_journal`, and the rows it changed in `checkpoints` are images in the
journal's trash table `agentctl_trash_checkpoints` (key `checkpoint_id`, thread column
`thread_id`, so a prune can be undone thread by thread): a deleted row's "before"
image, an inserted row's "after" image, an updated or moved row's both. Undo and redo
are the journal's image moves (`JournalHistory`, mixed into `CheckpointEngine`).

The fingerprint of a thread (what undo and redo compare) is its row count and the min,
max and sum of its row ids: row ids only grow (SQLite AUTOINCREMENT, Postgres
sequences), so a new checkpoint, a deleted one or a moved one changes it.

A prune moves its rows into the trash a chunk of row ids at a time (see `trash`): the
least an undoable prune costs in SQLite (bench/README.md, `prune-floor-min`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentctl.errors import OperationError
from agentctl.storage.agentos import legacy
from agentctl.storage.agentos.rows import JOURNAL_KEY, JOURNAL_THREAD, loads
from agentctl.storage.journal import ops
from agentctl.storage.journal import trash as jtrash
from agentctl.storage.results import (  # re-exported: agentctl.storage.agentos.oplog's names
    NOT_UNDOABLE as NOT_UNDOABLE,
)
from agentctl.storage.results import (
    OpRecord as OpRecord,
)
from agentctl.storage.results import (
    OpResult as OpResult,
)
from agentctl.storage.results import (
    PurgeResult as PurgeResult,
)
from agentctl.storage.sqlutil import chunks, marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.protocols import Rows, Tx

TABLE = "checkpoints"
KEY = JOURNAL_KEY
THREAD = JOURNAL_THREAD
TRASH = jtrash.trash_name(TABLE)
LOG = ops.LOG
#: the tables the engine's writes add to a database (the format's own is `checkpoints`)
SIDE_TABLES = (LOG, TRASH)


async def fingerprint(tx: Any, thread: str) -> list[Any]:
    """[rows, min id, max id, sum of ids] of a thread (the sum as text: exact on both)."""
    rows = await tx.fetch(
        "SELECT COUNT(*) AS n, COALESCE(MIN(id), 0) AS lo, COALESCE(MAX(id), 0) AS hi, "
        "CAST(COALESCE(SUM(id), 0) AS TEXT) AS s FROM checkpoints WHERE thread_id = ?",
        thread,
    )
    r = rows[0]
    return [int(r["n"]), int(r["lo"]), int(r["hi"]), str(r["s"])]


# ---- writing an op --------------------------------------------------------------------


async def start(
    tx: Tx, kind: str, summary: str, threads: Sequence[str], details: dict[str, Any], created_at: str
) -> ops.Op:
    """Begin an op of the journal (created by the first write; the previous op log moved
    into it first); its trash table made."""
    await legacy.migrate(tx)
    op = await ops.begin(tx, kind, summary, list(dict.fromkeys(threads)), details, created_at)
    await op.declare(TABLE, KEY, thread=THREAD)
    return op


async def finish(tx: Tx, op: ops.Op, changed_threads: Iterable[str], summary: str | None = None) -> int:
    """The op's threads are those it changed; their fingerprints, as they are now."""
    op.threads = list(dict.fromkeys(changed_threads))
    return await op.finish({t: await fingerprint(tx, t) for t in op.threads}, summary=summary)


async def set_aside(tx: Tx, op: ops.Op, where: str, params: Sequence[Any], image: str) -> int:
    """Copy the checkpoints matching `where` into the trash as `image` of op."""
    return await jtrash.set_aside(tx, op.op_id, TABLE, where, params, image)


async def record_inserts(tx: Tx, op: ops.Op, rows: Sequence[tuple[str, str]]) -> None:
    """Record checkpoints (checkpoint_id, thread_id) the op inserted (their after-images)."""
    for part in chunks([cid for cid, _ in rows], 500):
        await op.inserted(TABLE, KEY, f"checkpoint_id IN ({marks(len(part))})", part, thread=THREAD)


async def record_reparents(
    tx: Tx, op: ops.Op, thread_id: str, rows: Sequence[tuple[str, str | None, str | None]]
) -> None:
    """Set the parent of checkpoints of `thread_id` (checkpoint_id, old parent, new
    parent), both images kept, so that undo puts the old parent back."""
    if not rows:
        return
    ids = [cid for cid, _, _ in rows]
    for part in chunks(ids, 500):
        await set_aside(tx, op, f"checkpoint_id IN ({marks(len(part))})", part, "before")
    await tx.executemany(
        "UPDATE checkpoints SET parent_id = ? WHERE checkpoint_id = ?", [(new, cid) for cid, _, new in rows]
    )
    for part in chunks(ids, 500):
        await set_aside(tx, op, f"checkpoint_id IN ({marks(len(part))})", part, "after")


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


async def trash(
    tx: Tx,
    op: ops.Op,
    where: str,
    *params: Any,
    ids: Sequence[str] | None = None,
    rows: Sequence[int] | None = None,
    thread: str | None = None,
) -> list[str]:
    """Delete the checkpoints matching `where`, their before-images in op's trash; return
    their ids in thread order (thread, step, created_at, id). `ids`: those rows' ids in
    row-id order, as the plan read them (SQLite: not read again); `rows`: their row ids,
    row-id order being thread order, all of `thread` (SQLite: the selection is not read
    again; the rows are moved by row id, those still in `thread`: if any is not, the
    database changed since the plan, and the write stops)."""
    if (
        tx.kind == "sqlite"
        and rows is not None
        and ids is not None
        and len(ids) == len(rows)
        and thread is not None
    ):
        moved = await op.delete_each(
            TABLE,
            KEY,
            f"{_CHUNK_ROWS} AND +thread_id = ?",
            [[json.dumps(part), thread] for part in chunks(list(rows), _TRASH_CHUNK)],
            thread=THREAD,
        )
        if moved != len(rows):
            raise OperationError(
                f"thread {thread} changed while prune was planned; nothing was deleted: run it again",
                nothing_changed=True,
            )
        return list(ids)
    if tx.kind != "sqlite":
        # The rows by id (the server sorts them), then moved by those ids: only the rows
        # read here, whatever another transaction adds meanwhile.
        found = await tx.fetch(
            f"SELECT id, checkpoint_id FROM checkpoints WHERE {where} "
            "ORDER BY thread_id, step, created_at, id",
            *params,
        )
        if found:
            await op.delete(
                TABLE, KEY, "id = ANY(CAST(? AS BIGINT[]))", [[r["id"] for r in found]], thread=THREAD
            )
        return [r["checkpoint_id"] for r in found]
    # The row ids (rowid: the row itself, whatever the file's `id` column holds) in the
    # order of the (thread_id, step) index, as one JSON text rather than a row each, and
    # how many steps occur twice in a thread. Row-id order is thread order when the two
    # orders agree and no step needs created_at and id to order it.
    head = (
        await tx.fetch(
            "SELECT json_group_array(r) AS ids, (SELECT COUNT(*) FROM (SELECT 1 AS x FROM checkpoints "
            f"WHERE {where} GROUP BY thread_id, step HAVING COUNT(*) > 1)) AS twice "
            f"FROM (SELECT rowid AS r FROM checkpoints WHERE {where} ORDER BY thread_id, step)",
            *params,
            *params,
        )
    )[0]
    by_step = loads(head["ids"])
    rowids = sorted(by_step)
    in_order = not head["twice"] and rowids == by_step
    known = in_order and ids is not None and len(ids) == len(rowids)
    out: list[str] = list(ids or ()) if known else []
    if known:
        await op.delete_each(
            TABLE,
            KEY,
            _CHUNK_ROWS,
            [[json.dumps(part)] for part in chunks(rowids, _TRASH_CHUNK)],
            thread=THREAD,
        )
        return out
    keyed: list[tuple[Any, ...]] = []
    for part in chunks(rowids, _TRASH_CHUNK):
        chunk = json.dumps(part)
        if in_order:  # the chunk's ids (this reads its pages into the cache for the copy)
            out += loads(
                (
                    await tx.fetch(
                        "SELECT json_group_array(CASE WHEN typeof(checkpoint_id) = 'blob' "
                        "THEN CAST(checkpoint_id AS TEXT) ELSE checkpoint_id END) AS ids FROM "
                        f"(SELECT checkpoint_id FROM checkpoints WHERE {_CHUNK_ROWS} ORDER BY rowid)",
                        chunk,
                    )
                )[0]["ids"]
            )
        elif not in_order:
            keyed.extend(
                (
                    (
                        _sql_order(r["thread_id"]),
                        _sql_order(r["step"]),
                        _sql_order(r["created_at"]),
                        _sql_order(r["id"]),
                    ),
                    r["checkpoint_id"],
                )
                for r in await tx.fetch(
                    "SELECT thread_id, step, created_at, id, checkpoint_id "
                    f"FROM checkpoints WHERE {_CHUNK_ROWS}",
                    chunk,
                )
            )
        await op.delete(TABLE, KEY, _CHUNK_ROWS, [chunk], thread=THREAD)
    if not in_order:
        keyed.sort(key=lambda k: k[0])
        out = [cid for _, cid in keyed]
    return out


# ---- reading the log ------------------------------------------------------------------


async def archive_threads(reader: Rows) -> set[str]:
    """Threads that rewinds (not undone) set the abandoned future aside into."""
    return {
        str(d["archive_thread"]) for d in await ops.done_details(reader, "rewind") if d.get("archive_thread")
    }


def short(ids: Sequence[str], n: int = 5) -> str:
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")
