"""Google ADK's writes on the journal (agentctl/storage/adk/history.py), SQLite and
Postgres, on a database ADK's own DatabaseSessionService wrote (tests/support/
contract_formats.py): each write kind (rewind, rewind --hard, branch, edit with app:
and user: keys, doctor --fix, a run recorded after ADK's Runner wrote, one that made its
session) then `undo` gives every ADK table back row for row, timestamps included, and
`redo` gives it as after the write, again and again; a failure injected at each
statement of the write, the undo and the redo leaves every table as it was. The
previous release's op log (tests/fixtures/journal/adk.db) is moved into the journal
inside the first write's transaction, all or nothing."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from agentctl.errors import OperationError  # noqa: E402
from agentctl.storage import open_store  # noqa: E402
from tests.support.contract_formats import _adk_service, _adk_text, build_adk, dump  # noqa: E402
from tests.support.dbcopy import built_case  # noqa: E402
from tests.support.fault_injection import (  # noqa: E402
    InjectedFault,
    failing_at,
    fails_cleanly_then_works,  # noqa: E402
)

MAIN = "app/u1/main"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"
Write = Callable[[Any], Awaitable[Any]]


async def _adk_append(
    url: str, key: tuple[str, str, str], text: str, delta: dict[str, Any], create: bool = False
) -> None:
    """What ADK's Runner writes for a turn: an event with a state_delta (the session made first)."""
    from google.adk.events import Event, EventActions

    svc, close = await _adk_service(url)
    try:
        if create:
            s = await svc.create_session(
                app_name=key[0], user_id=key[1], session_id=key[2], state={"made": 1}
            )
        else:
            s = await svc.get_session(app_name=key[0], user_id=key[1], session_id=key[2])
        await svc.append_event(
            s,
            Event(
                author="agent",
                invocation_id="inv-run",
                content=_adk_text("model", text),
                actions=EventActions(state_delta=delta),
            ),
        )
    finally:
        await close()


async def _at(store: Any, step: int, thread: str = MAIN) -> str:
    return (await store.at_step(thread, step)).checkpoint_id


async def _corrupt(url: str) -> None:
    """The main session's state no longer its events' fold (what `doctor --fix` repairs)."""
    import sqlite3

    if "://" in url:
        import asyncpg

        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                """UPDATE sessions SET state = '{"init": 1, "turn": 99}'::jsonb WHERE id = 'main'"""
            )
        finally:
            await conn.close()
        return
    with sqlite3.connect(url) as c:
        c.execute("""UPDATE sessions SET state = '{"init": 1, "turn": 99}' WHERE id = 'main'""")


async def prepare(kind: str, url: str, store: Any) -> Write:
    """Set the database up for a write of `kind` (ADK's own writes first, for a run) and
    return the write (agentctl's part alone)."""
    h = store.history()
    if kind == "rewind":
        target = await _at(store, 2)
        return lambda h: h.rewind(target)
    if kind == "rewind-hard":
        target = await _at(store, 1)
        return lambda h: h.rewind(target, hard=True)
    if kind == "branch":
        target = await _at(store, 3)
        return lambda h: h.branch(target, "journal")
    if kind == "edit":
        ref = await store.get_latest(MAIN)
        state = {k: v for k, v in ref.state.items() if not k.startswith("__")}
        new = {**state, "turn": 7, "app:flag": True, "user:name": "zoë"}
        new.pop("init")
        return lambda h: h.edit_state(ref.metadata.checkpoint_id, new, "turn=7")
    if kind == "fix-state":
        await _corrupt(url)
        return lambda h: h.fix_state()
    thread = MAIN if kind == "run" else "app/u1/made-by-run"
    before = await h.run_keys(thread)
    key = tuple(thread.split("/"))
    await _adk_append(
        url, key, "ran", {"turn": 9, "app:runs": 1, "user:seen": True}, create=kind == "run-new"
    )
    return lambda h: h.record_run(thread, before, f"run {thread}", {"agent": "test"})


KINDS = ["rewind", "rewind-hard", "branch", "edit", "fix-state", "run", "run-new"]


