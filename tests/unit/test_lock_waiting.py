"""agentctl.storage.sqlutil's lock waits in steps (issue 33, item 16), on real SQLite
files: a lock released during the wait is taken, as with SQLite's own busy timeout; a
BUSY SQLite returns without waiting is not waited on; an interrupted wait ends within a
step."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from agentctl.storage import sqlutil


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "x.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    return path


def test_a_lock_released_during_the_wait_is_taken(db):
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.6, holder.execute, ("ROLLBACK",)).start()
    conn = sqlutil.connect(str(db), timeout=5, isolation_level=None)
    started = time.monotonic()
    conn.execute("INSERT INTO t VALUES (1)")
    assert 0.5 < time.monotonic() - started < 2
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 100  # a step
    conn.close()


def test_the_whole_wait_is_the_timeout(db):
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlutil.connect(str(db), timeout=1, isolation_level=None)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        conn.executemany("INSERT INTO t VALUES (?)", ((i,) for i in range(3)))
    assert 1.0 <= time.monotonic() - started < 1.5
    holder.execute("ROLLBACK")
    conn.executemany("INSERT INTO t VALUES (?)", ((i,) for i in range(3)))  # a generator, once
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 3


def test_a_busy_sqlite_does_not_wait_for_fails_at_once(db):
    """WAL, a read transaction whose snapshot another connection's commit made stale:
    its write can never succeed (SQLITE_BUSY_SNAPSHOT, no busy handler)."""
    setup = sqlite3.connect(db, isolation_level=None)
    setup.execute("PRAGMA journal_mode = WAL")
    conn = sqlutil.connect(str(db), timeout=5, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM t").fetchone()
    setup.execute("INSERT INTO t VALUES (1)")
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        conn.execute("INSERT INTO t VALUES (2)")
    assert time.monotonic() - started < 0.5
    conn.execute("ROLLBACK")
    conn.close()
    setup.close()


def test_a_connection_is_made_without_a_deprecated_call(db):
    """sqlite3 on Python 3.13 deprecates a positional timeout (3.15 refuses it): the
    connection passes it by keyword (the fast tier runs on 3.13 in CI, where this fails
    on the positional call)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        conn = sqlutil.connect(str(db), timeout=2, isolation_level=None)
        try:
            assert conn.lock_wait == 2.0 and conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
        finally:
            conn.close()
