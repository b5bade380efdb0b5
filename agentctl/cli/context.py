"""What every command shares: the database URL, opening it, running a coroutine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import typer

T = TypeVar("T")


@dataclass
class CliState:
    db: str
    format: str | None = None
    #: set when the command first opens the database for writing: the newest op id in
    #: the log then (None: unknown), for the line Ctrl-C prints (cli/writes.py)
    writing: bool = False
    op_before: int | None = None

    @asynccontextmanager
    async def open(
        self, write: bool = False, create: bool = False, need: str | None = None, note: bool = True
    ) -> AsyncIterator[Any]:
        """The store of the database's format (agentctl.storage), read-only unless the
        command writes. Nothing is created unless `create` (import --create, AgentOS).
        `need`: a Capability the command needs; without it, exit 2 naming the format.
        `note`: a write is noted at once (else the command calls `note_write` itself,
        right before it writes: cli/writes.py's `perform`, after its question)."""
        from contextlib import AsyncExitStack

        from agentctl.errors import DatabaseNotFound
        from agentctl.storage import open_store

        async with AsyncExitStack() as stack:
            try:
                store = await stack.enter_async_context(
                    open_store(self.db, format=self.format, readonly=not write, create=create and write)
                )
            except DatabaseNotFound as exc:
                hint = relative_sqlite_url_hint(self.db)
                if not hint:
                    raise
                raise DatabaseNotFound(f"{exc} ({hint})") from None
            if need is not None:
                store.require(need, _OPERATION.get(need, need))
            if write and note:
                await note_write(self, store)
            yield store

    @asynccontextmanager
    async def history(
        self, write: bool = True, create: bool = False, need: str | None = None
    ) -> AsyncIterator[tuple[Any, Any]]:
        """(store, its History: the writes of its format), opened for writing unless
        `write=False` (plans and reads write nothing)."""
        async with self.open(write=write, create=create, need=need) as store:
            yield store, store.history()

    def sqlite_path(self) -> str | None:
        """The database's file when it is one on this machine (SQLite), else None: what
        its store's `local_file` says (the storage layer knows the backends' kinds)."""
        from agentctl.storage import local_file

        return local_file(self.db)


def relative_sqlite_url_hint(url: str) -> str:
    """For sqlite:///PATH (three slashes): that PATH is relative, as SQLAlchemy reads it,
    and an absolute one takes four; '' for any other URL."""
    if not url.lower().startswith("sqlite:///") or url.lower().startswith("sqlite:////"):
        return ""
    path = url[len("sqlite:///") :]
    if "/" not in path:  # a file name: plainly relative
        return ""
    return (
        f"sqlite:///{path} is {path} in the current directory, as in SQLAlchemy; "
        f"the absolute /{path} is sqlite:////{path}, with four slashes"
    )


# import: export reads every format, so the refusal names import alone
_OPERATION = {"delete": "threads delete", "undo": "undo", "import": "import (export works on every format)"}


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState(db=root.params.get("db") or "./checkpoints.db")
    return root.obj


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine. Inside a running loop (a test, a notebook) it runs on
    a private thread with its own loop, since asyncio.run cannot nest."""
    import asyncio  # here, not at the top: `agentctl --help` needs no event loop

    box: dict[str, Any] = {}

    async def main() -> None:
        # The result is handed over in `box`, not as the task's result: when asyncio.run
        # restores the SIGINT handler it builds (and drops) an error message holding
        # repr(main task), result included, which for a 5 MB state or 10,000 rows took
        # longer than the command itself (CPython 3.11, signal._int_to_enum).
        restore = _end_lock_waits_on_sigint()
        try:
            box["value"] = await coro
        except BaseException as exc:
            task = asyncio.current_task()
            if task is not None and getattr(task, "cancelling", lambda: 0)():  # Ctrl-C
                _quiet_threads()
                if isinstance(exc, Exception):
                    # The cancellation came out as another error (a write told it was
                    # interrupted): asyncio.run then raises KeyboardInterrupt, which
                    # the CLI reports with what is true.
                    raise asyncio.CancelledError() from None
            raise
        finally:
            restore()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(main())
        return box["value"]
    import threading

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _end_lock_waits_on_sigint() -> Callable[[], None]:
    """On the main thread, inside asyncio.run: make Ctrl-C also end a SQLite wait for
    another process's lock at once (agentctl.storage.sqlutil), where asyncio's own
    handler only cancels the command, which the blocked call would keep waiting the
    whole busy timeout. Returns what puts asyncio's handler back (which asyncio.run
    then removes)."""
    import signal
    import threading

    handler = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(handler):
        return lambda: None

    from agentctl.interrupts import INTERRUPTED  # (the standard library only)

    def on_sigint(signum: int, frame: Any) -> None:
        INTERRUPTED.set()  # a lock wait, now or once the storage layer is imported, ends
        handler(signum, frame)

    def restore() -> None:
        signal.signal(signal.SIGINT, handler)

    signal.signal(signal.SIGINT, on_sigint)
    return restore


def _quiet_threads() -> None:
    """After Ctrl-C the command ends: a database driver's thread that finishes its
    statement after the event loop closed (a connection being opened) must not print a
    traceback over the one line that says what is true."""
    import threading

    threading.excepthook = lambda args: None


async def note_write(st: CliState, store: Any) -> None:
    """Called when a command opens the database for writing, before it writes: remember
    the newest operation of the log, so that after Ctrl-C `interrupted_line` can tell
    whether the write committed (every write records its op in the same transaction)."""
    if st.writing:
        return
    try:
        ops = await store.history().oplog(1)
        before: int | None = ops[0].op_id if ops else 0
    except Exception:  # noqa: BLE001 - no op log to read: the check says it could not tell
        before = None
    st.writing, st.op_before = True, before
