"""The Agno rig: the Agno format's test databases, written by the real agno.

agno 3 is a test dependency (pyproject's `test` extra); the v2 layout is written by agno
2.9.0, installed once into a venv of its own (`agno2_python`, a session fixture) in a
cache directory keyed by the packages asked for, `~/.cache/agentctl-tests/agno2-<hash>`
(or under `AGENTCTL_TEST_NODE_CACHE`, the Node rig's cache), behind a file lock so that
xdist workers don't race; later sessions find it done.

`AgnoBuilds` (the `agno_builds` fixture) writes each layout once per test run (the first
xdist worker to ask, under a file lock in the workers' common temporary folder; a
Postgres build reaches the other workers' servers as pg_dump wrote it) with
`tests/scripts/agno_write.py` (a process: the agno of that layout, offline: a scripted
model) and copies it for each test: "v3" (agno 3), "v2" (agno 2), "migrated" (a copy of
v2, then agno 3's `MigrationManager.up()`), "mixed" (a copy of v2, then one run by agno 3
without migrating: a runs table with that run alone). SQLite files, or Postgres schemas
(agno's `db_schema`), each test's copy a schema of its own.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.buildonce import shared_folder
from tests.support.noderig import cache_root
from tests.support.rig import REPO, SCRIPTS, pg_execute, run_sync, with_search_path

#: what the v2 venv installs (agno 2's SqliteDb needs sqlalchemy; its workflow package fastapi)
AGNO2 = ("agno==2.9.0", "sqlalchemy>=2,<3", "greenlet", "fastapi", "psycopg[binary]>=3.2,<4")
WRITER = SCRIPTS / "agno_write.py"
LAYOUTS = ("v3", "v2", "migrated", "mixed")
_DONE = ".agentctl-pip-done"


def agno2_dir() -> Path:
    h = hashlib.sha256(("\n".join(AGNO2) + sys.version).encode())
    return cache_root() / f"agno2-{h.hexdigest()[:16]}"


def install_agno2() -> Path:
    """The v2 venv's interpreter, made unless done already (by an earlier session or
    another worker)."""
    root = agno2_dir()
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here for the first
        if (root / _DONE).exists():
            return python
        shutil.rmtree(root, ignore_errors=True)  # a half-done install of an interrupted run
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        r = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *AGNO2], capture_output=True, text=True, timeout=1800
        )
        if r.returncode != 0:
            raise RuntimeError(f"pip install {' '.join(AGNO2)} failed: {(r.stderr or r.stdout)[-800:]}")
        (root / _DONE).write_text("ok\n")
        return python


@pytest.fixture(scope="session")
def agno2_python() -> str:
    return str(install_agno2())


def sqlalchemy_url(dsn: str) -> str:
    """A psycopg SQLAlchemy URL of a Postgres DSN (its query left out)."""
    parts = urlsplit(dsn)
    return urlunsplit(("postgresql+psycopg", parts.netloc, parts.path, "", ""))


def write(python: str, action: str, kind: str, target: str, schema: str = "") -> dict[str, list[str]]:
    """Run agno_write.py; its JSON output."""
    args = [python, str(WRITER), action, kind, target] + ([schema] if schema else [])
    env = dict(os.environ, PYTHONPATH="", AGNO_TELEMETRY="false")
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, cwd=str(REPO))
    if r.returncode != 0:
        raise RuntimeError(f"agno_write.py {action} failed: {r.stderr[-2000:]}")
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


@dataclass
class AgnoDb:
    """A test's copy: its URL (a file, or a DSN on its schema), the run ids of each
    session (top-level, in order) and the layout."""

    url: str
    runs: dict[str, list[str]]
    layout: str
    kind: str
    #: how agno opens it: ("sqlite", FILE) or ("postgres", SQLALCHEMY_URL, SCHEMA)
    agno_args: tuple[str, ...]


#: each process's builds, by the shared folder, then (layout, kind): where, the run ids
_BUILT: dict[Path, dict[tuple[str, str], tuple[str, dict[str, list[str]]]]] = {}


class AgnoBuilds:
    """Each layout written once per test run, whatever the number of xdist workers: the
    first worker to ask builds it under a file lock in `shared` (the workers' common
    temporary folder) and leaves it there, the SQLite file, or the Postgres schema as
    pg_dump wrote it (each worker has a server of its own: the others restore the dump
    into theirs); then each worker copies it per test."""

    def __init__(self, folder: Path, shared: Path, agno2: callable, pg: callable) -> None:  # type: ignore[valid-type]
        self.folder = folder
        self.shared = shared
        self._agno2 = agno2
        self._pg = pg
        # this process's builds (each test module importing the fixture has an instance)
        self._built = _BUILT.setdefault(shared, {})

    def _write(self, layout: str, kind: str) -> tuple[str, dict[str, list[str]]]:
        """Have agno write `layout` in this worker: (where it is, the run ids). v2 by agno 2;
        migrated and mixed start from a copy of v2 (agno 2 wrote it), then agno 3
        migrates it, or runs once on it without migrating."""
        three = sys.executable
        if kind == "sqlite":
            target = where = str(self.folder / f"{layout}.db")
            schema = ""
        else:
            base = self._pg()
            schema = f"agno_{layout}_{uuid.uuid4().hex[:8]}"
            target = sqlalchemy_url(base)
            where = with_search_path(base, schema)
        if layout in ("v3", "v2"):
            runs = write(three if layout == "v3" else self._agno2(), "write", kind, target, schema)
        else:
            source, runs = self.built("v2", kind)
            runs = {k: list(v) for k, v in runs.items()}
            if kind == "sqlite":
                shutil.copyfile(source, where)
            else:
                from tests.support.dbcopy import _copy_schema

                run_sync(lambda: _copy_schema(source, schema))
            if layout == "migrated":
                write(three, "migrate", kind, target, schema)
            else:
                runs["chat"] += write(three, "append", kind, target, schema)["chat"]
        if kind == "sqlite":
            conn = sqlite3.connect(where)  # everything in the main file: the copy is all of it
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
        return where, runs

    def built(self, layout: str, kind: str) -> tuple[str, dict[str, list[str]]]:
        """(where this worker's build of `layout` is, its run ids): written by agno once
        per test run (see the class's text)."""
        key = (layout, kind)
        if key in self._built:
            return self._built[key]
        done = self.shared / f"{layout}-{kind}.json"
        with open(self.shared / f"{layout}-{kind}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait here for the first
            if done.exists():
                made = json.loads(done.read_text())
                where = made["where"]
                if kind == "postgres" and pg_base_of(where) != self._pg():
                    where = with_search_path(self._pg(), made["schema"])
                    pg_restore(self._pg(), self.shared / f"{layout}-{kind}.sql")
                self._built[key] = where, made["runs"]
                return self._built[key]
            where, runs = self._write(layout, kind)
            made = {"where": where, "runs": runs}
            if kind == "postgres":
                from tests.support.contract_formats import pg_schema

                made["schema"] = pg_schema(where)
                pg_dump(pg_base_of(where), made["schema"], self.shared / f"{layout}-{kind}.sql")
            done.write_text(json.dumps(made))
        self._built[key] = where, runs
        return where, runs

    def copy(self, layout: str, kind: str, dest: Path) -> AgnoDb:
        source, runs = self.built(layout, kind)
        runs = {k: list(v) for k, v in runs.items()}
        if kind == "sqlite":
            shutil.copyfile(source, dest)
            return AgnoDb(str(dest), runs, layout, kind, ("sqlite", str(dest)))
        from tests.support.contract_formats import pg_schema
        from tests.support.dbcopy import _copy_schema

        schema = f"agno_t_{uuid.uuid4().hex[:10]}"
        run_sync(lambda: _copy_schema(source, schema))
        url = with_search_path(pg_base_of(source), schema)
        assert pg_schema(url) == schema
        return AgnoDb(url, runs, layout, kind, ("postgres", sqlalchemy_url(source), schema))


def pg_base_of(dsn: str) -> str:
    from tests.support.dbcopy import pg_base

    return pg_base(dsn)


def _pg_tool(name: str) -> str:
    from tests.support.pgserver import find_bin_dir

    found = shutil.which(name) or os.path.join(find_bin_dir() or "", name)
    if not os.path.exists(found):
        raise RuntimeError(f"{name} not found (the Agno rig copies its Postgres builds with it)")
    return found


def pg_dump(dsn: str, schema: str, out: Path) -> None:
    """The schema (tables, rows, sequences) as SQL, into `out`."""
    r = subprocess.run(
        [_pg_tool("pg_dump"), "--no-owner", "--no-privileges", "-n", schema, "-f", str(out), "-d", dsn],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0:
        raise RuntimeError(f"pg_dump of {schema} failed: {r.stderr[-800:]}")


def pg_restore(dsn: str, dump: Path) -> None:
    """Run what `pg_dump` wrote on the server of `dsn`, stopping at the first error."""
    r = subprocess.run(
        [_pg_tool("psql"), "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(dump)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if r.returncode != 0:
        raise RuntimeError(f"psql -f {dump} failed: {r.stderr[-800:]}")


@pytest.fixture(scope="session")
def agno_builds(tmp_path_factory, request) -> AgnoBuilds:
    def agno2() -> str:
        return request.getfixturevalue("agno2_python")

    def pg() -> str:
        return request.getfixturevalue("pg_base_dsn")

    shared = shared_folder(tmp_path_factory, "agno-builds")  # this run's, its workers' common folder
    return AgnoBuilds(tmp_path_factory.mktemp("agno"), shared, agno2, pg)


@pytest.fixture
def agno_db(agno_builds, tmp_path, request):
    """copy(layout, kind) -> AgnoDb: a private copy of that database (Postgres schemas
    dropped after the test)."""
    made: list[str] = []
    copies = iter(range(10**6))  # a file of its own for each copy (a test may take two)

    def copy(layout: str, kind: str) -> AgnoDb:
        db = agno_builds.copy(layout, kind, tmp_path / f"{layout}-{next(copies)}.db")
        if kind == "postgres":
            made.append(db.url)
        return db

    yield copy
    for url in made:
        from tests.support.contract_formats import pg_schema
        from tests.support.dbcopy import pg_base

        pg_execute(pg_base(url), f'DROP SCHEMA IF EXISTS "{pg_schema(url)}" CASCADE')


def agno_open(db: AgnoDb):
    """agno 3's own SqliteDb / PostgresDb on a test's copy (in this process)."""
    if db.agno_args[0] == "sqlite":
        from agno.db.sqlite import SqliteDb

        return SqliteDb(db_file=db.agno_args[1])
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_url=db.agno_args[1], db_schema=db.agno_args[2])
