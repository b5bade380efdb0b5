"""`agentctl run` on the shapes of the agents people write (tests/fixtures/apps, no model
calls): an async graph with a Runtime context and configurable values, checked against
LangGraph's own ainvoke on a copy; Send into a compiled subgraph after an interrupt(),
pydantic state, resumed; agent modules inside packages importing their package; what the
runner or LangGraph raises is not reported as the user's agent's."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

import tests.formats.test_langgraph_writes as lgw  # noqa: E402
from tests.formats.test_langgraph_writes import cfg, strip_ids  # noqa: E402
from tests.formats.test_run import _agentctl, assert_exit_2_one_line, ctrl_c_when, settled_bytes  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.dbcopy import psycopg_dsn  # noqa: E402
from tests.support.rig import REPO  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

lg = lgw.lg
db_copy = dbcopy.db_copy

APPS = Path(REPO) / "tests" / "fixtures" / "apps"
ASYNC = f"{APPS / 'asyncctx' / 'graph.py'}:graph"
CONTEXT = json.dumps({"greeting": "hi", "limit": 4})


def _import(directory: Path, module: str, var: str):
    """The user's object, imported in the test's own process (the reference run)."""
    import importlib

    sys.path.insert(0, str(directory))
    try:
        return getattr(importlib.import_module(module), var)
    finally:
        sys.path.remove(str(directory))


@asynccontextmanager
async def async_saver(url: str):
    """LangGraph's own async saver on a database of either kind."""
    if "://" not in url:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(url) as saver:
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(psycopg_dsn(url)) as saver:
        yield saver


async def _history(graph, url: str, thread: str) -> list[tuple]:
    """The thread's checkpoints, oldest first: (step, source, values without ids, next)."""
    async with async_saver(url) as saver:
        g = graph.copy(update={"checkpointer": saver})
        out = [
            (s.metadata.get("step"), s.metadata.get("source"), strip_ids(s.values), s.next)
            async for s in g.aget_state_history(cfg(thread))
        ]
    return out[::-1]


async def _ainvoke(graph, url: str, thread: str, value, **kw) -> None:
    async with async_saver(url) as saver:
        await graph.copy(update={"checkpointer": saver}).ainvoke(value, **kw)


def test_an_async_graph_with_a_context_and_configurable_values_runs_as_langgraphs_ainvoke(lg, db_copy):
    url, saver = lg
    saver.setup()
    graph = _import(APPS / "asyncctx", "graph", "graph")
    Context = sys.modules[graph.builder.context_schema.__module__].Context
    ref_url = db_copy(url)
    r = _agentctl(
        url,
        "run",
        "t",
        "--agent",
        ASYNC,
        "--input",
        json.dumps({"n": 0}),
        "--context",
        CONTEXT,
        "--configurable",
        'user_id="ada"',
    )
    assert r.returncode == 0, (r.stdout, r.stderr)  # before: TypeError "No synchronous function provided"
    assert [ln.split()[1] for ln in r.stdout.splitlines()[:-1]] == ["-1", "0", "1", "2", "3", "4"]
    assert r.stdout.splitlines()[-1].startswith("ran t: 6 new checkpoint(s) (op ")
    # the reference: LangGraph's own ainvoke, with the context and the configurable value
    asyncio.run(
        _ainvoke(
            graph,
            ref_url,
            "t",
            {"n": 0},
            config={"configurable": {"thread_id": "t", "user_id": "ada"}},
            context=Context(greeting="hi", limit=4),
        )
    )
    ours, theirs = asyncio.run(_history(graph, url, "t")), asyncio.run(_history(graph, ref_url, "t"))
    assert ours == theirs and len(ours) == 6
    assert ours[-1][2] == {"n": 4, "log": ["hi ada 0", "hi ada 1", "hi ada 2", "hi ada 3"]}

    # the configurable value LangGraph keeps in the metadata: show shows it; the thread's
    # summary line is not made of it
    assert cli_json(url, "show", "t")["state"]["__metadata__"]["user_id"] == "ada"
    assert [t["head_summary"] for t in cli_json(url, "threads", "list")] == ["loop"]

    # --from an earlier checkpoint and edit --agent, both through the async API
    r = _agentctl(
        url,
        "run",
        "t",
        "--from",
        "t@2",
        "--agent",
        ASYNC,
        "--context",
        CONTEXT,
        "--configurable",
        'user_id="bob"',
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    edit = ("edit", "t", "--set", "n=1", "--agent", ASYNC, "--configurable", 'user_id="bob"', "--yes")
    r = _agentctl(url, *edit)  # the router reads runtime.context: update_state runs it, so it needs one
    assert r.returncode == 2 and "'NoneType' object has no attribute 'limit'" in r.stderr, (
        r.stdout,
        r.stderr,
    )
    r = _agentctl(url, *edit, "--context", CONTEXT)
    assert r.returncode == 0, (r.stdout, r.stderr)
    r = _agentctl(url, "run", "t", "--agent", ASYNC, "--context", CONTEXT, "--configurable", 'user_id="cy"')
    assert r.returncode == 0, (r.stdout, r.stderr)
    values = asyncio.run(_history(graph, url, "t"))[-1][2]
    assert values["n"] == 4 and values["log"][-3:] == ["hi cy 1", "hi cy 2", "hi cy 3"]

    # the user's own exception in an async node: theirs, with their frames
    r = _agentctl(
        url,
        "run",
        "m",
        "--agent",
        ASYNC,
        "--input",
        json.dumps({"n": 0}),
        "--configurable",
        'user_id="mallory"',
    )
    assert r.returncode == 1 and "your agent raised PermissionError in node 'call_model'" in r.stderr, (
        r.stderr
    )
    assert "graph.py" in r.stderr and "site-packages" not in r.stderr


def test_context_and_configurable_bad_input_exit_2_one_line_and_write_nothing(tmp_path):
    path = str(tmp_path / "lg.db")
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path)
    SqliteSaver(conn).setup()
    conn.close()
    before = settled_bytes(path)
    common = ("--agent", ASYNC, "--input", json.dumps({"n": 0}))
    assert_exit_2_one_line(
        path,
        "run",
        [
            (["--context", "{bad"], "--context is not JSON"),
            (["--context", '{"nope": 1}'], "--context does not fit the graph's context_schema Context"),
            (["--configurable", "user_id"], "is not KEY=JSON"),
            (["--configurable", "user_id={bad"], "--configurable user_id is not JSON"),
            (["--configurable", 'thread_id="x"'], "agentctl sets thread_id itself"),
        ],
        *common,
    )
    r = _agentctl(path, "run", "t", *common, "--context", CONTEXT)  # a thread to edit
    assert r.returncode == 0, r.stderr
    before = settled_bytes(path)
    # without the graph agentctl writes the edit itself: it has no use for them
    r = _agentctl(path, "edit", "t", "--set", "n=1", "--configurable", 'user_id="x"', "--yes")
    assert r.returncode == 2 and "name it with --agent" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert settled_bytes(path) == before


