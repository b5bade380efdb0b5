"""The TUI and `serve`'s app on CrewAI's three stores, files the real crewai wrote (the
CrewAI rig, tests/support/crewairig.py): threads, a checkpoint's messages and state, and
a write (a rewind through its confirm screen) on the checkpoints."""

from __future__ import annotations

import pytest

from agentctl.tui.app import AgentctlApp
from tests.support import crewairig
from tests.support.tui import settle, skip_idle_waits
from tests.tui.test_format_sdk_tui import SIZE, select_thread, view_text

crewai_python, crewai_files, crewai_copy = crewairig.crewai_python, crewairig.crewai_files, crewairig.crewai_copy


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


@pytest.mark.parametrize("name,thread,step,message,state", [
    ("checkpoints.db", "main", 8, "report Paris zephyrine", '"checkpoint_state"'),
    ("flow_states.db", None, 4, None, '"city": "Oslo"'),
    ("latest_kickoff_task_outputs.db", "latest_kickoff", 2, "answer 1 about zephyrine", '"task_index": 1'),
])
async def test_tui_browses_crewai_stores(crewai_copy, crewai_files, name, thread, step, message, state):
    _, w = crewai_files
    app = AgentctlApp(crewai_copy(name))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, thread or w["flows"][0])
        assert app.selected.step == step
        if message:
            assert message in view_text(app, "messages-view")
        await pilot.press("2")
        await settle(pilot)
        assert state in view_text(app, "state-view")
