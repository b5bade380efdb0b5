"""What every format's writes plan and return, shown alike by `render.plan_text`, the
CLI and the TUI: the plans (`RewindPlan`, `MergePlan`, `PrunePlan`, `DeletePlan`), the
results (`TimeTravelResult`, `OpResult`, `PurgeResult`), an op-log entry (`OpRecord`)
the retention policies (`CheckpointGC`), and the archive names a plan and its write
agree on (`hashed_names`). The storage layer owns them: each format's
History imports them from here (the AgentOS engine re-exports them as its own, from
`agentctl.engine` as before)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from agentctl.errors import UsageError
from agentctl.model import Checkpoint, CheckpointMetadata

MERGE_STRATEGIES = ("three-way", "ours", "theirs")


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


def policy_text(policy: CheckpointGC | str, param: Any) -> str:
    """A retention policy and its parameter as plans and op summaries show them:
    'keep_last_n 20', 'keep_age 30d'."""
    name = getattr(policy, "value", policy)
    if not isinstance(param, (int, float)):
        return f"{name} {param}"
    return f"{name} {duration_text(param) if name == CheckpointGC.KEEP_AGE.value else f'{param:g}'}"


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
    #: the moved checkpoints stay in the thread, marked rewound by the new head (ADK)
    marked: bool = False

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
            "marked": self.marked,
        }


@dataclass
class RewindPlan:
    """What `rewind(target, hard)` would do. Nothing is written to make it."""

    target: CheckpointMetadata
    thread_id: str
    moved: list[CheckpointMetadata]  # the checkpoints after the target, in order
    archive_thread: str | None  # where they would go; None when hard or nothing moves
    hard: bool
    #: they stay in the thread, marked rewound by a new head (ADK's rewind event): no archive
    marked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.to_dict(),
            "thread_id": self.thread_id,
            "moved": [m.to_dict() for m in self.moved],
            "archive_thread": self.archive_thread,
            "hard": self.hard,
            "marked": self.marked,
        }


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
    #: where the merge's checkpoint id is made by the write, not known to the plan: how
    #: (LangGraph: "its id carries the time of the write"); "" where the plan's id is the
    #: write's (AgentOS: hashed from the two heads)
    id_at_write: str = ""

    def to_dict(self) -> dict[str, Any]:
        merged = self.merged.to_dict()
        if self.id_at_write:
            merged["metadata"]["checkpoint_id"] = None
        return {
            "checkpoint_id": None if self.id_at_write else self.merged.metadata.checkpoint_id,
            "checkpoint_id_at_write": bool(self.id_at_write),
            "base": self.base.to_dict() if self.base else None,
            "ours": self.ours.metadata.to_dict(),
            "theirs": self.theirs.metadata.to_dict(),
            "merged": merged,
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
    #: None (and param None) for a session store's prune by --status alone
    policy: CheckpointGC | None
    param: float | None
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
    #: the database as the plan saw it (AgentOS: rows, last row id, last operation;
    #: LangGraph: the thread's fingerprint and what the plan found): a write given this
    #: plan reuses what the plan read while the stamp is unchanged (None: not to be reused)
    stamp: Any = field(default=None, repr=False, compare=False)
    #: the ids the prune deletes in row-id order, when the plan read them all (SQLite
    #: AgentOS: finding the fork points reads them): its write reuses them with the stamp
    delete_ids: list[str] | None = field(default=None, repr=False, compare=False)
    #: (SQLite AgentOS) those rows' row ids, when row-id order is the thread's order:
    #: its write moves them without reading the selection again
    delete_rows: list[int] | None = field(default=None, repr=False, compare=False)
    #: (AgentOS) a checkpoint the prune keeps is a delta (its write then makes full those
    #: whose base it deletes)
    kept_delta: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.delete_count < 0:
            self.delete_count = len(self.delete)

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "policy": self.policy.value if self.policy else None,
            "param": self.param,
            "reason": self.reason,
            "delete": [m.to_dict() for m in self.delete],
            "delete_count": self.delete_count,
            "keep_count": self.keep_count,
            "forks_kept": self.forks_kept,
            "fork_points": list(self.fork_points),
            "reparent": [
                {"checkpoint_id": c, "old_parent_id": o, "new_parent_id": n} for c, o, n in self.reparent
            ],
        }


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
        return {
            "thread_id": self.thread_id,
            "checkpoints": self.checkpoints,
            "included": list(self.included),
            "branches_kept": list(self.branches_kept),
        }


def skipped_text(counts: Mapping[str, int]) -> str:
    """'skipped 3 checkpoint(s): why' (rows left out, by reason) or ''."""
    total = sum(counts.values())
    if not total:
        return ""
    if len(counts) == 1:
        return f"skipped {total} checkpoint(s): {next(iter(counts))}"
    return f"skipped {total} checkpoint(s): " + "; ".join(f"{n}: {why}" for why, n in counts.items())


def as_policy(policy: CheckpointGC | str) -> CheckpointGC:
    if isinstance(policy, CheckpointGC):
        return policy
    try:
        return CheckpointGC(str(policy).replace("-", "_"))
    except ValueError:
        raise UsageError(
            f"unknown GC policy {policy!r}; use one of: " + ", ".join(p.value for p in CheckpointGC)
        ) from None


# The kinds an undo cannot revert.
NOT_UNDOABLE = ("undo", "purge")


@dataclass
class OpRecord:
    """One entry of the operation log (`History.oplog()`)."""

    op_id: int
    created_at: str
    kind: str
    summary: str
    threads: list[str] = field(default_factory=list)
    undone: bool = False
    undo_of: int | None = None
    purgeable_rows: int = 0
    undone_by: int | None = None
    purged: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def undoable(self) -> bool:
        """Whether `undo` may revert it (the threads' fingerprints are checked then)."""
        return not self.undone and not self.purged and self.kind not in NOT_UNDOABLE

    def to_dict(self) -> dict[str, Any]:
        return {
            "op_id": self.op_id,
            "created_at": self.created_at,
            "kind": self.kind,
            "summary": self.summary,
            "threads": list(self.threads),
            "undone": self.undone,
            "undo_of": self.undo_of,
            "purgeable_rows": self.purgeable_rows,
            "undone_by": self.undone_by,
            "purged": self.purged,
            "undoable": self.undoable,
            "details": self.details,
        }


@dataclass
class OpResult:
    """What a write did. `op_id` is None when there was nothing to do (nothing written)."""

    op_id: int | None
    kind: str
    summary: str
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    #: what it left out, and why ({checkpoint id: reason}; an import's existing ids)
    skipped: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "op_id": self.op_id,
            "kind": self.kind,
            "summary": self.summary,
            "created": list(self.created),
            "deleted": list(self.deleted),
            "moved": list(self.moved),
            "skipped": dict(self.skipped),
        }


