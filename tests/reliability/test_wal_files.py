"""What agentctl leaves next to a SQLite database in WAL mode (issue 23, items 1 and 2).

- After every write command, with another connection open and idle, the database file
  alone holds the write: a copy of the `.db` without its `-wal` reads the same as the
  database with it, and the `-wal` is empty (agentctl checkpoints the WAL after its
  write and closes its write connection last).
- A checkpoint that cannot complete (another process holds a read transaction on the
  WAL) neither blocks nor fails the command.
- A read may create the `-shm` and an empty `-wal` (SQLite needs them to read a WAL
  database), never changes the database file, and creates nothing else.

The real command line runs in a subprocess (its fast exit included)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.rig import REPO

SAMPLES = REPO / "sample_db"


def agentctl(db: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        cwd=str(db.parent),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )


def dump(path: Path) -> dict:
    """The schema and every table's rows, read through a read-only connection (the WAL
    included)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        schema = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        tables = [name for kind, name, _ in schema if kind == "table"]
        return {"": schema, **{t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}}
    finally:
        conn.close()


def wal_copy(sample: str, dest: Path) -> Path:
    shutil.copyfile(SAMPLES / sample, dest)
    conn = sqlite3.connect(dest)
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    conn.close()
    return dest


def file_alone(db: Path, tmp: Path) -> Path:
    """A copy of the database file only (no -wal, no -shm), as `cp x.db` makes."""
    alone = tmp / "alone" / db.name
    alone.parent.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(str(alone) + suffix):
            os.unlink(str(alone) + suffix)
    shutil.copyfile(db, alone)
    return alone


# (sample, the write commands run one after the other; each must change the database)
WRITES = {
    "agentos": (
        "checkpoints.db",
        [
            ["rewind", "coder-add-cli-flag@5", "--yes"],
            ["branch", "coder-add-cli-flag@3", "b1"],
            ["rewind", "coder-fix-flaky-test~1", "--yes"],
            ["merge", "coder-fix-flaky-test-branch-retry-backoff-70e7", "--strategy", "theirs"],
            ["prune", "loop-research-7", "--keep-last", "20", "--yes"],
            ["threads", "delete", "support-1044", "--yes"],
            ["undo"],
            ["rewind", "coder-add-cli-flag@2", "--hard", "--yes"],
            ["purge", "--yes"],
            ["import", "{export}", "--on-conflict", "replace"],
            ["{drop-index}"],
            ["doctor", "--fix-indexes"],
        ],
    ),
    "article": (
        "sessions.db",
        [
            ["rewind", "s-weather-paris@3", "--hard", "--yes"],
            ["branch", "s-wang-report@5", "w1"],
            ["prune", "--all", "--status", "cancelled", "--yes"],
            ["threads", "delete", "s-bob-trip", "--yes"],
            ["undo"],
            ["purge", "--yes"],
        ],
    ),
    "langgraph": (
        "langgraph.db",
        [
            ["rewind", "deploy-approved~1", "--yes"],
            ["branch", "research~1", "r1"],
            ["threads", "delete", "flaky-tool", "--yes"],
            ["undo"],
            ["prune", "--all", "--keep-last", "1", "--yes"],
        ],
    ),
    "openai-agents": (
        "openai_agents.db",
        [
            ["rewind", "weather-1~3", "--yes"],
            ["branch", "planner-3~2", "p1"],
            ["undo"],
        ],
    ),
    "adk": (
        "adk.db",
        [
            ["rewind", "trip-planner/alice/s-1@4", "--yes"],
            ["branch", "trip-planner/alice/s-1~1", "a1"],
            ["undo"],
        ],
    ),
}


@pytest.mark.parametrize("fmt", list(WRITES))
def test_after_every_write_the_database_file_alone_holds_it(fmt, tmp_path):
    """With another connection open and idle all along (an agent between two writes):
    agentctl's write connection is not the last to close, so SQLite's own checkpoint on
    the last close does not happen and only agentctl's checkpoint puts the write in the
    file and empties the -wal."""
    sample, commands = WRITES[fmt]
    db = wal_copy(sample, tmp_path / "db.sqlite")
    # in a process of its own: this one copies the file, and closing any descriptor of
    # it would drop the process's POSIX locks, the idle connection's too
    idle = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(db)!r})\n"
            "c.execute('SELECT COUNT(*) FROM sqlite_master').fetchone()\n"
            "assert not c.in_transaction\n"
            "print('ready', flush=True); sys.stdin.readline(); c.close()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert idle.stdout is not None and idle.stdout.readline().strip() == "ready"
        run_writes(fmt, commands, db, tmp_path)
        assert idle.poll() is None, "the idle connection was open all along"
    finally:
        idle.communicate("\n", timeout=30)


