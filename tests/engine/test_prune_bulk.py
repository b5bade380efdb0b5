"""prune of many rows (issue 6): the plan's preview, the trash filled a chunk of rows at
a time on SQLite, the write cache for the transaction only. Whatever the rows' order in
the file, `deleted` is in thread order, every statement can fail without leaving a
trace, and undo restores every row exactly (on SQLite: same types, same bytes)."""

from __future__ import annotations

import random
import sqlite3
from datetime import timedelta

import pytest

from agentctl.backends import make_backend
from agentctl.engine import _INSERT_SQL
from agentctl.storage.agentos.base import checkpoint_params
from tests.engine.test_engine_atomic import fails_cleanly_then_works
from tests.support.engine_helpers import T0, Clock, bulk, dump, make_engine, thread_ids
from tests.support.helpers import make_cp
from tests.support.seed_writer import SQLITE_DDL

N = 1234  # more than two of the SQLite trash's chunks (500 rows)


def odd_thread(shuffled: bool) -> list:
    """N checkpoints of thread "t" plus some with a step written twice (one with the
    same created_at as its twin: the row id decides), in thread order or shuffled."""
    cps = []
    for step in range(1, N + 1):
        created = (T0 + timedelta(seconds=step)).isoformat()
        cps.append(make_cp("t", step, created_at=created))
    for step, delta, name in ((5, 0.5, "a"), (5, 0.0, "b"), (700, -3.0, "c"), (N - 2, 0.0, "d")):
        created = (T0 + timedelta(seconds=step + delta)).isoformat()
        cps.append(make_cp("t", step, cid=f"ckpt-t-{step}-again-{name}", created_at=created))
    if shuffled:
        random.Random(6).shuffle(cps)
    return cps


async def write(backend, cps) -> None:
    async with backend.transaction() as tx:
        await tx.executemany(_INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in cps])


@pytest.mark.parametrize("shuffled", [False, True], ids=["written-in-order", "shuffled"])
async def test_prune_many_rows_returns_thread_order_and_undo_restores_them(backend, shuffled):
    engine = make_engine(backend)
    await write(backend, odd_thread(shuffled))
    await bulk(backend, "other", 3)
    before = await dump(backend)
    order = await thread_ids(backend, "t")  # thread order, as SQL sorts it
    plan = await engine.plan_prune("t", "keep_last_n", 3)
    assert [m.checkpoint_id for m in plan.delete] == order[:-3]
    result = await engine.prune("t", "keep_last_n", 3)
    assert result.deleted == order[:-3]
    assert await thread_ids(backend, "t") == order[-3:]
    assert await backend.count("other") == 3
    trash = await backend.query(  # the deleted rows' images (not the re-parented row's)
        "SELECT checkpoint_id FROM agentctl_trash_checkpoints WHERE agentctl_op_id = ? "
        "AND agentctl_image = 'before' AND checkpoint_id NOT IN (SELECT checkpoint_id FROM "
        "agentctl_trash_checkpoints WHERE agentctl_op_id = ? AND agentctl_image = 'after')",
        result.op_id,
        result.op_id,
    )
    assert sorted(r["checkpoint_id"] for r in trash) == sorted(result.deleted)
    await engine.undo(result.op_id)
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]


@pytest.mark.parametrize(
    "policy,param", [("keep_last_n", 3), ("keep_milestones", 7), ("keep_age", 600), ("keep_all", 0)]
)
async def test_plan_preview_is_the_start_of_the_full_plan(backend, policy, param):
    engine = make_engine(backend, clock=Clock(start=T0 + timedelta(seconds=1000), step=timedelta(0)))
    await write(backend, odd_thread(shuffled=True))
    full = await engine.plan_prune("t", policy, param)
    assert full.delete_count == len(full.delete)
    for n in (0, 1, 2, 10, len(full.delete), len(full.delete) + 5):
        part = await engine.plan_prune("t", policy, param, preview=n)
        assert part.delete == full.delete[:n], n
        assert (part.delete_count, part.keep_count) == (len(full.delete), full.keep_count)
        assert part.to_dict()["delete"] == [m.to_dict() for m in full.delete[:n]]


async def test_prune_of_several_chunks_is_atomic(backend):
    engine = make_engine(backend)
    await bulk(backend, "t", 1100)
    statements = await fails_cleanly_then_works(backend, engine, lambda: engine.prune("t", "keep_last_n", 2))
    if backend.kind == "sqlite":
        assert statements > 3 * 3  # three chunks of three statements, at least
    assert await backend.count("t") == 2


# ---- SQLite: odd values, the page cache, the file's settings --------------------------


