"""The engine's types: triggers, retention policies, the configuration, the plans and
results of its writes (AgentOS's names and defaults), and the named values the
engine's modules pass each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, NamedTuple

from agentctl.errors import UsageError
from agentctl.model import Checkpoint, CheckpointMetadata

MERGE_STRATEGIES = ("three-way", "ours", "theirs")


class SnapshotTrigger(str, Enum):
    """What made a snapshot; its value is the checkpoint's tag."""

    TOOL_CALL = "tool_call"
    LLM_CALL = "llm_call"
    STATE_CHANGE = "state_change"
    TASK_BOUNDARY = "task_boundary"
    MANUAL = "manual"
    INTERVAL = "interval"


class CheckpointGC(str, Enum):
    """Retention policies (see agentctl.engine's doc for their exact meaning)."""

    KEEP_ALL = "keep_all"
    KEEP_LAST_N = "keep_last_n"
    KEEP_AGE = "keep_age"
    KEEP_MILESTONES = "keep_milestones"


def duration_text(seconds: float) -> str:
    """Seconds as `prune --older-than` takes them: 2592000 -> '30d', 129600 -> '1d12h'."""
    if seconds <= 0 or seconds != int(seconds):
        return f"{seconds:g}s"
    rest, out = int(seconds), ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, rest = divmod(rest, size)
        if n:
            out += f"{n}{unit}"
    return out


def policy_text(policy: "CheckpointGC | str", param: Any) -> str:
    """A retention policy and its parameter as plans and op summaries show them:
    'keep_last_n 20', 'keep_age 30d'."""
    name = getattr(policy, "value", policy)
    if not isinstance(param, (int, float)):
        return f"{name} {param}"
    return f"{name} {duration_text(param) if name == CheckpointGC.KEEP_AGE.value else f'{param:g}'}"


@dataclass
class SnapshotConfig:
    """Which triggers snapshot, the automatic GC after each snapshot, deltas, size limit."""

    triggers: set[SnapshotTrigger] = field(default_factory=lambda: {
        SnapshotTrigger.MANUAL,
        SnapshotTrigger.TOOL_CALL,
        SnapshotTrigger.LLM_CALL,
        SnapshotTrigger.STATE_CHANGE,
    })
    gc_policy: CheckpointGC = CheckpointGC.KEEP_LAST_N
    gc_param: float = 100  # n for keep_last_n / keep_milestones, seconds for keep_age
    delta_snapshots: bool = False  # AgentOS's default was True, but it did nothing
    max_snapshot_size_mb: float = 10.0
    delta_keyframe_every: int = 16  # a full row at least every this many snapshots


@dataclass
class TimeTravelResult:
    """What a rewind did. AgentOS's five fields, then agentctl's."""

    checkpoint: Checkpoint
    thread_id: str
    rewind_depth: int  # how many checkpoints were set aside (moved or deleted)
    snapshot_count_before: int  # checkpoints in the thread before the rewind
    can_replay: bool = True
    op_id: int | None = None  # None when nothing was after the target
    archive_thread: str | None = None  # where they went (None when hard or nothing moved)
    moved: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint.metadata.checkpoint_id,
            "thread_id": self.thread_id,
            "step": self.checkpoint.metadata.step,
            "rewind_depth": self.rewind_depth,
            "snapshot_count_before": self.snapshot_count_before,
            "can_replay": self.can_replay,
            "op_id": self.op_id,
            "archive_thread": self.archive_thread,
            "moved": list(self.moved),
            "deleted": list(self.deleted),
        }


@dataclass
class RewindPlan:
    """What `rewind(target, hard)` would do. Nothing is written to make it."""

    target: CheckpointMetadata
    thread_id: str
    moved: list[CheckpointMetadata]  # the checkpoints after the target, in order
    archive_thread: str | None  # where they would go; None when hard or nothing moves
    hard: bool

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target.to_dict(), "thread_id": self.thread_id,
                "moved": [m.to_dict() for m in self.moved],
                "archive_thread": self.archive_thread, "hard": self.hard}


