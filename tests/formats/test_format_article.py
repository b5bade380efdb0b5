"""The article's session store as an agentctl format (agentctl/storage/article), on real
SQLite files and a real Postgres server; no mocks.

SQLite databases are copies of sample_db/sessions.db (written by the article's SQL) or
made by the article's own code (tests/support/article_storage.py); Postgres databases
get the five tables from the format's Postgres DDL and the same rows through asyncpg.
After every write the article's own reads (`AgentStorage`) must return what the write
intended, `PRAGMA foreign_key_check` must be empty, FTS5's integrity-check must pass,
and undo must restore every table row for row.
"""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from agentctl.errors import (
    AgentctlError,
    CheckpointNotFound,
    MergeConflictError,
    OperationError,
    ReadOnlyDatabase,
    UsageError,
)
from agentctl.storage import PruneSpec, Unsupported, detect, open_store
from agentctl.storage.article import schema as S
from tests.support.article_storage import FTS_TRIGGERS, AgentStorage, init_database
from tests.support.rig import REPO

SAMPLE = REPO / "sample_db" / "sessions.db"
TABLES = ("users", "sessions", "messages", "tasks", "tool_logs")


# ---- databases ---------------------------------------------------------------------------


def _sqlite_rows(path: str, table: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
    finally:
        conn.close()


async def _fill_pg(dsn: str, source: str = str(SAMPLE)) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(S.POSTGRES_DDL)
        for table in TABLES:
            src = sqlite3.connect(source)
            cur = src.execute(f"SELECT * FROM {table} ORDER BY id")
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
            src.close()
            if rows:
                await conn.executemany(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES "
                    f"({', '.join(f'${i + 1}' for i in range(len(cols)))})",
                    rows,
                )
        for table in ("messages", "tool_logs"):
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT COALESCE(MAX(id), 1) FROM {table}))"
            )
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def article_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        dest = tmp_path / "sessions.db"
        shutil.copyfile(SAMPLE, dest)
        return str(dest)
    dsn = request.getfixturevalue("pg_dsn")
    await _fill_pg(dsn)
    return dsn


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    dest = tmp_path / "sessions.db"
    shutil.copyfile(SAMPLE, dest)
    return str(dest)


async def dump(url: str) -> dict[str, list[tuple]]:
    """Every row of the article's five tables, by id."""
    if not url.startswith("postgres"):
        return {t: _sqlite_rows(url, t) for t in TABLES}
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return {t: [tuple(r) for r in await conn.fetch(f"SELECT * FROM {t} ORDER BY id")] for t in TABLES}
    finally:
        await conn.close()


