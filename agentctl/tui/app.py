"""The agentctl TUI: threads, a thread's checkpoint tree, a checkpoint's detail.

Lifecycle: the backend is opened by a worker once the app runs (so it lives on the
app's event loop) and closed when the app unmounts. Every read and write runs in a
worker that posts a message (agentctl.tui.messages); the UI never awaits the database.
Every write goes through the engine, behind a ConfirmScreen that shows the engine's plan.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from typing import Any, Awaitable, Callable, Iterable

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Static, Tree
from textual.worker import Worker, WorkerState

from agentctl.errors import AgentctlError, MergeConflictError, redact_dsn
from agentctl.storage import PruneSpec
from agentctl.model import CheckpointMetadata, SearchHit
from agentctl.text import inert
from agentctl.tui.messages import (
    BranchesLoaded,
    DatabaseChanged,
    DatabaseFailed,
    DatabaseOpened,
    DetailLoaded,
    OperationFinished,
    SearchFinished,
    ThreadPageLoaded,
    ThreadsLoaded,
)
from agentctl.tui.source import CHECKPOINT_PAGE, THREAD_PAGE, DataSource, changes_between
from agentctl.tui.widgets.detail import TABS, DetailPane, build_views
from agentctl.tui.widgets.footer import KeyFooter
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

_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def _key_names() -> set[str]:
    """The names Textual gives keys: its Keys, and the printable ASCII characters (as
    themselves and by name: slash, question_mark, ...)."""
    import unicodedata

    from textual.keys import KEY_NAME_REPLACEMENTS, Keys

    names = {k.value.split("+")[-1] for k in Keys if not k.value.startswith("<")}
    for code in range(33, 127):
        char = chr(code)
        name = unicodedata.name(char).lower().replace(" ", "_").replace("-", "_")
        names |= {char, KEY_NAME_REPLACEMENTS.get(name, name)}
    return names


def parse_keymap(spec: str, known: Iterable[str] | None = None) -> dict[str, str]:
    """`"rewind=ctrl+r,quit=ctrl+q"` -> {binding id: keys}. An entry that is not
    ID=KEY, a binding id not in `known` or a key Textual has no name for is a
    UsageError (one line, exit 2), not silently ignored."""
    from agentctl.errors import UsageError

    ids = set(known) if known is not None else None
    names: set[str] | None = None
    out: dict[str, str] = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        binding_id, sep, key = (x.strip() for x in part.partition("="))
        what = f"AGENTCTL_KEYMAP entry {inert(part.strip(), one_line=True)!r}"
        if not sep or not binding_id or not key:
            raise UsageError(f"{what} is not ID=KEY (e.g. rewind=ctrl+r)")
        if ids is not None and binding_id not in ids:
            raise UsageError(f"{what}: no key binding has the id {inert(binding_id, one_line=True)!r} "
                             f"(ids: {', '.join(sorted(ids))})")
        *mods, name = key.split("+")
        names = names if names is not None else _key_names()
        if any(m not in _MODIFIERS for m in mods) or name not in names:
            raise UsageError(f"{what}: {inert(key, one_line=True)!r} is not a key "
                             "(e.g. ctrl+r, f5, question_mark)")
        out[binding_id] = key
    return out


def while_shown(handler: Callable[..., Any]) -> Callable[..., Any]:
    """For handlers of what workers post: do nothing once the main view is gone (the
    app is closing: its screen is being, or has been, removed before the queue emptied)."""
    @functools.wraps(handler)
    def wrapper(self: "AgentctlApp", *message: Any) -> Any:
        if not self.is_running or not self.query(ThreadList):
            return None
        return handler(self, *message)
    return wrapper


def short_meta(meta: CheckpointMetadata) -> str:
    return f"{inert(meta.thread_id, one_line=True)}@{meta.step}"


class AgentctlApp(App[None]):
    """agentctl's terminal UI on one database."""

    CSS_PATH = "app.tcss"
    TITLE = "agentctl"

    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit"),
        Binding("question_mark", "help", "Help", id="help", key_display="?"),
        Binding("slash", "search", "Search", id="search", key_display="/"),
        Binding("m", "mark", "Mark", id="mark"),
        Binding("r", "rewind", "Rewind", id="rewind"),
        Binding("b", "branch", "Branch", id="branch"),
        Binding("M", "merge", "Merge", id="merge"),
        Binding("p", "prune", "Prune", id="prune"),
        Binding("u", "undo", "Undo", id="undo"),
        Binding("R", "refresh", "Refresh", id="refresh"),
        Binding("f", "follow", "Follow", id="follow"),
        Binding("t", "filter_threads", "Filter threads", id="filter", show=False),
        Binding("1", "tab('messages')", "Messages tab", id="tab.messages", show=False),
        Binding("2", "tab('state')", "State tab", id="tab.state", show=False),
        Binding("3", "tab('tools')", "Tools tab", id="tab.tools", show=False),
        Binding("4", "tab('diff')", "Diff tab", id="tab.diff", show=False),
    ]

    # What each action does, for the help screen and the command palette.
    ACTION_HELP = {
        "quit": "Quit agentctl",
        "help": "Show the keys",
        "search": "Search messages, tool results and state in every thread",
        "mark": "Mark the selected checkpoint: the Diff tab then compares with it (again: unmark)",
        "rewind": "Rewind the thread to the selected checkpoint (later ones are archived, undoable)",
        "branch": "Branch a new thread from the selected checkpoint",
        "merge": "Merge the selected checkpoint's thread into another thread",
        "prune": "Prune the selected thread's checkpoints by a policy",
        "undo": "Undo the last operation",
        "refresh": "Reload threads, checkpoints and detail",
        "follow": "Follow mode: show new checkpoints as an agent writes them",
        "filter_threads": "Filter threads by id prefix",
        "tab('messages')": "Show the Messages tab",
        "tab('state')": "Show the State tab",
        "tab('tools')": "Show the Tools tab",
        "tab('diff')": "Show the Diff tab",
    }

    def __init__(self, db: str, *, readonly: bool = False,
                 keymap: dict[str, str] | None = None,
                 engine_options: dict[str, Any] | None = None, format: str | None = None) -> None:
        """`keymap`: {binding id: keys}, else from AGENTCTL_KEYMAP. `engine_options`: extra
        arguments of the format's History (tests pass a seeded `rng` for stable thread
        names). `format`: the database's format, detected when None."""
        super().__init__()
        self.source = DataSource(db, readonly=readonly, engine_options=engine_options, format=format)
        self.readonly = readonly
        self.db_name = inert(redact_dsn(db), one_line=True)  # until the backend names it
        self.open_error: BaseException | None = None
        self.thread_id: str | None = None        # the thread shown in the tree
        self.selected: CheckpointMetadata | None = None
        self.mark: CheckpointMetadata | None = None
        self.following = False
        self.detail_loaded: str | None = None
        self._threads_refreshed_at = 0.0
        self._threads_timer: Any = None
        self.first_paint: float | None = None
        self.follow_polls = 0  # how many times follow mode has looked (tests wait on it)
        self._keymap = dict(keymap if keymap is not None
                            else parse_keymap(os.environ.get("AGENTCTL_KEYMAP", ""), binding_ids()))

    # ---- layout ---------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="panes"):
            with Vertical(id="left"):
                yield ThreadList(id="threads-pane")
                yield CheckpointTree(id="tree")
            yield DetailPane(id="detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        if self._keymap:
            self.set_keymap(self._keymap)
        self.query_one("#threads-pane").border_title = "Threads"
        self.query_one("#tree").border_title = "Checkpoints"
        self.query_one("#detail").border_title = "Detail"
        self.timeline.set_message("loading…")
        self.detail.show_message("opening the database…")
        self._show_status()
        self.threads.table.focus()
        first = self.source.first_threads()
        if first is not None:  # read while the app started: shown in the first frame
            self.threads.set_threads(first[0], 0, first[1])
            self._threads_refreshed_at = time.monotonic()
            self._show_first_thread()
        else:  # still being read (or a Postgres database): shown when it comes
            self.load_threads("", 0)
        self.call_after_refresh(self._painted)
        self.open_database()

    def _painted(self) -> None:
        # When the first frame was on screen (time.perf_counter()): the benchmark reads it.
        if self.first_paint is None:
            self.first_paint = time.perf_counter()

    async def on_unmount(self) -> None:
        self.workers.cancel_all()
        await self.source.close()

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
        text.append(" " + (self.source.backend.display_name if self.source.backend is not None
                           else self.db_name), style="bold")
        if self.readonly:
            text.append("  READ-ONLY (writes disabled)", style="bold yellow")
        text.append("  follow: ", style="dim")
        text.append("on" if self.following else "off",
                    style="bold green" if self.following else "dim")
        if self.mark is not None:
            text.append("  mark: ", style="dim")
            text.append("★ " + short_meta(self.mark), style="bold yellow")
        self.query_one("#status", Static).update(text)

    # ---- errors: shown in the UI, never a traceback over the screen ----------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, AgentctlError):
            self.notify(inert(redact_dsn(str(error))), title="Error", severity="error",
                        markup=False)
        else:
            self.log.error(repr(error))
            self.notify(inert(redact_dsn(f"{type(error).__name__}: {error}")),
                        title="Unexpected error", severity="error", markup=False, timeout=15)

    # ---- opening --------------------------------------------------------------------

    @work(group="db", exclusive=True, exit_on_error=False)
    async def open_database(self) -> None:
        try:
            backend = await self.source.open()
        except AgentctlError as exc:
            self.post_message(DatabaseFailed(exc))
            return
        self.post_message(DatabaseOpened(backend.display_name, backend.kind))

    @on(DatabaseOpened)
    @while_shown
    def _opened(self, message: DatabaseOpened) -> None:
        self._show_status()
        if self.thread_id is None:
            self.timeline.set_message("select a thread")
        if self.selected is None:
            self.detail.show_message("select a checkpoint")
        if not self.threads.fetching:  # the threads came before the database opened
            self._show_first_thread()

    @on(DatabaseFailed)
    def _failed(self, message: DatabaseFailed) -> None:
        # `run()` re-raises it after the app is gone: one line on stderr, its exit code.
        self.open_error = message.error
        self.exit()

    # ---- threads ---------------------------------------------------------------------

    @work(group="threads", exclusive=True, exit_on_error=False)
    async def load_threads(self, prefix: str, offset: int, delay: float = 0.0,
                           keep: str | None = None, limit: int = THREAD_PAGE) -> None:
        if delay:
            await asyncio.sleep(delay)  # typing in the filter: wait for a pause
        summaries, has_more = await self.source.threads(prefix, offset, limit)
        message = ThreadsLoaded(prefix, offset, summaries, has_more)
        message.keep = keep  # type: ignore[attr-defined]
        self.post_message(message)

    def reload_threads(self, keep: str | None) -> None:
        """Reload the rows shown (as many as are loaded), the cursor staying on `keep`."""
        self.load_threads(self.threads.prefix, 0, keep=keep,
                          limit=max(THREAD_PAGE, self.threads.loaded))

    @on(ThreadsLoaded)
    @while_shown
    def _threads_loaded(self, message: ThreadsLoaded) -> None:
        threads = self.threads
        if message.prefix != threads.prefix:
            return  # the filter changed since
        keep = getattr(message, "keep", None) or self.thread_id
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
        if self.thread_id is not None:
            return
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

    def show_thread(self, thread_id: str, *, select: str | None = None, delay: float = 0.0,
                    keep_selection: bool = False) -> None:
        if thread_id != self.thread_id:
            self.thread_id = thread_id
            self.timeline.set_message(f"loading {inert(thread_id, one_line=True)}…")
            self.threads.select(thread_id)  # its row (if loaded) follows, loading nothing
        self.load_thread(thread_id, select=select, delay=delay, keep_selection=keep_selection)

    @work(group="thread", exclusive=True, exit_on_error=False)
    async def load_thread(self, thread_id: str, select: str | None = None, delay: float = 0.0,
                          keep_selection: bool = False) -> None:
        if delay:
            await asyncio.sleep(delay)  # moving through the list: load where it stops
        metas, total = await self.source.thread_page(thread_id)
        if select is not None:
            # A search hit further back: load pages up to it (bounded).
            while (metas and select not in {m.checkpoint_id for m in metas}
                   and len(metas) < min(total, JUMP_MAX_ROWS)):
                older, total = await self.source.thread_page(thread_id, offset=len(metas))
                if not older:
                    break
                metas = older + metas
        origin = await self.source.origin(thread_id)
        message = ThreadPageLoaded(thread_id, metas, 0, total, select=select, origin=origin)
        message.keep_selection = keep_selection  # type: ignore[attr-defined]
        self.post_message(message)
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
        if target is None and getattr(message, "keep_selection", False) and previous:
            if not (self.following and was_at_head):
                target = previous
        if target is None or not tree.select_checkpoint(target):
            if target is not None and message.select is not None:
                self.notify(f"checkpoint is more than {JUMP_MAX_ROWS} rows before the head; "
                            "showing its detail only", severity="warning")
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
        self.post_message(ThreadPageLoaded(thread_id, metas, offset, total, into=node,
                                           generation=generation))
        if offset == 0:
            self.post_message(BranchesLoaded(thread_id, await self.source.branches(thread_id)))

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._checkpoint_highlighted(event.node)

    def _checkpoint_highlighted(self, node: Any) -> None:
        item = node.data if node is not None else None
        if isinstance(item, CheckpointItem):
            if self.selected is not None and self.selected.checkpoint_id == item.meta.checkpoint_id \
                    and self.detail_loaded == item.meta.checkpoint_id:
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
            # Diffing and laying out a big checkpoint is CPU work: off the event loop.
            views = await asyncio.to_thread(build_views, d.checkpoint, d.base, d.base_kind,
                                            d.changes, d.error)
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
        if self.selected is None:
            self.selected = message.checkpoint.metadata
        self.detail.show_checkpoint(message.checkpoint, message.views)

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
            self.notify(f"marked {short_meta(self.mark)}: select any checkpoint (any thread) "
                        "and open the Diff tab (4)", markup=False)
        self.timeline.set_marked(self.mark.checkpoint_id if self.mark else None)
        self._show_status()

    def action_refresh(self) -> None:
        self.refresh_views()

    def refresh_views(self, select_thread: str | None = None) -> None:
        if self.source.backend is None:
            return
        thread = select_thread or self.thread_id
        self.reload_threads(thread)
        if thread is not None:
            if thread != self.thread_id:
                self.thread_id = thread
            self.detail_loaded = None
            self.load_thread(thread, keep_selection=True)

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
            if self.source.backend is not None:
                try:
                    token = await self.source.change_token(self.thread_id)
                except AgentctlError as exc:
                    self.following = False
                    self._show_status()
                    self.notify(inert(f"follow mode stopped: {exc}"), severity="error",
                                markup=False)
                    return
                if last is None or last_thread != self.thread_id:
                    # Rows may have come between the last load and this first look.
                    self.post_message(DatabaseChanged(True, last is None))
                elif token != last:
                    self.post_message(DatabaseChanged(token[1] != last[1], token[0] != last[0]))
                last, last_thread = token, self.thread_id
                self.follow_polls += 1
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
        if self.source.backend is None:
            return
        from agentctl.tui.screens.search import SearchScreen

        self.push_screen(SearchScreen(), self._search_chosen)

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

    # ---- writes ---------------------------------------------------------------------------

    def _can_write(self, action: str) -> bool:
        if self.readonly:
            self.notify(f"read-only mode: {action} is disabled (started with --readonly)",
                        severity="warning", markup=False)
            return False
        if self.source.backend is None:
            return False
        if not self.source.backend.can(action):  # what this database's format cannot do
            self.notify(f"the {self.source.backend.format.name} format does not support {action}",
                        severity="warning", markup=False)
            return False
        return True

    def _need_selection(self, action: str) -> CheckpointMetadata | None:
        if self.selected is None:
            self.notify(f"select a checkpoint to {action}", severity="warning")
        return self.selected

    async def _confirm(self, title: str, body: RenderableType,
                       choices: list[tuple[str, str, str]] | None = None) -> str | None:
        from agentctl.tui.screens.confirm import ConfirmScreen

        return await self.push_screen_wait(ConfirmScreen(title, body, choices))

    def _done(self, kind: str, summary: str, select_thread: str | None = None) -> None:
        self.post_message(OperationFinished(kind, summary, select_thread))

    @on(OperationFinished)
    @while_shown
    def _operation_finished(self, message: OperationFinished) -> None:
        self.notify(inert(message.summary), title=message.kind.capitalize(), markup=False,
                    timeout=8)
        self.refresh_views(select_thread=message.select_thread)

    def action_rewind(self) -> None:
        if self._can_write("rewind") and (meta := self._need_selection("rewind")):
            self.rewind_flow(meta)

    @work(group="write", exclusive=True, exit_on_error=False)
    async def rewind_flow(self, meta: CheckpointMetadata) -> None:
        from agentctl.render import plan_text

        engine = self.source.engine
        plan = await engine.plan_rewind(meta.checkpoint_id)
        if not plan.moved:
            self.notify(f"{short_meta(meta)} is already the head: nothing to rewind",
                        markup=False)
            return
        choice = await self._confirm(f"Rewind {short_meta(meta)}?", plan_text(plan),
                                     [("confirm", "Rewind", "warning")])
        if choice is None:
            self.notify("rewind cancelled: nothing changed")
            return
        # The archive thread named in the preview is the one written.
        result = await engine.rewind(meta.checkpoint_id, archive_thread=plan.archive_thread)
        archive = getattr(result, "archive_thread", None) or plan.archive_thread
        summary = (f"rewound {meta.thread_id} to step {meta.step}; {len(plan.moved)} later "
                   f"checkpoint(s) " + ("kept as a branch (a fork is the new head)"
                                        if archive == meta.thread_id  # LangGraph
                                        else f"moved to {archive}" if archive else "removed")
                   + " (u undoes)")
        self._done("rewind", summary, meta.thread_id)

    def action_branch(self) -> None:
        if self._can_write("branch") and (meta := self._need_selection("branch from")):
            self.branch_flow(meta)

    @work(group="write", exclusive=True, exit_on_error=False)
    async def branch_flow(self, meta: CheckpointMetadata) -> None:
        from agentctl.refs import check_branch_name
        from agentctl.tui.screens.prompt import PromptScreen

        body = Text.assemble(
            "A new thread ", ("<thread>-branch-<name>-<4 hex>", "cyan"),
            " starts with a copy of ", (short_meta(meta), "bold"), " (step 0, tags branch, "
            "<name>).\nNothing else changes. Name:")
        name = await self.push_screen_wait(PromptScreen(
            f"Branch from {short_meta(meta)}", body, placeholder="branch name, e.g. retry-backoff",
            ok_label="Branch", validate=check_branch_name))
        if name is None:
            self.notify("branch cancelled: nothing changed")
            return
        thread = await self.source.engine.branch(meta.checkpoint_id, name)
        self._done("branch", f"created branch thread {thread} from {short_meta(meta)} (u undoes)",
                   thread)

    def action_merge(self) -> None:
        if not self._can_write("merge"):
            return
        thread = self.selected.thread_id if self.selected is not None else self.thread_id
        if thread is None:
            self.notify("select a thread to merge", severity="warning")
            return
        self.merge_flow(thread)

    @work(group="write", exclusive=True, exit_on_error=False)
    async def merge_flow(self, branch: str) -> None:
        from agentctl.render import diff_table, plan_text
        from agentctl.tui.screens.prompt import PromptScreen

        summary = await self.source.db.thread_summary(branch)
        default = summary.branch_of if summary is not None and summary.branch_of else ""
        suggestions = [t for t in self.threads.summaries if t != branch]
        target = await self.push_screen_wait(PromptScreen(
            f"Merge {inert(branch, one_line=True)} into…",
            Text("The thread to merge into (its head gets one new merge checkpoint). "
                 "The next screen shows the merge and any conflicts."),
            value=default, placeholder="target thread id", suggestions=suggestions,
            ok_label="Preview"))
        if target is None:
            self.notify("merge cancelled: nothing changed")
            return
        engine = self.source.engine
        plan = await engine.plan_merge(branch, target)
        if plan.up_to_date:
            self.notify(inert(f"{target} already contains {branch}: nothing to merge", one_line=True))
            return
        if plan.conflicts:
            # plan_text lists the conflicts; the result depends on the side chosen.
            body: RenderableType = Group(
                plan_text(plan),
                Text(f"\na three-way merge cannot decide {len(plan.conflicts)} conflict(s): "
                     "merge keeping ours (the target's values) or theirs (the branch's), "
                     "or cancel.", style="bold red"))
            choices = [("ours", "Keep ours", "warning"), ("theirs", "Keep theirs", "warning")]
            title = f"Merge {branch} into {target}: conflicts"
        else:
            # What the target's head would become: the merged checkpoint against it.
            changes = [c for c in changes_between(plan.ours, plan.merged)
                       if c.section != "metadata"]
            effect: RenderableType = Group(
                Text(f"\nchanges to {inert(target, one_line=True)}'s head:", style="bold"),
                diff_table(changes)) if changes else Text(
                "\nno change to the target's messages, state or tools", style="dim")
            body = Group(plan_text(plan), effect)
            choices = [("three-way", "Merge", "primary")]
            title = f"Merge {branch} into {target}?"
        choice = await self._confirm(inert(title, one_line=True), body, choices)
        if choice is None:
            self.notify("merge cancelled: nothing changed")
            return
        try:
            cid = await engine.merge_branch(branch, target, strategy=choice,
                                            checkpoint_id=plan.merged.metadata.checkpoint_id)
        except MergeConflictError as exc:
            # The target moved between the preview and the merge.
            self.notify(inert(str(exc)), title="Merge conflict", severity="error", markup=False)
            return
        self._done("merge", f"merged {branch} into {target} as {cid} "
                   f"({'strategy ' + choice + ', ' if choice != 'three-way' else ''}u undoes)",
                   target)

    def action_prune(self) -> None:
        if not self._can_write("prune"):
            return
        thread = self.selected.thread_id if self.selected is not None else self.thread_id
        if thread is None:
            self.notify("select a thread to prune", severity="warning")
            return
        self.prune_flow(thread)

    @work(group="write", exclusive=True, exit_on_error=False)
    async def prune_flow(self, thread: str) -> None:
        from agentctl.render import plan_text
        from agentctl.tui.screens.prompt import PruneScreen

        answer = await self.push_screen_wait(PruneScreen(inert(thread, one_line=True)))
        if answer is None:
            self.notify("prune cancelled: nothing changed")
            return
        policy, raw = answer
        try:
            param = int(raw or "0")
        except ValueError:
            self.notify(f"the parameter must be a whole number, not {inert(raw, one_line=True)!r}",
                        severity="error", markup=False)
            return
        spec = prune_spec(thread, policy, param)
        engine = self.source.engine
        plans = await engine.plan_prune_spec(spec)
        count = sum(p.delete_count for p in plans)
        kept = sum(p.keep_count for p in plans)
        if not count:
            self.notify(f"{policy} {param} keeps all {kept} checkpoints of "
                        f"{thread}: nothing to prune", markup=False)
            return
        from rich.console import Group

        body = plan_text(plans[0]) if len(plans) == 1 else Group(*[plan_text(p) for p in plans])
        choice = await self._confirm(f"Prune {inert(thread, one_line=True)}?", body,
                                     [("confirm", f"Delete {count}", "error")])
        if choice is None:
            self.notify("prune cancelled: nothing changed")
            return
        results = await engine.prune_spec(spec)
        results = results if isinstance(results, list) else [results]
        deleted = sum(len(r.deleted) for r in results)
        self._done("prune", f"pruned {thread}: {deleted} checkpoint(s) deleted, "
                   f"{kept} kept (u undoes)", thread)

    def action_undo(self) -> None:
        if self._can_write("undo"):
            self.undo_flow()

    @work(group="write", exclusive=True, exit_on_error=False)
    async def undo_flow(self) -> None:
        engine = self.source.engine
        ops = [op for op in await engine.oplog(limit=50)
               if getattr(op, "undoable", not op.undone and op.kind not in ("undo", "purge"))]
        if not ops:
            self.notify("nothing to undo")
            return
        op = ops[0]
        body = Text()
        body.append(f"#{op.op_id} {op.kind}", style="bold")
        body.append(f"  {inert(op.created_at, one_line=True)}\n", style="dim")
        body.append(inert(op.summary))
        if op.threads:
            body.append("\nthreads: ", style="dim")
            body.append(inert(", ".join(op.threads)))
        choice = await self._confirm("Undo the last operation?", body,
                                     [("confirm", "Undo", "warning")])
        if choice is None:
            self.notify("undo cancelled: nothing changed")
            return
        result = await engine.undo(op.op_id)
        select = op.threads[0] if op.threads else None
        self._done("undo", result.summary, select)

    # ---- help and the command palette --------------------------------------------------

    def help_rows(self) -> list[tuple[str, str, str]]:
        rows = []
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            key = self._keymap.get(binding.id or "", None)
            shown = key if key is not None else self.get_key_display(binding)
            rows.append((shown, self.ACTION_HELP.get(binding.action, binding.description),
                         binding.id or ""))
        return rows

    def action_help(self) -> None:
        from agentctl.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.help_rows()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.action == "quit":
                continue  # a built-in command
            yield SystemCommand(binding.description, self.ACTION_HELP.get(binding.action, ""),
                                self._palette_callback(binding.action))

    def _palette_callback(self, action: str) -> Callable[[], Awaitable[Any]]:
        async def run() -> None:
            await self.run_action(action)
        return run


def prune_spec(thread: str, policy: str, param: int) -> PruneSpec:
    """The PruneSpec of the prune dialog's answer (a policy of CheckpointGC's names)."""
    field = {"keep_last_n": "keep_last", "keep_age": "older_than",
             "keep_milestones": "milestones"}.get(str(getattr(policy, "value", policy)), "keep_last")
    options: dict[str, Any] = {field: param}
    return PruneSpec(threads=[thread], **options)


def binding_ids() -> list[str]:
    """The ids AGENTCTL_KEYMAP can remap: the app's bindings' and its dialogs'."""
    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.help import HelpScreen
    from agentctl.tui.screens.prompt import PromptScreen, PruneScreen
    from agentctl.tui.screens.search import SearchScreen

    owners = (AgentctlApp, ConfirmScreen, HelpScreen, PromptScreen, PruneScreen, SearchScreen)
    return [b.id for owner in owners for b in owner.BINDINGS if isinstance(b, Binding) and b.id]


def run(db: str, *, readonly: bool = False, format: str | None = None) -> None:
    """Run the TUI on a database until the user quits. A database that cannot be opened
    raises its AgentctlError after the app has closed (the CLI reports it)."""
    app = AgentctlApp(db, readonly=readonly, format=format)
    app.run()
    if app.open_error is not None:
        raise app.open_error
