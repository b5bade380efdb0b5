"""The safety backup and `agentctl backup` under a live writer (issue 22, item 3): a
process commits in a loop while the copy runs. The copy ends in bounded time, is a
consistent database, and leaves no partial or hidden file; interrupted, it leaves none
either."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.support.rig import REPO

WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
print('ready', flush=True)
n = 0
while True:
    conn.execute('BEGIN IMMEDIATE')
    conn.execute('INSERT INTO filler (data) VALUES (randomblob(3000))')
    conn.execute('COMMIT')
    n += 1
    time.sleep(0.001)
"""


def big_wal_db(path: Path, mib: int = 48) -> Path:
    """The AgentOS sample in WAL mode with `mib` MiB of filler rows (more pages than one
    step of the old stepwise backup copied)."""
    shutil.copyfile(REPO / "sample_db" / "checkpoints.db", path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO filler (data) VALUES (zeroblob(?))", [(1 << 20,)] * mib)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def start_writer(db: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.1)  # committing
    return proc


def agentctl(db: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", str(db), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(db.parent),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".agentctl-backup"))


def consistent(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT COUNT(*) FROM filler").fetchone()[0] >= 48
    finally:
        conn.close()


def test_the_safety_backup_ends_under_a_live_writer(tmp_path):
    db = big_wal_db(tmp_path / "agents.db")
    writer = start_writer(db)
    try:
        started = time.monotonic()
        proc = agentctl(db, "prune", "loop-research-7", "--keep-last", "20", "--yes")
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError(
                f"prune's backup did not end in 20 s under a live writer (left: {leftovers(tmp_path)})"
            ) from None
        took = time.monotonic() - started
    finally:
        writer.kill()
        writer.wait()
    assert proc.returncode == 0, err
    assert took < 20
    baks = sorted(tmp_path.glob("agents.db.*.bak"))
    assert len(baks) == 1, err
    consistent(baks[0])
    assert leftovers(tmp_path) == []


def test_an_interrupted_backup_leaves_no_file(tmp_path):
    db = big_wal_db(tmp_path / "agents.db", mib=96)
    dest = tmp_path / "copy.db"
    for delay in (0.3, 0.45, 0.6):
        proc = agentctl(db, "backup", str(dest), "--force")
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert leftovers(tmp_path) == [], delay
        if proc.returncode == 0:
            consistent(dest)
        else:
            assert not dest.exists() or dest.stat().st_size > 0
        if dest.exists():
            dest.unlink()
