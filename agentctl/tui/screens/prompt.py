"""Small forms that ask for what a write needs: a branch name, a merge target, a prune policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Select, Static

PRUNE_POLICIES = [
    ("keep_last_n", "keep the last N checkpoints", "10"),
    ("keep_age", "keep checkpoints younger than N seconds", "86400"),
    ("keep_milestones", "keep N milestones (first, last, evenly spaced)", "5"),
    ("keep_all", "keep everything (nothing to prune)", "0"),
]


class _FormScreen(ModalScreen):
    """A dialog with an input and OK / Cancel: enter or OK submits, escape or Cancel
    dismisses with None. Subclasses say what submitting means."""

    def _submit(self) -> None:
        raise NotImplementedError

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PromptScreen(_FormScreen):
    """Asks for one value; dismisses with it (stripped) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(
        self,
        title: str,
        description: RenderableType,
        *,
        value: str = "",
        placeholder: str = "",
        suggestions: list[str] | None = None,
        ok_label: str = "OK",
        validate: Callable[[str], Any] | None = None,
        allow_empty: bool = False,
    ) -> None:
        """`allow_empty`: an empty value is an answer ("" : none), not refused."""
        super().__init__()
        self.allow_empty = allow_empty
        #: raises agentctl.errors.UsageError for a value to refuse (the dialog stays)
        self.validate = validate
        self.title_text = title
        self.description = description
        self.value = value
        self.placeholder = placeholder
        self.suggestions = suggestions or []
        self.ok_label = ok_label

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            yield Static(self.description, id="dialog-text")
            yield Input(
                self.value,
                placeholder=self.placeholder,
                id="prompt-input",
                suggester=SuggestFromList(self.suggestions, case_sensitive=True)
                if self.suggestions
                else None,
            )
            with Horizontal(id="dialog-buttons"):
                yield Button(self.ok_label, id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def _submit(self) -> None:
        value = self.query_one(Input).value.strip()
        if not value and not self.allow_empty:
            self.notify("a value is needed (escape cancels)", severity="warning")
            return
        if value and self.validate is not None:
            from agentctl.errors import UsageError

            try:
                self.validate(value)
            except UsageError as exc:
                self.notify(f"{exc} (escape cancels)", severity="error")
                return
        self.dismiss(value)


class PruneScreen(_FormScreen):
    """Asks for a GC policy and its parameter; dismisses with (policy, param) or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prune.cancel")]

    def __init__(self, thread_id: str, policies: tuple[str, ...] | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        # the policies the format means for one thread (History.prune_policies)
        self.policies = [p for p in PRUNE_POLICIES if policies is None or p[0] in policies] or PRUNE_POLICIES

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text("Prune thread", style="bold"), id="dialog-title")
            yield Static(
                Text.assemble(
                    "Thread ",
                    (self.thread_id, "cyan"),
                    ": choose what to keep. The head is always kept; "
                    "the next screen lists what would be deleted.",
                ),
                id="dialog-text",
            )
            yield Select(
                [(f"{name}: {text}", name) for name, text, _ in self.policies],
                value=self.policies[0][0],
                allow_blank=False,
                id="prune-policy",
            )
            yield Input(self.policies[0][2], placeholder="N", id="prune-param")
            with Horizontal(id="dialog-buttons"):
                yield Button("Preview", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#prune-param", Input).focus()

    @on(Select.Changed, "#prune-policy")
    def _policy_changed(self, event: Select.Changed) -> None:
        for name, _, default in PRUNE_POLICIES:
            if name == event.value:
                self.query_one("#prune-param", Input).value = default

    def _submit(self) -> None:
        policy = str(self.query_one("#prune-policy", Select).value)
        param = self.query_one("#prune-param", Input).value.strip()
        self.dismiss((policy, param))
