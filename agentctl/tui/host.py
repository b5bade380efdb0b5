"""What the write flows (flows.py, agent_run.py) need of the screen that starts them:
the main screen (screens/main.py) imports them when a write starts, so they name its
type here, a Protocol, instead of importing the screen back (no import circles, type-only
ones included: tests/structure/test_layers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App
    from textual.message import Message
    from textual.notifications import SeverityLevel

    from agentctl.model import CheckpointMetadata
    from agentctl.tui.source import DataSource
    from agentctl.tui.widgets.threads import ThreadList


class WriteHost(Protocol):
    """The main screen as a write flow sees it."""

    agent: dict[str, str | None]  # the agent `R` runs (`--agent`, `--config`, `--python`)
    edit_path: str  # the key the last edit changed
    running: Any  # the child process of a run going on
    thread_id: str | None  # the thread shown in the tree
    selected: CheckpointMetadata | None

    @property
    def app(self) -> App[object]: ...

    @property
    def source(self) -> DataSource: ...

    @property
    def readonly(self) -> bool: ...

    @property
    def threads(self) -> ThreadList: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def run_worker(
        self,
        work: Any,
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Any: ...

    def load_tail(self, thread_id: str) -> Any: ...

    def compare(self, a: CheckpointMetadata, b: CheckpointMetadata, note: str = "") -> Any: ...
