"""The agentctl TUI: the App on one database. Its screen (agentctl.tui.screens.main)
shows threads, a thread's checkpoint tree and a checkpoint's detail; the writes are
agentctl.tui.flows; the command palette's commands come from the keys
(agentctl.tui.palette).

Lifecycle: the database is opened by a worker once the app runs (so it lives on the
app's event loop) and closed when the app unmounts. Every read and write runs in a
worker that posts a message (agentctl.tui.messages); the UI never awaits the database.
Every write goes through the format's History, behind a ConfirmScreen that shows its plan.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker

from agentctl.errors import AgentctlError, redact_dsn
from agentctl.model import CheckpointMetadata
from agentctl.text import inert
from agentctl.tui.messages import DatabaseFailed, DatabaseOpened
from agentctl.tui.screens.main import QUIT, MainScreen, report_worker_error
from agentctl.tui.source import DataSource
from agentctl.tui.widgets.detail import DetailPane
from agentctl.tui.widgets.threads import ThreadList
from agentctl.tui.widgets.timeline import CheckpointTree

_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def _key_names() -> set[str]:
    """The names Textual gives keys: its Keys, and the printable ASCII characters (as
    themselves and by name: slash, question_mark, ...)."""
    import unicodedata

    from textual.keys import KEY_NAME_REPLACEMENTS, Keys

    names = {k.value.split("+")[-1] for k in Keys if not k.value.startswith("<")}
    for code in range(33, 127):
        char = chr(code)
        name = unicodedata.name(char).lower().replace(" ", "_").replace("-", "_")
        names |= {char, KEY_NAME_REPLACEMENTS.get(name, name)}
    return names


def parse_keymap(spec: str, known: Iterable[str] | None = None) -> dict[str, str]:
    """`"rewind=ctrl+r,quit=ctrl+q"` -> {binding id: keys}. An entry that is not
    ID=KEY, a binding id not in `known` or a key Textual has no name for is a
    UsageError (one line, exit 2), not silently ignored."""
    from agentctl.errors import UsageError

    ids = set(known) if known is not None else None
    names: set[str] | None = None
    out: dict[str, str] = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        binding_id, sep, key = (x.strip() for x in part.partition("="))
        what = f"AGENTCTL_KEYMAP entry {inert(part.strip(), one_line=True)!r}"
        if not sep or not binding_id or not key:
            raise UsageError(f"{what} is not ID=KEY (e.g. rewind=ctrl+r)")
        if ids is not None and binding_id not in ids:
            raise UsageError(
                f"{what}: no key binding has the id {inert(binding_id, one_line=True)!r} "
                f"(ids: {', '.join(sorted(ids))})"
            )
        *mods, name = key.split("+")
        names = names if names is not None else _key_names()
        if any(m not in _MODIFIERS for m in mods) or name not in names:
            raise UsageError(
                f"{what}: {inert(key, one_line=True)!r} is not a key (e.g. ctrl+r, f5, question_mark)"
            )
        out[binding_id] = key
    _refuse_shadowing(out)
    return out


def _key_name(key: str) -> str:
    """One name for a key Textual knows by two ("?" and "question_mark")."""
    import unicodedata

    from textual.keys import KEY_NAME_REPLACEMENTS

    *mods, name = key.split("+")
    if len(name) == 1 and not name.isalnum():
        plain = unicodedata.name(name, name).lower().replace(" ", "_").replace("-", "_")
        name = KEY_NAME_REPLACEMENTS.get(plain, plain)
    return "+".join([*mods, name])


def _refuse_shadowing(keymap: dict[str, str]) -> None:
    """A binding moved onto the key of quit or help (as they are after the keymap)
    would take it away without a word: a UsageError instead."""
    from agentctl.errors import UsageError
    from agentctl.tui.screens.main import MainScreen

    defaults = {
        b.id: b.key for b in MainScreen.BINDINGS if isinstance(b, Binding) and b.id in ("quit", "help")
    }
    guarded = {_key_name(keymap.get(bid, key)): bid for bid, key in defaults.items()}
    for binding_id, key in keymap.items():
        owner = guarded.get(_key_name(key))
        if owner is not None and owner != binding_id:
            raise UsageError(
                f"AGENTCTL_KEYMAP entry '{binding_id}={inert(key, one_line=True)}' takes {key!r} "
                f"from {owner}; give {owner} another key too "
                f"(e.g. {owner}={'ctrl+q' if owner == 'quit' else 'f1'}) or pick another"
            )


def _palette() -> Any:
    from agentctl.tui.palette import BindingCommands

    return BindingCommands


class AgentctlApp(App[None]):
    """agentctl's terminal UI on one database."""

    CSS_PATH = os.path.join(os.path.dirname(__file__), "app.tcss")  # subclasses elsewhere too
    TITLE = "agentctl"
    BINDINGS = [QUIT]
    COMMANDS = App.COMMANDS | {_palette}

    def __init__(
        self,
        db: str,
        *,
        readonly: bool = False,
        keymap: dict[str, str] | None = None,
        history_options: dict[str, Any] | None = None,
        format: str | None = None,
        agent: str | None = None,
        config: str | None = None,
        python: str | None = None,
    ) -> None:
        """`keymap`: {binding id: keys}, else from AGENTCTL_KEYMAP. `history_options`: extra
        arguments of the format's History (tests pass a seeded `rng` for stable thread
        names). `format`: the database's format, detected when None. `agent`, `config`,
        `python`: the user's agent that `R` runs and that a LangGraph edit writes through
        (as `agentctl run` takes them; default: langgraph.json in the current directory)."""
        super().__init__()
        self.source = DataSource(db, readonly=readonly, history_options=history_options, format=format)
        self.readonly = readonly
        self.db_name = inert(redact_dsn(db), one_line=True)  # until the store names it
        self.open_error: BaseException | None = None
        if keymap is None:
            spec = os.environ.get("AGENTCTL_KEYMAP", "")
            keymap = parse_keymap(spec, binding_ids()) if spec.strip() else {}
        self._keymap = dict(keymap)
        self._main = MainScreen(
            self.source,
            readonly=readonly,
            db_name=self.db_name,
            open_database=self.open_database,
            key_shown=self.key_shown,
            agent={"agent": agent, "config": config, "python": python},
        )

    def get_default_screen(self) -> MainScreen:
        return self._main

    @property
    def main(self) -> MainScreen:
        """The main screen (under any dialog open)."""
        return self._main

    def on_mount(self) -> None:
        if self._keymap:
            self.set_keymap(self._keymap)

    async def on_unmount(self) -> None:
        self._main.stop_run()
        self.workers.cancel_all()
        await self.source.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        report_worker_error(self, event)

    # ---- what the main screen shows --------------------------------------------------

    @property
    def threads(self) -> ThreadList:
        return self._main.threads

    @property
    def timeline(self) -> CheckpointTree:
        return self._main.timeline

    @property
    def detail(self) -> DetailPane:
        return self._main.detail

    @property
    def thread_id(self) -> str | None:
        return self._main.thread_id

    @property
    def selected(self) -> CheckpointMetadata | None:
        return self._main.selected

    @property
    def mark(self) -> CheckpointMetadata | None:
        return self._main.mark

    @property
    def following(self) -> bool:
        return self._main.following

    # ---- opening --------------------------------------------------------------------

    @work(group="db", exclusive=True, exit_on_error=False)
    async def open_database(self) -> None:
        """Open the database (the main screen asks once it is mounted); the main screen
        gets DatabaseOpened, or the app DatabaseFailed and exits."""
        try:
            store = await self.source.open()
        except AgentctlError as exc:
            self.post_message(DatabaseFailed(exc))
            return
        self._main.post_message(DatabaseOpened(store.display_name, store.kind))

    @on(DatabaseFailed)
    def _failed(self, message: DatabaseFailed) -> None:
        # `run()` re-raises it after the app is gone: one line on stderr, its exit code.
        self.open_error = message.error
        self.exit()

    # ---- keys -------------------------------------------------------------------------

    def key_shown(self, binding: Binding) -> str:
        """A key as the help shows it: as remapped (AGENTCTL_KEYMAP), else as Textual does."""
        key = self._keymap.get(binding.id or "")
        return key if key is not None else self.get_key_display(binding)

    def search(self, text: str, screen: Any) -> None:
        """Search for the search dialog `screen` (it gets SearchFinished)."""
        self._main.search(text, screen)


