"""AgentOS's store on SQLite: its checkpoints table on the shared SQLite connection
(agentctl.storage.sql.sqlite). `SQLiteCheckpointer(db_path)` is AgentOS's call (the file
and table created when missing, a new file in WAL mode); agentctl's commands open a file
read-only (`readonly=True, create=False`: it must hold a `checkpoints` table).
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agentctl.errors import CorruptRowError, DatabaseError, SchemaError
from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage.agentos.base import (
    COLUMNS,
    META_COLUMNS,
    SQLITE_SCHEMA,
    THREAD_ROW_COLUMNS,
    CheckpointBackend,
    Transaction,
    WriteSteps,
    check_columns,
    checkpoint_params,
    complete_checkpoint,
    dumps,
    row_to_checkpoint,
    row_to_metadata,
    token_part,
)
from agentctl.storage.agentos.queries import SharedQueries, check_sort
from agentctl.storage.sql.sqlite import SQLiteConnection, SQLiteTransaction
from agentctl.storage.sqlutil import connect as lock_waiting
from agentctl.storage.sqlutil import in_chunks, map_sqlite_error, marks
from agentctl.storage.timefmt import iso

__all__ = ["SQLiteCheckpointer", "SCHEMA"]

SCHEMA = SQLITE_SCHEMA

UPSERT_SQL = (
    f"INSERT INTO checkpoints ({', '.join(COLUMNS)}) VALUES ({marks(len(COLUMNS))}) "
    "ON CONFLICT(checkpoint_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS if c != "checkpoint_id")
)

# thread_summaries: a thread's sort key, from the skip-scan's `t.tid` (index only).
_SORT_KEYS = {
    "thread": "t.tid",
    "checkpoints": "(SELECT COUNT(*) FROM checkpoints c WHERE c.thread_id = t.tid)",
    "step": "(SELECT MAX(step) FROM checkpoints c WHERE c.thread_id = t.tid)",
}
# ... or, for "updated" (the head's created_at) and "created" (the first row's): the
# thread's last / first step, where the head / first row has the latest / earliest
# created_at (the row id only breaks ties between equal created_at values).
_END_KEYS = {"updated": "MAX", "created": "MIN"}


def iso_text(value: Any) -> Any:
    """created_at as stored in SQLite: a datetime as its ISO text (timefmt.iso), any
    other value as given (the column refuses NULL)."""
    return iso(value) if isinstance(value, datetime) else value


# _thread_rows reads by step alone up to this many rows (more: no LIMIT, the whole thread).
_STEP_ORDER_MAX = 1 << 62

# ALL_COLUMNS with the JSON columns as BLOBs (their bytes, in the file's encoding).
_BYTES_COLUMNS = ", ".join(
    f"CAST({c} AS BLOB) AS {c}" if c in ("messages_blob", "state_blob", "tools_blob") else c
    for c in ("id",) + COLUMNS
)


def _put(cp: Checkpoint, blobs: Sequence[str] | None) -> Callable[[sqlite3.Connection], str]:
    def put(conn: sqlite3.Connection) -> str:
        conn.execute(UPSERT_SQL, checkpoint_params(cp, iso_text, blobs))
        return cp.metadata.checkpoint_id

    return put


def put_steps(steps: WriteSteps) -> WriteSteps:
    """`steps` with each ("put", checkpoint, blobs) step (an upsert of one checkpoint)
    as a call on the connection's thread."""
    result = None
    try:
        while True:
            op = steps.send(result)
            result = yield ("call", _put(op[1], op[2])) if op[0] == "put" else op
    except StopIteration as done:
        return done.value


class _SQLiteTransaction(SQLiteTransaction, Transaction):
    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        await self._conn.execute(UPSERT_SQL, checkpoint_params(checkpoint, iso_text, blobs))
        return checkpoint.metadata.checkpoint_id


