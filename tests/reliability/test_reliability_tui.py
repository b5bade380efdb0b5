"""Terminal safety in the TUI: the same hostile database text as
test_reliability_terminal.py, looked at in every pane, tab and modal through Textual's
Pilot; the rendered screen (every cell, with its styles) never carries an escape
sequence, a control character, a hyperlink or markup taken from the data."""

from __future__ import annotations

import io
import json

from rich.console import Console

from agentctl.tui.app import AgentctlApp
from agentctl.tui.screens.confirm import ConfirmScreen  # noqa: E402
from agentctl.tui.screens.search import SearchScreen  # noqa: E402
from tests.reliability.test_reliability_terminal import EVIL_THREAD, FORBIDDEN, PLAIN, make_evil
from tests.support.sampledb import cli
from tests.tui.test_tui import SIZE, press, select_thread, settle


def screen(app: AgentctlApp) -> tuple[str, list[str]]:
    """(the text of every cell, the links in their styles), from the segments that
    Textual sends to the terminal for the whole screen."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        legacy_windows=False,
        safe_box=False,
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    segments = [seg for seg in console.render(update) if not seg.control]
    return (
        "".join(seg.text for seg in segments),
        [seg.style.link for seg in segments if seg.style is not None and seg.style.link],
    )


def assert_screen_inert(app: AgentctlApp, where: str) -> str:
    text, links = screen(app)
    for bad in FORBIDDEN:
        assert bad not in text, (where, repr(bad))
    assert links == [], (where, links)  # no [link=...] from the data became a hyperlink
    return text


async def test_tui_shows_hostile_text_inert(tmp_path):
    # SQLite only: what reaches the screen does not depend on the backend (the CLI's
    # test runs both), and each screen takes a while to settle.
    evil_db = make_evil(str(tmp_path / "evil.db"))
    branch = [
        t["thread_id"]
        for t in json.loads(cli(evil_db, "threads", "list", "--json").stdout)
        if t["thread_id"].startswith(EVIL_THREAD + "-branch-")
    ][0]
    app = AgentctlApp(evil_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = assert_screen_inert(app, "first screen")
        for thread, key, tabs in (
            (EVIL_THREAD, "end", "1234"),
            (EVIL_THREAD, "up", "14"),
            (branch, "end", "4"),
        ):
            await select_thread(pilot, thread)
            app.timeline.focus()
            await press(pilot, key)
            for tab in tabs:
                await press(pilot, tab)
                seen += assert_screen_inert(app, f"{thread} {key} tab {tab}")
        # the markup is shown as text, the escapes spelled out
        assert "[bold red]loud[/bold red]" in seen and "[link=http://z.example]" in seen
        assert "\\e[31mRED" in seen or "\\u001b[31mRED" in seen

        # a diff against a marked checkpoint of another thread
        await select_thread(pilot, PLAIN)
        await press(pilot, "m")
        await select_thread(pilot, EVIL_THREAD)
        await press(pilot, "4")
        assert_screen_inert(app, "diff with the mark")

        # search results
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        for ch in "loud":
            await pilot.press(ch)
        await press(pilot, "enter")
        assert_screen_inert(app, "search results")
        await press(pilot, "escape")

        # the plan shown before a write
        await select_thread(pilot, EVIL_THREAD)
        app.timeline.focus()
        await press(pilot, "end", "up", "R")
        if isinstance(app.screen, ConfirmScreen):
            assert_screen_inert(app, "rewind confirmation")
            await press(pilot, "escape")
