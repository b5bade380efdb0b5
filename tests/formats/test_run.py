"""`agentctl run`: the user's own LangGraph graph, run in a child process in the user's
interpreter through LangGraph itself (no model), on SQLite and Postgres. The result
equals what LangGraph's own `invoke` gives on a copy of the same database; undo gives
the database back row for row; failures are the user's, shown with the user's frames."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("langgraph")

import tests.formats.test_langgraph_writes as lgw  # noqa: E402
from tests.formats.test_langgraph_writes import cfg, dump, strip_ids  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.dbcopy import langgraph_saver  # noqa: E402
from tests.support.rig import REPO  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

lg = lgw.lg  # the fixture: an empty LangGraph database on SQLite and on Postgres
db_copy = dbcopy.db_copy  # the fixture: copy(url) -> a copy's URL (the framework's reference run)

GRAPH = textwrap.dedent('''
    import operator
    import os
    import time
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt


    class S(TypedDict, total=False):
        n: int
        log: Annotated[list, operator.add]
        fixed: bool
        approved: str


    def step(s):
        print("step sees", s["n"])  # the user's prints go to agentctl's stderr
        if os.environ.get("SLOW_GRAPH"):
            time.sleep(0.3)
        if s["n"] == 3 and not s.get("fixed"):
            raise ValueError("n is 3 and not fixed")
        return {"n": s["n"] + 1, "log": [s["n"]]}


    def build(limit=6):
        g = StateGraph(S)
        g.add_node("step", step)
        g.add_edge(START, "step")
        g.add_conditional_edges("step", lambda s: "step" if s["n"] < limit else END, ["step", END])
        return g


    graph = build()
    long_graph = build(60)


    def ask(s):
        answer = interrupt({"question": "approve?", "n": s["n"]})
        return {"approved": answer}


    hitl = StateGraph(S)
    hitl.add_node("ask", ask)
    hitl.add_edge(START, "ask")
    hitl.add_edge("ask", END)
    hitl = hitl.compile()
''')


@pytest.fixture
def project(tmp_path):
    """A user's project: graph.py and a langgraph.json naming two graphs."""
    d = tmp_path / "proj"
    d.mkdir()
    (d / "graph.py").write_text(GRAPH)
    (d / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": {
        "loop": "./graph.py:graph", "hitl": "./graph.py:hitl"}}))
    return d


def _user_graph(project, var: str = "graph"):
    """The same graph object, imported in the test's own process (the reference run)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"user_graph_{abs(hash(str(project)))}", project / "graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, var)


def _agentctl(url, *args, env=None, **kw):
    """The real CLI in a process (what a user runs)."""
    return subprocess.run([sys.executable, "-m", "agentctl", "--db", url, *args], capture_output=True,
                          text=True, cwd=kw.pop("cwd", REPO), env={**os.environ, **(env or {})}, **kw)


def lg_db_with_a_run(tmp_path, project) -> str:
    """A SQLite LangGraph database with thread `t` run to its end (closed)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    url = str(tmp_path / "lg.db")
    conn = sqlite3.connect(url, check_same_thread=False)
    graph = _user_graph(project).compile(checkpointer=SqliteSaver(conn))
    graph.invoke({"n": 0, "log": [], "fixed": True}, cfg("t"))
    conn.close()
    return url


def assert_exit_2_one_line(url, command, cases, *common, cwd=REPO):
    """Each case (args, words): exit 2, one line on stderr that holds the words."""
    for args, words in cases:
        r = _agentctl(url, command, "t", *args, *common, cwd=cwd)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert words in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)


