"""The TUI's debugging loop (issue 21): `e` edits a value of the selected checkpoint's
state (JSON checked as it is typed, the diff, the write, undo), `R` runs the user's agent
from a checkpoint with its checkpoints shown live and ends on the compare view, `c` / the
palette compares any two checkpoints, and a served UI without --allow-writes refuses them."""

from __future__ import annotations

import json
import shutil

import pytest
from textual.widgets import Button, Input, Static, TextArea

from agentctl.tui.app import AgentctlApp
from agentctl.tui.screens.compare import CompareScreen
from agentctl.tui.screens.confirm import ConfirmScreen
from agentctl.tui.screens.edit import EditScreen
from tests.support import buildonce, noderig, sampledb
from tests.support.buildonce import built
from tests.support.rig import SAMPLE_DB
from tests.support.tui import settle, skip_idle_waits
from tests.tui.test_tui import (
    SIZE,
    notices,
    plain,
    press,
    screen_text,
    select_thread,
    thread_size,
    to_step,
    until,
)


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


# the sample on SQLite and on Postgres, a private writable copy per test
sample_url = sampledb.sample_url
node_modules = noderig.node_modules  # the fixture: the Node rig (LangGraph.js), for the JS story
run_shared = buildonce.run_shared  # the fixture: the run's folder its workers share (built once)


@pytest.fixture
def sample_sqlite(tmp_path) -> str:
    dest = tmp_path / "sample.db"
    shutil.copyfile(SAMPLE_DB, dest)
    return str(dest)


async def head_state(app: AgentctlApp, thread: str) -> dict:
    metas = await app.source.db.read_thread(thread, limit=1, descending=True)
    cp = await app.source.db.get(metas[0].checkpoint_id)
    return cp.state


def editor_state(app) -> tuple[str, bool]:
    screen = app.screen
    assert isinstance(screen, EditScreen)
    return plain(screen.query_one("#edit-error", Static).content).strip(), screen.query_one(
        "#ok", Button
    ).disabled


# ---- e: edit a state value -------------------------------------------------------------


