"""The selected checkpoint's detail: a header and the Messages, State, Tools and Diff tabs.
Every view comes from agentctl.render (the layer the CLI uses too)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from agentctl import render
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.text import inert, shorten

TABS = ("messages", "state", "tools", "diff")


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
    """Shows one checkpoint; `show_*` are called by the app with loaded data."""

    def compose(self) -> ComposeResult:
        yield Static(Text("select a checkpoint", style="italic"), id="detail-header")
        with TabbedContent(initial="messages", id="detail-tabs"):
            for tab in TABS:
                with TabPane(tab.capitalize(), id=tab):
                    with VerticalScroll(id=f"{tab}-scroll"):
                        yield Static(id=f"{tab}-view")

    def _view(self, tab: str) -> Static:
        return self.query_one(f"#{tab}-view", Static)

    def show_loading(self, meta: CheckpointMetadata) -> None:
        self.query_one("#detail-header", Static).update(checkpoint_header(meta))

    def show_message(self, text: str) -> None:
        self.query_one("#detail-header", Static).update(Text(text, style="italic"))
        for tab in TABS:
            self._view(tab).update("")

    def show_error(self, meta: CheckpointMetadata | None, error: str) -> None:
        if meta is not None:
            self.query_one("#detail-header", Static).update(checkpoint_header(meta))
        body = Text(inert(error), style="bold red")
        for tab in TABS:
            self._view(tab).update(body)

    def show_checkpoint(self, cp: Checkpoint, base: Checkpoint | None, base_kind: str,
                        changes: list[Any], error: str = "") -> None:
        self.query_one("#detail-header", Static).update(checkpoint_header(cp.metadata, cp.next_node))
        views: dict[str, RenderableType] = {
            "messages": render.transcript(cp.messages) if cp.messages
            else Text("no messages", style="italic"),
            "state": render.json_view(cp.state),
            "tools": render.json_view(cp.tools_result) if cp.tools_result
            else Text("no tool results", style="italic"),
            "diff": Group(diff_heading(cp, base, base_kind, changes, error), Text(""),
                          render.diff_table(changes)) if changes
            else diff_heading(cp, base, base_kind, changes, error),
        }
        for tab, renderable in views.items():
            self._view(tab).update(renderable)

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    def show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
