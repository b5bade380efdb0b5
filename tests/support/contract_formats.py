"""Builders of small databases of every format on every backend, for the contract suite
(tests/formats/contract/).

Each format has a `FormatCase`: a `build(kind, url)` that writes a small database the
way the format's own program does (AgentOS: agentctl's engine; the article: its DDL and
its `AgentStorage`; LangGraph: real graphs with SqliteSaver/PostgresSaver; OpenAI
Agents: SQLiteSession/SQLAlchemySession; ADK: DatabaseSessionService), 3-4 threads, one
with a branch where the format has them, and `append(url, thread, text)`, one more step
written by that program (an agent going on). What legitimately differs between formats
is data here (`FormatCase` fields), never if/else on format names in the tests.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from tests.support import hostile

#: a text every builder writes into its main thread, found by `search`
NEEDLE = "zephyrine"
#: a non-ASCII word each builder writes in the same message (search is case-insensitive
#: beyond ASCII too: "ZÜRICH" finds it)
WIDE = "Zürich"


@dataclass
class Built:
    """What a builder wrote: the database, its threads, the thread the write tests use
    (at least 3 checkpoints, NEEDLE in one of its messages), its branch if any, and
    the format's own branch threads by source thread (LangGraph: a subgraph's)."""

    url: str
    threads: list[str]
    main: str
    branch: str | None = None
    #: every branch thread the builder made, by its source thread (main's included)
    branches: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.branch is not None:
            self.branches.setdefault(self.main, self.branch)


@dataclass(frozen=True)
class FormatCase:
    name: str
    #: the bundled sample of this format (sample_db/NAME; None: none, the TUI's sample
    #: tests and snapshots leave the store out)
    sample: str | None
    build: Callable[[str, str], Awaitable[Built]]
    #: one more step on a thread, written by the format's own program (None: not offered)
    append: Callable[[str, str, str], Awaitable[None]] | None = None
    #: what "the same content" means after a rewind or a branch: the checkpoint seen
    #: without what names its rows or its thread (a copy has ids of its own)
    content: Callable[[Any], Any] = lambda cp: (cp.messages, cp.state, cp.tools_result)
    #: the rewinds (by `hard`) that append a new head holding the target's content (ADK's
    #: rewind event) instead of making the target the head again
    rewind_appends: tuple[bool, ...] = ()
    #: the prune the write tests run (PruneSpec fields; "THREAD" stands for the main thread)
    prune: Mapping[str, Any] = field(default_factory=dict)
    #: the CLI arguments of that prune
    prune_cli: tuple[str, ...] = ()
    #: columns the format's program keeps for itself and agentctl's writes move, which
    #: undo does not put back ({table: {column}}); left out of the row-for-row dumps
    volatile: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: what `format_contract.check_store` may also ask of this format's threads (those
    #: the builder writes; `sample_checks` of the bundled sample, default the same)
    store_checks: Mapping[str, Any] = field(default_factory=dict)
    sample_checks: Mapping[str, Any] | None = None
    #: those after one of agentctl's writes (default store_checks)
    written_checks: Mapping[str, Any] | None = None
    #: the Python packages the builder needs (skipped without them)
    needs: tuple[str, ...] = ()
    #: the table holding one row per checkpoint (what a plan's counts count)
    rows_table: str = "checkpoints"
    #: rows a buggy writer could leave, added to the SQLite database the builder wrote
    #: (tests/support/hostile.py): the format is then in the hostile-rows suite
    hostile: hostile.HostileRows | None = None
    #: the store has Postgres tables too (False: its framework writes SQLite files only;
    #: the suites run its SQLite half alone)
    postgres: bool = True
    #: the store writes (False: read only, its format has no writes; the atomicity suite
    #: leaves it out, the write tests check every write is refused)
    writes: bool = True
    #: `rewind --hard` is offered (False: refused, exit 2, nothing written; the suites
    #: check that instead)
    hard_rewind: bool = True
    #: a branch is known as its source's (`branch_of`, the tree; False: the store keeps no
    #: link, as CrewAI's flow states: a branch is a new flow, unrelated in CrewAI's rows)
    branch_lineage: bool = True
    #: the policies the TUI's prune dialog offers on one thread (History.prune_policies)
    prune_policies: tuple[str, ...] = ("keep_last_n", "keep_age", "keep_milestones")
    #: why `append` is None (the tests needing the format's program to write a step
    #: after agentctl's skip with it)
    no_append: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The backends the suites run this store on."""
        return ("sqlite", "postgres") if self.postgres else ("sqlite",)


