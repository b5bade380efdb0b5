"""Crash mid-write: `kill -9` agentctl inside the transaction of a large prune, rewind,
merge and import (paused there by tests/scripts/paused_agentctl.py). Afterwards `doctor` says
what it said before, every table holds exactly the rows it held before, and the same
command then runs to its end (no lock or journal left behind)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.support.rig import REPO, SCRIPTS, run_sync
from tests.support.sampledb import cli, fresh_schema
from tests.support.seed_writer import POSTGRES_DDL, SQLITE_DDL

BIG = "big"
BRANCH = "big-branch-try-c0de"
ROWS = 1500  # with the padding, a few MB: more than SQLite's page cache, so the
PAD = "x" * 2000  # database file itself is written before the commit (a hot journal)
FORK = 1200
T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)

COLUMNS = (
    "thread_id, checkpoint_id, parent_id, step, created_at, tags, summary, "
    "messages_blob, state_blob, tools_blob, next_node"
)


def rows() -> list[tuple]:
    """The database every case starts from, as (column values...) in COLUMNS order."""
    out = []
    for step in range(1, ROWS + 1):
        out.append(
            (
                BIG,
                f"ckpt-big-{step}",
                f"ckpt-big-{step - 1}" if step > 1 else None,
                step,
                T0 + timedelta(seconds=step),
                ["auto", f"iter_{step}"],
                f"step {step}",
                [{"role": "assistant", "content": f"step {step}"}],
                {"i": step, "pad": PAD},
                {},
                "agent",
            )
        )
    fork = f"ckpt-big-{FORK}"
    out.append(
        (
            BRANCH,
            f"ckpt-{BRANCH}-0",
            fork,
            0,
            T0 + timedelta(seconds=ROWS + 1),
            ["branch", "try"],
            f"Branch 'try' from {fork}",
            [{"role": "assistant", "content": f"step {FORK}"}],
            {"i": FORK, "pad": PAD},
            {},
            "agent",
        )
    )
    for step in (1, 2):
        out.append(
            (
                BRANCH,
                f"ckpt-{BRANCH}-{step}",
                f"ckpt-{BRANCH}-{step - 1}",
                step,
                T0 + timedelta(seconds=ROWS + 1 + step),
                ["manual"],
                f"branch step {step}",
                [
                    {"role": "assistant", "content": f"step {FORK}"},
                    {"role": "assistant", "content": f"branch {step}"},
                ],
                {"i": FORK, "pad": PAD, "branch_note": step},
                {"tool": {"ok": True}},
                "agent",
            )
        )
    return out


def write_import_file(path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for step in range(1, ROWS + 1):
            f.write(
                json.dumps(
                    {
                        "metadata": {
                            "thread_id": "imported",
                            "checkpoint_id": f"ckpt-imported-{step}",
                            "parent_checkpoint_id": None,
                            "step": step,
                            "created_at": (T0 + timedelta(hours=1, seconds=step)).isoformat(),
                            "tags": ["manual"],
                            "summary": f"imported {step}",
                        },
                        "messages": [],
                        "state": {"i": step, "pad": PAD},
                        "tools_result": {},
                        "next_node": "",
                    }
                )
                + "\n"
            )


OPS = {
    "prune": ["prune", BIG, "--keep-last", "5", "--yes"],
    "rewind": ["rewind", f"{BIG}@100", "--yes"],
    "merge": ["merge", BRANCH, "--into", BIG],
    "import": ["import", "{import_file}"],
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The starting database as a SQLite file in the seeds' rollback-journal mode,
    written with raw SQL (not agentctl)."""
    d = tmp_path_factory.mktemp("crash-template")
    path = d / "checkpoints.db"
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_DDL)
    conn.executemany(
        f"INSERT INTO checkpoints ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                t,
                c,
                p,
                s,
                ts.isoformat(),
                json.dumps(tags),
                summ,
                json.dumps(m),
                json.dumps(st),
                json.dumps(tl),
                nn,
            )
            for t, c, p, s, ts, tags, summ, m, st, tl, nn in rows()
        ],
    )
    conn.commit()
    conn.close()
    write_import_file(d / "import.jsonl")
    return path