def test_ctrl_c_stops_an_async_run_and_what_it_saved_stays(tmp_path):
    path = str(tmp_path / "lg.db")

    def saved() -> int:
        try:
            return sqlite3.connect(path).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        except sqlite3.Error:
            return 0

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path)
    SqliteSaver(conn).setup()
    conn.close()
    code, out, err = ctrl_c_when(
        path,
        [
            "run",
            "t",
            "--agent",
            ASYNC,
            "--input",
            json.dumps({"n": 0}),
            "--context",
            json.dumps({"limit": 60}),
        ],
        lambda: saved() >= 4,
        env={"SLOW_GRAPH": "1"},
    )
    assert code == 130 and "interrupted: the run saved" in err, (out, err)
    assert 4 <= saved() < 62
    assert cli(path, "undo").exit_code == 0 and saved() == 0


def test_langgraph_json_dependencies_go_on_the_path(tmp_path):
    """langgraph.json's `dependencies` (a folder other than the graph's: a monorepo's
    shared library) are on the path the graph is imported with, as `langgraph dev` has
    them; without them the import fails."""
    project = tmp_path / "proj"
    (project / "libs" / "shared").mkdir(parents=True)
    (project / "libs" / "shared" / "doubling.py").write_text("def double(n):\n    return 2 * n\n")
    (project / "app").mkdir()
    (project / "app" / "graph.py").write_text(
        textwrap.dedent("""\
        from typing import TypedDict
        from langgraph.graph import END, START, StateGraph
        from doubling import double  # from libs/shared, a dependency

        class S(TypedDict):
            n: int

        builder = StateGraph(S)
        builder.add_node("twice", lambda s: {"n": double(s["n"])})
        builder.add_edge(START, "twice")
        builder.add_edge("twice", END)
        graph = builder.compile()
        """)
    )
    path = str(tmp_path / "lg.db")
    for deps, ok in (([".", "./libs/shared"], True), (["."], False)):
        (project / "langgraph.json").write_text(
            json.dumps({"dependencies": deps, "graphs": {"g": "./app/graph.py:graph"}})
        )
        r = _agentctl(
            path, "run", f"t{len(deps)}", "--agent", "g", "--input", json.dumps({"n": 21}), cwd=project
        )
        if ok:
            assert r.returncode == 0, (r.stdout, r.stderr)
            assert cli_json(path, "show", "t2")["state"]["n"] == 42
        else:
            assert r.returncode == 2 and "No module named 'doubling'" in r.stderr, (r.stdout, r.stderr)