# ---- helpers -------------------------------------------------------------------------------


def pg_schema(dsn: str) -> str:
    return parse_qs(urlsplit(dsn).query).get("search_path", ["public"])[0]


def sqlalchemy_engine(dsn: str):
    """A SQLAlchemy asyncpg engine on the DSN's schema (search_path as a server setting)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    parts = urlsplit(dsn)
    url = urlunsplit(("postgresql+asyncpg", parts.netloc, parts.path, "", ""))
    return create_async_engine(url, connect_args={"server_settings": {"search_path": pg_schema(dsn)}})


def psycopg_dsn(dsn: str) -> str:
    """The rig's DSN with `search_path=` (asyncpg's server setting) as libpq's `options`."""
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query))
    path = query.pop("search_path", None)
    if path:
        query["options"] = f"-csearch_path={path}"
    return urlunsplit(parts._replace(query=urlencode(query)))


def is_pg(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


# ---- AgentOS: agentctl's own engine writes the checkpoints -----------------------------------


async def _agentos_engine(url: str):
    from agentctl.backends import make_backend
    from tests.support.engine_helpers import make_engine

    backend = make_backend(url, readonly=False, create=True)
    await backend.connect()
    return backend, make_engine(backend)


def _agentos_messages(thread: str, k: int) -> list[dict]:
    msgs = [{"role": "user", "content": f"{thread} question {i}"} for i in range(k + 1)]
    if thread == "agent-main":
        msgs[0]["content"] += f" about {NEEDLE} in {WIDE}"
    return msgs


async def build_agentos(kind: str, url: str) -> Built:
    backend, engine = await _agentos_engine(url)
    try:
        for thread, n in (("agent-main", 4), ("agent-side", 3), ("agent-one", 1)):
            for k in range(n):
                await engine.snapshot(
                    thread, _agentos_messages(thread, k), {"k": k, "thread": thread}, {f"tool{k}": {"out": k}}
                )
        second = (await backend.read_thread("agent-main", 2))[1]
        branch = await engine.branch(second.checkpoint_id, "alt")
        await engine.snapshot(
            branch, [{"role": "user", "content": "on the branch"}], {"k": 9, "thread": branch}, {}
        )
    finally:
        await backend.close()
    return Built(url, ["agent-main", "agent-side", "agent-one", branch], "agent-main", branch)


async def append_agentos(url: str, thread: str, text: str) -> None:
    backend, engine = await _agentos_engine(url)
    try:
        head = await backend.get_latest(thread)
        await engine.snapshot(
            thread,
            list(head.messages) + [{"role": "user", "content": text}],
            dict(head.state, appended=text),
            dict(head.tools_result),
        )
    finally:
        await backend.close()


# ---- the article's session store: its DDL and its AgentStorage -------------------------------


def _article_sqlite(path: str) -> tuple[str, list[str]]:
    from tests.support.article_storage import AgentStorage, init_database

    init_database(path)
    st = AgentStorage(path)
    alice = st.create_user("alice", "alice@example.com")["id"]
    bob = st.create_user("bob")["id"]
    main = st.create_session(alice, "weather chat")["id"]
    st.save_message(main, "user", f"what is the weather in {NEEDLE} near {WIDE}?", token_count=7)
    st.save_message(
        main,
        "assistant",
        "",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": json.dumps({"city": NEEDLE})},
            }
        ],
        token_count=5,
    )
    st.log_tool_call(main, "weather", {"city": NEEDLE}, {"sky": "clear"}, 12.5, message_id=2)
    st.save_message(main, "tool", json.dumps({"sky": "clear"}), tool_call_id="c1", token_count=3)
    st.save_message(main, "assistant", "It is clear.", token_count=4)
    st.create_task(main, "summarize", {"n": 1})
    side = st.create_session(alice, "second")["id"]
    st.save_message(side, "user", "hello", token_count=1)
    st.save_message(side, "assistant", "hi", token_count=1)
    other = st.create_session(bob, "bob's")["id"]
    st.save_message(other, "user", "bonjour", token_count=2)
    st.update_task_status(st.create_task(other, "report", {})["id"], "completed", {"ok": True})
    return main, [main, side, other]


