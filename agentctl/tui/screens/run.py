"""The run's dialog (`R`): the checkpoints the user's agent saves, one line each as they
come, while the tree behind shows them too; escape or ctrl+c stops the run (the child
process is stopped; what it saved stays). The flow (agentctl.tui.agent_run) closes it
when the run ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from agentctl.text import inert


def checkpoint_line(event: dict[str, Any]) -> Text:
    """One saved checkpoint (or an SDK's item) as `agentctl run` prints it."""
    if "text" in event:  # an SDK's item (Agno: a message of step N's run)
        unit = "step" if "id" in event else "item"
        return Text(
            inert(f"{unit} {event.get('step')}  {event.get('kind')}  {event.get('text')}", one_line=True)
        )
    nodes = ", ".join(map(str, event.get("nodes") or [])) or str(event.get("source") or "")
    keys = ", ".join(map(str, event.get("keys") or []))
    text = Text()
    text.append(f"step {event.get('step')}  ", style="bold")
    text.append(inert(str(event.get("id") or event.get("ref")), one_line=True), style="yellow")
    text.append("  " + inert(nodes, one_line=True), style="cyan")
    if keys:
        text.append("  changed: " + inert(keys, one_line=True), style="dim")
    return text


class RunScreen(ModalScreen[None]):
    """Shows a run as it goes; `stop` is called on escape / ctrl+c."""

    BINDINGS = [Binding("escape,ctrl+c", "stop", "Stop the run", id="run.stop")]

    def __init__(self, title: str, stop: Callable[[], None]) -> None:
        super().__init__()
        self.title_text = title
        self._stop = stop
        self.lines: list[Text] = []
        self.stopping = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="run"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with VerticalScroll(id="run-log"):
                yield Static(Text("starting the agent…", style="italic"), id="run-lines")
            yield Static(
                Text("escape / ctrl+c: stop the run (what it saved stays)", style="dim"), id="dialog-keys"
            )

    def add(self, line: Text) -> None:
        self.lines.append(line)
        self.query_one("#run-lines", Static).update(Text("\n").join(self.lines))
        self.query_one("#run-log", VerticalScroll).scroll_end(animate=False)

    def action_stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.add(Text("stopping the run…", style="bold yellow"))
            self._stop()
