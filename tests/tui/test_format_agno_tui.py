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


agno_db, agno_builds, agno2_python = agno_rig.agno_db, agno_rig.agno_builds, agno_rig.agno2_python


async def test_R_on_an_agno_session_asks_the_users_message_runs_the_agent_and_u_undoes(agno_db, tmp_path,
                                                                                        monkeypatch):
    """`R` runs the user's agent on from the session's end with the user's message (as
    `agentctl run chat --agent FILE.py:VAR --input TEXT`): its messages shown as they
    come, the new run selected; u takes it back."""
    pytest.importorskip("agno")
    from agentctl.tui.app import AgentctlApp
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
