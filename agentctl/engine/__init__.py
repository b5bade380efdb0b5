"""The checkpoint engine's public names: `CheckpointEngine`, `SnapshotConfig`,
`SnapshotTrigger`, `CheckpointGC`, the plans and results, the errors its callers catch.

    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

A thin facade of re-exports, loaded on first use. The engine is the AgentOS format's
History, in agentctl/storage/agentos/ (history.py says how it works and where each part
lives).
"""

from typing import TYPE_CHECKING

from agentctl.lazy import loader

# Loaded on first use (as agentctl/__init__.py does): importing this facade imports
# nothing, and a reader that needs only the op log or the deltas (e.g. `agentctl tree`)
# does not pay for the engine's other modules.
_EXPORTS = {
    "CheckpointEngine": "agentctl.storage.agentos.history",
    "create_checkpoint_engine": "agentctl.storage.agentos.history",
    "OpRecord": "agentctl.storage.results",
    "OpResult": "agentctl.storage.results",
    "PurgeResult": "agentctl.storage.results",
    "MERGE_STRATEGIES": "agentctl.storage.agentos.types",
    "CheckpointGC": "agentctl.storage.agentos.types",
    "DeletePlan": "agentctl.storage.agentos.types",
    "MergePlan": "agentctl.storage.agentos.types",
    "PrunePlan": "agentctl.storage.agentos.types",
    "RewindPlan": "agentctl.storage.agentos.types",
    "SnapshotConfig": "agentctl.storage.agentos.types",
    "SnapshotTrigger": "agentctl.storage.agentos.types",
    "TimeTravelResult": "agentctl.storage.agentos.types",
    "as_policy": "agentctl.storage.agentos.types",
    # The INSERT of a full `checkpoints` row (tests and benchmarks write rows with it).
    "_INSERT_SQL": "agentctl.storage.agentos.context",
    # The error types callers of the engine catch, re-exported for convenience.
    "AgentctlError": "agentctl.errors",
    "MergeConflictError": "agentctl.errors",
    "SnapshotTooLarge": "agentctl.errors",
}
_RENAMED = {"_INSERT_SQL": "INSERT_SQL"}

__all__ = [name for name in _EXPORTS if not name.startswith("_")]

if TYPE_CHECKING:
    from agentctl.errors import AgentctlError, MergeConflictError, SnapshotTooLarge  # noqa: F401
    from agentctl.storage.agentos.context import INSERT_SQL as _INSERT_SQL  # noqa: F401
    from agentctl.storage.agentos.history import CheckpointEngine, create_checkpoint_engine  # noqa: F401
    from agentctl.storage.agentos.types import (  # noqa: F401
        MERGE_STRATEGIES,
        CheckpointGC,
        DeletePlan,
        MergePlan,
        PrunePlan,
        RewindPlan,
        SnapshotConfig,
        SnapshotTrigger,
        TimeTravelResult,
        as_policy,
    )
    from agentctl.storage.results import OpRecord, OpResult, PurgeResult  # noqa: F401


__getattr__ = loader(__name__, _EXPORTS, _RENAMED)
