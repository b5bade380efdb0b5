"""agentctl's writes on a LangGraph.js thread WITH TOOL CALLS (tests/node/tools_graph.mjs: a
scripted model's AIMessage with tool_calls, LangGraph.js's prebuilt ToolNode and its
ToolMessage, a tool that asks first with interrupt()), SQLite and Postgres. The database is
built once per session by LangGraph.js (tests/node/langgraph_tools.mjs) and copied per
test twice: agentctl writes on one copy, LangGraph.js's own time travel on the other
(`updateState(REF, null, "__copy__")` for a rewind, `updateState(REF, values)` for an edit,
`invoke(null | Command, REF)` for a run). LangGraph.js then reads both threads
(getStateHistory) and resumes them: the same checkpoints and the same final state; `undo`
gives every row back and `redo` writes the op again."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.formats.test_langgraphjs_writes import at_step, shape
from tests.support import dbcopy, noderig
from tests.support.contract_formats import pg_schema
from tests.support.noderig import NODE_DIR, served
from tests.support.rig import pg_execute, run_sync, with_search_path
from tests.support.sampledb import cli

node_modules = noderig.node_modules  # the fixture: npm ci once, from tests/node's lock file
db_copy = dbcopy.db_copy  # the fixture: copy(url) -> a copy's URL

DRIVER = NODE_DIR / "langgraph_tools.mjs"
TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgres": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


@pytest.fixture(scope="session")
def tools_project(tmp_path_factory, node_modules) -> Path:
    """A LangGraph.js project: graph.mjs (tools_graph.mjs), langgraph.json, the rig's node_modules."""
    proj = tmp_path_factory.mktemp("tools-js")
    shutil.copyfile(NODE_DIR / "tools_graph.mjs", proj / "graph.mjs")
    (proj / "langgraph.json").write_text(
        json.dumps({"node_version": "20", "graphs": {"agent": "./graph.mjs:graph"}})
    )
    (proj / "node_modules").symlink_to(node_modules)
    return proj


