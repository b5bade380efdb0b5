"""Online backup of a SQLite database (the backup API: a consistent copy even while
agents write to it): `agentctl backup`, and the safety copy taken before destructive
writes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable


def sqlite_backup(src: str, dest: str, *, force: bool = False,
                  on_step: Callable[[], None] | None = None) -> int:
    """Copy a live SQLite database with the online backup API (a consistent snapshot
    while others write). Writes a temporary file next to `dest` and renames it, so
    `dest` is never half written. Returns the bytes written. `on_step` is called
    after each chunk of pages (a progress display)."""
    import sqlite3

    from agentctl.backends.sqlite import map_sqlite_error
    from agentctl.errors import DatabaseNotFound, UsageError

    if not os.path.isfile(src):
        raise DatabaseNotFound(f"database file not found: {src}")
    dest_path = Path(dest)
    if dest_path.is_dir():
        dest_path = dest_path / Path(src).name
    if dest_path.exists() and not force:
        raise UsageError(f"{dest_path} exists; use --force to overwrite it")
    if dest_path.resolve() == Path(src).resolve():
        raise UsageError("the backup destination is the database itself")
    dest_path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".agentctl-backup-", suffix=".db", dir=dest_path.parent)
    os.close(fd)
    try:
        source = sqlite3.connect(Path(os.path.abspath(src)).as_uri() + "?mode=ro", uri=True)
        target = sqlite3.connect(tmp)
        try:
            def step(status: int, remaining: int, total: int) -> None:
                if on_step is not None:
                    on_step()

            source.execute("PRAGMA busy_timeout = 5000")
            source.backup(target, pages=4096, progress=step)
            # a copy in rollback-journal mode is one self-contained file
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
            source.close()
        os.replace(tmp, dest_path)
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, src) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return os.path.getsize(dest_path)