async def _copy_sqlite_rows_to_pg(source: str, dsn: str) -> None:
    import asyncpg

    from agentctl.storage.article import schema as S

    conn = await asyncpg.connect(dsn)
    src = sqlite3.connect(source)
    try:
        await conn.execute(S.POSTGRES_DDL)
        for table in ("users", "sessions", "messages", "tasks", "tool_logs"):
            cur = src.execute(f"SELECT * FROM {table} ORDER BY id")
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
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
        src.close()
        await conn.close()


async def build_article(kind: str, url: str) -> Built:
    if kind == "sqlite":
        main, threads = _article_sqlite(url)
        return Built(url, sorted(threads), main)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "a.db")
        main, threads = _article_sqlite(path)
        await _copy_sqlite_rows_to_pg(path, url)
    return Built(url, sorted(threads), main)


async def append_article(url: str, thread: str, text: str) -> None:
    if not is_pg(url):
        from tests.support.article_storage import AgentStorage

        AgentStorage(url).save_message(thread, "assistant", text, token_count=2)
        return
    import asyncpg

    conn = await asyncpg.connect(url)
    try:  # the article's save_message, in Postgres' dialect
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO messages (session_id, role, content, token_count) "
                "VALUES ($1, 'assistant', $2, 2)",
                thread,
                text,
            )
            await conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, "
                "total_tokens = total_tokens + 2 WHERE id = $1",
                thread,
            )
    finally:
        await conn.close()


# ---- LangGraph: real graphs with the real savers --------------------------------------------


def _lg_graph():
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    S = TypedDict("S", {"messages": Annotated[list, add_messages], "count": int})  # noqa: UP013 (LangGraph reads it at run time: not strings)

    def agent(s):
        n = s.get("count", 0) + 1
        return {"messages": [AIMessage(content=f"answer {n}")], "count": n}

    g = StateGraph(S)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    return g