def sqlite_valid(path: str) -> None:
    """The article's code can go on with this file: no foreign key violation, FTS5 ok."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'").fetchone():
            conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)")
            conn.commit()
    finally:
        conn.close()


async def valid(url: str) -> None:
    if not url.startswith("postgres"):
        sqlite_valid(url)
        return
    import asyncpg

    conn = await asyncpg.connect(url)
    try:  # the FKs are enforced by Postgres; the counters must agree with the messages
        bad = await conn.fetch(
            "SELECT id FROM sessions s WHERE message_count <> (SELECT COUNT(*) FROM messages m "
            "WHERE m.session_id = s.id) AND id NOT IN ('s-alice-empty')"
        )
        assert [r[0] for r in bad] == []
    finally:
        await conn.close()


def fts_search(path: str, term: str) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (term,)
            )
        ]
    finally:
        conn.close()


# ---- detection and reads ------------------------------------------------------------------


async def test_detection(article_url):
    assert (await detect(article_url)).name == "article"
    async with open_store(article_url) as store:
        assert store.format.name == "article"
        assert store.kind == ("postgres" if article_url.startswith("postgres") else "sqlite")
        with pytest.raises(ReadOnlyDatabase):  # plans work read-only; a write does not
            await store.history().delete_thread("s-bob-trip")


async def test_thread_summaries_and_filters(article_url):
    async with open_store(article_url) as store:
        rows = await store.thread_summaries(50)
        ids = [t.thread_id for t in rows]
        assert ids[0] == "s-alice-empty"  # updated last
        assert set(ids) == {
            "s-agent-basics",
            "s-weather-paris",
            "s-bob-regex",
            "s-bob-trip",
            "s-wang-report",
            "s-alice-empty",
        }
        assert await store.count_threads() == 6
        assert await store.count_threads("s-bob") == 2
        w = next(t for t in rows if t.thread_id == "s-weather-paris")
        d = w.to_dict()
        assert d["checkpoints"] == 6 and d["head_step"] == 6 and d["head_checkpoint_id"] == "msg-13"
        assert d["user_id"] == "u-alice" and d["user_name"] == "Alice" and d["status"] == "completed"
        assert d["message_count"] == 6 and d["total_tokens"] == 107 and d["model"] == "gpt-4o"
        assert d["branch_of"] is None
        by_thread = [t.thread_id for t in await store.thread_summaries(50, sort="thread", descending=False)]
        assert by_thread == sorted(ids)
        by_count = await store.thread_summaries(2, sort="checkpoints")
        assert [t.thread_id for t in by_count] == ["s-wang-report", "s-agent-basics"]
        assert [t.thread_id for t in await store.thread_summaries(50, user="Bob")] == [
            "s-bob-trip",
            "s-bob-regex",
        ]
        assert [t.thread_id for t in await store.thread_summaries(50, user="u-bob", status="paused")] == [
            "s-bob-trip"
        ]
        assert [
            t.thread_id
            for t in await store.thread_summaries(50, prefix="s-w", sort="thread", descending=False)
        ] == ["s-wang-report", "s-weather-paris"]
        assert (await store.thread_summary("s-wang-report")).to_dict()["user_name"] == "王伟"
        assert await store.thread_summary("nope") is None
        assert await store.find_thread_ids("s-b") == ["s-bob-regex", "s-bob-trip"]
        with pytest.raises(UsageError):
            await store.thread_summaries(sort="size")


async def test_read_thread_get_state_tools(article_url):
    async with open_store(article_url) as store:
        assert await store.count() == 31
        assert await store.count("s-weather-paris") == 6
        metas = await store.read_thread("s-weather-paris")
        assert [m.checkpoint_id for m in metas] == [f"msg-{i}" for i in range(8, 14)]
        assert [m.step for m in metas] == list(range(1, 7))
        assert metas[0].parent_checkpoint_id is None and metas[3].parent_checkpoint_id == "msg-10"
        assert metas[1].tags == ["tool_call"] and metas[2].tags == ["tool_result"]
        page = await store.read_thread("s-weather-paris", 2, 2)
        assert [(m.step, m.checkpoint_id, m.parent_checkpoint_id) for m in page] == [
            (3, "msg-10", "msg-9"),
            (4, "msg-11", "msg-10"),
        ]
        desc = await store.read_thread("s-weather-paris", 2, 1, descending=True)
        assert [(m.step, m.checkpoint_id) for m in desc] == [(5, "msg-12"), (4, "msg-11")]

        cp = await store.get("msg-11")  # step 4: the transcript up to message 4
        assert cp.metadata.step == 4 and cp.metadata.thread_id == "s-weather-paris"
        assert [m["role"] for m in cp.messages] == ["user", "assistant", "tool", "assistant"]
        assert cp.messages[1]["tool_calls"][0]["name"] == "get_weather"
        assert cp.messages[2]["tool_call_id"] == "call_w1"
        assert cp.state["session"]["title"] == "Weather in Paris"
        assert cp.state["session"]["metadata"] == {}
        assert cp.state["user"]["name"] == "Alice" and cp.state["user"]["quota_total"] == 100000
        assert [t["status"] for t in cp.state["tasks"]] == ["running"]
        assert list(cp.tools_result) == ["get_weather#3"]
        assert cp.tools_result["get_weather#3"]["output"]["forecast"] == "light rain"
        failed = (await store.get("msg-9")).tools_result["get_weather#2"]
        assert failed["success"] == 0 and "TimeoutError" in failed["error_message"]
        # an unlinked log (message_id NULL) belongs to the last message logged before it
        assert list((await store.get("msg-13")).tools_result) == ["unit_convert#4"]
        assert (await store.get("msg-12")).tools_result == {}
        wang = await store.get("msg-21")
        assert wang.state["session"]["metadata"] == {"department": "销售部", "quarter": "2026Q3"}
        assert await store.get("msg-999") is None and await store.get("nope") is None
        latest = await store.get_latest("s-weather-paris")
        assert latest.metadata.checkpoint_id == "msg-13" and len(latest.messages) == 6
        assert (await store.at_step("s-weather-paris", 2)).checkpoint_id == "msg-9"
        assert (await store.at_step("s-weather-paris", 1)).parent_checkpoint_id is None
        assert await store.at_step("s-weather-paris", 7) is None
        assert await store.get_metadata("msg-10") == metas[2]
        assert [c.checkpoint_id for c in await store.children("msg-10")] == ["msg-11"]
        assert await store.children("msg-13") == []
        assert await store.find_checkpoint_ids("msg-1", 3) == ["msg-1", "msg-10", "msg-11"]
        assert await store.find_checkpoint_ids("msg-3") == ["msg-3", "msg-30", "msg-31"]
        assert await store.find_checkpoint_ids("ck") == []
        seen = [cp async for cp in store.iter_checkpoints(["s-weather-paris"])]
        assert [c.metadata.step for c in seen] == list(range(1, 7))
        assert seen[-1].to_dict() == latest.to_dict()
        assert sum([1 async for _ in store.iter_checkpoints()]) == 31


async def test_refs_resolve_through_the_store(article_url):
    from agentctl.refs import resolve, resolve_thread

    async with open_store(article_url) as store:
        assert (await resolve(store, "msg-10")).step == 3
        assert (await resolve(store, "s-weather-paris@2")).checkpoint_id == "msg-9"
        assert (await resolve(store, "s-weather-paris")).checkpoint_id == "msg-13"
        assert (await resolve(store, "s-weather-paris~2")).checkpoint_id == "msg-11"
        assert await resolve_thread(store, "s-wang") == "s-wang-report"
        with pytest.raises(CheckpointNotFound):
            await resolve(store, "s-weather-paris@99")


async def test_search_fts_and_scan(sqlite_url):
    conn = sqlite3.connect(sqlite_url)
    conn.execute("CREATE VIRTUAL TABLE t_probe USING fts5(x)")  # fails loudly without FTS5
    conn.execute("DROP TABLE t_probe")
    conn.commit()
    conn.close()
    async with open_store(sqlite_url) as store:
        hits = await store.search("umbrella")
        assert store.last_search_path == "fts"
        assert [(h.checkpoint_id, h.where, h.role) for h in hits] == [("msg-13", "messages", "assistant")]
        assert "umbrella" in hits[0].snippet
        hits = await store.search("TIMEOUT")
        assert store.last_search_path == "fts"
        assert {(h.checkpoint_id, h.where) for h in hits} == {
            ("msg-10", "messages"),
            ("msg-9", "tools_result"),
        }
        assert all("timeout" in h.snippet.lower() for h in hits)
        assert [
            h.checkpoint_id for h in await store.search("paris", thread_id="s-weather-paris", role="user")
        ] == ["msg-8"]
        # Chinese text is no FTS5 token of unicode61: scanned
        hits = await store.search("规划器")
        assert store.last_search_path == "scan"
        assert {(h.checkpoint_id, h.where) for h in hits} == {
            ("msg-5", "messages"),
            ("msg-6", "messages"),
            ("msg-5", "tools_result"),
        }
        assert all("规划器" in h.snippet for h in hits)
    # stale index (the article's own save_message never feeds it): the index serves the
    # rows it has, the rows written since are scanned in the same search; no wrong hit
    AgentStorage(sqlite_url).save_message("s-bob-trip", "user", "Add a day in Osaka please", token_count=7)
    async with open_store(sqlite_url) as store:
        hits = await store.search("osaka")
        assert store.last_search_path == "fts"
        assert [h.snippet for h in hits] == ["Add a day in Osaka please"]
        hits = await store.search("umbrella")  # an indexed row still found through the index
        assert [h.checkpoint_id for h in hits] == ["msg-13"] and store.last_search_path == "fts"
        assert (await store.fts_state())[0] == "stale"
        assert any(p.check == "fts_stale" for p in await store.doctor())


async def test_search_postgres_scans(article_url):
    async with open_store(article_url) as store:
        hits = await store.search("Umbrella")
        assert [h.checkpoint_id for h in hits] == ["msg-13"]
        if store.kind == "postgres":
            assert store.last_search_path == "scan"
        hits = await store.search("区域分析")
        assert {h.checkpoint_id for h in hits} >= {"msg-25", "msg-27"}


async def test_usage_stats_equal_the_articles(tmp_path):
    path = str(tmp_path / "live.db")
    init_database(path, fts=True)
    st = AgentStorage(path)
    alice = st.create_user("Alice", "a@example.com")
    bob = st.create_user("Bob")
    s1 = st.create_session(alice["id"], "学习 AI Agent")
    st.save_message(s1["id"], "user", "什么是 AI Agent?", token_count=50)
    st.save_message(s1["id"], "assistant", "AI Agent 是...", [{"name": "search"}], token_count=120)
    st.log_tool_call(s1["id"], "search", {"q": 1}, {"r": 2}, 350.5)
    st.log_tool_call(s1["id"], "search", {"q": 1}, {}, 100.0, success=False, error_message="boom")
    st.log_tool_call(s1["id"], "calc", {"x": 1}, {"y": 2}, 5.0)
    s2 = st.create_session(bob["id"], "hi")
    st.save_message(s2["id"], "user", "hello", token_count=3)
    async with open_store(path) as store:
        for user in (alice["id"], bob["id"]):
            ours = await store.usage_stats(user=user, days=7)
            theirs = st.get_usage_stats(user, 7)
            assert {k: ours[k] for k in theirs} == theirs
        by_name = await store.usage_stats(user="Alice", days=7)
        assert by_name["session_count"] == 1 and by_name["user"] == alice["id"]
        everyone = await store.usage_stats()
        assert everyone["session_count"] == 2 and everyone["total_tokens"] == 173
        assert {u["name"] for u in everyone["users"]} == {"Alice", "Bob"}


async def test_usage_stats_sample(article_url):
    async with open_store(article_url) as store:
        stats = await store.usage_stats(user="u-alice")
        assert (stats["session_count"], stats["total_tokens"], stats["total_messages"]) == (3, 484, 13)
        gw = next(t for t in stats["tool_usage"] if t["tool_name"] == "get_weather")
        assert gw["call_count"] == 2 and gw["failures"] == 1 and gw["avg_latency"] == pytest.approx(2907.625)
        assert (await store.usage_stats(days=1))["session_count"] == 0  # the sample is old


# ---- bad input -----------------------------------------------------------------------------


def _broken(tmp_path) -> str:
    path = str(tmp_path / "broken.db")
    conn = sqlite3.connect(path)
    # only sessions and messages (no users, tasks, tool_logs), FK checks off as sqlite3's default
    conn.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT, status TEXT,
            model TEXT, total_tokens INTEGER DEFAULT 0, total_cost REAL DEFAULT 0, message_count INTEGER DEFAULT 0,
            metadata_json TEXT DEFAULT '{}', created_at TEXT, updated_at TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL
            REFERENCES sessions(id), role TEXT, content TEXT NOT NULL DEFAULT '', tool_calls_json TEXT,
            tool_call_id TEXT, token_count INTEGER DEFAULT 0, created_at TEXT);
        INSERT INTO sessions VALUES ('s1', 'u1', 't', 'active', 'm', 5, 0, 9, 'not json',
            '2026-01-01 00:00:00', '2026-01-01 00:00:01');
        INSERT INTO messages (session_id, role, content, tool_calls_json, created_at) VALUES
            ('s1', 'user', 'hi', NULL, '2026-01-01 00:00:00'),
            ('s1', 'assistant', 'calling', '[{"name": broken', '2026-01-01 00:00:01'),
            ('gone', 'user', 'orphan', NULL, '2026-01-01 00:00:02');
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id');
    """)
    conn.commit()
    conn.close()
    return path


