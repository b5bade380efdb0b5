"""What every command shares: the database URL, opening it, running a coroutine."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Coroutine, TypeVar

import typer

T = TypeVar("T")


@dataclass
class CliState:
    db: str

    @asynccontextmanager
    async def open(self, write: bool = False, create: bool = False) -> AsyncIterator[Any]:
        """The backend, read-only unless the command writes. Nothing is created unless
        `create` (import --create)."""
        from agentctl.backends import open_backend

        async with open_backend(self.db, readonly=not write, create=create and write) as backend:
            yield backend

    @asynccontextmanager
    async def engine(self, write: bool = True, create: bool = False) -> AsyncIterator[tuple[Any, Any]]:
        """(backend, CheckpointEngine over it), opened for writing unless `write=False`
        (the engine's plans and reads write nothing)."""
        from agentctl.engine import CheckpointEngine

        async with self.open(write=write, create=create) as backend:
            yield backend, CheckpointEngine(backend)

    def sqlite_path(self) -> str | None:
        """The file path when the database is SQLite, else None."""
        from agentctl.backends import parse_url

        kind, target = parse_url(self.db)
        return target if kind == "sqlite" else None


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
        box["value"] = await coro

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
