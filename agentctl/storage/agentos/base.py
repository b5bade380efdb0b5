"""The backend contract: one async ABC that every storage implements.

`CheckpointBackend` keeps the seven methods of the original AgentOS ABC (`put`, `get`,
`get_latest`, `list_threads`, `list_checkpoints`, `delete_thread`, `delete_before`) with
their signatures, and adds what a debugger needs. Every method returns the model's
dataclasses (never driver rows) and raises `agentctl.errors.AgentctlError` subclasses
for problems the user can act on.

Ordering is the same on every backend:
- within a thread: by `step`, then `created_at`, then the row `id` (the head of a thread
  is the last row in that order);
- threads (`list_threads`, `thread_summaries` by default): by their head's `created_at`,
  newest first, then by `thread_id` (byte order).

A repeated `put` of an existing `checkpoint_id` updates every column of that row in place
(its row `id` stays), on every backend.

Writes: every public write method is one transaction. `transaction()` gives the engine a
transaction (with a per-thread lock on Postgres, `BEGIN IMMEDIATE` on SQLite) in which it
runs several statements written once with `?` placeholders. `query()` and `table_exists()`
let the engine read its side tables (`agentctl_*`, see agentctl/storage/agentos/oplog.py) without writing;
`vacuum()` frees the space of what the engine purged.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Union

from agentctl.errors import SchemaError
from agentctl.model import Checkpoint, CheckpointMetadata

# re-exported: callers import these from here
from agentctl.storage.agentos.rows import (
    ALL_COLUMNS,
    COLUMN_DEFS,  # noqa: F401 (re-exported)
    COLUMNS,  # noqa: F401 (re-exported)
    DELTA_MARKER,
    DELTA_TAG,  # noqa: F401 (re-exported)
    DIALECT_INDEXES,  # noqa: F401 (re-exported)
    DIALECTS,  # noqa: F401 (re-exported)
    INDEXES,  # noqa: F401 (re-exported)
    META_COLUMNS,
    POSTGRES_SCHEMA,  # noqa: F401 (re-exported)
    REQUIRED_COLUMNS,
    SQLITE_SCHEMA,  # noqa: F401 (re-exported)
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    THREAD_ROW_COLUMNS,
    Row,
    checkpoint_params,  # noqa: F401
    decode_column,  # noqa: F401 (re-exported)
    dumps,  # noqa: F401 (re-exported)
    hit_path,  # noqa: F401
    json_hit_tokens,  # noqa: F401 (re-exported)
    loads,  # noqa: F401 (re-exported)
    message_hit_path,  # noqa: F401 (re-exported)
    metadata_rows,
    row_to_checkpoint,
    row_to_metadata,
    schema_sql,  # noqa: F401 (re-exported)
    search_messages,  # noqa: F401
    snippet_around,  # noqa: F401 (re-exported)
    token_part,  # noqa: F401 (re-exported)
)
from agentctl.storage.contract import FormatSpec, Store
from agentctl.storage.sql.conn import Reads, WriteSteps  # noqa: F401  (WriteSteps: re-exported)
from agentctl.storage.sql.conn import Transaction as SQLTransaction
from agentctl.storage.sqlutil import in_chunks

# The row layer's names are re-exported: callers import them from here.


class RowReads(Reads):
    """Reads of single rows, usable on a backend and inside a transaction."""

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        rows = await self._fetch(
            f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id
        )
        return await complete_checkpoint(self, row_to_checkpoint(rows[0])) if rows else None

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        rows = await self._fetch(
            f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE thread_id = ? ORDER BY {THREAD_ORDER_DESC} LIMIT 1",
            thread_id,
        )
        return await complete_checkpoint(self, row_to_checkpoint(rows[0])) if rows else None

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        rows = await self._fetch(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id
        )
        return row_to_metadata(rows[0]) if rows else None

    async def max_step(self, thread_id: str) -> int | None:
        return await self._fetchval("SELECT MAX(step) AS m FROM checkpoints WHERE thread_id = ?", thread_id)

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        return metadata_rows(thread_id, await self._thread_rows(thread_id, limit, offset, descending))

    async def read_thread_forks(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> tuple[list[CheckpointMetadata], list[str]]:
        """read_thread, and the ids of those checkpoints that have children in other
        threads (forks), found while the rows are read: an idx_parent probe per row,
        whose child is mostly the next step, a row just read."""
        rows = await self._thread_rows(thread_id, limit, offset, descending, FORKED)
        forks = [r[0] for r in rows if r[6]]
        return metadata_rows(thread_id, [r[:6] for r in rows]), forks

    async def _thread_rows(
        self, thread_id: str, limit: int, offset: int, descending: bool, extra: str = ""
    ) -> list[Sequence[Any]]:
        """A page of a thread's rows (table `t`) as tuples of THREAD_ROW_COLUMNS, then
        the `extra` columns."""
        order = THREAD_ORDER_DESC if descending else THREAD_ORDER_ASC
        return await self._fetch_tuples(
            f"SELECT {THREAD_ROW_COLUMNS}{extra} FROM checkpoints t WHERE thread_id = ? "
            f"ORDER BY {order} LIMIT ? OFFSET ?",
            thread_id,
            limit,
            offset,
        )


# An extra column of _thread_rows: 1 if the row has a child in another thread, else 0.
FORKED = (
    ", CASE WHEN EXISTS (SELECT 1 FROM checkpoints k WHERE k.parent_id = t.checkpoint_id "
    "AND k.thread_id <> t.thread_id) THEN 1 ELSE 0 END"
)


class Transaction(RowReads, SQLTransaction):
    """One open write transaction (the shared layer's, with AgentOS's row reads).
    Statements use `?` placeholders on every backend."""

    @abstractmethod
    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        """Upsert one checkpoint inside this transaction (`blobs`: see checkpoint_params)."""


def check_columns(where: str, columns: Iterable[str]) -> None:
    """SchemaError when the `checkpoints` table (its `columns`) lacks a column the format needs."""
    missing = [c for c in REQUIRED_COLUMNS if c not in set(columns)]
    if missing:
        raise SchemaError(f"{where}: the 'checkpoints' table lacks column(s): {', '.join(missing)}")


# What reads rows: an open transaction or a backend (both RowReads).
Reader = Union[Transaction, "CheckpointBackend"]


async def complete_checkpoint(reader: RowReads, cp: Checkpoint, cache: dict | None = None) -> Checkpoint:
    """The full checkpoint of a row: a delta row (agentctl/storage/agentos/delta.py) is resolved."""
    marker = cp.state.get(DELTA_MARKER) if isinstance(cp.state, dict) else None
    if not isinstance(marker, dict):
        return cp
    from agentctl.storage.agentos.delta import resolve

    return await resolve(reader, cp, cache)


class CheckpointBackend(Store):
    """Storage for checkpoints: the store of the AgentOS format. Use as
    `async with backend:` or call `close()`.

    Implementations: `agentctl.storage.agentos.sqlite.SQLiteCheckpointer`,
    `agentctl.storage.agentos.postgres.PostgresCheckpointer`.
    """

    kind: str = ""
    #: a display name of the database, safe to print (no password)
    display_name: str = ""
    _readonly = False

    if TYPE_CHECKING:
        # Supplied by the mix-in every implementation puts first, SharedQueries (a
        # RowReads): declared here for the type checker only.
        COLLATE: str

        async def _fetch(self, sql: str, *params: Any) -> Sequence[Row]: ...

        async def query(self, sql: str, *params: Any) -> list[dict[str, Any]]: ...

        async def _fetchval(self, sql: str, *params: Any) -> Any: ...

        async def max_step(self, thread_id: str) -> int | None: ...

        async def table_exists(self, name: str) -> bool: ...

    @property
    def format(self) -> FormatSpec:  # type: ignore[override]
        from agentctl.storage.agentos import FORMAT

        return FORMAT

    doctor_checks = ("duplicate_steps", "orphan_parents", "invalid_json", "cycles")

    async def doctor(self, limit: int = 100) -> list[Any]:
        from agentctl.storage.agentos import doctor as agentos_doctor

        return await agentos_doctor.problems(self, limit)

    async def fix_indexes(self) -> list[str]:
        from agentctl.storage.agentos import doctor as agentos_doctor

        return await agentos_doctor.fix_indexes(self)

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        """`stats()`: AgentOS checkpoints have no users or sessions to filter by."""
        if user is not None or days is not None:
            from agentctl.storage.contract import Unsupported

            raise Unsupported("agentos", "stats --user/--days (checkpoints have no users)")
        return await self.stats()

    async def existing_checkpoint_ids(self, ids: Sequence[str]) -> set[str]:
        existing: set[str] = set()
        for ph, chunk in in_chunks(ids):
            existing |= {
                r["checkpoint_id"]
                for r in await self.query(
                    f"SELECT checkpoint_id FROM checkpoints WHERE checkpoint_id IN ({ph})", *chunk
                )
            }
        return existing

    async def drop_if_empty(self) -> bool:
        """Drop the checkpoints table if it holds no row (what `import --create` made,
        when the import failed); whether it was dropped."""
        async with self.transaction() as tx:
            if await tx.fetch("SELECT 1 AS x FROM checkpoints LIMIT 1"):
                return False
            await tx.execute("DROP TABLE checkpoints")
            return True

    async def fork_children(self, parent_ids: Sequence[str], thread_id: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for ph, chunk in in_chunks(parent_ids):
            out.extend(
                (r["thread_id"], r["parent_id"])
                for r in await self.query(
                    f"SELECT thread_id, parent_id FROM checkpoints WHERE parent_id IN ({ph}) AND thread_id <> ? "
                    f"ORDER BY thread_id{self.COLLATE}, step, created_at, id",
                    *chunk,
                    thread_id,
                )
            )
        return out

    async def change_token(self, thread_id: str | None) -> tuple[Any, Any]:
        """The highest row id (rows added anywhere) and the thread's size and highest
        row id: index lookups only, in one round trip."""
        if thread_id is None:
            rows = await self.query("SELECT MAX(id) AS top FROM checkpoints")
            return rows[0]["top"], None
        rows = await self.query(
            "SELECT (SELECT MAX(id) FROM checkpoints) AS top, COUNT(*) AS n, MAX(id) AS last "
            "FROM checkpoints WHERE thread_id = ?",
            thread_id,
        )
        row = rows[0]
        return row["top"], (row["n"], row["last"])

    async def archive_threads(self) -> set[str]:
        from agentctl.storage.agentos import oplog

        return await oplog.archive_threads(self)

    async def __aenter__(self) -> CheckpointBackend:
        await self.connect()
        return self

    # ---- the seven methods of the original ABC ------------------------------------

    @abstractmethod
    async def put(self, checkpoint: Checkpoint) -> str:
        """Save a checkpoint (upsert by checkpoint_id); return its checkpoint_id."""

    @abstractmethod
    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with this id, or None. Raises CorruptRowError if it cannot be decoded."""

    @abstractmethod
    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        """The head of a thread (last in step, created_at, id order), or None."""

    @abstractmethod
    async def list_threads(self, limit: int = 50, offset: int = 0) -> list[CheckpointMetadata]:
        """The head metadata of each thread, most recently updated first."""

    @abstractmethod
    async def list_checkpoints(
        self, thread_id: str, limit: int = 100, offset: int = 0
    ) -> list[CheckpointMetadata]:
        """A thread's checkpoints, newest first (step, created_at, id descending)."""

    @abstractmethod
    async def delete_thread(self, thread_id: str) -> int:
        """Delete every checkpoint of a thread; return how many. (No undo: the engine's
        `delete_thread` is the undoable one.)"""

    @abstractmethod
    async def delete_before(self, thread_id: str, before_step: int) -> int:
        """Delete a thread's checkpoints with step < before_step; return how many."""

    # ---- what the debugger adds (beside the Store contract's reads) ----------------

    @abstractmethod
    def iter_metadata(self, batch: int = 5000) -> AsyncIterator[CheckpointMetadata]:
        """The metadata of every row, streamed in thread then step order."""

    @abstractmethod
    async def stats(self) -> dict[str, Any]:
        """{"threads", "checkpoints", "bytes", "per_thread": [{thread_id, checkpoints, bytes}],
        "tags": {tag: count}} with per_thread sorted by bytes, largest first."""

    @abstractmethod
    async def duplicate_steps(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{thread_id, step, count}] for steps that occur more than once in a thread."""

    @abstractmethod
    async def orphan_parents(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{thread_id, checkpoint_id, parent_id}] whose parent_id names no row."""

    @abstractmethod
    async def invalid_json(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{checkpoint_id, column, reason}] for blobs that do not parse or have the wrong type."""

    async def size_bytes(self, tables: Sequence[str] = ("checkpoints",)) -> int:
        """The database's size in bytes (SQLite: the file and its WAL; Postgres: these
        tables, those that exist, with their indexes and TOAST)."""
        raise NotImplementedError

    async def compact(self) -> dict[str, Any]:
        from agentctl.storage.agentos import oplog

        tables = ["checkpoints", oplog.TRASH]
        before = await self.size_bytes(tables)
        await self.vacuum(tables)
        if self.kind == "sqlite":
            await self.truncate_wal()  # type: ignore[attr-defined]
        return {
            "vacuumed": "file" if self.kind == "sqlite" else tables,
            "before": before,
            "after": await self.size_bytes(tables),
        }

    async def vacuum(self, tables: Sequence[str] = ("checkpoints",)) -> None:
        """Give the space of deleted rows back (SQLite: VACUUM of the whole file, which
        shrinks it; Postgres: VACUUM of these tables (those that exist), which makes
        their space reusable). Runs outside any
        transaction and waits for other writers like a write does."""

    @abstractmethod
    def transaction(self, lock_threads: Sequence[str] = ()) -> AbstractAsyncContextManager[Transaction]:
        """A write transaction. It commits when the block ends normally and rolls back
        when it raises. Raises ReadOnlyDatabase on a backend opened read-only."""