def binding_ids() -> list[str]:
    """The ids AGENTCTL_KEYMAP can remap: the app's bindings' and its dialogs'."""
    from agentctl.tui.screens.compare import CompareScreen
    from agentctl.tui.screens.confirm import ConfirmScreen
    from agentctl.tui.screens.edit import EditScreen
    from agentctl.tui.screens.help import HelpScreen
    from agentctl.tui.screens.prompt import PromptScreen, PruneScreen
    from agentctl.tui.screens.run import RunScreen
    from agentctl.tui.screens.search import SearchScreen

    owners = (
        AgentctlApp,
        MainScreen,
        ConfirmScreen,
        HelpScreen,
        PromptScreen,
        PruneScreen,
        SearchScreen,
        EditScreen,
        CompareScreen,
        RunScreen,
    )
    return [b.id for owner in owners for b in owner.BINDINGS if isinstance(b, Binding) and b.id]


def run(
    db: str,
    *,
    readonly: bool = False,
    format: str | None = None,
    agent: str | None = None,
    config: str | None = None,
    python: str | None = None,
) -> None:
    """Run the TUI on a database until the user quits. A database that cannot be opened
    raises its AgentctlError after the app has closed (the CLI reports it). `agent`,
    `config`, `python`: AgentctlApp's."""
    app = AgentctlApp(db, readonly=readonly, format=format, agent=agent, config=config, python=python)
    app.run()
    if app.open_error is not None:
        raise app.open_error
