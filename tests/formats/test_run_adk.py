"""`agentctl run` on Google ADK sessions: the user's own agent (a custom `BaseAgent`: no
model) run in a child process through ADK's `Runner.run_async` with ADK's own
`DatabaseSessionService` on --db; the result equals what ADK's Runner gives on a copy of
the same database; undo gives every row back."""

from __future__ import annotations

import shutil
import textwrap
from contextlib import asynccontextmanager

import pytest

pytest.importorskip("google.adk")

import tests.formats.test_format_adk as fa  # noqa: E402
from tests.formats.test_format_adk import INITIAL, dump  # noqa: E402
from tests.formats.test_run import _agentctl, ctrl_c_when, settled_bytes  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

AGENT = textwrap.dedent('''
    import asyncio

    from google.adk.agents import BaseAgent
    from google.adk.events import Event, EventActions
    from google.genai import types


    class Echo(BaseAgent):
        async def _run_async_impl(self, ctx):
            text = ctx.user_content.parts[0].text
            if text == "boom":
                explode(text)
            print("echo sees", text)  # the user's prints go to agentctl's stderr
            n = ctx.session.state.get("count", 0) + 1
            yield Event(author=self.name, invocation_id=ctx.invocation_id,
                        content=types.Content(role="model", parts=[types.Part(text=text[::-1])]),
                        actions=EventActions(state_delta={"count": n, "user:seen": True, "app:runs": n}))


    def explode(text):
        raise ValueError("cannot echo " + text)


    root_agent = Echo(name="echo")


    class Slow(BaseAgent):
        """Says 40 things, one every 0.2 s (a long run to press Ctrl-C in)."""

        async def _run_async_impl(self, ctx):
            for i in range(40):
                await asyncio.sleep(0.2)
                yield Event(author=self.name, invocation_id=ctx.invocation_id,
                            content=types.Content(role="model", parts=[types.Part(text=f"tick {i}")]))


    slow_agent = Slow(name="slow")
''')


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    (d / "echo_agent").mkdir(parents=True)
    (d / "echo_agent" / "__init__.py").write_text("from . import agent\n")
    (d / "echo_agent" / "agent.py").write_text(AGENT)
    return d


async def _db(tmp_path):
    from google.adk.sessions import DatabaseSessionService

    path = str(tmp_path / "adk.db")
    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    await svc.create_session(app_name="app", user_id="u1", session_id="s1", state=dict(INITIAL))
    await svc.close()
    return path


@asynccontextmanager
async def _service(url: str):
    """ADK's DatabaseSessionService on agentctl's URL (a SQLite path or a Postgres DSN)."""
    from google.adk.sessions import DatabaseSessionService

    if "://" not in url:
        svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{url}")
        try:
            yield svc
        finally:
            await svc.close()
        return
    engine = fa._engine_for(url)
    svc = DatabaseSessionService(db_engine=engine)
    try:
        yield svc
    finally:
        await svc.close()
        await engine.dispose()


