"""The `/` search: messages and tool results containing a text, across threads."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from agentctl.model import SearchHit
from agentctl.text import inert, shorten
from agentctl.tui.messages import SearchFinished


def hit_label(hit: SearchHit) -> Text:
    text = Text()
    text.append(f"{inert(hit.thread_id, one_line=True)}@{hit.step}", style="cyan")
    text.append(f"  {inert(hit.role or hit.where, one_line=True)}: ", style="dim")
    text.append(shorten(hit.snippet, 200))
    return text


class SearchScreen(ModalScreen[SearchHit | None]):
    """Type, enter: the app searches in a worker and posts SearchFinished here."""

    BINDINGS = [Binding("escape", "cancel", "Close", id="search.cancel")]

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.query_text = query
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="wide"):
            yield Static(Text("Search messages and tool results", style="bold"), id="dialog-title")
            yield Input(
                self.query_text, placeholder="text (case-insensitive), enter to search", id="search-input"
            )
            yield Static(Text("", style="dim"), id="search-status")
            yield OptionList(id="search-results")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        self.query_one("#search-status", Static).update(Text("searching…", style="italic"))
        self.app.search(text, self)  # type: ignore[attr-defined]

    @on(SearchFinished)
    def _finished(self, message: SearchFinished) -> None:
        if message.query != self.query_one(Input).value.strip():
            return  # a newer search is on its way
        self.hits = message.hits
        results = self.query_one(OptionList)
        results.clear_options()
        results.add_options([Option(hit_label(h)) for h in message.hits])
        n = len(message.hits)
        self.query_one("#search-status", Static).update(
            Text(
                f"{n} hit{'s' if n != 1 else ''} (newest first) · enter opens one"
                if n
                else "no checkpoint contains that text",
                style="dim",
            )
        )
        if n:
            results.highlighted = 0
            results.focus()

    @on(OptionList.OptionSelected, "#search-results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.hits[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)
