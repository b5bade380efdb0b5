"""The side search index (agentctl/storage/textindex.py) serves Google ADK's and
LangGraph's SQLite databases too: written by the frameworks' own packages, the index's
hits are the scan's, also after the framework appends and deletes rows; a damaged side
file is never trusted; `doctor` reports it; the database itself is never written."""

from __future__ import annotations

import asyncio
import hashlib
import os

import pytest

from tests.support.sampledb import cli, cli_json

TEXTS = [
    "Weather in PARIS tomorrow?",
    "paris is sunny",
    "Café crème à Paris",
    "CAFÉ NOIR",
    "Straße nach Köln",
    "你好世界",
    'quote "inside" here',
    "back\\slash path",
    "ΣΊΣΥΦΟΣ and σίσυφος",
    "nothing here",
]


def _hits(db: str, *args: str) -> list:
    return [
        (
            h["thread_id"],
            h["checkpoint_id"],
            h["step"],
            h["where"],
            h.get("role"),
            h["snippet"],
            h.get("path"),
        )
        for h in cli_json(db, "search", *args)
    ]


def _same(db: str, queries: list[list[str]]) -> None:
    for q in queries:
        for n in ("500", "3", "1"):
            assert _hits(db, *q, "-n", n) == _hits(db, *q, "-n", n, "--scan"), (q, n)


def _route(db: str, needle: str) -> str:
    """Which way the library's search went ("index" or "scan")."""
    from agentctl.storage import open_store

    async def go() -> str:
        async with open_store(db) as store:
            await store.search(needle)
            return store.last_search_path

    return asyncio.run(go())


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _damaged_falls_back(db: str, needle: str) -> None:
    with open(db + ".agentctl-search", "r+b") as f:
        f.truncate(1000)
    r = cli(db, "search", needle, "--json")
    assert r.exit_code == 0 and "fell back to the scan" in r.stderr
    assert len([line for line in r.stderr.splitlines() if line.strip()]) == 1, r.stderr
    d = cli(db, "doctor", "--json")
    assert d.exit_code == 5 and "search_index" in d.stdout, d.stdout


# ---- Google ADK ------------------------------------------------------------------------------


ADK_QUERIES = [
    ["paris"],
    ["PARIS", "--role", "user"],
    ["café"],
    ["straße"],
    ["你好"],
    ['"inside"'],
    ["back\\slash"],
    ["σίσυφος"],
    ["lookup"],
    ["sunny", "--in", "tools"],
    ["paris", "--in", "messages"],
    ["paris", "--thread", "app/u1/s1"],
    ["zzz-not-there"],
    ["pa"],
]


def _adk_events(n: int, tie: float | None = None) -> list:
    from google.adk.events import Event
    from google.genai import types

    out = []
    for i in range(n):
        t = TEXTS[i % len(TEXTS)]
        inv = f"inv-{i}"
        call = types.FunctionCall(id=f"fc-{i}", name="lookup", args={"q": t})
        resp = types.FunctionResponse(id=f"fc-{i}", name="lookup", response={"result": f"sunny in {t}"})
        evs = [
            Event(
                author="user",
                invocation_id=inv,
                content=types.Content(role="user", parts=[types.Part(text=t)]),
            ),
            Event(
                author="helper",
                invocation_id=inv,
                content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            ),
            Event(
                author="helper",
                invocation_id=inv,
                content=types.Content(role="user", parts=[types.Part(function_response=resp)]),
            ),
            Event(
                author="helper",
                invocation_id=inv,
                content=types.Content(role="model", parts=[types.Part(text=t.upper())]),
            ),
        ]
        if tie is not None:  # events of the same time: the order falls to their ids
            for ev in evs:
                ev.timestamp = tie
        out.extend(evs)
    return out


async def _adk_write(path: str, sessions: dict[str, list], create: bool = True) -> None:
    from google.adk.sessions import DatabaseSessionService

    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    try:
        for sid, events in sessions.items():
            user, session_id = sid.split("/")
            if create:
                s = await svc.create_session(app_name="app", user_id=user, session_id=session_id)
            else:
                s = await svc.get_session(app_name="app", user_id=user, session_id=session_id)
            for ev in events:
                await svc.append_event(s, ev)
    finally:
        await svc.close()


async def _adk_delete(path: str, sid: str) -> None:
    from google.adk.sessions import DatabaseSessionService

    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    try:
        user, session_id = sid.split("/")
        await svc.delete_session(app_name="app", user_id=user, session_id=session_id)
    finally:
        await svc.close()


