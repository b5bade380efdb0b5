"""The TUI on the SDK formats' bundled samples (Textual's Pilot): it reads them through
the Store methods alone, like any format."""

from __future__ import annotations

import io
import shutil

import pytest
from rich.console import Console
from textual.widgets import Static

from agentctl.tui.app import AgentctlApp
from tests.support.rig import REPO
from tests.support.tui import settle, skip_idle_waits

SAMPLES = REPO / "sample_db"
SIZE = (120, 36)


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


def view_text(app: AgentctlApp, widget_id: str) -> str:
    console = Console(width=100, file=io.StringIO(), color_system=None, record=True)
    console.print(app.query_one(f"#{widget_id}", Static).content)
    return console.export_text()


async def select_thread(pilot, thread: str) -> None:
    table = pilot.app.threads.table
    table.focus()
    table.move_cursor(row=table.get_row_index(thread))
    await settle(pilot)
    assert pilot.app.thread_id == thread


@pytest.mark.parametrize("name", ["openai_agents.db", "adk.db"])
async def test_tui_browses_an_sdk_sample(tmp_path, name):
    pytest.importorskip("textual")
    path = tmp_path / name
    shutil.copyfile(SAMPLES / name, path)
    app = AgentctlApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if name == "adk.db":
            assert app.threads.table.row_count == 2
            await select_thread(pilot, "trip-planner/alice/s-1")
            assert app.selected.step == 7
            assert "Your card was declined." in view_text(app, "messages-view")
            await pilot.press("2")
            await settle(pilot)
            state = view_text(app, "state-view")
            assert '"booking": "failed"' in state and '"app:searches": 2' in state
        else:
            assert app.threads.table.row_count == 4  # planner-3's branch museums: a thread
            await select_thread(pilot, "weather-1")
            assert app.selected.step == 10
            assert "light rain" in view_text(app, "messages-view")
            await pilot.press("3")
            await settle(pilot)
            assert "get_weather" in view_text(app, "tools-view")


async def test_tui_e_adds_a_new_key_to_an_adk_state(tmp_path):
    """Issue 32.10 in the TUI: ADK's state is a free mapping, so the editor (`e`) takes
    a key that is not there yet, and the write adds it (an event with that delta)."""
    pytest.importorskip("textual")
    from textual.widgets import Input, TextArea

    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.edit import EditScreen

    path = tmp_path / "adk.db"
    shutil.copyfile(SAMPLES / "adk.db", path)
    app = AgentctlApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "trip-planner/alice/s-1")
        await pilot.press("e")
        await settle(pilot)
        editor = app.screen
        assert isinstance(editor, EditScreen)
        editor.query_one(Input).value = "user:seat"
        await settle(pilot)
        editor.query_one(TextArea).text = '"aisle"'
        await settle(pilot)
        assert not editor.error and not editor.query_one("#ok").disabled, editor.error
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        for _ in range(50):
            await settle(pilot)
            head = await app.source.db.get_latest("trip-planner/alice/s-1")
            if head.metadata.step == 8:
                break
        assert head.state["user:seat"] == "aisle"


async def test_tui_shows_an_advanced_sessions_branch_as_a_thread(tmp_path):
    """The sample's AdvancedSQLiteSession planner-3 has a branch museums (sharing its
    first turn): a thread of its own in the threads table, its transcript the branch's;
    planner-3's timeline shows it parting at the turn's last item."""
    pytest.importorskip("textual")
    from agentctl.tui.widgets.timeline import BranchItem, CheckpointItem

    path = tmp_path / "openai_agents.db"
    shutil.copyfile(SAMPLES / "openai_agents.db", path)
    app = AgentctlApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "planner-3#museums")
        assert app.selected.step == 4
        assert "planner-3#museums@4" in view_text(app, "detail-header")
        text = view_text(app, "messages-view")
        assert "Add museums instead." in text and "Make it cheaper." not in text
        items = [c for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]
        app.timeline.focus()
        app.timeline.move_to_node(next(c for c in items if c.data.meta.step == 1))  # shared with planner-3
        await settle(pilot)
        assert app.selected.step == 1 and "planner-3#museums@1" in view_text(app, "detail-header")
        await select_thread(pilot, "planner-3")
        nodes = [c for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]
        point = next(c for c in nodes if c.data.meta.step == 2)
        assert [b.data.thread_id for b in point.children if isinstance(b.data, BranchItem)] == [
            "planner-3#museums"
        ]
