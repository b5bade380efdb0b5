"""The backend conformance suite: every test runs on SQLite and on a real Postgres."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from agentctl.backends import open_backend
from agentctl.errors import CorruptRowError, ReadOnlyDatabase
from tests.support.helpers import make_cp, ts


async def put_thread(b, thread, n, start=1, parent=None, **kw):
    prev = parent
    ids = []
    for step in range(start, start + n):
        cp = make_cp(thread, step, parent=prev, **kw)
        await b.put(cp)
        prev = cp.metadata.checkpoint_id
        ids.append(prev)
    return ids


async def test_put_get_roundtrip_exact(backend):
    cp = make_cp(
        "t1",
        1,
        messages=[
            {"role": "user", "content": "你好，世界 ☃"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"name": "search", "args": {"q": "x", "n": 3}}],
            },
        ],
        state={"nested": {"a": [1, 2.5, True, None, "s"]}, "empty": {}, "big": 2**53},
        tools={"search": {"results": ["a", "b"]}},
        tags=["tool_call", "iter_5"],
        summary="[user] 你好",
        next_node="tools",
    )
    assert await backend.put(cp) == cp.metadata.checkpoint_id
    got = await backend.get(cp.metadata.checkpoint_id)
    assert got == cp
    assert got.to_dict() == cp.to_dict()
    assert await backend.get("nope") is None
    assert await backend.get_latest("nope") is None


async def test_created_at_string_or_datetime(backend):
    dt = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
    cp = make_cp("t", 1)
    cp.metadata.created_at = dt
    await backend.put(cp)
    got = await backend.get(cp.metadata.checkpoint_id)
    assert got.metadata.created_at == "2026-05-01T12:30:15.123456+00:00"
    await backend.put(make_cp("t", 2, created_at="2026-05-01T12:30:16.000001+00:00"))
    assert (await backend.get_latest("t")).metadata.step == 2


async def test_latest_and_order_with_duplicate_steps(backend):
    # A writer whose step counter restarted: steps 1, 2, then 1, 2 again later.
    await backend.put(make_cp("t", 1, cid="a1", created_at=ts(1)))
    await backend.put(make_cp("t", 2, cid="a2", created_at=ts(2)))
    await backend.put(make_cp("t", 1, cid="b1", created_at=ts(10)))
    await backend.put(make_cp("t", 2, cid="b2", created_at=ts(11)))
    # same step and same created_at: the later row id wins
    await backend.put(make_cp("t", 2, cid="c2", created_at=ts(11)))
    assert (await backend.get_latest("t")).metadata.checkpoint_id == "c2"
    asc = [m.checkpoint_id for m in await backend.read_thread("t")]
    assert asc == ["a1", "b1", "a2", "b2", "c2"]
    desc = [m.checkpoint_id for m in await backend.list_checkpoints("t")]
    assert desc == list(reversed(asc))
    assert [m.checkpoint_id for m in await backend.list_checkpoints("t", limit=2, offset=1)] == ["b2", "a2"]
    assert (await backend.at_step("t", 1)).checkpoint_id == "b1"
    assert await backend.duplicate_steps() == [
        {"thread_id": "t", "step": 1, "count": 2},
        {"thread_id": "t", "step": 2, "count": 3},
    ]


async def test_upsert_updates_every_column_in_place(backend):
    first = make_cp("t", 1, cid="x", tags=["a"], summary="one", state={"v": 1})
    await backend.put(first)
    second = make_cp(
        "t",
        5,
        cid="x",
        tags=["b"],
        summary="two",
        state={"v": 2},
        parent="p",
        created_at=ts(30),
        next_node="n",
    )
    await backend.put(second)
    assert await backend.count() == 1
    assert await backend.get("x") == second


async def test_list_threads_by_recency_then_id(backend):
    await put_thread(backend, "b", 2)
    await put_thread(backend, "a", 2)
    await backend.put(make_cp("c", 1, created_at=ts(1, day=2)))
    heads = await backend.list_threads()
    assert [(h.thread_id, h.step) for h in heads] == [("c", 1), ("a", 2), ("b", 2)]
    assert [h.thread_id for h in await backend.list_threads(limit=1, offset=1)] == ["a"]


async def test_thread_summaries(backend):
    main = await put_thread(backend, "main", 5)
    await backend.put(make_cp("main-branch-x", 0, parent=main[2], tags=["branch", "x"], created_at=ts(50)))
    await backend.put(make_cp("other", 1, created_at=ts(1, day=3)))
    rows = await backend.thread_summaries()
    by = {r.thread_id: r for r in rows}
    assert [r.thread_id for r in rows] == ["other", "main-branch-x", "main"]
    assert by["main"].checkpoints == 5 and by["main"].head_step == 5
    assert by["main"].head_checkpoint_id == main[-1]
    assert by["main"].branch_of is None
    assert by["main-branch-x"].branch_of == "main"
    assert by["main-branch-x"].branch_point == main[2]
    assert by["main"].updated_at == ts(5)
    assert [r.thread_id for r in await backend.thread_summaries(sort="thread", descending=False)] == [
        "main",
        "main-branch-x",
        "other",
    ]
    assert [r.thread_id for r in await backend.thread_summaries(sort="checkpoints")][0] == "main"
    assert [r.thread_id for r in await backend.thread_summaries(prefix="main")] == ["main-branch-x", "main"]
    assert await backend.count_threads() == 3
    assert await backend.count_threads(prefix="main-") == 1
    assert (await backend.thread_summary("main")).checkpoints == 5
    assert await backend.thread_summary("none") is None


async def test_thread_summaries_every_sort_matches_the_rows(backend):
    """Every sort, direction, prefix and page against an oracle computed from the rows:
    ties at a thread's last step (the head is the last by created_at, then row id),
    equal keys across threads (broken by thread id) and non-ASCII thread ids."""
    await check_every_sort(backend)


async def test_thread_summaries_with_a_created_at_index(backend):
    """The same with an index on created_at (Postgres has it; `doctor --fix-indexes`
    adds it on SQLite), with which the newest heads are found from that index."""
    async with backend.transaction() as tx:
        await tx.execute("CREATE INDEX IF NOT EXISTS idx_created_at ON checkpoints(created_at DESC)")
    await check_every_sort(backend)


async def check_every_sort(backend):
    rows = []  # (thread, step, created_at) in insertion (row id) order
    names = ["a", "a-1", "a-10", "a-2", "ab", "b", "é-1", "é-2", "日本", "z"]
    for i, thread in enumerate(names):
        for step in range(1, 2 + i % 4):
            rows.append((thread, step, ts(10 * step + i % 3)))
    rows.append(("a-1", 2, ts(5)))  # a second row at a-1's last step, older
    rows.append(("a-2", 3, ts(35)))  # a-2's last step twice, same created_at
    rows.append(("a-2", 3, ts(35)))
    rows.append(("b", 0, ts(59)))  # b's first step is 0, written last
    for n, (thread, step, created) in enumerate(rows):
        await backend.put(make_cp(thread, step, cid=f"c{n:03d}", created_at=created))
    threads = {}
    for n, (thread, step, created) in enumerate(rows):
        threads.setdefault(thread, []).append((step, created, n))
    for t in threads.values():
        t.sort()
    key = {
        "updated": lambda t: threads[t][-1][1],
        "created": lambda t: threads[t][0][1],
        "checkpoints": lambda t: len(threads[t]),
        "step": lambda t: threads[t][-1][0],
    }
    for sort in ("updated", "thread", "checkpoints", "step", "created"):
        for descending in (True, False):
            for prefix in (None, "a", "a-1", "é", "日", "q"):
                ids = [t for t in threads if prefix is None or t.startswith(prefix)]
                if sort == "thread":
                    ids.sort(reverse=descending)
                else:
                    ids.sort()
                    ids.sort(key=key[sort], reverse=descending)
                for limit, offset in ((50, 0), (3, 2)):
                    got = await backend.thread_summaries(limit, offset, sort, descending, prefix)
                    want = ids[offset : offset + limit]
                    assert [s.thread_id for s in got] == want, (sort, descending, prefix, offset)
                    for s in got:
                        head, first = threads[s.thread_id][-1], threads[s.thread_id][0]
                        assert (
                            s.checkpoints,
                            s.head_step,
                            s.head_checkpoint_id,
                            s.updated_at,
                            s.first_created_at,
                        ) == (len(threads[s.thread_id]), head[0], f"c{head[2]:03d}", head[1], first[1])


async def test_children_branches_and_prefix_lookup(backend):
    main = await put_thread(backend, "m", 3)
    await backend.put(make_cp("m-branch-b", 0, cid="ckpt-m-branch-b-0", parent=main[0]))
    await backend.put(make_cp("m_%", 1, cid="ckpt-m_%-1"))
    kids = await backend.children(main[0])
    assert sorted(k.checkpoint_id for k in kids) == sorted([main[1], "ckpt-m-branch-b-0"])
    assert [b.checkpoint_id for b in await backend.branches_of(["m"])] == ["ckpt-m-branch-b-0"]
    assert await backend.find_checkpoint_ids("ckpt-m-") == sorted(main + ["ckpt-m-branch-b-0"])
    # % and _ are not wildcards
    assert await backend.find_checkpoint_ids("ckpt-m_") == ["ckpt-m_%-1"]
    assert await backend.find_thread_ids("m") == ["m", "m-branch-b", "m_%"]
    meta = await backend.get_metadata(main[1])
    assert meta.parent_checkpoint_id == main[0] and meta.step == 2


async def test_delete_thread_and_before(backend):
    await put_thread(backend, "a", 5)
    await put_thread(backend, "b", 2)
    assert await backend.delete_before("a", 3) == 2
    assert [m.step for m in await backend.read_thread("a")] == [3, 4, 5]
    assert await backend.delete_thread("a") == 3
    assert await backend.count() == 2
    assert await backend.count("b") == 2


async def test_search(backend):
    await backend.put(
        make_cp(
            "s",
            1,
            messages=[
                {"role": "user", "content": "Where is my ORDER #42?"},
                {"role": "assistant", "content": "正在查询订单"},
            ],
        )
    )
    await backend.put(make_cp("s", 2, tools={"lookup": {"status": "Shipped 100%"}}))
    await backend.put(make_cp("t", 1, messages=[{"role": "assistant", "content": "order found"}]))
    hits = await backend.search("order")
    assert {(h.thread_id, h.step, h.where) for h in hits} == {("s", 1, "messages"), ("t", 1, "messages")}
    assert [h.role for h in await backend.search("order", role="assistant")] == ["assistant"]
    assert [h.thread_id for h in await backend.search("order", thread_id="s")] == ["s"]
    assert [h.where for h in await backend.search("100%")] == ["tools_result"]
    chinese = await backend.search("订单")
    assert len(chinese) == 1 and "订单" in chinese[0].snippet


async def test_stats_and_orphans(backend):
    ids = await put_thread(backend, "a", 3, tags=["tool_call"])
    await backend.put(make_cp("b", 1, parent="gone", tags=["llm_call", "auto"]))
    s = await backend.stats()
    assert s["threads"] == 2 and s["checkpoints"] == 4
    assert s["tags"] == {"tool_call": 3, "llm_call": 1, "auto": 1}
    assert s["bytes"] == sum(t["bytes"] for t in s["per_thread"]) > 0
    assert await backend.orphan_parents() == [
        {"thread_id": "b", "checkpoint_id": "ckpt-b-1", "parent_id": "gone"}
    ]
    assert ids[0]


async def test_iterators_stream_everything(backend):
    await put_thread(backend, "a", 7)
    await put_thread(backend, "b", 3)
    got = [cp.metadata.checkpoint_id async for cp in backend.iter_checkpoints(batch=2)]
    assert got == [f"ckpt-a-{i}" for i in range(1, 8)] + [f"ckpt-b-{i}" for i in range(1, 4)]
    metas = [m.checkpoint_id async for m in backend.iter_metadata(batch=3)]
    assert metas == got
    only_b = [cp.metadata.step async for cp in backend.iter_checkpoints(["b"])]
    assert only_b == [1, 2, 3]


async def test_transaction_rolls_back_on_error(backend):
    await put_thread(backend, "a", 2)
    with pytest.raises(RuntimeError):
        async with backend.transaction(["a"]) as tx:
            await tx.put(make_cp("a", 3))
            await tx.execute("DELETE FROM checkpoints WHERE thread_id = ?", "a")
            assert await tx.max_step("a") is None
            raise RuntimeError("boom")
    assert [m.step for m in await backend.read_thread("a")] == [1, 2]
    async with backend.transaction(["a"]) as tx:
        await tx.put(make_cp("a", 3))
        assert (await tx.get_latest("a")).metadata.step == 3
    assert await backend.count("a") == 3


async def test_readonly_backend_refuses_writes(db_url):
    async with open_backend(db_url, readonly=False, create=True) as b:
        await put_thread(b, "a", 1)
    async with open_backend(db_url) as ro:
        assert await ro.count() == 1
        with pytest.raises(ReadOnlyDatabase):
            await ro.put(make_cp("a", 2))
        with pytest.raises(ReadOnlyDatabase):
            async with ro.transaction():
                pass
    async with open_backend(db_url) as ro:
        assert await ro.count() == 1


async def test_many_threads_pages(backend):
    for i in range(30):
        await backend.put(make_cp(f"th{i:02d}", 1, created_at=ts(i)))
    seen = []
    for page in range(4):
        seen += [s.thread_id for s in await backend.thread_summaries(limit=8, offset=page * 8)]
    assert seen == [f"th{i:02d}" for i in range(29, -1, -1)]


async def test_corrupt_row_is_reported_others_read(db_url):
    """A row whose JSON does not parse raises CorruptRowError naming it; others still read."""
    async with open_backend(db_url, readonly=False, create=True) as b:
        await put_thread(b, "a", 3)
        async with b.transaction() as tx:
            if tx.kind == "sqlite":
                await tx.execute("UPDATE checkpoints SET state_blob = '{not json' WHERE step = 2")
            await tx.execute("UPDATE checkpoints SET messages_blob = '{\"a\": 1}' WHERE step = 3")
    async with open_backend(db_url) as b:
        if b.kind == "sqlite":
            with pytest.raises(CorruptRowError, match=r"ckpt-a-2.*state_blob.*invalid JSON"):
                await b.get("ckpt-a-2")
        with pytest.raises(CorruptRowError, match=r"ckpt-a-3.*messages_blob.*where an array"):
            await b.get("ckpt-a-3")
        assert (await b.get("ckpt-a-1")).state == {"step": 1}
        assert len(await b.read_thread("a")) == 3
        items = [x async for x in b.iter_checkpoints()]
        assert [type(x).__name__ for x in items] == (
            ["Checkpoint", "CorruptRowError", "CorruptRowError"]
            if b.kind == "sqlite"
            else ["Checkpoint", "Checkpoint", "CorruptRowError"]
        )
        bad = await b.invalid_json()
        assert {
            "checkpoint_id": "ckpt-a-3",
            "column": "messages_blob",
            "reason": "JSON object where an array is expected",
        } in bad


async def test_a_write_through_a_read_backends_own_connection_fails(db_url):
    """The read connections themselves refuse writes (not only agentctl's checks):
    SQLite's reader is opened `mode=ro`, and so is the TUI's first-page reader; every
    Postgres session of a read backend is `default_transaction_read_only`."""
    async with open_backend(db_url, readonly=False, create=True) as b:
        await put_thread(b, "a", 2)
    async with open_backend(db_url) as ro:
        assert await ro.count() == 2
        if ro.kind == "sqlite":
            import sqlite3

            from agentctl.storage.agentos.sqlite import _PlainReader

            with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
                await ro._reader.execute("DELETE FROM checkpoints")
            plain = _PlainReader(db_url)  # the TUI's first page (read_thread_summaries)
            try:
                with pytest.raises(sqlite3.OperationalError, match="readonly|read-only"):
                    plain._plain.execute("DELETE FROM checkpoints")
            finally:
                plain._plain.close()
        else:
            import asyncpg

            async with ro._pool.acquire() as conn:
                assert await conn.fetchval("SHOW default_transaction_read_only") == "on"
                with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
                    await conn.execute("DELETE FROM checkpoints")
    async with open_backend(db_url) as ro:
        assert await ro.count() == 2


def test_redact_dsn_hides_passwords_in_both_forms():
    from agentctl.errors import redact_dsn

    assert (
        redact_dsn("postgresql://alice:s3cr%40t@db.example:5432/agents")
        == "postgresql://alice:***@db.example:5432/agents"
    )
    assert (
        redact_dsn("cannot connect to postgres://bob:pw@host/db: refused")
        == "cannot connect to postgres://bob:***@host/db: refused"
    )
    assert redact_dsn("postgresql://carol@host/db") == "postgresql://carol@host/db"  # none to hide
    assert (
        redact_dsn("host=db user=dave password=hunter2 dbname=x") == "host=db user=dave password=*** dbname=x"
    )
    assert redact_dsn("PASSWORD = 'two words' port=5432") == "PASSWORD = *** port=5432"
    assert "hunter2" not in redact_dsn("dsn postgresql://e:hunter2@h/d and password=hunter2")
