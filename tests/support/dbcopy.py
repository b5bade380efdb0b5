"""A copy of a test database, for the framework's own reference run (issue 21's
acceptance: `edit`/`run` equal what the framework gives on a copy of the same database).

`db_copy(url)` (a fixture: import it into a test module) returns the URL of a copy: for
a SQLite file, an online backup into the test's temporary directory; for a Postgres DSN
(a schema on `search_path`), a new schema holding every table of the source's, rows,
indexes and defaults, each sequence at the source's position (dropped after the test).
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.support.contract_formats import pg_schema, psycopg_dsn
from tests.support.rig import run_sync, with_search_path


def pg_base(dsn: str) -> str:
    """The DSN without its search_path."""
    return re.sub(r"[?&]search_path=[^&]*", "", dsn)


async def _copy_schema(dsn: str, dest: str) -> None:
    import asyncpg

    src = pg_schema(dsn)
    conn = await asyncpg.connect(pg_base(dsn))
    try:
        async with conn.transaction():
            await conn.execute(f'CREATE SCHEMA "{dest}"')
            tables = [
                r["table_name"]
                for r in await conn.fetch(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 "
                    "AND table_type = 'BASE TABLE' ORDER BY table_name",
                    src,
                )
            ]
            for t in tables:
                await conn.execute(f'CREATE TABLE "{dest}"."{t}" (LIKE "{src}"."{t}" INCLUDING ALL)')
                await conn.execute(
                    f'INSERT INTO "{dest}"."{t}" OVERRIDING SYSTEM VALUE SELECT * FROM "{src}"."{t}"'
                )
                for c in await conn.fetch(
                    "SELECT column_name, column_default, is_identity FROM information_schema.columns "
                    "WHERE table_schema = $1 AND table_name = $2",
                    dest,
                    t,
                ):
                    col, default = c["column_name"], c["column_default"] or ""
                    src_seq = await conn.fetchval(
                        "SELECT pg_get_serial_sequence($1, $2)", f'"{src}"."{t}"', col
                    )
                    if src_seq is None and not default.startswith("nextval("):
                        continue
                    if src_seq is None:
                        name = re.match(r"nextval\('([^']+)'", default).group(1)  # type: ignore[union-attr]
                        src_seq = name if "." in name else f'"{src}".{name}'
                    dest_seq = await conn.fetchval(
                        "SELECT pg_get_serial_sequence($1, $2)", f'"{dest}"."{t}"', col
                    )
                    if dest_seq is None:  # a serial's default still names the source's sequence
                        dest_seq = f'"{dest}"."{t}_{col}_seq"'
                        await conn.execute(f'CREATE SEQUENCE {dest_seq} OWNED BY "{dest}"."{t}"."{col}"')
                        await conn.execute(
                            f'ALTER TABLE "{dest}"."{t}" ALTER COLUMN "{col}" '
                            f"SET DEFAULT nextval('{dest_seq}')"
                        )
                    pos = await conn.fetchrow(f"SELECT last_value, is_called FROM {src_seq}")
                    await conn.execute(
                        "SELECT setval($1, $2, $3)", dest_seq, pos["last_value"], pos["is_called"]
                    )
    finally:
        await conn.close()


async def _drop_schema(dsn: str, schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(pg_base(dsn))
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


#: what each (build's name, Postgres server) wrote once in this process: its schema's DSN, what
#: the build returned
_PG_BUILT: dict[tuple[str, str], tuple[str, Any]] = {}


async def pg_built(name: str, dsn: str, build: Callable[[str], Awaitable[Any]]) -> Any:
    """Fill the schema of `dsn` (empty: `pg_dsn`'s) with what `build(url)` writes: the
    build runs once per process and server (into a schema of its own, kept to the end),
    each later call gets a copy of it (`_copy_schema`: rows, indexes, defaults, sequences
    at their place). Returns what that build returned."""
    import asyncpg

    key = (name, pg_base(dsn))
    if key not in _PG_BUILT:
        schema = f"b_{re.sub(r'[^a-z0-9]', '_', name.lower())}_{uuid.uuid4().hex[:8]}"
        conn = await asyncpg.connect(key[1])
        try:
            await conn.execute(f'CREATE SCHEMA "{schema}"')
        finally:
            await conn.close()
        source = with_search_path(key[1], schema)
        _PG_BUILT[key] = source, await build(source)
    source, result = _PG_BUILT[key]
    dest = pg_schema(dsn)
    conn = await asyncpg.connect(key[1])
    try:
        await conn.execute(f'DROP SCHEMA "{dest}" CASCADE')
    finally:
        await conn.close()
    await _copy_schema(source, dest)
    return result


async def built_case(request: Any, name: str, kind: str, url: str) -> Any:
    """`contract_formats.build_once` (SQLite: a copy of the session's build), its Postgres
    builds made once per process too (`pg_built`): the Built, on `url`."""
    import dataclasses

    from tests.support.contract_formats import CASES, build_once

    if kind == "sqlite":
        return await build_once(request, name, kind, url)
    first = await pg_built(name, url, lambda u: CASES[name].build(kind, u))
    return dataclasses.replace(first, url=url)


@pytest.fixture
def db_copy(tmp_path):
    """copy(url) -> the URL of a copy of that database (see the module's text)."""
    made: list[tuple[str, str]] = []

    def copy(url: str) -> str:
        if "://" not in url:
            dest = str(tmp_path / f"copy-{uuid.uuid4().hex[:8]}.db")
            src, out = sqlite3.connect(url), sqlite3.connect(dest)
            try:
                src.backup(out)  # the file alone may lack what the -wal holds
            finally:
                src.close()
                out.close()
            return dest
        schema = "c_" + uuid.uuid4().hex[:12]
        made.append((url, schema))
        run_sync(lambda: _copy_schema(url, schema))
        return with_search_path(pg_base(url), schema)

    yield copy
    for url, schema in made:
        run_sync(lambda url=url, schema=schema: _drop_schema(url, schema))


@contextmanager
def langgraph_saver(url: str) -> Iterator[Any]:
    """LangGraph's own saver on a database of either kind (SqliteSaver, PostgresSaver)."""
    if "://" not in url:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(url, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
        return
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(psycopg_dsn(url)) as saver:
        yield saver
