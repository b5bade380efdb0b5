"""The floor of one agent's durable snapshots written off the event loop.

`python bench/run.py _snapshots bare N DIR 1` is the floor of a durable commit per
snapshot in one thread. A writer that keeps the agent's asyncio loop free (as
agentctl's does: its SQLite writes run on the connection's thread) adds two hand-offs
per snapshot, the write to that thread and its outcome back to the loop. This is that
bare loop with only those two hand-offs added: the same rows (payload, JSON, BEGIN
IMMEDIATE + INSERT + COMMIT, WAL, synchronous=FULL), each handed to one dedicated thread
(a Condition it waits on) and its result back to the loop (call_soon_threadsafe setting
a future the agent awaits). No retention, no ids, no checks.

    python bench/snapshot_floor.py N DIR      # prints {"value": snapshots/s}
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_db import SQLITE_INDEX_DDL, SQLITE_TABLE_DDL  # noqa: E402
from run import ROW_SQL, plain_row  # noqa: E402


def thread_floor(n: int, workdir: str) -> float:
    path = tempfile.mktemp(prefix="snap-floor-", suffix=".db", dir=workdir)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.executescript(SQLITE_TABLE_DDL + "\n".join(SQLITE_INDEX_DDL))
    ready = threading.Condition()
    jobs: list[tuple[tuple[Any, ...], asyncio.Future[str], asyncio.AbstractEventLoop]] = []
    stop = [False]

    def writer() -> None:
        while True:
            with ready:
                ready.wait_for(lambda: bool(jobs) or stop[0])
                if not jobs:
                    return
                row, done, loop = jobs.pop(0)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT " + ROW_SQL, row)
            conn.execute("COMMIT")
            loop.call_soon_threadsafe(done.set_result, row[1])

    thread = threading.Thread(target=writer)
    thread.start()

    async def agent() -> float:
        loop = asyncio.get_running_loop()
        parent = None
        t0 = time.perf_counter()
        for step in range(1, n + 1):
            parent, row = plain_row("floor", step, parent)
            done = loop.create_future()
            with ready:
                jobs.append((row, done, loop))
                ready.notify()
            await done
        return time.perf_counter() - t0

    try:
        seconds = asyncio.run(agent())
    finally:
        with ready:
            stop[0] = True
            ready.notify()
        thread.join()
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    return n / seconds


if __name__ == "__main__":
    print(json.dumps({"value": thread_floor(int(sys.argv[1]), sys.argv[2])}))
