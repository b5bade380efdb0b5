"""Run the agentctl command line with a test-only pause inside its write transaction,
so a test can kill it there (kill -9) and check that nothing of the write remains.

    python tests/paused_agentctl.py READY_FILE POINT -- AGENTCTL_ARGS...

POINT is where the write stops, never to go on:
- `first-change`: right after the first statement that changed the `checkpoints`
  table (an INSERT INTO / UPDATE / DELETE FROM checkpoints, or a put);
- `commit`: after the last statement, just before the commit.
There the process creates READY_FILE and sleeps. The hook wraps the backends' public
`transaction()` (every write of the engine goes through it); agentctl's code is
otherwise untouched.
"""

from __future__ import annotations

import re
import sys
import time
from contextlib import asynccontextmanager
from typing import Any

_CHANGES_CHECKPOINTS = re.compile(r"^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+checkpoints\b", re.I)


def pause_forever(ready: str) -> None:
    with open(ready, "w") as f:
        f.write("paused\n")
    while True:  # blocks the event loop too: the transaction stays open
        time.sleep(60)


class _Watched:
    """A transaction that pauses after its first change to `checkpoints`."""

    def __init__(self, tx: Any, ready: str):
        self._tx = tx
        self._ready = ready

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    async def execute(self, sql: str, *params: Any) -> int:
        n = await self._tx.execute(sql, *params)
        if _CHANGES_CHECKPOINTS.match(sql):
            pause_forever(self._ready)
        return n

    async def executemany(self, sql: str, rows: Any) -> None:
        await self._tx.executemany(sql, rows)
        if _CHANGES_CHECKPOINTS.match(sql):
            pause_forever(self._ready)

    async def put(self, checkpoint: Any) -> str:
        cid = await self._tx.put(checkpoint)
        pause_forever(self._ready)
        return cid


def install(ready: str, point: str) -> None:
    from agentctl.backends.postgres import PostgresCheckpointer
    from agentctl.backends.sqlite import SQLiteCheckpointer

    if point not in ("first-change", "commit"):
        raise SystemExit(f"unknown pause point {point!r}")
    for cls in (SQLiteCheckpointer, PostgresCheckpointer):
        original = cls.transaction

        def wrap(original: Any) -> Any:
            @asynccontextmanager
            async def transaction(self: Any, lock_threads: Any = ()) -> Any:
                async with original(self, lock_threads) as tx:
                    if point == "first-change":
                        yield _Watched(tx, ready)
                    else:
                        yield tx
                        pause_forever(ready)

            return transaction

        cls.transaction = wrap(original)


def main() -> None:
    ready, point, sep, *args = sys.argv[1:]
    assert sep == "--", "usage: paused_agentctl.py READY_FILE POINT -- ARGS..."
    install(ready, point)
    from agentctl.cli import main as agentctl_main

    sys.argv = ["agentctl", *args]
    agentctl_main()


if __name__ == "__main__":
    main()