async def test_e_edits_a_state_value_shows_it_and_undo_restores(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        size = await thread_size(app, "coder-add-cli-flag")
        await press(pilot, "e")
        assert isinstance(app.screen, EditScreen)
        editor = app.screen
        # the key path picks the value; the editor holds it as JSON
        editor.query_one(Input).value = "last_test.failed"
        await settle(pilot)
        area = editor.query_one(TextArea)
        assert json.loads(area.text) == 0
        # not JSON: an error line under the editor, Save disabled (ctrl+s too)
        area.text = "{oops"
        await settle(pilot)
        error, disabled = editor_state(app)
        assert error.startswith("not JSON") and disabled
        await press(pilot, "ctrl+s")
        assert app.screen is editor
        # a key that is not there: said as well
        editor.query_one(Input).value = "nosuchkey"
        area.text = "1"
        await settle(pilot)
        error, disabled = editor_state(app)
        assert "the state has no key 'nosuchkey'" in error and disabled
        editor.query_one(Input).value = "last_test.failed"
        await settle(pilot)
        area.text = "3"
        await settle(pilot)
        assert editor_state(app) == ("", False)
        await press(pilot, "ctrl+s")
        # the diff, as `edit --dry-run` shows it, before anything is written
        assert isinstance(app.screen, ConfirmScreen)
        text = screen_text(app)
        assert "last_test" in text and "failed" in text and "changed" in text
        assert await thread_size(app, "coder-add-cli-flag") == size
        await press(pilot, "y")
        await until(pilot, lambda: any("(u undoes)" in n for n in notices(app)), what="the edit")
        await settle(pilot)
        # a new head holding the edited value, shown selected in the tree
        assert await thread_size(app, "coder-add-cli-flag") == size + 1
        state = await head_state(app, "coder-add-cli-flag")
        assert state["last_test"] == {"passed": 12, "failed": 3}
        assert app.selected.checkpoint_id == app.timeline.head_id()
        assert '"failed": 3' in plain(app.query_one("#state-view", Static).content)

        await press(pilot, "u")
        assert isinstance(app.screen, ConfirmScreen) and "edit" in screen_text(app)
        await press(pilot, "y")
        await settle(pilot)
        assert await thread_size(app, "coder-add-cli-flag") == size
        assert (await head_state(app, "coder-add-cli-flag"))["last_test"]["failed"] == 0


async def test_e_cancel_and_unchanged_value_write_nothing(sample_sqlite):
    before = open(sample_sqlite, "rb").read()
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        await press(pilot, "e")
        assert isinstance(app.screen, EditScreen)
        assert app.screen.query_one(Input).value == ""  # the whole state to start with
        await press(pilot, "ctrl+s")  # as it was
        assert "the value is as it was: nothing to edit" in notices(app)
        await press(pilot, "e", "escape")
        assert "edit cancelled: nothing changed" in notices(app)
    assert open(sample_sqlite, "rb").read() == before


async def test_e_opens_on_the_key_and_fits_80x24(sample_sqlite):
    """Typing the key as the README says goes into the key box (not into the value box,
    prefilled with the whole state: `plan.next_city{`); at 80x24 Save, Cancel and their
    keys are in view."""
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        await press(pilot, "e")
        editor = app.screen
        assert isinstance(editor, EditScreen)
        await pilot.press(*"last_test.failed")
        await settle(pilot)
        assert editor.query_one(Input).value == "last_test.failed"
        assert json.loads(editor.query_one(TextArea).text) == 0
        inside = editor.query_one("#dialog").content_region  # in view: not cut off by the dialog
        for widget in ("#ok", "#cancel", "#dialog-keys"):
            region = editor.query_one(widget).region
            assert region.height >= 1 and inside.contains_region(region), (widget, region, inside)
        assert "ctrl+s: save" in screen_text(app) and "escape: cancel" in screen_text(app)
        await press(pilot, "enter")  # to the value, selected: typing replaces it
        await pilot.press("3")
        await settle(pilot)
        assert editor.query_one(TextArea).text == "3" and editor_state(app) == ("", False)


# ---- c / the palette: compare two checkpoints ------------------------------------------


async def test_compare_with_the_marked_checkpoint_from_the_palette(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert any("mark the other run's checkpoint with m first" in n for n in notices(app))
        await to_step(pilot, "coder-add-cli-flag", 3)
        await press(pilot, "m")
        await to_step(pilot, "coder-add-cli-flag", 6)
        from textual.command import CommandList, CommandPalette

        await press(pilot, "ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        for ch in "Compare":
            await pilot.press(ch)
        results = app.screen.query_one(CommandList)
        await until(
            pilot,
            lambda: results.option_count > 0 and "Compare with" in str(results.get_option_at_index(0).prompt),
            what="Compare with…",
        )
        await press(pilot, "enter")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen), what="the compare view")
        text = screen_text(app)
        # one run is a prefix of the other: they do not part, B has 3 more steps
        assert "the runs do not part" in text and "A has 0 more step(s), B 3" in text
        await press(pilot, "escape")
        assert not isinstance(app.screen, CompareScreen)


# ---- R: run the user's agent from a checkpoint, then compare ---------------------------


def _story_built(folder, project_name: str, run) -> None:
    """The story project `project_name` (of sample_db) in `folder`, with its failed run
    (`run(db, config)` gives agentctl's result), the database's WAL folded in."""
    import sqlite3

    from tests.support.rig import REPO

    project = folder / project_name
    shutil.copytree(
        REPO / "sample_db" / project_name,
        project,
        ignore=shutil.ignore_patterns("story.db*", "node_modules", "package-lock.json"),
    )
    db, config = str(project / "run.db"), str(project / "langgraph.json")
    r = run(project, db, config)
    assert r.exit_code == 1 and "no flights to Atlantis" in r.stderr, r.stderr
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _story_copy(built_dir, project_name: str, tmp_path) -> tuple[str, str]:
    """A test's copy of a story project built once per run (its database with it)."""
    project = tmp_path / project_name
    shutil.copytree(built_dir / project_name, project, symlinks=True)
    return str(project / "run.db"), str(project / "langgraph.json")


@pytest.fixture
def story(run_shared, tmp_path):
    """The README's story project (sample_db/story) with its failed run: `book` raised
    (no flights to Atlantis) two steps after `plan` set the bad value (run once per test
    run by agentctl, copied per test)."""
    pytest.importorskip("langgraph")

    def run(project, db, config):
        return langgraph_project(project, "trip", '{"request": "somewhere new, 3 nights"}')[2]

    built_dir = built(run_shared, "tui-story", lambda d: _story_built(d, "story", run))
    return _story_copy(built_dir, "story", tmp_path)


@pytest.fixture(params=["python", "js"])
def any_story(request, run_shared, tmp_path):
    """The story's failed run, of the Python project (sample_db/story) and of the
    LangGraph.js one (sample_db/story-js, its packages the Node rig's; run in node)."""
    if request.param == "python":
        return request.getfixturevalue("story")
    from tests.support.sampledb import cli

    modules = request.getfixturevalue("node_modules")  # skips without node

    def run(project, db, config):
        (project / "node_modules").symlink_to(modules)
        return cli(db, "run", "trip", "--input", '{"request": "somewhere new, 3 nights"}', "--config", config)

    built_dir = built(run_shared, "tui-story-js", lambda d: _story_built(d, "story-js", run))
    return _story_copy(built_dir, "story-js", tmp_path)


def langgraph_project(project, thread: str, input: str, graph: str | None = None):
    """A LangGraph SQLite database in `project` (with `graph`: its graph.py and a
    langgraph.json naming it), and the result of `agentctl run THREAD --input INPUT` on it."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from tests.support.sampledb import cli

    if graph is not None:
        (project / "graph.py").write_text(graph)
        (project / "langgraph.json").write_text('{"graphs": {"g": "./graph.py:graph"}}')
    db = str(project / "run.db")
    conn = sqlite3.connect(db)
    SqliteSaver(conn).setup()
    conn.close()
    config = str(project / "langgraph.json")
    return db, config, cli(db, "run", thread, "--input", input, "--config", config)


async def test_e_then_R_on_langgraph_runs_live_and_ends_on_the_compare_view(any_story):
    db, config = any_story
    app = AgentctlApp(db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "trip")
        size = await thread_size(app, "trip")
        await to_step(pilot, "trip", 1)  # where `plan` set the bad city
        # e: LangGraph writes the update in the user's interpreter (a fork of step 1)
        await press(pilot, "e")
        editor = app.screen
        assert isinstance(editor, EditScreen)
        editor.query_one(Input).value = "plan.next_city"
        await settle(pilot)
        assert json.loads(editor.query_one(TextArea).text) == "Atlantis"
        editor.query_one(TextArea).text = '"Paris"'
        await settle(pilot)
        await press(pilot, "ctrl+s")
        assert isinstance(app.screen, ConfirmScreen) and "Atlantis" in screen_text(app)
        await press(pilot, "y")
        await until(
            pilot,
            lambda: any(n.startswith("edited trip: new checkpoint") for n in notices(app)),
            timeout=60,
            what="the edit",
        )
        await settle(pilot)
        assert await thread_size(app, "trip") == size + 1
        edited = app.selected
        assert (
            edited.step == 2
            and (await app.source.db.get(edited.checkpoint_id)).state["plan"]["next_city"] == "Paris"
        )
        # the list (issue 33.2): the update right after its parent, step 1, marked as the
        # branch point; the run it left hangs under step 1 as a fork
        from agentctl.tui.widgets.timeline import CheckpointItem, ForkItem

        def top():
            return [c for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]

        assert top()[-1].data.meta.checkpoint_id == edited.checkpoint_id and "head" in top()[-1].data.labels
        assert top()[-2].data.meta.step == 1 and "branch-point" in top()[-2].data.labels
        assert [c.data.count for c in top()[-2].children if isinstance(c.data, ForkItem)] == [size - 3]

        # R from the edited checkpoint: the graph goes on by itself (next: search)
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen) and "trip" in screen_text(app)
        await press(pilot, "y")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen), timeout=90, what="the compare view")
        await settle(pilot)
        compare = app.screen
        # the new run parted from the failed one at the edit's step
        assert compare.result.first_divergent_step == 2
        assert compare.result.b_at == edited.checkpoint_id
        text = screen_text(app)
        assert "parted at step 2" in text and "next_city" in text and "Paris" in text
        assert any(n.startswith("ran trip: 2 new checkpoint(s)") for n in notices(app))
        # the run's checkpoints are in the tree, its last one selected
        assert await thread_size(app, "trip") == size + 3
        assert [c.data.meta.step for c in top()][-4:] == [1, 2, 3, 4]  # the run after the update
        assert top()[-3].data.meta.checkpoint_id == edited.checkpoint_id
        head = (await app.source.db.read_thread("trip", limit=1, descending=True))[0]
        assert app.selected.checkpoint_id == head.checkpoint_id
        assert "booked AF1234" in json.dumps((await app.source.db.get(head.checkpoint_id)).state)
        await press(pilot, "g")  # to B's checkpoint where the runs parted: the edit
        await until(pilot, lambda: app.selected.checkpoint_id == edited.checkpoint_id, what="B's step")
        assert not isinstance(app.screen, CompareScreen)

        # undo the run, then the edit: as after the failed run
        await press(pilot, "u")
        assert "run trip" in screen_text(app)
        await press(pilot, "y")
        await press(pilot, "u", "y")
        assert await thread_size(app, "trip") == size


async def test_R_on_a_format_without_a_runtime_runs_nothing(sample_sqlite):
    before = open(sample_sqlite, "rb").read()
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        await press(pilot, "R")
        assert not isinstance(app.screen, ConfirmScreen)
        # `formats` lists RUN for the formats agentctl runs agents of: the TUI asks the capability
        assert any("the agentos format does not support run" in n for n in notices(app)), notices(app)
    assert open(sample_sqlite, "rb").read() == before


# ---- agentctl serve: nothing run or written without --allow-writes -----------------------


async def test_served_without_allow_writes_refuses_e_R_and_every_write(story, monkeypatch):
    """`agentctl serve` starts `agentctl tui --read-only` unless --allow-writes
    (tests/tui/test_serve.py checks the command); in it e, R and every write are refused,
    saying why, and nothing is run or written."""
    db, config = story
    before = open(db, "rb").read()
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual_serve.web_driver:WebDriver")
    app = AgentctlApp(db, readonly=True, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "trip", 1)
        await refuses_every_write(pilot, app)
    assert open(db, "rb").read() == before


async def refuses_every_write(pilot, app) -> None:
    """In a read-only UI (served without --allow-writes) e, R and every write's key are
    refused on the selected checkpoint, each saying why."""
    keys = {"e": "edit", "R": "run", "r": "rewind", "b": "branch", "M": "merge", "p": "prune", "u": "undo"}
    for key in keys:
        await press(pilot, key)
        assert app.screen is app.main, key
    said = notices(app)
    for action in keys.values():
        assert f"read-only mode: {action} is disabled (agentctl serve without --allow-writes)" in said, said


def test_serve_passes_the_agent_to_the_ui(monkeypatch):
    pytest.importorskip("textual_serve")
    import textual_serve.server

    from tests.support.sampledb import cli

    started = []

    class FakeServer:
        def __init__(self, command, host, port, title):
            started.append(command)

        def serve(self):
            pass

    monkeypatch.setattr(textual_serve.server, "Server", FakeServer)
    r = cli(str(SAMPLE_DB), "serve", "--agent", "trip", "--config", "my dir/langgraph.json")
    assert r.exit_code == 0, r.stderr
    assert started[-1].endswith("-m agentctl tui --read-only --agent trip --config 'my dir/langgraph.json'")


SLOW_GRAPH = """
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class S(TypedDict, total=False):
    n: int
    slow: bool


def count(state: S) -> S:
    return {"n": state.get("n", 0) + 1}


def wait(state: S) -> S:
    if state.get("slow"):
        time.sleep(60)
    return {"n": state["n"] + 1}


builder = StateGraph(S)
builder.add_node("count", count)
builder.add_node("wait", wait)
builder.add_edge(START, "count")
builder.add_edge("count", "wait")
builder.add_edge("wait", END)
graph = builder
"""


async def test_R_asks_an_input_where_the_graph_ended_and_escape_stops_the_run(tmp_path):
    pytest.importorskip("langgraph")
    from agentctl.tui.screens.prompt import PromptScreen
    from agentctl.tui.screens.run import RunScreen

    db, config, r = langgraph_project(tmp_path, "t", '{"n": 0}', SLOW_GRAPH)
    assert r.exit_code == 0, r.stderr
    app = AgentctlApp(db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "t")
        size = await thread_size(app, "t")
        app.timeline.focus()
        await press(pilot, "R")  # at the head the graph has ended: it asks for an input
        assert isinstance(app.screen, PromptScreen) and "The graph has ended here" in screen_text(app)
        app.screen.query_one(Input).value = "{not json"
        await press(pilot, "enter")
        assert isinstance(app.screen, PromptScreen)  # refused, said
        assert any(n.startswith("not JSON") for n in notices(app))
        app.screen.query_one(Input).value = '{"n": 10, "slow": true}'
        await press(pilot, "enter")
        assert isinstance(app.screen, ConfirmScreen) and '"slow": true' in screen_text(app)
        await press(pilot, "y")
        # the run goes: its first checkpoints are listed, and in the tree
        await until(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and len(app.screen.lines) >= 2,
            timeout=60,
            what="the run's first checkpoints",
        )
        await until(
            pilot,
            lambda: app.timeline.states[app.timeline.root.id].total >= size + 2,
            timeout=20,
            what="the tree showing them",
        )
        await pilot.press("escape")  # stop it: the child is stopped, what it saved stays
        await until(
            pilot,
            lambda: any(n.startswith("stopped: the run saved") for n in notices(app)),
            timeout=30,
            what="the run stopped",
        )
        said = next(n for n in notices(app) if n.startswith("stopped: the run saved"))
        assert "which stay (u undoes)" in said
        assert app.main.running is None
        await settle(pilot)
        assert await thread_size(app, "t") > size
        head = (await app.source.db.read_thread("t", limit=1, descending=True))[0]
        assert (await app.source.db.get(head.checkpoint_id)).state[
            "n"
        ] == 11  # `count` ran, `wait` did not end


async def run_with_message(pilot, app, thread: str, text: str, said: str, timeout: float = 90) -> int:
    """`R` on `thread`'s head in a session format (an SDK's, Agno's): the user's message
    asked and given, the run confirmed and waited for (its notice starts with `said`);
    the thread's size before the run."""
    from agentctl.tui.screens.prompt import PromptScreen

    await settle(pilot)
    await select_thread(pilot, thread)
    size = await thread_size(app, thread)
    app.timeline.focus()
    await press(pilot, "R")
    assert isinstance(app.screen, PromptScreen) and "the user's message" in screen_text(app)
    app.screen.query_one(Input).value = text
    await press(pilot, "enter")
    assert isinstance(app.screen, ConfirmScreen)
    await press(pilot, "y")
    await until(pilot, lambda: any(n.startswith(said) for n in notices(app)), timeout=timeout, what="the run")
    await settle(pilot)
    return size


async def test_R_on_an_openai_session_asks_the_users_message_and_runs_the_agent(tmp_path):
    """An SDK's session runs on from its end with the user's message (as `agentctl run
    conv --input TEXT`); no compare view (the SDKs have no replay from a step)."""
    pytest.importorskip("agents")
    from tests.formats.test_run_openai import AGENT, _db

    (tmp_path / "agent.py").write_text(AGENT)
    db = await _db(tmp_path)
    app = AgentctlApp(db, agent=f"{tmp_path / 'agent.py'}:agent")
    async with app.run_test(size=SIZE) as pilot:
        size = await run_with_message(pilot, app, "conv", "hello", "ran conv: 2 new item(s)")
        assert not isinstance(app.screen, CompareScreen)
        assert await thread_size(app, "conv") == size + 2
        head = (await app.source.db.read_thread("conv", limit=1, descending=True))[0]
        assert "olleh" in json.dumps((await app.source.db.get(head.checkpoint_id)).messages)
        await press(pilot, "u", "y")
        assert await thread_size(app, "conv") == size


APPROVAL_GRAPH = """
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class S(TypedDict, total=False):
    item: str
    approved: object


def ask(state: S) -> S:
    return {"approved": interrupt({"question": "approve " + state["item"] + "?\\nreply with JSON", "by": "ops"})}


builder = StateGraph(S)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
graph = builder
"""


async def test_R_at_an_interrupt_asks_the_resume_value(tmp_path):
    pytest.importorskip("langgraph")
    from agentctl.tui.screens.prompt import PromptScreen

    db, config, r = langgraph_project(tmp_path, "t", '{"item": "refund"}', APPROVAL_GRAPH)
    assert r.exit_code == 0 and "waiting at ask" in r.stdout, (r.stdout, r.stderr)
    app = AgentctlApp(db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "t")
        app.timeline.focus()
        await press(pilot, "R")
        assert isinstance(app.screen, PromptScreen)
        text = screen_text(app)
        assert "waiting at an interrupt" in text and "approve refund?" in text
        # the question, readable: its own lines, not the write's raw JSON
        lines = [line.strip(" │┃") for line in text.splitlines()]
        assert "question: approve refund?" in lines and "reply with JSON" in lines and "by: ops" in lines
        assert "task_id" not in text and "__type__" not in text and "\\n" not in text
        app.screen.query_one(Input).value = '{"ok": true}'
        await press(pilot, "enter")
        assert isinstance(app.screen, ConfirmScreen) and "with resume" in screen_text(app)
        await press(pilot, "y")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen), timeout=60, what="the compare view")
        head = (await app.source.db.read_thread("t", limit=1, descending=True))[0]
        assert (await app.source.db.get(head.checkpoint_id)).state["approved"] == {"ok": True}
        assert any(n.startswith("ran t: 1 new checkpoint(s)") for n in notices(app)), notices(app)


