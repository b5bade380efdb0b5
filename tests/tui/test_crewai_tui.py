"""The TUI and `serve`'s app on CrewAI's three stores, files the real crewai wrote (the
CrewAI rig, tests/support/crewairig.py): threads, a checkpoint's messages and state, and
a write (a rewind through its confirm screen) on the checkpoints."""

from __future__ import annotations

import pytest

from agentctl.tui.app import AgentctlApp
from tests.support import crewairig
from tests.support.tui import settle, skip_idle_waits
from tests.tui.test_format_sdk_tui import SIZE, select_thread, view_text

crewai_python, crewai_files, crewai_copy = (
    crewairig.crewai_python,
    crewairig.crewai_files,
    crewairig.crewai_copy,
)


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


@pytest.mark.parametrize(
    "name,thread,step,message,state",
    [
        ("checkpoints.db", "main", 8, "report Paris zephyrine", '"checkpoint_state"'),
        ("flow_states.db", None, 4, None, '"city": "Oslo"'),
        (
            "latest_kickoff_task_outputs.db",
            "latest_kickoff",
            2,
            "answer 1 about zephyrine",
            '"task_index": 1',
        ),
    ],
)
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
        for tab in "34":  # the tools and metadata tabs draw too
            await pilot.press(tab)
            await settle(pilot)
        assert f"@{step}" in view_text(app, "detail-header")


async def _tui_to(pilot, thread: str, checkpoint_id: str) -> None:
    """Select the checkpoint in the thread's list (a fresh kickoff's line and the forks
    inside a thread are nested in it: the whole tree is searched)."""
    from agentctl.tui.widgets.timeline import CheckpointItem

    app = pilot.app
    await select_thread(pilot, thread)
    app.timeline.focus()
    todo = list(app.timeline.root.children)
    while todo:
        node = todo.pop(0)
        if isinstance(node.data, CheckpointItem) and node.data.meta.checkpoint_id == checkpoint_id:
            if node.parent is not None:
                node.parent.expand()
            app.timeline.move_to_node(node)
            await settle(pilot)
            assert app.selected.checkpoint_id == checkpoint_id
            return
        todo.extend(node.children)
    raise AssertionError(f"{checkpoint_id} is not in the list of {thread}")


async def test_tui_rewind_branch_undo_and_refusals_on_crewai(crewai_copy, crewai_files):
    """r, b and u on CrewAI's checkpoints through their dialogs (as the CLI's: a copy of
    the checkpoint as its branch's newest row; a branch whose first row holds it; every
    row back), p's dialog offering what a prune means here, merge refused; on the replay
    store every write refused."""
    from agentctl.tui.screens.prompt import PruneScreen
    from tests.formats.test_crewai_writes import dump
    from tests.tui.test_tui import notices, press

    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    target = w["paris"][1]
    app = AgentctlApp(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _tui_to(pilot, "main", target)
        await press(pilot, "r", "y")
        head = await app.source.db.get_latest("main")
        assert (
            head.metadata.parent_checkpoint_id == target and head.metadata.checkpoint_id != w["resumed"][-1]
        )
        await press(pilot, "u", "y")
        assert dump(db, "checkpoints") == before
        await _tui_to(pilot, "main", target)
        await press(pilot, "b", "t", "u", "i", "enter")
        first = await app.source.db.get_latest("tui")
        assert first is not None and first.metadata.parent_checkpoint_id == target
        await press(pilot, "u", "y")
        assert dump(db, "checkpoints") == before
        await _tui_to(pilot, "main", target)
        app.clear_notifications()
        await press(pilot, "M")
        assert any("does not support" in n and "merge" in n for n in notices(app)), notices(app)
        await press(pilot, "p")
        assert isinstance(app.screen, PruneScreen)
        from textual.widgets import Select

        select = app.screen.query_one("#prune-policy", Select)
        assert [v for _, v in select._options if v != Select.BLANK] == ["keep_last_n", "keep_age"]
        await press(pilot, "escape")
    assert dump(db, "checkpoints") == before
    replay = crewai_copy("latest_kickoff_task_outputs.db")
    rows = dump(replay, "latest_kickoff_task_outputs")
    app = AgentctlApp(replay)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "latest_kickoff")
        app.timeline.focus()
        for key, cap in (("r", "rewind"), ("b", "branch"), ("p", "prune")):
            app.clear_notifications()
            await press(pilot, key)
            assert any("does not support" in n and cap in n for n in notices(app)), (key, notices(app))
    assert dump(replay, "latest_kickoff_task_outputs") == rows


