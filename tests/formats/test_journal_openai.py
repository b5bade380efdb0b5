"""The OpenAI Agents SDK format on the journal, SQLite and Postgres: each write kind
(rewind, hard rewind, branch of a SQLiteSession, branch of an AdvancedSQLiteSession,
rewind and hard rewind of a branch of one, a run the SDK wrote, an edit) then undo gives every table but agentctl's back row for
row (timestamps included), redo gives them as after the write, again and again; a
failure injected at each statement of the write, its undo and its redo leaves every
table (agentctl's too) as it was. The session's updated_at, which a rewind moves to
the time of the rewind, is back byte for byte after undo (issue 20). The previous
release's op log: its migration is all-or-nothing."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agentctl.storage import open_store  # noqa: E402
from tests.support.contract_formats import append_openai, build_openai, dump  # noqa: E402
from tests.support.fault_injection import fails_cleanly_then_works  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"
KINDS = ("rewind", "rewind-hard", "branch", "branch-sdk", "rewind-sdk", "rewind-hard-sdk", "run", "edit")
ITEMS = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "two"},
    {"role": "user", "content": "three"},
    {"role": "assistant", "content": "four"},
]


#: (backend, write kind): AdvancedSQLiteSession is SQLite's alone
PAIRS = [
    (b, k) for b in ("sqlite", "postgres") for k in KINDS if not (b == "postgres" and k.endswith("-sdk"))
]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path) -> str:
    return str(tmp_path / "oa.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")


@pytest.fixture
def kind_url(request, tmp_path) -> tuple[str, str]:
    backend, kind = request.param
    return kind, str(tmp_path / "oa.db") if backend == "sqlite" else request.getfixturevalue("pg_dsn")


each_pair = pytest.mark.parametrize("kind_url", PAIRS, ids=[f"{b}-{k}" for b, k in PAIRS], indirect=True)


async def build(url: str, kind: str) -> str:
    """The database for a write kind; the thread the write is on (a rewind of an
    AdvancedSQLiteSession's: its branch "b", holding main's first turn and 2 items of
    its own)."""
    if not kind.endswith("-sdk"):
        await build_openai("", url)
        return "oa-main"
    assert "://" not in url, "AdvancedSQLiteSession is SQLite's"
    from agents.extensions.memory import AdvancedSQLiteSession

    s = AdvancedSQLiteSession(session_id="adv", db_path=url, create_tables=True)
    await s.add_items(ITEMS)
    if kind.startswith("rewind"):
        await s.create_branch_from_turn(2, "b")
        await s.add_items([{"role": "user", "content": "b one"}, {"role": "assistant", "content": "b two"}])
    s.close()
    return "adv#b" if kind.startswith("rewind") else "adv"


async def prepared(store: Any, url: str, kind: str, session: str) -> Callable[[], Awaitable[Any]]:
    """The write of `kind` (anything it needs from outside agentctl done first)."""
    h = store.history()
    cid = (await store.at_step(session, 3 if "#" in session else 2)).checkpoint_id  # (3: the branch's own)
    if kind.startswith("rewind"):
        plan = await h.plan_rewind(cid, hard=kind.startswith("rewind-hard"))
        return lambda: h.rewind(cid, hard=plan.hard, archive_thread=plan.archive_thread)
    if kind.startswith("branch"):
        return lambda: h.branch(cid, "try")
    if kind == "edit":
        return lambda: h.edit_state(cid, {"role": "assistant", "content": "edited"}, "content")
    before = await h.run_keys(session)
    await append_openai(url, session, "the SDK's run wrote this")  # the SDK writes; agentctl records it
    return lambda: h.record_run(session, before, "run test", {})


async def frame(url: str) -> dict:
    return await dump(url, side_tables=False)


@each_pair
async def test_write_undo_redo_row_for_row(kind_url: tuple[str, str]) -> None:
    kind, url = kind_url
    session = await build(url, kind)
    async with open_store(url, readonly=False) as store:
        before = await frame(url)  # (a run's items are written by the SDK before agentctl records them)
        write = await prepared(store, url, kind, session)
        await write()
        after = await frame(url)
        assert after != before
        h = store.history()
        for _ in range(2):
            assert (await h.undo()).kind == "undo"
            assert await frame(url) == before
            assert (await h.redo()).kind == "redo"
            assert await frame(url) == after
        assert [o.kind for o in await h.oplog()][-1:] == ["run" if kind == "run" else kind.split("-")[0]]


@each_pair
async def test_write_undo_redo_are_atomic(kind_url: tuple[str, str]) -> None:
    kind, url = kind_url
    session = await build(url, kind)
    conn = None
    if "://" in url:
        import asyncpg

        conn = await asyncpg.connect(url)
    try:
        async with open_store(url, readonly=False) as store:
            write = await prepared(store, url, kind, session)
            h = store.history()
            for op in (write, h.undo, h.redo):
                assert await fails_cleanly_then_works(store, lambda: dump(url, conn=conn), op) > 2
    finally:
        if conn is not None:
            await conn.close()


async def test_undo_of_a_rewind_puts_updated_at_back_byte_for_byte(url: str) -> None:
    """Written, then > 1 s, rewound (CURRENT_TIMESTAMP: another second; oa-main to an
    archive, oa-side hard), > 1 s, undone: each session row's updated_at is as before the
    rewind, as the database holds it; redone: as the rewind left it."""
    await build(url, "rewind")
    sql = (
        "SELECT session_id, CAST(updated_at AS TEXT) AS u, updated_at AS raw FROM agent_sessions "
        "WHERE session_id IN ('oa-main', 'oa-side') ORDER BY session_id"
    )
    async with open_store(url, readonly=False) as store:
        h = store.history()
        first = await store._q(sql)
        await asyncio.sleep(1.1)
        await h.rewind((await store.at_step("oa-main", 2)).checkpoint_id)
        await h.rewind((await store.at_step("oa-side", 1)).checkpoint_id, hard=True)
        moved = await store._q(sql)
        assert (
            [r["u"] for r in moved] != [r["u"] for r in first]
            and moved[0] != first[0]
            and moved[1] != first[1]
        )
        await asyncio.sleep(1.1)
        await h.undo()
        await h.undo()
        assert await store._q(sql) == first
        await h.redo()
        await h.redo()
        assert await store._q(sql) == moved


async def test_migration_is_all_or_nothing(tmp_path: Path) -> None:
    """A failure at any statement of the first write (which migrates the previous op log
    first) leaves the old op log and trash as they were; then the write migrates it."""
    db = tmp_path / "openai_agents.db"
    shutil.copyfile(FIXTURES / "openai_agents.db", db)
    url = str(db)
    async with open_store(url, readonly=False) as store:
        listed = [(o.op_id, o.kind, o.undone) for o in await store.history().oplog()]
        cid = (await store.at_step("oa-other", 1)).checkpoint_id
        h = store.history()
        n = await fails_cleanly_then_works(store, lambda: dump(url), lambda: h.branch(cid, "later"))
        assert n > 10  # the migration's statements, then the branch's
        log = [(o.op_id, o.kind, o.undone) for o in await h.oplog()]
    assert log[1:] == listed and log[0][:2] == (5, "branch")
    assert not [t for t in await dump(url) if t.startswith("agentctl_openai_")]


def test_every_old_op_kind_undone_then_redone(tmp_path: Path) -> None:
    """A database of the previous release with one op of every kind it logged, each
    done (tests/fixtures/journal/openai_agents_all.db): listed as it was, each undone
    (newest first) gives the SDK's tables as before them, row for row, updated_at
    included; each then redone (oldest first) gives them as they were."""
    import json

    from tests.support.sampledb import cli_json

    db = tmp_path / "all.db"
    shutil.copyfile(FIXTURES / "openai_agents_all.db", db)
    built = json.loads((FIXTURES / "openai_agents_all.built.json").read_text())
    written = asyncio.run(frame(str(db)))
    ops = cli_json(str(db), "oplog")
    assert [(o["op_id"], o["kind"], o["undone"]) for o in ops] == [
        (6, "run", False),
        (5, "edit", False),
        (4, "branch", False),
        (3, "branch", False),
        (2, "rewind", False),
        (1, "rewind", False),
    ]
    assert ops[-1]["purgeable_rows"] == 2  # the hard rewind's items in the old trash
    for op in ops:
        cli_json(str(db), "undo", str(op["op_id"]))
    assert asyncio.run(frame(str(db))) == built["tables"]
    for op in reversed(ops):
        cli_json(str(db), "redo", str(op["op_id"]))
    assert asyncio.run(frame(str(db))) == written


@pytest.mark.pg
async def test_old_op_log_migrated_on_postgres(pg_dsn: str) -> None:
    """The previous op log on Postgres (its tables and rows as that release wrote them,
    next to SQLAlchemySession's tables): a hard rewind (items in the old trash, the
    session's updated_at moved) and an edit, each undone (newest first) gives the SDK's
    tables back row for row (timestamps and all), each redone gives them as they were."""
    import json

    import asyncpg

    await build_openai("", pg_dsn)
    built = await frame(pg_dsn)
    conn = await asyncpg.connect(pg_dsn)

    async def prints(session: str) -> list:
        r = await conn.fetchrow(
            "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m, COALESCE(SUM(id), 0) AS s "
            "FROM agent_messages WHERE session_id = $1",
            session,
        )
        return [int(r["n"]), int(r["m"]), int(r["s"]), True]

    try:
        await conn.execute(
            "CREATE TABLE agentctl_openai_oplog (op_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, kind TEXT "
            "NOT NULL, summary TEXT NOT NULL, threads TEXT NOT NULL, details TEXT NOT NULL, undone INTEGER NOT NULL "
            "DEFAULT 0, undo_of INTEGER, undone_by INTEGER, purged INTEGER NOT NULL DEFAULT 0)"
        )
        await conn.execute(
            "CREATE TABLE agentctl_openai_trash (op_id INTEGER NOT NULL, row_id BIGINT NOT NULL, "
            "session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP)"
        )
        side = [
            r["id"]
            for r in await conn.fetch(
                "SELECT id FROM agent_messages WHERE session_id = 'oa-side' ORDER BY id"
            )
        ]
        stamp = await conn.fetchval(
            "SELECT CAST(updated_at AS TEXT) FROM agent_sessions WHERE session_id = 'oa-side'"
        )
        await conn.execute(
            "INSERT INTO agentctl_openai_trash SELECT 1, id, session_id, message_data, created_at "
            "FROM agent_messages WHERE session_id = 'oa-side' AND id > $1",
            side[0],
        )
        await conn.execute("DELETE FROM agent_messages WHERE session_id = 'oa-side' AND id > $1", side[0])
        await conn.execute(
            "UPDATE agent_sessions SET updated_at = updated_at + interval '1 hour' "
            "WHERE session_id = 'oa-side'"
        )
        details = {
            "session": "oa-side",
            "target": side[0],
            "moved": side[1:],
            "hard": True,
            "archive": None,
            "archive_created": False,
            "updated_at_before": stamp,
            "after": await prints("oa-side"),
        }
        await conn.execute(
            "INSERT INTO agentctl_openai_oplog (op_id, created_at, kind, summary, threads, details) "
            "VALUES (1, '2026-11-26T00:00:00+00:00', 'rewind', 'rewind oa-side to step 1', $1, $2)",
            json.dumps(["oa-side"]),
            json.dumps(details),
        )
        row, old = await conn.fetchrow(
            "SELECT id, message_data FROM agent_messages WHERE session_id = 'oa-main' ORDER BY id LIMIT 1"
        )
        new = json.dumps({"role": "user", "content": "edited"})
        await conn.execute("UPDATE agent_messages SET message_data = $1 WHERE id = $2", new, row)
        details = {
            "session": "oa-main",
            "row": row,
            "before": old,
            "new": new,
            "after": await prints("oa-main"),
        }
        await conn.execute(
            "INSERT INTO agentctl_openai_oplog (op_id, created_at, kind, summary, threads, details) "
            "VALUES (2, '2026-11-26T00:00:01+00:00', 'edit', 'edit oa-main', $1, $2)",
            json.dumps(["oa-main"]),
            json.dumps(details),
        )
    finally:
        await conn.close()
    written = await frame(pg_dsn)
    async with open_store(pg_dsn, readonly=False) as store:
        h = store.history()
        assert [(o.op_id, o.kind, o.purgeable_rows) for o in await h.oplog()] == [
            (2, "edit", 0),
            (1, "rewind", 1),
        ]
        await h.undo()
        await h.undo()
        assert await frame(pg_dsn) == built
        assert [o.kind for o in await h.oplog()] == ["undo", "undo", "edit", "rewind"]
        await h.redo(1)
        await h.redo(2)
        assert await frame(pg_dsn) == written
    assert not [t for t in await dump(pg_dsn) if t.startswith("agentctl_openai_")]
