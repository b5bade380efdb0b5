"""The main screen: the status line, the threads, a thread's checkpoint tree and the
selected checkpoint's detail; its keys; loading (every read in a worker that posts a
message, agentctl.tui.messages), follow mode and search. The writes are in
agentctl.tui.flows, imported when one starts."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Static, Tree
from textual.worker import Worker, WorkerState

from agentctl.errors import AgentctlError, redact_dsn
from agentctl.model import CheckpointMetadata, SearchHit
from agentctl.text import inert
from agentctl.tui.messages import (
    BranchesLoaded,
    DatabaseChanged,
    DatabaseOpened,
    DetailLoaded,
    OperationFinished,
    SearchFinished,
    ThreadPageLoaded,
    ThreadsLoaded,
)
from agentctl.tui.names import short_meta
from agentctl.tui.source import CHECKPOINT_PAGE, THREAD_PAGE, DataSource
from agentctl.tui.widgets.detail import TABS, DetailPane
from agentctl.tui.widgets.footer import KeyFooter, KeyLine
from agentctl.tui.widgets.threads import ThreadList
from agentctl.tui.widgets.timeline import (
    BranchItem,
    CheckpointItem,
    CheckpointTree,
    OlderItem,
)

# How often follow mode asks the database whether something changed, and how often at
# most it reloads the (more expensive) thread list when it did.
FOLLOW_INTERVAL = 0.4
THREADS_REFRESH_MIN = 2.0
# A search hit older than this many checkpoints from its thread's head is shown without
# loading the whole timeline up to it.
JUMP_MAX_ROWS = 20 * CHECKPOINT_PAGE

# The main screen's keys. The description is the footer's label and the command
# palette's title, the tooltip what the help screen and the palette say it does.
QUIT = Binding("q", "quit", "Quit", id="quit", tooltip="Quit agentctl")
BINDINGS: list[Binding | tuple[str, str] | tuple[str, str, str]] = [
    QUIT,  # the app's too (it quits from a dialog); here first in the footer
    Binding("question_mark", "help", "Help", id="help", key_display="?", tooltip="Show the keys"),
    Binding(
        "slash",
        "search",
        "Search",
        id="search",
        key_display="/",
        tooltip="Search messages, tool results and state in every thread",
    ),
    Binding(
        "m",
        "mark",
        "Mark",
        id="mark",
        tooltip="Mark the selected checkpoint: the Diff tab then compares with it (again: unmark)",
    ),
    Binding(
        "r",
        "rewind",
        "Rewind",
        id="rewind",
        tooltip="Rewind the thread to the selected checkpoint (later ones are archived, undoable)",
    ),
    Binding("b", "branch", "Branch", id="branch", tooltip="Branch a new thread from the selected checkpoint"),
    Binding(
        "M",
        "merge",
        "Merge",
        id="merge",
        tooltip="Merge the selected checkpoint's thread into another thread",
    ),
    Binding("p", "prune", "Prune", id="prune", tooltip="Prune the selected thread's checkpoints by a policy"),
    Binding("u", "undo", "Undo", id="undo", tooltip="Undo the last operation"),
    Binding(
        "ctrl+y",
        "redo",
        "Redo",
        id="redo",
        show=False,
        tooltip="Redo the last undone operation (formats on the journal)",
    ),
    Binding(
        "e",
        "edit",
        "Edit",
        id="edit",
        tooltip="Edit the selected checkpoint's state: a key and its new value (JSON); "
        "the diff, then a new checkpoint (undoable)",
    ),
    Binding(
        "R",
        "run",
        "Run",
        id="run",
        tooltip="Run your agent from the selected checkpoint (as agentctl run THREAD --from "
        "REF), then compare the new run with the old",
    ),
    Binding(
        "c",
        "compare",
        "Compare with…",
        id="compare",
        show=False,
        tooltip="Compare the selected checkpoint's run with the marked checkpoint's "
        "(m marks one): where the two runs parted",
    ),
    Binding(
        "f5", "refresh", "Refresh", id="refresh", show=False, tooltip="Reload threads, checkpoints and detail"
    ),
    Binding(
        "f",
        "follow",
        "Follow",
        id="follow",
        tooltip="Follow mode: show new checkpoints as an agent writes them",
    ),
    Binding(
        "t",
        "filter_threads",
        "Filter threads",
        id="filter",
        show=False,
        tooltip="Filter threads by id prefix",
    ),
    Binding(
        "1", "tab('messages')", "Messages tab", id="tab.messages", show=False, tooltip="Show the Messages tab"
    ),
    Binding("2", "tab('state')", "State tab", id="tab.state", show=False, tooltip="Show the State tab"),
    Binding("3", "tab('tools')", "Tools tab", id="tab.tools", show=False, tooltip="Show the Tools tab"),
    Binding("4", "tab('diff')", "Diff tab", id="tab.diff", show=False, tooltip="Show the Diff tab"),
]


def while_shown(handler: Callable[..., Any]) -> Callable[..., Any]:
    """For handlers of what workers post: do nothing once the main view is gone (the
    app is closing: its screen is being, or has been, removed before the queue emptied)."""

    @functools.wraps(handler)
    def wrapper(self: MainScreen, *message: Any) -> Any:
        if not self.app.is_running or not self.query(ThreadList):
            return None
        return handler(self, *message)

    return wrapper


def report_worker_error(node: Any, event: Worker.StateChanged) -> None:
    """A worker that failed: its error in a notification, never a traceback over the
    screen (an AgentctlError as it is, anything else with its type, in the log too)."""
    if event.state != WorkerState.ERROR:
        return
    error = event.worker.error
    if isinstance(error, AgentctlError):
        node.notify(inert(redact_dsn(str(error))), title="Error", severity="error", markup=False)
    else:
        node.log.error(repr(error))
        node.notify(
            inert(redact_dsn(f"{type(error).__name__}: {error}")),
            title="Unexpected error",
            severity="error",
            markup=False,
            timeout=15,
        )


class MainScreen(Screen[None]):
    """The app's screen on one database (the App's data source)."""

    BINDINGS = BINDINGS

    def __init__(
        self,
        source: DataSource,
        *,
        readonly: bool,
        db_name: str,
        open_database: Callable[[], Any],
        key_shown: Callable[[Binding], str],
        agent: dict[str, str | None] | None = None,
    ) -> None:
        """What the screen needs of its app, given (the app imports the screen, not the
        other way round): the data source, whether writes are off, the database's name
        until it is open, the app's `open_database` (started once the first frame is on
        screen), how the app shows a key (its keymap), and the agent that `R` runs
        (`--agent`, `--config`, `--python` of `agentctl tui`)."""
        super().__init__()
        self._source = source
        self._readonly = readonly
        self._db_name = db_name
        self._open_database = open_database
        self._key_shown = key_shown
        self.agent = dict(agent or {})
        self.edit_path = ""  # the key the last edit changed (the editor starts there)
        self.running: Any = None  # the child process of a run (R) going on
        self.thread_id: str | None = None  # the thread shown in the tree
        self.selected: CheckpointMetadata | None = None
        self.mark: CheckpointMetadata | None = None
        self.following = False
        self.detail_loaded: str | None = None
        self._threads_refreshed_at = 0.0
        self._threads_timer: Any = None
        self.assembled = False  # the detail pane, ... mounted (`_assemble`)
        self._keys_on = False  # the keys work (from the moment they are being mounted)

    def stop_run(self) -> None:
        """Stop a run going on (the app is closing): what it saved stays."""
        if self.running is not None:
            self.running.interrupt()

    @property
    def source(self) -> DataSource:
        return self._source

    @property
    def readonly(self) -> bool:
        return self._readonly

    # ---- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # The first frame has what is looked at first: the status line, the threads, the
        # (empty) checkpoint tree and the keys (as one line of text). The detail pane,
        # the filter box and the footer's key widgets (most of the widgets, and half of
        # the time to that frame) are mounted right after it (`_assemble`), where the
        # layout keeps their places: the threads pane's size does not change.
        yield Static(id="status")
        with Horizontal(id="panes"):
            with Vertical(id="left"):
                yield ThreadList(id="threads-pane")
                yield CheckpointTree(id="tree")
        yield KeyLine(BINDINGS, id="key-line")

    def on_mount(self) -> None:
        self.query_one("#threads-pane").border_title = "Threads"
        self.query_one("#tree").border_title = "Checkpoints"
        self.timeline.set_message("loading…")
        self._show_status()
        self.threads.table.focus()
        first = self.source.first_threads()
        if first is not None:  # read while the app started: shown in the first frame
            self.threads.set_threads(first[0], 0, first[1])
            self._threads_refreshed_at = time.monotonic()
        else:  # still being read (or a Postgres database): shown when it comes
            self.load_threads("", 0)
        # Once the first frame is on screen: open the database (its drivers' imports and
        # the schema read would come before that frame otherwise), and mount the rest,
        # in a task of its own (the callbacks that wait for that frame do not wait for it).
        self.call_after_refresh(self._open_database)
        self.call_after_refresh(self.run_worker, self._assemble, group="assemble", exit_on_error=False)

    async def _assemble(self) -> None:
        """Mount the rest of the screen (after the first frame)."""
        if not self.app.is_running or not self.is_attached:
            return
        detail = DetailPane(id="detail")
        with self.app.batch_update():
            mounts = [self.query_one("#panes").mount(detail), self.threads.add_filter()]
            self._keys_on = True  # (the footer's keys are enabled from its first compose)
            mounts.append(self.mount(KeyFooter(), before="#key-line"))
            self.query_one("#key-line").remove()
        for mount in mounts:
            await mount
        self.assembled = True
        detail.border_title = "Detail"
        opened = self.source.store is not None
        detail.show_message("select a checkpoint" if opened else "opening the database…")
        self.refresh_bindings()
        if not self.threads.fetching:  # the threads are listed
            self._show_first_thread()
        from agentctl.tui.startup import resume_gc

        resume_gc()  # the start-up is over (if `agentctl tui` paused the collector)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Until the screen is whole (a moment after its first frame) only quit and help.
        return self._keys_on or action in ("quit", "help")

    @property
    def threads(self) -> ThreadList:
        return self.query_one(ThreadList)

    @property
    def timeline(self) -> CheckpointTree:
        return self.query_one(CheckpointTree)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    def _show_status(self) -> None:
        text = Text()
        text.append(" agentctl ", style="bold reverse")
        text.append(
            " " + (self.source.store.display_name if self.source.store is not None else self._db_name),
            style="bold",
        )
        if self.readonly:
            text.append("  READ-ONLY (writes disabled)", style="bold yellow")
        text.append("  follow: ", style="dim")
        text.append("on" if self.following else "off", style="bold green" if self.following else "dim")
        if self.mark is not None:
            text.append("  mark: ", style="dim")
            text.append("★ " + short_meta(self.mark), style="bold yellow")
        self.query_one("#status", Static).update(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_error(self, event)

    # ---- the database opened --------------------------------------------------------

    @on(DatabaseOpened)
    @while_shown
    def _opened(self, message: DatabaseOpened) -> None:
        self._show_status()
        if self.thread_id is None:
            self.timeline.set_message("select a thread")
        if not self.assembled:
            return  # `_assemble` shows the rest
        if self.selected is None:
            self.detail.show_message("select a checkpoint")
        if not self.threads.fetching:  # the threads came before the database opened
            self._show_first_thread()

    # ---- threads ---------------------------------------------------------------------

    @work(group="threads", exclusive=True, exit_on_error=False)
    async def load_threads(
        self, prefix: str, offset: int, delay: float = 0.0, keep: str | None = None, limit: int = THREAD_PAGE
    ) -> None:
        if delay:
            await asyncio.sleep(delay)  # typing in the filter: wait for a pause
        summaries, has_more = await self.source.threads(prefix, offset, limit)
        self.post_message(ThreadsLoaded(prefix, offset, summaries, has_more, keep=keep))

    def reload_threads(self, keep: str | None) -> None:
        """Reload the rows shown (as many as are loaded), the cursor staying on `keep`."""
        self.load_threads(self.threads.prefix, 0, keep=keep, limit=max(THREAD_PAGE, self.threads.loaded))

    @on(ThreadsLoaded)
    @while_shown
    def _threads_loaded(self, message: ThreadsLoaded) -> None:
        threads = self.threads
        if message.prefix != threads.prefix:
            return  # the filter changed since
        keep = message.keep or self.thread_id
        threads.set_threads(message.summaries, message.offset, message.has_more, keep=keep)
        self._threads_refreshed_at = time.monotonic()
        if message.offset == 0:
            self._show_first_thread()

    def _show_first_thread(self) -> None:
        """Once the threads are listed (and that frame drawn, before the checkpoints are
        loaded and laid out): show the one under the cursor, if none is shown."""
        self.call_after_refresh(self._show_current_thread)

    @while_shown
    def _show_current_thread(self) -> None:
        if self.thread_id is not None or not self.assembled:
            return  # shown, or `_assemble` will
        threads = self.threads
        current = threads.current
        if current is not None:
            self.show_thread(current)
        else:
            self.timeline.set_message("no threads" if not threads.prefix else "no matching threads")

    @on(ThreadList.Highlighted)
    @while_shown
    def _thread_highlighted(self, message: ThreadList.Highlighted) -> None:
        if self.thread_id is None:
            self._show_first_thread()
        elif message.thread_id != self.thread_id:
            self.show_thread(message.thread_id, delay=0.05)

    @on(ThreadList.Chosen)
    @while_shown
    def _thread_chosen(self, message: ThreadList.Chosen) -> None:
        if not self.assembled:
            return
        if message.thread_id != self.thread_id:
            self.show_thread(message.thread_id)
        self.timeline.focus()

    @on(ThreadList.MoreWanted)
    @while_shown
    def _more_threads(self, message: ThreadList.MoreWanted) -> None:
        self.load_threads(message.prefix, message.offset)

    @on(ThreadList.FilterChanged)
    @while_shown
    def _filter_changed(self, message: ThreadList.FilterChanged) -> None:
        self.load_threads(message.prefix, 0, delay=0.15)

    # ---- a thread's checkpoints --------------------------------------------------------

    def show_thread(
        self, thread_id: str, *, select: str | None = None, delay: float = 0.0, keep_selection: bool = False
    ) -> None:
        if thread_id != self.thread_id:
            self.thread_id = thread_id
            self.timeline.set_message(f"loading {inert(thread_id, one_line=True)}…")
            self.threads.select(thread_id)  # its row (if loaded) follows, loading nothing
        self.load_thread(thread_id, select=select, delay=delay, keep_selection=keep_selection)

    @work(group="thread", exclusive=True, exit_on_error=False)
    async def load_thread(
        self, thread_id: str, select: str | None = None, delay: float = 0.0, keep_selection: bool = False
    ) -> None:
        if delay:
            await asyncio.sleep(delay)  # moving through the list: load where it stops
        metas, total = await self.source.thread_page(thread_id)
        if select is not None:
            # A search hit further back: load pages up to it (bounded).
            while (
                metas
                and select not in {m.checkpoint_id for m in metas}
                and len(metas) < min(total, JUMP_MAX_ROWS)
            ):
                older, total = await self.source.thread_page(thread_id, offset=len(metas))
                if not older:
                    break
                metas = older + metas
        origin = await self.source.origin(thread_id)
        self.post_message(
            ThreadPageLoaded(
                thread_id, metas, 0, total, select=select, origin=origin, keep_selection=keep_selection
            )
        )
        self.post_message(BranchesLoaded(thread_id, await self.source.branches(thread_id)))

    @work(group="thread", exclusive=True, exit_on_error=False)
    async def load_tail(self, thread_id: str) -> None:
        metas, total = await self.source.thread_page(thread_id)
        self.post_message(ThreadPageLoaded(thread_id, metas, 0, total, tail=True))

    @on(ThreadPageLoaded)
    @while_shown
    def _thread_page_loaded(self, message: ThreadPageLoaded) -> None:
        tree = self.timeline
        if message.into is not None:
            self._page_into(message)
            return
        if message.thread_id != self.thread_id:
            return  # another thread was chosen since
        if message.tail:
            at_head = tree.is_at_head()
            if tree.thread_id == message.thread_id and tree.append_new(message.metas, message.total):
                if self.following and at_head:
                    tree.select_head()
                    self._checkpoint_highlighted(tree.cursor_node)
            else:
                self.load_thread(message.thread_id, keep_selection=True)
            return
        previous = self.selected.checkpoint_id if self.selected is not None else None
        was_at_head = tree.is_at_head()
        if not message.metas:
            tree.set_message(f"{inert(message.thread_id, one_line=True)} has no checkpoints")
            self.thread_id = message.thread_id
            self.selected = None
            self.detail.show_message("this thread has no checkpoints (any more)")
            return
        tree.show_thread(message.thread_id, message.metas, message.total, message.origin)
        tree.set_marked(self.mark.checkpoint_id if self.mark else None)
        target = message.select
        if target is None and message.keep_selection and previous:
            if not (self.following and was_at_head):
                target = previous
        if target is None or not tree.select_checkpoint(target):
            if target is not None and message.select is not None:
                self.notify(
                    f"checkpoint is more than {JUMP_MAX_ROWS} rows before the head; showing its detail only",
                    severity="warning",
                )
                self.detail_for(message.select)
                return
            tree.select_head()
        self._checkpoint_highlighted(tree.cursor_node)

    def _page_into(self, message: ThreadPageLoaded) -> None:
        tree = self.timeline
        node = message.into
        if not tree.holds(node, message.generation):
            return  # the tree was rebuilt since
        cursor = tree.cursor_node
        tree.add_page(node, message.metas, message.offset, message.total)
        if isinstance(node.data, BranchItem):
            node.data.loaded = True
            node.expand()
        if cursor is not None and tree.holds(cursor, message.generation):
            tree.move_to_node(cursor)

    @on(BranchesLoaded)
    @while_shown
    def _branches_loaded(self, message: BranchesLoaded) -> None:
        self.timeline.set_branches(message.branches)

    @work(group="page", exclusive=False, exit_on_error=False)
    async def load_page(self, node: Any, generation: int, thread_id: str, offset: int) -> None:
        metas, total = await self.source.thread_page(thread_id, offset=offset)
        self.post_message(ThreadPageLoaded(thread_id, metas, offset, total, into=node, generation=generation))
        if offset == 0:
            self.post_message(BranchesLoaded(thread_id, await self.source.branches(thread_id)))

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._checkpoint_highlighted(event.node)

    def _checkpoint_highlighted(self, node: Any) -> None:
        item = node.data if node is not None else None
        if isinstance(item, CheckpointItem):
            if (
                self.selected is not None
                and self.selected.checkpoint_id == item.meta.checkpoint_id
                and self.detail_loaded == item.meta.checkpoint_id
            ):
                return
            try:
                detail = self.detail
            except NoMatches:  # the app is closing: its panes are already gone
                return
            self.selected = item.meta
            detail.show_loading(item.meta)
            self.load_detail(item.meta.checkpoint_id)

    @on(Tree.NodeSelected, "#tree")
    def _node_selected(self, event: Tree.NodeSelected) -> None:
        item = event.node.data
        if isinstance(item, OlderItem) and event.node.parent is not None:
            event.node.set_label(Text("loading…", style="italic"))
            self.load_page(event.node.parent, self.timeline.generation, item.thread_id, item.offset)
        elif isinstance(item, CheckpointItem) and not event.node.allow_expand and self.detail.tabs_ready:
            self.query_one(f"#{self.detail.active_tab}-scroll").focus()

    @on(Tree.NodeExpanded, "#tree")
    def _node_expanded(self, event: Tree.NodeExpanded) -> None:
        item = event.node.data
        if isinstance(item, BranchItem) and not item.loaded:
            item.loaded = True
            event.node.add(Text("loading…", style="italic"), None, allow_expand=False)
            self.load_page(event.node, self.timeline.generation, item.thread_id, 0)

    # ---- detail --------------------------------------------------------------------------

    def detail_for(self, checkpoint_id: str) -> None:
        self.load_detail(checkpoint_id)

    @work(group="detail", exclusive=True, exit_on_error=False)
    async def load_detail(self, checkpoint_id: str) -> None:
        mark = self.mark.checkpoint_id if self.mark is not None else None
        d = await self.source.detail(checkpoint_id, mark)
        views: dict[str, Any] = {}
        if d.checkpoint is not None:
            from agentctl.tui.views import build_views

            # Diffing and laying out a big checkpoint is CPU work: off the event loop.
            views = await asyncio.to_thread(
                build_views, d.checkpoint, d.base, d.base_kind, d.changes, d.error
            )
        self.post_message(DetailLoaded(checkpoint_id, d.checkpoint, views, d.error))

    @on(DetailLoaded)
    @while_shown
    def _detail_loaded(self, message: DetailLoaded) -> None:
        if self.selected is not None and message.checkpoint_id != self.selected.checkpoint_id:
            return  # the cursor moved on
        self.detail_loaded = message.checkpoint_id
        if message.checkpoint is None:
            self.detail.show_error(self.selected, message.error)
            return
        cp = message.checkpoint
        if self.selected is None:
            self.selected = cp.metadata
        elif cp.metadata.thread_id != self.selected.thread_id:
            # a checkpoint a branch shares with the thread it parts from (one id, the same
            # contents: an AdvancedSQLiteSession's branch): shown as the selected thread's
            import dataclasses

            cp = dataclasses.replace(cp, metadata=self.selected)
        self.detail.show_checkpoint(cp, message.views)

    def action_tab(self, tab: str) -> None:
        if tab in TABS:
            self.detail.show_tab(tab)

    def action_filter_threads(self) -> None:
        self.query_one("#thread-filter").focus()

    # ---- mark, refresh, follow -----------------------------------------------------------

    def action_mark(self) -> None:
        if self.selected is None:
            self.notify("select a checkpoint to mark", severity="warning")
            return
        if self.mark is not None and self.mark.checkpoint_id == self.selected.checkpoint_id:
            self.mark = None
            self.notify("mark cleared: the Diff tab compares with the parent")
        else:
            self.mark = self.selected
            self.notify(
                f"marked {short_meta(self.mark)}: select any checkpoint (any thread) "
                "and open the Diff tab (4)",
                markup=False,
            )
        self.timeline.set_marked(self.mark.checkpoint_id if self.mark else None)
        self._show_status()

    def action_refresh(self) -> None:
        self.refresh_views()

    def refresh_views(self, select_thread: str | None = None, select: str | None = None) -> None:
        """Reload what is shown (on `select_thread`; the cursor on checkpoint `select`,
        else where it was)."""
        if self.source.store is None:
            return
        thread = select_thread or self.thread_id
        self.reload_threads(thread)
        if thread is not None:
            if thread != self.thread_id:
                self.thread_id = thread
            self.detail_loaded = None
            self.load_thread(thread, select=select, keep_selection=True)

    def action_follow(self) -> None:
        self.following = not self.following
        self._show_status()
        if self.following:
            self.notify("follow: on — new checkpoints show as they are written")
            self.timeline.select_head()
            self.follow_database()
        else:
            self.workers.cancel_group(self, "follow")
            self.notify("follow: off")

    @work(group="follow", exclusive=True, exit_on_error=False)
    async def follow_database(self) -> None:
        last: tuple[Any, Any] | None = None
        last_thread = self.thread_id
        while self.following:
            if self.source.store is not None:
                try:
                    token = await self.source.change_token(self.thread_id)
                except AgentctlError as exc:
                    self.following = False
                    self._show_status()
                    self.notify(inert(f"follow mode stopped: {exc}"), severity="error", markup=False)
                    return
                if last is None or last_thread != self.thread_id:
                    # Rows may have come between the last load and this first look.
                    self.post_message(DatabaseChanged(True, last is None))
                elif token != last:
                    self.post_message(DatabaseChanged(token[1] != last[1], token[0] != last[0]))
                last, last_thread = token, self.thread_id
            await asyncio.sleep(FOLLOW_INTERVAL)

    @on(DatabaseChanged)
    @while_shown
    def _database_changed(self, message: DatabaseChanged) -> None:
        if message.thread_changed and self.thread_id is not None:
            self.load_tail(self.thread_id)
        if message.threads_changed:
            self._refresh_threads_soon()

    def _refresh_threads_soon(self) -> None:
        """Reload the thread list, at most every THREADS_REFRESH_MIN seconds (it is the
        expensive query on a big database); a change inside that window is picked up
        when it ends."""
        if self._threads_timer is not None:
            return
        wait = THREADS_REFRESH_MIN - (time.monotonic() - self._threads_refreshed_at)

        def reload() -> None:
            self._threads_timer = None
            self.reload_threads(self.thread_id)

        if wait <= 0:
            reload()
        else:
            self._threads_timer = self.set_timer(wait, reload)

    # ---- search --------------------------------------------------------------------------

    def action_search(self) -> None:
        if self.source.store is None:
            return
        from agentctl.tui.screens.search import SearchScreen

        self.app.push_screen(SearchScreen(), self._search_chosen)

    def search(self, text: str, screen: Screen) -> None:
        self._search(text, screen)

    @work(group="search", exclusive=True, exit_on_error=False)
    async def _search(self, text: str, screen: Screen) -> None:
        hits = await self.source.db.search(text, limit=100)
        screen.post_message(SearchFinished(text, hits))

    def _search_chosen(self, hit: SearchHit | None) -> None:
        self.workers.cancel_group(self, "search")  # a search still running is not wanted
        if hit is None:
            return
        self.selected = None
        self.detail_loaded = None
        self.show_thread(hit.thread_id, select=hit.checkpoint_id)
        self.timeline.focus()

    # ---- compare -------------------------------------------------------------------------

    def action_compare(self) -> None:
        """The selected checkpoint's run (B) against the marked one's (A)."""
        if self.source.store is None:
            return
        if self.selected is None:
            self.notify("select a checkpoint to compare", severity="warning")
            return
        if self.mark is None:
            self.notify(
                "mark the other run's checkpoint with m first, then select this run's and compare (c)",
                severity="warning",
            )
            return
        self.compare(self.mark, self.selected)

    @work(group="compare", exclusive=True, exit_on_error=False)
    async def compare(self, a: CheckpointMetadata, b: CheckpointMetadata, note: str = "") -> None:
        """Open the compare view of the runs ending at `a` and `b` (agentctl.compare)."""
        from agentctl.compare import compare
        from agentctl.tui.screens.compare import CompareScreen

        result = await compare(await self.source.ready(), a, b)
        self.app.push_screen(
            CompareScreen(
                result, f"{short_meta(a)} ({a.checkpoint_id})", f"{short_meta(b)} ({b.checkpoint_id})", note
            ),
            self._go_to,
        )

    def _go_to(self, target: str | None) -> None:
        if target:
            self._compare_closed(target)

    @work(group="compare", exclusive=True, exit_on_error=False)
    async def _compare_closed(self, target: str) -> None:
        """`g` in the compare view: show B's checkpoint where the runs parted."""
        meta = await self.source.db.get_metadata(target)
        if meta is not None:
            self.selected = None
            self.detail_loaded = None
            self.show_thread(meta.thread_id, select=meta.checkpoint_id)

    # ---- writes: agentctl.tui.flows ----------------------------------------------------

    def _write(self, action: str) -> None:
        from agentctl.tui import flows

        flows.start(self, action)

    def action_rewind(self) -> None:
        self._write("rewind")

    def action_branch(self) -> None:
        self._write("branch")

    def action_merge(self) -> None:
        self._write("merge")

    def action_prune(self) -> None:
        self._write("prune")

    def action_undo(self) -> None:
        self._write("undo")

    def action_redo(self) -> None:
        self._write("redo")

    def action_edit(self) -> None:
        self._write("edit")

    def action_run(self) -> None:
        from agentctl.tui import agent_run

        agent_run.start(self)

    @on(OperationFinished)
    @while_shown
    def _operation_finished(self, message: OperationFinished) -> None:
        error = message.severity == "error"
        self.notify(
            inert(message.summary),
            title=message.title or message.kind.capitalize(),
            markup=False,
            severity=message.severity,  # type: ignore[arg-type]
            timeout=20 if error else 8,
        )
        self.refresh_views(select_thread=message.select_thread, select=message.select)

    # ---- help ----------------------------------------------------------------------------

    def help_rows(self) -> list[tuple[str, str, str]]:
        """(key, what it does, binding id) of this screen's keys."""
        from agentctl.tui.palette import binding_help

        return [
            (self._key_shown(binding), binding_help(binding), binding.id or "")
            for binding in BINDINGS
            if isinstance(binding, Binding)
        ]

    def action_help(self) -> None:
        from agentctl.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.help_rows()))