async def test_bad_input_reads_and_doctor(tmp_path):
    path = _broken(tmp_path)
    async with open_store(path) as store:
        assert store.format.name == "article"
        assert [t.thread_id for t in await store.thread_summaries()] == ["s1"]
        cp = await store.get("msg-2")
        assert cp.messages[1]["tool_calls"] == '[{"name": broken'
        assert "tool_calls_error" in cp.messages[1]
        assert cp.state["session"]["metadata"] == "not json" and cp.state["user"] is None
        assert cp.state["tasks"] == [] and cp.tools_result == {}
        orphan = await store.get("msg-3")
        assert orphan.metadata.thread_id == "gone" and orphan.state["session"] is None
        hits = await store.search("orphan")
        assert store.last_search_path == "scan" and [h.checkpoint_id for h in hits] == ["msg-3"]
        assert (await store.usage_stats())["tool_usage"] == []
        checks = {(p.check, p.subject) for p in await store.doctor()}
        assert ("missing_table", "users") in checks and ("missing_table", "tool_logs") in checks
        assert ("missing_table", "tasks") in checks
        assert ("orphan_messages", "gone") in checks
        assert ("invalid_json", "msg-2") in checks
        assert ("fts_stale", "messages_fts") in checks
        assert ("session_counters", "s1") in checks
        assert any(c == "foreign_key" for c, _ in checks)


