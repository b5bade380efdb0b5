"""Postgres databases built once per test session and cloned for each test.

A test database that a format's own program writes (LangGraph's saver, the ADK's
session service, the bundled sample loaded checkpoint by checkpoint) takes a second or
more to write; the same database cloned by the server (`CREATE DATABASE ... TEMPLATE`:
every table, row, index, constraint and sequence position, a copy of its files) takes
a tenth of that. `PgTemplates` (the session fixture `pg_templates` of tests/conftest.py,
one per xdist worker as its server is) writes each database once, into a template
database of its own (schema `built`), and `pg_clone` (a test's fixture there) hands each
test a clone of it, dropped after the test. What the test gets is a DSN as `pg_dsn`'s: a
database of its own, `search_path` on the schema the program wrote into.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from tests.support.rig import with_search_path

T = TypeVar("T")
#: the schema each template's program writes into (the clones' search_path)
SCHEMA = "built"


def on_database(dsn: str, name: str) -> str:
    """The DSN with another database (its query dropped)."""
    return urlunsplit(urlsplit(dsn)._replace(path="/" + name, query=""))


async def _sql(dsn: str, *statements: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


class PgTemplates:
    def __init__(self, base_dsn: str) -> None:
        self.base = base_dsn
        self._built: dict[str, tuple[str, Any]] = {}

    async def _build(self, key: str, build: Callable[[str], Awaitable[Any]]) -> tuple[str, Any]:
        # a name of this session's own: another session or worker may share the server
        # (AGENTCTL_TEST_PG_DSN)
        name = "tpl_" + "".join(c if c.isalnum() else "_" for c in key) + "_" + uuid.uuid4().hex[:8]
        await _sql(self.base, f'CREATE DATABASE "{name}"')
        dsn = on_database(self.base, name)
        await _sql(dsn, f"CREATE SCHEMA {SCHEMA}")
        value = await build(with_search_path(dsn, SCHEMA))
        # a clone needs the template alone: the program's pooled connections closed,
        # and none opened later by mistake
        await _sql(self.base, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false',
                   f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        return name, value

    async def clone(self, key: str, build: Callable[[str], Awaitable[T]]) -> tuple[str, T]:
        """(the DSN of a new clone, what `build` returned) of the database `build(dsn)`
        wrote once for `key`."""
        if key not in self._built:
            self._built[key] = await self._build(key, build)
        template, value = self._built[key]
        clone = "t_" + uuid.uuid4().hex[:12]
        await _sql(self.base, f'CREATE DATABASE "{clone}" TEMPLATE "{template}" STRATEGY FILE_COPY')
        return with_search_path(on_database(self.base, clone), SCHEMA), value

    async def drop(self, dsn: str) -> None:
        await _sql(self.base, f'DROP DATABASE IF EXISTS "{urlsplit(dsn).path.lstrip("/")}" WITH (FORCE)')

    async def close(self) -> None:
        """Drop the templates (the session's end)."""
        for name, _ in self._built.values():
            await _sql(self.base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._built.clear()
