"""Typed errors and the exit codes they map to.

Every error agentctl raises on purpose is an `AgentctlError`; the CLI catches them
at one place, prints `agentctl: <message>` on stderr and exits with `exit_code`.
Messages never contain a DSN password (use `redact_dsn`).
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1  # anything else that went wrong
    USAGE = 2  # bad arguments or options
    NOT_FOUND = 3  # database file, thread, checkpoint or operation does not exist
    CONFLICT = 4  # merge conflict, nothing written
    PROBLEMS = 5  # `doctor` found problems
    DATABASE = 6  # the database cannot be used: not SQLite, wrong schema, refused, locked, read-only


class AgentctlError(Exception):
    exit_code: ExitCode = ExitCode.ERROR
    #: the message already says that nothing was changed (a write refused or rolled back
    #: before it changed anything): a caller does not say it again
    nothing_changed: bool = False

    def __init__(self, message: str, *, nothing_changed: bool | None = None):
        super().__init__(message)
        self.message = message
        if nothing_changed is not None:
            self.nothing_changed = nothing_changed

    def __str__(self) -> str:
        return self.message


class UsageError(AgentctlError):
    exit_code = ExitCode.USAGE


class NotFoundError(AgentctlError, ValueError):
    """Subclasses ValueError: AgentOS's callers catch ValueError ("... not found")."""

    exit_code = ExitCode.NOT_FOUND


class CheckpointNotFound(NotFoundError):
    def __init__(self, ref: str, suggestions: list[str] | None = None):
        self.ref = ref
        self.suggestions = list(suggestions or [])
        msg = f"checkpoint {ref!r} not found"
        if self.suggestions:
            msg += "; closest: " + ", ".join(self.suggestions)
        super().__init__(msg)


class ThreadNotFound(NotFoundError):
    def __init__(self, thread_id: str, suggestions: list[str] | None = None):
        self.thread_id = thread_id
        self.suggestions = list(suggestions or [])
        msg = f"thread {thread_id!r} not found"
        if self.suggestions:
            msg += "; closest: " + ", ".join(self.suggestions)
        super().__init__(msg)


class AmbiguousReference(UsageError):
    def __init__(self, ref: str, candidates: list[str]):
        self.ref = ref
        self.candidates = candidates
        super().__init__(f"reference {ref!r} is ambiguous; it matches: " + ", ".join(candidates))


def not_a_file(path: str) -> str | None:
    """Why `path` is not a file a command can read: what it is instead ("is a directory",
    "is a character device", "does not exist"), or None for a regular file or a pipe
    (`<(zcat x.gz)`)."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return f"is {what}, not a file"
    return "is not a regular file"


class DatabaseError(AgentctlError):
    """The database cannot be used as a checkpoint database."""

    exit_code = ExitCode.DATABASE


class DatabaseNotFound(NotFoundError):
    pass


class NotADatabase(DatabaseError):
    pass


class SchemaError(DatabaseError):
    pass


class ConnectionFailed(DatabaseError):
    pass


class DatabaseBusy(DatabaseError):
    pass


class GaveWay(DatabaseBusy):
    """A write transaction on another program's tables (LangGraph's, the SDKs') waited
    on that program's lock longer than its `lock_timeout`, or was part of a deadlock,
    and was rolled back: nothing was changed. `History`'s writes retry it."""

    nothing_changed = True

    def __init__(self, where: str):
        self.where = where
        super().__init__(
            f"{where}: another program is writing the same rows (a live agent?); "
            "agentctl gave way, nothing was changed; try again"
        )


class ReadOnlyDatabase(DatabaseError):
    pass


class CorruptRowError(DatabaseError):
    """One row cannot be decoded; the other rows still read."""

    def __init__(self, checkpoint_id: str, column: str, reason: str):
        self.checkpoint_id = checkpoint_id
        self.column = column
        self.reason = reason
        super().__init__(f"checkpoint {checkpoint_id!r}: {column} is not usable: {reason}")


class SnapshotTooLarge(AgentctlError, ValueError):
    pass


class MergeConflictError(AgentctlError):
    exit_code = ExitCode.CONFLICT

    nothing_changed = True

    def __init__(self, conflicts: list[Any], message: str | None = None):
        self.conflicts = conflicts
        n = len(conflicts)
        super().__init__(message or f"merge has {n} conflict{'s' if n != 1 else ''}; nothing was written")


class OperationError(AgentctlError):
    """A write cannot be carried out as asked (e.g. undo of a stale op)."""


class NothingToMerge(OperationError):
    """The target already holds the branch's head (found by the merge's own transaction:
    another writer may have got there since the plan)."""


_DSN_PASSWORD = re.compile(r"(://[^:/@\s]*:)([^@\s]*)(@)")
_KV_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def redact_dsn(text: str) -> str:
    """Replace any password in a DSN-looking string (URL or key=value form) by ***."""
    text = _DSN_PASSWORD.sub(r"\1***\3", text)
    return _KV_PASSWORD.sub(r"\1***", text)
