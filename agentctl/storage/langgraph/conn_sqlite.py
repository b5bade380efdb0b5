"""The connection to a LangGraph SQLite file: the SQLite backend's, with LangGraph's schema
check (imported only when a SQLite database is opened)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.agentos.sqlite import SQLiteCheckpointer
from agentctl.errors import SchemaError


class _SQLite(SQLiteCheckpointer):
    """A connection to a LangGraph SQLite file (read-only unless asked otherwise)."""

    has_task_path = True

    async def _check_schema(self, conn: Any) -> None:
        path = self._db_path
        rows = await conn.execute_fetchall(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND m.name IN ('checkpoints', 'writes')")
        cols: dict[str, set[str]] = {}
        for table, column in rows:
            cols.setdefault(table, set()).add(column)
        need = {"checkpoints": {"thread_id", "checkpoint_ns", "checkpoint_id",
                                "parent_checkpoint_id", "type", "checkpoint", "metadata"},
                "writes": {"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx",
                           "channel", "type", "value"}}
        for table, wanted in need.items():
            missing = sorted(wanted - cols.get(table, set()))
            if missing:
                raise SchemaError(f"{path}: not a LangGraph SQLite database (table {table!r} "
                                  f"lacks: {', '.join(missing)})")
        self.has_task_path = "task_path" in cols["writes"]
