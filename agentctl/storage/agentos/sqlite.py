"""SQLite backend on aiosqlite.

Two ways to open a file:
- as the debugger (`open_backend`, readonly=True, create=False): the file must exist and
  hold a `checkpoints` table; reads go through a `mode=ro` connection, so nothing is
  created and the journal mode is never changed. A write connection (`mode=rw`, with
  `busy_timeout`) opens only when a write transaction is asked for.
- as an agent's checkpoint library (`SQLiteCheckpointer(db_path)`, AgentOS's call):
  the file and table are created when missing, and a new file is put in WAL mode.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
import threading
import time
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable, Sequence, cast

import aiosqlite

from agentctl.storage.agentos.base import (
    SQLITE_SCHEMA,
    checkpoint_params,
    COLUMNS,
    complete_checkpoint,
    row_to_checkpoint,
    META_COLUMNS,
    THREAD_ROW_COLUMNS,
    CheckpointBackend,
    Transaction,
    WriteSteps,
    check_columns,
    dumps,
    token_part,
    row_to_metadata,
)
from agentctl.storage.agentos.queries import SharedQueries, check_sort
from agentctl.errors import (
    CorruptRowError,
    DatabaseError,
    DatabaseNotFound,
    NotADatabase,
    ReadOnlyDatabase,
    SchemaError,
    UsageError,
)
from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage.sqlutil import LockWaiting, in_chunks, map_sqlite_error, marks, refuse_unwritable
from agentctl.storage.sqlutil import connect as lock_waiting
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
    for c in ("id",) + COLUMNS)


def _thread_runner(conn: aiosqlite.Connection) -> tuple[Callable[..., Any], sqlite3.Connection] | None:
    """aiosqlite's private `_execute` (run a function on the connection's own thread) and
    `_conn` (its sqlite3 connection), or None on an aiosqlite without them. Worth their
    speed; tested on aiosqlite 0.20 to 0.22, the range pyproject.toml allows."""
    run, raw = getattr(conn, "_execute", None), getattr(conn, "_conn", None)
    return (run, raw) if callable(run) and isinstance(raw, sqlite3.Connection) else None


def _tuple_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """On the connection's thread: the rows of a query as tuples."""
    cur = conn.cursor()
    try:
        cur.row_factory = None
        return cur.execute(sql, params).fetchall()
    finally:
        cur.close()


def _rowcounts(conn: sqlite3.Connection, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
    """On the connection's thread: run statements in turn; the rows each changed."""
    return [conn.execute(sql, params).rowcount for sql, params in statements]


#: how long the checkpoint after a write waits for another process's transaction
WAL_CHECKPOINT_WAIT_MS = 200


def checkpoint_wal(conn: sqlite3.Connection) -> bool:
    """Copy a WAL database's WAL into its file and empty it (TRUNCATE), so that the file
    alone holds what was committed; True when done. Under a live writer or reader that
    keeps the WAL busy it waits at most WAL_CHECKPOINT_WAIT_MS, then copies what it can
    without waiting (PASSIVE) and returns False: never an error, never a long wait. Not
    in WAL mode: nothing to do (True)."""
    try:
        old = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute(f"PRAGMA busy_timeout = {WAL_CHECKPOINT_WAIT_MS}")
        try:
            busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return not busy
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(old)}")
    except sqlite3.Error:  # busy, locked, read-only: the write itself is committed
        return False


class _SQLiteTransaction(Transaction):
    kind = "sqlite"

    def __init__(self, conn: aiosqlite.Connection):
        self._conn = conn

    async def execute(self, sql: str, *params: Any) -> int:
        # One call on the connection's thread: the statement has run to its end, so the
        # cursor needs no close() round trip (like put's).
        cur = await self._conn.execute(sql, params)
        return cur.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(sql, list(rows))

    async def execute_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        # One call on the connection's thread, not a round trip per statement (a prune's
        # 400 moves: each round trip waits for two thread wake-ups on a busy machine).
        runner = _thread_runner(self._conn)
        if runner is None:
            return await super().execute_each(statements)
        run_on_thread, raw = runner
        return list(await run_on_thread(_rowcounts, raw, list(statements)))

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        # One call on the connection's thread (execute + fetchall + close would be three).
        return [dict(r) for r in await self._conn.execute_fetchall(sql, params)]

    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        await self._conn.execute(UPSERT_SQL, checkpoint_params(checkpoint, iso_text, blobs))
        return checkpoint.metadata.checkpoint_id

    def timestamp(self, iso: str) -> Any:
        return iso