async def test_tui_search_diff_compare_and_edit_on_crewai(crewai_copy, crewai_files):
    """The other screens on CrewAI's stores: `/` finds a method's output and jumps to it,
    `m` + the Diff tab compares two checkpoints of different kickoffs, `c` opens the
    compare view of the two runs; on the flow states `e` writes a new row with the
    changed value (load_state's), u undoes it and ctrl+y redoes it."""
    from textual.widgets import Input, TextArea

    from agentctl.tui.screens.compare import CompareScreen
    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.edit import EditScreen
    from agentctl.tui.screens.search import SearchScreen
    from tests.formats.test_crewai_writes import dump
    from tests.tui.test_tui import press

    _, w = crewai_files
    app = AgentctlApp(crewai_copy("checkpoints.db"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        for ch in "booked Rome":
            await pilot.press(ch)
        await press(pilot, "enter")
        hits = app.screen.hits
        assert hits and {h.checkpoint_id for h in hits} >= {w["rome"][1]}
        await press(pilot, "enter")
        assert app.selected is not None and "booked Rome" in view_text(app, "messages-view")
        await _tui_to(pilot, "main", w["paris"][2])
        await press(pilot, "m")
        await _tui_to(pilot, "main", w["rome"][2])
        await press(pilot, "4")
        diff = view_text(app, "diff-view")
        assert "Paris" in diff and "Rome" in diff
        await press(pilot, "c")
        for _ in range(50):
            if isinstance(app.screen, CompareScreen):
                break
            await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        await press(pilot, "escape")
    oslo = w["flows"][0]
    db = crewai_copy("flow_states.db")
    before = dump(db, "flow_states")
    app = AgentctlApp(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, oslo)
        await press(pilot, "e")
        editor = app.screen
        assert isinstance(editor, EditScreen)
        editor.query_one(Input).value = "note"
        await settle(pilot)
        editor.query_one(TextArea).text = '"from the tui"'
        await settle(pilot)
        assert not editor.error, editor.error
        await press(pilot, "ctrl+s")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        for _ in range(50):
            head = await app.source.db.get_latest(oslo)
            if head.metadata.step == 5:
                break
            await settle(pilot)
        assert head.state["note"] == "from the tui" and head.state["city"] == "Oslo"
        after = dump(db, "flow_states")
        await press(pilot, "u", "y")
        assert dump(db, "flow_states") == before
        await press(pilot, "ctrl+y", "y")
        assert dump(db, "flow_states") == after


async def test_R_resumes_a_crewai_checkpoint_then_compares_and_undoes(
    crewai_copy, crewai_files, crewai_python, monkeypatch, tmp_path
):
    """`R` on a CrewAI checkpoint: no question (the checkpoint is resumed as it is), the
    confirmation, the run (crewai_child.py in the rig's python), the compare view; u
    undoes it."""
    from agentctl.tui.screens.compare import CompareScreen
    from agentctl.tui.screens.confirm import ConfirmScreen
    from tests.tui.test_tui import notices, press, until

    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path / "storage"))
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    app = AgentctlApp(
        db, agent=f"{crewairig.CREWAI_DIR / 'crewai_rig_flows.py'}:TripFlow", python=crewai_python
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "main")
        size = await app.source.db.count("main")
        app.timeline.focus()
        await press(pilot, "R")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        await until(
            pilot, lambda: any(n.startswith("ran main: ") for n in notices(app)), timeout=120, what="the run"
        )
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert await app.source.db.count("main") > size
        await press(pilot, "escape")
        await press(pilot, "u", "y")
        assert await app.source.db.count("main") == size


async def test_R_kicks_a_persisted_crewai_flow_off(
    crewai_copy, crewai_files, crewai_python, monkeypatch, tmp_path
):
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
    app = AgentctlApp(
        db, agent=f"{crewairig.CREWAI_DIR / 'crewai_rig_flows.py'}:PersistedTrip", python=crewai_python
    )
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
        await until(
            pilot,
            lambda: any(n.startswith(f"ran {oslo}: 2 new state(s)") for n in notices(app)),
            timeout=120,
            what="the run",
        )
        head = await app.source.db.get_latest(oslo)
        assert head.state["note"] == "tui" and head.metadata.step == 6


@pytest.mark.parametrize(
    "name,want",
    [
        ("checkpoints.db", ["main", "fork/", "report: report Paris"]),
        ("flow_states.db", ["2 threads", "book: "]),
        ("latest_kickoff_task_outputs.db", ["latest_kickoff", "answer 1 about zephyrine"]),
    ],
)
def test_serve_shows_each_crewai_store_in_a_browser(crewai_copy, name, want, tmp_path):
    """`agentctl serve` on each CrewAI store: its first screen (the threads, the head's
    summary) reaches a real browser, read-only."""
    from tests.tui.test_serve import serve_in_a_browser

    received, shot = serve_in_a_browser(crewai_copy(name), tmp_path, want)
    for text in want:
        assert text in received, text
    assert "READ-ONLY" in received and shot.stat().st_size > 10_000
