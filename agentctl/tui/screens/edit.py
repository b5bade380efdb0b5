"""The editor of `e`: a key path of the selected checkpoint's state and its new value as
JSON, checked as it is typed (an error line under the editor; Save is disabled while the
value is not JSON or the key is not there). It opens on the key; at 80x24 the value box
shrinks so that Save, Cancel and the keys stay in view. Dismisses with the edits
(agentctl.edits.Edit) or None; the flow (agentctl.tui.flows.edit) shows their diff next."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Static, TextArea

from agentctl import deep
from agentctl.edits import Edit, apply_edits, key_path, value_at
from agentctl.errors import UsageError

#: a whole state longer than this (as JSON) is not put in the editor to start with: its
#: first key is
MAX_START_CHARS = 20_000
MAX_SUGGESTIONS = 500


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def key_paths(state: Any, depth: int = 3) -> list[str]:
    """The state's keys, and nested keys of objects to `depth` (for the path's suggestions)."""
    out: list[str] = []

    def walk(node: Any, prefix: str, level: int) -> None:
        if not isinstance(node, dict) or level > depth:
            return
        for key, value in node.items():
            if len(out) >= MAX_SUGGESTIONS:
                return
            path = f"{prefix}{key}"
            out.append(path)
            walk(value, path + ".", level + 1)

    walk(state, "", 1)
    return out


def whole_state_edits(state: dict[str, Any], value: Any) -> list[Edit]:
    """The edits that make `state` into `value` (an object): its top-level keys set that
    differ, the ones left out unset."""
    if not isinstance(value, dict):
        raise UsageError("the whole state is a JSON object ({...})")
    return [Edit((k,), v) for k, v in value.items() if k not in state or state[k] != v] + [
        Edit((k,), unset=True) for k in state if k not in value
    ]


class EditScreen(ModalScreen["list[Edit] | None"]):
    """Edit one value of a state (empty key path: the whole state)."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="edit.cancel"),
        Binding("ctrl+s", "save", "Save", id="edit.save"),
    ]

    def __init__(self, title: str, state: dict[str, Any], path: str = "", new_keys: bool = False) -> None:
        """`new_keys`: the format's state is a free mapping (ADK): a new top-level key may be set."""
        super().__init__()
        self.title_text = title
        self.state = state
        self.new_keys = new_keys
        if not path and len(_json(state)) > MAX_START_CHARS and state:
            path = str(next(iter(state)))
        self.path = path
        self.edits: list[Edit] = []
        self.error = ""

    def compose(self) -> ComposeResult:
        found, value = value_at(self.state, key_path(self.path)) if self.path else (True, self.state)
        with Vertical(id="dialog", classes="wide"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            yield Static(
                Text(
                    "The key (dots: nested keys; a number: a list's item; empty: the whole "
                    "state), then its value as JSON; the diff shows before any write.",
                    style="dim",
                ),
                id="dialog-text",
            )
            yield Input(
                self.path,
                placeholder="key path, e.g. plan.next_city (empty: the whole state)",
                id="edit-path",
                suggester=SuggestFromList(key_paths(self.state), case_sensitive=True),
            )
            yield TextArea(
                _json(value) if found else "", id="edit-value", soft_wrap=True, show_line_numbers=True
            )
            yield Static("", id="edit-error")
            with Horizontal(id="dialog-buttons"):
                yield Button("Save", id="ok", variant="primary")
                yield Button("Cancel", id="cancel")
            yield Static(
                Text("enter / tab: to the value · ctrl+s: save · escape: cancel", style="dim"),
                id="dialog-keys",
            )

    def on_mount(self) -> None:
        # the key first (typing a key as the README says goes there, never into the value);
        # enter or tab moves to the value
        path = self.query_one("#edit-path", Input)
        path.focus()
        path.cursor_position = len(path.value)
        self._check()

    @on(Input.Changed, "#edit-path")
    def _path_changed(self, event: Input.Changed) -> None:
        path = event.value.strip()
        if path != self.path:
            self.path = path
            try:
                found, value = value_at(self.state, key_path(path)) if path else (True, self.state)
            except UsageError:
                found, value = False, None
            if found:  # an existing key: its value to edit (a new key keeps what was typed)
                area = self.query_one(TextArea)
                area.text = _json(value)
                if path:
                    area.select_all()  # typing replaces the value (the whole state is kept)
        self._check()

    @on(TextArea.Changed)
    def _value_changed(self, event: TextArea.Changed) -> None:
        self._check()

    @on(Input.Submitted, "#edit-path")
    def _path_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(TextArea).focus()

    def _parse(self) -> list[Edit]:
        text = self.query_one(TextArea).text
        try:
            value = deep.strict_loads(text)
        except ValueError as exc:
            raise UsageError(f'not JSON: {exc} (a string needs quotes: "Paris")') from None
        if not self.path:
            edits = whole_state_edits(self.state, value)
        else:
            edits = [Edit(key_path(self.path), value)]
        apply_edits(
            self.state, edits, new_keys=self.new_keys
        )  # an unknown key, a path through a value: said here
        return edits

    def _check(self) -> None:
        try:
            self.edits, self.error = self._parse(), ""
        except UsageError as exc:
            self.edits, self.error = [], str(exc)
        self.query_one("#edit-error", Static).update(Text(self.error, style="bold red"))
        self.query_one("#ok", Button).disabled = bool(self.error)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self.action_save()
        else:
            self.dismiss(None)

    def action_save(self) -> None:
        self._check()
        if self.error:
            self.notify(f"cannot save: {self.error}", severity="error", markup=False)
            return
        self.dismiss(self.edits)

    def action_cancel(self) -> None:
        self.dismiss(None)
