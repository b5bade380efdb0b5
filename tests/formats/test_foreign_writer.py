"""A database written by an independent writer (raw SQL in the format of FORMAT.md, not
agentctl's code) reads back exactly, including the odd rows real writers leave."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from agentctl.backends import open_backend

# The format's DDL, as the independent seed-like writer of the reliability tests has it.
from tests.support.seed_writer import POSTGRES_DDL as PG_DDL  # noqa: E402
from tests.support.seed_writer import SQLITE_DDL


def rows():
    """(thread, checkpoint_id, parent, step, created_at, tags, summary, messages, state, tools, next)"""
    msgs = [{"role": "user", "content": "帮我查一下订单"}, {"role": "assistant", "content": "好的"}]
    return [
        # a normal thread
        (
            "main",
            "ckpt-main-000001",
            None,
            1,
            "2026-01-01T00:00:01+00:00",
            ["auto", "iter_1"],
            "[user] 帮我",
            msgs[:1],
            {"i": 1},
            {},
            "agent",
        ),
        (
            "main",
            "ckpt-main-000002",
            "ckpt-main-000001",
            2,
            "2026-01-01T00:00:02+00:00",
            ["auto", "iter_2"],
            "[assistant] 好的",
            msgs,
            {"i": 2, "nested": {"x": [1, 2]}},
            {"lookup": {"ok": True}},
            "tools",
        ),
        # after a restart the writer's step counter began at 1 again: duplicate steps
        (
            "main",
            "ckpt-main-restart-1",
            "ckpt-main-000002",
            1,
            "2026-01-01T01:00:00+00:00",
            ["manual"],
            "",
            msgs,
            {"i": 3},
            {},
            "",
        ),
        # a parent deleted by the writer's GC
        (
            "gc",
            "ckpt-gc-5",
            "ckpt-gc-4-deleted",
            5,
            "2026-01-02T00:00:00+00:00",
            ["tool_call"],
            "",
            [],
            {},
            {},
            "",
        ),
        # a branch whose parent is in another thread
        (
            "main-branch-try-ab12",
            "ckpt-main-branch-try-ab12-0",
            "ckpt-main-000001",
            0,
            "2026-01-01T00:30:00+00:00",
            ["branch", "try"],
            "Branch 'try' from ckpt-main-000001",
            msgs[:1],
            {"i": 1},
            {},
            "",
        ),
    ]


def expected():
    out = {}
    for t, cid, parent, step, created, tags, summary, m, s, tr, nn in rows():
        out[cid] = {
            "metadata": {
                "thread_id": t,
                "checkpoint_id": cid,
                "parent_checkpoint_id": parent,
                "step": step,
                "created_at": created,
                "tags": tags,
                "summary": summary,
            },
            "messages": m,
            "state": s,
            "tools_result": tr,
            "next_node": nn,
        }
    return out


async def check(url: str) -> None:
    want = expected()
    async with open_backend(url) as b:
        for cid, d in want.items():
            assert (await b.get(cid)).to_dict() == d
        head = await b.get_latest("main")
        # step 2 is the highest step: a format reader's head, whatever the restart did
        assert head.metadata.checkpoint_id == "ckpt-main-000002"
        assert [m.checkpoint_id for m in await b.read_thread("main")] == [
            "ckpt-main-000001",
            "ckpt-main-restart-1",
            "ckpt-main-000002",
        ]
        summaries = {s.thread_id: s for s in await b.thread_summaries()}
        assert summaries["main-branch-try-ab12"].branch_of == "main"
        assert summaries["gc"].branch_of is None
        assert await b.orphan_parents() == [
            {"thread_id": "gc", "checkpoint_id": "ckpt-gc-5", "parent_id": "ckpt-gc-4-deleted"}
        ]
        assert await b.duplicate_steps() == [{"thread_id": "main", "step": 1, "count": 2}]
        got = {cp.metadata.checkpoint_id: cp.to_dict() async for cp in b.iter_checkpoints()}
        assert got == want


async def test_raw_sqlite_writer(tmp_path):
    path = tmp_path / "foreign.db"
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_DDL)
    for t, cid, parent, step, created, tags, summary, m, s, tr, nn in rows():
        conn.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, tags, "
            "summary, messages_blob, state_blob, tools_blob, next_node) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                t,
                cid,
                parent,
                step,
                created,
                json.dumps(tags),
                summary,
                json.dumps(m, ensure_ascii=False),
                json.dumps(s),
                json.dumps(tr),
                nn,
            ),
        )
    conn.commit()
    conn.close()
    before = path.read_bytes()
    await check(str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign.db"]


async def test_raw_postgres_writer(pg_dsn):
    import asyncpg

    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(PG_DDL)
        for t, cid, parent, step, created, tags, summary, m, s, tr, nn in rows():
            await conn.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, "
                "tags, summary, messages_blob, state_blob, tools_blob, next_node) "
                "VALUES ($1,$2,$3,$4,$5,$6::jsonb,$7,$8::jsonb,$9::jsonb,$10::jsonb,$11)",
                t,
                cid,
                parent,
                step,
                datetime.fromisoformat(created),
                json.dumps(tags),
                summary,
                json.dumps(m, ensure_ascii=False),
                json.dumps(s),
                json.dumps(tr),
                nn,
            )
    finally:
        await conn.close()
    await check(pg_dsn)
