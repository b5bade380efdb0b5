"""The LangGraph checkpoint format: databases written by LangGraph's savers
`langgraph-checkpoint-sqlite` (tables `checkpoints`, `writes`) and
`langgraph-checkpoint-postgres` (`checkpoints`, `checkpoint_blobs`, `checkpoint_writes`,
`checkpoint_migrations`; the shallow saver's layout too), read without LangGraph:
payloads are decoded by `serde` (no module named in the data is imported, nothing is
unpickled or decrypted), the mapping onto agentctl's model is in `store`.

Mapping, in short:
- thread = `thread_id`; a subgraph's namespace (`checkpoint_ns`) is the thread
  `THREAD|NS`, listed right after its parent thread, its first checkpoint a branch of
  the parent graph's checkpoint it ran from (metadata.parents);
- checkpoints in checkpoint_id order (UUIDv6: time order), created_at the id's time;
  step = metadata.step, parent = parent_checkpoint_id, tags = [metadata.source];
- messages = the `messages` channel (LangChain messages as transcript dicts);
  state = every state channel's value + `__metadata__` (the checkpoint's whole metadata)
  + `__internal__` (LangGraph's own channels holding a value);
  tools_result = `tool_messages` (the tool messages the step appended), `writes` (the
  pending writes) and `__error__` / `__interrupt__` / `__resume__` / `__scheduled__`;
  next_node = the nodes LangGraph would run next.

Writes (`history`): rewind (a fork checkpoint copying REF as the new head, the way
LangGraph's replay forks), branch, prune, threads delete, merge (three-way, of channel
values), edit, run records; on the journal (undo, redo, purge; side tables
`agentctl_journal`, `agentctl_trash_*`).
"""

from __future__ import annotations

from collections.abc import Mapping

from agentctl.errors import SchemaError
from agentctl.storage.contract import Capability, FormatSpec

#: the columns detection requires, per dialect
SQLITE_TABLES = {
    "checkpoints": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "type",
        "checkpoint",
        "metadata",
    ),
    "writes": ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel", "type", "value"),
}
POSTGRES_TABLES = {
    "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint", "metadata"),
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "type", "blob"),
    "checkpoint_writes": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        "channel",
        "type",
        "blob",
    ),
}


def check_columns(tables: Mapping[str, set[str]], wanted: Mapping[str, tuple[str, ...]], what: str) -> None:
    """SchemaError "`what` (table T lacks: ...)" for the first table of `wanted` lacking
    columns in {table: its columns} (a connection's schema check)."""
    for table, cols in wanted.items():
        missing = sorted(set(cols) - tables.get(table, set()))
        if missing:
            raise SchemaError(f"{what} (table {table!r} lacks: {', '.join(missing)})")


def _matches(tables: Mapping[str, set[str]]) -> bool:
    return any(
        all(t in tables and all(c in tables[t] for c in cols) for t, cols in wanted.items())
        for wanted in (SQLITE_TABLES, POSTGRES_TABLES)
    )


FORMAT = FormatSpec(
    name="langgraph",
    title="LangGraph checkpoints",
    description="LangGraph's checkpoint savers (langgraph-checkpoint-sqlite, "
    "langgraph-checkpoint-postgres): a thread_id is a thread, a subgraph's "
    "namespace the thread THREAD|NS; channel values as state, the messages "
    "channel as the transcript",
    capabilities=frozenset(
        {
            Capability.READ,
            Capability.SEARCH,
            Capability.FOLLOW,
            Capability.DOCTOR,
            Capability.REWIND,
            Capability.BRANCH,
            Capability.MERGE,
            Capability.PRUNE,
            Capability.DELETE,
            Capability.UNDO,
            Capability.BACKUP,
            Capability.EDIT,
            Capability.RUN,
            Capability.REDO,
            Capability.COMPARE,
            Capability.STATS,
        }
    ),
    dialects={Capability.BACKUP.value: ("sqlite",)},
    matches=_matches,
    store="agentctl.storage.langgraph.store:opener",
    history="agentctl.storage.langgraph.history:LangGraphHistory",
    tables=("checkpoints", "writes", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"),
)