async def test_bad_input_writes_refuse_cleanly(tmp_path):
    path = _broken(tmp_path)
    before = {t: _sqlite_rows(path, t) for t in ("sessions", "messages")}
    async with open_store(path, readonly=False) as store:
        h = store.history()
        with pytest.raises(OperationError, match="does not exist"):
            await h.rewind("msg-3")
        with pytest.raises(CheckpointNotFound):
            await h.rewind("msg-99")
        with pytest.raises(UsageError, match="branch name"):
            await h.branch("msg-1", "bad name!")
        with pytest.raises(Unsupported):
            await h.prune_spec(PruneSpec(milestones=3))
        with pytest.raises(UsageError):
            await h.prune_spec(PruneSpec())
        with pytest.raises(OperationError, match="nothing to undo"):
            await h.undo()
        # works without users/tasks/tool_logs; the stale FTS index is left alone
        result = await h.rewind("msg-1")
        assert result.moved == ["msg-2"]
        await h.undo()
    assert {t: _sqlite_rows(path, t) for t in ("sessions", "messages")} == before


def pg_typed_tables(updated_at: str = "now()", tool_calls: str = "TEXT") -> str:
    """The article's sessions and messages as a Postgres user may declare them (JSONB
    metadata, TIMESTAMPTZ times, no optional tables): DDL."""
    return (
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT, status TEXT, "
        "model TEXT, total_tokens INTEGER DEFAULT 0, total_cost REAL DEFAULT 0, message_count INTEGER "
        "DEFAULT 0, metadata_json JSONB DEFAULT '{}', created_at TIMESTAMPTZ DEFAULT now(), "
        f"updated_at TIMESTAMPTZ DEFAULT {updated_at});"
        "CREATE TABLE messages (id BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL, role TEXT, content "
        f"TEXT NOT NULL DEFAULT '', tool_calls_json {tool_calls}, tool_call_id TEXT, token_count INTEGER "
        "DEFAULT 0, created_at TIMESTAMPTZ DEFAULT now());"
    )