class SQLiteCheckpointer(SQLiteConnection, SharedQueries, CheckpointBackend):
    """Checkpoints in a SQLite file.

    `SQLiteCheckpointer(db_path="checkpoints.db")` is AgentOS's constructor: it creates
    the file and table if needed (a new file in WAL mode). agentctl's commands open files
    with `readonly=True, create=False` instead.
    """

    create_schema = SCHEMA
    transaction_class = _SQLiteTransaction

    _created_at_index: bool | None = None  # see _created_at_indexed

    def steps_of(self, steps: WriteSteps) -> WriteSteps:
        return put_steps(steps)

    async def _check_schema(self, conn: Any) -> None:
        path = self._db_path
        try:  # execute_fetchall: one round trip to the connection's thread, not three
            tables = [
                r[0]
                for r in await conn.execute_fetchall(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                )
            ]
        except sqlite3.DatabaseError as exc:
            raise self._schema_error(exc) from None
        if "checkpoints" not in tables:
            shown = ", ".join(tables[:8]) + (", …" if len(tables) > 8 else "")
            raise SchemaError(
                f"{path} has no 'checkpoints' table"
                + (f" (it has: {shown})" if tables else " (it has no tables)")
            )
        check_columns(path, [r[1] for r in await conn.execute_fetchall("PRAGMA table_info(checkpoints)")])

    async def _content_columns(self, table: str = "") -> str:
        # Their bytes (in the file's encoding): orjson parses UTF-8 as it is, where a str
        # (UCS-2 for a text with Chinese in it) is made of each and then encoded back to
        # UTF-8 for orjson; equal bytes are equal texts. A UTF-16 file's bytes are
        # parsed by the stdlib, which finds their encoding (`rows.loads`).
        return f"CAST({table}messages_blob AS BLOB), CAST({table}state_blob AS BLOB)"

    async def _thread_rows(
        self, thread_id: str, limit: int, offset: int, descending: bool, extra: str = ""
    ) -> list[Any]:
        if offset or not 0 <= limit <= _STEP_ORDER_MAX:
            return await super()._thread_rows(thread_id, limit, offset, descending, extra)
        # In idx_thread_step's order, by step alone: for the full order SQLite sorts the
        # rows of each step in a temporary b-tree of its own, set up and cleared for
        # every step (a fifth of the time for 10,000 steps). Without two rows of the same
        # step (and the row after the last one) both orders are the same; with them the
        # page is read again in the full order.
        rows = await self._fetch_tuples(
            f"SELECT {THREAD_ROW_COLUMNS}{extra} FROM checkpoints t WHERE thread_id = ? "
            f"ORDER BY step {'DESC' if descending else 'ASC'} LIMIT ?",
            thread_id,
            limit + 1 if limit < _STEP_ORDER_MAX else -1,
        )
        steps = [r[2] for r in rows]
        if any(map(operator.eq, steps, steps[1:])):
            return await super()._thread_rows(thread_id, limit, offset, descending, extra)
        return rows[:limit]

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        # The JSON columns as their UTF-8 bytes, which orjson parses as they are: no str
        # made of each first (for a 5 MB state, 10 ms of decoding and a second copy).
        rows = await self._fetch(
            f"SELECT {_BYTES_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id
        )
        if not rows:
            return None
        try:
            cp = row_to_checkpoint(rows[0])
        except CorruptRowError:  # read as text again: the same errors as ever (bad UTF-8 too)
            return await super().get(checkpoint_id)
        return await complete_checkpoint(self, cp)

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        # Not one GROUP BY over every row (a million index entries and rows): a skip-scan of
        # idx_thread_step lists the threads, one index seek each (SQLite skip-scans only
        # with sqlite_stat1, which a reader must not create); each thread gets just its
        # sort key; only the page's threads get their count, head, first row and parent.
        # The "updated" / "created" keys need the created_at of each thread's head / first
        # row: their row ids come from the index, and the rows are then read in id order
        # (neighbouring pages) rather than thread by thread (a random read each).
        check_sort(sort)
        direction = "DESC" if descending else "ASC"
        tiebreak = ", tid ASC" if sort != "thread" else ""
        params: list[Any] = []
        start = stop = only = ""
        if sort == "updated" and descending and await self._created_at_indexed():
            # With an index on created_at (the Postgres format has one; `agentctl doctor
            # --fix-indexes` adds it here): walk the newest rows and keep the heads, as
            # the Postgres backend does, instead of reading every thread's head.
            return await self._newest_heads(limit, offset, prefix)
        if prefix:
            # Byte order: every id starting with the prefix is in [prefix, prefix + U+10FFFF).
            start, stop, only = "WHERE thread_id >= ?", " AND t.tid < ?", " AND substr(tid, 1, ?) = ?"
            params = [prefix, prefix + "\U0010ffff", len(prefix), prefix]
        if sort in _END_KEYS:
            end = _END_KEYS[sort]
            keys = f"""ends AS (
                SELECT c.id FROM t JOIN checkpoints c ON c.thread_id = t.tid
                    AND c.step = (SELECT {end}(step) FROM checkpoints m WHERE m.thread_id = t.tid)
                WHERE tid IS NOT NULL{only}),
            page AS (
                SELECT thread_id AS tid, {end}(created_at) AS k FROM checkpoints
                WHERE id IN (SELECT id FROM ends) GROUP BY thread_id
                ORDER BY k {direction}{tiebreak} LIMIT ? OFFSET ?)"""
        else:
            keys = f"""page AS (
                SELECT tid, {_SORT_KEYS[sort]} AS k FROM t WHERE tid IS NOT NULL{only}
                ORDER BY k {direction}{tiebreak} LIMIT ? OFFSET ?)"""
        skip = f"""RECURSIVE t(tid) AS (
                SELECT (SELECT MIN(thread_id) FROM checkpoints {start})
                UNION ALL
                SELECT (SELECT MIN(thread_id) FROM checkpoints WHERE thread_id > t.tid)
                FROM t WHERE t.tid IS NOT NULL{stop}),
            """
        return await self._summary_page(skip + keys, params, limit, offset, direction, tiebreak)

    async def _created_at_indexed(self) -> bool:
        """Whether an index leads with created_at (looked up once per backend)."""
        if self._created_at_index is None:
            try:
                rows = await self._fetch(
                    "SELECT 1 FROM pragma_index_list('checkpoints') l, pragma_index_info(l.name) i "
                    "WHERE i.seqno = 0 AND i.name = 'created_at' AND l.partial = 0 LIMIT 1"
                )
            except DatabaseError:  # an SQLite without pragma functions (< 3.16)
                rows = []
            self._created_at_index = bool(rows)
        return self._created_at_index

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        out: list[CheckpointMetadata] = []
        ids = list(dict.fromkeys(thread_ids))
        cols = ", ".join("c." + c.strip() for c in META_COLUMNS.split(","))
        for ph, chunk in in_chunks(ids, 400):
            rows = await self._fetch(
                f"SELECT {cols} FROM checkpoints p JOIN checkpoints c ON c.parent_id = p.checkpoint_id "
                f"WHERE p.thread_id IN ({ph}) AND c.thread_id <> p.thread_id "
                "ORDER BY c.thread_id, c.step, c.created_at, c.id",
                *chunk,
            )
            out.extend(row_to_metadata(r) for r in rows)
        return out

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        # one seek of the (thread_id, step) index per thread found, not a pass over every
        # row of the threads in the range (a thread of 100,000 checkpoints: 11 ms)
        end = prefix + "\U0010ffff"
        rows = await self._fetch(
            "WITH RECURSIVE t(id, n) AS (SELECT (SELECT MIN(thread_id) FROM checkpoints WHERE thread_id >= ? "
            "AND thread_id < ?), 1 UNION ALL SELECT (SELECT MIN(thread_id) FROM checkpoints WHERE thread_id > t.id "
            "AND thread_id < ?), n + 1 FROM t WHERE t.id IS NOT NULL AND n < ?) "
            "SELECT id FROM t WHERE id IS NOT NULL",
            prefix,
            end,
            end,
            limit,
        )
        return [r[0] for r in rows]

    async def _indexed_search(
        self,
        text: str,
        thread_id: str | None,
        role: str | None,
        limit: int,
        places: frozenset[str] = frozenset(("messages", "tools", "state")),
    ) -> list[Any] | None:
        from agentctl.storage.agentos.fts import PLACE_COLUMNS, fts_search, side_index_search
        from agentctl.storage.textindex import Unusable, fallback_note, side_path

        await self.connect()
        self._index_route = "fts"
        columns = [c for p, c in PLACE_COLUMNS if p in places]
        if len(text.lower()) >= 3 and os.path.exists(side_path(self._db_path)):
            try:
                hits = await asyncio.to_thread(
                    side_index_search,
                    self._db_path,
                    self._search_condition(text, columns),
                    text,
                    thread_id,
                    role,
                    limit,
                    places,
                )
            except Unusable as exc:
                self.last_search_note = fallback_note(side_path(self._db_path), str(exc))
            except sqlite3.DatabaseError as exc:  # a side file damaged under our feet
                self.last_search_note = fallback_note(side_path(self._db_path), f"unreadable ({exc})")
            else:
                self._index_route = "index"
                return hits
        return await asyncio.to_thread(
            fts_search,
            self._db_path,
            self._search_condition(text, columns),
            text,
            thread_id,
            role,
            limit,
            places,
        )

    async def search_index(self, action: str) -> dict[str, Any]:
        """The side search index (agentctl.storage.textindex): "build" (or rebuild),
        "status" or "drop"; returns its status as a dict (with "dropped" for drop)."""
        from agentctl.errors import OperationError
        from agentctl.storage import textindex
        from agentctl.storage.agentos.fts import agentos_source

        source = agentos_source()
        if action == "build":
            try:
                st = await textindex.build_in_thread(self._db_path, source)
            except PermissionError as exc:
                raise OperationError(f"cannot build the search index: {exc}") from None
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self._db_path) from None
            return st.to_dict()
        if action == "drop":
            try:
                dropped = textindex.drop(self._db_path)
            except OSError as exc:
                raise OperationError(f"cannot remove the search index: {exc}") from None
            return {**textindex.status(self._db_path, source).to_dict(), "dropped": dropped}
        return (await asyncio.to_thread(textindex.status, self._db_path, source)).to_dict()

    def _search_condition(
        self,
        text: str,
        columns: Sequence[str] = ("messages_blob", "tools_blob", "state_blob"),
    ) -> tuple[str, list[Any]]:
        # A condition every row with a hit meets (Python then decides exactly), on the
        # stored JSON: the longest part of the text that a hit always holds inside one
        # JSON string, key or number (base.token_part), as stored raw or \u-escaped (writers
        # differ in ensure_ascii). LIKE folds ASCII case as lower() does, without copying
        # each column lower-cased (3x faster on 1M rows); \u escapes' hex digits match in
        # either case. (A pattern too long for LIKE's limit is tested with instr.)
        from agentctl.storage.sqlutil import like_escape

        part = token_part(text)
        if not part:
            return "(1)", []
        forms = dict.fromkeys([dumps(part)[1:-1].lower(), json.dumps(part)[1:-1].lower()])
        if max(len(f.encode()) for f in forms) * 2 + 2 > _LIKE_MAX:
            tests = [(f"instr(lower({c}), ?) > 0", f) for c in columns for f in forms]
        else:
            tests = [(f"{c} LIKE ? ESCAPE '!'", "%" + like_escape(f) + "%") for c in columns for f in forms]
        return "(" + " OR ".join(t for t, _ in tests) + ")", [p for _, p in tests]

    BYTES_OF = "length(CAST({} AS BLOB))"
    TAG_COUNTS = (
        "SELECT j.value AS tag, COUNT(*) AS n FROM checkpoints c, json_each(c.tags) j "
        "WHERE json_valid(c.tags) AND json_type(c.tags) = 'array' "
        "GROUP BY j.value ORDER BY n DESC, tag"
    )
    INVALID_JSON = (
        "SELECT checkpoint_id, json_valid({c}) AS ok, CASE WHEN json_valid({c}) THEN json_type({c}) "
        "END AS t FROM checkpoints WHERE NOT json_valid({c}) OR json_type({c}) <> ? ORDER BY id LIMIT ?"
    )


