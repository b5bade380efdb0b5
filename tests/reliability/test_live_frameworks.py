"""agentctl's writes next to the frameworks' own live writers (issue 22 item 1).

A framework's write always wins: agentctl takes its locks in the order the savers take
them (LangGraph's `put`: checkpoint_blobs, then checkpoints; ADK's `append_event`: the
session row, then events; the OpenAI SDK: the session row, then items), gives way when
it waits on a lock (a short `lock_timeout`), retries its whole transaction a few times
and otherwise exits 6 with one line, nothing changed.

The deterministic test holds a LangGraph-style transaction open across agentctl's
write (the order that deadlocked); the loop tests run a few hundred framework writes
while agentctl rewinds, prunes and undoes on the same database, then check that no
framework write failed, no row was lost, nothing is orphaned and `doctor` exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.contract_formats import dump, is_pg
from tests.support.contract_formats import psycopg_dsn as pg_libpq
from tests.support.rig import REPO, run_sync
from tests.support.sampledb import cli

pytest.importorskip("langgraph")


def agentctl(db: str, *args: str) -> subprocess.Popen:
    """`agentctl --db DB ARGS` as a separate process (pipes for its output)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", db, *args],
        cwd=str(REPO),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_blocked(conn, pid: int, timeout: float = 20) -> int:
    """Wait until some other backend (agentctl's) waits on a lock `pid` holds; its pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with conn.cursor() as cur:
            cur.execute("SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (pid,))
            found = cur.fetchone()
            if found:
                return found[0]
        time.sleep(0.02)
    pytest.fail("agentctl never waited on the framework's transaction")


def locks_on(conn, pid: int, table: str) -> list[str]:
    """The lock modes backend `pid` holds on `table`."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE l.pid = %s AND c.relname = %s AND l.granted",
            (pid, table),
        )
        return [r[0] for r in cur.fetchall()]


def test_langgraph_put_order_in_a_transaction_agentctl_writes_meanwhile(pg_dsn):
    """The issue's reproduction: a transaction upserts a checkpoint_blobs row (as
    PostgresSaver.put does first), `agentctl rewind THREAD~1 --yes` starts, then the
    transaction upserts a checkpoints row. The framework's transaction commits; agentctl
    succeeds (after waiting or a retry) or exits 6 with one line, nothing changed."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.types.json import Jsonb

    from agentctl.storage.langgraph.history import uuid6_after
    from tests.formats.test_langgraph_writes import loop_graph

    dsn = pg_libpq(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(4).compile(checkpointer=saver).invoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}
        )
    with psycopg.connect(dsn, autocommit=True) as watch, psycopg.connect(dsn) as fw:
        with watch.cursor() as cur:
            cur.execute("SELECT count(*) FROM checkpoints")
            before = cur.fetchone()[0]
        fw_pid = fw.info.backend_pid
        with fw.cursor() as cur:  # the framework's put, first half
            cur.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                "VALUES ('t', '', 'log', 'fw-1', 'msgpack', %s) ON CONFLICT DO NOTHING",
                (b"\x90",),
            )
        proc = agentctl(pg_dsn, "rewind", "t~1", "--yes")
        try:
            waiting = wait_until_blocked(watch, fw_pid)
            assert locks_on(watch, waiting, "checkpoints") == []  # it waits before taking checkpoints
            new_id = uuid6_after(None)
            with fw.cursor() as cur:  # the second half: must not deadlock
                cur.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                    "checkpoint, metadata) VALUES ('t', '', %s, NULL, %s, %s) ON CONFLICT "
                    "(thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET checkpoint = EXCLUDED.checkpoint",
                    (
                        new_id,
                        Jsonb({"v": 1, "id": new_id, "channel_values": {}, "channel_versions": {}}),
                        Jsonb({"source": "loop", "step": 99}),
                    ),
                )
            fw.commit()  # raises DeadlockDetected when the framework lost
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        with watch.cursor() as cur:
            cur.execute("SELECT count(*) FROM checkpoints")
            after = cur.fetchone()[0]
    assert proc.returncode in (0, 6), (proc.returncode, err)
    assert "Traceback" not in err
    if proc.returncode == 6:
        said = [line for line in err.splitlines() if line.startswith("agentctl:")]
        assert len(said) == 1 and "DETAIL" not in err and "\\n" not in err, err
        assert after == before + 1  # the framework's row only
    else:
        assert after == before + 2, (out, err)  # the framework's row and agentctl's fork


def test_agentctl_gives_way_to_a_framework_transaction_that_stays_open(pg_dsn):
    """A framework transaction holds its row lock on checkpoint_blobs for longer than
    agentctl waits: agentctl retries, then exits 6 with one line; nothing was changed and
    the framework's transaction then commits."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.formats.test_langgraph_writes import loop_graph

    dsn = pg_libpq(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(4).compile(checkpointer=saver).invoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}
        )
    before = run_sync(lambda: dump(pg_dsn, side_tables=False))
    with psycopg.connect(dsn) as fw:
        with fw.cursor() as cur:
            cur.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                "VALUES ('t', '', 'log', 'fw-1', 'msgpack', %s)",
                (b"\x90",),
            )
        started = time.monotonic()
        proc = agentctl(pg_dsn, "rewind", "t~1", "--yes")
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - started
        assert run_sync(lambda: dump(pg_dsn, side_tables=False)) == before  # nothing changed (yet)
        fw.commit()
    assert proc.returncode == 6, (out, err)
    said = [line for line in err.splitlines() if line.startswith("agentctl:")]
    assert len(said) == 1 and "gave way" in said[0] and "nothing was changed" in said[0], err
    assert took < 20
    after = run_sync(lambda: dump(pg_dsn, side_tables=False))
    assert len(after["checkpoint_blobs"]) == len(before["checkpoint_blobs"]) + 1
    assert after["checkpoints"] == before["checkpoints"]