class Db:
    """A copy of the built database: `js(ops)` runs LangGraph.js on it, `rows()` its savers' rows."""

    def __init__(self, url: str, project: Path):
        self.url, self.project = url, project
        self.kind = "postgres" if "://" in url else "sqlite"

    def js(self, *ops: dict[str, Any]) -> list[Any]:
        return served(DRIVER, str(self.project / "graph.mjs"), self.url, json.dumps(list(ops)))

    def history(self, thread: str = "t") -> list[dict[str, Any]]:
        return self.js({"op": "history", "thread": thread})[0]

    def rows(self) -> dict[str, list[tuple]]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.url) as c:
                return {
                    t: sorted(c.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES["sqlite"]
                }
        import asyncpg

        async def dump() -> dict[str, list[tuple]]:
            conn = await asyncpg.connect(dbcopy.pg_base(self.url))
            try:
                schema = pg_schema(self.url)
                return {
                    t: sorted((tuple(r) for r in await conn.fetch(f"SELECT * FROM {schema}.{t}")), key=repr)
                    for t in TABLES["postgres"]
                }
            finally:
                await conn.close()

        return run_sync(dump)


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def built(request, tmp_path_factory, tools_project) -> Any:
    """The database LangGraph.js's "build" wrote, once per session (its URL)."""
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("tools-db") / "built.db")
        Db(url, tools_project).js({"op": "build"})
        yield url
        return
    base = request.getfixturevalue("pg_base_dsn")
    schema = "jst_" + uuid.uuid4().hex[:12]
    pg_execute(base, f"CREATE SCHEMA {schema}")
    url = with_search_path(base, schema)
    Db(url, tools_project).js({"op": "build"})
    yield url
    pg_execute(base, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def twins(built, db_copy, tools_project) -> tuple[Db, Db]:
    """Two copies of the built database: (agentctl's, LangGraph.js's own time travel's)."""
    return Db(db_copy(built), tools_project), Db(db_copy(built), tools_project)


def ok(db: Db, *args: str) -> Any:
    r = cli(db.url, *args)
    assert r.exit_code == 0, (args, r.stdout, r.stderr)
    return r


def undo_redo(db: Db, before: dict, after: dict) -> None:
    """`undo` gives every row back as it was before the op; `redo` writes the op again."""
    ok(db, "undo", "--yes")
    assert db.rows() == before
    ok(db, "redo", "--yes")
    assert db.rows() == after


def answered(values: dict[str, Any], reply: str) -> None:
    """The run went through the tool call: the book tool's ToolMessage, the model's answer."""
    assert values["messages"][-2][0] == "tool" and values["messages"][-2][3] == "call-3"
    assert values["messages"][-1][:2] == ["ai", f"done: {reply}"]


def resumed_alike(mine: Db, theirs: Db, *ops: dict[str, Any], thread: str = "t") -> list[Any]:
    """LangGraph.js runs `ops` on both, then reads the thread: the same results, the same
    new checkpoints (as `shape`: steps, sources, next tasks, values, parents' places)."""
    had = {s["id"] for db in (mine, theirs) for s in db.history(thread)}
    got = mine.js(*ops, {"op": "history", "thread": thread})
    want = theirs.js(*ops, {"op": "history", "thread": thread})
    assert got[:-1] == want[:-1]
    assert shape([s for s in got[-1] if s["id"] not in had]) == shape(
        [s for s in want[-1] if s["id"] not in had]
    )
    return got


BOOK_YES = {"op": "invoke", "thread": "t", "resume": "yes"}


@pytest.mark.parametrize("hard", [False, True])
def test_rewind_to_a_tool_call_is_langgraphjs_fork_and_runs_the_tool_again(twins, hard):
    """rewind to the checkpoint where the model asked for `weather` (next: tools): LangGraph.js's
    own `__copy__` fork; LangGraph.js resumes both alike (the ToolNode runs the call again,
    the model answers); --hard drops the later checkpoints, the pending book call with them."""
    mine, theirs = twins
    before, h = mine.rows(), mine.history()
    ref = at_step(h, 1)
    assert h[[s["id"] for s in h].index(ref)]["next"] == ["tools"]
    ok(mine, "rewind", ref, "--yes", "--no-backup", *(["--hard"] if hard else []))
    theirs.js({"op": "update", "thread": "t", "checkpoint_id": ref, "as_node": "__copy__"})
    got, want = mine.history(), theirs.history()
    if hard:
        want = [s for s in want if s["id"] <= ref or s["source"] == "fork"]
        assert len(got) == 4  # the input, the human's request, the tool call, the fork
    assert shape(got) == shape(want)
    assert (got[0]["source"], got[0]["next"], got[0]["values"]["messages"][-1][2]) == (
        "fork",
        ["tools"],
        [{"id": "call-1", "name": "weather", "args": {"city": "Paris"}}],
    )
    undo_redo(mine, before, mine.rows())
    out = resumed_alike(mine, theirs, {"op": "invoke", "thread": "t"})
    assert out[0]["messages"][-2:] == [
        ["tool", "sunny in Paris ☀", None, "call-1"],
        ["ai", "done: sunny in Paris ☀", [], None],
    ]


def test_rewind_before_the_model_asks_again_reaches_the_tool_interrupt_and_resumes(twins):
    """rewind to the human's "book Paris" (next: the model): LangGraph.js's own fork; both
    resume alike: the model's book call, the tool's interrupt(), answered, the answer."""
    mine, theirs = twins
    h = mine.history()
    ref = h[1]["id"]
    assert h[1]["next"] == ["agent"] and h[0]["interrupts"] == [{"book": "Paris"}]
    ok(mine, "rewind", ref, "--yes", "--no-backup")
    theirs.js({"op": "update", "thread": "t", "checkpoint_id": ref, "as_node": "__copy__"})
    assert shape(mine.history()) == shape(theirs.history())
    out = resumed_alike(mine, theirs, {"op": "invoke", "thread": "t"}, BOOK_YES)
    assert out[0]["__interrupt__"] == [{"book": "Paris"}]
    answered(out[1], "booked Paris ✓")


@pytest.mark.parametrize("where", ["head", "tool call"])
def test_edit_of_a_tool_call_thread_is_langgraphjs_update_state_and_resumes(twins, where):
    """edit a plain channel at the pending tool interrupt (the head) or at the model's
    weather call: LangGraph.js's own updateState (as the model: toolsCondition routes to
    the ToolNode again); undo gives every row back; both resume alike."""
    mine, theirs = twins
    h = mine.history()
    ref = h[0]["id"] if where == "head" else at_step(h, 1)
    before = mine.rows()
    ok(mine, "edit", ref, "--set", "calls=40", "--yes")
    theirs.js({"op": "update", "thread": "t", "checkpoint_id": ref, "values": {"calls": 40}})
    after = mine.rows()
    got, want = mine.history(), theirs.history()
    assert (got[0]["source"], got[0]["next"], got[0]["values"]["calls"]) == ("update", ["tools"], 40)
    pg_fork = mine.kind == "postgres" and where != "head"
    if pg_fork:  # LangGraph.js's PostgresSaver gives the update's `branch:to:tools` the version
        # 4 that a later step's consumed (empty) row holds and keeps that row (ON CONFLICT DO
        # NOTHING): its own fork reads no next task. agentctl's versions are above the
        # thread's: next is the ToolNode, as LangGraph.js's SqliteSaver gives it (sqlite case).
        assert want[0]["next"] == []
        want[0]["next"] = ["tools"]
    assert shape(got) == shape(want)
    undo_redo(mine, before, after)
    if where == "head":
        answered(resumed_alike(mine, theirs, BOOK_YES)[0], "booked Paris ✓")
        return
    out = (mine.js if pg_fork else lambda *ops: resumed_alike(mine, theirs, *ops))(
        {"op": "invoke", "thread": "t"}
    )
    assert out[0]["calls"] == 41 and out[0]["messages"][-2:] == [
        ["tool", "sunny in Paris ☀", None, "call-1"],
        ["ai", "done: sunny in Paris ☀", [], None],
    ]


def test_edit_of_the_messages_without_the_graph_is_refused_and_through_it_is_update_state(twins):
    """the messages channel (AIMessage with tool_calls, ToolMessage) is not plain data: without
    the graph one line, exit 2, nothing written; through the graph (the node runner, in the
    project) it is LangGraph.js's own updateState, the value set whole (`Overwrite`, as
    every `edit --set` of a reducer channel): the model's messages and the tool's go."""
    mine, theirs = twins
    before = mine.rows()
    r = cli(mine.url, "edit", "t", "--set", "messages=[]", "--yes")
    assert r.exit_code == 2 and "cannot write 'messages' without your graph" in r.stderr, r.stderr
    assert mine.rows() == before
    msg = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain_core", "messages", "HumanMessage"],
        "kwargs": {"id": "h9", "content": "book Oslo"},
    }
    ok(
        mine,
        "edit",
        "u",
        "--set",
        f"messages={json.dumps([msg])}",
        "--agent",
        f"{mine.project / 'graph.mjs'}:graph",
        "--yes",
    )
    theirs.js({"op": "update", "thread": "u", "values": {"messages": [msg]}, "overwrite": True})
    got = mine.history("u")
    assert got[0]["values"]["messages"] == [["human", "book Oslo", None, None]]
    assert shape(got) == shape(theirs.history("u"))
    ok(mine, "undo", "--yes")
    assert mine.rows() == before