def run_writes(fmt: str, commands: list[list[str]], db: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    if fmt == "agentos":
        r = agentctl(db, "export", "coder-add-cli-flag")
        assert r.returncode == 0, r.stderr
        export.write_text(r.stdout)
    for args in commands:
        if args == ["{drop-index}"]:  # for doctor --fix-indexes to create it again
            conn = sqlite3.connect(db)
            conn.execute("DROP INDEX idx_parent")
            conn.close()
            continue
        args = [str(export) if a == "{export}" else a for a in args]
        before = dump(db)
        r = agentctl(db, *args)
        assert r.returncode in ((0, 5) if args[0] == "doctor" else (0,)), (args, r.stdout, r.stderr)
        after = dump(db)
        assert after != before, f"{args} changed nothing: not a test of its write"
        wal = Path(str(db) + "-wal")
        assert wal.exists() and wal.stat().st_size == 0, f"{args} left {wal.stat().st_size} B in the -wal"
        assert dump(file_alone(db, tmp_path)) == after, f"{args}: the file alone lacks the write"


def test_a_checkpoint_blocked_by_a_reader_neither_blocks_nor_fails_the_write(tmp_path):
    """Another process keeps a read transaction open on the WAL: TRUNCATE cannot
    complete. The write still succeeds at once, and what could be copied is copied."""
    db = wal_copy("sessions.db", tmp_path / "s.db")
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN'); c.execute('SELECT COUNT(*) FROM sqlite_master').fetchone()\n"
            "print('ready', flush=True); sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        started = time.monotonic()
        r = agentctl(db, "rewind", "s-weather-paris@3", "--hard", "--yes", "--no-backup")
        took = time.monotonic() - started
        assert r.returncode == 0, r.stderr
        assert took < 4, f"the write took {took:.1f} s behind a reader"
    finally:
        reader.communicate("\n", timeout=30)
    # the reader gone, the next write's checkpoint completes
    r = agentctl(db, "undo")
    assert r.returncode == 0, r.stderr
    assert dump(file_alone(db, tmp_path)) == dump(db)


READS = {
    "sessions.db": [
        ["threads", "list"],
        ["log", "s-weather-paris"],
        ["show", "s-weather-paris@3", "--json"],
        ["search", "Paris"],
        ["doctor"],
        ["oplog"],
        ["stats"],
        ["export", "s-weather-paris"],
        ["tree", "s-weather-paris"],
        ["diff", "s-weather-paris@2", "s-weather-paris@3"],
    ],
    "checkpoints.db": [
        ["threads", "list"],
        ["log", "support-1044"],
        ["search", "backoff"],
        ["doctor"],
        ["oplog"],
        ["stats"],
        ["export"],
    ],
    "langgraph.db": [["threads", "list"], ["log", "research"], ["search", "loop"], ["doctor"], ["oplog"]],
    "adk.db": [
        ["threads", "list"],
        ["show", "trip-planner/alice/s-1", "--json"],
        ["search", "card"],
        ["doctor"],
        ["oplog"],
    ],
    "openai_agents.db": [
        ["threads", "list"],
        ["log", "weather-1"],
        ["search", "Lyon"],
        ["doctor"],
        ["oplog"],
    ],
}


@pytest.mark.parametrize("sample", list(READS))
def test_a_read_creates_only_the_shm_and_an_empty_wal_and_changes_nothing(sample, tmp_path):
    db = wal_copy(sample, tmp_path / "s.db")
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    before = dump(db)
    for args in READS[sample]:
        r = agentctl(db, *args)
        assert r.returncode in (0, 5), (args, r.stderr)
        made = sorted(p.name for p in tmp_path.iterdir())
        assert set(made) <= {"s.db", "s.db-shm", "s.db-wal"}, (args, made)
        wal = Path(str(db) + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0, args
        assert hashlib.sha256(db.read_bytes()).hexdigest() == digest, f"{args} changed the file"
    assert dump(db) == before  # no table, index or row added (no agentctl_ tables)