_LIKE_MAX = 50_000  # SQLite's default SQLITE_MAX_LIKE_PATTERN_LENGTH (bytes)


class _PlainReader(SQLiteCheckpointer):
    """The backend's reads on a plain sqlite3 connection (`mode=ro`) of the calling
    thread, with no event loop: `_fetch` never suspends, so a read coroutine of the
    backend runs to its end on its first step (`run`). Same SQL, same results."""

    def __init__(self, path: str, busy_timeout_ms: int = 5000) -> None:
        super().__init__(path, readonly=True, create=False, busy_timeout_ms=busy_timeout_ms)
        self._check_path()
        try:
            self._plain = lock_waiting(
                self._uri("ro"), uri=True, isolation_level=None, timeout=self._busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, path) from None
        self._plain.row_factory = sqlite3.Row

    async def _fetch(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        try:
            return self._plain.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None

    def run(self, coro: Any) -> Any:
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        coro.close()
        raise RuntimeError("a plain read waited for something other than its queries")


def read_thread_summaries(path: str, **kwargs: Any) -> list[ThreadSummary]:
    """`SQLiteCheckpointer.thread_summaries(**kwargs)` of a SQLite file, as a blocking call
    for a plain thread (no event loop, no aiosqlite thread): the TUI reads its first page
    of threads this way while Textual starts (sqlite3 releases the GIL while a statement
    runs). Opens the file read-only and closes it before returning."""
    reader = _PlainReader(path)
    try:
        return reader.run(reader.thread_summaries(**kwargs))
    finally:
        reader._plain.close()