class _Batch:
    """Write transactions sharing one SQLite transaction and its COMMIT."""

    def __init__(self) -> None:
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.members = 0  # bodies run so far (the first one has no savepoint)
        self.task: asyncio.Task[None] | None = None

    def fail(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)
            self.done.exception()  # retrieved: no warning when no writer waits for it


def _run_steps_here(conn: sqlite3.Connection, steps: WriteSteps) -> Any:
    """Run a write given as steps (see `WriteSteps`) on a sqlite3 connection, in the
    calling thread; return its result."""
    result: Any = None
    try:
        while True:
            op = steps.send(result)
            if op[0] == "fetch":
                result = [dict(r) for r in conn.execute(op[1], op[2]).fetchall()]
            elif op[0] == "execute":
                result = conn.execute(op[1], op[2]).rowcount
            else:  # put
                conn.execute(UPSERT_SQL, checkpoint_params(op[1], iso_text, op[2]))
                result = op[1].metadata.checkpoint_id
    except StopIteration as done:
        return done.value


_Job = tuple[WriteSteps, "asyncio.Future[Any]"]


def _run_jobs(conn: sqlite3.Connection, jobs: list[WriteSteps]) -> list[tuple[bool, Any]]:
    """On the connection's thread: the writes `jobs` in one transaction and one COMMIT,
    each in a savepoint when there are several; (True, result) or (False, error) each.
    An error that ends the transaction itself (BEGIN or COMMIT failing, SQLite rolling
    everything back) is raised: then none of the writes happened."""
    group = len(jobs) > 1
    outcomes: list[tuple[bool, Any]] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for steps in jobs:
            if group:
                conn.execute("SAVEPOINT agentctl_write")
            try:
                outcomes.append((True, _run_steps_here(conn, steps)))
            except Exception as exc:
                if not conn.in_transaction:
                    raise  # SQLite rolled back the whole transaction (I/O error, full disk)
                conn.execute("ROLLBACK TO agentctl_write" if group else "ROLLBACK")
                outcomes.append((False, exc))
            if group:
                conn.execute("RELEASE agentctl_write")
        if conn.in_transaction:
            conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return outcomes