def test_a_failing_node_then_a_fix_then_run_resumes_as_langgraph_does(lg, project, db_copy):
    url, saver = lg
    saver.setup()
    agent = f"{project / 'graph.py'}:graph"
    r = _agentctl(url, "run", "t", "--agent", agent, "--input", json.dumps({"n": 0, "log": []}))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised ValueError in node 'step': n is 3 and not fixed" in r.stderr
    assert f'File "{project / "graph.py"}"' in r.stderr and 'raise ValueError("n is 3 and not fixed")' in r.stderr
    assert "site-packages" not in r.stderr  # only the user's own frames
    assert "step sees 0" in r.stderr  # the user's print, on stderr: stdout is data
    assert [ln.split()[1] for ln in r.stdout.splitlines()] == ["-1", "0", "1", "2", "3"]
    ops = cli_json(url, "oplog")
    assert ops[0]["kind"] == "run" and "error: ValueError" in ops[0]["summary"]

    graph = _user_graph(project).compile(checkpointer=saver)
    at = graph.get_state(cfg("t"))
    assert at.values["n"] == 3 and at.next == ("step",)
    # the fix, as the user would make it (agentctl edit does this through LangGraph too)
    head = dict(at.config)
    graph.update_state(head, {"fixed": True})
    fixed = dump(url, saver)

    # the reference: LangGraph's own invoke(None) on a copy of the same database
    with langgraph_saver(db_copy(url)) as ref_saver:
        ref_graph = _user_graph(project).compile(checkpointer=ref_saver)
        before_ref = len(list(ref_graph.get_state_history(cfg("t"))))
        ref_graph.invoke(None, cfg("t"))
        ref_state = ref_graph.get_state(cfg("t"))
        expect_values, expect_next = strip_ids(ref_state.values), ref_state.next
        expect_new = len(list(ref_graph.get_state_history(cfg("t")))) - before_ref

    before = len(list(graph.get_state_history(cfg("t"))))
    r = _agentctl(url, "run", "t", "--agent", agent)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.splitlines()[-1].startswith("ran t: 3 new checkpoint(s) (op ")
    state = graph.get_state(cfg("t"))
    assert state.values == {"n": 6, "log": [0, 1, 2, 3, 4, 5], "fixed": True}
    assert state.next == ()
    assert strip_ids(state.values) == expect_values and state.next == expect_next
    assert len(list(graph.get_state_history(cfg("t")))) - before == expect_new == 3

    # undo of the run: the database as after the fix, row for row
    r = cli(url, "undo")
    assert r.exit_code == 0, r.stderr
    assert dump(url, saver) == fixed
    assert graph.get_state(cfg("t")).values["n"] == 3


def _reference_run(project, url: str, var: str, thread: str, value, at: str | None = None):
    """LangGraph's own invoke(value) on the database at `url` (a copy): the values
    (ids stripped), next, and how many checkpoints it added to the thread."""
    with langgraph_saver(url) as ref_saver:
        ref = _user_graph(project, var)
        ref = ref.compile(checkpointer=ref_saver) if hasattr(ref, "compile") else ref.copy(update={"checkpointer": ref_saver})
        before = len(list(ref.get_state_history(cfg(thread))))
        ref.invoke(value, cfg(thread, at) if at else cfg(thread))
        state = ref.get_state(cfg(thread))
        return strip_ids(state.values), state.next, len(list(ref.get_state_history(cfg(thread)))) - before


def test_run_from_an_earlier_checkpoint_replays_and_compare_finds_no_divergence(lg, project, db_copy):
    url, saver = lg
    graph = _user_graph(project).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": [], "fixed": True}, cfg("t"))
    original = graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    at_2 = [s for s in graph.get_state_history(cfg("t")) if s.metadata["step"] == 2][0].config["configurable"]["checkpoint_id"]
    expect = _reference_run(project, db_copy(url), "graph", "t", None, at_2)  # LangGraph's replay from t@2
    count = len(list(graph.get_state_history(cfg("t"))))
    lines = _agentctl(url, "run", "t", "--from", "t@2", "--agent", "loop", "--json", cwd=project)
    assert lines.returncode == 0, lines.stderr
    events = [json.loads(x) for x in lines.stdout.splitlines()]
    saved = [e for e in events if e["event"] == "checkpoint"]
    # LangGraph's replay from step 2: a fork copy of it (step 3), then the steps again
    assert [e["step"] for e in saved] == [3, 4, 5, 6, 7] and saved[0]["source"] == "fork"
    assert events[-1]["event"] == "done" and events[-1]["op_id"] is not None
    state = graph.get_state(cfg("t"))
    assert (strip_ids(state.values), state.next, len(list(graph.get_state_history(cfg("t")))) - count) == expect
    out = cli_json(url, "compare", original, "t")
    assert out["first_divergent_step"] is None


