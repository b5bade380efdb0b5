"""Small pieces of SQL the storage layer writes in many places: `?` placeholders, an
`IN (...)` list a chunk at a time (SQLite's default limit is 999 parameters a
statement; Postgres takes 32,767, and a long list plans slowly on both), LIKE
escapes, and SQLite's errors as agentctl's."""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence, TypeVar

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
        yield seq[i:i + n]  # a list slice is a new list


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
        raise ReadOnlyDatabase(f"{path}: the database is read-only, cannot write "
                               f"(the file's mode is {stat.filemode(mode)})")


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
