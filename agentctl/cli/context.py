"""What every command shares: the database URL and running a coroutine."""

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
    async def open(self, write: bool = False) -> AsyncIterator[Any]:
        """The backend, read-only unless the command writes. Nothing is created."""
        from agentctl.backends import open_backend

        async with open_backend(self.db, readonly=not write, create=False) as backend:
            yield backend


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState(db="./checkpoints.db")
    return root.obj


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine. Inside a running loop (a test, a notebook) it runs on
    a private thread with its own loop, since asyncio.run cannot nest."""
    import asyncio  # here, not at the top: `agentctl --help` needs no event loop

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
