"""`agentctl run` and `agentctl edit` on the OpenAI Agents SDK's sessions: the user's own
`Agent` (a scripted `Model`: no network, no API key) run in a child process through the
SDK's `Runner.run` with the SDK's own session on --db; the result equals what
`Runner.run` gives on a copy of the same database; undo gives every row back."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import textwrap
import time

import pytest

pytest.importorskip("agents")

from tests.formats.test_format_openai import CONV, _all_rows  # noqa: E402
from tests.formats.test_run import _agentctl, assert_exit_2_one_line, ctrl_c_when, settled_bytes  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

db_copy = dbcopy.db_copy  # the fixture: copy(url) -> a copy's URL (the framework's reference run)

AGENT = textwrap.dedent('''
    import asyncio
    import os

    from agents import Agent, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


    class Scripted(Model):
        """Answers with the last user message reversed (no network)."""

        async def get_response(self, system_instructions, input, *args, **kwargs):
            items = [{"role": "user", "content": input}] if isinstance(input, str) else input
            last = next(i for i in reversed(items) if i.get("role") == "user")
            text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
            if text == "boom":
                explode(text)
            print("model sees", len(items), "items")  # the user's prints go to agentctl's stderr
            msg = ResponseOutputMessage(id="msg_%d" % len(items), type="message", role="assistant",
                                        status="completed",
                                        content=[ResponseOutputText(type="output_text", text=text[::-1],
                                                                    annotations=[])])
            return ModelResponse(output=[msg], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError


    def explode(text):
        raise ValueError("the model cannot say " + text)


    agent = Agent(name="echo", instructions="reverse", model=Scripted())


    def make_agent():
        return agent


    @function_tool
    def tick(n: int) -> str:
        """One more tick."""
        return f"tick {n}"


    class Looping(Model):
        """Calls `tick` eight times, a turn each, slowly (a long run to press Ctrl-C in)."""

        async def get_response(self, system_instructions, input, *args, **kwargs):
            await asyncio.sleep(0.5)
            done = sum(1 for i in input if isinstance(i, dict) and i.get("type") == "function_call_output")
            if done >= 8:
                msg = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed",
                                            content=[ResponseOutputText(type="output_text", text="done",
                                                                        annotations=[])])
                return ModelResponse(output=[msg], usage=Usage(), response_id=None)
            call = ResponseFunctionToolCall(id="fc%d" % done, call_id="c%d" % done, name="tick",
                                            arguments='{"n": %d}' % done, type="function_call", status="completed")
            return ModelResponse(output=[call], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError


    looping = Agent(name="looper", instructions="tick", model=Looping(), tools=[tick])


    not_an_agent = 42
''')


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "agent.py").write_text(AGENT)
    return d


def _user_agent(project):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"user_agent_{abs(hash(str(project)))}", project / "agent.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.agent


async def _db(tmp_path) -> str:
    """A SQLiteSession database with session `conv` holding CONV."""
    from agents import SQLiteSession

    path = str(tmp_path / "sdk.db")
    s = SQLiteSession("conv", path)
    await s.add_items(CONV)
    s.close()
    conn = sqlite3.connect(path)
    with conn:  # a time no write of this test produces
        conn.execute("UPDATE agent_sessions SET updated_at = '2020-01-02 03:04:05'")
    conn.close()
    return path


async def _items(path: str, session: str = "conv") -> list:
    from agents import SQLiteSession

    s = SQLiteSession(session, path)
    try:
        return await s.get_items()
    finally:
        s.close()


@pytest.mark.parametrize("session,var", [("conv", "agent"), ("fresh", "make_agent")])
async def test_run_equals_the_sdks_runner_on_a_copy_and_undo_restores_every_row(
    tmp_path, project, session, var
):
    from agents import Runner, SQLiteSession

    path = await _db(tmp_path)
    copy = str(tmp_path / "copy.db")
    shutil.copyfile(path, copy)
    before = _all_rows(path)
    r = _agentctl(path, "run", session, "--agent", f"{project / 'agent.py'}:{var}", "--input", "hello there")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "model sees" in r.stderr  # the user's print: stdout is data
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"item {len(CONV) + 1 if session == 'conv' else 1}  user  hello there")
    assert lines[-1].startswith(f"ran {session}: 2 new item(s) (op ") and "output: ereht olleh" in lines[-1]

    ref = SQLiteSession(session, copy)  # the reference: the SDK's own Runner on a copy
    result = await Runner.run(_user_agent(project), "hello there", session=ref)
    expect = await ref.get_items()
    ref.close()
    assert result.final_output == "ereht olleh"
    assert await _items(path, session) == expect
    assert len(expect) == (len(CONV) if session == "conv" else 0) + 2

    ops = cli_json(path, "oplog")
    assert (
        ops[0]["kind"] == "run"
        and "hello there" in ops[0]["summary"]
        and ops[0]["summary"].endswith(": done")
    )
    r = cli(path, "undo")
    assert r.exit_code == 0, r.stderr
    assert _all_rows(path) == before  # the session row too (deleted, or its updated_at as it was)
    assert await _items(path, session) == (CONV if session == "conv" else [])


async def test_run_json_lines_and_the_users_error_with_their_frames(tmp_path, project):
    path = await _db(tmp_path)
    agent = f"{project / 'agent.py'}:agent"
    r = _agentctl(path, "run", "conv", "--agent", agent, "--input", "hi", "--json")
    assert r.returncode == 0, r.stderr
    events = [json.loads(x) for x in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["checkpoint", "checkpoint", "done"]
    assert [(e["step"], e["kind"], e["text"]) for e in events[:2]] == [
        (10, "user", "hi"),
        (11, "assistant", "ih"),
    ]
    assert events[-1]["output"] == "ih" and events[-1]["op_id"] is not None

    before = _all_rows(path)
    r = _agentctl(path, "run", "conv", "--agent", agent, "--input", "boom")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised ValueError in agent 'echo': the model cannot say boom" in r.stderr
    assert f'File "{project / "agent.py"}"' in r.stderr and "explode(text)" in r.stderr
    assert "site-packages" not in r.stderr
    # what the SDK saved before the error (the run's input, if it saved it) is one undoable op
    saved = len(await _items(path)) - len(CONV) - 2
    assert f"the run saved {saved} item(s) before the error" in r.stderr
    if saved:
        assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before


async def test_bad_agent_input_and_interpreter_exit_2_one_line_and_write_nothing(
    tmp_path, project, bare_python
):
    path = await _db(tmp_path)
    before = settled_bytes(path)
    agent = f"{project / 'agent.py'}:agent"
    cases = [
        (["--agent", f"{project / 'agent.py'}:nothing", "--input", "x"], "has no 'nothing'"),
        (["--agent", f"{project / 'agent.py'}:not_an_agent", "--input", "x"], "not an agents.Agent"),
        (["--agent", "loop", "--input", "x"], "--agent FILE.py:VAR"),
        (["--input", "x"], "--agent FILE.py:VAR"),
        (["--agent", agent], "needs --input TEXT"),
        (["--agent", agent, "--input", "x", "--from", "t@1"], "--from and --resume are LangGraph's"),
        (["--agent", agent, "--resume", "1"], "--from and --resume are LangGraph's"),
        (["--agent", agent, "--input", "x", "--python", bare_python], "cannot import the OpenAI Agents SDK"),
    ]
    assert_exit_2_one_line(path, "run", cases)
    assert open(path, "rb").read() == before
    assert not os.path.exists(path + "-wal") or os.path.getsize(path + "-wal") == 0
    assert cli_json(path, "oplog") == []


async def test_edit_an_items_content_in_place_and_undo_byte_for_byte(tmp_path):
    path = await _db(tmp_path)
    before = _all_rows(path)
    ref = "conv@5"  # the assistant's message: content is a list of parts
    plan = cli_json(path, "edit", ref, "--set", 'content.0.text="Cloudy in Paris."', "--dry-run")
    assert plan["changes"] == [
        {
            "section": "state",
            "path": "/content/0/text",
            "op": "changed",
            "old": "It is sunny in Paris (21°C).",
            "new": "Cloudy in Paris.",
        }
    ]
    assert _all_rows(path) == before
    r = cli(path, "edit", ref, "--set", 'content.0.text="Cloudy in Paris."', "--yes")
    assert r.exit_code == 0, r.stderr
    items = await _items(path)
    expect = json.loads(json.dumps(CONV))
    expect[4]["content"][0]["text"] = "Cloudy in Paris."
    assert items == expect  # in place: same position, the rest untouched

    r = cli(path, "edit", "conv@6", "--set", 'content="plain now"', "--yes")  # a list of parts -> a string
    assert r.exit_code == 0, r.stderr
    expect[5]["content"] = "plain now"
    assert await _items(path) == expect

    r = cli(path, "edit", "conv@6", "--set", "nokey.x=1", "--yes")
    assert r.exit_code == 2 and "no key 'nokey'" in r.stderr and r.stderr.count("\n") == 1
    assert cli(path, "undo").exit_code == 0
    assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before
    assert await _items(path) == CONV


async def test_undo_refuses_when_the_session_changed_since(tmp_path, project):
    from agents import SQLiteSession

    path = await _db(tmp_path)
    r = _agentctl(path, "run", "conv", "--agent", f"{project / 'agent.py'}:agent", "--input", "hi")
    assert r.returncode == 0, r.stderr
    assert cli(path, "edit", "conv@1", "--set", 'content="changed"', "--yes").exit_code == 0
    s = SQLiteSession("conv", path)
    await s.add_items([{"role": "user", "content": "later"}])
    s.close()
    rows = _all_rows(path)
    for _ in range(2):  # the edit's undo, then (explicitly) the run's
        r = cli(path, "undo")
        assert r.exit_code != 0 and "conv changed since operation" in r.stderr and r.stderr.count("\n") == 1
        assert _all_rows(path) == rows


async def _pg_rows(pg_dsn: str) -> dict[str, list]:
    """Every row of the SDK's tables on Postgres (updated_at included)."""
    import asyncpg

    conn = await asyncpg.connect(
        pg_dsn.split("?")[0], server_settings={"search_path": pg_dsn.split("search_path=")[1].split("&")[0]}
    )
    try:
        return {
            t: sorted(repr(tuple(r)) for r in await conn.fetch(f"SELECT * FROM {t}"))
            for t in ("agent_sessions", "agent_messages")
        }
    finally:
        await conn.close()