def test_branch_from_the_pending_tool_call_resumes_as_the_thread_does(twins):
    """branch at the pending book call: a new JS thread LangGraph.js resumes into the tool as
    it resumes the thread itself on the twin; the thread is untouched; undo takes it back."""
    mine, theirs = twins
    before = mine.rows()
    r = ok(mine, "branch", "t", "b", "--yes", "--json")
    branch = json.loads(r.stdout)["thread_id"]
    assert shape(mine.history(branch)) == shape(mine.history("t"))
    undo_redo(mine, before, mine.rows())
    got = mine.js({"op": "invoke", "thread": branch, "resume": "yes"}, {"op": "history", "thread": branch})
    want = theirs.js(BOOK_YES, {"op": "history", "thread": "t"})
    assert got[0] == want[0]
    answered(got[0], "booked Paris ✓")
    assert shape(got[1]) == shape(want[1])
    assert [r for r in mine.rows()["checkpoints"] if r[0] == "t"] == [
        r for r in before["checkpoints"] if r[0] == "t"
    ]


def test_prune_of_a_tool_call_thread_leaves_what_langgraphjs_resumes(twins):
    mine, theirs = twins
    before, h = mine.rows(), mine.history()
    ok(mine, "prune", "t", "--keep-last", "2", "--yes", "--no-backup")
    after = mine.rows()
    left = mine.history()
    assert [s["id"] for s in left] == [s["id"] for s in h[:2]]
    assert [shape([s])[0][:5] for s in left] == [shape([s])[0][:5] for s in h[:2]]
    assert mine.history("u") == theirs.history("u")  # only t pruned
    undo_redo(mine, before, after)
    out = resumed_alike(mine, theirs, BOOK_YES)
    answered(out[0], "booked Paris ✓")


