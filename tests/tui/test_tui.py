"""The TUI, driven like a user would (Textual's Pilot), on the sample database, on
SQLite and on Postgres; and SVG snapshots of its main views (pytest-textual-snapshot).

Regenerate the snapshots after an intended change of the UI with
`python -m pytest tests/tui/test_tui.py --snapshot-update` and look at the SVG files.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import sqlite3

import pytest
from rich.console import Console
from textual.screen import ModalScreen
from textual.widgets import Static

from agentctl.backends import make_backend, open_backend
from agentctl.errors import ConnectionFailed, DatabaseNotFound
from agentctl.storage.agentos.sqlite import SQLiteCheckpointer, read_thread_summaries
from agentctl.tui.app import AgentctlApp
from agentctl.tui.screens.confirm import ConfirmScreen
from agentctl.tui.screens.prompt import PromptScreen, PruneScreen
from agentctl.tui.screens.search import SearchScreen
from agentctl.tui.source import THREAD_PAGE, FirstPage
from agentctl.tui.widgets.timeline import BranchItem, CheckpointItem, OlderItem
from tests.support import sampledb
from tests.support.helpers import make_cp
from tests.support.rig import SAMPLE_DB
from tests.support.tui import settle, skip_idle_waits

SIZE = (120, 36)

# The sample on SQLite and on Postgres, a private writable copy per test.
sample_url = sampledb.sample_url


# ---- helpers ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_idle_waits(monkeypatch):
    skip_idle_waits(monkeypatch)


async def until(pilot, condition, timeout: float = 10.0, what: str = "condition") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


async def press(pilot, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


def plain(renderable, width: int = 100) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(renderable)
    return console.export_text()


def view_text(app: AgentctlApp, widget_id: str) -> str:
    return plain(app.query_one(f"#{widget_id}", Static).content)


def tree_lines(app: AgentctlApp) -> list[str]:
    out = []

    def walk(node):
        out.append(node.label.plain)
        for child in node.children:
            walk(child)

    walk(app.timeline.root)
    return out


def selected_step(app: AgentctlApp) -> tuple[str, int]:
    assert app.selected is not None
    return app.selected.thread_id, app.selected.step


async def select_thread(pilot, thread: str) -> None:
    app = pilot.app
    table = app.threads.table
    table.focus()
    table.move_cursor(row=table.get_row_index(thread))
    await settle(pilot)
    assert app.thread_id == thread


@pytest.fixture
def sample_sqlite(tmp_path) -> str:
    dest = tmp_path / "sample.db"
    shutil.copyfile(SAMPLE_DB, dest)
    return str(dest)


# ---- browsing ------------------------------------------------------------------------


async def test_browse_threads_checkpoints_tabs_and_diff_across_threads(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # threads newest first; the newest page of a long thread, its head selected
        assert app.threads.table.row_count == 7
        assert app.threads.current == app.thread_id == "loop-research-7"
        assert selected_step(app) == ("loop-research-7", 240)
        first = app.timeline.root.children[0]
        assert isinstance(first.data, OlderItem) and first.data.remaining == 40
        assert "Iteration 240" in view_text(app, "messages-view")
        assert "loop-research-7@240" in plain(app.query_one("#detail-header", Static).content)

        # the earlier checkpoints load when asked for
        app.timeline.focus()
        await press(pilot, "home", "down")  # the root, then the "▲ 40 earlier" node
        assert isinstance(app.timeline.cursor_node.data, OlderItem)
        await press(pilot, "enter")
        steps = [c.data.meta.step for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]
        assert steps == list(range(1, 241))

        # selecting a thread (the threads pane: down, j) and moving through checkpoints
        app.threads.table.focus()
        await press(pilot, "down")
        assert app.thread_id == "coder-add-cli-flag"
        assert selected_step(app) == ("coder-add-cli-flag", 9)
        await press(pilot, "enter")  # to the checkpoints
        assert app.focused is app.timeline
        await press(pilot, "up", "k")
        assert selected_step(app) == ("coder-add-cli-flag", 7)
        assert "coder-add-cli-flag@7" in plain(app.query_one("#detail-header", Static).content)
        await press(pilot, "j")
        assert selected_step(app) == ("coder-add-cli-flag", 8)
        await press(pilot, "shift+tab", "j")  # back to the threads, down with j
        assert app.thread_id == "coder-fix-flaky-test"

        # every tab, on step 11 ("[tool] 12 passed")
        app.timeline.focus()
        await press(pilot, "up", "up")
        assert selected_step(app) == ("coder-fix-flaky-test", 11)
        await press(pilot, "1")
        assert app.detail.active_tab == "messages"
        messages = view_text(app, "messages-view")
        assert "system" in messages and "Fix the flaky test" in messages
        await press(pilot, "2")
        assert app.detail.active_tab == "state"
        assert '"test_runs": 4' in view_text(app, "state-view")
        await press(pilot, "3")
        assert app.detail.active_tab == "tools"
        assert "run_tests" in view_text(app, "tools-view")
        await press(pilot, "4")
        assert app.detail.active_tab == "diff"
        diff = view_text(app, "diff-view")
        assert "parent coder-fix-flaky-test@10" in diff and "test_runs" in diff

        # mark a checkpoint, diff another thread's against it; m again unmarks
        await select_thread(pilot, "support-1042")
        await press(pilot, "m")
        assert app.mark is not None and app.mark.checkpoint_id == app.selected.checkpoint_id
        assert "★" in tree_lines(app)[-1]
        await select_thread(pilot, "support-1043")
        diff = view_text(app, "diff-view")
        assert "marked support-1042@5" in diff and "support-1043@5" in diff
        assert "messages" in diff
        await select_thread(pilot, "support-1042")
        await press(pilot, "m")
        assert app.mark is None
        await select_thread(pilot, "support-1043")
        assert "parent support-1043@4" in view_text(app, "diff-view")


async def test_first_paint_does_not_wait_for_the_database(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        # before the open worker has run: the panes are there, saying they are loading
        assert "loading" in app.timeline.root.label.plain
        await settle(pilot)
        assert app.threads.table.row_count == 7


async def test_the_rest_of_the_screen_comes_after_the_first_frame_in_its_places(sample_sqlite):
    from agentctl.tui.screens.main import MainScreen
    from agentctl.tui.widgets.footer import KeyFooter, KeyLine

    before = AgentctlApp(sample_sqlite).main  # until it is whole, only quit and help work
    assert isinstance(before, MainScreen)
    assert not before.check_action("rewind", ()) and not before.check_action("filter_threads", ())
    assert before.check_action("quit", ()) and before.check_action("help", ())
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.main.assembled, what="the screen whole")
        assert app.main.check_action("rewind", ())
        assert not app.main.query(KeyLine) and len(app.main.query(KeyFooter)) == 1
        assert [w.id for w in app.threads.children] == ["thread-filter", "thread-table", "thread-status"]
        assert [w.id for w in app.query_one("#panes").children] == ["left", "detail"]
        assert [w.id for w in app.query_one("#left").children] == ["threads-pane", "tree"]
        assert app.query_one("#detail").border_title == "Detail"
        await press(pilot, "t")  # the filter box (mounted late) takes the focus
        assert app.focused is app.query_one("#thread-filter")


@pytest.mark.parametrize("indexed", [False, True], ids=["plain", "created_at-index"])
async def test_the_first_page_of_threads_is_the_backends(sample_sqlite, indexed):
    """What the TUI reads on a plain thread at start-up: the backend's own query."""
    if indexed:  # (as `agentctl doctor --fix-indexes` leaves it: another query plan)
        conn = sqlite3.connect(sample_sqlite)
        conn.execute("CREATE INDEX idx_created_at ON checkpoints (created_at)")
        conn.close()
    async with open_backend(sample_sqlite) as backend:
        for kwargs in (
            {"limit": THREAD_PAGE + 1},
            {"limit": 3, "offset": 2},
            {"prefix": "coder"},
            {"sort": "thread", "descending": False},
        ):
            expected = await backend.thread_summaries(**kwargs)
            assert read_thread_summaries(sample_sqlite, **kwargs) == expected, kwargs
    assert any(s.branch_of for s in expected)  # the parent lookup ran too


