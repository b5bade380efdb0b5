"""Small pieces of SQL the storage layer writes in many places: `?` placeholders, an
`IN (...)` list a chunk at a time (SQLite's default limit is 999 parameters a
statement; Postgres takes 32,767, and a long list plans slowly on both), LIKE
escapes, SQLite's errors as agentctl's, and SQLite connections whose wait for another
process's lock ends at once when agentctl is interrupted (`connect`)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from agentctl.interrupts import INTERRUPTED

if TYPE_CHECKING:
    from agentctl.errors import AgentctlError

T = TypeVar("T")

#: rows an `IN (...)` list holds by default
CHUNK = 500


def marks(n: int) -> str:
    """`n` placeholders for an `IN (...)` list or a VALUES row: "?, ?, ?"."""
    return ", ".join("?" * n)


def chunks(items: Sequence[T] | Iterable[T], n: int = CHUNK) -> Iterator[list[T]]:
    """`items` in lists of at most `n`, in order (none for no items)."""
    seq = items if isinstance(items, list) else list(items)
    for i in range(0, len(seq), n):
        yield seq[i : i + n]  # a list slice is a new list


def in_chunks(items: Sequence[T] | Iterable[T], n: int = CHUNK) -> Iterator[tuple[str, list[T]]]:
    """(placeholders, chunk) for each chunk of `items`: `f"... IN ({ph})", *chunk`."""
    for chunk in chunks(items, n):
        yield marks(len(chunk)), chunk


def like_escape(text: str) -> str:
    """`text` for a LIKE pattern with ESCAPE '!'."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def refuse_unwritable(path: str) -> None:
    """Before a write connection opens: ReadOnlyDatabase when the file's mode lets nobody
    write it (no w bit). SQLite refuses such a file to everyone but root, whom the
    kernel lets write anything; the file's mode is honoured whoever runs agentctl."""
    import stat

    from agentctl.errors import ReadOnlyDatabase

    try:
        mode = os.stat(path).st_mode
    except OSError:  # not there (yet), or ":memory:": SQLite says what is wrong
        return
    if stat.S_ISREG(mode) and not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise ReadOnlyDatabase(
            f"{path}: the database is read-only, cannot write (the file's mode is {stat.filemode(mode)})"
        )


def map_sqlite_error(exc: sqlite3.Error, path: str) -> AgentctlError:
    """A SQLite error as the AgentctlError the user can act on (exit codes by kind)."""
    from agentctl.errors import DatabaseBusy, DatabaseError, NotADatabase, ReadOnlyDatabase

    text = str(exc)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return DatabaseBusy(f"{path}: the database is locked by another writer (waited, still busy)")
    if "readonly" in low or "read-only" in low:
        return ReadOnlyDatabase(f"{path}: the database is read-only, cannot write ({text})")
    if "not a database" in low or "malformed" in low:
        return NotADatabase(f"{path}: not a usable SQLite database ({text})")
    return DatabaseError(f"{path}: {text}")


# ---- waiting for another process's lock, and giving up when interrupted ----------------

#: Set when agentctl is interrupted (Ctrl-C, `interrupt_lock_waits`): a statement that
#: waits for another process's lock then stops waiting and fails with SQLite's own
#: "interrupted" error. (sqlite3_interrupt cannot do this: SQLite's busy handler does
#: not look at it, and a blocked call would wait its whole busy timeout; SQLite 3.40.)
_interrupted = INTERRUPTED

#: seconds of one wait for a lock (SQLite's busy timeout) between two looks at
#: `_interrupted`; the whole wait (`connect`'s timeout) is made of such steps
LOCK_STEP = 0.1

_SQLITE_BUSY = 5


def interrupt_lock_waits() -> None:
    """Make every wait for a lock of a `connect` connection end now (and any later one
    at once): agentctl was interrupted and its process ends."""
    _interrupted.set()


def connect(database: str, *, timeout: float = 5.0, **kwargs: Any) -> sqlite3.Connection:
    """`sqlite3.connect`, whose statements wait up to `timeout` seconds for another
    process's lock, as SQLite's busy timeout does, but in steps of LOCK_STEP: a wait
    stops within a step of `interrupt_lock_waits`. aiosqlite passes its keywords here
    as they are (`factory=LockWaiting, timeout=...` does the same)."""
    return sqlite3.connect(database, timeout=timeout, factory=LockWaiting, **kwargs)


class LockWaiting(sqlite3.Connection):
    """A connection whose `execute`/`executemany` (its cursors' too) wait for a lock in
    steps (see `connect`). A statement that SQLite gave up on after a step of waiting
    (SQLITE_BUSY), having changed nothing, is run again: what SQLite's busy handler
    does inside the call. One that failed without waiting (a deadlock SQLite saw, a
    WAL snapshot gone stale) fails at once, as it would have."""

    def __init__(self, database: Any, timeout: float = 5.0, *args: Any, **kwargs: Any) -> None:
        self.lock_wait = float(timeout)
        self.lock_step = min(LOCK_STEP, self.lock_wait)
        if args:  # (a caller's positional detect_types, ...: after the timeout, as sqlite3's)
            super().__init__(database, self.lock_step, *args, **kwargs)
        else:  # by keyword: Python 3.13 deprecates a positional timeout (3.15 refuses it)
            super().__init__(database, timeout=self.lock_step, **kwargs)

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or _LockWaitingCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)


class _LockWaitingCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return _waiting(self.connection, super().execute, sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        rows = parameters if isinstance(parameters, (list, tuple)) else list(parameters)
        return _waiting(self.connection, super().executemany, sql, rows)


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF == _SQLITE_BUSY
    return str(exc) == "database is locked"


def _waiting(conn: Any, run: Callable[..., T], *args: Any) -> T:
    start = time.monotonic()
    while True:
        began, changes = time.monotonic(), conn.total_changes
        try:
            return run(*args)
        except sqlite3.OperationalError as exc:
            now = time.monotonic()
            if (
                not _busy(exc)
                or conn.total_changes != changes
                or now - began < conn.lock_step / 2
                or now - start >= conn.lock_wait
            ):
                raise
            if _interrupted.is_set():
                raise sqlite3.OperationalError("interrupted") from None
