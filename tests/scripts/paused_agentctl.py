"""Run the agentctl command line with a test-only pause inside its write transaction,
so a test can kill it there (kill -9) and check that nothing of the write remains.

    python tests/scripts/paused_agentctl.py READY_FILE POINT -- AGENTCTL_ARGS...

POINT is where the write stops:
- `first-change`: right after the first statement that changed the `checkpoints`
  table (an INSERT INTO / UPDATE / DELETE FROM checkpoints, or a put);
- `before-first-change`: just before that statement;
- `commit`: after the last statement, just before the commit.
There the process creates READY_FILE and sleeps: for ever, or, when the environment
variable AGENTCTL_TEST_RESUME_FILE names a file, until that file exists (then the
write goes on). The hook wraps the backends' public `transaction()` (every write of
the engine goes through it); agentctl's code is otherwise untouched.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import asynccontextmanager
from typing import Any

_CHANGES_CHECKPOINTS = re.compile(r'^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?checkpoints\b', re.I)


def pause(ready: str) -> None:
    with open(ready, "w") as f:
        f.write("paused\n")
    resume = os.environ.get("AGENTCTL_TEST_RESUME_FILE")
    # blocks the event loop too: the transaction stays open
    while not (resume and os.path.exists(resume)):
        time.sleep(0.02)


class _Watched:
    """A transaction that pauses once, before or after its first change to `checkpoints`."""

    def __init__(self, tx: Any, ready: str, before: bool):
        self._tx = tx
        self._ready = ready
        self._before = before
        self._paused = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def _pause(self, changes: bool, before: bool) -> None:
        if changes and before == self._before and not self._paused:
            self._paused = True
            pause(self._ready)

    async def execute(self, sql: str, *params: Any) -> int:
        self._pause(bool(_CHANGES_CHECKPOINTS.match(sql)), True)
        n = await self._tx.execute(sql, *params)
        self._pause(bool(_CHANGES_CHECKPOINTS.match(sql)), False)
        return n

    async def execute_each(self, statements: Any) -> list[int]:
        # one by one here, so that the pause falls between them (SQLite runs them in one call)
        return [await self.execute(sql, *params) for sql, params in statements]

    async def executemany(self, sql: str, rows: Any) -> None:
        self._pause(bool(_CHANGES_CHECKPOINTS.match(sql)), True)
        await self._tx.executemany(sql, rows)
        self._pause(bool(_CHANGES_CHECKPOINTS.match(sql)), False)

    async def put(self, checkpoint: Any, blobs: Any = None) -> str:
        self._pause(True, True)
        cid = await self._tx.put(checkpoint, blobs)
        self._pause(True, False)
        return cid


def install(ready: str, point: str) -> None:
    from agentctl.storage.agentos.postgres import PostgresCheckpointer
    from agentctl.storage.agentos.sqlite import SQLiteCheckpointer

    if point not in ("first-change", "before-first-change", "commit"):
        raise SystemExit(f"unknown pause point {point!r}")
    for cls in (SQLiteCheckpointer, PostgresCheckpointer):
        original = cls.transaction

        def wrap(original: Any) -> Any:
            @asynccontextmanager
            async def transaction(self: Any, lock_threads: Any = ()) -> Any:
                async with original(self, lock_threads) as tx:
                    if point == "commit":
                        yield tx
                        pause(ready)
                    else:
                        yield _Watched(tx, ready, before=point == "before-first-change")

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
