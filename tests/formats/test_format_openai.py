"""The openai-agents format against the real SDK (openai-agents, no model calls):
sessions written through `SQLiteSession`, `AdvancedSQLiteSession` and, on Postgres,
`SQLAlchemySession`; agentctl's reads must match the SDK's `get_items` item for item."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit, urlunsplit

import pytest

pytest.importorskip("agents")

from agentctl.errors import SchemaError  # noqa: E402
from agentctl.storage import detect, open_store  # noqa: E402
from tests.support.format_contract import check_session_store as check_store  # noqa: E402
from tests.support.rig import REPO  # noqa: E402

CONV = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need the weather tool"}],
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": json.dumps({"city": "Paris"}),
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21°C"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "It is sunny in Paris (21°C).", "annotations": []}],
    },
    {"role": "user", "content": [{"type": "input_text", "text": "And in Lyon?"}]},
    {
        "type": "function_call",
        "call_id": "call_2",
        "name": "get_weather",
        "arguments": json.dumps({"city": "Lyon"}),
    },
    {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Rain in Lyon."}]},
]


async def check_matches_sdk(url: str, sessions: dict[str, object]) -> None:
    """Every step of every session equals the SDK's item at that position."""
    async with open_store(url) as store:
        assert store.format.name == "openai-agents"
        assert await store.count_threads() == len(sessions)
        for sid, session in sessions.items():
            items = await session.get_items()
            metas = await store.read_thread(sid, 10_000)
            assert [m.step for m in metas] == list(range(1, len(items) + 1))
            assert metas[0].parent_checkpoint_id is None
            for prev, meta in zip(metas, metas[1:], strict=False):
                assert meta.parent_checkpoint_id == prev.checkpoint_id
            summary = await store.thread_summary(sid)
            assert summary.checkpoints == len(items) and summary.head_checkpoint_id == metas[-1].checkpoint_id
            streamed = [cp async for cp in store.iter_checkpoints([sid])]
            for n, (meta, item) in enumerate(zip(metas, items, strict=False), 1):
                cp = await store.get(meta.checkpoint_id)
                assert cp.metadata.step == n and cp.state["item"] == item
                assert len(cp.messages) == n
                assert streamed[n - 1].state["item"] == item
                assert (await store.at_step(sid, n)).checkpoint_id == meta.checkpoint_id
            desc = await store.read_thread(sid, 3, 1, descending=True)
            assert [m.step for m in desc] == [
                n for n in (len(items) - 1, len(items) - 2, len(items) - 3) if n >= 1
            ]
            assert (await store.get_latest(sid)).state["item"] == items[-1]