async def test_postgres_without_optional_tables(pg_dsn):
    import asyncpg

    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(
            pg_typed_tables()
            + "INSERT INTO sessions (id, user_id, metadata_json) VALUES ('p1', 'u', '{\"k\": 1}');"
            "INSERT INTO messages (session_id, role, content, tool_calls_json) VALUES "
            "('p1', 'user', 'hello', NULL), ('p1', 'assistant', 'x', 'oops'), ('ghost', 'user', 'lost', NULL);"
        )
    finally:
        await conn.close()
    async with open_store(pg_dsn, readonly=False) as store:
        assert store.format.name == "article"
        cp = await store.get("msg-2")
        assert cp.messages[1]["tool_calls"] == "oops" and cp.state["session"]["metadata"] == {"k": 1}
        checks = {(p.check, p.subject) for p in await store.doctor()}
        assert ("orphan_messages", "ghost") in checks and ("invalid_json", "msg-2") in checks
        h = store.history()
        r = await h.rewind("msg-1")
        assert r.moved == ["msg-2"]
        assert (await store.thread_summary(r.archive_thread)).branch_of == "p1"
        await h.undo()
        assert await store.count("p1") == 2


# ---- writes ---------------------------------------------------------------------------------


async def test_rewind_soft_and_undo(article_url):
    before = await dump(article_url)
    sqlite = not article_url.startswith("postgres")
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        plan = await h.plan_rewind("msg-10")
        assert [m.checkpoint_id for m in plan.moved] == ["msg-11", "msg-12", "msg-13"]
        assert await dump(article_url) == before  # a plan writes nothing
        r = await h.rewind("msg-10")
        assert r.archive_thread == plan.archive_thread == "s-weather-paris-rewound-at-3"
        assert (
            r.moved == ["msg-11", "msg-12", "msg-13"] and r.rewind_depth == 3 and r.snapshot_count_before == 6
        )
        assert r.checkpoint.metadata.checkpoint_id == "msg-10" and r.op_id == h.last_op_id
        await valid(article_url)
        assert [m.checkpoint_id for m in await store.read_thread("s-weather-paris")] == [
            "msg-8",
            "msg-9",
            "msg-10",
        ]
        arch = await store.thread_summary(r.archive_thread)
        assert arch.checkpoints == 3 and arch.branch_of == "s-weather-paris" and arch.branch_point == "msg-10"
        assert arch.to_dict()["title"] == "Weather in Paris (rewound from s-weather-paris at step 3)"
        assert (await store.at_step(r.archive_thread, 1)).parent_checkpoint_id == "msg-10"
        assert [b.thread_id for b in await store.branches_of(["s-weather-paris"])] == [r.archive_thread]
        # the tool logs went with their messages
        assert list((await store.get("msg-13")).tools_result) == ["unit_convert#4"]
        assert list((await store.get("msg-11")).tools_result) == ["get_weather#3"]
        assert list((await store.get("msg-9")).tools_result) == ["get_weather#2"]
        if sqlite:
            st = AgentStorage(article_url)
            assert [m["content"] for m in st.get_conversation_history("s-weather-paris")] == [
                m[3] for m in before["messages"] if m[0] in (8, 9, 10)
            ]
            assert len(st.get_conversation_history(r.archive_thread)) == 3
            listed = {s["id"]: s for s in st.list_user_sessions("u-alice")}
            assert listed["s-weather-paris"]["message_count"] == 3
            assert listed["s-weather-paris"]["total_tokens"] == 14 + 22 + 8
            assert listed[r.archive_thread]["message_count"] == 3
            assert st.get_usage_stats("u-alice", 100000)["total_messages"] == 13
            assert fts_search(article_url, "umbrella") == [13]  # moved: same rowid, still indexed
        hits = await store.search("umbrella")
        assert [(h_.thread_id, h_.step) for h_ in hits] == [(r.archive_thread, 3)]
        ops = await h.oplog()
        assert ops[0].kind == "rewind" and ops[0].undoable
        u = await h.undo()
        assert u.moved == ["msg-11", "msg-12", "msg-13"]
        assert await dump(article_url) == before
        await valid(article_url)
        assert (await h.oplog())[1].undone
        with pytest.raises(OperationError, match="already undone"):
            await h.undo(r.op_id)
        nothing = await h.rewind("msg-13")
        assert nothing.op_id is None and nothing.rewind_depth == 0
    assert await dump(article_url) == before


