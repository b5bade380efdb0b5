"""The article's store on the journal (agentctl/storage/journal/), SQLite and Postgres.

Each write kind (soft and hard rewind, branch, merge, prune, threads delete, edit) then
undo gives every table but agentctl's back row for row, timestamps included, and redo
gives them as after the write, again and again; a failure injected at each statement of
the write, its undo and its redo leaves the database as it was; messages_fts follows
every undo and redo (`agentctl search` finds exactly the messages that stand); the
previous release's op log is migrated atomically, and its ops redone where it kept what
redo needs."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentctl.errors import OperationError
from agentctl.refs import resolve
from agentctl.storage import PruneSpec, open_store
from tests.support.article_storage import FTS_TRIGGERS
from tests.support.contract_formats import CASES, append_article, build_once, dump
from tests.support.fault_injection import fails_cleanly_then_works
from tests.support.rig import REPO
from tests.support.sampledb import cli, cli_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"
KINDS = ("sqlite", "postgres")
WRITES = ("rewind", "rewind_hard", "branch", "merge", "prune", "delete", "edit")


async def frame(url: str, conn: Any = None) -> dict:
    return await dump(url, side_tables=False, conn=conn)


@pytest.fixture(params=KINDS)
async def built(request, tmp_path) -> Any:
    url = str(tmp_path / "a.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    return await build_once(request, "article", request.param, url)


async def _cid(store: Any, ref: str) -> str:
    return (await resolve(store, ref)).checkpoint_id


async def prepare(kind: str, store: Any, h: Any, b: Any) -> Callable[[], Awaitable[Any]]:
    """Whatever the write needs first (a merge: a branch the article's program wrote to);
    the write itself, as a call of History `h`."""
    if kind == "rewind":
        target = await _cid(store, f"{b.main}@2")
        return lambda: h.rewind(target)
    if kind == "rewind_hard":
        target = await _cid(store, f"{b.main}@2")
        return lambda: h.rewind(target, hard=True)
    if kind == "branch":
        source = await _cid(store, f"{b.main}@3")
        return lambda: h.branch(source, "journal")
    if kind == "merge":
        branch = await h.branch(await _cid(store, f"{b.main}@4"), "tomerge")
        await append_article(b.url, branch, "more from the branch")
        return lambda: h.merge_branch(branch, b.main)
    if kind == "prune":
        return lambda: h.prune_spec(PruneSpec(statuses=["active"], keep_last=1))
    if kind == "delete":
        return lambda: h.delete_thread(b.main)
    assert kind == "edit"
    cid = await _cid(store, f"{b.main}@1")
    view = h.edit_view(await store.get(cid))
    view["content"] = "edited in place"
    view["session"]["title"] = "a new title"
    return lambda: h.edit_state(cid, view, "content, session.title")


@pytest.mark.parametrize("kind", WRITES)
async def test_write_undo_redo_row_for_row(built, kind: str) -> None:
    b = built
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        write = await prepare(kind, store, h, b)
        before = await frame(b.url)
        await write()
        op_id = h.last_op_id
        after = await frame(b.url)
        assert after != before
        for _ in range(2):
            undone = await h.undo(op_id)
            assert undone.summary.startswith(f"undid operation {op_id} (")
            assert await frame(b.url) == before
            redone = await h.redo()
            assert redone.summary.startswith(f"redid operation {op_id} (")
            assert await frame(b.url) == after
        log = await h.oplog()
        assert [(r.kind, r.undo_of) for r in log[:2]] == [("redo", op_id), ("undo", op_id)]
        # the program reads on: the article's own store still sees a consistent session
        summary = await store.thread_summary(b.main)
        assert (summary is None) == (kind == "delete") or kind == "prune"
        assert {t.thread_id for t in await store.thread_summaries(100)} >= {b.main} - {
            None if summary else b.main
        }


async def test_undo_result_names_the_messages(built) -> None:
    b = built
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        r = await h.rewind(await _cid(store, f"{b.main}@2"))
        assert (await h.undo()).moved == r.moved and (await h.redo()).moved == r.moved
        r = await h.rewind(await _cid(store, f"{b.main}@2"), hard=True)
        assert (await h.undo()).created == r.deleted and (await h.redo()).deleted == r.deleted


@pytest.mark.parametrize("kind", KINDS)
async def test_write_undo_redo_are_atomic(request, tmp_path, kind: str) -> None:
    """Every write kind, its undo and its redo, failed at each statement, leave every
    table (agentctl's included) as it was; the tables read through one connection."""
    url = str(tmp_path / "a.db") if kind == "sqlite" else request.getfixturevalue("pg_dsn")
    conn = None
    if kind == "postgres":
        import asyncpg

        conn = await asyncpg.connect(url)
    try:
        for write in WRITES:
            if kind == "postgres":
                schema = await conn.fetchval("SELECT current_schema()")
                await conn.execute(f"DROP SCHEMA {schema} CASCADE; CREATE SCHEMA {schema}")
            else:
                Path(url).unlink(missing_ok=True)
            b = await CASES["article"].build(kind, url)
            async with open_store(url, readonly=False) as store:
                h = store.history()
                run = await prepare(write, store, h, b)

                async def state() -> dict:
                    return await dump(url, conn=conn)

                assert await fails_cleanly_then_works(store, state, run) > 2, write
                assert await fails_cleanly_then_works(store, state, h.undo) > 2, write
                assert await fails_cleanly_then_works(store, state, h.redo) > 2, write
    finally:
        if conn is not None:
            await conn.close()


# ---- messages_fts follows every undo and redo ----------------------------------------------


def found(db: str, word: str) -> list[str]:
    """What `agentctl search` finds, after FTS5's integrity-check against messages passed
    and with the index in step (so that search reads it, not a scan)."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)")
        fts = conn.execute("SELECT COUNT(*), MAX(id), SUM(id) FROM messages_fts_docsize").fetchone()
        assert fts == conn.execute("SELECT COUNT(*), MAX(id), SUM(id) FROM messages").fetchone()
    finally:
        conn.close()
    return sorted(h["checkpoint_id"] for h in cli_json(db, "search", word, "--in", "messages"))


@pytest.mark.parametrize("mode", ["maintained", "triggers"])
def test_search_after_undo_and_redo(tmp_path, mode: str) -> None:
    db = str(tmp_path / "sessions.db")
    shutil.copyfile(REPO / "sample_db" / "sessions.db", db)
    if mode == "triggers":
        conn = sqlite3.connect(db)
        conn.executescript(FTS_TRIGGERS)
        conn.close()
    regional = found(db, "Regional")
    assert regional == ["msg-26", "msg-27"]
    umbrella = found(db, "umbrella")
    assert umbrella == ["msg-13"]
    # a hard rewind deletes, a branch copies, an edit rewrites: each undone, redone, undone
    cli_json(db, "rewind", "msg-24", "--hard", "--yes", "--no-backup")
    assert found(db, "Regional") == []
    cli_json(db, "undo")
    assert found(db, "Regional") == regional
    cli_json(db, "redo")
    assert found(db, "Regional") == []
    cli_json(db, "undo")
    assert found(db, "Regional") == regional
    cli_json(db, "branch", "msg-13", "again")
    copies = found(db, "umbrella")
    assert len(copies) == 2 and umbrella[0] in copies
    cli_json(db, "undo")
    assert found(db, "umbrella") == umbrella
    cli_json(db, "redo")
    assert found(db, "umbrella") == copies
    cli_json(db, "edit", "msg-13", "--set", 'content="a zeppelin instead"', "--yes")
    assert found(db, "zeppelin") == ["msg-13"] and found(db, "umbrella") == [
        c for c in copies if c != "msg-13"
    ]
    cli_json(db, "undo")
    assert found(db, "zeppelin") == [] and found(db, "umbrella") == copies
    cli_json(db, "redo")
    assert found(db, "zeppelin") == ["msg-13"]


# ---- the previous release's op log ------------------------------------------------------------


def test_migration_is_atomic(tmp_path) -> None:
    """The first write (here an undo) migrates the old op log in its own transaction: a
    failure at any of its statements leaves the old tables (and all others) as they were."""
    db = tmp_path / "article.db"
    shutil.copyfile(FIXTURES / "article.db", db)

    async def go() -> None:
        async with open_store(str(db), readonly=False) as store:
            h = store.history()
            assert await fails_cleanly_then_works(store, lambda: dump(str(db)), h.undo, limit=2000) > 10

    asyncio.run(go())
    tables = asyncio.run(dump(str(db)))
    assert "agentctl_article_oplog" not in tables and "agentctl_journal" in tables


def test_previous_release_ops_redone(tmp_path) -> None:
    """Every old op undone then redone, oldest first, gives the tables as the previous
    release left them; the op it had undone cannot be redone (its trash was emptied by
    that undo): one line, nothing changed."""
    db = tmp_path / "article.db"
    shutil.copyfile(FIXTURES / "article.db", db)
    built = json.loads((FIXTURES / "article.built.json").read_text())
    as_left = asyncio.run(dump(str(db), side_tables=False))
    listed = cli_json(str(db), "oplog")
    done = sorted(op["op_id"] for op in listed if op["kind"] != "undo" and not op["undone"])
    old_undone = [op["op_id"] for op in listed if op["kind"] != "undo" and op["undone"]]
    assert done and old_undone
    for op in reversed(done):
        cli_json(str(db), "undo", str(op))
    assert asyncio.run(dump(str(db), side_tables=False)) == built["tables"]
    state = asyncio.run(dump(str(db)))
    r = cli(str(db), "redo", str(old_undone[0]))
    assert r.exit_code == 1 and r.stderr.strip().splitlines() == [
        f"agentctl: operation {old_undone[0]} was undone by an agentctl release before the journal, which kept "
        "no copy of what it wrote; it cannot be redone"
    ]
    assert asyncio.run(dump(str(db))) == state
    for op in done:
        cli_json(str(db), "redo", str(op))
    assert asyncio.run(dump(str(db), side_tables=False)) == as_left
    assert [op["op_id"] for op in cli_json(str(db), "oplog")][-len(listed) :] == [
        op["op_id"] for op in listed
    ]


async def test_undo_refused_when_a_row_the_op_left_changed(built) -> None:
    """A message the op wrote, changed in place by another program: undo and redo refused
    with one line naming it, nothing changed."""
    b = built
    async with open_store(b.url, readonly=False) as store:
        h = store.history()
        new = await h.branch(await _cid(store, f"{b.main}@2"), "edited")
        first = (await store.read_thread(new, 1))[0].checkpoint_id
        async with store.db.transaction() as tx:
            await tx.execute("UPDATE messages SET content = 'someone else' WHERE id = ?", int(first[4:]))
        state = await dump(b.url)
        with pytest.raises(OperationError, match=f"message {first} changed after it"):
            await h.undo()
        assert await dump(b.url) == state


def test_previous_release_merge_and_edit_migrated(tmp_path) -> None:
    """article_more.db (see tests/fixtures/journal/README.md): its merge and edit, undone
    and redone after the migration, give the tables exactly as before the merge and as the
    previous release left them; the branch the article's program wrote to since cannot be
    undone (one line, nothing changed); messages_fts stays in step and `search` follows."""
    db = str(tmp_path / "more.db")
    shutil.copyfile(FIXTURES / "article_more.db", db)
    built = json.loads((FIXTURES / "article_more.built.json").read_text())
    as_left = asyncio.run(dump(db, side_tables=False))
    assert found(db, "edited") == ["msg-5"]
    ops = {op["kind"]: op["op_id"] for op in cli_json(db, "oplog") if not op["undone"]}
    for kind in ("delete_thread", "edit", "merge"):
        cli_json(db, "undo", str(ops[kind]))
    assert asyncio.run(dump(db, side_tables=False)) == built["before_merge"]
    assert found(db, "edited") == [] and found(db, "Osaka") == ["msg-34"]
    state = asyncio.run(dump(db))
    r = cli(db, "undo", str(ops["branch"]))
    assert r.exit_code == 1 and "changed" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert asyncio.run(dump(db)) == state
    for kind in ("merge", "edit", "delete_thread"):
        cli_json(db, "redo", str(ops[kind]))
    assert asyncio.run(dump(db, side_tables=False)) == as_left
    assert found(db, "edited") == ["msg-5"] and len(found(db, "Osaka")) == 2
