"""`agentctl edit` on LangGraph WITHOUT the user's graph (no --agent, no langgraph.json):
agentctl writes the update checkpoint itself. On a copy of the same database LangGraph's
own `update_state(config, values with Overwrite for reducers, as_node=...)` must give the
same checkpoint (values, next, metadata, channels), the same number of checkpoints, and
`invoke` must resume both to the same result; undo restores every row.

The graph: START -> agent (add_messages, operator.add, a counter) -> approve (interrupt())
-> work (raises until `fixed` is true) -> END; thread `t` stops at the interrupt, is
resumed, and fails in `work`: the head waits on `work`, the checkpoint at step 1 on the
interrupt."""

from __future__ import annotations

import operator
import sqlite3
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.types import Command, Overwrite, interrupt  # noqa: E402

from tests.formats.test_langgraph_writes import cfg, strip_ids  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    log: Annotated[list, operator.add]
    count: int
    plan: dict
    fixed: bool


def agent(s: State) -> dict[str, Any]:
    return {
        "messages": [{"role": "assistant", "content": f"plan for {s['plan']['city']}"}],
        "log": ["agent"],
        "count": s.get("count", 0) + 1,
    }


def approve(s: State) -> dict[str, Any]:
    answer = interrupt({"question": "approve?"})
    return {"log": [f"approved:{answer}"]}


def work(s: State) -> dict[str, Any]:
    if not s.get("fixed"):
        raise ValueError("not fixed")
    return {"log": ["worked"], "count": s["count"] + 10}


def builder() -> StateGraph:
    b = StateGraph(State)
    line = [START, agent, approve, work, END]
    for node in line[1:-1]:
        b.add_node(node.__name__, node)
    names = [n if isinstance(n, str) else n.__name__ for n in line]
    for src, dst in zip(names, names[1:], strict=False):
        b.add_edge(src, dst)
    return b


INPUT = {
    "messages": [{"role": "user", "content": "hi"}],
    "log": [],
    "count": 0,
    "plan": {"city": "Paris", "x": 1},
    "fixed": False,
}


def at(checkpoint_id: str) -> dict[str, Any]:
    """The config of a checkpoint of thread `t` as update_state takes it."""
    return {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}