def _lg_parent_graph():
    """A graph whose second node is a compiled subgraph: its checkpoints are LangGraph's
    namespace THREAD|child:TASK, a branch thread of THREAD in agentctl."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    S = TypedDict("S", {"notes": str})  # noqa: UP013 (LangGraph reads it at run time: not strings)
    child = StateGraph(S)
    child.add_node("inner", lambda s: {"notes": s["notes"] + " +inner"})
    child.add_edge(START, "inner")
    child.add_edge("inner", END)
    g = StateGraph(S)
    g.add_node("outer", lambda s: {"notes": s["notes"] + " +outer"})
    g.add_node("child", child.compile())
    g.add_edge(START, "outer")
    g.add_edge("outer", "child")
    g.add_edge("child", END)
    return g


def _lg_write(saver, turns: Mapping[str, list[str]]) -> None:
    from langchain_core.messages import HumanMessage

    graph = _lg_graph().compile(checkpointer=saver)
    for thread, texts in turns.items():
        for text in texts:
            graph.invoke({"messages": [HumanMessage(content=text)]}, {"configurable": {"thread_id": thread}})


_LG_TURNS = {
    "lg-main": [f"tell me about {NEEDLE} in {WIDE}", "and more"],
    "lg-side": ["hello"],
    "lg-other": ["bonjour", "merci"],
}


def _lg_saver(url: str):
    """A context manager yielding the saver of the database (tables set up)."""
    from contextlib import contextmanager

    @contextmanager
    def saver():
        if is_pg(url):
            from langgraph.checkpoint.postgres import PostgresSaver

            with PostgresSaver.from_conn_string(psycopg_dsn(url)) as s:
                s.setup()
                yield s
            return
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(url, check_same_thread=False)
        try:
            s = SqliteSaver(conn)
            s.setup()
            yield s
        finally:
            conn.close()

    return saver()


async def build_langgraph(kind: str, url: str) -> Built:
    from agentctl.storage import open_store

    with _lg_saver(url) as saver:
        _lg_write(saver, _LG_TURNS)
        _lg_parent_graph().compile(checkpointer=saver).invoke(
            {"notes": "start"}, {"configurable": {"thread_id": "lg-parent"}}
        )
    async with open_store(url) as store:  # the subgraph's thread id holds LangGraph's task id
        (sub,) = [t for t in await store.all_addresses() if t.startswith("lg-parent|")]
    # the threads LangGraph has (a subgraph namespace is shown under its thread, not listed)
    return Built(url, sorted([*_LG_TURNS, "lg-parent"]), "lg-main", branches={"lg-parent": sub})


async def append_langgraph(url: str, thread: str, text: str) -> None:
    with _lg_saver(url) as saver:
        _lg_write(saver, {thread: [text]})


# ---- OpenAI Agents SDK: its sessions ----------------------------------------------------------

_OA_ITEMS = {
    "oa-main": [
        {"role": "user", "content": f"weather in {NEEDLE} near {WIDE}?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": json.dumps({"city": NEEDLE}),
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
    ],
    "oa-side": [
        {"role": "user", "content": "hello"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
    ],
    "oa-other": [{"role": "user", "content": "bonjour"}],
}


async def _oa_sessions(url: str, ids):
    """(sessions, close) of the SDK on this database."""
    if is_pg(url):
        from agents.extensions.memory import SQLAlchemySession

        engine = sqlalchemy_engine(url)
        sessions = {sid: SQLAlchemySession(sid, engine=engine, create_tables=True) for sid in ids}

        async def close():
            await engine.dispose()

        return sessions, close
    from agents import SQLiteSession

    sessions = {sid: SQLiteSession(sid, url) for sid in ids}

    async def close_all():
        for s in sessions.values():
            s.close()

    return sessions, close_all


async def build_openai(kind: str, url: str) -> Built:
    sessions, close = await _oa_sessions(url, _OA_ITEMS)
    try:
        for sid, items in _OA_ITEMS.items():
            await sessions[sid].add_items(items)
    finally:
        await close()
    return Built(url, sorted(_OA_ITEMS), "oa-main")


async def append_openai(url: str, thread: str, text: str) -> None:
    sessions, close = await _oa_sessions(url, [thread])
    try:
        await sessions[thread].add_items([{"role": "user", "content": text}])
    finally:
        await close()


# ---- Google ADK: DatabaseSessionService -------------------------------------------------------


async def _adk_service(url: str):
    from google.adk.sessions import DatabaseSessionService

    if is_pg(url):
        engine = sqlalchemy_engine(url)
        svc = DatabaseSessionService(db_engine=engine)

        async def close():
            await svc.close()
            await engine.dispose()

        return svc, close
    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{url}")
    return svc, svc.close


def _adk_text(role: str, text: str):
    from google.genai import types

    return types.Content(role=role, parts=[types.Part(text=text)])


async def build_adk(kind: str, url: str) -> Built:
    from google.adk.events import Event, EventActions

    svc, close = await _adk_service(url)
    try:
        s = await svc.create_session(app_name="app", user_id="u1", session_id="main", state={"init": 1})
        for i, (role, text) in enumerate(
            [
                ("user", f"plan a trip to {NEEDLE} via {WIDE}"),
                ("model", "Where from?"),
                ("user", "from Lyon"),
                ("model", "Booked."),
            ]
        ):
            author = "user" if role == "user" else "helper"
            await svc.append_event(
                s,
                Event(
                    author=author,
                    invocation_id=f"inv-{i}",
                    content=_adk_text(role, text),
                    actions=EventActions(state_delta={"turn": i}),
                ),
            )
        t = await svc.create_session(app_name="app", user_id="u1", session_id="side")
        await svc.append_event(
            t, Event(author="user", invocation_id="inv-s", content=_adk_text("user", "hello"))
        )
        o = await svc.create_session(app_name="app", user_id="u2", session_id="other", state={"k": "v"})
        for i, text in enumerate(["bonjour", "merci"]):
            await svc.append_event(
                o, Event(author="user", invocation_id=f"inv-o{i}", content=_adk_text("user", text))
            )
    finally:
        await close()
    return Built(url, ["app/u1/main", "app/u1/side", "app/u2/other"], "app/u1/main")


async def append_adk(url: str, thread: str, text: str) -> None:
    from google.adk.events import Event

    app, user, sid = thread.split("/")
    svc, close = await _adk_service(url)
    try:
        s = await svc.get_session(app_name=app, user_id=user, session_id=sid)
        await svc.append_event(
            s, Event(author="user", invocation_id="inv-appended", content=_adk_text("user", text))
        )
    finally:
        await close()


# ---- Agno: SqliteDb / PostgresDb (agno 3), a scripted model ---------------------------------------


def _agno_db(url: str):
    if is_pg(url):
        from agno.db.postgres import PostgresDb

        from tests.support.agno_rig import sqlalchemy_url

        return PostgresDb(db_url=sqlalchemy_url(url), db_schema=pg_schema(url))
    from agno.db.sqlite import SqliteDb

    return SqliteDb(db_file=url)


def _agno_run(url: str, session: str, texts: list[str], replies: list[str]) -> None:
    from agno.agent import Agent

    from tests.scripts.agno_model import Scripted

    agent = Agent(
        model=Scripted(script=list(replies)),
        id="helper",
        name="Helper",
        db=_agno_db(url),
        add_history_to_context=True,
        session_state={"turn": 0},
    )
    for text in texts:
        agent.run(text, session_id=session, user_id="u1")
        agent.update_session_state({"turn": len(text)}, session_id=session)


async def build_agno(kind: str, url: str) -> Built:
    import asyncio

    def go() -> None:
        _agno_run(
            url,
            "main",
            [f"plan a trip to {NEEDLE} via {WIDE}", "from Lyon", "book it"],
            ["Where from?", "Which date?", "Booked."],
        )
        _agno_run(url, "side", ["hello"], ["hi"])
        _agno_run(url, "other", ["bonjour", "merci"], ["salut", "de rien"])

    await asyncio.to_thread(go)
    return Built(url, ["main", "other", "side"], "main")


def _agno_content(cp) -> Any:
    """A run as a copy keeps it: not its run id, nor the forked_from_session_id a
    branch's copies get (as agno's fork_session writes them)."""
    run = {
        k: v
        for k, v in cp.tools_result.get("run", {}).items()
        if k not in ("run_id", "forked_from_session_id")
    }
    return cp.messages, cp.state, dict(cp.tools_result, run=run)


async def append_agno(url: str, thread: str, text: str) -> None:
    import asyncio

    await asyncio.to_thread(_agno_run, url, thread, [text], ["noted"])


# ---- CrewAI: the files the real crewai wrote once per test run, copied --------------------------
#: CrewAI runs in a venv of its own (it needs SQLite >= 3.45: tests/support/crewairig.py),
#: once per test run, not per test
_CREWAI_NO_APPEND = (
    "CrewAI runs once per test run in a venv of its own (tests/support/crewairig.py); "
    "its steps after agentctl's writes: tests/formats/test_crewai_writes.py"
)


def _crewai_build(file: str, threads: Callable[[dict], tuple[list[str], str, str | None]]):
    """A builder copying one of the files crewai wrote (crewairig.written): (threads, main,
    branch) from what was written."""

    async def build(kind: str, url: str) -> Built:
        import asyncio

        from tests.support import crewairig

        folder, w = await asyncio.to_thread(crewairig.written)
        crewairig.copy_file(folder, file, Path(url))
        names, main, branch = threads(w)
        return Built(url, names, main, branch)

    return build


def _crewai_content(cp) -> Any:
    """A checkpoint's state and methods without what names its row (a copy has its own
    id, parent and branch)."""
    state = {k: v for k, v in cp.state.items() if k not in ("id", "parent_id", "branch", "timestamp")}
    return state, [m.get("name") for m in cp.messages]


def _crewai_flows_content(cp) -> Any:
    """A flow's state without its `id` (a branch is a new flow: its uuid in its state)."""
    return cp.messages, {k: v for k, v in cp.state.items() if k != "id"}, cp.tools_result