# ---- a few hundred framework writes while agentctl writes ---------------------------------------

WRITES = 300


class LiveWriter(threading.Thread):
    """The framework's writer on a thread: `write(i)` for i < n, each failure kept.
    `setup()`/`teardown()` run on the thread (a connection, an event loop)."""

    def __init__(
        self,
        n: int,
        write: Callable[[int], Any],
        setup: Callable[[], Any] = lambda: None,
        teardown: Callable[[], Any] = lambda: None,
    ):
        super().__init__(daemon=True)
        self.n, self.write, self.setup, self.teardown = n, write, setup, teardown
        self.failures: list[str] = []
        self.done = 0

    def run(self) -> None:
        self.setup()
        try:
            for i in range(self.n):
                try:
                    self.write(i)
                    self.done += 1
                except Exception as exc:  # noqa: BLE001 - what the agent would have crashed on
                    self.failures.append(f"{i}: {type(exc).__name__}: {exc}")
        finally:
            self.teardown()


def agentctl_meanwhile(
    writer: LiveWriter, db: str, commands: list[list[str]], around: Callable[[int, str], Any] | None = None
) -> list[tuple[list[str], int, str]]:
    """Run agentctl's writes (argvs), all of them again and again while the writer runs
    (at least once); each must exit 0, or refuse an undo in one line (exit 1: the
    framework wrote to what it would restore). `around(i, "before" | "after")` is called
    around the i-th command of the first round. Returns (argv, code, stderr)."""
    writer.start()
    seen: list[tuple[list[str], int, str]] = []
    cycles = 0
    while writer.is_alive() or cycles == 0:
        for i, argv in enumerate(commands):
            if around is not None and cycles == 0:
                around(i, "before")
            r = cli(db, *argv)
            if around is not None and cycles == 0:
                around(i, "after")
            assert "Traceback" not in r.stderr, (argv, r.stderr)
            said = [line for line in r.stderr.splitlines() if line.startswith("agentctl:")]
            assert r.exit_code == 0 or (argv[0] == "undo" and r.exit_code == 1 and len(said) == 1), (
                argv,
                r.exit_code,
                r.stderr,
            )
            seen.append((argv, r.exit_code, r.stderr))
        cycles += 1
    writer.join(120)
    assert not writer.is_alive()
    assert writer.failures == [], writer.failures[:5]
    assert writer.done == writer.n
    r = cli(db, "doctor")
    assert r.exit_code == 0 or (r.exit_code == 2 and "does not support doctor" in r.stderr), (
        r.stdout,
        r.stderr,
    )
    return seen


