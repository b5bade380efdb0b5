"""The checkpoint data model: plain dataclasses, no I/O.

`CheckpointMetadata` and `Checkpoint` keep the field names, defaults and the
`to_dict()` / `from_dict()` shape of the original AgentOS module, so code written
against it keeps working. `ThreadSummary` and `SearchHit` are what the debugger adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


def utc_now_iso() -> str:
    """The current time as the writers store it: ISO-8601 with +00:00."""
    return datetime.now(timezone.utc).isoformat()


@dataclass
class CheckpointMetadata:
    """What identifies a checkpoint and places it in its thread."""

    thread_id: str
    checkpoint_id: str
    step: int
    parent_checkpoint_id: str | None = None
    created_at: str = field(default_factory=utc_now_iso)
    tags: list[str] = field(default_factory=list)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_id": self.checkpoint_id,
            "parent_checkpoint_id": self.parent_checkpoint_id,
            "step": self.step,
            "created_at": self.created_at,
            "tags": self.tags,
            "summary": self.summary,
        }

    @classmethod
    def from_dict(cls, meta: dict[str, Any]) -> CheckpointMetadata:
        return cls(
            thread_id=meta["thread_id"],
            checkpoint_id=meta["checkpoint_id"],
            parent_checkpoint_id=meta.get("parent_checkpoint_id"),
            step=meta["step"],
            created_at=meta["created_at"],
            tags=meta.get("tags", []),
            summary=meta.get("summary", ""),
        )


@dataclass
class Checkpoint:
    """One full snapshot of an agent run: messages, state, tool results."""

    metadata: CheckpointMetadata
    messages: list[dict[str, Any]]
    state: dict[str, Any]
    tools_result: dict[str, Any]
    next_node: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metadata": self.metadata.to_dict(),
            "messages": self.messages,
            "state": self.state,
            "tools_result": self.tools_result,
            "next_node": self.next_node,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Checkpoint:
        return cls(
            metadata=CheckpointMetadata.from_dict(d["metadata"]),
            messages=d.get("messages", []),
            state=d.get("state", {}),
            tools_result=d.get("tools_result", {}),
            next_node=d.get("next_node", ""),
        )


@dataclass
class ThreadSummary:
    """One line of `threads list`: a thread and its head, computed in one query.

    `branch_of` is the thread of the checkpoint the thread's first row points at
    when that checkpoint lives in another thread (a branch), else None.
    """

    thread_id: str
    checkpoints: int
    head_step: int
    head_checkpoint_id: str
    updated_at: str
    head_summary: str = ""
    first_created_at: str = ""
    branch_of: str | None = None
    branch_point: str | None = None

    def extra_columns(self) -> list[tuple[str, Any]]:
        """The format's own fields that `threads list` shows between HEAD and UPDATED, as
        (HEADER, value); none for AgentOS."""
        return []

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "head_step": self.head_step,
            "head_checkpoint_id": self.head_checkpoint_id,
            "updated_at": self.updated_at,
            "head_summary": self.head_summary,
            "first_created_at": self.first_created_at,
            "branch_of": self.branch_of,
            "branch_point": self.branch_point,
        }


@dataclass
class SearchHit:
    """A checkpoint whose messages, tool results or state match a search."""

    thread_id: str
    checkpoint_id: str
    step: int
    where: str  # "messages", "tools_result" or "state"
    role: str | None
    snippet: str
    #: where in the checkpoint the text is, as `diff` writes paths
    #: (messages[3].content, state.trip.city, tools_result.weather.city); "" if unknown
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "checkpoint_id": self.checkpoint_id,
            "step": self.step,
            "where": self.where,
            "role": self.role,
            "snippet": self.snippet,
            "path": self.path,
        }
