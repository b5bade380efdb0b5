"""The threads pane: a thread-id prefix filter over a paged table of threads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widget import AwaitMount
from textual.widgets import DataTable, Input, Static

from agentctl.model import ThreadSummary
from agentctl.text import inert
from agentctl.tui.widgets.timeline import BRANCH_GLYPH

# Ask for the next page when the cursor gets this close to the last loaded row.
PREFETCH_ROWS = 10


class ThreadTable(DataTable):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("home,g", "scroll_top", "First", show=False),
        Binding("end,G", "scroll_bottom", "Last", show=False),
    ]

    def on_resize(self) -> None:
        # The id column takes the width left: long ids are cut, never scrolled sideways.
        column = self.columns.get("thread")  # type: ignore[call-overload]
        if column is not None:
            column.auto_width = False
            column.width = max(8, self.size.width - 5 - 4 * self.cell_padding - 1)
            self.refresh()


def thread_row(summary: ThreadSummary, depth: int = 0) -> tuple[Text, Text]:
    """The cells of one thread: its size and its id (BRANCH_GLYPH for a branch, indented
    by how deep it sits under the threads shown above it)."""
    name = Text()
    if summary.branch_of:
        name.append("  " * max(0, depth - 1) + f"{BRANCH_GLYPH} ", style="magenta")
    name.append(inert(summary.thread_id, one_line=True))
    return Text(str(summary.checkpoints), justify="right"), name


def family_order(summaries: list[ThreadSummary]) -> list[tuple[ThreadSummary, int]]:
    """The threads in the order loaded (activity), each branch moved right under the
    thread it was branched from (after that thread's newer branches), recursively, with
    its depth; a branch whose thread is not among them stays where it is (depth 1)."""
    ids = {s.thread_id for s in summaries}
    kids: dict[str, list[ThreadSummary]] = {}
    for s in summaries:
        if s.branch_of in ids and s.branch_of != s.thread_id:
            kids.setdefault(s.branch_of, []).append(s)
    out: list[tuple[ThreadSummary, int]] = []
    placed: set[str] = set()

    def put(s: ThreadSummary, depth: int) -> None:
        stack = [(s, depth)]
        while stack:
            cur, d = stack.pop()
            if cur.thread_id in placed:
                continue
            placed.add(cur.thread_id)
            out.append((cur, d))
            stack.extend((k, d + 1) for k in reversed(kids.get(cur.thread_id, [])))

    for s in summaries:
        if s.branch_of not in ids or s.branch_of == s.thread_id:
            put(s, 1 if s.branch_of else 0)
    for s in summaries:  # in a cycle of branch_of (not made by agentctl): as loaded
        if s.thread_id not in placed:
            put(s, 1)
    return out


class ThreadList(Vertical):
    """Threads, newest activity first, a page at a time; filtered by id prefix."""

    @dataclass
    class Highlighted(Message):
        thread_id: str

    @dataclass
    class Chosen(Message):
        thread_id: str

    @dataclass
    class MoreWanted(Message):
        prefix: str
        offset: int

    @dataclass
    class FilterChanged(Message):
        prefix: str

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prefix = ""
        self.loaded = 0
        self.has_more = False
        self.fetching = True
        self.summaries: dict[str, ThreadSummary] = {}

    def compose(self) -> ComposeResult:
        # The filter box is mounted after the first frame (`add_filter`): that frame,
        # with the rows, comes sooner without it.
        table = ThreadTable(id="thread-table", cursor_type="row", zebra_stripes=False)
        table.add_column("ckpts", key="count", width=5)
        table.add_column("thread", key="thread")
        yield table
        yield Static(Text("loading threads…", style="italic"), id="thread-status")

    def add_filter(self) -> AwaitMount:
        """Mount the filter box above the table (the main screen does, after its first frame)."""
        return self.mount(
            Input(placeholder="filter: thread id prefix", id="thread-filter"), before=self.table
        )

    @property
    def table(self) -> ThreadTable:
        return self.query_one(ThreadTable)

    @property
    def current(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return key.value

    def select(self, thread_id: str) -> bool:
        """Put the cursor on a thread if it is among the loaded rows."""
        if thread_id not in self.summaries:
            return False
        self.table.move_cursor(row=self.table.get_row_index(thread_id), animate=False)
        return True

    def show_fetching(self, text: str = "loading threads…") -> None:
        self.fetching = True
        self.query_one("#thread-status", Static).update(Text(text, style="italic"))

    def set_threads(
        self, summaries: list[ThreadSummary], offset: int, has_more: bool, keep: str | None = None
    ) -> None:
        """Show a page: offset 0 replaces the rows (keeping the cursor on `keep`)."""
        table = self.table
        if offset == 0:
            table.clear()
            self.summaries.clear()
        shown = list(self.summaries)
        for s in summaries:
            if s.thread_id in self.summaries:
                continue  # the list moved under us between pages (a writer); keep one row
            self.summaries[s.thread_id] = s
        order = family_order(list(self.summaries.values()))
        if [s.thread_id for s, _ in order[: len(shown)]] != shown:
            # a branch of a thread shown on an earlier page (or its thread): rows again
            keep = self.current if offset else keep
            table.clear()
            shown = []
        for s, depth in order[len(shown) :]:
            table.add_row(*thread_row(s, depth), key=s.thread_id)
        self.loaded = offset + len(summaries)
        self.has_more = has_more
        self.fetching = False
        if (offset == 0 or not shown) and keep is not None and keep in self.summaries:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        self._show_status()

    def _show_status(self) -> None:
        n = self.table.row_count
        if n == 0:
            text = Text(
                f"no thread starts with {inert(self.prefix, one_line=True)!r}"
                if self.prefix
                else "no threads in this database",
                style="italic",
            )
        else:
            text = Text(
                f"{n}{'+' if self.has_more else ''} thread{'s' if n != 1 else ''}"
                + (" (more load as you scroll)" if self.has_more else ""),
                style="dim",
            )
        self.query_one("#thread-status", Static).update(text)

    @on(DataTable.RowHighlighted, "#thread-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key.value != self.current:
            return  # stale: the rows were rebuilt (a reload) and the cursor moved on
        if event.row_key.value is not None:
            self.post_message(self.Highlighted(event.row_key.value))
        if self.has_more and not self.fetching and event.cursor_row >= self.table.row_count - PREFETCH_ROWS:
            self.show_fetching("loading more threads…")
            self.post_message(self.MoreWanted(self.prefix, self.loaded))

    @on(DataTable.RowSelected, "#thread-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Chosen(event.row_key.value))

    @on(Input.Changed, "#thread-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.prefix = event.value
        self.show_fetching()
        self.post_message(self.FilterChanged(event.value))

    @on(Input.Submitted, "#thread-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()