@pytest.fixture
def count_backend_thread_lists(monkeypatch) -> list[dict]:
    """The calls of the app's backend (not the start-up read) to thread_summaries."""
    calls: list[dict] = []
    original = SQLiteCheckpointer.thread_summaries

    async def counted(self, *args, **kwargs):
        if type(self) is SQLiteCheckpointer:
            calls.append(kwargs)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteCheckpointer, "thread_summaries", counted)
    return calls


async def test_threads_read_at_start_are_in_the_first_frame_and_not_read_again(
    sample_sqlite, count_backend_thread_lists
):
    FirstPage.start(sample_sqlite)  # what `agentctl tui` does before importing Textual
    page = FirstPage._started[sample_sqlite]
    app = AgentctlApp(sample_sqlite)
    assert app.source._first_page is page and sample_sqlite not in FirstPage._started
    page.future.result(timeout=20)  # read before the app mounts
    async with app.run_test(size=SIZE) as pilot:
        # mounted, the backend perhaps not open yet: the rows are there
        assert app.threads.table.row_count == 7
        await settle(pilot)
        assert app.threads.current == app.thread_id == "loop-research-7"
        assert selected_step(app) == ("loop-research-7", 240)
        assert "7 threads" in plain(app.query_one("#thread-status", Static).content)
        assert count_backend_thread_lists == []
        await press(pilot, "f5")  # a refresh asks the database again
        assert len(count_backend_thread_lists) == 1
        assert app.threads.table.row_count == 7 and app.thread_id == "loop-research-7"


async def test_start_up_pauses_the_collector_until_the_screen_is_whole(sample_sqlite):
    import gc

    from agentctl.tui import resume_gc, start_up

    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    try:
        start_up(sample_sqlite)  # what `agentctl tui` does before importing Textual
        assert not gc.isenabled() and sample_sqlite in FirstPage._started
        app = AgentctlApp(sample_sqlite)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.main.assembled, what="the whole screen")
            assert gc.isenabled()  # collecting again once the screen is whole
            await settle(pilot)
            assert app.threads.table.row_count == 7
            assert selected_step(app) == ("loop-research-7", 240)
    finally:
        resume_gc()  # (if the app did not get that far)
        gc.unfreeze()  # the objects `resume_gc` froze: back to the collector
    assert gc.isenabled()