async def load_postgres(dsn: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(POSTGRES_DDL)
        await conn.executemany(
            f"INSERT INTO checkpoints ({COLUMNS}) VALUES "
            "($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb, $9::jsonb, $10::jsonb, $11)",
            [
                (t, c, p, s, ts, json.dumps(tags), summ, json.dumps(m), json.dumps(st), json.dumps(tl), nn)
                for t, c, p, s, ts, tags, summ, m, st, tl, nn in rows()
            ],
        )
    finally:
        await conn.close()


def dump_sqlite(path: Path) -> dict:
    """Every table's rows (and the schema), read with plain sqlite3."""
    conn = sqlite3.connect(path)
    try:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        tables = [r[1] for r in schema if r[0] == "table"]
        return {
            "schema": schema,
            **{t: conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall() for t in tables},
        }
    finally:
        conn.close()


async def dump_postgres(dsn: str) -> dict:
    """Every table of the schema, each row as its JSON text, in a stable order.
    (Sequences are left out: Postgres never rolls them back.)"""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        tables = [
            r[0]
            for r in await conn.fetch(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() ORDER BY table_name"
            )
        ]
        out: dict = {
            "schema": tables,
            "indexes": [
                tuple(r)
                for r in await conn.fetch(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY 1"
                )
            ],
        }
        for t in tables:
            out[t] = sorted(r[0] for r in await conn.fetch(f'SELECT row_to_json(x)::text FROM "{t}" x'))
        return out
    finally:
        await conn.close()


def start_paused(url: str, point: str, args: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """agentctl on its way to a pause inside its write transaction."""
    ready = tmp_path / f"ready-{uuid.uuid4().hex[:6]}"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "paused_agentctl.py"), str(ready), point, "--", "--db", url, *args],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return proc, ready


def kill_when_paused(proc: subprocess.Popen, ready: Path, what: object) -> None:
    """Wait until the process is paused inside its transaction, then kill -9 it."""
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"agentctl {what} ended (exit {proc.returncode}) before the pause:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"agentctl {what} never reached its pause point")
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def doctor(url: str) -> tuple[int, dict]:
    r = cli(url, "doctor", "--json")
    assert r.exit_code in (0, 5), r.stderr
    return r.exit_code, json.loads(r.stdout)


@pytest.fixture
def databases(request, template, tmp_path):
    """make(kind, name) -> the URL of a private copy of the starting database."""
    with ExitStack() as schemas:

        def make(kind: str, name: str) -> str:
            if kind == "postgres":
                dsn = schemas.enter_context(fresh_schema(request.getfixturevalue("pg_base_dsn"), "crash_"))
                run_sync(lambda: load_postgres(dsn))
                return dsn
            d = tmp_path / name
            d.mkdir()
            path = d / "checkpoints.db"
            path.write_bytes(template.read_bytes())
            if kind == "sqlite-wal":
                conn = sqlite3.connect(path)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.close()
            return str(path)

        yield make


def dump(url: str) -> dict:
    if url.startswith("postgres"):
        return run_sync(lambda: dump_postgres(url))
    return dump_sqlite(Path(url))


# Both pause points on the seeds' rollback-journal files (where a killed write can leave
# a hot journal); just before the commit on WAL files and on Postgres.
@pytest.mark.parametrize(
    "kind,point",
    [
        ("sqlite-delete", "first-change"),
        ("sqlite-delete", "commit"),
        ("sqlite-wal", "commit"),
        ("postgres", "commit"),
    ],
)
def test_kill_9_inside_the_write_changes_nothing(kind, point, databases, template, tmp_path):
    """Each operation on its own copy of the database (on SQLite all running at once)."""
    extra = {"import_file": str(template.parent / "import.jsonl")}
    cases = []
    for op, args in OPS.items():
        url = databases(kind, op)
        cases.append((op, url, [a.format(**extra) for a in args], doctor(url), dump(url)))
    assert all(len(before["checkpoints"]) == ROWS + 3 for *_, before in cases)
    if kind == "postgres":
        # one at a time: the engine's advisory locks are per database, not per schema
        for op, url, args, *_ in cases:
            kill_when_paused(*start_paused(url, point, args, tmp_path), op)
    else:
        running = [(op, *start_paused(url, point, args, tmp_path)) for op, url, args, *_ in cases]
        for op, proc, ready in running:
            kill_when_paused(proc, ready, op)

    for op, url, args, doctor_before, before in cases:
        # the first thing to open the database after the crash is agentctl's read path
        assert doctor(url) == doctor_before, op
        after = dump(url)
        assert after.keys() == before.keys(), op
        for table in before:
            assert after[table] == before[table], f"{table} changed by the killed {op}"
        if not url.startswith("postgres"):
            # (a journal that never became hot, from a write that had not touched the
            # file yet, may stay: SQLite ignores it)
            # (the copy `prune` takes before it writes is no leftover)
            left = {p.name for p in Path(url).parent.iterdir() if not p.name.endswith(".bak")}
            assert left <= {
                "checkpoints.db",
                "checkpoints.db-journal",
                "checkpoints.db-shm",
                "checkpoints.db-wal",
            }, left
        # nothing is left locked: the same command now runs to its end
        r = cli(url, *args)
        assert r.exit_code == 0, (op, r.stderr)
        assert dump(url)["checkpoints"] != before["checkpoints"], op