def test_adk_side_index(tmp_path):
    pytest.importorskip("google.adk")
    pytest.importorskip("sqlalchemy")
    db = str(tmp_path / "adk.db")
    asyncio.run(
        _adk_write(
            db,
            {
                "u1/s1": _adk_events(12),
                "u1/s2": _adk_events(7),
                "u2/s3": _adk_events(3),
                "u2/tie": _adk_events(4, tie=1_700_000_000.0),
            },
        )
    )
    before = _digest(db)
    assert cli(db, "index", "build").exit_code == 0
    assert os.path.exists(db + ".agentctl-search")
    assert cli_json(db, "index", "status")["state"] == "current"
    assert cli_json(db, "doctor")["ok"]
    _same(db, ADK_QUERIES)
    assert _hits(db, "paris", "-n", "500")
    assert _route(db, "paris") == "index" and _route(db, "pa") == "scan"
    assert _digest(db) == before

    # ADK again: a session appended to, another deleted (its events with it)
    asyncio.run(_adk_write(db, {"u1/s2": _adk_events(2)[:1]}, create=False))
    asyncio.run(_adk_write(db, {"u3/new": _adk_events(1)}))
    asyncio.run(_adk_delete(db, "u1/s1"))
    assert cli_json(db, "index", "status")["state"] == "behind"
    d = cli_json(db, "doctor")
    assert d["ok"] and any("search index" in w for w in d["warnings"]), d
    after = _digest(db)
    _same(db, [q for q in ADK_QUERIES if "--thread" not in q] + [["paris", "--thread", "app/u1/s2"]])
    assert cli_json(db, "index", "status")["state"] == "current"
    assert not any(h[0] == "app/u1/s1" for h in _hits(db, "paris", "-n", "500"))
    assert any(h[0] == "app/u3/new" for h in _hits(db, "paris", "-n", "500"))
    assert _digest(db) == after
    _damaged_falls_back(db, "paris")
    assert _digest(db) == after


# ---- LangGraph -------------------------------------------------------------------------------


LG_QUERIES = [
    ["paris"],
    ["PARIS", "--role", "user"],
    ["café"],
    ["straße"],
    ["你好"],
    ['"inside"'],
    ["back\\slash"],
    ["σίσυφος"],
    ["lookup"],
    ["sunny", "--in", "tools"],
    ["paris", "--in", "messages"],
    ["paris", "--in", "state"],
    ["task_id"],
    ["assistant"],
    ["zzz-not-there"],
    ["pa"],
    ["paris", "--thread", "t1"],
]


def _lg_graph(saver):
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    # (the functional form: this module's annotations are strings)
    State = TypedDict("State", {"messages": Annotated[list, add_messages], "city": str})  # noqa: UP013 (LangGraph reads it at run time: not strings)

    def agent(s):
        last = s["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"done: {last.content}".upper())]}
        text = last.content
        return {
            "messages": [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "lookup", "args": {"q": text}, "id": f"call-{len(s['messages'])}"}],
                )
            ],
            "city": text,
        }

    def tools(s):
        call = s["messages"][-1].tool_calls[0]
        return {
            "messages": [
                ToolMessage(content=f"sunny in {call['args']['q']}", tool_call_id=call["id"], name="lookup")
            ]
        }

    def route(s):
        return "tools" if getattr(s["messages"][-1], "tool_calls", None) else END

    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def _lg_write(path: str, threads: dict[str, list[str]]) -> None:
    import sqlite3

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = _lg_graph(SqliteSaver(con))
        for tid, texts in threads.items():
            for t in texts:
                graph.invoke({"messages": [HumanMessage(content=t)]}, {"configurable": {"thread_id": tid}})
    finally:
        con.close()


def _lg_delete(path: str, tid: str) -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    con = sqlite3.connect(path, check_same_thread=False)
    try:
        SqliteSaver(con).delete_thread(tid)
    finally:
        con.close()


