"""The AgentOS checkpoint format (docs/formats/agentos.md): one `checkpoints` table of full snapshots.

This package is the format: this module its spec (a leaf: it imports no store), its
store the checkpointer itself (base.py, sqlite.py, postgres.py: `SQLiteCheckpointer`,
`PostgresCheckpointer`, which implement `Store`; opened by connect.py), its history the
engine (history.py: `CheckpointEngine`, which implements `History`), its doctor
doctor.py. The library's public names for them are `agentctl`, `agentctl.backends` and
`agentctl.engine` (thin facades).
"""

from __future__ import annotations

from collections.abc import Mapping

from agentctl.storage.contract import ALL_CAPABILITIES, Capability, FormatSpec

# The columns that make a `checkpoints` table AgentOS's. Other stores name a table
# `checkpoints` too: LangGraph's savers (with checkpoint_ns), CrewAI's (id, created_at,
# parent_id, branch, data). A table with these but not every other column is still
# AgentOS's, and its open says which columns it lacks.
KEY_COLUMNS = ("thread_id", "checkpoint_id", "step")


def _matches(tables: Mapping[str, set[str]]) -> bool:
    cols = tables.get("checkpoints")
    return cols is not None and "checkpoint_ns" not in cols and all(c in cols for c in KEY_COLUMNS)


def _mismatch(tables: Mapping[str, set[str]]) -> str:
    cols = tables.get("checkpoints")
    if cols is None:
        return "it has no 'checkpoints' table"
    lacks = ", ".join(c for c in KEY_COLUMNS if c not in cols)
    return (
        f"its 'checkpoints' table lacks column(s): {lacks}"
        if lacks
        else "its 'checkpoints' table has LangGraph's checkpoint_ns without LangGraph's other tables"
    )


FORMAT = FormatSpec(
    name="agentos",
    title="AgentOS checkpoints",
    description="AgentOS checkpoint tables (full snapshots of messages, state and tool "
    "results per step); also the format agentctl's own checkpointer writes",
    capabilities=frozenset(ALL_CAPABILITIES) - {Capability.RUN},  # no framework to run
    matches=_matches,
    store="agentctl.storage.agentos.connect:open_kind",
    history="agentctl.storage.agentos.history:CheckpointEngine",
    tables=("checkpoints",),
    dialects={Capability.BACKUP.value: ("sqlite",)},
    mismatch=_mismatch,
    first_page="agentctl.storage.agentos.sqlite:read_thread_summaries",
)
