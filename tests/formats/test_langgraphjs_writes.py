"""agentctl writes in LangGraph.js's own form on databases LangGraph.js wrote (through the
Node rig, tests/support/noderig.py), SQLite (SqliteSaver) and Postgres (PostgresSaver, in
a schema named by the DSN's `search_path`): JSON rows, integer versions, on Postgres every
value in a blob row. Each write is compared with LangGraph.js's own time travel on a twin
database (the same script run again): `rewind` with `updateState(REF, null, "__copy__")`,
`edit` with `updateState(REF, values)` (a reducer channel's value as `new Overwrite(v)`).
After each, LangGraph.js reads the thread (`getStateHistory`) and resumes it
(`invoke(null)`, then `invoke(new Command({resume}))` at the pending `interrupt()`), and
both give the same checkpoints and the same final state; `undo` gives every row back."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import noderig
from tests.support.noderig import NODE_DIR, served
from tests.support.rig import pg_execute, run_sync, with_search_path
from tests.support.sampledb import cli, cli_json

node_modules = noderig.node_modules  # the fixture: npm ci once, from tests/node's lock file

SCRIPT = NODE_DIR / "langgraph_timetravel.mjs"
SAVER_TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgres": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


class JsDb:
    """A database LangGraph.js built (langgraph_timetravel.mjs's "build"): its URL for
    agentctl, `js(ops)` to run LangGraph.js on it, `rows()` its savers' rows."""

    def __init__(self, kind: str, url: str, node_args: tuple[str, str, str], schema: str | None = None):
        self.kind, self.url, self.node_args, self.schema = kind, url, node_args, schema

    def js(self, *ops: dict[str, Any]) -> list[Any]:
        return served(SCRIPT, *self.node_args, json.dumps(list(ops)))

    def history(self, thread: str) -> list[dict[str, Any]]:
        return self.js({"op": "history", "thread": thread})[0]

    def rows(self) -> dict[str, list[tuple]]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.url) as c:
                return {
                    t: sorted(c.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                    for t in SAVER_TABLES["sqlite"]
                }
        import asyncpg

        async def dump() -> dict[str, list[tuple]]:
            conn = await asyncpg.connect(self.node_args[1])
            try:
                return {
                    t: sorted(
                        (tuple(r) for r in await conn.fetch(f"SELECT * FROM {self.schema}.{t}")), key=repr
                    )
                    for t in SAVER_TABLES["postgres"]
                }
            finally:
                await conn.close()

        return run_sync(dump)


class JsBuilds:
    """LangGraph.js's build (with `build_sub`: and the subgraph's thread) run once per
    session and kind, copied for each twin: a SQLite file, or a Postgres schema beside the
    others in the rig's database (tests/support/dbcopy.py's copy: tables, rows, indexes)."""

    def __init__(self, folder, request) -> None:
        self.folder, self.request = folder, request
        self._built: dict[tuple[str, bool], JsDb] = {}

    def _new(self, kind: str, name: str) -> JsDb:
        if kind == "sqlite":
            path = str(self.folder / f"{name}.db")
            return JsDb("sqlite", path, ("sqlite", path, "-"))
        base = self.request.getfixturevalue("pg_base_dsn")
        schema = name + "_" + uuid.uuid4().hex[:12]
        pg_execute(base, f"CREATE SCHEMA {schema}")
        return JsDb("postgres", with_search_path(base, schema), ("postgres", base, schema), schema)

    def _build(self, kind: str, sub: bool) -> JsDb:
        db = self._new(kind, f"js_built_{kind}_{int(sub)}")
        db.js({"op": "build"}, *([{"op": "build_sub"}] if sub else []))
        if kind == "sqlite":
            with sqlite3.connect(db.url) as c:  # everything in the main file: the copy is all of it
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return db

    def copy(self, kind: str, sub: bool, dest) -> JsDb:
        if (kind, sub) not in self._built:
            self._built[kind, sub] = self._build(kind, sub)
        source = self._built[kind, sub]
        if kind == "sqlite":
            shutil.copyfile(source.url, dest)
            return JsDb("sqlite", str(dest), ("sqlite", str(dest), "-"))
        from tests.support.dbcopy import _copy_schema

        schema = "js_" + uuid.uuid4().hex[:12]
        run_sync(lambda: _copy_schema(source.url, schema))
        base = source.node_args[1]
        return JsDb("postgres", with_search_path(base, schema), ("postgres", base, schema), schema)


@pytest.fixture(scope="session")
def js_builds(tmp_path_factory, request, node_modules) -> JsBuilds:
    return JsBuilds(tmp_path_factory.mktemp("lgjs"), request)


@pytest.fixture(params=["sqlite", "postgres"])
def twins(request, tmp_path, js_builds) -> Callable[..., JsDb]:
    """Makes a database as LangGraph.js's build writes it (call it twice: twins); with
    `sub=True` the subgraph's thread too. A copy of the one LangGraph.js built for this
    session."""
    made: list[JsDb] = []

    def make(sub: bool = False) -> JsDb:
        made.append(js_builds.copy(request.param, sub, tmp_path / f"lgjs{len(made)}.db"))
        return made[-1]

    yield make
    if request.param == "postgres" and made:
        pg_execute(
            request.getfixturevalue("pg_base_dsn"), *(f"DROP SCHEMA {db.schema} CASCADE" for db in made)
        )


def shape(history: list[dict[str, Any]]) -> list[tuple]:
    """A thread's history without its ids: each checkpoint's step, source, next tasks,
    pending interrupts, values and its parent's place in the list."""
    place = {s["id"]: i for i, s in enumerate(history)}
    return [
        (s["step"], s["source"], s["next"], s["interrupts"], s["values"], place.get(s["parent"]))
        for s in history
    ]


def at_step(history: list[dict[str, Any]], step: int, source: str = "loop") -> str:
    return next(s["id"] for s in history if s["step"] == step and s["source"] == source)


def agentctl(db: JsDb, *args: str) -> None:
    r = cli(db.url, *args, "--yes", "--no-backup") if args[0] == "rewind" else cli(db.url, *args, "--yes")
    assert r.exit_code == 0, (r.stdout, r.stderr)


def resume_both(mine: JsDb, theirs: JsDb, thread: str, same_history: bool = True) -> None:
    """LangGraph.js resumes both threads: the run to the interrupt, then past it; the
    same states and (`same_history`: not after a prune) the same checkpoints on both."""
    if same_history:
        assert shape(mine.history(thread)) == shape(theirs.history(thread))
    had = {s["id"] for db in (mine, theirs) for s in db.history(thread)}
    ops = (
        {"op": "invoke", "thread": thread},
        {"op": "invoke", "thread": thread, "resume": "weiter ✓"},
        {"op": "history", "thread": thread},
    )
    got, want = mine.js(*ops), theirs.js(*ops)
    assert got[:2] == want[:2]
    if not same_history:  # the checkpoints the runs added
        assert [x[:5] for x in shape([s for s in got[2] if s["id"] not in had])] == [
            x[:5] for x in shape([s for s in want[2] if s["id"] not in had])
        ]
    elif mine.kind == "sqlite":
        assert shape(got[2]) == shape(want[2])
    else:  # LangGraph.js's PostgresSaver, after its own fork of an older checkpoint, can give a
        # new value a (channel, version) another branch holds and keep that row (ON CONFLICT DO
        # NOTHING): its own history then reads the other branch's value. agentctl's versions
        # are above the thread's: the run's checkpoints hold what the run returned.
        assert [x[:4] + x[5:] for x in shape(got[2])] == [x[:4] + x[5:] for x in shape(want[2])]
        assert got[2][0]["values"] == got[1]
    if same_history or mine.kind == "sqlite":  # LangGraph.js's PostgresSaver resumes its own
        # fork of t1 (the build's updateState) with the other branch's blob (above): the twin too
        assert got[1]["note"] == "weiter ✓" and got[1]["messages"][-1] == ["ai", "done: weiter ✓"]


def test_rewind_is_langgraphjs_own_fork_copy_and_resumes(twins):
    mine, theirs = twins(), twins()
    before = mine.rows()
    ref = at_step(mine.history("t1"), 6)  # the second run, at its pending interrupt()
    agentctl(mine, "rewind", ref)
    theirs.js(
        {
            "op": "update",
            "thread": "t1",
            "checkpoint_id": at_step(theirs.history("t1"), 6),
            "as_node": "__copy__",
        }
    )
    head = mine.history("t1")[0]
    assert (head["source"], head["step"], head["next"]) == ("fork", 7, ["ask"])
    undo_redo(mine, before, mine.rows())
    resume_both(mine, theirs, "t1")


def undo_redo(db: JsDb, before: dict, after: dict) -> None:
    """`undo` gives every row back as it was before the op; `redo` writes the op again."""
    r = cli(db.url, "undo", "--yes")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert db.rows() == before
    r = cli(db.url, "redo", "--yes")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert db.rows() == after


def test_rewind_hard_resumes_as_langgraphjs_fork(twins):
    mine, theirs = twins(), twins()
    before = mine.rows()
    h = mine.history("t1")
    ref = at_step(h, 6)
    later = {i for i, s in enumerate(h) if s["id"] > ref}
    agentctl(mine, "rewind", ref, "--hard")
    th = theirs.history("t1")
    theirs.js({"op": "update", "thread": "t1", "checkpoint_id": at_step(th, 6), "as_node": "__copy__"})
    got, want = mine.history("t1"), theirs.history("t1")
    # LangGraph.js's history without the later checkpoints agentctl deleted (ids in their order)
    gone = {th[i]["id"] for i in later}
    assert [x[:5] for x in shape(got)] == [x[:5] for x in shape([s for s in want if s["id"] not in gone])]
    assert not any(s["id"] in {h[i]["id"] for i in later} for s in got)
    undo_redo(mine, before, mine.rows())
    ops = ({"op": "invoke", "thread": "t1"}, {"op": "invoke", "thread": "t1", "resume": "hart"})
    assert mine.js(*ops) == theirs.js(*ops)


@pytest.mark.parametrize(
    "thread,sets,values,overwrite",
    [
        ("t2", ["count=41"], {"count": 41}, False),  # at the pending interrupt()
        ("t1", ['note="é ✓ 你好"'], {"note": "é ✓ 你好"}, False),  # at LangGraph.js's own update fork
        ("t2", ['tags=["x", "ü"]'], {"tags": ["x", "ü"]}, True),  # a reducer channel: Overwrite
    ],
)
def test_edit_is_langgraphjs_own_update_state_and_resumes(twins, thread, sets, values, overwrite):
    mine, theirs = twins(), twins()
    before, step = mine.rows(), mine.history(thread)[0]["step"]
    agentctl(mine, "edit", thread, *[a for s in sets for a in ("--set", s)])
    theirs.js({"op": "update", "thread": thread, "values": values, "overwrite": overwrite})
    after = mine.rows()
    head = mine.history(thread)[0]
    assert (head["source"], head["step"]) == ("update", step + 1)
    assert all(head["values"][k] == v for k, v in values.items())
    if mine.kind == "sqlite":  # JSON rows, as SqliteSaver writes them
        new = [r for r in after["checkpoints"] if r not in before["checkpoints"]]
        assert len(new) == 1 and new[0][4] == "json"
        cp = json.loads(new[0][5])
        assert cp["v"] == 4 and all(isinstance(v, int) for v in cp["channel_versions"].values())
    else:  # values in blob rows, JSON, the version the integer as text
        new = [r for r in after["checkpoint_blobs"] if r not in before["checkpoint_blobs"]]
        assert new and {r[4] for r in new} <= {"json", "empty"} and all(r[3].isdigit() for r in new)
    undo_redo(mine, before, after)
    resume_both(mine, theirs, thread)


def test_edit_of_a_messages_channel_without_the_graph_is_refused(twins):
    db = twins()
    before = db.rows()
    r = cli(db.url, "edit", "t2", "--set", "messages=[]", "--yes")
    assert r.exit_code == 2 and "cannot write 'messages' without your graph" in r.stderr
    assert db.rows() == before


def python_thread(db: JsDb, thread: str = "py1") -> None:
    """LangGraph (Python)'s own saver adds a thread to the database LangGraph.js wrote."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class S(TypedDict):
        count: int

    g = StateGraph(S)
    g.add_node("inc", lambda s: {"count": s["count"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    cfg = {"configurable": {"thread_id": thread}}
    if db.kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with sqlite3.connect(db.url, check_same_thread=False) as conn:
            g.compile(checkpointer=SqliteSaver(conn)).invoke({"count": 1}, cfg)
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        from tests.support.contract_formats import psycopg_dsn

        with PostgresSaver.from_conn_string(psycopg_dsn(db.url)) as saver:
            saver.setup()  # its migrations after LangGraph.js's v0-4 (task_path)
            g.compile(checkpointer=saver).invoke({"count": 1}, cfg)


def test_formats_says_which_saver_wrote_and_a_python_thread_stays_python(twins):
    db = twins()
    r = cli(db.url, "formats")
    assert r.exit_code == 0 and "written by: LangGraph.js\n" in r.stderr, r.stderr
    assert json.loads(cli(db.url, "formats", "--json").stdout)["database"]["written_by"] == ["LangGraph.js"]
    r = cli(db.url, "--format", "adk", "formats")  # forced, not in it: says so, names no writer
    assert r.exit_code == 0 and "in the adk format" in r.stderr and "written by" not in r.stderr, r.stderr
    python_thread(db)
    r = cli(db.url, "formats")
    assert "written by: LangGraph (Python) and LangGraph.js\n" in r.stderr, r.stderr
    # a write in the Python thread is Python's (msgpack / string versions), the JS threads stay JS
    before = db.rows()
    agentctl(db, "edit", "py1", "--set", "count=7")
    new = [r for r in db.rows()["checkpoints"] if r not in before["checkpoints"]]
    assert len(new) == 1
    if db.kind == "sqlite":
        assert new[0][4] == "msgpack"
    else:
        assert all(isinstance(v, str) for v in json.loads(new[0][5])["channel_versions"].values())
    assert json.loads(cli(db.url, "show", "py1", "--json").stdout)["state"]["count"] == 7


def test_stats_gives_threads_checkpoints_and_bytes(twins):
    db = twins()
    rows = db.rows()
    data = json.loads(cli(db.url, "stats", "--json").stdout)
    per = {t: sum(1 for r in rows["checkpoints"] if r[0] == t) for t in ("t1", "t2")}
    assert (data["threads"], data["checkpoints"]) == (2, sum(per.values()))
    assert [(p["thread_id"], p["checkpoints"]) for p in data["per_thread"]] == sorted(
        per.items(), key=lambda kv: -next(p["bytes"] for p in data["per_thread"] if p["thread_id"] == kv[0])
    )
    assert data["bytes"] == sum(p["bytes"] for p in data["per_thread"]) > 0
    assert data["per_thread"][0]["bytes"] >= data["per_thread"][1]["bytes"]
    r = cli(db.url, "stats")
    assert r.exit_code == 0 and "thread\tt1\t" in r.stdout
    r = cli(db.url, "stats", "--user", "u")
    assert r.exit_code == 2 and r.stderr.startswith("agentctl: ")


def test_branch_edit_merge_resume_and_undo(twins):
    """branch (a new JS thread), edit on it, merge back: JSON rows LangGraph.js reads and
    resumes; undo of the merge gives the rows back."""
    db = twins()
    r = cli(db.url, "branch", "t2", "b2", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    branch = json.loads(r.stdout)["thread_id"]
    agentctl(db, "edit", branch, "--set", "count=9")
    assert db.history(branch)[0]["values"]["count"] == 9
    before = db.rows()
    agentctl(db, "merge", branch)
    after = db.rows()
    head = db.history("t2")[0]
    assert head["values"]["count"] == 9 and head["next"] == ["ask"]
    undo_redo(db, before, after)
    got = db.js({"op": "invoke", "thread": "t2", "resume": "ja"})[0]
    assert (got["count"], got["note"], got["messages"][-1]) == (10, "ja", ["ai", "done: ja"])


@pytest.mark.parametrize("twins", ["postgres"], indirect=True)  # schemas are Postgres's
def test_a_schema_named_by_search_path_is_read_and_written_alone(twins):
    """Postgres: two LangGraph.js schemas in one database (LangGraph.js's options.schema);
    `?search_path=SCHEMA` makes agentctl read and write that schema only, its journal
    there too; `public` and the other schema untouched."""
    mine, other = twins(), twins()
    import asyncpg

    theirs_before = other.rows()
    agentctl(mine, "edit", "t2", "--set", "count=5")
    assert mine.history("t2")[0]["values"]["count"] == 5
    assert other.rows() == theirs_before

    async def tables() -> set[tuple[str, str]]:
        conn = await asyncpg.connect(mine.node_args[1])
        try:
            return {
                (r[0], r[1])
                for r in await conn.fetch(
                    "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'agentctl%'"
                )
            }
        finally:
            await conn.close()

    found = run_sync(tables)
    assert found and {schema for schema, _ in found} == {mine.schema}


# ---- a thread of a graph with a compiled subgraph (its checkpoints in namespaces) ----------------


@pytest.fixture
def sub_twins(twins) -> Callable[[], JsDb]:
    """twins() with thread s1 too: the graph whose node `inner` is a compiled subgraph,
    one run answered inside it, a second left at its pending interrupt()."""
    return lambda: twins(sub=True)


def namespaces(db: JsDb, thread: str) -> dict[str, int]:
    """The checkpoint namespaces of a thread and the number of checkpoints in each."""
    return dict(Counter(r[1] for r in db.rows()["checkpoints"] if r[0] == thread))


def test_a_subgraph_thread_reads_as_langgraphjs_history(sub_twins):
    db = sub_twins()
    h = db.history("s1")
    ns = namespaces(db, "s1")
    assert len(ns) == 3 and ns[""] == len(h) == 8  # the root, and a namespace per run of `inner`
    assert [
        (c["checkpoint_id"], c["parent_checkpoint_id"], c["step"]) for c in cli_json(db.url, "log", "s1")
    ] == [(s["id"], s["parent"], s["step"]) for s in h]
    assert cli_json(db.url, "threads", "list") == [
        t for t in cli_json(db.url, "threads", "list") if t["thread_id"] in ("t1", "t2", "s1")
    ]
    shown = cli_json(db.url, "show", "s1")
    assert (
        shown["state"]["count"] == h[0]["values"]["count"]
        and shown["state"]["tags"] == h[0]["values"]["tags"]
    )
    # the subgraph's pending run: its namespace's head, as LangGraph.js's getState({subgraphs}) reads it
    sub = db.js({"op": "substate", "thread": "s1"})[0]
    assert sub["tasks"][0][0] == "inner" and sub["tasks"][0][2] == ["check"]
    pending = next(n for n in ns if n and cli_json(db.url, "show", f"s1|{n}")["state"].get("count") == 23)
    inner = cli_json(db.url, "show", f"s1|{pending}")["state"]
    assert (inner["count"], inner["tags"]) == (sub["tasks"][0][1]["count"], sub["tasks"][0][1]["tags"])
    assert len(cli_json(db.url, "log", f"s1|{pending}")) == ns[pending]


@pytest.mark.parametrize("hard", [False, True])
def test_rewind_of_a_subgraph_thread_is_langgraphjs_fork_and_resumes(sub_twins, hard):
    """rewind to the root checkpoint where the first run waited inside the subgraph:
    LangGraph.js's own fork (`__copy__`) on the twin; with --hard the later checkpoints
    and the later runs' subgraph namespaces go. Both resume alike, into the subgraph."""
    mine, theirs = sub_twins(), sub_twins()
    before = mine.rows()
    h = mine.history("s1")
    ref = at_step(h, 1)
    agentctl(mine, "rewind", ref, *(["--hard"] if hard else []))
    th = theirs.history("s1")
    theirs.js({"op": "update", "thread": "s1", "checkpoint_id": at_step(th, 1), "as_node": "__copy__"})
    got, want = mine.history("s1"), theirs.history("s1")
    if hard:  # LangGraph.js's history without the later checkpoints agentctl deleted; the
        # subgraph's runs (the first one's from REF) are all after REF: only the root is left
        gone = {th[i]["id"] for i, s in enumerate(h) if s["id"] > ref}
        want = [s for s in want if s["id"] not in gone]
        assert namespaces(mine, "s1") == {"": len(got)}
    assert [x[:5] for x in shape(got)] == [x[:5] for x in shape(want)]
    assert (got[0]["source"], got[0]["next"], got[0]["interrupts"]) == ("fork", ["inner"], [])
    undo_redo(mine, before, mine.rows())
    ops = (
        {"op": "invoke", "thread": "s1"},
        {"op": "substate", "thread": "s1"},
        {"op": "invoke", "thread": "s1", "resume": "weiter ✓"},
    )
    out = mine.js(*ops)
    assert out == theirs.js(*ops)
    assert out[1]["tasks"][0][2] == ["check"] and out[2]["messages"][-1] == ["ai", "done: weiter ✓"]


@pytest.mark.parametrize("thread", ["t1", "s1"])
def test_prune_leaves_what_langgraphjs_reads_and_resumes(sub_twins, thread):
    """prune --keep-last 2: what is left LangGraph.js reads as it was (each checkpoint's
    state and next tasks, the subgraph's pending run), resumes as the twin does; the
    subgraph namespace of a deleted checkpoint goes whole; undo gives every row back."""
    mine, theirs = sub_twins(), sub_twins()
    before, h = mine.rows(), mine.history(thread)
    sub = mine.js({"op": "substate", "thread": thread})[0]
    other = "t2" if thread == "s1" else "s1"
    other_before = mine.history(other)
    r = cli(mine.url, "prune", thread, "--keep-last", "2", "--yes", "--no-backup", "--json")
    assert r.exit_code == 0, r.stderr
    after = mine.rows()
    left = mine.history(thread)
    assert h[0]["id"] == left[0]["id"] and len(left) < len(h)
    was = {s["id"]: s for s in h}
    assert [shape([s])[0][:5] for s in left] == [shape([was[s["id"]]])[0][:5] for s in left]
    assert mine.js({"op": "substate", "thread": thread})[0] == sub
    if thread == "s1":  # the first run's namespace went whole, the pending one kept its head
        assert len(namespaces(mine, "s1")) == 2 and 0 < len(after["checkpoints"]) < len(before["checkpoints"])
    assert mine.history(other) == other_before  # only THREAD pruned
    undo_redo(mine, before, after)
    resume_both(mine, theirs, thread, same_history=False)


@pytest.mark.parametrize("thread", ["t1", "s1"])
def test_threads_delete_langgraphjs_finds_nothing_and_undo_gives_it_back(sub_twins, thread):
    mine, theirs = sub_twins(), sub_twins()
    before = mine.rows()
    r = cli(mine.url, "threads", "delete", thread, "--yes", "--no-backup")
    assert r.exit_code == 0, r.stderr
    after = mine.rows()
    assert mine.history(thread) == [] and namespaces(mine, thread) == {}
    assert not any(r[0] == thread for rows in after.values() for r in rows)  # its writes and blobs too
    undo_redo(mine, before, after)
    cli(mine.url, "undo", "--yes")
    assert mine.rows() == before
    # LangGraph.js resumes the thread given back as it resumes its twin
    ops = (
        {"op": "invoke", "thread": thread},
        {"op": "invoke", "thread": thread, "resume": "weiter ✓"},
        {"op": "history", "thread": thread},
    )
    got, want = mine.js(*ops), theirs.js(*ops)
    assert got[:2] == want[:2] and [x[:5] for x in shape(got[2])] == [x[:5] for x in shape(want[2])]