async def test_rewind_hard_and_undo(article_url):
    before = await dump(article_url)
    sqlite = not article_url.startswith("postgres")
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        r = await h.rewind("msg-24", hard=True)
        assert r.deleted == [f"msg-{i}" for i in range(25, 32)] and r.archive_thread is None
        await valid(article_url)
        assert await store.count("s-wang-report") == 4
        assert await store.search("华北") == []
        if sqlite:
            assert fts_search(article_url, "Regional") == []
            st = AgentStorage(article_url)
            assert len(st.get_conversation_history("s-wang-report")) == 4
            assert st.list_user_sessions("u-wang")[0]["total_tokens"] == 14 + 20 + 60 + 18
            assert st.get_usage_stats("u-wang", 100000)["tool_usage"] == []
        # the messages and tool logs deleted, the session row before and after (redo's)
        assert (await h.oplog())[0].purgeable_rows == 7 + 2 + 2
        await h.undo()
        assert await dump(article_url) == before
        await valid(article_url)
        if sqlite:
            assert fts_search(article_url, "Regional") == [26, 27]
        # redo: the rewind again, and the article's code reads and goes on from it
        rewound = await h.redo()
        assert rewound.deleted == r.deleted
        await valid(article_url)
        assert await store.count("s-wang-report") == 4
        if sqlite:
            assert fts_search(article_url, "Regional") == []
            st = AgentStorage(article_url)
            assert len(st.get_conversation_history("s-wang-report")) == 4
            assert st.list_user_sessions("u-wang")[0]["total_tokens"] == 14 + 20 + 60 + 18
            st.save_message("s-wang-report", "user", "继续", token_count=2)
            assert len(st.get_conversation_history("s-wang-report")) == 5


async def test_branch_merge_and_undo(article_url):
    sqlite = not article_url.startswith("postgres")
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        b = await h.branch("msg-26", "alt")
        assert b == "s-wang-report-branch-alt"
        await valid(article_url)
        s = await store.thread_summary(b)
        assert s.checkpoints == 6 and s.branch_of == "s-wang-report" and s.branch_point == "msg-26"
        assert s.to_dict()["title"] == "季度报告写作 (branch alt of s-wang-report at step 6)"
        first = (await store.read_thread(b, 1))[0]
        assert first.parent_checkpoint_id == "msg-26"
        assert [c.thread_id for c in await store.children("msg-26")] == ["s-wang-report", b]
        head = await store.get_latest(b)
        assert [m["content"] for m in head.messages] == [
            m["content"] for m in (await store.get("msg-26")).messages
        ]
        assert list(head.tools_result) == [] and len((await store.get(first.checkpoint_id)).messages) == 1
        tr = await store.get((await store.at_step(b, 5)).checkpoint_id)
        assert [v["tool_name"] for v in tr.tools_result.values()] == ["translate"]
        with pytest.raises(UsageError, match="already exists"):
            await h.branch("msg-26", "alt")
        if sqlite:
            st = AgentStorage(article_url)
            assert len(st.get_conversation_history(b)) == 6
            assert {x["id"] for x in st.list_user_sessions("u-wang")} == {"s-wang-report", b}
        # nothing new on the branch
        with pytest.raises(OperationError, match="nothing to merge"):
            await h.merge_branch(b, "s-wang-report")
        # the target moved since the fork: a conflict, nothing written
        await _append(store, b, "assistant", "另一种思路:先看客户流失数据。", 21)
        mid = await dump(article_url)
        plan = await h.plan_merge(b, "s-wang-report")
        assert plan.conflicts and not plan.up_to_date
        with pytest.raises(MergeConflictError) as exc:
            await h.merge_branch(b, "s-wang-report")
        assert exc.value.exit_code == 4 and [c.path for c in exc.value.conflicts] == ["/messages"]
        assert await dump(article_url) == mid
        with pytest.raises(OperationError, match="ours"):
            await h.merge_branch(b, "s-wang-report", "ours")
        new_head = await h.merge_branch(b, "s-wang-report", "theirs")
        await valid(article_url)
        merged = await store.get(new_head)
        assert merged.metadata.thread_id == "s-wang-report" and merged.metadata.step == 12
        assert merged.messages[-1]["content"] == "另一种思路:先看客户流失数据。"
        if sqlite:
            st = AgentStorage(article_url)
            assert (
                st.get_conversation_history("s-wang-report")[-1]["content"] == "另一种思路:先看客户流失数据。"
            )
            assert st.list_user_sessions("u-wang", 1)[0]["id"] in ("s-wang-report", b)
            assert fts_search(article_url, "合并") == []
        with pytest.raises(OperationError, match="nothing to merge"):
            await h.merge_branch(b, "s-wang-report", "theirs")
        # the branch and the merge keep their rows' images (for undo and redo) until purge
        assert (await h.purge(dry_run=True)).ops == sorted(o.op_id for o in await h.oplog())
        await h.undo()  # the merge
        assert await dump(article_url) == mid
        with pytest.raises(OperationError, match="changed after it|changed since operation"):
            await h.undo()  # the branch: an agent wrote to it since
        assert await dump(article_url) == mid
        await valid(article_url)