@pytest.mark.pg
async def test_run_edit_and_undo_on_postgres_sqlalchemy_session(pg_dsn, db_copy, project):
    pytest.importorskip("sqlalchemy")
    from agents import Runner
    from agents.extensions.memory import SQLAlchemySession

    from tests.formats.test_format_openai import _engine_for

    engine = _engine_for(pg_dsn)
    try:
        await SQLAlchemySession("conv", engine=engine, create_tables=True).add_items(CONV)
        before = await _pg_rows(pg_dsn)
        copy = db_copy(pg_dsn)
        r = _agentctl(
            pg_dsn, "run", "conv", "--agent", f"{project / 'agent.py'}:agent", "--input", "hello there"
        )
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert r.stdout.splitlines()[-1].startswith("ran conv: 2 new item(s) (op ")
        ref_engine = _engine_for(copy)  # the reference: the SDK's own Runner on a copy
        try:
            ref = SQLAlchemySession("conv", engine=ref_engine)
            result = await Runner.run(_user_agent(project), "hello there", session=ref)
            expect = await ref.get_items()
        finally:
            await ref_engine.dispose()
        assert result.final_output == "ereht olleh" and len(expect) == len(CONV) + 2
        conv = SQLAlchemySession("conv", engine=engine)
        assert await conv.get_items() == expect

        r = cli(pg_dsn, "edit", "conv@10", "--set", 'content="edited"', "--yes")
        assert r.exit_code == 0, r.stderr
        items = await conv.get_items()
        assert items[9] == {"role": "user", "content": "edited"} and len(items) == len(CONV) + 2
        assert cli(pg_dsn, "undo").exit_code == 0
        assert (await conv.get_items())[9]["content"] == "hello there"
        assert cli(pg_dsn, "undo").exit_code == 0
        assert await _pg_rows(pg_dsn) == before  # every row: the items and the session's row
        assert await conv.get_items() == CONV
    finally:
        await engine.dispose()


