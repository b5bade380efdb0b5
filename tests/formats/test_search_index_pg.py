"""The search index on Postgres (`agentctl index build`): pg_trgm GIN indexes that the
search's ILIKE uses, made only on request; the hits are the scan's."""

from __future__ import annotations

import asyncio

from tests.support.rig import run_sync
from tests.support.sampledb import cli, cli_json, fresh_schema, load_sample

QUERIES = [
    ["passed"],
    ["flaky", "--role", "user"],
    ["exit_code"],
    ["PASSED", "-n", "500"],
    ["你好"],
    ["whitfield", "--in", "state"],
    ["retry", "--in", "tools,state"],
    ["strategy", "-n", "500"],
]


def _key(hits):
    return [(h["checkpoint_id"], h["where"], h["role"], h["path"], h["snippet"]) for h in hits]


async def _explain(dsn: str) -> str:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SET enable_seqscan = off")
        rows = await conn.fetch(
            "EXPLAIN SELECT id FROM checkpoints WHERE messages_blob::text ILIKE '%backoff%'"
        )
        return "\n".join(r[0] for r in rows)
    finally:
        await conn.close()


def test_pg_trgm_index_on_request(pg_base_dsn):
    with fresh_schema(pg_base_dsn, "idx_") as dsn:
        run_sync(lambda: load_sample(dsn))
        assert cli_json(dsn, "index", "status")["state"] == "absent"
        before = {tuple(a): _key(cli_json(dsn, "search", *a)) for a in QUERIES}
        r = cli(dsn, "index", "build")
        assert r.exit_code == 0, r.stderr
        st = cli_json(dsn, "index", "status")
        assert st["state"] == "current" and "agentctl_search_messages" in st["path"]
        assert "agentctl_search_messages" in asyncio.run(_explain(dsn))
        for args in QUERIES:
            assert (
                _key(cli_json(dsn, "search", *args))
                == before[tuple(args)]
                == _key(cli_json(dsn, "search", *args, "--scan"))
            ), args
        assert any(before.values())
        assert cli(dsn, "index", "build").exit_code == 0  # again: nothing to do
        assert cli(dsn, "index", "drop").exit_code == 0
        assert cli_json(dsn, "index", "status")["state"] == "absent"


def test_pg_index_commands_say_what_postgres_has(pg_base_dsn):
    """issue 33.14: `build` said "(the database is only read)" while it created indexes in
    it, `status` showed `rows: 0` and an empty `built:` (the side file's fields), `drop`
    said "removed checkpoints: -" (the state after it)."""
    with fresh_schema(pg_base_dsn, "idx_") as dsn:
        run_sync(lambda: load_sample(dsn))
        r = cli(dsn, "index", "build")
        assert r.exit_code == 0 and "only read" not in r.stderr and "pg_trgm" in r.stderr, r.stderr
        r = cli(dsn, "index", "status")
        assert r.exit_code == 0 and "state: current" in r.stdout
        assert "rows:" not in r.stdout and "built:" not in r.stdout and "bytes: " in r.stdout, r.stdout
        st = cli_json(dsn, "index", "status")
        assert st["rows"] is None and st["built_at"] is None
        r = cli(dsn, "index", "drop")
        assert r.exit_code == 0 and "checkpoints: -" not in r.stderr
        assert r.stderr.startswith("removed checkpoints: agentctl_search_messages"), r.stderr
        r = cli(dsn, "index", "drop")
        assert r.exit_code == 0 and r.stderr == "there was no search index\n"
