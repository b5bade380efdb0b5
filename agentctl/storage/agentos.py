"""The AgentOS checkpoint format (docs/formats/agentos.md): one `checkpoints` table of full snapshots.

Its store is the checkpointer itself (`agentctl.backends`: `SQLiteCheckpointer`,
`PostgresCheckpointer`, which implement `Store`), its history the engine
(`agentctl.engine.CheckpointEngine`, which implements `History`).
"""

from __future__ import annotations

from typing import Any, Mapping

from agentctl.storage.contract import ALL_CAPABILITIES, Capability, FormatSpec, Store


def _matches(tables: Mapping[str, set[str]]) -> bool:
    cols = tables.get("checkpoints")
    # LangGraph's savers also have a `checkpoints` table: theirs has checkpoint_ns.
    return cols is not None and "checkpoint_ns" not in cols


def _open(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    if kind == "postgres":
        from agentctl.backends.postgres import PostgresCheckpointer

        return PostgresCheckpointer(target, readonly=readonly, create=create, **kwargs)
    from agentctl.backends.sqlite import SQLiteCheckpointer

    return SQLiteCheckpointer(target, readonly=readonly, create=create, **kwargs)


FORMAT = FormatSpec(
    name="agentos",
    title="AgentOS checkpoints",
    description="AgentOS checkpoint tables (full snapshots of messages, state and tool "
                "results per step); also the format agentctl's own checkpointer writes",
    capabilities=frozenset(ALL_CAPABILITIES),
    matches=_matches,
    open=_open,
    tables=("checkpoints",),
    dialects={Capability.BACKUP.value: ("sqlite",)},
)