def test_threads_delete_of_a_tool_call_thread_and_undo(twins):
    mine, theirs = twins
    before = mine.rows()
    ok(mine, "threads", "delete", "t", "--yes", "--no-backup")
    after = mine.rows()
    assert mine.history() == [] and not any(r[0] == "t" for rows in after.values() for r in rows)
    undo_redo(mine, before, after)
    ok(mine, "undo", "--yes")
    assert mine.rows() == before
    answered(resumed_alike(mine, theirs, BOOK_YES)[0], "booked Paris ✓")


@pytest.mark.parametrize("how", ["resume", "from", "input"])
def test_run_of_a_tool_call_thread_adds_what_langgraphjs_invoke_adds(twins, how):
    """`run` through the node runner: --resume at the pending tool interrupt, --from the
    model's weather call, a new --input after the answer (thread u): the checkpoints
    LangGraph.js's own invoke adds on the twin; undo takes back exactly the run."""
    mine, theirs = twins
    before = mine.rows()
    agent = f"{mine.project / 'graph.mjs'}:graph"
    if how == "resume":
        thread, args, op = "t", ["--resume", '"yes"'], BOOK_YES
    elif how == "from":
        ref = at_step(mine.history(), 1)
        thread, args, op = "t", ["--from", ref], {"op": "invoke", "thread": "t", "checkpoint_id": ref}
    else:
        msg = {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain_core", "messages", "HumanMessage"],
            "kwargs": {"id": "h4", "content": "weather in Rome"},
        }
        thread, args = "u", ["--input", json.dumps({"messages": [msg]})]
        op = {"op": "invoke", "thread": "u", "input": ["h4", "weather in Rome"]}
    had = {s["id"] for s in mine.history(thread)}
    ok(mine, "run", thread, "--agent", agent, *args)
    want = theirs.js(op, {"op": "history", "thread": thread})
    got = mine.history(thread)
    assert got[0]["values"] == want[0]
    assert shape([s for s in got if s["id"] not in had]) == shape([s for s in want[1] if s["id"] not in had])
    if how == "resume":
        answered(want[0], "booked Paris ✓")
    else:
        assert want[0]["messages"][-3][0] == "ai" and want[0]["messages"][-3][2][0]["name"] == "weather"
    ok(mine, "undo", "--yes")
    assert mine.rows() == before
