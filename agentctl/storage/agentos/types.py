"""The engine's types: triggers, retention policies, the configuration, the plans and
results of its writes (AgentOS's names and defaults), and the named values the
engine's modules pass each other. The plans and results every format shares are
`agentctl.storage.results`'s, re-exported here."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from agentctl.storage.results import (  # the plans and results, re-exported: the engine's names
    MERGE_STRATEGIES as MERGE_STRATEGIES,
)
from agentctl.storage.results import (
    CheckpointGC as CheckpointGC,
)
from agentctl.storage.results import (
    DeletePlan as DeletePlan,
)
from agentctl.storage.results import (
    MergePlan as MergePlan,
)
from agentctl.storage.results import (
    PrunePlan as PrunePlan,
)
from agentctl.storage.results import (
    RewindPlan as RewindPlan,
)
from agentctl.storage.results import (
    TimeTravelResult as TimeTravelResult,
)
from agentctl.storage.results import (
    as_policy as as_policy,
)
from agentctl.storage.results import (
    policy_text as policy_text,
)
from agentctl.storage.results import (
    skipped_text as skipped_text,
)


class SnapshotTrigger(str, Enum):
    """What made a snapshot; its value is the checkpoint's tag."""

    TOOL_CALL = "tool_call"
    LLM_CALL = "llm_call"
    STATE_CHANGE = "state_change"
    TASK_BOUNDARY = "task_boundary"
    MANUAL = "manual"
    INTERVAL = "interval"


@dataclass
class SnapshotConfig:
    """Which triggers snapshot, the automatic GC after each snapshot, deltas, size limit."""

    triggers: set[SnapshotTrigger] = field(
        default_factory=lambda: {
            SnapshotTrigger.MANUAL,
            SnapshotTrigger.TOOL_CALL,
            SnapshotTrigger.LLM_CALL,
            SnapshotTrigger.STATE_CHANGE,
        }
    )
    gc_policy: CheckpointGC = CheckpointGC.KEEP_LAST_N
    gc_param: float = 100  # n for keep_last_n / keep_milestones, seconds for keep_age
    delta_snapshots: bool = False  # AgentOS's default was True, but it did nothing
    max_snapshot_size_mb: float = 10.0
    delta_keyframe_every: int = 16  # a full row at least every this many snapshots


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


def as_trigger(trigger: Any) -> SnapshotTrigger | None:
    if isinstance(trigger, SnapshotTrigger):
        return trigger
    try:
        return SnapshotTrigger(trigger)
    except ValueError:
        return None