def test_send_into_a_compiled_subgraph_after_an_interrupt_resumed_as_langgraph_does(tmp_path):
    """open_deep_research's legacy shape: an async package module (`research.legacy.graph`,
    importing its package absolutely and relatively), pydantic state, interrupt() for
    feedback, then Command(goto=[Send]) into a compiled subgraph, then --resume."""
    from langgraph.types import Command

    deep = APPS / "deep"
    path = str(tmp_path / "lg.db")
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path)
    SqliteSaver(conn).setup()
    conn.close()
    ref = str(tmp_path / "ref.db")
    shutil.copyfile(path, ref)
    # 1. the file itself, from elsewhere: imported as research.legacy.graph
    r = _agentctl(
        path,
        "run",
        "t",
        "--agent",
        f"{deep / 'research' / 'legacy' / 'graph.py'}:graph",
        "--input",
        json.dumps({"topic": "tea"}),
        cwd=tmp_path,
    )
    assert r.returncode == 0, (r.stdout, r.stderr)  # before: ModuleNotFoundError: No module named 'research'
    assert "waiting at human_feedback" in r.stdout and '"question": "approve the plan?"' in r.stdout
    # 2. the answer, the graph named by langgraph.json
    r = _agentctl(path, "run", "t", "--agent", "legacy", "--resume", "true", cwd=deep)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.count("(subgraph write_section:") == 2 * 4  # two sections, 4 checkpoints each

    graph = _import(deep, "research.legacy.graph", "graph")
    asyncio.run(_ainvoke(graph, ref, "t", {"topic": "tea"}, config=cfg("t")))
    asyncio.run(_ainvoke(graph, ref, "t", Command(resume=True), config=cfg("t")))
    ours, theirs = asyncio.run(_history(graph, path, "t")), asyncio.run(_history(graph, ref, "t"))
    assert ours == theirs
    assert ours[-1][2]["report"] == (
        "Report on tea: tea history: notes on tea history | tea today: notes on tea today"
    )
    subs = "SELECT COUNT(*) FROM checkpoints WHERE checkpoint_ns != ''"
    assert (
        sqlite3.connect(path).execute(subs).fetchone()
        == sqlite3.connect(ref).execute(subs).fetchone()
        == (8,)
    )
    assert cli(path, "undo").exit_code == 0 and cli(path, "undo").exit_code == 0
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM checkpoints").fetchone() == (0,)