@dataclass
class MergePlan:
    """What `merge_branch` would write. `conflicts` are unresolved (three-way);
    `resolved` are those the strategy settled. `up_to_date`: nothing to merge."""

    base: CheckpointMetadata | None
    ours: Checkpoint
    theirs: Checkpoint
    merged: Checkpoint
    conflicts: list[Any]
    strategy: str
    branch_thread_id: str = ""
    into_thread_id: str = ""
    resolved: list[Any] = field(default_factory=list)
    up_to_date: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict() if self.base else None,
            "ours": self.ours.metadata.to_dict(),
            "theirs": self.theirs.metadata.to_dict(),
            "merged": self.merged.to_dict(),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "resolved": [c.to_dict() for c in self.resolved],
            "strategy": self.strategy,
            "branch_thread_id": self.branch_thread_id,
            "into_thread_id": self.into_thread_id,
            "up_to_date": self.up_to_date,
        }


@dataclass
class PrunePlan:
    """What `prune` would delete (in thread order) and how many checkpoints stay.

    `delete_count`: how many it deletes; `len(delete)` unless the plan is a preview
    (`plan_prune(..., preview=N)`), whose `delete` holds only the first N."""

    thread_id: str
    policy: CheckpointGC
    param: float
    delete: list[CheckpointMetadata]
    keep_count: int
    delete_count: int = -1
    #: why, in words, when the policy alone does not say it (a session store's prune
    #: deletes whole sessions: "the whole session (status cancelled)")
    reason: str = ""
    #: the kept checkpoints whose parent the prune deletes, and the parent each gets:
    #: (checkpoint_id, old parent, new parent: the nearest kept ancestor, or None)
    reparent: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    #: how many checkpoints the policy would delete but the prune keeps as fork points
    #: (the parent of a checkpoint in another thread, or of several)
    forks_kept: int = 0
    #: those fork points' ids
    fork_points: list[str] = field(default_factory=list)
    #: the database as the plan saw it (rows, last row id, last operation): a write
    #: given this plan reuses its fork points while the stamp is unchanged
    stamp: Any = None

    def __post_init__(self) -> None:
        if self.delete_count < 0:
            self.delete_count = len(self.delete)

    def to_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "policy": self.policy.value, "param": self.param,
                "delete": [m.to_dict() for m in self.delete], "delete_count": self.delete_count,
                "keep_count": self.keep_count, "forks_kept": self.forks_kept,
                "fork_points": list(self.fork_points),
                "reparent": [{"checkpoint_id": c, "old_parent_id": o, "new_parent_id": n}
                             for c, o, n in self.reparent]}


@dataclass
class DeletePlan:
    """What `threads delete` would delete: `checkpoints` rows of the thread and of the
    threads that go with it (`included`: a LangGraph root thread's subgraph
    namespaces), and the branches that stay (`branches_kept`)."""

    thread_id: str
    checkpoints: int
    included: list[str] = field(default_factory=list)
    branches_kept: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "checkpoints": self.checkpoints,
                "included": list(self.included), "branches_kept": list(self.branches_kept)}


class SnapshotInput(NamedTuple):
    """What a snapshot computes before its write (the write may run on the database's
    thread): everything of the new checkpoint but its step, parent default and id."""

    trigger: SnapshotTrigger
    summary: str
    parent: str | None  # the caller's parent_checkpoint_id (None: the thread's head)
    next_node: str
    hex6: str  # the id's random part
    now: str  # created_at
    counter: int  # this engine's step counter for the thread


class Where(NamedTuple):
    """A WHERE condition over `checkpoints` and its parameters."""

    sql: str
    params: list[Any]


def skipped_text(counts: Mapping[str, int]) -> str:
    """'skipped 3 checkpoint(s): why' (rows left out, by reason) or ''."""
    total = sum(counts.values())
    if not total:
        return ""
    if len(counts) == 1:
        return f"skipped {total} checkpoint(s): {next(iter(counts))}"
    return f"skipped {total} checkpoint(s): " + "; ".join(f"{n}: {why}" for why, n in counts.items())


def as_trigger(trigger: Any) -> SnapshotTrigger | None:
    if isinstance(trigger, SnapshotTrigger):
        return trigger
    try:
        return SnapshotTrigger(trigger)
    except ValueError:
        return None


def as_policy(policy: CheckpointGC | str) -> CheckpointGC:
    if isinstance(policy, CheckpointGC):
        return policy
    try:
        return CheckpointGC(str(policy).replace("-", "_"))
    except ValueError:
        raise UsageError(f"unknown GC policy {policy!r}; use one of: "
                         + ", ".join(p.value for p in CheckpointGC)) from None
