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

GRAPH = textwrap.dedent("""
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
""")


NESTED = textwrap.dedent("""
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt


    class S(TypedDict, total=False):
        n: int
        log: Annotated[list, operator.add]
        answer: str


    def bump(s):
        return {"n": s["n"] + 1, "log": ["bump %d" % s["n"]]}


    def ask(s):
        return {"answer": interrupt({"question": "go on?", "n": s["n"]}), "log": ["asked"]}


    inner = StateGraph(S)
    inner.add_node("bump", bump)
    inner.add_node("ask", ask)
    inner.add_node("bump_again", bump)
    inner.add_edge(START, "bump")
    inner.add_edge("bump", "ask")
    inner.add_edge("ask", "bump_again")
    inner.add_edge("bump_again", END)


    def prep(s):
        return {"log": ["prep"]}


    def after(s):
        return {"log": ["after %d" % s["n"]]}


    # a parent graph whose node `sub` is a compiled subgraph (its checkpoints: namespace sub:<task>)
    nested = StateGraph(S)
    nested.add_node("prep", prep)
    nested.add_node("sub", inner.compile())
    nested.add_node("after", after)
    nested.add_edge(START, "prep")
    nested.add_edge("prep", "sub")
    nested.add_edge("sub", "after")
    nested.add_edge("after", END)
""")


@pytest.fixture
def project(tmp_path):
    """A user's project: graph.py and a langgraph.json naming two graphs."""
    d = tmp_path / "proj"
    d.mkdir()
    (d / "graph.py").write_text(GRAPH)
    (d / "nested.py").write_text(NESTED)
    (d / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"loop": "./graph.py:graph", "hitl": "./graph.py:hitl"}})
    )
    return d