def test_an_openai_agent_inside_a_package_runs_without_a_tracing_warning(tmp_path):
    """travel-concierge's layout (concierge/agent.py importing its package, absolutely
    and relatively) on the SDK's runner; with no OPENAI_API_KEY the SDK's trace export is
    off, so its "OPENAI_API_KEY is not set, skipping trace export" is not printed."""
    pytest.importorskip("agents")
    from agents import SQLiteSession

    path = str(tmp_path / "sdk.db")
    session = SQLiteSession("other", path)
    asyncio.run(session.add_items([{"role": "user", "content": "x"}]))
    session.close()
    r = _agentctl(
        path,
        "run",
        "s",
        "--agent",
        f"{APPS / 'concierge' / 'concierge' / 'agent.py'}:root_agent",
        "--input",
        "hello",
        env={"OPENAI_API_KEY": ""},
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "concierge says: hello" in r.stdout
    assert "OPENAI_API_KEY" not in r.stderr and "trace" not in r.stderr.lower(), r.stderr


def test_tracing_the_user_set_up_is_left_on(tmp_path):
    """An agent module that adds its own trace processor (as apps that send traces
    elsewhere do): agentctl leaves tracing on, and the processor sees the run."""
    pytest.importorskip("agents")
    from agents import SQLiteSession

    path = str(tmp_path / "sdk.db")
    session = SQLiteSession("other", path)
    asyncio.run(session.add_items([{"role": "user", "content": "x"}]))
    session.close()
    seen = tmp_path / "traces.txt"
    (tmp_path / "traced.py").write_text(
        textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(APPS / "concierge")!r})
        from agents import add_trace_processor
        from agents.tracing.processor_interface import TracingProcessor
        from concierge.agent import root_agent

        class ToFile(TracingProcessor):
            def _note(self, what):
                with open({str(seen)!r}, "a") as f:
                    f.write(what + "\\n")
            def on_trace_start(self, trace): self._note("trace")
            def on_trace_end(self, trace): pass
            def on_span_start(self, span): pass
            def on_span_end(self, span): self._note("span")
            def shutdown(self): pass
            def force_flush(self): pass

        add_trace_processor(ToFile())
        """)
    )
    r = _agentctl(
        path,
        "run",
        "s",
        "--agent",
        f"{tmp_path / 'traced.py'}:root_agent",
        "--input",
        "hello",
        env={"OPENAI_API_KEY": ""},
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "concierge says: hello" in r.stdout
    noted = seen.read_text().split()
    assert "trace" in noted and "span" in noted, noted


def test_an_adk_agent_inside_a_package_runs_by_file_and_by_folder(tmp_path):
    """travel-concierge's layout on ADK's runner: `--agent PKG/agent.py:root_agent`
    imports it as `travel_concierge.agent` (before: ImportError, attempted relative
    import with no known parent package); `--agent PKG` as `adk run PKG` takes it."""
    pytest.importorskip("google.adk")
    from google.adk.sessions import DatabaseSessionService

    path = str(tmp_path / "adk.db")

    async def make() -> None:
        svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
        await svc.create_session(app_name="app", user_id="u1", session_id="s1", state={})
        await svc.close()

    asyncio.run(make())
    package = APPS / "travel" / "travel_concierge"
    for agent, text in ((f"{package / 'agent.py'}:root_agent", "Paris"), (str(package), "Rome")):
        r = _agentctl(path, "run", "app/u1/s1", "--agent", agent, "--input", text, cwd=tmp_path)
        assert r.returncode == 0, (agent, r.stdout, r.stderr)
        assert f"the concierge plans: {text}" in r.stdout, r.stdout


def test_an_error_of_langgraph_itself_is_not_reported_as_the_agents(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    (project / "bad.py").write_text(
        textwrap.dedent("""
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph


        class S(TypedDict):
            n: int


        async def node(s):
            return 42  # not an update: LangGraph raises, in its own code


        g = StateGraph(S)
        g.add_node("node", node)
        g.add_edge(START, "node")
        g.add_edge("node", END)
        graph = g.compile()
    """)
    )
    path = str(tmp_path / "lg.db")
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path)
    SqliteSaver(conn).setup()
    conn.close()
    r = _agentctl(path, "run", "t", "--agent", f"{project / 'bad.py'}:graph", "--input", json.dumps({"n": 0}))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised" not in r.stderr
    assert (
        "the run failed in LangGraph itself, not in your code: InvalidUpdateError in node 'node'" in r.stderr
    )


def test_sigint_to_the_child_while_the_agent_loads_is_interrupted(tmp_path):
    """As the TUI's stop does (the child alone): before Python has set its handler up,
    and while the agent module is still importing: interrupted, not "ended without a word"."""
    import time

    from agentctl.runners import run_child

    project = tmp_path / "p"
    project.mkdir()
    marker = tmp_path / "loading"
    (project / "slow.py").write_text(
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(30)\n"
    )
    path = str(tmp_path / "lg.db")
    request = {
        "kind": "sqlite",
        "target": path,
        "thread": "t",
        "from": None,
        "input": {"n": 0},
        "agent": {"file": str(project / "slow.py"), "var": "graph"},
        "paths": [],
    }

    def at_once(child):
        child.interrupt()

    def when_loading(child):
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        child.interrupt()

    for on_start in (at_once, when_loading):
        ended = run_child("langgraph", sys.executable, request, on_start=on_start)
        assert ended.interrupted and ended.kind == "interrupted", (on_start.__name__, ended)
    assert not os.path.exists(path)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_with_an_input_on_a_new_database_has_langgraph_create_its_tables(request, tmp_path, kind):
    """The README's story by hand, with no SqliteSaver.setup() first: LangGraph's saver
    makes its tables (as `langgraph dev` would), and the run says so; a read still
    creates nothing."""
    if kind == "sqlite":
        url = str(tmp_path / "new.db")
        r = _agentctl(url, "log", "t")  # a read: nothing created
        assert r.returncode != 0 and "database file not found" in r.stderr and not os.path.exists(url)
    else:
        pytest.importorskip("langgraph.checkpoint.postgres")
        url = request.getfixturevalue("pg_dsn")
        r = _agentctl(url, "log", "t")
        assert r.returncode != 0 and "has no 'checkpoints' table" in r.stderr, r.stderr
    story = str(Path(REPO) / "sample_db" / "story" / "langgraph.json")
    trip = json.dumps({"request": "somewhere new, 3 nights"})
    r = _agentctl(url, "run", "trip", "--config", story, "--input", trip)  # the README's story, by hand
    assert r.returncode == 1 and "your agent raised LookupError in node 'book'" in r.stderr, (
        r.stdout,
        r.stderr,
    )
    assert "created LangGraph's checkpoint tables" in r.stderr
    r = _agentctl(url, "run", "t", "--agent", ASYNC, "--input", json.dumps({"n": 0}), "--context", CONTEXT)
    assert r.returncode == 0 and "created" not in r.stderr, r.stderr  # once
    assert r.stdout.splitlines()[-1].startswith("ran t: 6 new checkpoint(s)")
    assert sorted(t["thread_id"] for t in cli_json(url, "threads", "list")) == ["t", "trip"]
