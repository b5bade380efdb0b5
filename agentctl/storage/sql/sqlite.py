"""SQLite connections on aiosqlite: what every format's store on a SQLite file opens.

- Read-only (the debugger's default): the file must exist and pass the format's schema
  check; reads go through a `mode=ro` connection, so nothing is created and the journal
  mode is never changed. A write connection (`mode=rw`, waiting for other processes'
  locks) opens only when a write transaction is asked for.
- Writes: `transaction()` (BEGIN IMMEDIATE, group commit) and `write_steps` (a write
  run whole on the connection's thread); `close()` checkpoints the WAL after a write and
  closes the write connection last, so the file alone holds the write.
- `create=True` (AgentOS's checkpointer as a library): the file and the format's tables
  (`create_schema`) are created when missing, a new file in WAL mode.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import aiosqlite

from agentctl.errors import (
    DatabaseError,
    DatabaseNotFound,
    NotADatabase,
    ReadOnlyDatabase,
    SchemaError,
    UsageError,
)
from agentctl.storage.sql.conn import Check, Connection, Transaction, WriteSteps
from agentctl.storage.sqlutil import LockWaiting, map_sqlite_error, refuse_unwritable
from agentctl.storage.sqlutil import connect as lock_waiting

#: the tables and columns of a SQLite file, as (table, column) rows (a schema check's)
COLUMNS_SQL = (
    "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
    "WHERE m.type IN ('table', 'view')"
)


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


class SQLiteTransaction(Transaction):
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
            else:  # ("call", function): function(conn), a format's own step (steps_of)
                result = op[1](conn)
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


class SQLiteConnection(Connection):
    """A SQLite file (see the module doc); `check` the format's schema check (or
    override `_check_schema`)."""

    kind = "sqlite"
    #: the most writes of `write_steps` that share one transaction (bounds its latency)
    group_max = 256
    #: seconds the connection's thread waits for the next `write_steps` after the last
    #: queued one is written, before it hands the write lock back: an agent's next
    #: snapshot then reaches that thread in one wake-up, not a task, the lock and
    #: aiosqlite's queue (a transaction asking for the lock ends the wait at once)
    linger = 0.005
    #: the class of `transaction()`'s transactions
    transaction_class: type[SQLiteTransaction] = SQLiteTransaction

    def steps_of(self, steps: WriteSteps) -> WriteSteps:
        """A write's steps as the connection's thread runs them: a format turns its own
        steps into ("call", function of the sqlite3 connection) here."""
        return steps

    def __init__(
        self,
        db_path: str = "checkpoints.db",
        *,
        readonly: bool = False,
        create: bool = True,
        busy_timeout_ms: int = 5000,
        check: Check | None = None,
    ):
        if check is not None:
            self.check = check
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
        if create and not readonly:
            self._create_if_missing()

    @property
    def path(self) -> str:
        return self._db_path

    @property
    def _target(self) -> str:
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
                conn.executescript("BEGIN;" + self.create_schema + "COMMIT;")
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
        pending = aiosqlite.connect(
            self._uri(mode),
            uri=True,
            isolation_level=None,
            timeout=self._busy_timeout_ms / 1000,
            factory=LockWaiting,
        )
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
        """The format's `check` on the file's tables and columns."""
        try:  # execute_fetchall: one round trip to the connection's thread, not three
            rows = await conn.execute_fetchall(COLUMNS_SQL)
        except sqlite3.DatabaseError as exc:
            raise self._schema_error(exc) from None
        self._checked(rows)

    def _schema_error(self, exc: sqlite3.DatabaseError) -> Exception:
        if "not a database" in str(exc).lower():
            return NotADatabase(f"{self._db_path} is not a SQLite database")
        return map_sqlite_error(exc, self._db_path)

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

    async def query_apart(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[dict[str, Any]]]:
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

    @asynccontextmanager
    async def transaction(self, lock_threads: Sequence[str] = ()) -> AsyncIterator[Any]:
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
            tx = self.transaction_class(writer)
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
        """Run a write given as steps (see `conn.WriteSteps`) whole on
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
        job: _Job = (self.steps_of(steps), loop.create_future())
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
                        "writes on its thread; install aiosqlite>=0.20,<0.23"
                    )
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
                jobs, self._jobs = self._jobs[: self.group_max], self._jobs[self.group_max :]
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
                return  # first, the queued writes after it (_write_jobs)

    def _deliver(
        self, jobs: list[_Job], outcomes: list[tuple[bool, Any]] | None, error: BaseException | None
    ) -> None:
        for i, (_, done) in enumerate(jobs):
            if done.done():  # its caller was cancelled
                continue
            ok, value = (False, error) if outcomes is None else outcomes[i]
            if ok:
                done.set_result(value)
            else:
                done.set_exception(
                    map_sqlite_error(value, self._db_path)
                    if isinstance(value, sqlite3.Error)
                    else cast(BaseException, value)
                )  # a failed job's outcome is its exception
                done.exception()  # retrieved: no warning when nobody waits any more

    async def _undo_member(self, batch: _Batch) -> None:
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
            await self._end_batch(
                batch,
                DatabaseError(
                    f"{self._db_path}: the write was rolled back with another one in its "
                    "transaction, which failed"
                ),
            )
        else:
            await self._end_batch(batch, None, commit=False)

    async def _commit_later(self, batch: _Batch) -> None:
        async with self._locked():
            await self._end_batch(batch, None)

    async def _end_batch(self, batch: _Batch, error: BaseException | None, commit: bool = True) -> None:
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
        return sum(
            os.path.getsize(self._db_path + suffix)
            for suffix in ("", "-wal")
            if os.path.exists(self._db_path + suffix)
        )

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