def test_langgraph_side_index(tmp_path, monkeypatch):
    pytest.importorskip("langgraph")
    pytest.importorskip("langgraph.checkpoint.sqlite")
    db = str(tmp_path / "lg.db")
    _lg_write(db, {"t1": TEXTS[:5], "t2": TEXTS[3:], "t3": TEXTS[::3]})
    before = _digest(db)
    assert cli(db, "index", "build").exit_code == 0
    assert cli_json(db, "index", "status")["state"] == "current"
    assert cli_json(db, "doctor")["ok"]
    _same(db, LG_QUERIES)
    assert _hits(db, "paris", "-n", "500")
    assert _route(db, "paris") == "index" and _route(db, "pa") == "scan"
    from agentctl.storage.langgraph import store as lg_store

    with monkeypatch.context() as m:  # many candidates: looked for thread by thread
        m.setattr(lg_store, "LAZY_CANDIDATES", 0)
        _same(db, LG_QUERIES)
    assert _digest(db) == before

    # LangGraph again: a thread goes on (checkpoints and writes), another is deleted
    _lg_write(db, {"t2": ["new: PARIS again, café"], "t4": ["Köln and Paris"]})
    _lg_delete(db, "t1")
    assert cli_json(db, "index", "status")["state"] == "behind"
    d = cli_json(db, "doctor")
    assert any("search index" in w for w in d["warnings"]), d
    after = _digest(db)
    _same(db, [q for q in LG_QUERIES if "--thread" not in q] + [["paris", "--thread", "t2"]])
    assert cli_json(db, "index", "status")["state"] == "current"
    found = _hits(db, "paris", "-n", "500")
    assert not any(h[0] == "t1" for h in found) and any(h[0] == "t4" for h in found)
    assert _digest(db) == after
    _damaged_falls_back(db, "paris")
    assert _digest(db) == after


# ---- the OpenAI Agents SDK: doctor -----------------------------------------------------------


def test_openai_doctor_reports_side_index(tmp_path):
    pytest.importorskip("agents")
    from agents import SQLiteSession

    db = str(tmp_path / "sdk.db")

    async def write(text: str) -> None:
        s = SQLiteSession("s1", db)
        try:
            await s.add_items([{"role": "user", "content": text}])
        finally:
            s.close()

    asyncio.run(write("Paris first"))
    d = cli_json(db, "doctor")
    assert d["ok"] and d["problems"] == {"invalid_json": [], "search_index": []} and not d["warnings"]
    assert cli(db, "index", "build").exit_code == 0
    assert cli_json(db, "doctor")["ok"] and not cli_json(db, "doctor")["warnings"]
    asyncio.run(write("Paris again"))
    d = cli_json(db, "doctor")
    assert d["ok"] and any("search index" in w for w in d["warnings"]), d
    before = _digest(db)
    _damaged_falls_back(db, "paris")
    assert _digest(db) == before


def test_adk_v0_side_index_never_unpickles(tmp_path, monkeypatch):
    """ADK's v0 layout (pickled `actions`): the index is built from the plain columns,
    the pickled one never loaded."""
    pytest.importorskip("google.adk")
    import pickle
    import sqlite3

    from tests.formats.test_format_adk import V0_DDL

    db = str(tmp_path / "v0.db")
    conn = sqlite3.connect(db)
    for ddl in V0_DDL:
        conn.execute(ddl.format(json="TEXT", ts="DATETIME", blob="BLOB"))
    conn.execute(
        "INSERT INTO sessions VALUES ('a', 'u', 's', '{}', '2025-01-01 00:00:00.000000', "
        "'2025-01-01 00:00:09.000000')"
    )
    conn.executemany(
        "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, author, actions, timestamp, content) "
        "VALUES (?, 'a', 'u', 's', 'inv', ?, ?, ?, ?)",
        [
            (
                f"e{i}",
                "user" if i % 2 == 0 else "agent",
                pickle.dumps({"state_delta": {"x": i}}),
                f"2025-01-01 00:00:0{i // 2}.000000",
                '{{"role": "{}", "parts": [{{"text": "{}"}}]}}'.format(
                    "user" if i % 2 == 0 else "model", t.replace('"', "'")
                ),
            )
            for i, t in enumerate(TEXTS)
        ],
    )
    conn.commit()
    conn.close()

    def no_unpickling(*_a, **_k):
        raise AssertionError("agentctl unpickled a column")

    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(pickle, "load", no_unpickling)
    before = _digest(db)
    assert cli(db, "index", "build").exit_code == 0
    _same(db, [["paris"], ["café"], ["σίσυφος"], ["paris", "--role", "user"], ["zzz-not-there"]])
    assert _hits(db, "paris", "-n", "500") and _route(db, "paris") == "index"
    assert _digest(db) == before
