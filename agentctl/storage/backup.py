"""Backup of a live SQLite database (the backup API in one step: a consistent copy even
while agents write to it): `agentctl backup`, and the safety copy taken before destructive
writes."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path


def backup_target(src: str, dest: str) -> Path:
    """The file a backup of `src` to `dest` writes: `dest`, or in a directory `dest`
    the file of `src`'s name."""
    dest_path = Path(dest)
    return dest_path / Path(src).name if dest_path.is_dir() else dest_path


def sqlite_backup(
    src: str, dest: str, *, force: bool = False, on_step: Callable[[], None] | None = None
) -> int:
    """Copy a live SQLite database with the backup API, in one step (a consistent
    snapshot while others write, in a time bounded by the file's size). Writes a
    temporary file next to `dest` and renames it, so `dest` is never half written and
    nothing is left when the copy fails or is interrupted. Returns the bytes written.
    `on_step` is called when the pages are copied (a progress display)."""
    import sqlite3

    from agentctl.errors import DatabaseNotFound, NotFoundError, UsageError, not_a_file
    from agentctl.storage.sqlutil import map_sqlite_error

    if not os.path.isfile(src):
        raise DatabaseNotFound(f"database file not found: {src}")
    dest_path = backup_target(src, dest)
    if not dest_path.parent.is_dir():  # a typo in a folder's name is not made a folder
        raise NotFoundError(f"cannot write {dest_path}: no directory {dest_path.parent}")
    problem = not_a_file(str(dest_path))
    if problem and problem != "does not exist":
        raise UsageError(f"{dest_path} {problem}")
    if dest_path.exists() and not force:
        raise UsageError(f"{dest_path} exists; use --force to overwrite it")
    if dest_path.resolve() == Path(src).resolve():
        raise UsageError("the backup destination is the database itself")
    fd, tmp = tempfile.mkstemp(prefix=".agentctl-backup-", suffix=".db", dir=dest_path.parent)
    os.close(fd)
    try:
        source = sqlite3.connect(Path(os.path.abspath(src)).as_uri() + "?mode=ro", uri=True)
        target = sqlite3.connect(tmp)
        try:
            source.execute("PRAGMA busy_timeout = 5000")
            # All pages in one step: one read transaction on the source, so a writer
            # committing meanwhile (a live agent) neither restarts the copy nor changes
            # what it holds. In steps, the backup API starts again after every commit
            # another connection makes, and under a live writer never ends.
            source.backup(target, pages=-1)
            if on_step is not None:
                on_step()
            # a copy in rollback-journal mode is one self-contained file
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
            source.close()
        os.replace(tmp, dest_path)
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, src) from None
    finally:  # failed or interrupted (Ctrl-C): no partial file left
        for leftover in (tmp, tmp + "-journal", tmp + "-wal", tmp + "-shm"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return os.path.getsize(dest_path)


def keep_mode(src: str, written: str) -> None:
    """Give a copy the database's own permission bits (it was written through a private
    0600 temporary file): who may read the database may read the copy."""
    os.chmod(written, stat.S_IMODE(os.stat(src).st_mode))


def safety_copy(path: str, on_step: Callable[[], None] | None = None) -> str:
    """Before a destructive write (a hard delete or a purge) on SQLite: copy the file
    aside as `PATH.<UTC time>.bak` beside it, with its permission bits; the copy's path.
    What the CLI does (unless --no-backup) and the TUI's prune."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    dest = f"{path}.{stamp}.bak"
    sqlite_backup(path, dest, on_step=on_step)
    keep_mode(path, dest)
    return dest
