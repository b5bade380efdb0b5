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


async def test_R_resumes_a_crewai_checkpoint_then_compares_and_undoes(crewai_copy, crewai_files, crewai_python,
                                                                     monkeypatch, tmp_path):
    """`R` on a CrewAI checkpoint: no question (the checkpoint is resumed as it is), the
    confirmation, the run (crewai_child.py in the rig's python), the compare view; u
    undoes it."""
    from agentctl.tui.screens.compare import CompareScreen
    from agentctl.tui.screens.confirm import ConfirmScreen
    from tests.tui.test_tui import notices, press, until

    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path / "storage"))
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    app = AgentctlApp(db, agent=f"{crewairig.CREWAI_DIR / 'crewai_rig_flows.py'}:TripFlow", python=crewai_python)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "main")
        size = await app.source.db.count("main")
        app.timeline.focus()
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        await until(pilot, lambda: any(n.startswith("ran main: ") for n in notices(app)), timeout=120,
                    what="the run")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert await app.source.db.count("main") > size
        await press(pilot, "escape")
        await press(pilot, "u", "y")
        assert await app.source.db.count("main") == size


async def test_R_kicks_a_persisted_crewai_flow_off(crewai_copy, crewai_files, crewai_python, monkeypatch, tmp_path):
    """`R` on a @persist flow: its inputs asked (a JSON object; empty: none), then the
    flow kicked off again with its id; its new states in the list."""
    from textual.widgets import Input

    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.prompt import PromptScreen
    from tests.tui.test_tui import notices, press, screen_text, until

    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path / "storage"))
    _, w = crewai_files
    oslo = w["flows"][0]
    db = crewai_copy("flow_states.db")
    app = AgentctlApp(db, agent=f"{crewairig.CREWAI_DIR / 'crewai_rig_flows.py'}:PersistedTrip",
                      python=crewai_python)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, oslo)
        app.timeline.focus()
        await press(pilot, "R")
        assert isinstance(app.screen, PromptScreen) and "the flow's inputs" in screen_text(app)
        app.screen.query_one(Input).value = '{"note": "tui"}'
        await press(pilot, "enter")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        await until(pilot, lambda: any(n.startswith(f"ran {oslo}: 2 new state(s)") for n in notices(app)),
                    timeout=120, what="the run")
        head = await app.source.db.get_latest(oslo)
        assert head.state["note"] == "tui" and head.metadata.step == 6


@pytest.mark.parametrize("name,want", [
    ("checkpoints.db", ["main", "fork/", "report: report Paris"]),
    ("flow_states.db", ["2 threads", "book: "]),
    ("latest_kickoff_task_outputs.db", ["latest_kickoff", "answer 1 about zephyrine"]),
])
def test_serve_shows_each_crewai_store_in_a_browser(crewai_copy, name, want, tmp_path):
    """`agentctl serve` on each CrewAI store: its first screen (the threads, the head's
    summary) reaches a real browser, read-only."""
    from tests.tui.test_serve import serve_in_a_browser

    received, shot = serve_in_a_browser(crewai_copy(name), tmp_path, want)
    for text in want:
        assert text in received, text
    assert "READ-ONLY" in received and shot.stat().st_size > 10_000
