"""The `?` screen: every key, what it does, and its binding id (for AGENTCTL_KEYMAP)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

# Keys that belong to the panes' own widgets (not app bindings), shown for completeness.
NAVIGATION = [
    ("↑ ↓  j k", "move in the focused pane"),
    ("tab / shift+tab", "next / previous pane"),
    ("enter", "open: a thread's checkpoints, a branch, earlier checkpoints"),
    ("ctrl+p", "command palette (every action below)"),
]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        """rows: (key display, description, binding id)."""
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        table.add_column("id (AGENTCTL_KEYMAP)", style="dim", no_wrap=True)
        for key, text in NAVIGATION:
            table.add_row(key, text, "")
        for key, text, binding_id in self.rows:
            table.add_row(key, text, binding_id)
        with Vertical(id="dialog"):
            yield Static(Text("agentctl keys", style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(table)
            yield Static(
                Text(
                    'Remap keys with AGENTCTL_KEYMAP="rewind=ctrl+r,quit=ctrl+q" · escape closes', style="dim"
                ),
                id="dialog-text",
            )

    def action_close(self) -> None:
        self.dismiss(None)
