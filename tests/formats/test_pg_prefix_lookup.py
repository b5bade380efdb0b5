"""Postgres: thread and checkpoint id prefixes (refs, completion) give the same answers
whether the columns compare in byte order (looked up as index ranges) or under another
collation (an ICU one here, where the prefix is no range: left() over the rows)."""

from __future__ import annotations

import asyncpg
import pytest

from agentctl.refs import resolve, resolve_thread
from agentctl.storage.agentos.postgres import PostgresCheckpointer
from tests.support.helpers import make_cp

pytestmark = pytest.mark.pg

THREADS = ["a", "a-1", "a-2", "A", "ab", "a b", "b", "é-1", "a\U0001f600", "zz"]
# C order (code points), what every prefix lookup returns, exact match first
C_ORDER = sorted(THREADS)


async def _fill(dsn: str) -> None:
    writer = PostgresCheckpointer(dsn, create=True)
    try:
        async with writer.transaction() as tx:
            for i, thread in enumerate(THREADS):
                for step in (1, 2):
                    await tx.put(make_cp(thread, step, cid=f"ckpt-{i:02d}-{step}"))
    finally:
        await writer.close()


async def _lookups(dsn: str) -> dict[str, object]:
    reader = PostgresCheckpointer(dsn, readonly=True, create=False)
    try:
        out: dict[str, object] = {}
        for prefix in ("", "a", "a-", "A", "é", "a\U0001f600", "q"):
            out[f"t:{prefix}"] = await reader.find_thread_ids(prefix, limit=20)
            out[f"t1:{prefix}"] = await reader.find_thread_ids(prefix, limit=1)
        for prefix in ("", "ckpt-0", "ckpt-01", "ckpt-01-2", "x"):
            out[f"c:{prefix}"] = await reader.find_checkpoint_ids(prefix, limit=5)
        out["thread a"] = await resolve_thread(reader, "a")
        out["thread a-2"] = await resolve_thread(reader, "a-2")
        out["head of ab"] = (await resolve(reader, "ab")).checkpoint_id
        out["byte order"] = reader._byte_order
        return out
    finally:
        await reader.close()


async def test_prefixes_same_in_byte_order_and_icu(pg_dsn) -> None:
    await _fill(pg_dsn)
    byte = await _lookups(pg_dsn)
    assert byte.pop("byte order") is True  # the test server's database is C.UTF-8
    assert byte["t:"] == C_ORDER
    assert byte["t:a"] == [t for t in C_ORDER if t.startswith("a")]
    assert byte["t1:a"] == ["a"]
    assert byte["t:a-"] == ["a-1", "a-2"]
    assert byte["t:é"] == ["é-1"]
    assert byte["t:a\U0001f600"] == ["a\U0001f600"]
    assert byte["t:q"] == []
    assert byte["c:ckpt-01"] == ["ckpt-01-1", "ckpt-01-2"]
    assert byte["c:ckpt-01-2"] == ["ckpt-01-2"]
    assert byte["c:"] == ["ckpt-00-1", "ckpt-00-2", "ckpt-01-1", "ckpt-01-2", "ckpt-02-1"]
    assert byte["c:x"] == []
    assert byte["thread a"] == "a" and byte["thread a-2"] == "a-2"
    assert byte["head of ab"] == "ckpt-04-2"

    conn = await asyncpg.connect(pg_dsn)
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu'"):
            pytest.skip("this Postgres has no ICU collation")
        await conn.execute(
            'ALTER TABLE checkpoints ALTER COLUMN thread_id TYPE TEXT COLLATE "und-x-icu", '
            'ALTER COLUMN checkpoint_id TYPE TEXT COLLATE "und-x-icu"'
        )
    finally:
        await conn.close()
    icu = await _lookups(pg_dsn)
    assert icu.pop("byte order") is False
    assert icu == byte
