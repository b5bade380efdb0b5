"""The selected checkpoint's detail: a header and the Messages, State, Tools and Diff tabs
(their contents: agentctl.tui.views, made off the event loop)."""

from __future__ import annotations

import asyncio
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.text import inert, shorten

TABS = ("messages", "state", "tools", "diff")
TABS_AFTER = 0.1  # seconds after the pane is mounted


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
    text.append(
        inert(meta.parent_checkpoint_id, one_line=True) if meta.parent_checkpoint_id else "none (a root)"
    )
    return text


class DetailPane(Vertical):
    """Shows one checkpoint; `show_*` are called by the app with loaded data.

    The tabs (about twenty widgets) are mounted a moment (TABS_AFTER) after the first frame, so that the
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
        # In a worker, a moment after the first frame: that frame (the thread list) and
        # the first thread's load come first; the tabs have nothing to show before that.
        self.run_worker(self._mount_tabs_soon(), group="detail-tabs", exit_on_error=False)

    async def _mount_tabs_soon(self) -> None:
        await asyncio.sleep(TABS_AFTER)
        await self._mount_tabs()

    async def _mount_tabs(self) -> None:
        if not self.is_attached or not self.app.is_running:  # the app closed at once (a
            return  # database that cannot be opened, q)
        from textual.containers import VerticalScroll
        from textual.widgets import TabbedContent, TabPane

        panes = [
            TabPane(
                tab.capitalize(),
                VerticalScroll(Static(self._contents[tab], id=f"{tab}-view"), id=f"{tab}-scroll"),
                id=tab,
            )
            for tab in TABS
        ]
        tabbed = TabbedContent(initial=self._tab, id="detail-tabs")
        for pane in panes:  # as `with TabbedContent(): yield TabPane(...)` in a compose
            tabbed.compose_add_child(pane)
        await self.mount(tabbed)
        self.tabs_ready = True
        # What was shown while they mounted (the first checkpoint may come meanwhile).
        self._set({tab: self._contents[tab] for tab in TABS})
        if tabbed.active != self._tab:
            tabbed.active = self._tab

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
        return self.query_one("#detail-tabs").active if self.tabs_ready else self._tab  # type: ignore[attr-defined]

    def show_tab(self, tab: str) -> None:
        if self.tabs_ready:
            self.query_one("#detail-tabs").active = tab  # type: ignore[attr-defined]
        else:
            self._tab = tab
