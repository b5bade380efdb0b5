"""Ctrl-C while agentctl waits for another process's lock acts at once (issue 33, item
16): SQLite's busy timeout is waited in short steps (agentctl.storage.sqlutil), so the
command ends within a second of SIGINT, not when the 5 s wait is over, with exit 130
and the line that is true; nothing is written. Without Ctrl-C the wait still ends after
about 5 s with exit 6 (once: format detection does not wait a second time).

Every SQLite format, a read (`show`, blocked by an EXCLUSIVE lock) and a write
(`rewind`, whose reads pass under another writer's RESERVED lock and whose write waits
for it), the real command line in a subprocess, the lock held by this process."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.rig import REPO

# (sample file, a thread to show, a checkpoint to rewind to)
SAMPLES = {
    "agentos": ("checkpoints.db", "loop-research-7", "loop-research-7~1"),
    "article": ("sessions.db", "s-wang-report", "s-wang-report~1"),
    "langgraph": ("langgraph.db", "research", "research~1"),
    "openai": ("openai_agents.db", "planner-3", "planner-3~1"),
    "adk": ("adk.db", "trip-planner/alice/s-1", "trip-planner/alice/s-1@4"),
}


def sample(name: str, tmp_path: Path) -> Path:
    """A copy of the format's sample in rollback-journal mode (where a writer's
    EXCLUSIVE lock keeps readers out too)."""
    db = tmp_path / SAMPLES[name][0]
    shutil.copyfile(REPO / "sample_db" / SAMPLES[name][0], db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return db


def args(name: str, command: str) -> list[str]:
    _file, thread, ref = SAMPLES[name]
    return ["show", thread] if command == "show" else ["rewind", ref, "--yes"]


@contextmanager
def locked(db: Path, command: str) -> Iterator[None]:
    """Another process's lock on `db` (this one's): EXCLUSIVE for a read to wait on,
    RESERVED (a write under way) for a write to wait on."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE" if command == "show" else "BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE lock_holder (x)")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def start(db: Path, argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", str(db), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(db.parent),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )


def wait_until_waiting(proc: subprocess.Popen, db: Path) -> None:
    """Until the command has the database open, read from /proc, then a while (it is
    at the lock): a sleep from the start is too short on a loaded machine, where a
    Ctrl-C during Python's own start-up is Python's, not agentctl's."""
    fds = Path(f"/proc/{proc.pid}/fd")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if any(os.path.realpath(fd) == str(db.resolve()) for fd in fds.iterdir()):
                break
        except OSError:  # an fd closed while read
            pass
        time.sleep(0.02)
    else:
        raise AssertionError("the command never opened the database")
    time.sleep(1.2)  # its reads done (a rewind's pass under the RESERVED lock): at the wait


def contents(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", ["show", "rewind"])
@pytest.mark.parametrize("name", list(SAMPLES))
def test_ctrl_c_while_waiting_for_a_lock_ends_the_command_at_once(name, command, tmp_path):
    db = sample(name, tmp_path)
    before = contents(tmp_path)
    with locked(db, command):
        proc = start(db, args(name, command))
        wait_until_waiting(proc, db)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            _out, err = proc.communicate(timeout=10)
        finally:
            proc.kill()
        took = time.monotonic() - signalled
    assert proc.returncode == 130, err
    assert took < 1.0, (took, err)
    lines = [line for line in err.splitlines() if line.startswith("agentctl:")]
    assert "Traceback" not in err, err
    if command == "show":
        assert lines == ["agentctl: interrupted; nothing was changed"], err
    else:  # the write was asked for and never began: the op log says so
        assert lines == ["agentctl: interrupted; the rewind was rolled back, nothing was changed"], err
    assert contents(tmp_path) == before


@pytest.mark.parametrize("name, command", [("agentos", "show"), ("openai", "rewind")])
def test_without_ctrl_c_a_lock_wait_ends_after_5_seconds_with_exit_6(name, command, tmp_path):
    """One wait of 5 s: format detection, whose read waits too, does not make it 10."""
    db = sample(name, tmp_path)
    before = contents(tmp_path)
    with locked(db, command):
        started = time.monotonic()
        r = subprocess.run(
            [sys.executable, "-m", "agentctl", "--db", str(db), *args(name, command)],
            capture_output=True,
            text=True,
            cwd=str(tmp_path),
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
        )
        took = time.monotonic() - started
    assert r.returncode == 6, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"agentctl: {db}: the database is locked by another writer (waited, still busy)"
    ), r.stderr
    assert 5.0 <= took < 8.0, took  # start-up, then 5 s of waiting
    assert contents(tmp_path) == before


def test_every_format_still_waits_for_a_lock_and_then_says_it_is_locked(tmp_path):
    """Every format and command at once (each waits its own 5 s)."""
    runs = []
    for name in SAMPLES:
        for command in ("show", "rewind"):
            folder = tmp_path / f"{name}-{command}"
            folder.mkdir()
            runs.append((name, command, sample(name, folder)))
    befores = [contents(db.parent) for _n, _c, db in runs]
    holders = [locked(db, command) for _n, command, db in runs]
    for holder in holders:
        holder.__enter__()
    try:
        started = time.monotonic()
        procs = [start(db, args(name, command)) for name, command, db in runs]
        results = []
        for proc in procs:
            _out, err = proc.communicate(timeout=60)
            results.append((proc.returncode, time.monotonic() - started, err))
    finally:
        for holder in holders:
            holder.__exit__(None, None, None)
    for (name, command, db), (code, took, err), before in zip(runs, results, befores, strict=False):
        assert code == 6, (name, command, err)
        assert err.strip().splitlines()[-1] == (
            f"agentctl: {db}: the database is locked by another writer (waited, still busy)"
        ), err
        assert took >= 5.0, (name, command, took)  # the wait is not cut short
        assert contents(db.parent) == before, (name, command)


def test_a_ctrl_c_before_the_storage_layer_is_imported_still_ends_a_lock_wait(tmp_path):
    """The Ctrl-C comes while the command starts, before agentctl.storage.sqlutil is
    imported (a loaded machine: CI's); the wait for the lock that follows ends at once,
    not after its 5 s, with exit 130."""
    db = sample("agentos", tmp_path)
    script = (
        "import os, signal, sys, time\n"
        "from agentctl.cli.context import run\n"
        "async def command():\n"
        "    assert 'agentctl.storage.sqlutil' not in sys.modules\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    from agentctl.storage.schema import sqlite_tables\n"
        "    started = time.monotonic()\n"
        "    try:\n"
        "        sqlite_tables(sys.argv[1])\n"
        "    finally:\n"
        "        print(round(time.monotonic() - started, 3))\n"
        "try:\n"
        "    run(command())\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    with locked(db, "show"):
        r = subprocess.run(
            [sys.executable, "-c", script, str(db)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert r.returncode == 130, r.stderr
    assert float(r.stdout.split()[-1]) < 1.0, r.stdout
