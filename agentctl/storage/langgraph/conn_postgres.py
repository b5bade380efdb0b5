"""The connection to a LangGraph Postgres schema: the Postgres backend's, with LangGraph's
schema check (imported only when a Postgres database is opened)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.agentos.postgres import PostgresCheckpointer
from agentctl.errors import SchemaError


class _Postgres(PostgresCheckpointer):
    """A connection to a LangGraph Postgres schema (read-only sessions unless asked)."""

    has_task_path = True
    shallow = False
    yields_to_writers = True  # LangGraph's savers write these tables

    async def _check_schema(self, conn: Any) -> None:
        from agentctl.storage.schema import PG_COLUMNS_SQL

        rows = await conn.fetch(
            f"SELECT * FROM ({PG_COLUMNS_SQL}) t WHERE table_name IN "
            "('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')")
        cols: dict[str, set[str]] = {}
        for r in rows:
            cols.setdefault(r[0], set()).add(r[1])
        need = {"checkpoints": {"thread_id", "checkpoint_ns", "checkpoint", "metadata"},
                "checkpoint_blobs": {"thread_id", "checkpoint_ns", "channel", "type", "blob"},
                "checkpoint_writes": {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id",
                                      "idx", "channel", "type", "blob"}}
        for table, wanted in need.items():
            missing = sorted(wanted - cols.get(table, set()))
            if missing:
                raise SchemaError(f"{self.display_name}: not a LangGraph Postgres database "
                                  f"(table {table!r} lacks: {', '.join(missing)})")
        self.has_task_path = "task_path" in cols["checkpoint_writes"]
        self.shallow = "checkpoint_id" not in cols["checkpoints"]
