"""The TUI on the Agno sample (sample_db/agno.db, written by agno 3): the sessions as
threads, a team run's member run and a chat's fork in the detail views."""

from __future__ import annotations

import shutil

import pytest

from tests.support import agno_rig
from tests.support.rig import REPO
from tests.support.tui import settle, skip_idle_waits
from tests.tui.test_format_sdk_tui import SIZE, select_thread, view_text

pytest.importorskip("textual")

from agentctl.tui.app import AgentctlApp  # noqa: E402


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


async def test_tui_browses_the_agno_sample(tmp_path):

    path = tmp_path / "agno.db"
    shutil.copyfile(REPO / "sample_db" / "agno.db", path)
    app = AgentctlApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.threads.table.row_count == 4
        await select_thread(pilot, "team")
        assert app.selected.step == 1
        assert "It is Paris." in view_text(app, "messages-view")
        await pilot.press("3")
        await settle(pilot)
        tools = view_text(app, "tools-view")
        assert "member_runs" in tools and "Paris is the capital." in tools
        await select_thread(pilot, "chat")
        assert app.selected.step == 5
        await pilot.press("2")
        await settle(pilot)
        assert '"count": 2' in view_text(app, "state-view")


agno_db, agno_builds, agno2_python = agno_rig.agno_db, agno_rig.agno_builds, agno_rig.agno2_python


async def test_R_on_an_agno_session_asks_the_users_message_runs_the_agent_and_u_undoes(
    agno_db, tmp_path, monkeypatch
):
    """`R` runs the user's agent on from the session's end with the user's message (as
    `agentctl run chat --agent FILE.py:VAR --input TEXT`): its messages shown as they
    come, the new run selected; u takes it back."""
    pytest.importorskip("agno")
    from tests.formats.test_journal_agno import own_rows
    from tests.formats.test_run_agno import AGENTS
    from tests.tui.test_tui import press, thread_size
    from tests.tui.test_tui_edit_run import run_with_message

    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the user's file imports the tests' scripted model
    (tmp_path / "agents.py").write_text(AGENTS)
    db = agno_db("v3", "sqlite")
    before = own_rows(db.url)
    app = AgentctlApp(db.url, agent=f"{tmp_path / 'agents.py'}:agent")
    async with app.run_test(size=SIZE) as pilot:
        size = await run_with_message(pilot, app, "chat", "hello", "ran chat: 4 new message(s)")
        assert await thread_size(app, "chat") == size + 1
        assert app.selected.step == size + 1
        assert "counted" in view_text(app, "messages-view")
        await press(pilot, "u", "y")
        assert await thread_size(app, "chat") == size
    assert own_rows(db.url) == before


@pytest.fixture
def sample(tmp_path) -> str:
    path = tmp_path / "agno.db"
    shutil.copyfile(REPO / "sample_db" / "agno.db", path)
    return str(path)


def session_state(path: str, session: str) -> dict:
    """The session's state as agno reads it."""
    from agno.db.base import SessionType
    from agno.db.sqlite import SqliteDb

    return SqliteDb(db_file=path).get_session(session, SessionType.AGENT).session_data["session_state"]


async def at_head(pilot, thread: str, step: int) -> None:
    """The thread's head selected (at `step`), the checkpoint list focused."""
    await settle(pilot)
    await select_thread(pilot, thread)
    assert pilot.app.selected.step == step
    pilot.app.timeline.focus()


async def test_e_edits_the_session_state_and_u_undoes(sample):
    """`e` on a session's head: the editor takes a session_state key (a new one too), the
    write is agno's update_session_state's; u puts it back."""
    pytest.importorskip("agno")
    from textual.widgets import Input, TextArea

    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.edit import EditScreen
    from tests.tui.test_tui import press

    app = AgentctlApp(sample)
    async with app.run_test(size=SIZE) as pilot:
        await at_head(pilot, "chat", 5)
        await press(pilot, "e")
        editor = app.screen
        assert isinstance(editor, EditScreen)
        editor.query_one(Input).value = "count"
        await settle(pilot)
        editor.query_one(TextArea).text = "7"
        await settle(pilot)
        assert not editor.error and not editor.query_one("#ok").disabled, editor.error
        await press(pilot, "ctrl+s")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        assert session_state(sample, "chat") == {"count": 7}
        await press(pilot, "u", "y")
        assert session_state(sample, "chat") == {"count": 2}


async def test_search_jumps_to_an_agno_run_and_prune_keeps_the_last_runs(sample):
    """`/` finds a run's message; `p` (keep the last 2 runs) asks, deletes the older runs
    and u gives them back."""
    from textual.widgets import Input

    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.prompt import PruneScreen
    from agentctl.tui.screens.search import SearchScreen
    from tests.tui.test_tui import press, screen_text, thread_size

    app = AgentctlApp(sample)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        for ch in "zephyrine":
            await pilot.press(ch)
        await press(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, SearchScreen) and screen.hits
        await press(pilot, "enter")
        assert app.thread_id == "chat" and app.selected.step == 1
        assert "zephyrine" in view_text(app, "messages-view")
        await press(pilot, "p")
        assert isinstance(app.screen, PruneScreen)
        app.screen.query_one("#prune-param", Input).value = "2"
        await press(pilot, "enter")
        assert isinstance(app.screen, ConfirmScreen) and "delete 3, keep 2" in screen_text(app)
        await press(pilot, "y")
        assert await thread_size(app, "chat") == 2
        await press(pilot, "u", "y")
        assert await thread_size(app, "chat") == 5


async def test_served_read_only_refuses_every_write_on_agno(sample, monkeypatch):
    """As `agentctl serve` runs it (without --allow-writes): e, R and every write refused,
    saying why; nothing written."""
    from tests.tui.test_tui_edit_run import refuses_every_write

    before = open(sample, "rb").read()
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual_serve.web_driver:WebDriver")
    app = AgentctlApp(sample, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await at_head(pilot, "chat", 5)
        await refuses_every_write(pilot, app)
    assert open(sample, "rb").read() == before


async def test_c_compares_two_runs_of_a_session(sample):
    """m on one run, c on another: the compare view of the two runs (the fork run 5 and
    run 1 it went on from)."""
    from agentctl.tui.screens.compare import CompareScreen
    from tests.tui.test_tui import press, screen_text, to_step, until

    app = AgentctlApp(sample)
    async with app.run_test(size=SIZE) as pilot:
        await at_head(pilot, "chat", 5)
        await press(pilot, "m")
        await to_step(pilot, "chat", 1)
        await press(pilot, "c")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen), what="the compare view")
        assert "A has" in screen_text(app)
        await press(pilot, "escape")
        assert not isinstance(app.screen, CompareScreen)