async def test_merge_fast_forward(article_url):
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        b = await h.branch("msg-20", "more")  # the head of s-bob-trip: the target has not moved
        await _append(store, b, "user", "Add a day in Osaka", 6)
        await _append(store, b, "assistant", "Day 4: Osaka castle and Dotonbori.", 12)
        plan = await h.plan_merge(b, "s-bob-trip")
        assert plan.conflicts == [] and len(plan.merged.messages) == 4
        head = await h.merge_branch(b, "s-bob-trip")
        await valid(article_url)
        assert [m.step for m in await store.read_thread("s-bob-trip")] == [1, 2, 3, 4]
        assert (await store.get(head)).messages[-1]["content"].startswith("Day 4")
        t = await store.thread_summary("s-bob-trip")
        assert t.to_dict()["message_count"] == 4 and t.to_dict()["total_tokens"] == 45 + 18
        if store.kind == "sqlite":
            assert fts_search(article_url, "Dotonbori") != []


async def _append(store, session: str, role: str, content: str, tokens: int) -> None:
    """An agent goes on writing (the article's save_message, in the format's dialect);
    on SQLite the FTS index is fed too, as an app that keeps it in step would."""
    h = store.history()
    async with h.db.transaction() as tx:
        rows = await tx.fetch(
            "INSERT INTO messages (session_id, role, content, token_count, created_at) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            session,
            role,
            content,
            tokens,
            "2026-11-20 10:00:00",
        )
        await tx.execute(
            "UPDATE sessions SET message_count = message_count + 1, total_tokens = total_tokens + ?, "
            "updated_at = ? WHERE id = ?",
            tokens,
            "2026-11-20 10:00:00",
            session,
        )
        if tx.kind == "sqlite":
            await tx.execute("INSERT INTO messages_fts(rowid, content) VALUES (?, ?)", rows[0]["id"], content)


async def test_branch_undo_restores_everything(article_url):
    before = await dump(article_url)
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        b = await h.branch("msg-5", "try2")
        assert await store.count(b) == 5
        assert [x.thread_id for x in await store.branches_of(["s-agent-basics"])] == [b]
        u = await h.undo()
        assert len(u.deleted) == 5
        assert await store.thread_summary(b) is None and await store.branches_of(["s-agent-basics"]) == []
    assert await dump(article_url) == before
    await valid(article_url)


async def test_prune_and_delete_and_undo(article_url):
    before = await dump(article_url)
    sqlite = not article_url.startswith("postgres")
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        plans = await h.plan_prune_spec(PruneSpec(statuses=["completed", "cancelled"]))
        assert [(p.thread_id, p.delete_count) for p in plans] == [("s-bob-regex", 5), ("s-weather-paris", 6)]
        assert await dump(article_url) == before
        res = await h.prune_spec(PruneSpec(statuses=["completed", "cancelled"]))
        assert len(res) == 1 and res[0].op_id is not None and len(res[0].deleted) == 11
        await valid(article_url)
        assert await store.count_threads() == 4
        assert await store.search("umbrella") == []
        if sqlite:
            assert fts_search(article_url, "umbrella") == []
            st = AgentStorage(article_url)
            assert {s["id"] for s in st.list_user_sessions("u-alice")} == {"s-agent-basics", "s-alice-empty"}
            assert st.get_conversation_history("s-weather-paris") == []
            assert st.get_usage_stats("u-bob", 100000)["session_count"] == 1
        assert (await h.prune_spec(PruneSpec(statuses=["completed"])))[0].op_id is None
        await h.undo()
        assert await dump(article_url) == before
        await valid(article_url)

        keep = await h.plan_prune_spec(PruneSpec(keep_last=1))
        assert [p.thread_id for p in keep] == ["s-agent-basics", "s-bob-regex", "s-weather-paris"]
        # issue 23 item 10: --keep-last counts a user's sessions, so with SESSIONs it says why not
        with pytest.raises(UsageError, match="whole sessions"):
            await h.plan_prune_spec(PruneSpec(keep_last=1, threads=["s-bob-regex", "s-wang-report"]))
        old = await h.plan_prune_spec(PruneSpec(older_than=86400, statuses=["paused"]))
        assert [p.thread_id for p in old] == ["s-bob-trip"]
        assert await h.plan_prune_spec(PruneSpec(older_than=10**10)) == []

        d = await h.delete_thread("s-agent-basics")
        assert d.deleted == [f"msg-{i}" for i in range(1, 8)]
        await valid(article_url)
        assert await store.thread_summary("s-agent-basics") is None
        if sqlite:
            st = AgentStorage(article_url)
            assert st.get_session("s-agent-basics") is None
            assert st.get_usage_stats("u-alice", 100000)["tool_usage"][0]["tool_name"] == "get_weather"
        purge = await h.purge(dry_run=True)
        # the delete's rows, and the undone prune's (redo puts them back)
        assert purge.ops == [res[0].op_id, d.op_id] and purge.rows > 7 + 1 + 1 + 1
        await h.undo()
        assert await dump(article_url) == before
        await valid(article_url)