def check_transcript(cp) -> None:
    """The head of CONV: calls paired with their outputs, reasoning, message texts."""
    roles = [m["role"] for m in cp.messages]
    assert roles == [
        "user",
        "reasoning",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert cp.messages[1]["content"] == "Need the weather tool"
    assert cp.messages[2]["tool_calls"] == [
        {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ]
    assert cp.messages[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "get_weather",
        "content": "sunny, 21°C",
    }
    assert cp.messages[4]["content"] == "It is sunny in Paris (21°C)."
    assert cp.messages[5]["content"] == "And in Lyon?"
    assert cp.tools_result["call_2"] == {
        "name": "get_weather",
        "arguments": '{"city": "Lyon"}',
        "output": "rain",
    }


async def test_sqlite_session_reads_match_the_sdk(tmp_path):
    from agents import SQLiteSession

    path = str(tmp_path / "agents.db")
    a = SQLiteSession("conv-a", path)
    b = SQLiteSession("conv-b", path)
    await a.add_items(CONV[:5])
    await b.add_items([{"role": "user", "content": "hello"}])
    await a.add_items(CONV[5:])
    assert (await detect(path)).name == "openai-agents"
    await check_matches_sdk(path, {"conv-a": a, "conv-b": b})
    async with open_store(path) as store:
        check_transcript(await store.get_latest("conv-a"))
        await check_store(store)
        page = await store.thread_summaries(10, 0, "thread", False)
        assert [t.thread_id for t in page] == ["conv-a", "conv-b"]
        assert await store.find_thread_ids("conv-") == ["conv-a", "conv-b"]
        head = await store.thread_summary("conv-b")
        assert head.head_summary == "user: hello"
        hits = await store.search("LYON")
        assert [h.step for h in hits] == [9, 7, 6]  # newest first
        assert {h.role for h in await store.search("lyon", role="user")} == {"user"}
        assert [h.where for h in await store.search("rain", role="tool")] == ["tools_result"]
        assert [h.step for h in await store.search("21°c")] == [5, 4]  # non-ASCII: a full scan
        assert await store.search("nothing like this") == []
        ids = await store.find_checkpoint_ids("item-1")
        assert "item-1" in ids and all(i.startswith("item-1") for i in ids)
        first = (await store.read_thread("conv-a", 1))[0]
        assert [c.step for c in await store.children(first.checkpoint_id)] == [2]
        assert await store.get("item-999") is None and await store.get("nope") is None
    a.close()
    b.close()
    # read-only: the file is not changed by agentctl's reads
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()[0] == len(CONV) + 1
    conn.close()


async def test_custom_table_names_and_ambiguous_pairs(tmp_path, monkeypatch):
    from agents import SQLiteSession

    path = str(tmp_path / "custom.db")
    s = SQLiteSession("x", path, sessions_table="my_sessions", messages_table="my_items")
    await s.add_items(CONV[:2])
    assert (await detect(path)).name == "openai-agents"
    await check_matches_sdk(path, {"x": s})
    t = SQLiteSession("y", path)  # a second pair in the same file
    await t.add_items(CONV[:3])
    with pytest.raises(SchemaError, match="several OpenAI Agents session table pairs"):
        async with open_store(path):
            pass
    monkeypatch.setenv("AGENTCTL_OPENAI_TABLES", "agent_sessions,agent_messages")
    await check_matches_sdk(path, {"y": t})
    async with open_store(path, sessions_table="my_sessions", messages_table="my_items") as store:
        assert await store.all_thread_ids() == ["x"]
    s.close()
    t.close()


async def test_advanced_session_branches_and_usage(tmp_path):
    from agents.extensions.memory import AdvancedSQLiteSession
    from agents.usage import Usage

    path = str(tmp_path / "adv.db")
    s = AdvancedSQLiteSession(session_id="adv", db_path=path, create_tables=True)
    await s.add_items(CONV[:5])
    await s.store_run_usage(
        SimpleNamespace(
            context_wrapper=SimpleNamespace(
                usage=Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
            )
        )
    )
    await s.add_items(CONV[5:])
    branch = await s.create_branch_from_turn(2)  # a branch holding turn 1
    await s.add_items([{"role": "user", "content": "And in Nice?"}])
    assert (await detect(path)).name == "openai-agents"
    async with open_store(path) as store:
        assert await store.all_thread_ids() == ["adv", f"adv#{branch}"]
        metas = await store.read_thread("adv", 100)
        await check_store(store, unique_ids=False)
        assert len(metas) == len(CONV)  # main's items, in its order
        assert "branch:main" in metas[0].tags and f"branch:{branch}" in metas[0].tags
        assert "turn:1" in metas[0].tags
        assert f"branch:{branch}" not in metas[6].tags  # turn 2 stays on main
        cp = await store.get(metas[4].checkpoint_id)
        assert set(cp.state["branches"]) == {"main", branch}
        assert cp.state["turn_usage"][0]["total_tokens"] == 15
        on_branch = await store.read_thread(f"adv#{branch}", 100)
        assert on_branch[-1].tags[-2:] == [f"branch:{branch}", "turn:2"]
        assert [m.checkpoint_id for m in on_branch[:5]] == [m.checkpoint_id for m in metas[:5]]
        assert [(await store.get(m.checkpoint_id)).state["item"] for m in on_branch] == await s.get_items(
            branch_id=branch
        )
        assert [(await store.get(m.checkpoint_id)).state["item"] for m in metas] == await s.get_items(
            branch_id="main"
        )
    s.close()


def _engine_for(pg_dsn: str):
    """A SQLAlchemy asyncpg engine on the DSN's schema (search_path as a server setting)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    parts = urlsplit(pg_dsn)
    schema = parse_qs(parts.query).get("search_path", ["public"])[0]
    url = urlunsplit(("postgresql+asyncpg", parts.netloc, parts.path, "", ""))
    return create_async_engine(url, connect_args={"server_settings": {"search_path": schema}})


@pytest.mark.pg
async def test_sqlalchemy_session_on_postgres(pg_dsn):
    pytest.importorskip("sqlalchemy")
    from agents.extensions.memory import SQLAlchemySession

    engine = _engine_for(pg_dsn)
    try:
        a = SQLAlchemySession("pg-a", engine=engine, create_tables=True)
        b = SQLAlchemySession("pg-b", engine=engine, create_tables=True)
        await a.add_items(CONV[:4])
        await b.add_items([{"role": "user", "content": "bonjour"}])
        await a.add_items(CONV[4:])
        assert (await detect(pg_dsn)).name == "openai-agents"
        await check_matches_sdk(pg_dsn, {"pg-a": a, "pg-b": b})
        async with open_store(pg_dsn) as store:
            check_transcript(await store.get_latest("pg-a"))
            await check_store(store)
            assert [h.step for h in await store.search("LYON")] == [9, 7, 6]
            assert [h.thread_id for h in await store.search("bonjour")] == ["pg-b"]
            assert [t.thread_id for t in await store.thread_summaries(10, 0, "checkpoints")] == [
                "pg-a",
                "pg-b",
            ]
            assert await store.count() == len(CONV) + 1
            assert await store.find_thread_ids("pg-") == ["pg-a", "pg-b"]
            assert await store.all_thread_ids() == ["pg-a", "pg-b"]
            assert await store.count_threads("pg-a") == 1
            first = (await store.read_thread("pg-a", 1))[0]
            assert first.checkpoint_id in await store.find_checkpoint_ids(first.checkpoint_id)
    finally:
        await engine.dispose()


async def test_other_formats_do_not_claim_sdk_tables(tmp_path):
    from agentctl.storage import formats

    tables = {
        "agent_sessions": {"session_id", "created_at", "updated_at"},
        "agent_messages": {"id", "session_id", "message_data", "created_at"},
    }
    assert [f.name for f in formats() if f.matches(tables)] == ["openai-agents"]


def test_cli_reads_an_sdk_database(tmp_path):
    """threads list, log, show THREAD@N, search, rewind, undo and branch, a refused
    prune, through the CLI."""
    import asyncio

    from agents import SQLiteSession

    from tests.support.sampledb import cli

    path = str(tmp_path / "cli.db")

    async def write() -> None:
        s = SQLiteSession("conv-cli", path)
        await s.add_items(CONV)
        s.close()

    asyncio.run(write())
    r = cli(path, "--no-color", "threads", "list")
    assert r.exit_code == 0 and "conv-cli\t9\t9" in r.stdout
    r = cli(path, "--no-color", "show", "conv-cli@4")
    assert r.exit_code == 0
    assert "get_weather" in r.stdout and "(call_1)" in r.stdout and "sunny, 21°C" in r.stdout
    assert "Rain in Lyon" not in r.stdout
    r = cli(path, "--no-color", "log", "conv-cli")
    assert r.exit_code == 0 and r.stdout.count("\n") == 9
    r = cli(path, "--no-color", "search", "lyon")
    assert r.exit_code == 0 and "item-9" in r.stdout
    r = cli(path, "rewind", "conv-cli@2", "--yes")
    assert r.exit_code == 0 and "conv-cli is now at item-2 (step 2); 7 checkpoint(s) moved" in r.stdout
    r = cli(path, "--no-color", "threads", "list")
    assert "conv-cli\t2\t2" in r.stdout
    r = cli(path, "undo")
    assert r.exit_code == 0 and "undid operation 1" in r.stdout
    r = cli(path, "branch", "conv-cli@2", "try")
    assert r.exit_code == 0 and "conv-cli-branch-try-" in r.stdout
    r = cli(path, "prune", "conv-cli", "--keep-last", "1", "--yes")
    assert r.exit_code == 2 and "openai-agents format does not support prune" in r.stderr


def _dump(path: str) -> dict[str, list]:
    """Every row of the SDK's tables (sessions without updated_at, which writes bump)."""
    conn = sqlite3.connect(path)
    try:
        return {
            "messages": conn.execute(
                "SELECT id, session_id, message_data, created_at FROM agent_messages ORDER BY id"
            ).fetchall(),
            "sessions": conn.execute(
                "SELECT session_id, created_at FROM agent_sessions ORDER BY session_id"
            ).fetchall(),
        }
    finally:
        conn.close()


@pytest.mark.parametrize("hard", [False, True])
async def test_rewind_then_the_sdk_reads_items_up_to_n_and_undo_restores_every_row(tmp_path, hard):
    from agents import SQLiteSession

    path = str(tmp_path / "rw.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    other = SQLiteSession("other", path)
    await other.add_items([{"role": "user", "content": "untouched"}])
    before = _dump(path)
    async with open_store(path, readonly=False) as store:
        history = store.history()
        target = await store.at_step("conv", 4)
        plan = await history.plan_rewind(target.checkpoint_id, hard=hard)
        assert [m.step for m in plan.moved] == [5, 6, 7, 8, 9] and (plan.archive_thread is None) == hard
        assert _dump(path) == before  # a plan writes nothing
        result = await history.rewind(target.checkpoint_id, hard=hard, archive_thread=plan.archive_thread)
        assert result.rewind_depth == 5 and result.checkpoint.metadata.checkpoint_id == target.checkpoint_id
        # the same store reads the new history
        assert (await store.thread_summary("conv")).checkpoints == 4
        assert await store.archive_threads() == (set() if hard else {plan.archive_thread})
        op = result.op_id
    assert await s.get_items() == CONV[:4]  # the SDK's own read
    assert await other.get_items() == [{"role": "user", "content": "untouched"}]
    async with open_store(path) as store:
        assert (await store.thread_summary("conv")).checkpoints == 4
        if hard:
            assert await store.all_thread_ids() == ["conv", "other"]
        else:
            archive = SQLiteSession(plan.archive_thread, path)
            assert await archive.get_items() == CONV[4:]
            archive.close()
            assert await store.archive_threads() == {plan.archive_thread}
            summary = await store.thread_summary(plan.archive_thread)
            assert summary.branch_of == "conv" and summary.branch_point == target.checkpoint_id
            first = await store.at_step(plan.archive_thread, 1)
            assert first.parent_checkpoint_id == target.checkpoint_id
            assert [m.thread_id for m in await store.branches_of(["conv"])] == [plan.archive_thread]
    async with open_store(path, readonly=False) as store:
        ops = await store.history().oplog()
        assert [(o.op_id, o.kind, o.undone) for o in ops] == [(op, "rewind", False)]
        await store.history().undo()
    assert _dump(path) == before  # every row back, with its id and created_at
    assert await s.get_items() == CONV
    async with open_store(path) as store:
        assert [o.undone for o in await store.history().oplog()] == [False, True]
        assert await store.archive_threads() == set()
    async with open_store(path, readonly=False) as store:  # redo: the SDK reads the rewound session again
        await store.history().redo()
        assert await store.archive_threads() == (set() if hard else {plan.archive_thread})
    assert await s.get_items() == CONV[:4]
    await s.add_items([{"role": "user", "content": "then"}])  # and goes on from there
    assert await s.get_items() == CONV[:4] + [{"role": "user", "content": "then"}]
    s.close()
    other.close()


async def test_undo_refuses_when_the_sdk_added_items_since(tmp_path):
    from agents import SQLiteSession

    from agentctl.errors import OperationError

    path = str(tmp_path / "rw2.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    async with open_store(path, readonly=False) as store:
        await store.history().rewind((await store.at_step("conv", 5)).checkpoint_id, hard=True)
    await s.add_items([{"role": "user", "content": "a new question"}])  # the agent goes on
    assert await s.get_items() == CONV[:5] + [{"role": "user", "content": "a new question"}]
    async with open_store(path, readonly=False) as store:
        with pytest.raises(OperationError, match="conv changed since operation 1"):
            await store.history().undo()
        purged = await store.history().purge()
        assert purged.rows == 6  # the 4 items, the session row before and after
    assert await s.get_items() == CONV[:5] + [{"role": "user", "content": "a new question"}]
    s.close()


def _all_rows(path: str) -> dict[str, list]:
    """Every row of every table but agentctl's own (agentctl_*), updated_at included."""
    conn = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                "LIKE 'agentctl!_%' ESCAPE '!' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'"
            )
        ]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"').fetchall())) for t in names}
    finally:
        conn.close()


@pytest.mark.parametrize("hard", [False, True])
async def test_undo_of_a_rewind_puts_updated_at_back(tmp_path, hard):
    """Undo is exact: the session's updated_at (which the rewind moved to its own time)
    is as before the rewind, and so is every other row of the SDK's tables."""
    from agents import SQLiteSession

    path = str(tmp_path / "ua.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    s.close()
    conn = sqlite3.connect(path)
    with conn:  # a time the rewind cannot produce
        conn.execute("UPDATE agent_sessions SET updated_at = '2020-01-02 03:04:05'")
    conn.close()
    before = _all_rows(path)
    async with open_store(path, readonly=False) as store:
        await store.history().rewind((await store.at_step("conv", 4)).checkpoint_id, hard=hard)
    assert _all_rows(path) != before
    async with open_store(path, readonly=False) as store:
        await store.history().undo()
    assert _all_rows(path) == before


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("sdk_write", ["pop_item", "clear_session"])
async def test_undo_refuses_after_the_sdk_deleted_items(tmp_path, hard, sdk_write):
    """rewind, then the SDK's pop_item() or clear_session(), then undo: refused (the
    restored items would follow a hole, or a conversation the SDK cleared), nothing
    changed, and the SDK reads what it left."""
    from agents import SQLiteSession

    from agentctl.errors import OperationError

    path = str(tmp_path / "pop.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    async with open_store(path, readonly=False) as store:
        await store.history().rewind((await store.at_step("conv", 5)).checkpoint_id, hard=hard)
    await getattr(s, sdk_write)()
    left = await s.get_items()
    assert left == (CONV[:4] if sdk_write == "pop_item" else [])
    rows = _all_rows(path)
    async with open_store(path, readonly=False) as store:
        with pytest.raises(OperationError, match="changed since"):
            await store.history().undo()
    assert _all_rows(path) == rows
    assert await s.get_items() == left
    s.close()


@pytest.mark.pg
async def test_rewind_on_postgres_sqlalchemy_session(pg_dsn):
    pytest.importorskip("sqlalchemy")
    from agents.extensions.memory import SQLAlchemySession

    engine = _engine_for(pg_dsn)
    try:
        s = SQLAlchemySession("pg", engine=engine, create_tables=True)
        await s.add_items(CONV)
        for hard in (False, True):
            async with open_store(pg_dsn, readonly=False) as store:
                await store.history().rewind((await store.at_step("pg", 3)).checkpoint_id, hard=hard)
            assert await s.get_items() == CONV[:3]
            async with open_store(pg_dsn, readonly=False) as store:
                await store.history().undo()
            assert await s.get_items() == CONV
        await s.add_items([{"role": "user", "content": "later"}])  # ids go on after the restored rows
        assert (await s.get_items())[-1] == {"role": "user", "content": "later"}
        async with open_store(pg_dsn, readonly=False) as store:
            new = await store.history().branch((await store.at_step("pg", 4)).checkpoint_id, "pg-try")
            await check_store(store)
        b = SQLAlchemySession(new, engine=engine)
        assert await b.get_items() == CONV[:4]
        async with open_store(pg_dsn, readonly=False) as store:
            await store.history().undo()
        assert await b.get_items() == []
    finally:
        await engine.dispose()


async def test_bundled_sample(tmp_path):
    import shutil

    path = tmp_path / "sample.db"
    shutil.copyfile(REPO / "sample_db" / "openai_agents.db", path)
    async with open_store(str(path)) as store:
        assert store.format.name == "openai-agents"
        assert await store.all_thread_ids() == ["planner-3", "planner-3#museums", "support-7", "weather-1"]
        await check_store(store, unique_ids=False)
        head = await store.get_latest("weather-1")
        assert head.tools_result["call_2"]["output"] == "light rain, 14°C"
        first = await store.at_step("planner-3", 1)
        assert {"branch:main", "branch:museums", "turn:1"} <= set(first.tags)


async def test_an_undecodable_item(tmp_path):
    """The SDK's get_items skips a row that is not JSON; agentctl keeps it as a step whose
    checkpoint is a CorruptRowError (the later steps still read)."""
    from agents import SQLiteSession

    from agentctl.errors import CorruptRowError

    path = str(tmp_path / "bad.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV[:2])
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO agent_messages (session_id, message_data) VALUES ('conv', '{not json')")
    conn.commit()
    conn.close()
    await s.add_items(CONV[2:4])
    assert await s.get_items() == CONV[:4]
    async with open_store(path) as store:
        metas = await store.read_thread("conv")
        assert len(metas) == 5 and "invalid" in metas[2].tags
        with pytest.raises(CorruptRowError):
            await store.get(metas[2].checkpoint_id)
        later = await store.get(metas[4].checkpoint_id)
        assert later.messages[2]["role"] == "invalid" and later.state["item"] == CONV[3]
        streamed = [cp async for cp in store.iter_checkpoints(["conv"])]
        assert isinstance(streamed[2], CorruptRowError)
        assert [cp.state["item"] for i, cp in enumerate(streamed) if i != 2] == CONV[:4]
    s.close()


async def test_branch_of_a_sqlite_session(tmp_path):
    from agents import SQLiteSession

    from agentctl.errors import OperationError
    from agentctl.tree import checkpoint_tree

    path = str(tmp_path / "br.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    before = _dump(path)
    async with open_store(path, readonly=False) as store:
        source = await store.at_step("conv", 5)
        new = await store.history().branch(source.checkpoint_id, "try")
        assert new.startswith("conv-branch-try-")
        summary = await store.thread_summary(new)
        assert summary.branch_of == "conv" and summary.branch_point == source.checkpoint_id
        tree = await checkpoint_tree(store, "conv")
        assert [t["thread_id"] for t in tree["threads"]] == ["conv", new]
        await check_store(store)
    b = SQLiteSession(new, path)
    assert await b.get_items() == CONV[:5] and await s.get_items() == CONV
    async with open_store(path, readonly=False) as store:
        await store.history().undo()
    assert _dump(path) == before
    async with open_store(path, readonly=False) as store:
        new = await store.history().branch((await store.at_step("conv", 2)).checkpoint_id, "go")
    b2 = SQLiteSession(new, path)
    await b2.add_items([{"role": "user", "content": "on the branch"}])
    assert await b2.get_items() == CONV[:2] + [{"role": "user", "content": "on the branch"}]
    async with open_store(path, readonly=False) as store:
        with pytest.raises(OperationError, match="changed since"):
            await store.history().undo()
    for x in (s, b, b2):
        x.close()


async def test_branch_of_an_advanced_session_the_sdk_sees(tmp_path):
    from agents.extensions.memory import AdvancedSQLiteSession

    from agentctl.errors import OperationError, UsageError

    path = str(tmp_path / "adv-br.db")
    s = AdvancedSQLiteSession(session_id="adv", db_path=path, create_tables=True)
    await s.add_items(CONV)
    async with open_store(path, readonly=False) as store:
        target = await store.at_step("adv", 7)  # inside turn 2: the call for Lyon
        assert await store.history().branch(target.checkpoint_id, "lyon-retry") == "adv#lyon-retry"
        with pytest.raises(UsageError, match="exists"):
            await store.history().branch(target.checkpoint_id, "lyon-retry")
        metas = await store.read_thread("adv")
        assert ["branch:lyon-retry" in m.tags for m in metas] == [True] * 7 + [False] * 2
        # a thread of its own, holding main's items 1..7 (none of its own yet)
        assert [m.checkpoint_id for m in await store.read_thread("adv#lyon-retry")] == [
            m.checkpoint_id for m in metas[:7]
        ]
    assert "lyon-retry" in {b["branch_id"] for b in await s.list_branches()}
    assert await s.get_items(branch_id="lyon-retry") == CONV[:7]
    await s.switch_to_branch("lyon-retry")
    await s.add_items([{"type": "function_call_output", "call_id": "call_2", "output": "sunny"}])
    assert (await s.get_items())[-1] == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": "sunny",
    }
    assert await s.get_items(branch_id="main") == CONV
    async with open_store(path, readonly=False) as store:
        with pytest.raises(OperationError, match="changed since"):
            await store.history().undo()
        await store.history().branch((await store.at_step("adv", 3)).checkpoint_id, "short")
    assert await s.get_items(branch_id="short") == CONV[:3]
    async with open_store(path, readonly=False) as store:
        await store.history().undo()
    assert "short" not in {b["branch_id"] for b in await s.list_branches()}
    s.close()


def _two_branches(path: str) -> list[list]:
    """An AdvancedSQLiteSession "adv" written by the SDK: main holds 8 items (4 turns),
    branch "retry" (create_branch_from_turn(2)) shares main's first turn (items 1-2)
    and adds 6 of its own; [main's items, the branch's] as `get_items()` returns them."""
    import asyncio

    from agents.extensions.memory import AdvancedSQLiteSession

    async def write() -> list[list]:
        s = AdvancedSQLiteSession(session_id="adv", db_path=path, create_tables=True)
        for t in range(1, 5):
            await s.add_items(
                [
                    {"role": "user", "content": f"question {t}"},
                    {"role": "assistant", "content": f"answer {t}"},
                ]
            )
        assert await s.create_branch_from_turn(2, "retry") == "retry"
        for t in range(2, 5):
            await s.add_items(
                [
                    {"role": "user", "content": f"other question {t}"},
                    {"role": "assistant", "content": f"other answer {t}"},
                ]
            )
        out = [await s.get_items(branch_id="main"), await s.get_items()]
        s.close()
        return out

    return asyncio.run(write())


def _sdk_items(path: str) -> dict[str, list]:
    """{branch: get_items() with that branch current} of session "adv", by the SDK."""
    import asyncio

    from agents.extensions.memory import AdvancedSQLiteSession

    async def read() -> dict[str, list]:
        s = AdvancedSQLiteSession(session_id="adv", db_path=path)
        out = {}
        for b in await s.list_branches():
            await s.switch_to_branch(b["branch_id"])
            out[b["branch_id"]] = await s.get_items()
        s.close()
        return out

    return asyncio.run(read())


def _item_rows(path: str) -> dict[str, object]:
    conn = sqlite3.connect(path)
    try:
        return {
            f"item-{i}": json.loads(d) for i, d in conn.execute("SELECT id, message_data FROM agent_messages")
        }
    finally:
        conn.close()


def test_advanced_session_branches_are_threads(tmp_path):
    """Each branch of an AdvancedSQLiteSession is a thread (SESSION for main,
    SESSION#BRANCH), whose log and head's transcript are the SDK's get_items() with that
    branch current; tree and log --graph show where the branch parts from main."""
    from agentctl.storage.openai_agents.items import to_message
    from tests.support.sampledb import cli

    path = str(tmp_path / "adv.db")
    main, retry = _two_branches(path)
    assert len(main) == len(retry) == 8 and main[:2] == retry[:2] and main[2:] != retry[2:]
    rows = _item_rows(path)
    assert len(rows) == 14
    r = cli(path, "--no-color", "threads", "list")
    assert r.exit_code == 0
    assert "adv\t8\t8" in r.stdout and "adv#retry\t8\t8\t" in r.stdout
    for thread, items in (("adv", main), ("adv#retry", retry)):
        log = json.loads(cli(path, "log", thread, "--json").stdout)
        assert [m["thread_id"] for m in log] == [thread] * 8
        assert [rows[m["checkpoint_id"]] for m in reversed(log)] == items
        head = json.loads(cli(path, "show", thread, "--json").stdout)
        assert head["metadata"]["thread_id"] == thread and head["state"]["item"] == items[-1]
        names: dict = {}
        assert head["messages"] == [to_message(i, names) for i in items]
    tree = json.loads(cli(path, "tree", "adv", "--json").stdout)
    assert tree["total_checkpoints"] == 14
    branch = next(t for t in tree["threads"] if t["thread_id"] == "adv#retry")
    point = json.loads(cli(path, "show", "adv@2", "--json").stdout)["metadata"]["checkpoint_id"]
    assert branch["parent_thread"] == "adv" and branch["branch_point"] == point
    labels = {n["id"]: n["labels"] for n in tree["nodes"]}
    assert "branch-point" in labels[point]
    text = cli(path, "--no-color", "tree", "adv").stdout
    assert "thread adv#retry" in text and text.count("question 1") == 1
    graph = cli(path, "--no-color", "log", "--graph", "adv").stdout.splitlines()
    assert len(graph) == 15 and graph[-3].startswith("├─┘") and "answer 1" in graph[-2]


@pytest.mark.parametrize(
    "thread,hard", [("adv#retry", False), ("adv#retry", True), ("adv", False), ("adv", True)]
)
def test_rewind_a_branch_of_an_advanced_session(tmp_path, thread, hard):
    """A rewind of one branch leaves the other as the SDK read it; undo and redo."""
    from tests.support.sampledb import cli

    path = str(tmp_path / "adv-rw.db")
    main, retry = _two_branches(path)
    before = _all_rows(path)
    assert _sdk_items(path) == {"main": main, "retry": retry}
    args = ["rewind", f"{thread}@4", "--yes"] + (["--hard", "--no-backup"] if hard else [])
    r = cli(path, *args)
    assert r.exit_code == 0, r.stderr
    after = _sdk_items(path)
    mine, other = ("retry", "main") if thread == "adv#retry" else ("main", "retry")
    was = {"main": main, "retry": retry}
    assert after[mine] == was[mine][:4] and after[other] == was[other]
    archives = {b: items for b, items in after.items() if b not in ("main", "retry")}
    if hard:
        assert not archives
    else:
        ((name, items),) = archives.items()
        assert name.startswith(f"{mine}-rewind-") and items == was[mine][4:]
        log = json.loads(cli(path, "log", f"adv#{name}", "--json").stdout)
        assert [_item_rows(path)[m["checkpoint_id"]] for m in reversed(log)] == was[mine][4:]
    assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before and _sdk_items(path) == {"main": main, "retry": retry}
    assert cli(path, "redo").exit_code == 0
    assert _sdk_items(path) == after