async def test_ctrl_c_stops_the_run_and_what_it_saved_stays_undoable(tmp_path, project):
    path = await _db(tmp_path)
    before = _all_rows(path)

    def items() -> int:
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT COUNT(*) FROM agent_messages WHERE session_id = 'conv'").fetchone()[0]
        finally:
            conn.close()

    code, out, err = ctrl_c_when(
        path,
        ["run", "conv", "--agent", f"{project / 'agent.py'}:looping", "--input", "go"],
        lambda: items() >= len(CONV) + 3,
    )
    assert code == 130, (out, err)
    saved = items() - len(CONV)
    assert 3 <= saved < 18  # the input, some turns' calls and outputs; not the 8 turns and the answer
    time.sleep(1.1)  # two more turns' time: the child is gone, nothing more comes
    assert items() - len(CONV) == saved
    assert f"interrupted: the run saved {saved} item(s), which stay (op " in err and "agentctl undo" in err
    assert len(out.splitlines()) == saved and out.splitlines()[0].startswith(
        f"item {len(CONV) + 1}  user  go"
    )
    ops = cli_json(path, "oplog")
    assert ops[0]["kind"] == "run" and ops[0]["summary"].endswith(": interrupted")
    assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before


@pytest.mark.parametrize("thread,branch", [("adv#retry", "retry"), ("adv", "main")])
def test_run_on_a_branch_of_an_advanced_session(tmp_path, project, thread, branch):
    """`run SESSION#BRANCH` runs the SDK's AdvancedSQLiteSession switched to the branch:
    the same items as the SDK's Runner on a copy, on that branch alone; undo gives every
    row back."""
    import asyncio

    from agents import Runner
    from agents.extensions.memory import AdvancedSQLiteSession

    from tests.formats.test_format_openai import _sdk_items, _two_branches

    path = str(tmp_path / "adv.db")
    main, retry = _two_branches(path)
    copy = str(tmp_path / "copy.db")
    shutil.copyfile(path, copy)
    before = _all_rows(path)
    r = _agentctl(path, "run", thread, "--agent", f"{project / 'agent.py'}:agent", "--input", "hello there")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert r.stdout.splitlines()[0].startswith("item 9  user  hello there")

    async def reference() -> dict:  # the SDK's own Runner on a copy
        ref = AdvancedSQLiteSession(session_id="adv", db_path=copy)
        await ref.switch_to_branch(branch)
        await Runner.run(_user_agent(project), "hello there", session=ref)
        out = {b: await ref.get_items(branch_id=b) for b in ("main", "retry")}
        ref.close()
        return out

    expect = asyncio.run(reference())
    assert _sdk_items(path) == expect
    was = {"main": main, "retry": retry}
    other = "main" if branch == "retry" else "retry"
    assert expect[other] == was[other] and expect[branch][:8] == was[branch] and len(expect[branch]) == 10
    log = cli_json(path, "log", thread)
    assert [m["thread_id"] for m in log] == [thread] * 10
    assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before


def test_edit_on_a_branch_of_an_advanced_session(tmp_path):
    """An item of one branch is edited in place (the SDK reads it so on that branch
    alone); an item branches share is refused (exit 2, nothing written)."""
    from tests.formats.test_format_openai import _sdk_items, _two_branches

    path = str(tmp_path / "adv.db")
    main, retry = _two_branches(path)
    before = _all_rows(path)
    r = cli(path, "edit", "adv#retry@3", "--set", 'content="edited"', "--yes")
    assert r.exit_code == 0, r.stderr
    assert _sdk_items(path) == {
        "main": main,
        "retry": retry[:2] + [{"role": "user", "content": "edited"}] + retry[3:],
    }
    assert cli(path, "undo").exit_code == 0
    assert _all_rows(path) == before
    r = cli(path, "edit", "adv#retry@2", "--set", 'content="shared"', "--yes")
    assert r.exit_code == 2 and "branches main, retry" in r.stderr and r.stderr.count("\n") == 1
    assert _all_rows(path) == before
