"""Every engine write is all-or-nothing: a failure injected before any statement of the
write (tests/support/fault_injection.py wraps the backend's transactions) leaves the
database exactly as it was, on SQLite (a full logical dump: schema, rows, sequences) and
on Postgres (every row of every table agentctl touches). Then the write runs to its end
and does change it."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support.engine_helpers import dump, make_engine, snap
from tests.support.fault_injection import fails_cleanly_then_works as fails_cleanly
from tests.support.helpers import make_cp


async def state_of(backend: Any) -> Any:
    if backend.kind == "sqlite":
        conn = sqlite3.connect(backend.path)
        try:
            return "\n".join(conn.iterdump())
        finally:
            conn.close()
    return await dump(backend)


async def fails_cleanly_then_works(backend: Any, engine: Any, op: Callable[[], Awaitable[Any]]) -> int:
    """The shared loop (tests/support/fault_injection.py) over the whole database's state."""
    assert engine.checkpointer is backend  # the faults are injected into the backend
    return await fails_cleanly(backend, lambda: state_of(backend), op, limit=200)


async def setup(backend):
    engine = make_engine(backend)
    ids = await snap(engine, "t", 6)
    return engine, ids


async def test_soft_rewind_is_atomic(backend):
    engine, ids = await setup(backend)
    await engine.branch(ids[0], "first")  # the side tables exist already, or not:
    assert await fails_cleanly_then_works(backend, engine, lambda: engine.rewind(ids[2])) > 3


async def test_first_write_creating_the_side_tables_is_atomic(backend):
    engine, ids = await setup(backend)
    assert not await backend.table_exists("agentctl_journal")
    await fails_cleanly_then_works(backend, engine, lambda: engine.rewind(ids[2]))
    assert await backend.table_exists("agentctl_journal")


async def test_hard_rewind_is_atomic(backend):
    engine, ids = await setup(backend)
    await fails_cleanly_then_works(backend, engine, lambda: engine.rewind(ids[1], hard=True))


async def test_merge_is_atomic(backend):
    engine, ids = await setup(backend)
    branch = await engine.branch(ids[2], "b")
    await engine.snapshot(branch, [], {"i": 2, "thread": "t", "new": 1}, {})
    await fails_cleanly_then_works(
        backend, engine, lambda: engine.merge_branch(branch, "t", strategy="theirs")
    )


async def test_prune_is_atomic(backend):
    engine, _ = await setup(backend)
    await fails_cleanly_then_works(backend, engine, lambda: engine.prune("t", "keep_milestones", 3))


async def test_import_is_atomic(backend):
    engine, ids = await setup(backend)
    incoming = [make_cp("t", 1, cid=ids[0], state={"replaced": True})] + [
        make_cp("imported", s) for s in range(1, 1200)
    ]
    await fails_cleanly_then_works(
        backend, engine, lambda: engine.import_checkpoints(incoming, on_conflict="replace")
    )
    assert (await backend.get(ids[0])).state == {"replaced": True}


@pytest.mark.parametrize("kind", ["rewind", "hard", "prune", "merge", "import", "delete"])
async def test_undo_is_atomic(backend, kind):
    engine, ids = await setup(backend)
    if kind == "rewind":
        await engine.rewind(ids[2])
    elif kind == "hard":
        await engine.rewind(ids[2], hard=True)
    elif kind == "prune":
        await engine.prune("t", "keep_last_n", 2)
    elif kind == "merge":
        branch = await engine.branch(ids[1], "b")
        await engine.snapshot(branch, [], {"i": 1, "thread": "t", "new": 1}, {})  # a change to merge
        await engine.merge_branch(branch, "t", strategy="theirs")
    elif kind == "import":
        await engine.import_checkpoints([make_cp("t", 1, cid=ids[0]), make_cp("u", 1)], on_conflict="replace")
    else:
        await engine.delete_thread("t")
    await fails_cleanly_then_works(backend, engine, engine.undo)


async def test_branch_delete_snapshot_and_purge_are_atomic(backend):
    engine, ids = await setup(backend)
    await fails_cleanly_then_works(backend, engine, lambda: engine.branch(ids[3], "x"))
    await fails_cleanly_then_works(backend, engine, lambda: engine.delete_thread("t"))
    gc = make_engine(backend, gc_policy="keep_last_n", gc_param=2)
    await snap(engine, "g", 4)
    await fails_cleanly_then_works(backend, gc, lambda: gc.snapshot("g", [], {}, {}))
    assert await backend.count("g") == 2
    await fails_cleanly_then_works(backend, engine, engine.purge)
