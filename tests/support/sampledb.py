"""The bundled sample database on each backend, for CLI tests.

Import the fixtures into a test module (`from tests.support.sampledb import sample_url, sample_ro`)
to use them. `load_sample(url)` copies the sample into any database through the
backend interface, in one transaction.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agentctl.backends import open_backend
from tests.support.rig import SAMPLE_DB, run_sync, with_search_path


async def load_sample(url: str, source: str = str(SAMPLE_DB)) -> int:
    """Copy every checkpoint of `source` into `url` (created if needed); return how many."""
    n = 0
    async with open_backend(source) as src, open_backend(url, readonly=False, create=True) as dst:
        async with dst.transaction() as tx:
            async for cp in src.iter_checkpoints():
                await tx.put(cp)
                n += 1
    return n


@pytest.fixture(params=["sqlite", "postgres"])
def sample_url(request, tmp_path) -> str:
    """A private, writable copy of the sample: a SQLite file or a fresh Postgres schema."""
    if request.param == "sqlite":
        dest = tmp_path / "sample.db"
        shutil.copyfile(SAMPLE_DB, dest)
        return str(dest)
    dsn = request.getfixturevalue("pg_dsn")
    run_sync(lambda: load_sample(dsn))
    return dsn


async def pg_sql(dsn: str, statement: str) -> None:
    """Run one statement on its own connection."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def fresh_schema(base: str, prefix: str = "s_") -> Iterator[str]:
    """A new, empty Postgres schema, dropped afterwards; yields a DSN whose search_path
    is that schema."""
    schema = prefix + uuid.uuid4().hex[:12]
    run_sync(lambda: pg_sql(base, f"CREATE SCHEMA {schema}"))
    try:
        yield with_search_path(base, schema)
    finally:
        run_sync(lambda: pg_sql(base, f"DROP SCHEMA {schema} CASCADE"))


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def sample_ro(request, tmp_path_factory) -> str:
    """The sample for read-only tests, shared by a module: a SQLite copy or a Postgres
    schema loaded once. Tests must not write to it."""
    if request.param == "sqlite":
        dest = tmp_path_factory.mktemp("ro") / "sample.db"
        shutil.copyfile(SAMPLE_DB, dest)
        yield str(dest)
        return
    with fresh_schema(request.getfixturevalue("pg_base_dsn"), "ro_") as dsn:
        run_sync(lambda: load_sample(dsn))
        yield dsn


def cli(db: str | None, *args: str, input: str | None = None, env: dict | None = None):
    """Run `agentctl [--db DB] ARGS...` in-process; the result has exit_code, stdout, stderr."""
    from typer.testing import CliRunner

    from agentctl.cli import app

    argv = (["--db", db] if db is not None else []) + list(args)
    return CliRunner().invoke(app, argv, input=input, env=env, catch_exceptions=False)


def cli_json(db: str | None, *args: str, code: int = 0):
    """Run a command with --json, check its exit code, return the parsed stdout."""
    import json

    r = cli(db, *args, "--json")
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return json.loads(r.stdout)


def story_db(tmp_path) -> tuple[str, str]:
    """The README's story (sample_db/story: its LangGraph graph and langgraph.json) in
    `tmp_path`, after its first run, which fails at `book` (LangGraph's saver made the
    tables): (the database, the langgraph.json)."""
    from tests.support.rig import REPO

    for name in ("graph.py", "langgraph.json"):
        shutil.copyfile(REPO / "sample_db" / "story" / name, tmp_path / name)
    db, config = str(tmp_path / "story.db"), str(tmp_path / "langgraph.json")
    first = cli(db, "run", "trip", "--config", config, "--input", '{"request": "somewhere new, 3 nights"}')
    assert first.exit_code == 1 and "no flights to Atlantis" in first.stderr, first.stderr
    return db, config
