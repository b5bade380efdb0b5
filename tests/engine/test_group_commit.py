"""SQLite group commit: write transactions that wait for the write lock share one COMMIT,
each still atomic, isolated from the others' failures, and durable when it returns."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from agentctl.engine import CheckpointEngine
from agentctl.storage.agentos.sqlite import SQLiteCheckpointer
from tests.support.helpers import make_cp


class Boom(Exception):
    pass


def committed_ids(path) -> set[str]:
    """What another connection sees: only committed rows."""
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT checkpoint_id FROM checkpoints")}
    finally:
        con.close()


@pytest.fixture
async def backend(tmp_path):
    b = SQLiteCheckpointer(str(tmp_path / "g.db"))
    yield b
    await b.close()


async def test_waiting_writers_share_commits_and_each_is_committed_on_return(backend):
    commits = 0
    await backend.connect()
    async with backend.transaction() as tx:  # opens the write connection
        await tx.put(make_cp("warm", 1))
    real_commit = backend._writer.commit

    async def counting_commit():
        nonlocal commits
        commits += 1
        await real_commit()

    backend._writer.commit = counting_commit
    seen_on_return: dict[str, bool] = {}

    async def writer(i: int) -> None:
        cid = f"c{i}"
        async with backend.transaction() as tx:
            await tx.put(make_cp(f"t{i % 3}", i, cid=cid))
            await tx.fetch("SELECT COUNT(*) AS n FROM checkpoints")
        seen_on_return[cid] = cid in committed_ids(backend.path)

    await asyncio.gather(*(writer(i) for i in range(20)))
    assert seen_on_return == {f"c{i}": True for i in range(20)}
    assert 1 <= commits < 20  # grouped: fewer COMMITs (fsyncs) than writers


async def test_a_failing_writer_undoes_only_its_own_writes(backend):
    async def good(i: int) -> None:
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", i, cid=f"ok{i}"))

    async def bad() -> None:
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", 100, cid="bad"))
            await tx.execute("UPDATE checkpoints SET summary = 'clobbered'")
            raise Boom()

    results = await asyncio.gather(good(1), bad(), good(2), bad(), good(3), return_exceptions=True)
    assert [type(r) for r in results] == [type(None), Boom, type(None), Boom, type(None)]
    assert committed_ids(backend.path) == {"ok1", "ok2", "ok3"}
    assert {m.summary for m in await backend.read_thread("t")} == {"step 1", "step 2", "step 3"}


async def test_the_first_writer_failing_does_not_lose_the_others(backend):
    started = asyncio.Event()

    async def first() -> None:
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", 1, cid="first"))
            started.set()
            await asyncio.sleep(0.05)  # the others queue up behind it meanwhile
            raise Boom()

    async def later(i: int) -> None:
        await started.wait()
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", i, cid=f"later{i}"))

    results = await asyncio.gather(first(), later(2), later(3), return_exceptions=True)
    assert isinstance(results[0], Boom) and results[1:] == [None, None]
    assert committed_ids(backend.path) == {"later2", "later3"}


@pytest.mark.parametrize("how", ["transaction", "write_steps"])
async def test_a_cancelled_waiter_leaves_no_transaction_open_and_writes_nothing(backend, how):
    gate = asyncio.Event()

    async def holder() -> None:
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", 1, cid="held"))
            await gate.wait()

    async def waiter(cid: str) -> None:
        if how == "write_steps":
            await backend.write_steps(put_steps(cid))
            return
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", 2, cid=cid))

    h = asyncio.create_task(holder())
    await asyncio.sleep(0.01)
    w = asyncio.create_task(waiter("cancelled2"))
    await asyncio.sleep(0.01)
    w.cancel()
    gate.set()
    await asyncio.wait_for(h, 5)
    with pytest.raises(asyncio.CancelledError):
        await w
    await asyncio.wait_for(waiter("after3"), 5)
    assert committed_ids(backend.path) == {"held", "after3"}


async def test_concurrent_agents_snapshot_in_order(backend):
    engine = CheckpointEngine(backend)

    async def agent(k: int) -> list[str]:
        return [
            await engine.snapshot(f"agent-{k}", [{"role": "user", "content": str(i)}], {"i": i}, {})
            for i in range(15)
        ]

    ids = await asyncio.gather(*(agent(k) for k in range(6)))
    for k, cids in enumerate(ids):
        metas = await backend.read_thread(f"agent-{k}")
        assert [m.checkpoint_id for m in metas] == cids
        assert [m.step for m in metas] == list(range(1, 16))
        assert [m.parent_checkpoint_id for m in metas] == [None] + cids[:-1]
    assert len(committed_ids(backend.path)) == 90


# ---- write_steps: a write run whole on the connection's thread -------------------------


def put_steps(cid: str, fail: bool = False):
    """A write as steps: put a row, read, and (when `fail`) change another row and raise."""
    yield ("put", make_cp("t", int(cid.strip("abcdefghijklmnopqrstuvwxyz") or 0), cid=cid), None)
    rows = yield ("fetch", "SELECT COUNT(*) AS n FROM checkpoints WHERE checkpoint_id = ?", [cid])
    assert rows == [{"n": 1}]
    if fail:
        yield ("execute", "UPDATE checkpoints SET summary = 'clobbered'", [])
        raise Boom()
    return cid


async def test_write_steps_share_commits_and_are_committed_on_return(backend, monkeypatch):
    import agentctl.storage.sql.sqlite as sqlite_backend

    groups: list[int] = []
    real = sqlite_backend._run_jobs

    def counting(conn, jobs):
        groups.append(len(jobs))
        return real(conn, jobs)

    monkeypatch.setattr(sqlite_backend, "_run_jobs", counting)
    seen_on_return: dict[str, bool] = {}

    async def writer(i: int) -> None:
        cid = await backend.write_steps(put_steps(f"c{i}"))
        seen_on_return[cid] = cid in committed_ids(backend.path)

    await asyncio.gather(*(writer(i) for i in range(20)))
    assert seen_on_return == {f"c{i}": True for i in range(20)}
    assert sum(groups) == 20 and 1 <= len(groups) < 20  # grouped: fewer COMMITs than writes


@pytest.mark.parametrize("together", [True, False])
async def test_a_failing_write_steps_undoes_only_its_own_writes(backend, together):
    calls = [
        backend.write_steps(put_steps(cid, fail=cid.startswith("bad")))
        for cid in ("ok1", "bad1", "ok2", "bad2", "ok3")
    ]
    if together:
        results = await asyncio.gather(*calls, return_exceptions=True)
    else:
        results = []
        for call in calls:
            try:
                results.append(await call)
            except Boom as exc:
                results.append(exc)
    assert [type(r) for r in results] == [str, Boom, str, Boom, str]
    assert committed_ids(backend.path) == {"ok1", "ok2", "ok3"}
    assert {m.summary for m in await backend.read_thread("t")} == {"step 1", "step 2", "step 3"}


async def test_write_steps_and_transactions_interleave(backend):
    async def tx_writer(i: int) -> None:
        async with backend.transaction() as tx:
            await tx.put(make_cp("t", i, cid=f"tx{i}"))

    await asyncio.gather(
        *[tx_writer(i) if i % 2 else backend.write_steps(put_steps(f"s{i}")) for i in range(12)]
    )
    assert committed_ids(backend.path) == {f"tx{i}" if i % 2 else f"s{i}" for i in range(12)}
    await backend.close()
    assert committed_ids(backend.path) == {f"tx{i}" if i % 2 else f"s{i}" for i in range(12)}


async def test_write_steps_on_a_read_only_backend_is_refused(tmp_path):
    from agentctl.errors import ReadOnlyDatabase

    path = tmp_path / "ro.db"
    SQLiteCheckpointer(str(path))
    ro = SQLiteCheckpointer(str(path), readonly=True, create=False)
    try:
        with pytest.raises(ReadOnlyDatabase):
            await ro.write_steps(put_steps("x1"))
    finally:
        await ro.close()
    assert committed_ids(path) == set()


async def test_a_transaction_is_not_starved_by_agents_that_keep_snapshotting(backend):
    """More agents than a group holds keep the connection's thread writing group after
    group; a transaction asked for meanwhile (a rewind, an undo) gets the write lock
    after the current group, not when the agents stop."""
    backend.group_max = 1
    engine = CheckpointEngine(backend)
    stop = asyncio.Event()
    written = 0

    async def agent(k: int) -> None:
        nonlocal written
        while not stop.is_set():
            await engine.snapshot(f"agent-{k}", [{"role": "user", "content": "x"}], {"k": k}, {})
            written += 1

    agents = [asyncio.create_task(agent(k)) for k in range(8)]
    try:
        while written < 40:
            await asyncio.sleep(0.001)

        async def other() -> int:
            asked = written
            async with backend.transaction() as tx:
                await tx.put(make_cp("other", 1, cid="from-a-transaction"))
                return written - asked

        # after the group being written (one snapshot here), a few that were delivered
        assert await asyncio.wait_for(other(), 10) < 30
        assert not any(a.done() for a in agents)
        assert "from-a-transaction" in committed_ids(backend.path)
        before = written
        while written < before + 40:  # and the agents go on after it
            await asyncio.sleep(0.001)
    finally:
        stop.set()
        await asyncio.gather(*agents)