@dataclass
class PurgeResult:
    """What `purge` freed (or would free, with dry_run): the trashed rows of `ops`."""

    ops: list[int]
    rows: int
    dry_run: bool
    vacuumed: bool = False
    op_id: int | None = None
    #: those of `ops` that are undone: their rows are kept for redo, not undo (dry_run)
    undone: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ops": list(self.ops),
            "rows": self.rows,
            "dry_run": self.dry_run,
            "vacuumed": self.vacuumed,
            "op_id": self.op_id,
            "undone": list(self.undone),
        }

    def kept_for(self) -> str:
        """What the rows are kept for: "undo", "redo" (every op undone) or "undo or redo"."""
        redo = set(self.undone) & set(self.ops)
        return "undo" if not redo else "redo" if redo == set(self.ops) else "undo or redo"


def hashed_names(prefix: str, key: str) -> Callable[[], str]:
    """`{prefix}{4 hex}` names in the order they are tried, the hex from a hash of
    `key` and the attempt: a plan and the write it announces (in another process, a
    `--dry-run` before the real run) try the same names."""
    attempt = iter(range(1 << 30))

    def make() -> str:
        data = f"{key}\0{next(attempt)}".encode("utf-8", "surrogatepass")
        return f"{prefix}{hashlib.sha256(data).hexdigest()[:4]}"

    return make