async def test_undo_refuses_taken_ids_and_changed_sessions(sqlite_url):
    before = await dump(sqlite_url)
    async with open_store(sqlite_url, readonly=False) as store:
        h = store.history()
        d = await h.delete_thread("s-bob-trip")
        # the article's code makes a session of that id again
        conn = sqlite3.connect(sqlite_url)
        conn.execute("INSERT INTO sessions (id, user_id, title) VALUES ('s-bob-trip', 'u-bob', 'again')")
        conn.commit()
        conn.close()
        with pytest.raises(OperationError, match="changed after it|changed since operation|exist again"):
            await h.undo(d.op_id)
        conn = sqlite3.connect(sqlite_url)
        conn.execute("DELETE FROM sessions WHERE id = 's-bob-trip'")
        conn.commit()
        conn.close()
        await h.undo(d.op_id)
        assert await dump(sqlite_url) == before
        r = await h.rewind("msg-29")
        AgentStorage(sqlite_url).pause_session("s-wang-report")  # the article's code changes the session
        with pytest.raises(OperationError, match="changed after it|changed since operation"):
            await h.undo(r.op_id)
        AgentStorage(sqlite_url).save_message(r.archive_thread, "user", "继续", token_count=2)
        with pytest.raises(OperationError, match="changed after it|changed since operation"):
            await h.undo(r.op_id)
    conn = sqlite3.connect(sqlite_url)  # (the article's save_message left messages_fts stale)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


async def test_writes_refuse_on_readonly_and_purge(article_url):
    async with open_store(article_url) as store:
        assert (await store.history().plan_rewind("msg-10")).moved
        with pytest.raises(ReadOnlyDatabase):
            await store.history().delete_thread("s-bob-trip")
        assert await store.count("s-bob-trip") > 0
    async with open_store(article_url, readonly=False) as store:
        h = store.history()
        d = await h.delete_thread("s-bob-trip")
        p = await h.purge()
        assert p.ops == [d.op_id] and p.rows == 2 + 2 + 1 and not p.dry_run and p.vacuumed
        with pytest.raises(OperationError, match="purged"):
            await h.undo(d.op_id)
        # the journal's purge marks the ops it freed (it is no op of its own)
        assert [(o.kind, o.purged) for o in await h.oplog()] == [("delete_thread", True)]
        with pytest.raises(AgentctlError):
            await h.undo()


async def test_fts_with_triggers_is_left_to_them(sqlite_url):
    """An app that added the usual FTS5 triggers: agentctl's writes go through them."""
    conn = sqlite3.connect(sqlite_url)
    conn.executescript(FTS_TRIGGERS)
    conn.commit()
    conn.close()
    before = await dump(sqlite_url)
    async with open_store(sqlite_url, readonly=False) as store:
        h = store.history()
        await h.rewind("msg-10", hard=True)
        sqlite_valid(sqlite_url)
        assert fts_search(sqlite_url, "umbrella") == []
        await h.undo()
        sqlite_valid(sqlite_url)
        b = await h.branch("msg-13", "t")
        sqlite_valid(sqlite_url)
        assert len(fts_search(sqlite_url, "umbrella")) == 2
        await h.rewind("msg-9")
        sqlite_valid(sqlite_url)
        await h.undo()
        await h.undo()
        sqlite_valid(sqlite_url)
        assert await store.thread_summary(b) is None
        assert await store.search("umbrella") and store.last_search_path == "fts"
    assert await dump(sqlite_url) == before


def test_sample_is_reproducible(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_sessions", REPO / "sample_db" / "make_sessions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "again.db"
    mod.main(out)
    assert {t: _sqlite_rows(str(out), t) for t in TABLES} == {t: _sqlite_rows(str(SAMPLE), t) for t in TABLES}
    assert SAMPLE.stat().st_size < 200_000
    sqlite_valid(str(out))


async def test_change_token_follows_the_articles_writes(sqlite_url):
    async with open_store(sqlite_url) as store:
        a = await store.change_token("s-bob-trip")
        AgentStorage(sqlite_url).save_message("s-bob-trip", "user", "one more", token_count=2)
        b = await store.change_token("s-bob-trip")
        assert a[0] != b[0] and a[1] != b[1]
        AgentStorage(sqlite_url).pause_session("s-wang-report")
        c = await store.change_token("s-bob-trip")
        assert c[0] != b[0] and c[1] == b[1]


async def test_read_thread_pages_agree_with_the_whole(sqlite_url):
    async with open_store(sqlite_url) as store:
        whole = await store.read_thread("s-wang-report", 100)
        assert [m.step for m in whole] == list(range(1, 12))
        for limit in range(0, 13):
            for offset in range(0, 13):
                assert (
                    await store.read_thread("s-wang-report", limit, offset) == whole[offset : offset + limit]
                )
                want = list(reversed(whole))[offset : offset + limit]
                assert await store.read_thread("s-wang-report", limit, offset, descending=True) == want
        for step, meta in enumerate(whole, 1):
            assert await store.at_step("s-wang-report", step) == meta
            assert await store.get_metadata(meta.checkpoint_id) == meta