def _user_graph(project, var: str = "graph", file: str = "graph.py"):
    """The same graph object, imported in the test's own process (the reference run)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"user_graph_{abs(hash(str(project / file)))}", project / file
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, var)


def _agentctl(url, *args, env=None, **kw):
    """The real CLI in a process (what a user runs)."""
    return subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", url, *args],
        capture_output=True,
        text=True,
        cwd=kw.pop("cwd", REPO),
        env={**os.environ, **(env or {})},
        **kw,
    )


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


def ctrl_c_when(url, args, ready, env=None, timeout=30):
    """`agentctl --db URL ARGS...` in a process group of its own, as a terminal runs it;
    once `ready()` holds, the terminal's Ctrl-C (SIGINT to the whole group). Returns
    (exit status, stdout, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, ("the run ended before Ctrl-C", proc.communicate())
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def settled_bytes(path) -> bytes:
    """A SQLite file's bytes once its WAL is folded in (what "nothing written" compares)."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "rb") as f:
        return f.read()


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
    assert (
        f'File "{project / "graph.py"}"' in r.stderr
        and 'raise ValueError("n is 3 and not fixed")' in r.stderr
    )
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
        ref = (
            ref.compile(checkpointer=ref_saver)
            if hasattr(ref, "compile")
            else ref.copy(update={"checkpointer": ref_saver})
        )
        before = len(list(ref.get_state_history(cfg(thread))))
        ref.invoke(value, cfg(thread, at) if at else cfg(thread))
        state = ref.get_state(cfg(thread))
        return strip_ids(state.values), state.next, len(list(ref.get_state_history(cfg(thread)))) - before


def test_run_from_an_earlier_checkpoint_replays_and_compare_finds_no_divergence(lg, project, db_copy):
    url, saver = lg
    graph = _user_graph(project).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": [], "fixed": True}, cfg("t"))
    original = graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    at_2 = [s for s in graph.get_state_history(cfg("t")) if s.metadata["step"] == 2][0].config[
        "configurable"
    ]["checkpoint_id"]
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
    assert (
        strip_ids(state.values),
        state.next,
        len(list(graph.get_state_history(cfg("t")))) - count,
    ) == expect
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
    expect = _reference_run(
        project, db_copy(url), "hitl", "h", Command(resume="yes")
    )  # LangGraph's own resume
    r = _agentctl(url, "run", "h", "--agent", "hitl", "--resume", json.dumps("yes"), cwd=project)
    assert r.returncode == 0, r.stderr
    state = graph.get_state(cfg("h"))
    assert state.values["approved"] == "yes"
    assert (
        strip_ids(state.values),
        state.next,
        len(list(graph.get_state_history(cfg("h")))) - count,
    ) == expect
    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == waiting  # the resume's rows gone, row for row


def test_bad_agent_config_from_and_interpreter_exit_2_and_write_nothing(tmp_path, project, bare_python):
    url = lg_db_with_a_run(tmp_path, project)
    before = open(url, "rb").read()
    cases = [
        (["--agent", f"{project / 'graph.py'}:nothing"], "has no 'nothing'"),
        (["--agent", "nosuch"], "has no graph 'nosuch'"),
        ([], "names 2 graphs; choose one with --agent"),
        (["--agent", "loop", "--from", "zzzz-none"], "--from zzzz-none"),
        (["--agent", "loop", "--python", bare_python], "cannot import LangGraph"),
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

    def saved() -> int:
        return sqlite3.connect(url).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]

    code, out, err = ctrl_c_when(
        url,
        [
            "run",
            "t",
            "--agent",
            f"{project / 'graph.py'}:long_graph",
            "--input",
            json.dumps({"n": 0, "log": [], "fixed": True}),
        ],
        lambda: saved() >= 4,
        env={"SLOW_GRAPH": "1"},
    )
    assert code == 130, (out, err)
    assert "interrupted: the run saved" in err and "agentctl undo" in err
    n = saved()
    assert 4 <= n < 62 and len(out.splitlines()) == n  # one line per checkpoint it saved
    ops = cli_json(url, "oplog")
    assert ops[0]["kind"] == "run" and ops[0]["summary"].endswith(": interrupted")
    assert cli(url, "undo").exit_code == 0
    assert saved() == 0


def _namespaces(url, saver) -> list[tuple[bool, int]]:
    """[(a subgraph's namespace?, its checkpoints)] of thread t (the subgraph's task ids differ run to run)."""
    rows = [r for r in dump(url, saver)["checkpoints"] if r[0] == "t"]
    ns = sorted({r[1] for r in rows})
    return sorted((n != "", sum(1 for r in rows if r[1] == n)) for n in ns)


def test_run_of_a_graph_with_a_subgraph_equals_langgraphs_and_undo_removes_the_subgraphs_rows(
    lg, project, tmp_path
):
    from langgraph.types import Command

    url, saver = lg
    saver.setup()
    agent = f"{project / 'nested.py'}:nested"
    empty = dump(url, saver)
    graph = _user_graph(project, "nested", "nested.py").compile(checkpointer=saver)
    ref = None
    if "://" not in url:  # the reference: LangGraph's own invoke on a copy, step by step
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        ref = (sqlite3.connect(str(tmp_path / "ref.db"), check_same_thread=False), str(tmp_path / "ref.db"))
        src = sqlite3.connect(url)
        src.backup(ref[0])  # the file alone may lack what the -wal holds
        src.close()
        ref_saver = SqliteSaver(ref[0])
        ref_graph = _user_graph(project, "nested", "nested.py").compile(checkpointer=ref_saver)

    # 1. the input: prep, then the subgraph runs to its interrupt()
    r = _agentctl(url, "run", "t", "--agent", agent, "--input", json.dumps({"n": 0, "log": []}))
    assert r.returncode == 0, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()  # every checkpoint as it is saved: the graph's, then the subgraph's
    steps = [
        (ln.split()[1], ln.split()[3], ln.split("(subgraph ")[-1][:4] if "(subgraph " in ln else "")
        for ln in lines[:-1]
    ]
    assert steps == [
        ("-1", "input", ""),
        ("0", "loop", ""),
        ("1", "prep", ""),
        ("-1", "input", "sub:"),
        ("0", "loop", "sub:"),
        ("1", "bump", "sub:"),
    ]
    assert lines[2].endswith("prep  changed: log") and "bump  changed: n, log  (subgraph sub:" in lines[5]
    assert (
        lines[-1].startswith("ran t: 6 new checkpoint(s) (op ")
        and "; waiting at sub; interrupt: " in lines[-1]
    )
    assert '"question": "go on?"' in lines[-1]
    state = graph.get_state(cfg("t"), subgraphs=True)
    assert strip_ids(state.values) == {"n": 0, "log": ["prep"]} and state.next == ("sub",)
    sub = state.tasks[0].state
    assert sub.next == ("ask",) and strip_ids(sub.values) == {"n": 1, "log": ["prep", "bump 0"]}
    after_input = dump(url, saver)
    assert _namespaces(url, saver) == [(False, 3), (True, 3)]
    if ref is not None:
        ref_graph.invoke({"n": 0, "log": []}, cfg("t"))
        theirs = ref_graph.get_state(cfg("t"), subgraphs=True)
        assert strip_ids(theirs.values) == strip_ids(state.values) and theirs.next == state.next
        assert strip_ids(theirs.tasks[0].state.values) == strip_ids(sub.values)
        assert _namespaces(ref[1], ref_saver) == _namespaces(url, saver)

    # 2. the answer: the subgraph resumes inside its namespace, the parent goes on to its end
    r = _agentctl(url, "run", "t", "--agent", agent, "--resume", json.dumps("yes"))
    assert r.returncode == 0, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()  # not the checkpoints it resumed from (LangGraph streams them again)
    steps = [(ln.split()[1], ln.split()[3], "(subgraph sub:" in ln) for ln in lines[:-1]]
    assert steps == [
        ("2", "ask", True),
        ("3", "bump_again", True),
        ("2", "sub", False),
        ("3", "after", False),
    ]
    assert lines[2].endswith("sub  changed: n, log, answer")
    assert lines[-1].startswith("ran t: 4 new checkpoint(s) (op ") and "waiting" not in lines[-1]
    state = graph.get_state(cfg("t"))
    expect = {"n": 2, "log": ["prep", "prep", "bump 0", "asked", "bump 1", "after 2"], "answer": "yes"}
    assert strip_ids(state.values) == expect and state.next == ()
    assert _namespaces(url, saver) == [(False, 5), (True, 5)]
    if ref is not None:
        ref_graph.invoke(Command(resume="yes"), cfg("t"))
        theirs = ref_graph.get_state(cfg("t"))
        assert strip_ids(theirs.values) == expect and theirs.next == ()
        assert _namespaces(ref[1], ref_saver) == _namespaces(url, saver)
        ref[0].close()

    # 3. undo, twice: every row each run wrote goes, the subgraph's namespace's too
    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == after_input
    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == empty


def test_which_interpreter_runs_the_agent_and_module_var(tmp_path, project):
    """The child runs in --python, else AGENTCTL_PYTHON, else the active virtual
    environment's python ($VIRTUAL_ENV/bin/python), else agentctl's own; `--agent
    module:var` imports the user's module (here `graph`, on PYTHONPATH)."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    url = str(tmp_path / "lg.db")
    conn = sqlite3.connect(url)
    SqliteSaver(conn).setup()
    conn.close()

    def interpreter(name: str) -> str:  # a python that notes it ran, then is the real one
        path = tmp_path / name / "bin" / "python"
        path.parent.mkdir(parents=True)
        path.write_text(f'#!/bin/sh\necho {name} >> "{tmp_path / "ran"}"\nexec "{sys.executable}" "$@"\n')
        path.chmod(0o755)
        return str(path)

    venv, env_py, flag_py = interpreter("venv"), interpreter("envvar"), interpreter("flag")
    base = {"PYTHONPATH": f"{project}{os.pathsep}{REPO}", "VIRTUAL_ENV": str(tmp_path / "venv")}
    for extra, env, want in (
        ([], base, "venv"),
        ([], {**base, "AGENTCTL_PYTHON": env_py}, "envvar"),
        (["--python", flag_py], {**base, "AGENTCTL_PYTHON": env_py}, "flag"),
    ):
        (tmp_path / "ran").unlink(missing_ok=True)
        r = _agentctl(
            url,
            "run",
            f"t-{want}",
            "--agent",
            "graph:graph",
            "--input",
            json.dumps({"n": 0, "log": []}),
            *extra,
            env=env,
        )
        assert r.returncode == 1 and "your agent raised ValueError in node 'step'" in r.stderr, (
            r.stdout,
            r.stderr,
        )
        assert (tmp_path / "ran").read_text().split() == [want]
    assert os.path.exists(venv)


def test_run_and_edit_on_a_file_nobody_may_write_run_nothing(tmp_path, project):
    """The user's agent writes the database itself (in the child): on a file whose mode
    lets nobody write it (as root too, whom the kernel lets write it), `run` and `edit`
    with the graph refuse before the child starts: exit 6, one line, nothing written."""
    url = lg_db_with_a_run(tmp_path, project)
    os.chmod(url, 0o444)
    before = settled_bytes(url)
    files = sorted(p.name for p in tmp_path.iterdir())
    agent = f"{project / 'graph.py'}:graph"
    for args in (
        ["run", "t", "--agent", agent, "--from", "t@2"],
        ["edit", "t@2", "--set", "n=1", "--agent", agent, "--yes"],
    ):
        r = _agentctl(url, *args, cwd=project)
        assert r.returncode == 6, (args, r.stdout, r.stderr)
        assert r.stderr.splitlines()[-1] == (
            f"agentctl: {url}: the database is read-only, cannot write (the file's mode is -r--r--r--)"
        ), r.stderr
        assert "step sees" not in r.stderr  # the agent never ran
        assert settled_bytes(url) == before and sorted(p.name for p in tmp_path.iterdir()) == files