def rollback_journal_db(path) -> None:
    """A file as the seeds' writer leaves it: the format's DDL, rollback journal."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_DDL)
    conn.close()


def raw_rows(path) -> list:
    """Every column of every row with its storage class, blobs as hex."""
    conn = sqlite3.connect(path)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(checkpoints)")]
        sel = ", ".join(
            f"typeof({c}), CASE WHEN typeof({c}) = 'blob' THEN hex({c}) ELSE {c} END" for c in cols
        )
        return conn.execute(f"SELECT rowid, {sel} FROM checkpoints ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("shuffled", [False, True], ids=["written-in-order", "shuffled"])
async def test_prune_of_rows_with_mixed_types_sorts_like_sqlite_and_undo_restores_bytes(tmp_path, shuffled):
    """A foreign writer's oddities: steps of every storage class, a blob created_at,
    blob and non-JSON columns. `deleted` is in SQLite's own ORDER BY order."""
    path = tmp_path / "odd.db"
    rollback_journal_db(path)
    steps = [*range(1, 600), 2.5, 2.5, "x", "y", b"\x01", b"\x00"]
    rows = [
        (f"ckpt-{i}", step, f"2026-01-01T00:00:{i % 60:02d}" if i % 7 else b"\x02\x03")
        for i, step in enumerate(steps)
    ]
    if shuffled:
        random.Random(2).shuffle(rows)
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, step, created_at, tags, summary, "
        "messages_blob, state_blob, tools_blob) VALUES ('t', ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                cid,
                step,
                created,
                b"\xff" if n % 5 == 0 else '["manual"]',
                "s" * (n % 300),
                "not json {" if n % 3 == 0 else "[]",
                '{"pad": "' + "p" * 3000 + '"}',
                "{}",
            )
            for n, (cid, step, created) in enumerate(rows)
        ],
    )
    conn.commit()
    expected = [
        r[0]
        for r in conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 't' ORDER BY step, created_at, id"
        )
    ][:-1]
    conn.close()
    before = raw_rows(path)
    backend = make_backend(str(path), readonly=False, create=False)
    await backend.connect()
    try:
        engine = make_engine(backend)
        result = await engine.prune("t", "keep_last_n", 1)
        assert result.deleted == expected
        await engine.undo(result.op_id)
    finally:
        await backend.close()
    assert raw_rows(path) == before


async def test_the_write_cache_is_for_the_prune_only_and_the_file_keeps_its_settings(tmp_path):
    path = tmp_path / "seed.db"
    rollback_journal_db(path)
    header = path.read_bytes()[:100]
    backend = make_backend(str(path), readonly=False, create=False)
    await backend.connect()
    try:
        async with backend.bulk_write():  # outside a write transaction: nothing happens
            pass
        await bulk(backend, "t", 700)
        engine = make_engine(backend)
        async with backend.transaction() as tx:
            default = (await tx.fetch("PRAGMA cache_size"))[0]["cache_size"]
            async with backend.bulk_write(4096):
                assert (await tx.fetch("PRAGMA cache_size"))[0]["cache_size"] == -4096
            assert (await tx.fetch("PRAGMA cache_size"))[0]["cache_size"] == default
        await engine.prune("t", "keep_last_n", 1)
        async with backend.transaction() as tx:
            assert (await tx.fetch("PRAGMA cache_size"))[0]["cache_size"] == default
    finally:
        await backend.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 1
    finally:
        conn.close()
    now = path.read_bytes()[:100]
    # the header's persistent settings (page size, file format, reserved bytes, schema
    # format, default cache size, auto-vacuum, text encoding, user version, ...) stay
    for lo, hi in ((16, 24), (44, 72)):
        assert now[lo:hi] == header[lo:hi], (lo, hi)


# ---- prune of several threads (issue 14, item 1): one operation, all or nothing ----


async def three_threads(backend):
    engine = make_engine(backend)
    for t in ("a", "b", "c"):
        await bulk(backend, t, 6)
    return engine


async def test_prune_spec_of_every_thread_is_one_undoable_operation(backend):
    from agentctl.storage.contract import PruneSpec

    engine = await three_threads(backend)
    before = await dump(backend)
    seen = []
    results = await engine.prune_spec(PruneSpec(threads=None, keep_last=2), progress=seen.append)
    assert len(results) == 1 and results[0].op_id is not None
    assert len(results[0].deleted) == 12
    assert sum(seen) == 3  # one advance per thread
    for t in ("a", "b", "c"):
        assert await backend.count(t) == 2
    ops = await engine.oplog()
    assert [o.kind for o in ops] == ["prune"]
    await engine.undo()
    after = await dump(backend)
    assert {k: v for k, v in after.items() if k == "checkpoints"} == {
        k: v for k, v in before.items() if k == "checkpoints"
    }


async def test_prune_spec_failing_mid_way_changes_nothing(backend):
    """A failure at any statement (so also after the first threads were pruned) leaves
    every thread as it was: one transaction, not one per thread."""
    from agentctl.storage.contract import PruneSpec

    engine = await three_threads(backend)
    n = await fails_cleanly_then_works(
        backend, engine, lambda: engine.prune_spec(PruneSpec(threads=None, keep_last=2))
    )
    assert n > 6  # statements after the first thread's trash were failed too
    assert [o.kind for o in await engine.oplog()] == ["prune"]


async def test_prune_spec_of_named_threads_and_nothing_to_do(backend):
    from agentctl.errors import ThreadNotFound
    from agentctl.storage.contract import PruneSpec

    engine = await three_threads(backend)
    [r] = await engine.prune_spec(PruneSpec(threads=["a", "b"], keep_last=3))
    assert len(r.deleted) == 6 and await backend.count("c") == 6
    [r] = await engine.prune_spec(PruneSpec(threads=["a", "b"], keep_last=3))
    assert r.op_id is None and "nothing to prune" in r.summary
    assert len(await engine.oplog()) == 1  # the empty prune's op record was undone
    with pytest.raises(ThreadNotFound):
        await engine.prune_spec(PruneSpec(threads=["a", "nope"], keep_last=1))
    assert await backend.count("a") == 3


async def test_a_prune_with_nothing_to_delete_writes_nothing(backend):
    """The op record and the side tables a prune makes are undone when it deletes
    nothing (EngineContext.write_if): a database agentctl never wrote to stays so."""
    engine = await three_threads(backend)
    r = await engine.prune("a", "keep_last_n", 1000)
    assert r.op_id is None and "nothing to prune" in r.summary
    assert not await backend.table_exists("agentctl_journal")
    assert not await backend.table_exists("agentctl_trash_checkpoints")