async def _reference(project, url: str, session: str) -> list:
    """ADK's own Runner on the copy: [(author, text)] of the session's events, its state."""
    import importlib.util
    import sys

    from google.adk.runners import Runner
    from google.genai import types

    spec = importlib.util.spec_from_file_location(
        f"echo_ref_{abs(hash(url))}", project / "echo_agent" / "agent.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    async with _service(url) as svc:
        if await svc.get_session(app_name="app", user_id="u1", session_id=session) is None:
            await svc.create_session(app_name="app", user_id="u1", session_id=session)
        runner = Runner(app_name="app", agent=module.root_agent, session_service=svc)
        async for _ in runner.run_async(
            user_id="u1",
            session_id=session,
            new_message=types.Content(role="user", parts=[types.Part(text="hello")]),
        ):
            pass
    return await _view(url, session)


async def _view(url: str, session: str):
    async with _service(url) as svc:
        s = await svc.get_session(app_name="app", user_id="u1", session_id=session)
        return [(e.author, e.content.parts[0].text if e.content else None) for e in s.events], s.state


@pytest.mark.parametrize("session", ["s1", "fresh"])
async def test_run_equals_adks_runner_on_a_copy_and_undo_restores_every_row(tmp_path, project, session):
    path = await _db(tmp_path)
    copy = str(tmp_path / "copy.db")
    shutil.copyfile(path, copy)
    before = await dump(path)
    r = _agentctl(
        path, "run", f"app/u1/{session}", "--agent", str(project / "echo_agent"), "--input", "hello"
    )
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "echo sees hello" in r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["item 1  user  hello", "item 2  echo  olleh"]
    assert lines[-1].startswith(f"ran app/u1/{session}: 2 new item(s) (op ") and "output: olleh" in lines[-1]
    expect = await _reference(project, copy, session)
    assert await _view(path, session) == expect
    assert expect[1]["count"] == 1 and expect[1]["user:seen"] is True

    assert cli_json(path, "oplog")[0]["kind"] == "run"
    r = cli(path, "undo")
    assert r.exit_code == 0, r.stderr
    assert await dump(path) == before  # every row: events, the session, app and user state


async def test_the_users_error_and_bad_input_exit_2(tmp_path, project):
    path = await _db(tmp_path)
    before = await dump(path)
    r = _agentctl(
        path,
        "run",
        "app/u1/s1",
        "--agent",
        f"{project / 'echo_agent' / 'agent.py'}:root_agent",
        "--input",
        "boom",
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised ValueError in agent 'echo': cannot echo boom" in r.stderr
    assert "explode(text)" in r.stderr and "site-packages" not in r.stderr
    if "(op " in r.stderr:  # what ADK saved before the error (the user's message) is undoable
        assert cli(path, "undo").exit_code == 0
    assert await dump(path) == before
    cases = [
        (["--agent", str(project / "nope"), "--input", "x"], "no agents folder"),
        (["--agent", str(project / "echo_agent"), "--input", "x", "--from", "t@1"], "LangGraph's"),
        (["--agent", str(project / "echo_agent")], "needs --input TEXT"),
    ]
    import os

    for args, words in cases:
        r = _agentctl(path, "run", "app/u1/s1", *args)
        assert r.returncode == 2 and words in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert await dump(path) == before
    assert os.path.exists(path)


adk_db = fa.adk_db  # (agentctl's URL, a DatabaseSessionService) on SQLite and on Postgres
db_copy = dbcopy.db_copy  # copy(url) -> a copy's URL (the framework's reference run)


async def test_run_then_undo_on_both_backends_and_undo_refuses_after_adk_wrote(adk_db, db_copy, project):
    from google.adk.events import Event

    from tests.formats.test_format_adk import _text

    url, svc = adk_db
    await svc.create_session(app_name="app", user_id="u1", session_id="s1", state=dict(INITIAL))
    before = await dump(url)
    copy = db_copy(url)
    agent = str(project / "echo_agent")
    r = _agentctl(url, "run", "app/u1/s1", "--agent", agent, "--input", "hello")
    assert r.returncode == 0, (r.stdout, r.stderr)
    got = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert [(e.author, e.content.parts[0].text) for e in got.events] == [("user", "hello"), ("echo", "olleh")]
    assert got.state["count"] == 1 and got.state["user:seen"] is True and got.state["app:runs"] == 1
    # what ADK's own Runner gives on a copy of the same database (events, state)
    reference = await _reference(project, copy, "s1")
    assert await _view(url, "s1") == reference
    ran = await dump(url)
    assert cli(url, "undo").exit_code == 0
    assert await dump(url) == before
    # redo: the run's rows back, as ADK wrote them; ADK reads the session as after the run
    assert cli(url, "redo").exit_code == 0
    assert await dump(url) == ran
    assert await _view(url, "s1") == reference
    assert cli(url, "undo").exit_code == 0
    assert await dump(url) == before

    r = _agentctl(url, "run", "app/u1/s1", "--agent", agent, "--input", "again")
    assert r.returncode == 0, r.stderr
    fresh = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    await svc.append_event(fresh, Event(author="user", invocation_id="inv-z", content=_text("user", "later")))
    rows = await dump(url)
    r = cli(url, "undo")
    assert r.exit_code != 0 and "changed since" in r.stderr and r.stderr.count("\n") == 1
    assert await dump(url) == rows


def _events(path: str) -> int:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM events WHERE session_id = 's1'").fetchone()[0]
    finally:
        conn.close()


async def test_ctrl_c_stops_the_run_and_what_it_saved_stays_undoable(tmp_path, project):
    import time

    path = await _db(tmp_path)
    before = await dump(path)
    agent = f"{project / 'echo_agent' / 'agent.py'}:slow_agent"
    code, out, err = ctrl_c_when(
        path, ["run", "app/u1/s1", "--agent", agent, "--input", "go"], lambda: _events(path) >= 4
    )
    assert code == 130, (out, err)
    saved = _events(path)
    assert 4 <= saved < 41  # the user's message and some of the agent's 40 events
    time.sleep(0.5)  # two more events' time: the child is gone, nothing more comes
    assert _events(path) == saved
    assert f"interrupted: the run saved {saved} item(s), which stay (op " in err and "agentctl undo" in err
    assert (
        out.splitlines()[:2] == ["item 1  user  go", "item 2  slow  tick 0"]
        and len(out.splitlines()) == saved
    )
    ops = cli_json(path, "oplog")
    assert ops[0]["kind"] == "run" and ops[0]["summary"].endswith(": interrupted")
    assert cli(path, "undo").exit_code == 0
    assert await dump(path) == before


async def test_an_interpreter_without_adk_exits_2_naming_it_and_writes_nothing(
    tmp_path, project, bare_python
):
    path = await _db(tmp_path)
    raw = settled_bytes(path)
    r = _agentctl(
        path,
        "run",
        "app/u1/s1",
        "--agent",
        str(project / "echo_agent"),
        "--input",
        "hello",
        "--python",
        bare_python,
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and f"{bare_python} cannot import Google ADK" in r.stderr
    assert "--python" in r.stderr and r.stdout == ""
    assert settled_bytes(path) == raw  # nothing written, no side table made
    assert cli_json(path, "oplog") == []
