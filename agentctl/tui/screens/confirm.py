"""A confirm dialog that shows what a write will change before it happens."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[str | None]):
    """Dismisses with the id of the chosen button, or None (cancel / escape / n)."""

    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel", id="confirm.cancel"),
        Binding("y", "confirm", "Confirm", id="confirm.yes"),
    ]

    def __init__(
        self,
        title: str,
        body: RenderableType,
        choices: list[tuple[str, str, str]] | None = None,
        keys: list[tuple[str, str, str]] | None = None,
    ) -> None:
        """`choices`: (id, label, variant) buttons before Cancel. With one choice `y`
        takes it; between several the user picks a button (tab, enter). `keys`: (key,
        id, what it does) more answers by key alone (e.g. `o`: the run's options)."""
        super().__init__()
        self.title_text = title
        self.body = body
        self.choices = choices or [("confirm", "Confirm", "primary")]
        self.keys = keys or []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body)
            with Horizontal(id="dialog-buttons"):
                for choice_id, label, variant in self.choices:
                    yield Button(label, id=choice_id, variant=variant)  # type: ignore[arg-type]
                yield Button("Cancel", id="cancel")
            keys = (
                "y: " + self.choices[0][1].lower()
                if len(self.choices) == 1
                else "tab / shift+tab: choose, enter: press"
            )
            more = "".join(f" · {key}: {what}" for key, _, what in self.keys)
            yield Static(Text(f"{keys}{more} · n or escape: cancel", style="dim"), id="dialog-keys")

    def on_mount(self) -> None:
        self.query_one(f"#{self.choices[0][0]}", Button).focus()

    def on_key(self, event: Any) -> None:
        for key, answer, _ in self.keys:
            if event.key == key:
                event.stop()
                self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_confirm(self) -> None:
        if len(self.choices) == 1:
            self.dismiss(self.choices[0][0])
