"""The compare view: where two runs parted (agentctl.compare's result, drawn by
agentctl.render as `agentctl compare` draws it). Opened after `R` (the run's new head
against the head before it) and by `c` / the palette's "Compare with…" (the selected
checkpoint against the marked one)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from agentctl import render
from agentctl.text import inert


def compare_body(result: Any, a_name: str, b_name: str, note: str = "") -> RenderableType:
    """What the view shows: which runs A and B are, then `render.comparison_view`."""
    head = Text()
    if note:
        head.append(note + "\n", style="italic")
    head.append("A ", style="bold red")
    head.append(inert(a_name, one_line=True))
    head.append("  ·  ", style="dim")
    head.append("B ", style="bold green")
    head.append(inert(b_name, one_line=True))
    head.append(
        f"\n{result.common_steps} step(s) alike"
        + (f", from fork point {inert(result.fork_point, one_line=True)}" if result.fork_point else "")
        + "\n",
        style="dim",
    )
    return Group(head, render.comparison_view(result, fit=True))


class CompareScreen(ModalScreen[str | None]):
    """Shows a comparison; dismisses with B's checkpoint at the divergence (`g`: go to
    it) or None (escape)."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="compare.close"),
        Binding("g", "go", "Go to B", id="compare.go"),
    ]

    def __init__(self, result: Any, a_name: str, b_name: str, note: str = "") -> None:
        super().__init__()
        self.result = result
        self.body = compare_body(result, a_name, b_name, note)

    def compose(self) -> ComposeResult:
        step = self.result.first_divergent_step
        title = (
            "Compare: the runs do not part" if step is None else f"Compare: the runs parted at step {step}"
        )
        with Vertical(id="dialog", classes="wide"):
            yield Static(Text(title, style="bold"), id="dialog-title")
            with VerticalScroll(id="compare-body"):
                yield Static(self.body, id="compare-view")
            with Horizontal(id="dialog-buttons"):
                if step is not None:
                    yield Button("Go to B's step", id="go")
                yield Button("Close", id="close", variant="primary")
            yield Static(
                Text(
                    ("g: go to B's checkpoint where they parted · " if step is not None else "")
                    + "escape: close",
                    style="dim",
                ),
                id="dialog-keys",
            )

    def on_mount(self) -> None:
        self.query_one("#close", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "go":
            self.action_go()
        else:
            self.dismiss(None)

    def action_go(self) -> None:
        self.dismiss(self.result.b_at)

    def action_close(self) -> None:
        self.dismiss(None)
