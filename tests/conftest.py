"""Test rig: every backend test runs on SQLite AND a real Postgres server.

Postgres: `AGENTCTL_TEST_PG_DSN` if set, else a throwaway server started here
(tests/support/pgserver.py). Without server binaries the Postgres tests skip with the reason,
except when `AGENTCTL_REQUIRE_PG=1`, where that is an error.
Each test gets a fresh SQLite file or a fresh Postgres schema (via `search_path`).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from tests.support import pgserver
from tests.support.rig import SAMPLE_DB, pg_execute, unavailable, with_search_path


@pytest.fixture(scope="session")
def pg_base_dsn():
    dsn = os.environ.get("AGENTCTL_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if pgserver.find_bin_dir() is None:
        unavailable("Postgres server binaries (initdb, pg_ctl) not found; set AGENTCTL_TEST_PG_DSN "
                    "or install postgresql")
    try:
        server = pgserver.start()
    except RuntimeError as exc:
        unavailable(f"the Postgres server did not start: {exc}")
    yield server.dsn
    server.stop()


@pytest.fixture
def pg_dsn(pg_base_dsn):
    """A DSN whose search_path is a fresh, empty schema (dropped afterwards)."""
    schema = "t_" + uuid.uuid4().hex[:12]
    pg_execute(pg_base_dsn, f"CREATE SCHEMA {schema}")
    yield with_search_path(pg_base_dsn, schema)
    pg_execute(pg_base_dsn, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path) -> str:
    """A database URL of each kind, not yet created: a file path or a Postgres DSN."""
    if request.param == "sqlite":
        return str(tmp_path / "checkpoints.db")
    return request.getfixturevalue("pg_dsn")


@pytest.fixture
def sample_copy(tmp_path) -> Path:
    """A private copy of the bundled sample database."""
    dest = tmp_path / "sample.db"
    shutil.copyfile(SAMPLE_DB, dest)
    return dest


@pytest.fixture
async def backend(db_url):
    """A connected read-write backend on a fresh database of each kind (created)."""
    from agentctl.backends import make_backend

    b = make_backend(db_url, readonly=False, create=True)
    await b.connect()
    yield b
    await b.close()


@pytest.fixture
def engine(backend):
    """A seeded engine (reproducible ids and clock, no automatic GC) over `backend`."""
    from tests.support.engine_helpers import make_engine

    return make_engine(backend)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """The run's last garbage collections, here rather than after it. pytest collects
    garbage five times once the session is over (to report exceptions ignored in
    finalizers); under xdist that is after the worker said it finished, and execnet
    sends a worker still busy 5 s later a SIGINT, whose KeyboardInterrupt then lands
    in whatever runs (hypothesis' gc callback: a PytestUnraisableExceptionWarning at
    the end of the run). With ~500,000 objects left by the TUI tests (Textual keeps up
    to 1024 StylesCaches and their lines in an lru_cache) each collection takes 0.1 to
    1 s on a busy machine. So collect here, inside the session (after the session
    fixtures' teardown: trylast), and freeze what is left: pytest's collections then
    look only at what is made after this, and still report what these collections
    found (exceptions in finalizers go to its unraisable hook now as then)."""
    import gc

    for _ in range(5):  # pytest's count; stop when nothing more is collected
        if not gc.collect():
            break
    gc.freeze()
