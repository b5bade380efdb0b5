"""The connection to a LangGraph SQLite file: the SQLite backend's, with LangGraph's schema
check (imported only when a SQLite database is opened)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.agentos.sqlite import SQLiteCheckpointer
from agentctl.storage.langgraph import SQLITE_TABLES, check_columns


class _SQLite(SQLiteCheckpointer):
    """A connection to a LangGraph SQLite file (read-only unless asked otherwise)."""

    has_task_path = True

    async def _check_schema(self, conn: Any) -> None:
        rows = await conn.execute_fetchall(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND m.name IN ('checkpoints', 'writes')")
        cols = check_columns(rows, SQLITE_TABLES, f"{self._db_path}: not a LangGraph SQLite database")
        self.has_task_path = "task_path" in cols["writes"]