@pytest.fixture(params=["sqlite", "postgres"])
async def adk(request, tmp_path) -> str:
    url = str(tmp_path / "adk.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    return (await built_case(request, "adk", request.param, url)).url


async def frame(url: str, conn: Any = None) -> dict:
    return await dump(url, side_tables=False, conn=conn)


@pytest.mark.parametrize("kind", KINDS)
async def test_write_undo_redo_row_for_row_and_atomic(adk, kind) -> None:
    """The write, its undo and its redo, each first failed at every statement (every
    table, agentctl's included, as it was; read through one connection), then run:
    undo gives ADK's tables back row for row, redo as after the write, again and again."""
    import asyncpg

    url = adk
    conn = await asyncpg.connect(url) if "://" in url else None

    async def state() -> dict:
        return await dump(url, conn=conn)

    try:
        before = await frame(url, conn)
        async with open_store(url, readonly=False) as store:
            write = await prepare(kind, url, store)
            if kind == "fix-state":
                before = await frame(url, conn)
            h = store.history()
            assert await fails_cleanly_then_works(store, state, lambda: write(h)) > 1
            op_id = h.last_op_id
            assert op_id is not None
            after = await frame(url, conn)
            assert after != before
            assert await fails_cleanly_then_works(store, state, h.undo) > 1
            assert await frame(url, conn) == before, f"undo of {kind}"
            assert await fails_cleanly_then_works(store, state, h.redo) > 1
            assert await frame(url, conn) == after, f"redo of {kind}"
            undone = await h.undo()
            assert await frame(url, conn) == before
            redone = await h.redo()
            assert await frame(url, conn) == after
            assert undone.summary.startswith(f"undid operation {op_id} ")
            assert redone.summary.startswith(f"redid operation {op_id} ")
            # what the undo line names: created by the undo is deleted by the redo
            assert (undone.created, undone.deleted) == (redone.deleted, redone.created)
            log = await h.oplog()
            assert [(o.kind, o.undo_of) for o in log[:2]] == [("redo", op_id), ("undo", op_id)]
    finally:
        if conn is not None:
            await conn.close()


async def test_redo_refused_after_adk_wrote(adk) -> None:
    """After an undo, ADK appends to the session (its update_time moves): redo of the
    rewind is refused with one line, nothing written."""
    url = adk
    async with open_store(url, readonly=False) as store:
        h = store.history()
        await h.rewind(await _at(store, 2))
        await h.undo()
    await _adk_append(url, ("app", "u1", "main"), "meanwhile", {})
    state = await dump(url)
    async with open_store(url, readonly=False) as store:
        with pytest.raises(
            OperationError, match=f"^{MAIN} changed since operation 1 was undone; nothing was changed$"
        ):
            await store.history().redo()
    assert await dump(url) == state


async def test_undo_keeps_what_another_session_wrote_to_the_users_state(adk) -> None:
    """`user:` keys live in one user_states row shared by every session of the user: an
    edit of MAIN sets user:name, then ANOTHER session of the same user sets it again
    (MAIN's fingerprint does not move). Undo of the edit is refused, naming the row, and
    the other session's value stays."""
    url = adk
    async with open_store(url, readonly=False) as store:
        write = await prepare("edit", url, store)
        await write(store.history())
    await _adk_append(url, ("app", "u1", "elsewhere"), "hi", {"user:name": "other session"}, create=True)
    state = await dump(url)
    async with open_store(url, readonly=False) as store:
        with pytest.raises(
            OperationError,
            match=r"^cannot undo operation \d+ \(edit\): user_states row\(s\) app/u1 "
            r"changed after it",
        ):
            await store.history().undo()
    assert await dump(url) == state
    svc, close = await _adk_service(url)
    try:
        s = await svc.get_session(app_name="app", user_id="u1", session_id="elsewhere")
        assert s.state["user:name"] == "other session"
    finally:
        await close()


# ---- the previous release's op log ----------------------------------------------------------


_OLD_DDL = (
    "CREATE TABLE agentctl_adk_oplog (op_id INTEGER PRIMARY KEY, created_at TEXT NOT NULL, kind TEXT NOT NULL, "
    "summary TEXT NOT NULL, threads TEXT NOT NULL, details TEXT NOT NULL, undone INTEGER NOT NULL DEFAULT 0, "
    "undo_of INTEGER, undone_by INTEGER, purged INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE agentctl_adk_trash (op_id INTEGER NOT NULL, id VARCHAR(128) NOT NULL, app_name VARCHAR(128) "
    "NOT NULL, user_id VARCHAR(128) NOT NULL, session_id VARCHAR(128) NOT NULL, invocation_id VARCHAR(256) "
    "NOT NULL, timestamp TIMESTAMP NOT NULL, event_data JSONB)",
)
_JSONB = {
    "sessions": "state",
    "app_states": "state",
    "user_states": "state",
    "events": "event_data",
    "agentctl_adk_trash": "event_data",
}


async def _fixture(tmp_path: Path, kind: str, request: Any) -> str:
    """The previous release's database (SQLite), or its rows in ADK's Postgres tables with
    the old log's tables as that release made them there."""
    import sqlite3

    db = tmp_path / "adk.db"
    shutil.copyfile(FIXTURES / "adk.db", db)
    if kind == "sqlite":
        return str(db)
    import asyncpg

    dsn = request.getfixturevalue("pg_dsn")
    await build_adk("postgres", dsn)  # ADK's own tables
    conn = await asyncpg.connect(dsn)
    src = sqlite3.connect(db)
    src.row_factory = sqlite3.Row
    try:
        for table in ("events", "sessions", "app_states", "user_states"):
            await conn.execute(f"DELETE FROM {table}")
        for ddl in _OLD_DDL:
            await conn.execute(ddl)
        for table in (
            "sessions",
            "app_states",
            "user_states",
            "events",
            "agentctl_adk_oplog",
            "agentctl_adk_trash",
        ):
            for r in src.execute(f"SELECT * FROM {table}"):
                row = dict(r)
                if table in _JSONB:
                    row[_JSONB[table]] = json.loads(row[_JSONB[table]])
                await conn.execute(
                    f"INSERT INTO {table} SELECT * FROM json_populate_record(NULL::{table}, $1::json)",
                    json.dumps(row),
                )
    finally:
        src.close()
        await conn.close()
    return dsn


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_migration_is_atomic_and_keeps_every_op(tmp_path: Path, kind: str, request: Any) -> None:
    """The first write moves the old log into the journal in its own transaction: a
    failure at any statement of it leaves the old tables as they were; done, the old ops
    are listed as before (same ids, kinds, summaries, states), the old tables are gone."""
    url = await _fixture(tmp_path, kind, request)
    old = await dump(url)
    async with open_store(url, readonly=False) as store:
        h = store.history()
        listed = [(o.op_id, o.kind, o.summary, o.undone, o.undo_of) for o in await h.oplog()]
        assert [x[0] for x in listed] == [4, 3, 2, 1]
        target = await _at(store, 1, "app/u1/side")
        n = 1
        while True:  # the branch's statements come after the migration's: every one is failed
            try:
                with failing_at(store, n):
                    await h.branch(target, "after")
            except InjectedFault:
                assert await dump(url) == old, f"statement {n} left a change behind"
                n += 1
                continue
            break
        assert n > 10
        log = await h.oplog()
        assert [(o.op_id, o.kind, o.summary, o.undone, o.undo_of) for o in log[1:]] == listed
        assert log[0].op_id == 5 and log[0].kind == "branch"
    tables = await dump(url)
    assert "agentctl_adk_oplog" not in tables and "agentctl_adk_trash" not in tables


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_migrated_ops_undone_and_redone(tmp_path: Path, kind: str, request: Any) -> None:
    """Each old op still done is undone exactly and redone exactly; the op the old code
    undid refuses redo with one line, nothing written."""
    url = await _fixture(tmp_path, kind, request)
    written = await frame(url)
    async with open_store(url, readonly=False) as store:
        h = store.history()
        await h.undo(2)  # migrates first
        no_branch = await frame(url)
        await h.undo(1)
        built = json.loads((FIXTURES / "adk.built.json").read_text())["tables"]
        undone = await frame(url)
        if kind == "postgres":  # JSONB keeps its keys in an order of its own: the events by id
            undone.pop("events")
            ids = sorted(x["id"] for x in await _q(url, "SELECT id FROM events"))
            assert ids == sorted(re.search(r"\('id', '([^']+)'\)", e).group(1) for e in built.pop("events"))
        assert undone == built  # as ADK's builder left it
        await h.redo(1)
        assert await frame(url) == no_branch
        await h.redo(2)
        assert await frame(url) == written
        state = await dump(url)
        with pytest.raises(
            OperationError, match="^operation 3 was undone by an agentctl release before the journal"
        ):
            await h.redo(3)
        assert await dump(url) == state


async def _q(url: str, sql: str) -> list:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [dict(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_purge_dry_run_before_the_migration(tmp_path: Path, kind: str, request: Any) -> None:
    """Before the old log is migrated, purge's dry run counts what the purge frees (the
    migration's images too), rehearsed where nothing stays (Postgres: a transaction
    rolled back): every table as it was after it."""
    url = await _fixture(tmp_path, kind, request)
    old = await dump(url)
    async with open_store(url) as store:  # read-only, as `purge --dry-run` opens it
        said = await store.history().purge(dry_run=True)
    assert await dump(url) == old
    async with open_store(url, readonly=False) as store:
        assert await store.history().purge(dry_run=True) == said
        assert await dump(url) == old
        assert said.ops == [1, 2] and said.rows > 0
        done = await store.history().purge()
    assert (done.ops, done.rows) == (said.ops, said.rows)
