"""The TUI on the Agno sample (sample_db/agno.db, written by agno 3): the sessions as
threads, a team run's member run and a chat's fork in the detail views."""

from __future__ import annotations

import shutil

import pytest

from tests.support.rig import REPO
from tests.support.tui import settle, skip_idle_waits
from tests.tui.test_format_sdk_tui import SIZE, select_thread, view_text

pytest.importorskip("textual")


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


async def test_tui_browses_the_agno_sample(tmp_path):
    from agentctl.tui.app import AgentctlApp

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