class SQLiteCheckpointer(SharedQueries, CheckpointBackend):
    """Checkpoints in a SQLite file.

    `SQLiteCheckpointer(db_path="checkpoints.db")` is AgentOS's constructor: it creates
    the file and table if needed (a new file in WAL mode). agentctl's commands open files
    with `readonly=True, create=False` instead.
    """

    kind = "sqlite"
    #: the most writes of `write_steps` that share one transaction (bounds its latency)
    group_max = 256
    #: seconds the connection's thread waits for the next `write_steps` after the last
    #: queued one is written, before it hands the write lock back: an agent's next
    #: snapshot then reaches that thread in one wake-up, not a task, the lock and
    #: aiosqlite's queue (a transaction asking for the lock ends the wait at once)
    linger = 0.005

    def __init__(
        self,
        db_path: str = "checkpoints.db",
        *,
        readonly: bool = False,
        create: bool = True,
        busy_timeout_ms: int = 5000,
    ):
        self._db_path = str(db_path)
        self.display_name = self._db_path
        self.local_file = self._db_path
        self._readonly = readonly
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._reader: aiosqlite.Connection | None = None
        self._writer: aiosqlite.Connection | None = None
        self._connect_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._batch: _Batch | None = None  # the open group-commit transaction
        # write_steps: the queued writes, shared with the connection's thread (under
        # _jobs_lock), whether that thread is writing them, and the tasks holding the
        # write lock meanwhile
        self._jobs: list[_Job] = []
        self._jobs_lock = threading.Lock()
        self._jobs_ready = threading.Condition(self._jobs_lock)  # a job, or the lock wanted
        self._draining = False
        self._lock_wanted = 0  # callers of _locked() waiting for the write lock
        self._closing = 0  # close() waits for the drain: no lingering
        self._wake_at = 1  # queued writes that end the drain's wait (see _drain_jobs)
        self._drain_done = threading.Event()  # set when the thread leaves _drain_jobs
        self._jobs_tasks: set[asyncio.Task[None]] = set()
        #: bumped by every write made through `transaction` (not `write_steps`): with
        #: `PRAGMA data_version` (other connections' commits) it tells a caller that
        #: nothing but its own `write_steps` changed the file since it last looked
        self.write_generation = 0
        self._created_at_index: bool | None = None  # see _created_at_indexed
        if create and not readonly:
            self._create_if_missing()

    @property
    def path(self) -> str:
        return self._db_path

    # ---- lifecycle ----------------------------------------------------------------

    def _create_if_missing(self) -> None:
        path = self._db_path
        if path != ":memory:":
            if os.path.isdir(path):
                raise NotADatabase(f"{path} is a directory, not a SQLite database")
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        is_new = path == ":memory:" or not os.path.exists(path) or os.path.getsize(path) == 0
        refuse_unwritable(path)
        try:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
                if is_new and path != ":memory:":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript("BEGIN;" + SCHEMA + "COMMIT;")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, path) from None

    def _uri(self, mode: str) -> str:
        return Path(os.path.abspath(self._db_path)).as_uri() + f"?mode={mode}"

    async def _open(self, mode: str) -> aiosqlite.Connection:
        if mode == "rw":
            refuse_unwritable(self._db_path)
        # timeout= is the wait for another process's lock, set when the connection opens
        # (no PRAGMA round trip to the connection's thread); LockWaiting waits in steps,
        # so that Ctrl-C ends a wait at once (sqlutil.connect).
        pending = aiosqlite.connect(self._uri(mode), uri=True, isolation_level=None,
                                    timeout=self._busy_timeout_ms / 1000, factory=LockWaiting)
        # A library user who never closes the checkpointer (AgentOS's usage) must not
        # have the interpreter wait forever at exit on aiosqlite's worker thread.
        worker = getattr(pending, "_thread", None)
        if worker is not None and not worker.is_alive():
            worker.daemon = True
        conn = await pending
        conn.row_factory = sqlite3.Row
        return conn

    def _check_path(self) -> None:
        path = self._db_path
        if path == ":memory:":
            raise UsageError("':memory:' cannot be opened by agentctl's reader; use a file")
        if not os.path.exists(path):
            raise DatabaseNotFound(f"database file not found: {path}")
        if os.path.isdir(path):
            raise NotADatabase(f"{path} is a directory, not a SQLite database")
        if os.path.getsize(path) == 0:
            raise SchemaError(f"{path} is an empty file, not a checkpoint database")

    async def backup(self, dest: str) -> str:
        """An online, consistent copy of the database file at `dest` (a file, or a
        directory to put one of the same name in), with SQLite's backup API; the path
        written. Refuses to overwrite a file (UsageError)."""
        from agentctl.storage.backup import backup_target, sqlite_backup

        self.require("backup")
        target = backup_target(self._db_path, dest)
        await asyncio.to_thread(sqlite_backup, self._db_path, str(target))
        return str(target)

    async def connect(self) -> None:
        if self._reader is not None:
            return
        async with self._connect_lock:
            if self._reader is not None:
                return
            self._check_path()
            try:
                conn = await self._open_checked()
            except ReadOnlyDatabase:
                if not self._has_hot_journal():
                    raise
                # A writer was killed mid-transaction (rollback journal mode): SQLite
                # restores the last committed state on the next open with write access,
                # which a read-only connection cannot do. Do that, then read.
                await asyncio.to_thread(self._roll_back_hot_journal)
                conn = await self._open_checked()
            self._reader = conn

    async def _open_checked(self) -> aiosqlite.Connection:
        try:
            conn = await self._open("ro")
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None
        try:
            await self._check_schema(conn)
        except BaseException:
            await conn.close()
            raise
        return conn

    def _has_hot_journal(self) -> bool:
        journal = self._db_path + "-journal"
        return os.path.isfile(journal) and os.path.getsize(journal) > 0

    def _roll_back_hot_journal(self) -> None:
        path = self._db_path
        try:
            refuse_unwritable(path)
            conn = lock_waiting(self._uri("rw"), uri=True, timeout=self._busy_timeout_ms / 1000)
            try:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            finally:
                conn.close()
        except (sqlite3.Error, ReadOnlyDatabase) as exc:
            raise ReadOnlyDatabase(
                f"{path}: a writer stopped in the middle of a transaction and left {path}-journal; "
                f"SQLite rolls it back on the next open with write access, which failed here ({exc})"
            ) from None

    async def _check_schema(self, conn: aiosqlite.Connection) -> None:
        path = self._db_path
        try:  # execute_fetchall: one round trip to the connection's thread, not three
            tables = [r[0] for r in await conn.execute_fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc).lower():
                raise NotADatabase(f"{path} is not a SQLite database") from None
            raise map_sqlite_error(exc, path) from None
        if "checkpoints" not in tables:
            shown = ", ".join(tables[:8]) + (", …" if len(tables) > 8 else "")
            raise SchemaError(
                f"{path} has no 'checkpoints' table"
                + (f" (it has: {shown})" if tables else " (it has no tables)")
            )
        check_columns(path, [r[1] for r in await conn.execute_fetchall("PRAGMA table_info(checkpoints)")])

    async def close(self) -> None:
        self._closing += 1
        self._wake_drain()
        try:
            while self._jobs_tasks:  # queued writes run first
                await asyncio.wait(set(self._jobs_tasks))
        finally:
            self._closing -= 1
        async with self._locked():  # after the writes under way
            if self._batch is not None:
                await self._end_batch(self._batch, None)
        # The reader first, the writer last: the last connection to close checkpoints a
        # WAL database into its file and removes the -wal, which a read-only connection
        # cannot do. After a write the WAL is checkpointed here too, so the file alone
        # holds every write agentctl made even if another process keeps the WAL open.
        reader, writer = self._reader, self._writer
        self._reader = self._writer = None
        if reader is not None:
            await reader.close()
        if writer is not None:
            try:
                runner = _thread_runner(writer)
                if runner is not None:
                    await runner[0](checkpoint_wal, runner[1])
            finally:
                await writer.close()

    # ---- helpers ------------------------------------------------------------------

    async def _fetch(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        await self.connect()
        assert self._reader is not None
        try:
            # One call on the connection's thread runs the statement to its end: a caller
            # cancelled mid-query (a TUI worker superseded by a newer one) cannot leave an
            # open cursor behind, whose read lock would block every writer (rollback journal).
            return list(await self._reader.execute_fetchall(sql, params))
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None

    async def _fetch_tuples(self, sql: str, *params: Any) -> list[Any]:
        await self.connect()
        reader = self._reader
        assert reader is not None
        runner = _thread_runner(reader)  # aiosqlite's queue to its thread
        if runner is None:  # an aiosqlite without it: the public path
            return [tuple(r) for r in await self._fetch(sql, *params)]
        run_on_thread, raw = runner
        try:
            # Plain tuples (no sqlite3.Row per row: a third of the time for 10,000 rows),
            # in one call on the connection's thread, like _fetch.
            return await run_on_thread(_tuple_rows, raw, sql, params)
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None

    async def query_apart(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[dict[str, Any]]]:
        """Read-only statements run at once, the first on the reader and each other on a
        read-only connection opened for it alone (in a thread of its own: SQLite reads
        one file from several connections in parallel, on as many cores); the rows of
        each as `query` gives them. For one long read split in parts by row id (a
        prune's plan). Each part sees the file as it is when that part starts."""
        await self.connect()
        path, timeout = self._db_path, self._busy_timeout_ms / 1000

        def alone(sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
            conn = lock_waiting(self._uri("ro"), uri=True, isolation_level=None, timeout=timeout)
            try:
                conn.row_factory = sqlite3.Row
                return [dict(r) for r in conn.execute(sql, params).fetchall()]
            finally:
                conn.close()

        async def apart(sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
            try:
                return await asyncio.to_thread(alone, sql, params)
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, path) from None

        (sql, params), rest = statements[0], statements[1:]
        return list(await asyncio.gather(self.query(sql, *params), *(apart(s, p) for s, p in rest)))

    async def _content_columns(self, table: str = "") -> str:
        # Their bytes (in the file's encoding): orjson parses UTF-8 as it is, where a str
        # (UCS-2 for a text with Chinese in it) is made of each and then encoded back to
        # UTF-8 for orjson; equal bytes are equal texts. A UTF-16 file's bytes are
        # parsed by the stdlib, which finds their encoding (`rows.loads`).
        return f"CAST({table}messages_blob AS BLOB), CAST({table}state_blob AS BLOB)"

    async def _thread_rows(self, thread_id: str, limit: int, offset: int, descending: bool,
                           extra: str = "") -> list[Any]:
        if offset or not 0 <= limit <= _STEP_ORDER_MAX:
            return await super()._thread_rows(thread_id, limit, offset, descending, extra)
        # In idx_thread_step's order, by step alone: for the full order SQLite sorts the
        # rows of each step in a temporary b-tree of its own, set up and cleared for
        # every step (a fifth of the time for 10,000 steps). Without two rows of the same
        # step (and the row after the last one) both orders are the same; with them the
        # page is read again in the full order.
        rows = await self._fetch_tuples(
            f"SELECT {THREAD_ROW_COLUMNS}{extra} FROM checkpoints t WHERE thread_id = ? "
            f"ORDER BY step {'DESC' if descending else 'ASC'} LIMIT ?", thread_id,
            limit + 1 if limit < _STEP_ORDER_MAX else -1)
        steps = [r[2] for r in rows]
        if any(map(operator.eq, steps, steps[1:])):
            return await super()._thread_rows(thread_id, limit, offset, descending, extra)
        return rows[:limit]

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        # The JSON columns as their UTF-8 bytes, which orjson parses as they are: no str
        # made of each first (for a 5 MB state, 10 ms of decoding and a second copy).
        rows = await self._fetch(
            f"SELECT {_BYTES_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id)
        if not rows:
            return None
        try:
            cp = row_to_checkpoint(rows[0])
        except CorruptRowError:  # read as text again: the same errors as ever (bad UTF-8 too)
            return await super().get(checkpoint_id)
        return await complete_checkpoint(self, cp)

    @asynccontextmanager
    async def transaction(self, lock_threads: Sequence[str] = ()) -> AsyncIterator[Transaction]:
        """A write transaction: atomic, serialised with the others, durable when the
        `async with` block is left.

        Group commit: writers that are already waiting for the write lock when one
        begins run their bodies in the same SQLite transaction, each in its own savepoint
        (a body that raises undoes only its own statements), and share its COMMIT: one
        fsync for the group instead of one each. Every caller still returns only after
        the COMMIT that holds its writes (or gets its error). A lone writer pays nothing
        extra: no savepoint, one COMMIT.
        """
        await self._connect_writable()
        async with self._locked():
            batch = self._batch
            if batch is None:
                await self._writer_execute("BEGIN IMMEDIATE")
                batch = self._batch = _Batch()
                # The COMMIT runs in its own task, queued for the lock behind the writers
                # waiting now (the lock is FIFO): they join; a cancelled caller cannot
                # leave the transaction open.
                batch.task = asyncio.get_running_loop().create_task(self._commit_later(batch))
            else:
                await self._writer_execute("SAVEPOINT agentctl_write")
            writer = self._writer
            assert writer is not None  # opened by connect()
            tx = _SQLiteTransaction(writer)
            try:
                yield tx
            except sqlite3.Error as exc:  # a statement failed: read-only file, disk full, ...
                await writer.rollback()
                raise map_sqlite_error(exc, self._db_path) from None
            except BaseException:
                await self._undo_member(batch)
                raise
            if batch.members:
                await self._writer_execute("RELEASE agentctl_write")
            batch.members += 1
        await asyncio.shield(batch.done)

    async def write_steps(self, steps: WriteSteps) -> Any:
        """Run a write given as steps (see `agentctl.storage.agentos.base.WriteSteps`) whole on
        the write connection's thread, in its own transaction: no round trip to that
        thread per statement; return its result.

        Group commit: the writes queued while a group is being written run together in
        the next transaction, each in its own savepoint (a write that raises undoes only
        its own statements), and share its COMMIT. The connection's thread takes the
        next group as soon as a COMMIT is done, while this loop prepares more. Each
        caller returns once the COMMIT that holds its writes is durable, or gets its error.
        """
        await self._connect_writable()
        loop = asyncio.get_running_loop()
        job: _Job = (steps, loop.create_future())
        with self._jobs_lock:
            self._jobs.append(job)
            start = not self._draining
            self._draining = True
            if not start and len(self._jobs) >= self._wake_at:
                self._jobs_ready.notify()  # the connection's thread may be waiting for it
        if start:
            self._jobs_tasks.add(task := loop.create_task(self._write_jobs(loop)))
            task.add_done_callback(self._jobs_tasks.discard)
        try:
            # Not shielded: a cancelled caller cancels its future, which _deliver then
            # skips (one loop iteration less per write than a shield's outer future).
            return await job[1]
        except asyncio.CancelledError:
            with self._jobs_lock:
                if job in self._jobs:  # not taken yet: it never runs
                    self._jobs.remove(job)
            raise

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        """The write lock, for anything but the write_steps drain: counted while it is
        waited for, so that a drain hands it over after its current group."""
        self._lock_wanted += 1
        self._wake_drain()
        try:
            await self._write_lock.acquire()
        finally:
            self._lock_wanted -= 1
        try:
            yield
        finally:
            self._write_lock.release()

    def _wake_drain(self) -> None:
        """End the connection's thread's wait for more write_steps (see `linger`)."""
        with self._jobs_lock:
            self._jobs_ready.notify()

    async def _write_jobs(self, loop: asyncio.AbstractEventLoop) -> None:
        """Holds the write lock while the connection's thread writes every queued group."""
        async with self._write_lock:
            try:
                if self._batch is not None:  # a `transaction` group waits for its COMMIT
                    await self._end_batch(self._batch, None)
                if self._writer is None:
                    self._writer = await self._open("rw")
                runner = _thread_runner(self._writer)
                if runner is None:
                    raise DatabaseError(
                        f"aiosqlite {getattr(aiosqlite, '__version__', '?')} cannot run agentctl's "
                        "writes on its thread; install aiosqlite>=0.20,<0.23")
                run_on_thread, raw = runner
                self._drain_done.clear()
                try:
                    await run_on_thread(self._drain_jobs, raw, loop)  # on the connection's thread
                except asyncio.CancelledError:
                    # The loop is closing (asyncio.run cancels every task): the thread
                    # stops waiting for more writes and is done (this blocks for a
                    # group's COMMIT at most) before the loop closes, since the drain
                    # and aiosqlite hand their results back to this loop.
                    self._closing += 1
                    self._wake_drain()
                    self._drain_done.wait(self._busy_timeout_ms / 1000 + 30)
                    self._closing -= 1
                    raise
                with self._jobs_lock:
                    more = self._draining  # it stopped for a transaction: another round
                if more:
                    self._jobs_tasks.add(task := loop.create_task(self._write_jobs(loop)))
                    task.add_done_callback(self._jobs_tasks.discard)
            except BaseException as exc:
                with self._jobs_lock:
                    jobs, self._jobs, self._draining = self._jobs, [], False
                self._deliver(jobs, None, exc)
                if not isinstance(exc, Exception):
                    raise

    def _drain_jobs(self, conn: sqlite3.Connection, loop: asyncio.AbstractEventLoop) -> None:
        """On the connection's thread: write the queued groups one after the other until
        none is left (none came within `linger` seconds of the last); the outcomes go
        back to the loop after each COMMIT.

        The writers of a group usually write again at once (agents snapshot step after
        step): the next group waits for them, as long as the last group took to write
        at most, so that they share its COMMIT. Otherwise, on a disk slower than the
        agents, they split into cohorts that commit in turns, one fsync each."""
        try:
            self._drain_groups(conn, loop)
        finally:
            self._drain_done.set()

    def _drain_groups(self, conn: sqlite3.Connection, loop: asyncio.AbstractEventLoop) -> None:
        def wanted() -> bool:
            return bool(self._jobs or self._lock_wanted or self._closing)

        def gathered() -> bool:
            return len(self._jobs) >= expect or bool(self._lock_wanted or self._closing)

        expect, patience = 0, 0.0  # the writers to wait for, and for how long
        while True:
            with self._jobs_lock:
                if not wanted() and self.linger > 0:
                    self._jobs_ready.wait_for(wanted, self.linger)
                if self._jobs and not gathered():
                    self._wake_at = expect
                    self._jobs_ready.wait_for(gathered, patience)
                    self._wake_at = 1
                jobs, self._jobs = self._jobs[:self.group_max], self._jobs[self.group_max:]
                if not jobs:
                    self._draining = False
                    return
            started = time.perf_counter()
            try:
                outcomes, error = _run_jobs(conn, [steps for steps, _ in jobs]), None
            except Exception as exc:  # BEGIN or COMMIT failed: none of them happened
                outcomes, error = None, exc
            patience = min(time.perf_counter() - started, self.linger)
            with self._jobs_lock:  # these, and the writers just written
                expect = min(len(self._jobs) + len(jobs), self.group_max)
            loop.call_soon_threadsafe(self._deliver, jobs, outcomes, error)
            if self._lock_wanted:  # a transaction waits for the write lock: it goes
                return             # first, the queued writes after it (_write_jobs)

    def _deliver(self, jobs: list["_Job"], outcomes: list[tuple[bool, Any]] | None,
                 error: BaseException | None) -> None:
        for i, (_, done) in enumerate(jobs):
            if done.done():  # its caller was cancelled
                continue
            ok, value = (False, error) if outcomes is None else outcomes[i]
            if ok:
                done.set_result(value)
            else:
                done.set_exception(map_sqlite_error(value, self._db_path)
                                   if isinstance(value, sqlite3.Error)
                                   else cast(BaseException, value))  # a failed job's outcome is its exception
                done.exception()  # retrieved: no warning when nobody waits any more

    async def _undo_member(self, batch: "_Batch") -> None:
        """Undo the statements of a body that raised (the lock is held)."""
        writer = self._writer
        if batch.members and writer is not None:
            try:
                if writer.in_transaction:
                    await writer.execute("ROLLBACK TO agentctl_write")
                    await writer.execute("RELEASE agentctl_write")
                    return
            except sqlite3.Error:
                pass
            # SQLite itself rolled the whole transaction back (an I/O error, a full disk):
            # the writes of the bodies before this one are gone too.
            await self._end_batch(batch, DatabaseError(
                f"{self._db_path}: the write was rolled back with another one in its "
                "transaction, which failed"))
        else:
            await self._end_batch(batch, None, commit=False)

    async def _commit_later(self, batch: "_Batch") -> None:
        async with self._locked():
            await self._end_batch(batch, None)

    async def _end_batch(self, batch: "_Batch", error: BaseException | None,
                         commit: bool = True) -> None:
        """COMMIT (or roll back) the group's transaction and tell its writers (lock held)."""
        if self._batch is not batch:
            return  # already ended
        self._batch = None
        writer = self._writer
        try:
            if writer is not None and writer.in_transaction:
                if commit and error is None:
                    self.write_generation += 1
                    await writer.commit()
                else:
                    await writer.rollback()
        except sqlite3.Error as exc:
            error = map_sqlite_error(exc, self._db_path)
            try:
                await writer.rollback()  # type: ignore[union-attr]
            except sqlite3.Error:
                pass
        except BaseException as exc:  # cancelled (the loop is closing): no writer waits forever
            batch.fail(DatabaseError(f"{self._db_path}: the write was interrupted"))
            raise exc
        if error is not None:
            batch.fail(error)
        else:
            batch.done.set_result(None)

    async def size_bytes(self, tables: Sequence[str] = ("checkpoints",)) -> int:
        return sum(os.path.getsize(self._db_path + suffix) for suffix in ("", "-wal")
                   if os.path.exists(self._db_path + suffix))

    async def truncate_wal(self) -> None:
        """In WAL mode, copy the WAL into the file and empty it (after a VACUUM, which
        writes the whole new file there first); nothing otherwise."""
        await self._outside_transaction("PRAGMA wal_checkpoint(TRUNCATE)")

    async def vacuum(self, tables: Sequence[str] = ("checkpoints",)) -> None:
        await self._outside_transaction("VACUUM")

    async def _outside_transaction(self, statement: str) -> None:
        """Run a statement that cannot run in a transaction (VACUUM, a WAL checkpoint)
        on the write connection, after the open group commit ends, waiting for the
        other writers like a write does."""
        await self._connect_writable()
        async with self._locked():
            if self._batch is not None:
                await self._end_batch(self._batch, None)
            await self._writer_execute(statement)

    @asynccontextmanager
    async def bulk_write(self, cache_kib: int = 65536) -> AsyncIterator[None]:
        """Inside a write transaction that rewrites pages all over the file (a prune of
        100,000 rows): the write connection's page cache is `cache_kib` KiB while the
        body runs, then its previous size again.

        SQLite's default cache (2 MB) fills with dirty pages after a few hundred rows;
        from then on the pages a statement has just read are recycled before the next
        one can change them (read twice), and every spill of a dirty page syncs the
        journal first. `cache_size` is a setting of this connection only: the file, its
        journal mode and the durability of the commit are unchanged."""
        conn = self._writer
        if conn is None or not conn.in_transaction:
            yield  # not inside a write transaction: nothing to tune
            return
        try:
            old = int(list(await conn.execute_fetchall("PRAGMA main.cache_size"))[0][0])
            await conn.execute(f"PRAGMA main.cache_size = {-int(cache_kib)}")
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None
        try:
            yield
        finally:
            try:
                await conn.execute(f"PRAGMA main.cache_size = {old}")
            except (sqlite3.Error, ValueError):  # the connection was closed meanwhile
                pass

    async def _writer_execute(self, sql: str) -> aiosqlite.Connection:
        """Run a statement on the write connection (opened on first use)."""
        try:
            if self._writer is None:
                self._writer = await self._open("rw")
            await self._writer.execute(sql)
        except sqlite3.Error as exc:
            raise map_sqlite_error(exc, self._db_path) from None
        return self._writer

    async def thread_summaries(
        self, limit: int = 50, offset: int = 0, sort: str = "updated",
        descending: bool = True, prefix: str | None = None,
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
                    "WHERE i.seqno = 0 AND i.name = 'created_at' AND l.partial = 0 LIMIT 1")
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
                "ORDER BY c.thread_id, c.step, c.created_at, c.id", *chunk)
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
            "SELECT id FROM t WHERE id IS NOT NULL", prefix, end, end, limit)
        return [r[0] for r in rows]

    async def _indexed_search(self, text: str, thread_id: str | None, role: str | None,
                              limit: int, places: frozenset[str] = frozenset(("messages", "tools", "state")),
                              ) -> list[Any] | None:
        from agentctl.storage.agentos.fts import PLACE_COLUMNS, fts_search, side_index_search
        from agentctl.storage.textindex import Unusable, fallback_note, side_path

        await self.connect()
        self._index_route = "fts"
        columns = [c for p, c in PLACE_COLUMNS if p in places]
        if len(text.lower()) >= 3 and os.path.exists(side_path(self._db_path)):
            try:
                hits = await asyncio.to_thread(side_index_search, self._db_path,
                                               self._search_condition(text, columns), text, thread_id,
                                               role, limit, places)
            except Unusable as exc:
                self.last_search_note = fallback_note(side_path(self._db_path), str(exc))
            except sqlite3.DatabaseError as exc:  # a side file damaged under our feet
                self.last_search_note = fallback_note(side_path(self._db_path), f"unreadable ({exc})")
            else:
                self._index_route = "index"
                return hits
        return await asyncio.to_thread(fts_search, self._db_path, self._search_condition(text, columns),
                                       text, thread_id, role, limit, places)

    async def search_index(self, action: str) -> dict[str, Any]:
        """The side search index (agentctl.storage.textindex): "build" (or rebuild),
        "status" or "drop"; returns its status as a dict (with "dropped" for drop)."""
        from agentctl.storage.agentos.fts import agentos_source
        from agentctl.errors import OperationError
        from agentctl.storage import textindex

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

    def _search_condition(self, text: str, columns: Sequence[str] = ("messages_blob", "tools_blob", "state_blob"),
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
    TAG_COUNTS = ("SELECT j.value AS tag, COUNT(*) AS n FROM checkpoints c, json_each(c.tags) j "
                  "WHERE json_valid(c.tags) AND json_type(c.tags) = 'array' "
                  "GROUP BY j.value ORDER BY n DESC, tag")
    INVALID_JSON = ("SELECT checkpoint_id, json_valid({c}) AS ok, CASE WHEN json_valid({c}) THEN json_type({c}) "
                    "END AS t FROM checkpoints WHERE NOT json_valid({c}) OR json_type({c}) <> ? ORDER BY id LIMIT ?")


_LIKE_MAX = 50_000  # SQLite's default SQLITE_MAX_LIKE_PATTERN_LENGTH (bytes)


class _PlainReader(SQLiteCheckpointer):
    """The backend's reads on a plain sqlite3 connection (`mode=ro`) of the calling
    thread, with no event loop: `_fetch` never suspends, so a read coroutine of the
    backend runs to its end on its first step (`run`). Same SQL, same results."""

    def __init__(self, path: str, busy_timeout_ms: int = 5000) -> None:
        super().__init__(path, readonly=True, create=False, busy_timeout_ms=busy_timeout_ms)
        self._check_path()
        try:
            self._plain = lock_waiting(self._uri("ro"), uri=True, isolation_level=None,
                                       timeout=self._busy_timeout_ms / 1000)
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