def _article_content(cp) -> Any:
    """A session's transcript and tool logs without their row ids (a branch copies the
    rows under new ids); the state is the session row as it is now (its counters), not
    a step's."""
    drop = ("id", "message_id")
    return (
        [{k: v for k, v in m.items() if k not in drop} for m in cp.messages],
        sorted(repr({k: v for k, v in t.items() if k not in drop}) for t in cp.tools_result.values()),
    )


def _langgraph_content(cp) -> Any:
    """The transcript and the channel values (without the checkpoint's own metadata,
    which says how it was written, e.g. source "fork"); pending writes are the next
    step's, not this checkpoint's content."""
    return cp.messages, {k: v for k, v in cp.state.items() if k != "__metadata__"}


def _openai_content(cp) -> Any:
    """The transcript, the tool results and the item (the state names the session)."""
    return cp.messages, cp.tools_result, {k: v for k, v in cp.state.items() if k != "session_id"}


# ---- the cases --------------------------------------------------------------------------------

CASES: dict[str, FormatCase] = {
    c.name: c
    for c in [
        FormatCase(
            "agentos",
            "checkpoints.db",
            build_agentos,
            append_agentos,
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
        ),
        FormatCase(
            "article",
            "sessions.db",
            build_article,
            append_article,
            content=_article_content,
            rows_table="messages",
            hostile=hostile.ARTICLE,
            prune_policies=("keep_age",),
            store_checks={"first_step": 1, "message_per_step": True},
            prune={"statuses": ["active"], "keep_last": 1},
            prune_cli=("--all", "--status", "active", "--keep-last", "1"),
        ),
        FormatCase(
            "langgraph",
            "langgraph.db",
            build_langgraph,
            append_langgraph,
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
            prune_policies=("keep_last_n", "keep_age"),
            store_checks={"first_step": -1},
            # a rewind writes a fork checkpoint copying the target (LangGraph's replay);
            # its pending writes and checkpoint metadata are its own
            rewind_appends=(False, True),
            content=_langgraph_content,
            sample_checks={"linear": False},  # its support-refund-replay thread was replayed
            hostile=hostile.LANGGRAPH,
            # a rewind forks inside the thread; a branch copies the chain with
            # LangGraph's own checkpoint ids
            written_checks={"linear": False, "unique_ids": False},
            needs=("langgraph", "langgraph.checkpoint.sqlite"),
        ),
        FormatCase(
            "openai-agents",
            "openai_agents.db",
            build_openai,
            append_openai,
            content=_openai_content,
            rows_table="agent_messages",
            hostile=hostile.OPENAI_AGENTS,
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
            store_checks={"first_step": 1, "message_per_step": True},
            needs=("agents",),
        ),
        FormatCase(
            "adk",
            "adk.db",
            build_adk,
            append_adk,
            rows_table="events",
            hostile=hostile.ADK,
            rewind_appends=(False,),
            content=lambda cp: cp.state,
            store_checks={"first_step": 1, "message_per_step": True},
            # a rewind event hangs under the step it rewound to; the conversation (the
            # messages) leaves out the events it marks rewound
            written_checks={"first_step": 1, "linear": False},
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
            needs=("google.adk", "sqlalchemy"),
        ),
        FormatCase(
            "agno",
            "agno.db",
            build_agno,
            append_agno,
            rows_table="agno_runs",
            content=_agno_content,
            hostile=hostile.AGNO,
            store_checks={"first_step": 1},
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
            prune_policies=("keep_last_n", "keep_age"),
            needs=("agno", "sqlalchemy"),
        ),
        FormatCase(
            "crewai",
            None,
            _crewai_build(
                "checkpoints.db", lambda w: (sorted(["main", w["fork_branch"]]), "main", w["fork_branch"])
            ),
            postgres=False,
            hard_rewind=False,
            no_append=_CREWAI_NO_APPEND,
            rewind_appends=(False,),
            content=_crewai_content,
            prune={"threads": ["THREAD"], "keep_last": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
            prune_policies=("keep_last_n", "keep_age"),
            # each fresh kickoff on main is a root of its own
            store_checks={"linear": False},
        ),
        FormatCase(
            "crewai-flows",
            None,
            _crewai_build("flow_states.db", lambda w: (sorted(w["flows"]), w["flows"][0], None)),
            postgres=False,
            no_append=_CREWAI_NO_APPEND,
            rows_table="flow_states",
            content=_crewai_flows_content,
            prune_cli=("THREAD", "--keep-last", "1"),
            branch_lineage=False,
            store_checks={"first_step": 1},
        ),
        FormatCase(
            "crewai-replay",
            None,
            _crewai_build(
                "latest_kickoff_task_outputs.db", lambda w: (["latest_kickoff"], "latest_kickoff", None)
            ),
            postgres=False,
            writes=False,
            no_append=_CREWAI_NO_APPEND,
            rows_table="latest_kickoff_task_outputs",
            store_checks={"first_step": 1},
            prune_cli=("THREAD", "--keep-last", "1"),
        ),
    ]
}


#: the stores with Postgres tables (FormatCase.postgres)
ON_POSTGRES = [name for name, case in CASES.items() if case.postgres]
#: the stores with a bundled sample (FormatCase.sample)
SAMPLED = [name for name, case in CASES.items() if case.sample is not None]


# ---- dumps of every table -----------------------------------------------------------------------


async def asyncpg_connect(url: str) -> Any:
    if "://" not in url:
        return None
    import asyncpg

    return await asyncpg.connect(url)


async def table_names(url: str, conn: Any = None) -> list[str]:
    """Every table of the database (its schema on Postgres), SQLite's own excluded.
    `conn`: an open asyncpg connection to use (Postgres), else one is opened."""
    if is_pg(url):
        import asyncpg

        own = conn is None
        conn = await asyncpg.connect(url) if own else conn
        try:
            # (pg_class, not information_schema.tables: the same tables, at a fraction of
            # the cost; a fault loop lists them after every failed statement)
            rows = await conn.fetch(
                "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
                "AND relkind IN ('r', 'p') ORDER BY 1"
            )
            return [r[0] for r in rows]
        finally:
            if own:
                await conn.close()
    conn = sqlite3.connect(url)
    try:
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
    finally:
        conn.close()
    virtual = [n for n, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    # an FTS table's content is its shadow tables' (checked through the format's own reads)
    return [
        n
        for n, _ in rows
        if not n.startswith("sqlite_")
        and n not in virtual
        and not any(n.startswith(v + "_") for v in virtual)
    ]


async def dump(
    url: str, *, side_tables: bool = True, volatile: Mapping[str, frozenset[str]] = {}, conn: Any = None
) -> dict:
    """Every row of every table as text, sorted; without agentctl's own side tables
    (agentctl_*) when side_tables is False, and without the volatile columns. `conn`: an
    open asyncpg connection to read through (Postgres; a test dumping many times), else
    one is opened."""
    out: dict[str, list] = {}
    if is_pg(url):
        import asyncpg

        own = conn is None
        conn = await asyncpg.connect(url) if own else conn
        try:
            names = [t for t in await table_names(url, conn) if side_tables or not t.startswith("agentctl_")]
            for t in names:
                rows = [dict(r) for r in await conn.fetch(f'SELECT * FROM "{t}"')]
                out[t] = _rows(rows, volatile.get(t, ()))
        finally:
            if own:
                await conn.close()
        return out
    names = [t for t in await table_names(url) if side_tables or not t.startswith("agentctl_")]
    conn = sqlite3.connect(url)
    conn.row_factory = sqlite3.Row
    try:
        for t in names:
            out[t] = _rows([dict(r) for r in conn.execute(f'SELECT * FROM "{t}"')], volatile.get(t, ()))
    finally:
        conn.close()
    return out


def _rows(rows: list[dict], drop) -> list:
    return sorted(repr(sorted((k, str(v)) for k, v in r.items() if k not in drop)) for r in rows)


def copy_sample(name: str, dest: Path) -> Path:
    src = Path(__file__).resolve().parent.parent.parent / "sample_db" / name
    shutil.copyfile(src, dest)
    return dest


class SQLiteBuilds:
    """Each format's SQLite database built once per test session and copied for each
    test (the file, exact to the byte: its format's program wrote it once): the contract
    suite's 200-odd SQLite cases then cost a file copy each, not a framework's run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._built: dict[str, Built] = {}

    async def copy(self, case: FormatCase, dest: Path) -> Built:
        first = self._built.get(case.name)
        if first is None:
            path = self.folder / case.name / dest.name
            path.parent.mkdir(parents=True, exist_ok=True)
            first = await case.build("sqlite", str(path))
            conn = sqlite3.connect(path)  # everything in the main file: the copy is all of it
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
            self._built[case.name] = first
        source = Path(first.url)
        shutil.copyfile(source, dest)
        for suffix in ("-wal", "-shm"):
            side = Path(str(source) + suffix)
            if side.exists() and side.stat().st_size:
                shutil.copyfile(side, str(dest) + suffix)
        return Built(
            url=str(dest),
            threads=list(first.threads),
            main=first.main,
            branch=first.branch,
            branches=dict(first.branches),
        )


async def build_once(request: Any, name: str, kind: str, url: str) -> Built:
    """`CASES[name].build(kind, url)`; on SQLite a copy of the build made once per test
    session instead (the `sqlite_builds` fixture of tests/formats/conftest.py)."""
    if kind == "sqlite":
        return await request.getfixturevalue("sqlite_builds").copy(CASES[name], Path(url))
    return await CASES[name].build(kind, url)