def run_to_failure(graph: Any, thread: str) -> None:
    graph.invoke(INPUT, cfg(thread))  # stops at the interrupt
    with pytest.raises(ValueError, match="not fixed"):
        graph.invoke(Command(resume="yes"), cfg(thread))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    """A SQLite LangGraph database written by SqliteSaver (thread `t`), made once."""
    path = str(tmp_path_factory.mktemp("lg-nograph") / "src.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    run_to_failure(builder().compile(checkpointer=SqliteSaver(conn)), "t")
    conn.close()
    return path


class Copy:
    """A copy of the source database with LangGraph's saver and graph on it."""

    def __init__(self, src: str, path: str, make: Any = builder) -> None:
        self.path = path
        with sqlite3.connect(src) as a, sqlite3.connect(path) as b:
            a.backup(b)
        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.graph = make().compile(checkpointer=self.saver)

    def count(self, thread: str = "t") -> int:
        return len(list(self.graph.get_state_history(cfg(thread))))

    def at_step(self, step: int, thread: str = "t") -> str:
        return [s for s in self.graph.get_state_history(cfg(thread)) if s.metadata["step"] == step][0].config[
            "configurable"
        ]["checkpoint_id"]


@pytest.fixture
def pair(source, tmp_path, monkeypatch):
    """(A, B): A for agentctl, B for LangGraph's own update_state; the current directory
    has no langgraph.json (so agentctl has no graph)."""
    monkeypatch.chdir(tmp_path)
    a, b = Copy(source, str(tmp_path / "a.db")), Copy(source, str(tmp_path / "b.db"))
    yield a, b
    a.conn.close()
    b.conn.close()


def rows(path: str) -> dict[str, list[tuple]]:
    """Every row of every table but agentctl's side tables (and SQLite's own, e.g. the
    journal's AUTOINCREMENT counter in sqlite_sequence), sorted."""
    conn = sqlite3.connect(path)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'agentctl_%' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    finally:
        conn.close()


def shape(saver: Any, config: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint holds, without its id, time and the versions' random part."""
    t = saver.get_tuple(config)
    cp = t.checkpoint
    return {
        "metadata": t.metadata,
        "values": strip_ids(cp["channel_values"]),
        "versions": sorted(cp["channel_versions"]),
        "seen": {n: sorted(s) for n, s in cp["versions_seen"].items()},
        "updated_channels": cp.get("updated_channels"),
    }


def edit(url: str, *args: str) -> dict[str, Any]:
    out = cli_json(url, "edit", *args, "--yes")
    assert out["kind"] == "edit" and out["op_id"]
    return out


def assert_same_update(a: Copy, b: Copy, a_id: str, b_cfg: dict[str, Any], ref: str, count: int) -> None:
    """agentctl's checkpoint `a_id` on A is what update_state wrote on B."""
    b_id = b_cfg["configurable"]["checkpoint_id"]
    sa = a.graph.get_state(cfg("t", a_id))
    sb = b.graph.get_state(cfg("t", b_id))
    assert strip_ids(sa.values) == strip_ids(sb.values)
    assert sa.next == sb.next
    assert sa.parent_config["configurable"]["checkpoint_id"] == ref
    assert sb.parent_config["configurable"]["checkpoint_id"] == ref
    assert shape(a.saver, cfg("t", a_id)) == shape(b.saver, cfg("t", b_id))
    assert a.count() == b.count() == count + 1
    # the new checkpoint is the thread's head: LangGraph resumes it as its own update
    assert a.graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"] == a_id
    # every version agentctl changed is greater than REF's
    ref_versions = a.saver.get_tuple(cfg("t", ref)).checkpoint["channel_versions"]
    new_versions = a.saver.get_tuple(cfg("t", a_id)).checkpoint["channel_versions"]
    for ch, v in new_versions.items():
        assert v == ref_versions.get(ch) or v > max(ref_versions.values())


def resume_both(a: Copy, b: Copy, value: Any = None) -> None:
    ra = a.graph.invoke(value, cfg("t"))
    rb = b.graph.invoke(value, cfg("t"))
    assert strip_ids(ra) == strip_ids(rb)
    sa, sb = a.graph.get_state(cfg("t")), b.graph.get_state(cfg("t"))
    assert strip_ids(sa.values) == strip_ids(sb.values) and sa.next == sb.next
    assert a.count() == b.count()


def test_head_edit_is_update_state_and_resumes_the_same(pair):
    a, b = pair
    before = rows(a.path)
    count = a.count()
    head = a.graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    assert a.graph.get_state(cfg("t")).next == ("work",)

    plan = cli_json(a.path, "edit", "t", "--set", "fixed=true", "--set", 'log=["x"]', "--dry-run")
    assert {(c["path"], c["op"]) for c in plan["changes"]} >= {("/fixed", "changed"), ("/log/0", "changed")}
    assert rows(a.path) == before  # a plan writes nothing

    out = edit(a.path, "t", "--set", "fixed=true", "--set", 'log=["x"]')
    new = b.graph.update_state(cfg("t"), {"fixed": True, "log": Overwrite(["x"])})
    assert_same_update(a, b, out["checkpoint_id"], new, head, count)
    assert a.graph.get_state(cfg("t")).values["log"] == ["x"]  # exactly the value, not an append
    assert a.graph.get_state(cfg("t")).next == ("work",)

    ops = cli_json(a.path, "oplog")
    assert ops[0]["kind"] == "edit" and "set fixed, set log" in ops[0]["summary"]
    assert cli(a.path, "undo").exit_code == 0
    assert rows(a.path) == before  # row for row

    edit(a.path, "t", "--set", "fixed=true", "--set", 'log=["x"]')
    resume_both(a, b)  # work now passes, on both
    assert a.graph.get_state(cfg("t")).values["count"] == 11


def test_edit_at_an_earlier_checkpoint_forks_like_update_state(pair):
    a, b = pair
    ref = a.at_step(1)  # waiting on the interrupt
    assert a.graph.get_state(cfg("t", ref)).next == ("approve",)
    count = a.count()
    out = edit(a.path, ref, "--set", 'plan.city="Rome"', "--set", "fixed=true")
    new = b.graph.update_state(at(ref), {"plan": {"city": "Rome", "x": 1}, "fixed": True})
    assert_same_update(a, b, out["checkpoint_id"], new, ref, count)
    assert a.graph.get_state(cfg("t")).next == ("approve",)
    resume_both(a, b, Command(resume="ok"))  # approve, then work passes
    assert a.graph.get_state(cfg("t")).values["log"] == ["agent", "approved:ok", "worked"]


def test_as_node(pair):
    a, b = pair
    head = a.graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    count = a.count()
    out = edit(a.path, "t", "--as-node", "agent", "--set", "count=5", "--set", "fixed=true")
    new = b.graph.update_state(cfg("t"), {"count": 5, "fixed": True}, as_node="agent")
    assert_same_update(a, b, out["checkpoint_id"], new, head, count)
    assert a.graph.get_state(cfg("t")).next == ("approve",)  # agent's edge, not approve's
    resume_both(a, b)  # approve asks again
    resume_both(a, b, Command(resume="again"))
    assert a.graph.get_state(cfg("t")).values["count"] == 15


def test_unset(pair):
    a, b = pair
    head = a.graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    count = a.count()
    out = edit(a.path, "t", "--unset", "plan.x", "--set", "fixed=true")
    new = b.graph.update_state(cfg("t"), {"plan": {"city": "Paris"}, "fixed": True})
    assert_same_update(a, b, out["checkpoint_id"], new, head, count)
    resume_both(a, b)


def test_what_agentctl_cannot_write_without_the_graph_exits_2(pair):
    a, _ = pair
    before = rows(a.path)
    for args, words in [
        (["--set", "messages=[]"], "cannot write 'messages' without your graph"),
        (["--set", 'messages.0.content="x"'], "cannot write 'messages' without your graph"),
        (["--set", "count=1", "--as-node", "nosuch"], "--as-node nosuch: no such node"),
        (["--unset", "plan"], "'plan' is a channel of the graph: it can be set, not unset"),
        (["--set", "nothere=1"], "the state has no key 'nothere'"),
    ]:
        r = cli(a.path, "edit", "t", *args, "--yes")
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        last = r.stderr.strip().splitlines()[-1]
        assert words in last and ("--agent" in last or "messages" not in words), last
        assert rows(a.path) == before


def test_postgres_head_edit_and_undo(pg_dsn):
    """Two threads run alike on one Postgres database: `a` edited by agentctl, `b` by
    LangGraph's update_state; undo puts every row back."""
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.formats.test_format_langgraph import psycopg_dsn
    from tests.formats.test_langgraph_writes import dump

    with PostgresSaver.from_conn_string(psycopg_dsn(pg_dsn)) as saver:
        saver.setup()
        graph = builder().compile(checkpointer=saver)
        for t in ("a", "b"):
            run_to_failure(graph, t)
        graph.update_state(cfg("b"), {"fixed": True, "log": Overwrite(["x"]), "plan": {"city": "Oslo"}})
        before = dump(pg_dsn, saver)
        head = graph.get_state(cfg("a")).config["configurable"]["checkpoint_id"]
        out = edit(pg_dsn, "a", "--set", "fixed=true", "--set", 'log=["x"]', "--set", 'plan={"city": "Oslo"}')
        sa, sb = graph.get_state(cfg("a")), graph.get_state(cfg("b"))
        assert sa.config["configurable"]["checkpoint_id"] == out["checkpoint_id"]
        assert sa.parent_config["configurable"]["checkpoint_id"] == head
        assert strip_ids(sa.values) == strip_ids(sb.values) and sa.next == sb.next == ("work",)
        assert shape(saver, cfg("a")) == shape(saver, cfg("b"))

        def new_blobs(thread: str) -> list[tuple[str, str]]:
            """(channel, type) of the blob rows at the versions the update made."""
            t = saver.get_tuple(cfg(thread))
            parent = saver.get_tuple(t.parent_config).checkpoint["channel_versions"]
            fresh = {ch: v for ch, v in t.checkpoint["channel_versions"].items() if parent.get(ch) != v}
            with saver.conn.cursor() as cur:
                cur.execute(
                    "SELECT channel, version, type FROM checkpoint_blobs WHERE thread_id = %s", (thread,)
                )
                return sorted(
                    (r["channel"], r["type"])
                    for r in cur.fetchall()
                    if fresh.get(r["channel"]) == r["version"]
                )

        assert new_blobs("a") == new_blobs("b") != []
        assert len(list(graph.get_state_history(cfg("a")))) == len(list(graph.get_state_history(cfg("b"))))
        assert cli(pg_dsn, "undo").exit_code == 0
        assert dump(pg_dsn, saver) == before
        edit(pg_dsn, "a", "--set", "fixed=true", "--set", 'log=["x"]', "--set", 'plan={"city": "Oslo"}')
        ra, rb = graph.invoke(None, cfg("a")), graph.invoke(None, cfg("b"))
        assert strip_ids(ra) == strip_ids(rb) and ra["log"] == ["x", "worked"]


def test_which_path_langgraph_json_or_agent_means_langgraph_writes_it(tmp_path):
    """With a langgraph.json in the current directory (or --agent), LangGraph writes the
    edit in the child; without, agentctl does: told apart by who refuses a bad --as-node."""
    import json

    from tests.formats.test_run import GRAPH, _agentctl, lg_db_with_a_run

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "graph.py").write_text(GRAPH)
    url = lg_db_with_a_run(tmp_path, proj)
    (proj / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./graph.py:graph"}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ("edit", "t", "--set", "n=1", "--as-node", "nosuchnode", "--yes")
    by_langgraph = "LangGraph refused the update: InvalidUpdateError: Node nosuchnode does not exist"
    r = _agentctl(url, *args, cwd=proj)
    assert r.returncode == 2 and r.stderr.splitlines()[-1] == "agentctl: " + by_langgraph
    r = _agentctl(url, *args, "--agent", f"{proj / 'graph.py'}:graph", cwd=elsewhere)
    assert r.returncode == 2 and r.stderr.splitlines()[-1] == "agentctl: " + by_langgraph
    r = _agentctl(url, *args, cwd=elsewhere)
    assert r.returncode == 2 and r.stderr.splitlines()[-1].startswith(
        "agentctl: --as-node nosuchnode: no such node"
    )
    r = _agentctl(url, "edit", "t", "--set", "n=1", "--yes", cwd=elsewhere)  # and without the graph it writes
    assert r.returncode == 0 and r.stdout.startswith("edited t: new checkpoint "), r.stderr


class LoopState(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def loop_builder() -> StateGraph:
    """agent -> (a conditional edge) tools -> agent ... until n reaches 3."""
    b = StateGraph(LoopState)
    b.add_node("agent", lambda s: {"log": [f"a{s['n']}"]})
    b.add_node("tools", lambda s: {"n": s["n"] + 1, "log": ["t"]})
    b.add_edge(START, "agent")
    b.add_conditional_edges("agent", lambda s: "tools" if s["n"] < 3 else END, ["tools", END])
    b.add_edge("tools", "agent")
    return b


@pytest.mark.parametrize("step", [2, 3])  # after tools (next: agent), after agent (next: tools)
def test_edit_in_a_loop_with_a_conditional_edge(tmp_path, monkeypatch, step):
    monkeypatch.chdir(tmp_path)
    src = str(tmp_path / "loop.db")
    conn = sqlite3.connect(src, check_same_thread=False)
    loop_builder().compile(checkpointer=SqliteSaver(conn)).invoke({"n": 0, "log": []}, cfg("t"))
    conn.close()
    a, b = Copy(src, str(tmp_path / "a.db"), loop_builder), Copy(src, str(tmp_path / "b.db"), loop_builder)
    ref, count = a.at_step(step), a.count()
    out = edit(a.path, ref, "--set", "n=0", "--set", 'log=["x"]')
    new = b.graph.update_state(at(ref), {"n": 0, "log": Overwrite(["x"])})
    assert_same_update(a, b, out["checkpoint_id"], new, ref, count)
    resume_both(a, b)  # the loop runs again from n = 0, on both
    assert a.graph.get_state(cfg("t")).values["n"] == 3
    a.conn.close()
    b.conn.close()