async def test_threads_come_from_the_backend_when_the_start_up_read_fails(
    sample_sqlite, count_backend_thread_lists, monkeypatch
):
    def fails(path, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr("agentctl.storage.agentos.sqlite.read_thread_summaries", fails)
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.threads.table.row_count == 7
        assert selected_step(app) == ("loop-research-7", 240)
        assert len(count_backend_thread_lists) == 1
        assert not app._notifications  # nothing to report: the database is fine


async def test_branches_load_when_expanded(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "coder-fix-flaky-test")
        tree = app.timeline
        point = tree.node_for("ckpt-coder-fix-flaky-test-6-4b9fe6")
        assert point is not None and "branch-point" in point.data.labels
        branch = point.children[0]
        assert isinstance(branch.data, BranchItem) and not branch.data.loaded
        assert branch.data.thread_id == "coder-fix-flaky-test-branch-retry-backoff-70e7"
        tree.focus()
        tree.move_to_node(point)
        await settle(pilot)
        await press(pilot, "space")  # expand the branch point
        tree.move_to_node(branch)
        await press(pilot, "space")  # expand the branch: its rows load now
        steps = [c.data.meta.step for c in branch.children if isinstance(c.data, CheckpointItem)]
        assert steps == [0, 1, 2, 3]
        await press(pilot, "down")
        assert selected_step(app) == ("coder-fix-flaky-test-branch-retry-backoff-70e7", 0)
        # the merge checkpoint is labelled as such
        assert "merge" in tree.node_for("ckpt-coder-fix-flaky-test-13-7fe041").data.labels


async def test_filter_threads_by_prefix(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "t")
        for ch in "support":
            await pilot.press(ch)
        await settle(pilot)
        assert [app.threads.table.get_row_at(i)[1].plain for i in range(app.threads.table.row_count)] == [
            "support-1044",
            "support-1043",
            "support-1042",
        ]
        await press(pilot, "enter")  # back to the table
        assert app.focused is app.threads.table
        assert app.thread_id == "support-1044"


async def test_search_jumps_to_the_checkpoint(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        assert isinstance(app.screen, SearchScreen)
        for ch in "谢谢":
            await pilot.press(ch)
        await press(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert screen.hits and all(h.thread_id == "support-1043" for h in screen.hits)
        hit = screen.hits[0]
        await press(pilot, "enter")
        assert not isinstance(app.screen, SearchScreen)
        assert app.thread_id == app.threads.current == "support-1043"
        assert app.selected.checkpoint_id == hit.checkpoint_id
        assert "谢谢" in view_text(app, "messages-view")


async def test_command_palette_runs_the_actions(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        from textual.command import CommandList, CommandPalette

        from agentctl.tui.palette import BindingCommands

        # the palette's commands are the main screen's keys, each saying what it does
        provider = BindingCommands(app.screen)
        hits = {hit.text: hit.help async for hit in provider.discover()}
        assert {"Search", "Mark", "Rewind", "Branch", "Merge", "Prune", "Undo", "Refresh", "Follow"} <= set(
            hits
        )
        assert hits["Rewind"].startswith("Rewind the thread to the selected checkpoint")

        await press(pilot, "ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        for ch in "Mark":
            await pilot.press(ch)
        results = app.screen.query_one(CommandList)

        def mark_first() -> bool:
            return (
                results.option_count > 0
                and results.highlighted == 0
                and "Mark" in str(results.get_option_at_index(0).prompt)
            )

        await until(pilot, mark_first, what="the palette offering Mark")
        await press(pilot, "enter")
        await until(pilot, lambda: app.mark is not None, what="the mark from the palette")


async def test_the_footer_follows_focus_and_keymap_changes(sample_sqlite):
    from textual.widgets._footer import FooterKey

    def keys() -> dict[str, str]:
        return {k.action: k.key_display for k in app.screen.query(FooterKey)}

    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = keys()
        assert shown["rewind"] == "r" and shown["quit"] == "q" and "cursor_down" not in shown
        app.timeline.focus()
        await settle(pilot)
        assert keys() == shown  # the same keys (the footer was not rebuilt for nothing)
        app.set_keymap({"rewind": "ctrl+r"})
        await settle(pilot)
        assert keys()["rewind"] == "^r"


async def test_help_lists_keys_with_their_ids_and_keymap(sample_sqlite):
    app = AgentctlApp(sample_sqlite, keymap={"rewind": "ctrl+r"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        rows = {binding_id: key for key, _, binding_id in app.main.help_rows()}
        assert rows["rewind"] == "ctrl+r" and rows["merge"] == "M" and rows["follow"] == "f"
        await press(pilot, "escape")
        app.timeline.focus()
        await press(pilot, "up", "ctrl+r")  # the remapped key opens the rewind preview
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "escape")


# ---- robustness ---------------------------------------------------------------------------


async def test_database_text_is_shown_inert(tmp_path):
    url = str(tmp_path / "evil.db")
    evil = "\x1b[31mRED\x1b[0m [bold]not bold[/bold] [link=http://x]y[/link]"
    b = make_backend(url, readonly=False, create=True)
    await b.put(
        make_cp(
            "t-\x1b[2J-[red]x[/red]",
            1,
            summary=evil,
            messages=[{"role": "user", "content": evil}],
            tags=["[b]tag[/b]"],
        )
    )
    await b.close()
    app = AgentctlApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        label = tree_lines(app)[-1]
        assert "\\e[31mRED\\e[0m [bold]not bold[/bold]" in label
        assert "\x1b" not in "".join(tree_lines(app))
        assert "[red]x[/red]" in app.threads.table.get_row_at(0)[1].plain
        messages = view_text(app, "messages-view")
        assert "[bold]not bold[/bold]" in messages and "\x1b" not in messages
        svg = app.export_screenshot().replace("&#160;", " ")
        assert "[bold]not bold[/bold]" in svg and "\x1b" not in svg


def test_a_huge_checkpoint_is_shown_cut_not_frozen():
    from agentctl.tui.views import MAX_JSON_CHARS, MAX_MESSAGES, build_views

    messages = [{"role": "user", "content": f"message {i}"} for i in range(1000)]
    state = {"docs": [{"id": i, "text": "x" * 100} for i in range(5000)]}  # ~600 KB
    big = make_cp(
        "t", 2, messages=messages, state=state, tools={"out": "\x1b[31m" + "y" * (2 * MAX_JSON_CHARS)}
    )
    views = build_views(big, make_cp("t", 1), "parent", [], "")
    state_text = plain(views["state"])
    assert "characters of JSON; the first" in state_text
    assert len(state_text) < 2 * MAX_JSON_CHARS
    messages_text = plain(views["messages"])
    assert f"1000 messages; the last {MAX_MESSAGES} shown" in messages_text
    assert "message 999" in messages_text and "message 10\n" not in messages_text
    tools_text = plain(views["tools"])
    assert "\x1b" not in tools_text and "the first" in tools_text


async def test_an_undecodable_row_is_reported_not_fatal(sample_sqlite):
    conn = sqlite3.connect(sample_sqlite)
    conn.execute(
        "UPDATE checkpoints SET messages_blob = '{broken' WHERE thread_id = 'coder-add-cli-flag' AND step = 9"
    )
    conn.commit()
    conn.close()
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "coder-add-cli-flag")
        assert selected_step(app) == ("coder-add-cli-flag", 9)
        assert "invalid JSON" in view_text(app, "messages-view")
        app.timeline.focus()
        await press(pilot, "up")  # the rows around it still show
        assert selected_step(app) == ("coder-add-cli-flag", 8)
        assert "[0] system" in view_text(app, "messages-view")


async def test_a_missing_database_exits_with_its_error(tmp_path):
    app = AgentctlApp(str(tmp_path / "nope.db"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.open_error is not None, what="the open error")
    assert isinstance(app.open_error, DatabaseNotFound)
    assert not (tmp_path / "nope.db").exists()


async def test_a_refused_postgres_login_never_shows_the_password():
    app = AgentctlApp("postgresql://user:s3cret@127.0.0.1:1/db")
    async with app.run_test(size=SIZE) as pilot:
        assert "s3cret" not in plain(app.query_one("#status", Static).content)
        await until(pilot, lambda: app.open_error is not None, what="the open error")
    assert isinstance(app.open_error, ConnectionFailed)
    assert "s3cret" not in str(app.open_error)


# ---- follow mode ------------------------------------------------------------------------


async def test_follow_mode_shows_rows_another_writer_adds(sample_url):
    app = AgentctlApp(sample_url)
    # Follow mode's looks at the database, counted from outside: its data source's poll.
    polls = 0
    change_token = app.source.change_token

    async def counted_change_token(thread_id):
        nonlocal polls
        token = await change_token(thread_id)
        polls += 1
        return token

    app.source.change_token = counted_change_token  # type: ignore[method-assign]
    writer = make_backend(sample_url, readonly=False, create=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await select_thread(pilot, "support-1042")
            app.timeline.focus()
            await press(pilot, "f")
            assert app.following
            head = app.selected
            # the writer comes after follow mode has looked at least twice
            await until(pilot, lambda: polls >= 2, what="follow polls")
            await settle(pilot)
            # another program (its own connection) appends to the shown thread...
            await writer.put(
                make_cp(
                    "support-1042",
                    6,
                    cid="ckpt-support-1042-new-6",
                    parent=head.checkpoint_id,
                    summary="[user] one more thing",
                )
            )
            await until(
                pilot, lambda: app.selected.checkpoint_id == "ckpt-support-1042-new-6", what="the new head"
            )
            assert "one more thing" in tree_lines(app)[-1]
            assert app.timeline.root.children[-2].data.meta.step == 5
            # ...and starts a new thread: the thread list picks it up too
            await writer.put(make_cp("agent-new", 1, cid="ckpt-agent-new-1"))
            await until(pilot, lambda: "agent-new" in app.threads.summaries, what="the new thread")
            assert app.thread_id == "support-1042"
            await press(pilot, "f")
            assert not app.following
            # (cancelled in a Postgres query, the worker ends once the driver has let go)
            await until(
                pilot,
                lambda: not [w for w in app.workers if w.group == "follow" and w.is_running],
                what="the follow worker to stop",
            )
    finally:
        await writer.close()


async def test_an_empty_database_then_refresh(tmp_path):
    url = str(tmp_path / "empty.db")
    make_backend(url, readonly=False, create=True)  # the table, no rows
    app = AgentctlApp(url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.threads.table.row_count == 0 and app.selected is None
        assert "no threads" in plain(app.query_one("#thread-status", Static).content)
        for key in ("m", "r", "b", "4", "slash", "escape"):  # nothing to act on: no crash
            await press(pilot, key)
        assert app.is_running
        writer = make_backend(url, readonly=False, create=False)
        await writer.put(make_cp("late", 1, summary="[user] hello"))
        await writer.close()
        await press(pilot, "f5")  # refresh picks up what another program wrote
        assert app.thread_id == "late" and selected_step(app) == ("late", 1)


# ---- writes: each behind a confirm that shows the engine's plan ------------------------


def notices(app: AgentctlApp) -> list[str]:
    return [n.message for n in app._notifications]


def screen_text(app: AgentctlApp) -> str:
    return "\n".join(plain(s.content, width=110) for s in app.screen.query(Static))


async def thread_size(app: AgentctlApp, thread: str) -> int:
    return await app.source.db.count(thread)


async def to_step(pilot, thread: str, step: int) -> None:
    app = pilot.app
    await select_thread(pilot, thread)
    app.timeline.focus()
    node = next(
        c
        for c in app.timeline.root.children
        if isinstance(c.data, CheckpointItem) and c.data.meta.step == step
    )
    app.timeline.move_to_node(node)
    await settle(pilot)
    assert selected_step(app) == (thread, step)


async def test_rewind_cancel_confirm_and_undo(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        await press(pilot, "r")
        assert isinstance(app.screen, ConfirmScreen)
        text = screen_text(app)
        assert "rewind coder-add-cli-flag" in text and "move 3 checkpoints" in text
        await press(pilot, "escape")  # cancel: nothing changes
        assert not isinstance(app.screen, ConfirmScreen)
        assert await thread_size(app, "coder-add-cli-flag") == 9
        assert any("cancelled" in n for n in notices(app))

        await press(pilot, "r")
        await press(pilot, "y")
        assert await thread_size(app, "coder-add-cli-flag") == 6
        # the summary `agentctl rewind` prints (agentctl.ops, one text for both faces)
        assert any(
            n.startswith("coder-add-cli-flag is now at ")
            and "(step 6); 3 checkpoint(s) moved to coder-add-cli-flag-branch-rewind-" in n
            and n.endswith("(u undoes)")
            for n in notices(app)
        )
        # the views follow: the tree ends at step 6, the archive thread is listed
        assert app.thread_id == "coder-add-cli-flag"
        assert app.timeline.head_id() == app.selected.checkpoint_id
        assert selected_step(app) == ("coder-add-cli-flag", 6)
        assert any(t.startswith("coder-add-cli-flag-branch-rewind-") for t in app.threads.summaries)

        await press(pilot, "u")
        assert isinstance(app.screen, ConfirmScreen) and "rewind" in screen_text(app)
        await press(pilot, "n")  # cancel the undo: still rewound
        assert await thread_size(app, "coder-add-cli-flag") == 6
        await press(pilot, "u", "y")
        assert await thread_size(app, "coder-add-cli-flag") == 9
        assert app.timeline.states[app.timeline.root.id].total == 9


async def test_branch_asks_a_name(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "support-1042", 3)
        await press(pilot, "b")
        assert isinstance(app.screen, PromptScreen)
        await press(pilot, "escape")
        assert not isinstance(app.screen, PromptScreen)
        assert set(app.threads.summaries) == {
            "loop-research-7",
            "coder-add-cli-flag",
            "coder-fix-flaky-test",
            "coder-fix-flaky-test-branch-retry-backoff-70e7",
            "support-1044",
            "support-1043",
            "support-1042",
        }
        await press(pilot, "b")
        for ch in "try-again":
            await pilot.press(ch)
        await press(pilot, "enter")
        new = [t for t in app.threads.summaries if t.startswith("support-1042-branch-try-again-")]
        assert len(new) == 1
        assert app.thread_id == new[0]  # the new branch is shown
        assert app.threads.summaries[new[0]].branch_of == "support-1042"
        assert "↳ from support-1042@3" in app.timeline.root.label.plain


async def test_branch_dialog_refuses_what_the_cli_refuses(sample_sqlite):
    """One validation for the CLI, the engine and the TUI's dialog: `x@1`, spaces, path
    separators and `..` keep the dialog open with the reason; nothing is written."""
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await to_step(pilot, "support-1042", 3)
        before = set(app.threads.summaries)
        for bad in ("x@1", "has space", "../../etc", "a\\b"):
            await press(pilot, "b")
            assert isinstance(app.screen, PromptScreen)
            app.screen.query_one("#prompt-input").value = bad
            await press(pilot, "enter")
            assert isinstance(app.screen, PromptScreen), bad  # refused: still asking
            await press(pilot, "escape")
        assert set(app.threads.summaries) == before


async def make_branches(url: str) -> tuple[str, str]:
    """Two branches of coder-add-cli-flag's head, one more step on each side: the main
    thread and branch "conflict" both change `state.plan`; branch "clean" adds its own key."""
    from agentctl.engine import CheckpointEngine

    b = make_backend(url, readonly=False, create=False)
    try:
        engine = CheckpointEngine(b)
        head = await b.get_latest("coder-add-cli-flag")
        out = []
        for name, key in (("clean", "only_theirs"), ("conflict", "plan")):
            branch = await engine.branch(head.metadata.checkpoint_id, name)
            first = await b.get_latest(branch)
            await b.put(
                make_cp(
                    branch,
                    1,
                    cid=f"ckpt-{name}-edit",
                    parent=first.metadata.checkpoint_id,
                    state={**first.state, key: f"plan of {name}"},
                    messages=first.messages,
                    created_at="2026-11-02T10:00:00+00:00",
                )
            )
            out.append(branch)
        await b.put(
            make_cp(
                "coder-add-cli-flag",
                head.metadata.step + 1,
                cid="ckpt-ours-edit",
                parent=head.metadata.checkpoint_id,
                state={**head.state, "plan": "plan of ours"},
                messages=head.messages,
                created_at="2026-11-02T10:00:01+00:00",
            )
        )
        return out[0], out[1]
    finally:
        await b.close()


async def test_merge_clean_and_with_a_conflict(sample_url):
    clean, conflict = await make_branches(sample_url)
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, clean)
        await press(pilot, "M")
        assert isinstance(app.screen, PromptScreen)
        # the target defaults to the thread the branch came from
        assert app.screen.query_one("#prompt-input").value == "coder-add-cli-flag"
        await press(pilot, "enter")
        assert isinstance(app.screen, ConfirmScreen)
        assert "merge" in screen_text(app) and "conflict" not in screen_text(app)
        await press(pilot, "escape")  # cancel: nothing written
        assert await thread_size(app, "coder-add-cli-flag") == 10
        await press(pilot, "M", "enter", "y")
        assert await thread_size(app, "coder-add-cli-flag") == 11
        head = await app.source.db.get_latest("coder-add-cli-flag")
        assert head.state["plan"] == "plan of ours" and head.state["only_theirs"] == "plan of clean"
        assert app.thread_id == "coder-add-cli-flag"  # the views moved to the target
        assert app.selected.checkpoint_id == head.metadata.checkpoint_id

        # a conflict: the preview lists it; merging needs a side chosen
        await select_thread(pilot, conflict)
        await press(pilot, "M", "enter")
        assert isinstance(app.screen, ConfirmScreen)
        text = screen_text(app)
        assert "conflict" in text and "plan of ours" in text and "plan of conflict" in text
        assert not app.screen.query("#three-way")  # no plain "Merge" button
        await press(pilot, "escape")
        assert await thread_size(app, "coder-add-cli-flag") == 11
        await press(pilot, "M", "enter")
        app.screen.query_one("#theirs").press()
        await settle(pilot)
        assert await thread_size(app, "coder-add-cli-flag") == 12
        head = await app.source.db.get_latest("coder-add-cli-flag")
        assert head.state["plan"] == "plan of conflict"


async def test_merge_into_an_unknown_thread_is_an_error_not_a_crash(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "support-1042")
        await press(pilot, "M")
        for ch in "no-such-thread":
            await pilot.press(ch)
        await press(pilot, "enter")
        assert app.is_running and not isinstance(app.screen, ConfirmScreen)
        assert any("no-such-thread" in n for n in notices(app))


async def test_prune_cancel_confirm_and_undo(sample_url):
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        assert isinstance(app.screen, PruneScreen)
        await press(pilot, "escape")
        await press(pilot, "p", "enter")  # keep_last_n 10: a preview of what goes
        assert isinstance(app.screen, ConfirmScreen)
        assert "delete 230, keep 10" in screen_text(app)
        await press(pilot, "escape")
        assert await thread_size(app, "loop-research-7") == 240
        await press(pilot, "p", "enter", "y")
        assert await thread_size(app, "loop-research-7") == 10
        assert [c.data.meta.step for c in app.timeline.root.children] == list(range(231, 241))
        await press(pilot, "u", "y")
        assert await thread_size(app, "loop-research-7") == 240


async def test_undo_with_nothing_to_undo(sample_sqlite):
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "u")
        assert not isinstance(app.screen, ConfirmScreen)
        assert "nothing to undo" in notices(app)


async def test_prune_copies_the_sqlite_file_aside_first(sample_sqlite):
    """The TUI's prune takes the safety copy the CLI's takes (`PATH.<time>.bak` beside
    the file, as it was before the prune, the file's permission bits) and its
    notification says where the copy went."""
    import os
    from pathlib import Path

    db = Path(sample_sqlite)
    os.chmod(db, 0o640)
    before = sqlite3.connect(db).execute("SELECT COUNT(*) FROM checkpoints").fetchone()
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p", "enter")
        await press(pilot, "escape")  # cancelled: no copy
        assert sorted(p.name for p in db.parent.iterdir() if p.suffix == ".bak") == []
        await press(pilot, "p", "enter", "y")
        assert await thread_size(app, "loop-research-7") == 10
        (copy,) = [p for p in db.parent.iterdir() if p.suffix == ".bak"]
        assert copy.name.startswith("sample.db.") and copy.name.endswith("Z.bak")
        assert any(f"a copy of the file from before: {copy}" in n for n in notices(app)), notices(app)
    assert sqlite3.connect(copy).execute("SELECT COUNT(*) FROM checkpoints").fetchone() == before
    assert os.stat(copy).st_mode & 0o777 == 0o640


async def test_ctrl_y_redo_asks_about_what_it_would_do(sample_sqlite):
    """Ctrl-Y's confirm asks about a future action, as undo's and rewind's do: "redo
    operation N (…)" and what it would do to which checkpoints, never "redid"."""
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p", "enter", "y")
        assert await thread_size(app, "loop-research-7") == 10
        await press(pilot, "u", "y")
        assert await thread_size(app, "loop-research-7") == 240
        await press(pilot, "ctrl+y")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the redo confirm")
        text = screen_text(app)
        assert "Redo the last undone operation?" in text
        assert "redo operation 1 (prune loop-research-7" in text and "redid" not in text
        assert "it would remove 230, move 1 checkpoint(s)" in text
        await press(pilot, "y")
        assert await thread_size(app, "loop-research-7") == 10


async def test_ctrl_y_redo_with_nothing_to_redo_changes_nothing(sample_sqlite):
    """Ctrl-Y is `agentctl redo`: with no op undone it says so (as the CLI's exit 1
    line): no dialog, the file as it was."""
    before = open(sample_sqlite, "rb").read()
    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+y")
        await settle(pilot)
        assert not isinstance(app.screen, ModalScreen)
        assert "nothing to redo" in notices(app)
    assert open(sample_sqlite, "rb").read() == before


async def test_readonly_mode_disables_writes(sample_sqlite):
    before = open(sample_sqlite, "rb").read()
    app = AgentctlApp(sample_sqlite, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "READ-ONLY" in plain(app.query_one("#status", Static).content)
        for key in ("r", "b", "M", "p", "u", "ctrl+y"):
            await press(pilot, key)
            assert not isinstance(app.screen, ModalScreen)
        assert sum("read-only mode" in n for n in notices(app)) == 6
    assert open(sample_sqlite, "rb").read() == before


# ---- snapshots (SVG, pytest-textual-snapshot) ---------------------------------------------
# A relative database path keeps the status line the same on every machine; a seeded
# engine makes the names a preview shows (the archive thread) the same on every run.


@pytest.fixture
def sample_here(tmp_path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(SAMPLE_DB, tmp_path / "sample.db")
    return "sample.db"


def test_snapshot_main_screen(snap_compare, sample_here):
    assert snap_compare(AgentctlApp(sample_here), terminal_size=SIZE, run_before=settle)


def test_snapshot_diff_tab(snap_compare, sample_here):
    async def run_before(pilot):
        await settle(pilot)
        await to_step(pilot, "coder-fix-flaky-test", 11)
        await press(pilot, "4")

    assert snap_compare(AgentctlApp(sample_here), terminal_size=SIZE, run_before=run_before)


def test_snapshot_rewind_confirm(snap_compare, sample_here):
    import random

    async def run_before(pilot):
        await settle(pilot)
        await to_step(pilot, "coder-add-cli-flag", 6)
        await press(pilot, "r")
        assert isinstance(pilot.app.screen, ConfirmScreen)

    app = AgentctlApp(sample_here, history_options={"rng": random.Random(7)})
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize(
    "driver, why",
    [
        ("", "(started with --read-only)"),
        ("textual_serve.web_driver:WebDriver", "(agentctl serve without --allow-writes)"),
    ],
)
async def test_read_only_names_the_option_that_made_it(sample_sqlite, monkeypatch, driver, why):
    """A write key in read-only mode says which option did it: `tui --read-only`, or
    `serve` without --allow-writes."""
    monkeypatch.setenv("TEXTUAL_DRIVER", driver)
    app = AgentctlApp(sample_sqlite, readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "coder-fix-flaky-test")
        app.timeline.focus()
        await press(pilot, "r")
        said = [n.message for n in app._notifications]
        assert f"read-only mode: rewind is disabled {why}" in said, said


def _contrast(a, b) -> float:
    """WCAG contrast ratio of two rich colours."""

    def lum(c):
        r, g, b = (x / 255 for x in c.get_truecolor())
        f = [(x / 12.92) if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in (r, g, b)]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


async def test_pane_titles_are_readable_and_keys_shown_without_focus(sample_sqlite):
    """The pane titles stand out from their border (bold, contrast >= 4.5 against the
    background: they were the dimmed border's colour), and the footer shows its keys
    although the app has no focus (a browser page under `agentctl serve`)."""
    from textual.widgets._footer import FooterKey

    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=SIZE) as pilot:
        app.app_focus = False
        await settle(pilot)
        strips = app.screen._compositor.render_strips()  # the screen as drawn, line by line
        for pane, title in (("#threads-pane", "Threads"), ("#tree", "Checkpoints"), ("#detail", "Detail")):
            line = strips[app.query_one(pane).region.y]
            segments = [s for s in line if title in s.text]
            assert segments, (pane, line.text)
            style = segments[0].style
            assert style.bold, pane
            assert _contrast(style.color, style.bgcolor) >= 4.5, (pane, style)
        descriptions = {k.description for k in app.screen.query(FooterKey)}
        assert {"Quit", "Rewind", "Edit", "Run"} <= descriptions, descriptions


async def test_langgraph_checkpoint_rows_name_the_source_once():
    """LangGraph checkpoints have no summary of their own: the tree row shows the source
    (its tag) once — it read `loop  loop`, and not the checkpoint id either."""
    from agentctl.storage import open_store
    from agentctl.tui.widgets.timeline import checkpoint_label

    async with open_store(str(SAMPLE_DB.parent / "langgraph.db")) as store:
        metas = await store.read_thread("flaky-tool")
    labels = [checkpoint_label(m).plain for m in metas]
    assert [label.split()[-1] for label in labels] == ["input", "loop", "loop"], labels
    assert not any(
        "loop  loop" in label or m.checkpoint_id in label for label, m in zip(labels, metas, strict=False)
    )


async def test_a_branch_row_sits_under_the_thread_it_was_branched_from(sample_url):
    """Issue 33.11: the thread list is sorted by activity, and a branch written to
    since its thread (the newest thread now) sat at the top, under nothing; it sits right
    under its thread (`↳`), the others as they were, on SQLite and Postgres."""
    branch = "coder-fix-flaky-test-branch-retry-backoff-70e7"
    writer = make_backend(sample_url, readonly=False, create=False)
    try:
        await writer.put(
            make_cp(
                branch,
                4,
                cid="ckpt-branch-late-4",
                parent=f"ckpt-{branch}-3",
                created_at="2026-11-02T10:00:00+00:00",
                summary="[assistant] later",
            )
        )
    finally:
        await writer.close()
    app = AgentctlApp(sample_url)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.threads.table
        rows = [table.get_row_at(i)[1].plain for i in range(table.row_count)]
        assert rows == [
            "loop-research-7",
            "coder-add-cli-flag",
            "coder-fix-flaky-test",
            f"↳ {branch}",
            "support-1044",
            "support-1043",
            "support-1042",
        ], rows


def _shape(node, depth: int = 0) -> list[str]:
    """The checkpoint list as `depth:step` lines (`depth:fork N` for a fork node)."""
    from agentctl.tui.widgets.timeline import ForkItem

    out = []
    for child in node.children:
        if isinstance(child.data, CheckpointItem):
            out.append(f"{depth}:{child.data.meta.step}")
        elif isinstance(child.data, ForkItem):
            out.append(f"{depth}:fork {child.data.count}")
        out += _shape(child, depth + 1)
    return out


async def test_the_checkpoint_list_draws_a_threads_forks_as_tree_does(tmp_path):
    """Issue 33.2: LangGraph's `support-refund-replay` (replayed from @2, then rewound to
    @2) was one flat list (-1..7, `3 fork`, 4..8, `3 fork [head]`); the list draws it as
    `tree` does: the head's line -1, 0, 1, 2, 3 in order, the two forks under @2 (its
    branch point), and each row names the node that wrote it and its last message."""
    db = tmp_path / "lg.db"
    shutil.copyfile(SAMPLE_DB.parent / "langgraph.db", db)
    app = AgentctlApp(str(db))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_thread(pilot, "support-refund-replay")
        assert _shape(app.timeline.root) == [
            "0:-1",
            "0:0",
            "0:1",
            "0:2",
            "1:fork 5",
            "2:3",
            "2:4",
            "2:5",
            "2:6",
            "2:7",
            "1:fork 6",
            "2:3",
            "2:4",
            "2:5",
            "2:6",
            "2:7",
            "2:8",
            "0:3",
        ]
        top = [c for c in app.timeline.root.children if isinstance(c.data, CheckpointItem)]
        assert "branch-point" in top[3].data.labels and "head" in top[-1].data.labels
        assert app.timeline.is_at_head() and app.selected.checkpoint_id == top[-1].data.meta.checkpoint_id
        assert "agent: [assistant] Let me lookup order." in top[2].label.plain
        # the State and Diff tabs leave LangGraph's own keys out (`show --all-keys` has them)
        await until(pilot, lambda: app.screen.detail_loaded == app.selected.checkpoint_id, what="the detail")
        assert '"messages"' in view_text(app, "state-view")
        for tab in ("state", "diff"):
            assert "__metadata__" not in view_text(app, f"{tab}-view")


@pytest.mark.parametrize("size", [(80, 24), SIZE])
async def test_notifications_do_not_cover_the_footer(sample_sqlite, size):
    """A notification (Textual's toast, bottom right) sits above the key footer, however
    many lines the footer takes (at 80 columns, several): the keys stay visible."""
    from textual.widgets._toast import Toast

    from agentctl.tui.widgets.footer import KeyFooter

    app = AgentctlApp(sample_sqlite)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.screen.query(KeyFooter), what="the footer")
        footer = app.screen.query_one(KeyFooter).region
        for i in range(3):
            app.notify(f"notice {i}: " + "a long line of text " * 4, timeout=30)
        await until(pilot, lambda: len(app.screen.query(Toast)) == 3, what="the toasts")
        await settle(pilot)
        toasts = [t.region for t in app.screen.query(Toast)]
        assert footer.height >= 1 and all(t.height for t in toasts)
        assert all(not t.overlaps(footer) for t in toasts), (footer, toasts)
        assert max(t.bottom for t in toasts) <= footer.y