async def test_R_on_an_async_graph_with_run_options_and_an_error_said_once(tmp_path):
    """R runs an async graph (LangGraph's async API in the child); `o` on the run's
    confirmation sets the run's options as `run` takes them (--context, --configurable);
    the user's exception is said in one notice, not two."""
    pytest.importorskip("langgraph")
    from agentctl.tui.screens.prompt import PromptScreen
    from tests.formats.test_run_apps import APPS
    from tests.support.sampledb import cli

    (tmp_path / "graph.py").write_text((APPS / "asyncctx" / "graph.py").read_text())
    db, config, r = langgraph_project(tmp_path, "t", '{"n": 0}', None)
    (tmp_path / "langgraph.json").write_text('{"graphs": {"g": "./graph.py:graph"}}')
    r = cli(db, "run", "t", "--input", '{"n": 0}', "--config", config, "--context", '{"limit": 1}')
    assert r.exit_code == 0, r.stderr
    app = AgentctlApp(db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "t")
        for user, want in (('"mallory"', "your agent raised PermissionError"), ('"ada"', "ran t: ")):
            if isinstance(app.screen, CompareScreen):  # where the failed run parted
                await press(pilot, "escape")
            app.timeline.focus()
            await press(pilot, "R")
            if isinstance(app.screen, PromptScreen):  # at the head the graph has ended: an input
                app.screen.query_one(Input).value = '{"n": 0}'
                await press(pilot, "enter")
            assert isinstance(app.screen, ConfirmScreen) and "o: options" in screen_text(app)
            await press(pilot, "o")
            assert isinstance(app.screen, PromptScreen) and "--configurable" in screen_text(app)
            app.screen.query_one(Input).value = "--context '{}' --configurable"
            await press(pilot, "enter")
            assert isinstance(app.screen, PromptScreen)  # refused, said
            app.screen.query_one(
                Input
            ).value = f'--context \'{{"greeting": "yo", "limit": 2}}\' --configurable user_id=\'{user}\''
            await press(pilot, "enter")
            assert isinstance(app.screen, ConfirmScreen) and "--configurable user_id=" in screen_text(app)
            await press(pilot, "y")
            await until(
                pilot, lambda want=want: any(want in n for n in notices(app)), timeout=60, what="the run"
            )
            await settle(pilot)
            assert sum(1 for n in notices(app) if "PermissionError" in n) == 1, notices(app)
        head = (await app.source.db.read_thread("t", limit=1, descending=True))[0]
        assert (await app.source.db.get(head.checkpoint_id)).state["log"][-2:] == ["yo ada 0", "yo ada 1"]
