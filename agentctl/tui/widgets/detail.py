"""The selected checkpoint's detail: a header and the Messages, State, Tools and Diff tabs.
Every view comes from agentctl.render (the layer the CLI uses too).

`build_views` makes the tabs' renderables; the app runs it on a thread (a big checkpoint
takes a while), and caps what it shows: rendering 5 MB of JSON would freeze the screen
for half a minute.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from agentctl import render
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.text import inert, shorten

TABS = ("messages", "state", "tools", "diff")

# What a tab shows at most; the CLI (`agentctl show REF --json`) prints everything.
MAX_JSON_CHARS = 60_000
MAX_MESSAGES = 200
MAX_MESSAGE_CHARS = 60_000
MAX_CHANGES = 300

_CLI_HINT = "agentctl show REF --json prints all of it"


def _note(text: str) -> Text:
    return Text(text, style="italic yellow")


def json_preview(value: Any) -> RenderableType:
    """render.json_view, or for a value whose JSON is longer than MAX_JSON_CHARS its
    first MAX_JSON_CHARS characters, highlighted the same way, and a note.

    (render.json_view has no size limit; this could move there as a `limit` argument.)
    """
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) <= MAX_JSON_CHARS:
        return render.json_view(value)
    cut = text[:MAX_JSON_CHARS]
    cut = cut[: cut.rfind("\n") + 1] or cut
    shown = JSONHighlighter()(Text(inert(cut)))
    return Group(_note(f"{len(text):,} characters of JSON; the first {len(cut):,} shown "
                       f"({_CLI_HINT})"), shown, _note("… (cut)"))


def transcript_preview(messages: Any) -> RenderableType:
    """render.transcript of the last messages that fit in MAX_MESSAGES and
    MAX_MESSAGE_CHARS (a long run's later messages matter most), with a note.

    (The message numbers restart at [0] for the messages shown; the note says where
    they start.)
    """
    if not isinstance(messages, list) or not messages:
        return render.transcript(messages)
    start, size = len(messages), 0
    while start > 0 and len(messages) - start < MAX_MESSAGES:
        add = len(json.dumps(messages[start - 1], ensure_ascii=False, default=str))
        if size + add > MAX_MESSAGE_CHARS:
            break
        size += add
        start -= 1
    if start == 0:
        return render.transcript(messages)
    if start == len(messages):  # one message larger than the limit: its JSON, cut
        return Group(_note(f"{len(messages)} messages; the last is too large for this view "
                           f"({_CLI_HINT})"), json_preview(messages[-1]))
    return Group(_note(f"{len(messages)} messages; the last {len(messages) - start} shown, "
                       f"[0] below is message {start} ({_CLI_HINT})"),
                 render.transcript(messages[start:]))


def build_views(cp: Checkpoint, base: Checkpoint | None, base_kind: str,
                changes: list[Any], error: str = "") -> dict[str, RenderableType]:
    """The renderables of the four tabs (pure: safe to run on a thread)."""
    shown = changes[:MAX_CHANGES]
    diff: RenderableType = diff_heading(cp, base, base_kind, changes, error)
    if shown:
        parts: list[RenderableType] = [diff, Text(""), render.diff_table(shown)]
        if len(changes) > len(shown):
            parts.append(_note(f"… and {len(changes) - len(shown)} more changes "
                               "(agentctl diff lists all)"))
        diff = Group(*parts)
    return {
        "messages": transcript_preview(cp.messages) if cp.messages
        else Text("no messages", style="italic"),
        "state": json_preview(cp.state),
        "tools": json_preview(cp.tools_result) if cp.tools_result
        else Text("no tool results", style="italic"),
        "diff": diff,
    }


def checkpoint_header(meta: CheckpointMetadata, next_node: str = "") -> Text:
    """Three lines naming a checkpoint: id and thread@step; created_at, tags, next node;
    its parent. (A compact header for a narrow pane; render.metadata_table is the full
    two-column table.)"""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(inert(meta.checkpoint_id, one_line=True), style="bold yellow")
    text.append(f"  {inert(meta.thread_id, one_line=True)}@{meta.step}\n", style="cyan")
    text.append(inert(meta.created_at, one_line=True), style="dim")
    if meta.tags:
        text.append("  tags: ", style="dim")
        text.append(shorten(", ".join(meta.tags), 40))
    if next_node:
        text.append("  next: ", style="dim")
        text.append(shorten(next_node, 20))
    text.append("\nparent: ", style="dim")
    text.append(inert(meta.parent_checkpoint_id, one_line=True) if meta.parent_checkpoint_id
                else "none (a root)")
    return text


def diff_heading(cp: Checkpoint, base: Checkpoint | None, base_kind: str,
                 changes: list[Any], error: str) -> Text:
    text = Text()
    if base is None:
        text.append(error or "no parent to compare with (a root checkpoint)", style="italic")
        text.append("\nmark a checkpoint with m to diff against it, in any thread", style="dim")
        return text
    b = base.metadata
    text.append("marked " if base_kind == "mark" else "parent ", style="bold yellow" if base_kind == "mark" else "bold")
    text.append(f"{inert(b.thread_id, one_line=True)}@{b.step} ({inert(b.checkpoint_id, one_line=True)})")
    text.append("  →  ", style="dim")
    text.append(f"{inert(cp.metadata.thread_id, one_line=True)}@{cp.metadata.step}")
    n = len(changes)
    text.append(f"\n{n} change{'s' if n != 1 else ''}" if n else "\nno differences",
                style="bold" if n else "italic")
    if n:
        counts: dict[str, int] = {}
        for c in changes:
            counts[c.section] = counts.get(c.section, 0) + 1
        text.append("  " + ", ".join(f"{s}: {k}" for s, k in counts.items()), style="dim")
    return text


class DetailPane(Vertical):
    """Shows one checkpoint; `show_*` are called by the app with loaded data.

    The tabs (about twenty widgets) are mounted just after the first frame, so that the
    first frame, with the thread list, comes sooner; what is shown before that is kept
    and put in them when they are there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._contents: dict[str, RenderableType] = {tab: "" for tab in TABS}
        self._tab = "messages"
        self.tabs_ready = False

    def compose(self) -> ComposeResult:
        yield Static(Text("select a checkpoint", style="italic"), id="detail-header")

    def on_mount(self) -> None:
        self.call_after_refresh(self._mount_tabs)

    async def _mount_tabs(self) -> None:
        if not self.is_attached or not self.app.is_running:  # the app closed at once (a
            return                                       # database that cannot be opened, q)
        panes = [TabPane(tab.capitalize(), VerticalScroll(
                    Static(self._contents[tab], id=f"{tab}-view"), id=f"{tab}-scroll"), id=tab)
                 for tab in TABS]
        tabbed = TabbedContent(initial=self._tab, id="detail-tabs")
        for pane in panes:  # as `with TabbedContent(): yield TabPane(...)` in a compose
            tabbed.compose_add_child(pane)
        await self.mount(tabbed)
        self.tabs_ready = True

    def _set(self, contents: dict[str, RenderableType]) -> None:
        self._contents.update(contents)
        if self.tabs_ready:
            for tab, renderable in contents.items():
                self.query_one(f"#{tab}-view", Static).update(renderable)

    def show_loading(self, meta: CheckpointMetadata) -> None:
        self.query_one("#detail-header", Static).update(checkpoint_header(meta))

    def show_message(self, text: str) -> None:
        self.query_one("#detail-header", Static).update(Text(text, style="italic"))
        self._set({tab: "" for tab in TABS})

    def show_error(self, meta: CheckpointMetadata | None, error: str) -> None:
        if meta is not None:
            self.query_one("#detail-header", Static).update(checkpoint_header(meta))
        body = Text(inert(error), style="bold red")
        self._set({tab: body for tab in TABS})

    def show_checkpoint(self, cp: Checkpoint, views: dict[str, RenderableType]) -> None:
        """Show a checkpoint's tabs, made by `build_views`."""
        self.query_one("#detail-header", Static).update(checkpoint_header(cp.metadata, cp.next_node))
        self._set(views)

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active if self.tabs_ready else self._tab

    def show_tab(self, tab: str) -> None:
        if self.tabs_ready:
            self.query_one(TabbedContent).active = tab
        else:
            self._tab = tab
