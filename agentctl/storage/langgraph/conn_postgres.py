"""The connection to a LangGraph Postgres schema: the Postgres backend's, with LangGraph's
schema check (imported only when a Postgres database is opened)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.agentos.postgres import PostgresCheckpointer
from agentctl.storage.langgraph import POSTGRES_TABLES, check_columns


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
        cols = check_columns(rows, POSTGRES_TABLES, f"{self.display_name}: not a LangGraph Postgres database")
        self.has_task_path = "task_path" in cols["checkpoint_writes"]
        self.shallow = "checkpoint_id" not in cols["checkpoints"]