def test_resume_answers_an_interrupt(lg, project, db_copy):
    from langgraph.types import Command

    url, saver = lg
    saver.setup()
    r = _agentctl(url, "run", "h", "--agent", "hitl", "--input", json.dumps({"n": 7}), cwd=project)
    assert r.returncode == 0, r.stderr
    assert "interrupt: " in r.stdout and '"question": "approve?"' in r.stdout
    graph = _user_graph(project, "hitl").copy(update={"checkpointer": saver})
    waiting = dump(url, saver)
    count = len(list(graph.get_state_history(cfg("h"))))
    expect = _reference_run(project, db_copy(url), "hitl", "h", Command(resume="yes"))  # LangGraph's own resume
    r = _agentctl(url, "run", "h", "--agent", "hitl", "--resume", json.dumps("yes"), cwd=project)
    assert r.returncode == 0, r.stderr
    state = graph.get_state(cfg("h"))
    assert state.values["approved"] == "yes"
    assert (strip_ids(state.values), state.next, len(list(graph.get_state_history(cfg("h")))) - count) == expect
    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == waiting  # the resume's rows gone, row for row


def test_bad_agent_config_from_and_interpreter_exit_2_and_write_nothing(tmp_path, project):
    url = lg_db_with_a_run(tmp_path, project)
    before = open(url, "rb").read()
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    cases = [
        (["--agent", f"{project / 'graph.py'}:nothing"], "has no 'nothing'"),
        (["--agent", "nosuch"], "has no graph 'nosuch'"),
        ([], "names 2 graphs; choose one with --agent"),
        (["--agent", "loop", "--from", "zzzz-none"], "--from zzzz-none"),
        (["--agent", "loop", "--python", str(venv / "bin" / "python")], "cannot import LangGraph"),
        (["--agent", "loop", "--input", "{bad"], "--input is not JSON"),
    ]
    assert_exit_2_one_line(url, "run", cases, cwd=project)
    r = _agentctl(url, "run", "t", cwd=tmp_path)
    assert r.returncode == 2 and "no langgraph.json in" in r.stderr
    assert open(url, "rb").read() == before
    assert not os.path.exists(url + "-wal") or os.path.getsize(url + "-wal") == 0


def test_run_refuses_formats_without_a_runtime(tmp_path):
    import shutil

    from tests.support.rig import SAMPLE_DB

    db = str(tmp_path / "s.db")
    shutil.copyfile(SAMPLE_DB, db)
    r = cli(db, "run", "coder-fix-flaky-test", "--agent", "x.py:g")
    assert r.exit_code == 2 and "agentctl runs none for the agentos format" in r.stderr


def test_ctrl_c_stops_the_run_and_what_it_saved_stays_undoable(tmp_path, project):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    url = str(tmp_path / "lg.db")
    SqliteSaver(sqlite3.connect(url, check_same_thread=False)).setup()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", url, "run", "t", "--agent", f"{project / 'graph.py'}:long_graph",
         "--input", json.dumps({"n": 0, "log": [], "fixed": True})],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "SLOW_GRAPH": "1"}, start_new_session=True)
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 4 and time.monotonic() < deadline:
        seen.append(proc.stdout.readline())
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole process group
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: the run saved" in err and "agentctl undo" in err
    n = sqlite3.connect(url).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    assert 4 <= n < 62
    ops = cli_json(url, "oplog")
    assert ops[0]["kind"] == "run" and ops[0]["summary"].endswith(": interrupted")
    assert cli(url, "undo").exit_code == 0
    assert sqlite3.connect(url).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
