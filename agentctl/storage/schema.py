"""Reading a database's schema (tables and their columns) without changing anything,
for format detection: SQLite through a `mode=ro` connection, Postgres through
the catalog of the current schemas."""

from __future__ import annotations

import os
from pathlib import Path

from agentctl.storage.sql.conn import PG_COLUMNS_SQL


def where(kind: str, target: str) -> str:
    if kind == "postgres":
        from agentctl.storage.sql.postgres import describe_dsn

        return f"Postgres database {describe_dsn(target)}"
    return target


async def tables(kind: str, target: str) -> dict[str, set[str]]:
    """{table: {column, ...}}; raises the driver's errors as AgentctlErrors."""
    if kind == "postgres":
        return await _postgres_tables(target)
    return sqlite_tables(target)


async def tables_or_none(kind: str, target: str) -> dict[str, set[str]] | None:
    """tables(), or None when the schema cannot be read (the store's own open then
    reports why, with its usual message). A database locked by another process is
    reported at once (DatabaseBusy): the store's open would wait for it as long again."""
    from agentctl.errors import AgentctlError, DatabaseBusy

    if kind == "sqlite" and (
        target == ":memory:" or not os.path.isfile(target) or os.path.getsize(target) == 0
    ):
        return None
    try:
        return await tables(kind, target)
    except DatabaseBusy:
        raise
    except AgentctlError:
        return None


def sqlite_tables(path: str) -> dict[str, set[str]]:
    import sqlite3

    from agentctl.storage.sqlutil import connect, map_sqlite_error

    uri = Path(os.path.abspath(path)).as_uri() + "?mode=ro"
    try:
        conn = connect(uri, uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, path) from None
    try:
        rows = conn.execute(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type IN ('table', 'view')"
        ).fetchall()
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
        ]
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, path) from None
    finally:
        conn.close()
    out: dict[str, set[str]] = {n: set() for n in names}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


async def _postgres_tables(dsn: str) -> dict[str, set[str]]:
    import asyncpg

    from agentctl.storage.sql.postgres import map_pg_error, pg_connect

    conn, pooler = await pg_connect(asyncpg.connect, dsn, {"timeout": 10}, readonly=True)
    try:
        if pooler:  # a READ ONLY transaction (the pooler's server sessions are not read-only)
            async with conn.transaction(readonly=True):
                rows = await conn.fetch(PG_COLUMNS_SQL)
        else:
            rows = await conn.fetch(PG_COLUMNS_SQL)
    except asyncpg.PostgresError as exc:
        raise map_pg_error(exc, where("postgres", dsn)) from None
    finally:
        await conn.close()
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r[0], set()).add(r[1])
    return out
