"""`agentctl run` on Agno sessions: the user's own Agent, Team or Workflow (a scripted
`agno.models.base.Model`: no network) run in a child process as `VAR.run(TEXT,
session_id=THREAD)` (`arun` for an async tool) with its db on --db; the rows it adds equal
those agno's own `run` adds on a copy of the same database; undo gives every row back,
redo the run's; on SQLite and Postgres."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sqlite3
import textwrap
import time

import pytest

pytest.importorskip("agno")

from tests.formats.test_journal_agno import own_rows  # noqa: E402
from tests.formats.test_run import _agentctl, assert_exit_2_one_line, ctrl_c_when, settled_bytes  # noqa: E402
from tests.support import agno_rig  # noqa: E402
from tests.support.agno_rig import agno_open  # noqa: E402
from tests.support.rig import REPO, run_sync  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

agno_db, agno_builds, agno2_python = agno_rig.agno_db, agno_rig.agno_builds, agno_rig.agno2_python

AGENTS = textwrap.dedent('''
    import asyncio
    import os
    import time

    from agno.agent import Agent
    from agno.team import Team
    from agno.workflow import Step, Workflow

    from tests.scripts.agno_model import Scripted


    def count(run_context=None) -> str:
        """Add one to the counter in the session state."""
        state = run_context.session_state
        state["count"] = state.get("count", 0) + 1
        print("count sees", state["count"])  # the user's prints go to agentctl's stderr
        return f"count is {state['count']}"


    async def slow_count(run_context=None) -> str:
        """Add one to the counter, asynchronously."""
        await asyncio.sleep(0)
        return count(run_context)


    def tick(n: int) -> str:
        """One more tick, slowly (a long run to press Ctrl-C in), noted in $TICKS."""
        time.sleep(0.3)
        with open(os.environ["TICKS"], "a") as f:
            f.write(f"tick {n}\\n")
        return f"tick {n}"


    agent = Agent(model=Scripted(script=[{"tool": "count"}, "counted"]), id="chat", name="Chat", tools=[count],
                  add_history_to_context=True, session_state={"count": 0})
    async_agent = Agent(model=Scripted(script=[{"tool": "slow_count"}, "counted slowly"]), id="chat", name="Chat",
                        tools=[slow_count], add_history_to_context=True, session_state={"count": 0})
    ticker = Agent(model=Scripted(script=[{"tool": "tick", "args": {"n": i}} for i in range(40)] + ["ticked"]),
                   id="chat", name="Chat", tools=[tick])
    geo = Agent(model=Scripted(script=["Rome is the capital."]), id="geo", name="Geo")
    team = Team(model=Scripted(script=[{"tool": "delegate_task_to_member",
                                        "args": {"member_id": "geo", "task": "capital of Italy"}}, "It is Rome."]),
                members=[geo], id="quiz", name="Quiz")
    flow = Workflow(id="pipe", name="Pipe", steps=[
        Step(name="draft", agent=Agent(model=Scripted(script=["draft two"]), id="writer", name="Writer")),
        Step(name="edit", agent=Agent(model=Scripted(script=["final two"]), id="editor", name="Editor"))])


    def make_agent():
        return agent


    class Broken(Scripted):
        def invoke(self, *args, **kwargs):
            explode()


    def explode():
        raise ValueError("the model is broken")


    broken = Agent(model=Broken(), id="chat", name="Chat")
    not_an_agent = 42
''')


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "agents.py").write_text(AGENTS)
    return d


def user_component(project, var: str):
    """A fresh import of the user's file (its scripted models' replies unused): `var`."""
    spec = importlib.util.spec_from_file_location(f"agno_user_{time.monotonic_ns()}", project / "agents.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, var)


def reference(project, db, var: str, session: str, text: str) -> None:
    """agno's own run of the user's component on `db` (a copy), as the child runs it."""
    import asyncio

    component = user_component(project, var)
    component.db = agno_open(db)
    if var == "async_agent":
        asyncio.run(component.arun(text, session_id=session))
    else:
        component.run(text, session_id=session)


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: what differs between two runs of the same agent: times and durations
TIMES = frozenset({"created_at", "updated_at", "metrics", "start_time", "end_time", "duration"})


def agno_rows(db) -> list:
    """The sessions' and runs' rows, JSON decoded, times left out, each id a uuid4 named by
    its first place (two databases that got the same runs compare equal)."""

    async def read() -> list:
        q_s = "SELECT * FROM agno_sessions ORDER BY session_id"
        q_r = "SELECT * FROM agno_runs ORDER BY session_id, run_index"
        if db.kind == "sqlite":
            conn = sqlite3.connect(db.url)
            conn.row_factory = sqlite3.Row
            try:
                return [[dict(r) for r in conn.execute(q)] for q in (q_s, q_r)]
            finally:
                conn.close()
        import asyncpg

        conn = await asyncpg.connect(db.url)
        try:
            return [[dict(r) for r in await conn.fetch(q)] for q in (q_s, q_r)]
        finally:
            await conn.close()

    names: dict[str, str] = {}

    def norm(v):
        if isinstance(v, str) and v[:1] in "{[":
            try:
                v = json.loads(v)
            except ValueError:
                pass
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items() if k not in TIMES}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, str) and _UUID.match(v):
            return names.setdefault(v, f"id{len(names)}")
        return v

    return norm(run_sync(read))


@pytest.mark.parametrize("layout,kind", [("v3", "sqlite"), ("migrated", "sqlite"), ("v3", "postgres")])
@pytest.mark.parametrize(
    "var,session",
    [("agent", "chat"), ("make_agent", "fresh"), ("async_agent", "chat"), ("team", "team"), ("flow", "flow")],
)
def test_run_adds_the_rows_agnos_own_run_adds_and_undo_restores_every_row(
    agno_db, project, layout, kind, var, session
):
    db, ref = agno_db(layout, kind), agno_db(layout, kind)
    before = own_rows(db.url)
    r = _agentctl(
        db.url,
        "run",
        session,
        "--agent",
        f"{project / 'agents.py'}:{var}",
        "--input",
        "hello",
        env={"PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    reference(project, ref, var if var != "make_agent" else "agent", session, "hello")
    assert agno_rows(db) == agno_rows(ref)  # the same rows (ids and times aside) as agno's own run
    lines = r.stdout.splitlines()
    steps = len(cli_json(db.url, "log", session))
    assert lines[0] == f"step {steps}  user  hello"
    if var in ("agent", "make_agent", "async_agent"):  # a tool call and its result
        assert "count sees" in r.stderr  # the user's print: stdout is data
        assert [ln.split("  ")[1] for ln in lines[:-1]] == ["user", "assistant", "tool", "assistant"]
        assert lines[1].endswith("count({})") and lines[2].startswith(f"step {steps}  tool  count is ")
    if var == "team":  # the member's run, then the team's
        assert f"step {steps}  Geo/assistant  Rome is the capital." in lines
        assert lines[-2] == f"step {steps}  assistant  It is Rome."
    if var == "flow":
        assert lines[1:-1] == [
            f"step {steps}  Writer/assistant  draft two",
            f"step {steps}  Editor/assistant  final two",
            f"step {steps}  assistant  final two",
        ]
    assert re.match(
        rf"ran {session}: {len(lines) - 1} new message\(s\) \(op \d+; undo: agentctl undo \d+\); "
        "output: ",
        lines[-1],
    ), lines[-1]
    head = cli_json(db.url, "show", f"{session}@{steps}")
    assert head["messages"][-1]["content"] == lines[-1].split("output: ")[1]
    ran = own_rows(db.url)
    ops = cli_json(db.url, "oplog")
    assert ops[0]["kind"] == "run" and ops[0]["summary"].endswith(": done") and "hello" in ops[0]["summary"]
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before  # every row: the runs gone, the session's row as it was (or gone)
    assert cli(db.url, "redo").exit_code == 0
    assert own_rows(db.url) == ran
    assert agno_rows(db) == agno_rows(ref)


def test_the_users_error_bad_input_and_an_interpreter_without_agno(
    agno_db, project, bare_python, monkeypatch
):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the user's agents.py imports the scripted model of tests/
    db = agno_db("v3", "sqlite")
    before = settled_bytes(db.url)
    agents = f"{project / 'agents.py'}"
    cases = [
        (["--agent", f"{agents}:nothing", "--input", "x"], "has no 'nothing'"),
        (["--agent", f"{agents}:not_an_agent", "--input", "x"], "not an Agno Agent, Team or Workflow"),
        (["--agent", "agents", "--input", "x"], "--agent FILE.py:VAR"),
        (["--input", "x"], "--agent FILE.py:VAR"),
        (["--agent", f"{agents}:agent"], "needs --input TEXT"),
        (
            ["--agent", f"{agents}:agent", "--input", "x", "--from", "chat@1"],
            "--from and --resume are LangGraph's",
        ),
        (["--agent", f"{agents}:agent", "--input", "x", "--python", bare_python], "cannot import Agno"),
    ]
    assert_exit_2_one_line(db.url, "run", cases)
    assert settled_bytes(db.url) == before
    assert cli_json(db.url, "oplog") == []

    rows = own_rows(db.url)
    r = _agentctl(
        db.url, "run", "chat", "--agent", f"{agents}:broken", "--input", "boom", env={"PYTHONPATH": str(REPO)}
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised" in r.stderr and "the model is broken" in r.stderr
    if "(op " in r.stderr:  # the run agno saved (its ERROR status) is undoable
        assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == rows


def test_ctrl_c_stops_the_run_and_what_agno_saved_stays_undoable(agno_db, project, tmp_path):
    db = agno_db("v3", "sqlite")
    before = own_rows(db.url)
    conn = sqlite3.connect(db.url)
    noted = tmp_path / "ticks"

    def ticks() -> bool:  # (agno saves the run when it ends: Ctrl-C's too)
        return noted.exists() and noted.read_text().count("\n") >= 2

    code, out, err = ctrl_c_when(
        db.url,
        ["run", "chat", "--agent", f"{project / 'agents.py'}:ticker", "--input", "go"],
        ticks,
        env={"PYTHONPATH": str(REPO), "TICKS": str(noted)},
    )
    assert code == 130, (out, err)
    status = conn.execute(
        "SELECT status FROM agno_runs WHERE session_id = 'chat' ORDER BY run_index DESC LIMIT 1"
    ).fetchone()[0]
    conn.close()
    assert status == "CANCELLED"  # agno saves a run Ctrl-C stopped
    assert "interrupted: the run saved" in err and "which stay (op " in err
    assert out.splitlines()[0] == "step 6  user  go" and "tick" in out
    assert cli_json(db.url, "oplog")[0]["summary"].endswith(": interrupted")
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before


def test_run_on_agno_2_layout_with_agno_2(agno_db, project, agno2_python):
    """An agno 2 interpreter on its own v2 file (runs in the sessions row's array): the
    run appends to the array; undo puts the row back."""
    db = agno_db("v2", "sqlite")
    before = own_rows(db.url)
    agents = project / "agents2.py"
    agents.write_text(
        textwrap.dedent("""
        from agno.agent import Agent

        from tests.scripts.agno_model import Scripted
        from tests.scripts.agno_write import count

        agent = Agent(model=Scripted(script=[{"tool": "count"}, "counted"]), id="chat", name="Chat", tools=[count],
                      add_history_to_context=True, session_state={"count": 0})
    """)
    )
    r = _agentctl(
        db.url,
        "run",
        "chat",
        "--agent",
        f"{agents}:agent",
        "--input",
        "hello",
        "--python",
        agno2_python,
        env={"PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    log = cli_json(db.url, "log", "chat")
    assert len(log) == 6 and log[0]["summary"].startswith("hello")
    assert cli(db.url, "undo").exit_code == 0
    assert own_rows(db.url) == before
    assert os.path.exists(db.url)


def test_agno_3_on_an_agno_2_file_makes_the_runs_table_and_undo_still_works(agno_db, project):
    """agno 3 run on an unmigrated agno 2 file makes its runs table (the layout is mixed
    from then on): the run is recorded as the next process reads the file, so undo and
    redo work; the rows equal agno 3's own run on a copy."""
    db, ref = agno_db("v2", "sqlite"), agno_db("v2", "sqlite")
    before = own_rows(db.url)
    r = _agentctl(
        db.url,
        "run",
        "chat",
        "--agent",
        f"{project / 'agents.py'}:agent",
        "--input",
        "hello",
        env={"PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    reference(project, ref, "agent", "chat", "hello")
    assert agno_rows(db) == agno_rows(ref)
    ran = own_rows(db.url)
    assert cli(db.url, "undo").exit_code == 0
    undone = own_rows(db.url)  # (agno's new table, and its row in agno_schema_versions, stay)
    assert undone["agno_sessions"] == before["agno_sessions"] and undone["agno_runs"] == []
    assert cli(db.url, "redo").exit_code == 0
    assert own_rows(db.url) == ran
