"""SQLite write_steps' drain: the connection's thread waits a little for an agent's next
snapshot (`linger`) and for the writers of its last group (so that they share a COMMIT);
a transaction or close() never waits for that, and every snapshot is committed when it
returns."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

import agentctl.storage.sql.sqlite as sqlite_backend
from agentctl.engine import CheckpointEngine
from agentctl.storage.agentos.sqlite import SQLiteCheckpointer


def committed(path) -> dict[str, list[tuple[str, int, str | None]]]:
    """What another connection sees, per thread: (id, step, parent) in step order."""
    con = sqlite3.connect(path)
    try:
        out: dict[str, list[tuple[str, int, str | None]]] = {}
        for thread, cid, step, parent in con.execute(
            "SELECT thread_id, checkpoint_id, step, parent_id FROM checkpoints ORDER BY thread_id, step"
        ):
            out.setdefault(thread, []).append((cid, step, parent))
        return out
    finally:
        con.close()


@pytest.fixture
async def backend(tmp_path):
    b = SQLiteCheckpointer(str(tmp_path / "d.db"))
    yield b
    await b.close()


def count_calls(monkeypatch, name: str) -> list[int]:
    """Counts the calls of a function of agentctl.storage.sql.sqlite (and the writes of each)."""
    calls: list[int] = []
    real = getattr(sqlite_backend, name)

    def counting(conn, jobs):
        calls.append(len(jobs))
        return real(conn, jobs)

    monkeypatch.setattr(sqlite_backend, name, counting)
    return calls


async def snap(engine: CheckpointEngine, thread: str, i: int) -> str:
    return await engine.snapshot(thread, [{"role": "user", "content": f"step {i}"}], {"i": i}, {})


async def test_one_agent_s_snapshots_are_each_committed_on_return_by_one_drain(backend, monkeypatch):
    backend.linger = 10.0  # the drain waits for the agent's next snapshot: it comes first
    groups = count_calls(monkeypatch, "_run_jobs")
    engine = CheckpointEngine(backend)
    drains_before = len(backend._jobs_tasks)
    ids = []
    for i in range(12):
        cid = await snap(engine, "a", i)
        assert committed(backend.path)["a"][-1][0] == cid  # durable on return
        ids.append(cid)
    assert groups == [1] * 12  # one COMMIT each (nothing to share with)
    assert len(backend._jobs_tasks) == drains_before + 1  # one drain, still waiting
    assert committed(backend.path)["a"] == [
        (cid, i + 1, ids[i - 1] if i else None) for i, cid in enumerate(ids)
    ]


async def test_a_transaction_does_not_wait_for_a_lingering_drain(backend):
    backend.linger = 30.0
    engine = CheckpointEngine(backend)
    await snap(engine, "a", 0)
    assert backend._jobs_tasks  # the drain lingers

    async def tx() -> None:
        async with backend.transaction() as t:
            await t.execute("UPDATE checkpoints SET summary = 'from a transaction'")

    await asyncio.wait_for(tx(), 10)
    cid = await asyncio.wait_for(snap(engine, "a", 1), 10)  # and snapshots go on after it
    assert [c for c, _, _ in committed(backend.path)["a"]][-1] == cid


async def test_close_does_not_wait_for_a_lingering_drain(tmp_path):
    b = SQLiteCheckpointer(str(tmp_path / "c.db"))
    b.linger = 30.0
    cid = await snap(CheckpointEngine(b), "a", 0)
    await asyncio.wait_for(b.close(), 10)
    assert not b._jobs_tasks
    assert committed(b.path)["a"][0][0] == cid


@pytest.mark.parametrize("linger", [0.0, 0.005, 5.0])
async def test_agents_keep_their_order_and_share_commits(backend, monkeypatch, linger):
    backend.linger = linger
    groups = count_calls(monkeypatch, "_run_jobs")
    engine = CheckpointEngine(backend)

    async def agent(k: int) -> list[str]:
        out = []
        for i in range(10):
            out.append(await snap(engine, f"agent-{k}", i))
            assert committed(backend.path)[f"agent-{k}"][-1][0] == out[-1]
        return out

    ids = await asyncio.gather(*(agent(k) for k in range(8)))
    seen = committed(backend.path)
    for k, cids in enumerate(ids):
        assert seen[f"agent-{k}"] == [(cid, i + 1, cids[i - 1] if i else None) for i, cid in enumerate(cids)]
    assert sum(groups) == 80 and len(groups) < 80  # grouped: fewer COMMITs than snapshots


async def test_a_group_does_not_wait_for_a_writer_that_stopped(backend, monkeypatch):
    """After a group of two, one agent stops: the other's snapshots wait at most about
    as long as a group took to write, not `linger`, for the missing one."""
    backend.linger = 30.0
    groups = count_calls(monkeypatch, "_run_jobs")
    engine = CheckpointEngine(backend)
    await asyncio.gather(snap(engine, "a", 0), snap(engine, "b", 0))
    for i in range(1, 6):
        await asyncio.wait_for(snap(engine, "a", i), 10)
    assert sum(groups) == 7
    assert len(committed(backend.path)["a"]) == 6


def test_one_backend_across_event_loops(tmp_path):
    """The seeds' usage: `asyncio.run` per call with one engine. Each loop's end stops
    the drain waiting for more writes (it is done before the loop closes), so the next
    loop's snapshots are written, and no thread reports a closed loop."""
    import threading

    errors: list[BaseException] = []
    hook, threading.excepthook = threading.excepthook, lambda args: errors.append(args.exc_value)
    try:
        b = SQLiteCheckpointer(str(tmp_path / "loops.db"))
        b.linger = 30.0
        engine = CheckpointEngine(b)
        ids = [asyncio.run(asyncio.wait_for(snap(engine, "a", i), 10)) for i in range(4)]
        asyncio.run(b.close())
    finally:
        threading.excepthook = hook
    assert errors == []
    assert committed(b.path)["a"] == [(cid, i + 1, ids[i - 1] if i else None) for i, cid in enumerate(ids)]
