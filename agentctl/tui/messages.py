"""The messages workers post to the UI (past tense: something has happened).

Each message carries what it was asked for (a thread id, a checkpoint id, a query), so
a handler can drop a result that no longer matches the selection (a stale result).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary


@dataclass
class DatabaseOpened(Message):
    """The store is connected."""

    display_name: str
    kind: str


@dataclass
class DatabaseFailed(Message):
    """The store could not be opened; the app cannot go on."""

    error: BaseException


@dataclass
class ThreadsLoaded(Message):
    """A page of threads (`offset` 0 replaces the list, else it is appended)."""

    prefix: str
    offset: int
    summaries: list[ThreadSummary]
    has_more: bool
    keep: str | None = None  # the thread the cursor stays on (None: the shown one)


@dataclass
class ThreadPageLoaded(Message):
    """A page of a thread's checkpoints, oldest first.

    `offset` counts from the head (0 = the newest page); `total` is the thread's size.
    `into` is the tree node to fill, in the tree's `generation` (None: show the thread
    anew). `tail`: the newest page, fetched because the thread grew (follow mode).
    `keep_selection`: a reload (refresh, a write): the selection stays where it was.
    """

    thread_id: str
    metas: list[CheckpointMetadata]
    offset: int
    total: int
    into: Any = None
    generation: int = 0
    select: str | None = None
    origin: CheckpointMetadata | None = None
    tail: bool = False
    keep_selection: bool = False  # a reload: the cursor stays on the selected checkpoint


@dataclass
class BranchesLoaded(Message):
    """The first rows of the branches forked from a thread, by the id they fork from."""

    thread_id: str
    branches: dict[str, list[CheckpointMetadata]]


@dataclass
class DetailLoaded(Message):
    """The selected checkpoint and its tabs' renderables (built off the event loop)."""

    checkpoint_id: str
    checkpoint: Checkpoint | None
    views: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass
class DatabaseChanged(Message):
    """Follow mode saw another writer change the database.

    Repeats waiting in the queue merge into one (what changed, or-ed): a busy UI loads
    the tail and the thread list once, not once per poll."""

    thread_changed: bool
    threads_changed: bool

    def can_replace(self, message: Message) -> bool:
        """Whether `message` (the next in the queue) supersedes this one: another change
        does, taking over what this one says changed."""
        if not isinstance(message, DatabaseChanged):
            return False
        message.thread_changed |= self.thread_changed
        message.threads_changed |= self.threads_changed
        return True


@dataclass
class OperationFinished(Message):
    """A write went through the format's History."""

    kind: str
    summary: str
    select_thread: str | None = None
    select: str | None = None  # the checkpoint to select (a new one the write made)
    title: str | None = None  # the notice's title (default: the kind), its severity
    severity: str = "information"


@dataclass
class SearchFinished(Message):
    """The result of a `/` search."""

    query: str
    hits: list[SearchHit]