def rows(db: str, sql: str) -> list[tuple]:
    """The rows of a query, SQLite or Postgres."""
    if not is_pg(db):
        conn = sqlite3.connect(db)
        try:
            return [tuple(r) for r in conn.execute(sql)]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(pg_libpq(db)) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


@pytest.fixture(params=["sqlite", "postgres"])
def kind_db(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "live.db")
    return request.getfixturevalue("pg_dsn")


def test_langgraph_live_saver_and_agentctl(kind_db):
    """LangGraph's saver puts a few hundred checkpoints (graph runs on `live`) while
    agentctl rewinds, prunes and undoes on `idle` and `live`."""
    from tests.formats.test_langgraph_writes import loop_graph
    from tests.support.contract_formats import _lg_saver

    db = kind_db
    put: list[str] = []
    state: dict[str, Any] = {}
    with _lg_saver(db) as saver:
        loop_graph(6).compile(checkpointer=saver).invoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "idle"}}
        )

    # LangGraph saves a step's pending writes in the background, not ordered after the
    # checkpoints that follow: a put_writes for checkpoint C can come after C's three
    # successors were put (under load; CI once), after `prune --keep-last 3` deleted C. The
    # first round makes that happen: the first run's first put_writes (the input
    # checkpoint's: 3 rows) is held until the prune has run, then the undo finds `live`
    # changed and leaves its checkpoints in the trash; the 3 rows stay orphans.
    held, hold, released = threading.Event(), threading.Event(), threading.Event()

    def setup() -> None:
        state["cm"] = _lg_saver(db)
        saver = state["cm"].__enter__()
        inner, inner_writes = saver.put, saver.put_writes

        def recorded(config, checkpoint, metadata, new_versions):
            out = inner(config, checkpoint, metadata, new_versions)
            put.append(checkpoint["id"])
            return out

        def late(config, writes, task_id, task_path=""):
            first = not held.is_set()
            if first:
                state["late"] = config["configurable"]["checkpoint_id"]
                held.set()
                assert hold.wait(60)
            out = inner_writes(config, writes, task_id, task_path)
            if first:
                released.set()
            return out

        saver.put, saver.put_writes = recorded, late
        state["graph"] = loop_graph(3).compile(checkpointer=saver)

    def write(i: int) -> None:
        state["graph"].invoke({"n": 0, "log": []}, {"configurable": {"thread_id": "live"}})

    commands = [
        ["rewind", "idle~1", "--yes"],
        ["undo"],
        ["prune", "--all", "--keep-last", "3", "--yes", "--no-backup"],
        ["undo"],
        ["rewind", "live~1", "--yes"],
        ["rewind", "idle~2", "--hard", "--yes", "--no-backup"],
        ["undo"],
    ]

    def around(i: int, when: str) -> None:
        if i == 2 and when == "before":  # the held write's checkpoint and its 4 successors put
            assert held.wait(60)
            deadline = time.monotonic() + 60
            while len(put) < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
        if i == 2 and when == "after":
            hold.set()
            assert released.wait(60)

    W = "checkpoint_writes" if is_pg(db) else "writes"
    number_commits(db, W)
    writer = LiveWriter(WRITES // 5, write, setup, lambda: state["cm"].__exit__(None, None, None))
    agentctl_meanwhile(writer, db, commands, around)
    assert len(put) >= WRITES
    have = {r[0] for r in rows(db, "SELECT checkpoint_id FROM checkpoints")}
    trashed = {r[0] for r in rows(db, "SELECT checkpoint_id FROM agentctl_trash_checkpoints")}
    assert set(put) <= have | trashed  # no row lost
    # The orphans: LangGraph's writes of a checkpoint agentctl had deleted, numbered after
    # the delete; an orphan agentctl left (a write of C it did not delete with C) would be
    # numbered before C's delete.
    orphans = rows(
        db,
        "SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, "
        "(SELECT MAX(s.n) FROM test_commits s WHERE s.what = 'write' AND s.thread_id = w.thread_id "
        "AND s.checkpoint_ns = w.checkpoint_ns AND s.checkpoint_id = w.checkpoint_id AND "
        "s.task_id = w.task_id AND s.idx = w.idx), "
        "(SELECT MAX(s.n) FROM test_commits s WHERE s.what = 'delete' AND s.thread_id = w.thread_id "
        f"AND s.checkpoint_ns = w.checkpoint_ns AND s.checkpoint_id = w.checkpoint_id) FROM {W} w "
        "WHERE NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = w.thread_id AND "
        "c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id)",
    )
    left_by_agentctl = [o for o in orphans if o[2] not in trashed or o[6] is None or (o[5] or 0) < o[6]]
    assert left_by_agentctl == []
    assert {o[2] for o in orphans if o[0] == "live"} >= {state["late"]} and all(
        o[0] == "live" for o in orphans
    )


def number_commits(db: str, writes: str) -> None:
    """The test's own record `test_commits`: a number for each row inserted into the
    saver's writes table and for each checkpoint deleted, in the order the writers
    commit (a trigger, in the writer's transaction: on SQLite one writer at a time; on
    Postgres agentctl holds the saver's tables locked while it writes)."""
    keys = "thread_id, checkpoint_ns, checkpoint_id"
    if not is_pg(db):
        with sqlite3.connect(db) as conn:
            conn.executescript(
                "CREATE TABLE test_commits (n INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT, thread_id TEXT, "
                "checkpoint_ns TEXT, checkpoint_id TEXT, task_id TEXT, idx INTEGER);"
                f"CREATE TRIGGER test_commits_w AFTER INSERT ON {writes} BEGIN INSERT INTO test_commits "
                f"(what, {keys}, task_id, idx) VALUES ('write', NEW.thread_id, NEW.checkpoint_ns, "
                "NEW.checkpoint_id, NEW.task_id, NEW.idx); END;"
                "CREATE TRIGGER test_commits_c AFTER DELETE ON checkpoints BEGIN INSERT INTO test_commits "
                f"(what, {keys}) VALUES ('delete', OLD.thread_id, OLD.checkpoint_ns, OLD.checkpoint_id); END;"
            )
        return
    import psycopg

    with psycopg.connect(pg_libpq(db)) as conn:
        conn.execute(
            "CREATE TABLE test_commits (n bigserial PRIMARY KEY, what text, thread_id text, "
            "checkpoint_ns text, checkpoint_id text, task_id text, idx integer)"
        )
        conn.execute(
            "CREATE FUNCTION test_commits_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF TG_OP = 'INSERT' THEN INSERT INTO test_commits (what, {keys}, task_id, idx) VALUES "
            "('write', NEW.thread_id, NEW.checkpoint_ns, NEW.checkpoint_id, NEW.task_id, NEW.idx); "
            f"ELSE INSERT INTO test_commits (what, {keys}) VALUES ('delete', OLD.thread_id, OLD.checkpoint_ns, "
            "OLD.checkpoint_id); END IF; RETURN NULL; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER test_commits_w AFTER INSERT ON {writes} FOR EACH ROW "
            "EXECUTE FUNCTION test_commits_fn()"
        )
        conn.execute(
            "CREATE TRIGGER test_commits_c AFTER DELETE ON checkpoints FOR EACH ROW "
            "EXECUTE FUNCTION test_commits_fn()"
        )


def test_adk_live_service_and_agentctl(kind_db):
    """ADK's DatabaseSessionService appends a few hundred events to `live` while agentctl
    rewinds (soft and hard) and undoes on `idle` of the same app and user."""
    from google.adk.events import Event, EventActions

    from tests.support.contract_formats import _adk_service, _adk_text

    db = kind_db

    async def make() -> None:
        svc, close = await _adk_service(db)
        try:
            s = await svc.create_session(app_name="app", user_id="u", session_id="idle")
            for i in range(6):
                await svc.append_event(
                    s,
                    Event(
                        author="user",
                        invocation_id=f"i-{i}",
                        content=_adk_text("user", f"q{i}"),
                        actions=EventActions(state_delta={"turn": i}),
                    ),
                )
            await svc.create_session(app_name="app", user_id="u", session_id="live")
        finally:
            await close()

    run_sync(make)
    st: dict[str, Any] = {}
    appended: list[str] = []

    def setup() -> None:
        st["loop"] = loop = asyncio.new_event_loop()
        st["svc"], st["close"] = loop.run_until_complete(_adk_service(db))
        st["s"] = loop.run_until_complete(
            st["svc"].get_session(app_name="app", user_id="u", session_id="live")
        )

    def write(i: int) -> None:
        ev = Event(
            author="user",
            invocation_id=f"live-{i}",
            content=_adk_text("user", f"live {i}"),
            actions=EventActions(state_delta={"n": i}),
        )
        st["loop"].run_until_complete(st["svc"].append_event(st["s"], ev))
        appended.append(ev.id)

    def teardown() -> None:
        st["loop"].run_until_complete(st["close"]())
        st["loop"].close()

    writer = LiveWriter(WRITES, write, setup, teardown)
    agentctl_meanwhile(
        writer,
        db,
        [
            ["rewind", "app/u/idle@4", "--yes"],
            ["undo"],
            ["rewind", "app/u/idle@2", "--hard", "--yes", "--no-backup"],
            ["undo"],
        ],
    )
    events = rows(db, "SELECT id, invocation_id FROM events WHERE session_id = 'live' ORDER BY timestamp, id")
    assert [e[0] for e in events] == appended  # every one, in order
    state = rows(db, "SELECT state FROM sessions WHERE id = 'live'")[0][0]
    assert (state if isinstance(state, dict) else json.loads(state))["n"] == WRITES - 1
    assert len(rows(db, "SELECT id FROM events WHERE session_id = 'idle'")) == 6
    assert (
        rows(
            db,
            "SELECT e.id FROM events e WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE "
            "s.app_name = e.app_name AND s.user_id = e.user_id AND s.id = e.session_id)",
        )
        == []
    )


def test_openai_live_session_and_agentctl(tmp_path):
    """The SDK's SQLiteSession adds a few hundred items to `live` while agentctl rewinds
    `live` (its later items to an archive session), rewinds and undoes on `idle`."""
    from agents import SQLiteSession

    db = str(tmp_path / "oa.db")

    async def make() -> None:
        s = SQLiteSession("idle", db)
        await s.add_items([{"role": "user", "content": f"idle {i}"} for i in range(6)])
        live = SQLiteSession("live", db)
        await live.add_items([{"role": "user", "content": "live start"}])
        s.close()
        live.close()

    run_sync(make)
    st: dict[str, Any] = {}

    def setup() -> None:
        st["loop"] = asyncio.new_event_loop()
        st["s"] = SQLiteSession("live", db)

    def write(i: int) -> None:
        st["loop"].run_until_complete(st["s"].add_items([{"role": "user", "content": f"live {i}"}]))

    def teardown() -> None:
        st["s"].close()
        st["loop"].close()

    writer = LiveWriter(WRITES, write, setup, teardown)
    agentctl_meanwhile(
        writer,
        db,
        [
            ["rewind", "idle@4", "--yes"],
            ["undo"],
            ["rewind", "live@1", "--yes"],
            ["rewind", "idle@2", "--hard", "--yes", "--no-backup"],
            ["undo"],
        ],
    )
    texts = [
        json.loads(r[0])["content"]
        for r in rows(db, "SELECT message_data FROM agent_messages WHERE session_id <> 'idle' ORDER BY id")
    ]
    assert texts == ["live start"] + [f"live {i}" for i in range(WRITES)]  # none lost, in order
    assert len(rows(db, "SELECT id FROM agent_messages WHERE session_id = 'idle'")) == 6
    assert (
        rows(
            db,
            "SELECT m.id FROM agent_messages m WHERE NOT EXISTS (SELECT 1 FROM agent_sessions s "
            "WHERE s.session_id = m.session_id)",
        )
        == []
    )


def test_article_live_store_and_agentctl(tmp_path):
    """The article's AgentStorage saves a few hundred messages to a live session while
    agentctl rewinds it, and rewinds, prunes and undoes another session."""
    from tests.support.article_storage import AgentStorage, init_database

    db = str(tmp_path / "article.db")
    init_database(db)
    st = AgentStorage(db)
    user = st.create_user("alice")["id"]
    idle = st.create_session(user, "idle")["id"]
    for i in range(6):
        st.save_message(idle, "user", f"idle {i}", token_count=1)
    live = st.create_session(user, "live")["id"]
    st.save_message(live, "user", "live start", token_count=1)
    writer = LiveWriter(WRITES, lambda i: st.save_message(live, "assistant", f"live {i}", token_count=1))
    agentctl_meanwhile(
        writer,
        db,
        [
            ["rewind", f"{idle}@4", "--yes"],
            ["undo"],
            ["rewind", f"{live}@1", "--yes"],
            ["prune", idle, "--older-than", "0s", "--yes", "--no-backup"],
            ["undo"],
        ],
    )  # a session goes whole
    texts = [r[0] for r in rows(db, f"SELECT content FROM messages WHERE session_id <> '{idle}' ORDER BY id")]
    assert texts == ["live start"] + [f"live {i}" for i in range(WRITES)]
    assert len(rows(db, f"SELECT id FROM messages WHERE session_id = '{idle}'")) == 6
    assert (
        rows(
            db,
            "SELECT m.id FROM messages m WHERE NOT EXISTS (SELECT 1 FROM sessions s "
            "WHERE s.id = m.session_id)",
        )
        == []
    )


def test_openai_sdk_transaction_on_postgres_agentctl_rewinds_meanwhile(pg_dsn):
    """The SDK's SQLAlchemySession order: the session's row locked (FOR UPDATE), then its
    items (pop_item deletes the tail). agentctl's rewind starting in between waits for the
    session's row instead of locking the items first: the SDK's transaction commits, and
    agentctl rewinds what the SDK left."""
    import psycopg
    from agents.extensions.memory import SQLAlchemySession

    from tests.support.contract_formats import sqlalchemy_engine

    async def make() -> None:
        engine = sqlalchemy_engine(pg_dsn)
        try:
            s = SQLAlchemySession("s", engine=engine, create_tables=True)
            await s.add_items([{"role": "user", "content": f"q{i}"} for i in range(6)])
        finally:
            await engine.dispose()

    run_sync(make)
    with (
        psycopg.connect(pg_libpq(pg_dsn), autocommit=True) as watch,
        psycopg.connect(pg_libpq(pg_dsn)) as sdk,
    ):
        pid = sdk.info.backend_pid
        with sdk.cursor() as cur:
            cur.execute("SELECT session_id FROM agent_sessions WHERE session_id = 's' FOR UPDATE")
        proc = agentctl(pg_dsn, "rewind", "s@3", "--yes")
        try:
            waiting = wait_until_blocked(watch, pid)
            assert "RowExclusiveLock" not in locks_on(watch, waiting, "agent_messages")  # no item touched yet
            with sdk.cursor() as cur:  # pop_item: the tail goes
                cur.execute(
                    "DELETE FROM agent_messages WHERE id = (SELECT MAX(id) FROM agent_messages "
                    "WHERE session_id = 's') RETURNING message_data"
                )
                assert cur.fetchone()
            sdk.commit()  # raises DeadlockDetected when the SDK lost
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    texts = [
        json.loads(r[0])["content"]
        for r in rows(pg_dsn, "SELECT message_data FROM agent_messages WHERE session_id = 's' ORDER BY id")
    ]
    assert texts == ["q0", "q1", "q2"]
    assert len(rows(pg_dsn, "SELECT id FROM agent_messages")) == 5  # q3, q4 in the archive session


def test_a_deadlock_on_agentctls_own_tables_is_one_line():
    """Where agentctl does not retry (AgentOS's tables, its own format), a deadlock or a
    lock timeout is still one line, without Postgres's DETAIL and HINT."""
    import asyncpg

    from agentctl.errors import DatabaseBusy
    from agentctl.storage.agentos.postgres import map_pg_error

    exc = asyncpg.DeadlockDetectedError(
        "deadlock detected\nDETAIL:  Process 1 waits for ShareLock on "
        "relation 5; blocked by process 2.\nHINT:  See server log."
    )
    err = map_pg_error(exc, "127.0.0.1:5432/db")
    assert isinstance(err, DatabaseBusy) and err.exit_code == 6
    assert str(err) == "127.0.0.1:5432/db: deadlock detected; nothing was changed"


def test_a_role_that_may_not_set_deadlock_timeout_still_writes(pg_dsn):
    """deadlock_timeout is a superuser's setting: for another role agentctl keeps the
    server's, sets only its lock_timeout, and the write goes through."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.formats.test_langgraph_writes import loop_graph
    from tests.support.contract_formats import pg_schema

    dsn = pg_libpq(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(3).compile(checkpointer=saver).invoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}
        )
    role, schema = "u_" + uuid.uuid4().hex[:10], pg_schema(pg_dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        conn.execute(f"GRANT ALL ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}")
    try:
        parts = urlsplit(pg_dsn)
        as_role = urlunsplit(parts._replace(netloc=f"{role}:pw@{parts.hostname}:{parts.port}"))
        r = cli(as_role, "rewind", "t~1", "--yes")
        assert r.exit_code == 0, r.stderr
        assert cli(as_role, "undo").exit_code == 0
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_adk_service_transaction_on_postgres_agentctl_rewinds_meanwhile(pg_dsn):
    """ADK's append_event order: the session's row locked (FOR UPDATE), then the event
    inserted and the row updated. agentctl's rewind starting in between waits on the
    session's row before touching events: ADK's transaction commits, and agentctl's
    rewind then sees ADK's event (its rewind event comes after it)."""
    import psycopg
    from google.adk.events import Event

    from tests.support.contract_formats import _adk_service, _adk_text

    async def make() -> None:
        svc, close = await _adk_service(pg_dsn)
        try:
            s = await svc.create_session(app_name="app", user_id="u", session_id="s")
            for i in range(4):
                await svc.append_event(
                    s, Event(author="user", invocation_id=f"i-{i}", content=_adk_text("user", f"q{i}"))
                )
        finally:
            await close()

    run_sync(make)
    with (
        psycopg.connect(pg_libpq(pg_dsn), autocommit=True) as watch,
        psycopg.connect(pg_libpq(pg_dsn)) as adk,
    ):
        pid = adk.info.backend_pid
        with adk.cursor() as cur:
            cur.execute(
                "SELECT id FROM sessions WHERE app_name = 'app' AND user_id = 'u' AND id = 's' FOR UPDATE"
            )
        proc = agentctl(pg_dsn, "rewind", "app/u/s@2", "--yes")
        try:
            waiting = wait_until_blocked(watch, pid)
            assert "RowExclusiveLock" not in locks_on(watch, waiting, "events")  # no event touched yet
            with adk.cursor() as cur:  # the rest of append_event
                cur.execute(
                    "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
                    "event_data) SELECT 'adk-late', 'app', 'u', 's', 'i-late', timestamp + "
                    "interval '1 millisecond', event_data FROM events WHERE session_id = 's' "
                    "ORDER BY timestamp DESC LIMIT 1"
                )
                cur.execute("UPDATE sessions SET update_time = now() WHERE id = 's'")
            adk.commit()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    ids = [r[0] for r in rows(pg_dsn, "SELECT id FROM events WHERE session_id = 's' ORDER BY timestamp, id")]
    assert len(ids) == 6 and ids[4] == "adk-late"  # ADK's event kept, agentctl's rewind event after it


def test_agentctl_retries_after_giving_way_and_then_writes(pg_dsn):
    """A framework transaction holds its lock a little longer than agentctl waits (1 s):
    agentctl gives way, runs its write again, and succeeds once the framework committed."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.formats.test_langgraph_writes import loop_graph

    dsn = pg_libpq(pg_dsn)
    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        loop_graph(4).compile(checkpointer=saver).invoke(
            {"n": 0, "log": []}, {"configurable": {"thread_id": "t"}}
        )
    before = len(rows(pg_dsn, "SELECT checkpoint_id FROM checkpoints"))
    with psycopg.connect(dsn, autocommit=True) as watch, psycopg.connect(dsn) as fw:
        with fw.cursor() as cur:
            cur.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                "VALUES ('t', '', 'log', 'fw-1', 'msgpack', %s)",
                (b"\x90",),
            )
        proc = agentctl(pg_dsn, "rewind", "t~1", "--yes")
        try:
            wait_until_blocked(watch, fw.info.backend_pid)
            time.sleep(1.0)  # longer than agentctl's lock_timeout: it gives way at least once
            fw.commit()
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert len(rows(pg_dsn, "SELECT checkpoint_id FROM checkpoints")) == before + 1  # the fork
    assert [r[0] for r in rows(pg_dsn, "SELECT kind FROM agentctl_journal")] == ["rewind"]
