"""Bad input: one clear message, the documented exit code, nothing created or changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentctl.backends import open_backend
from agentctl.errors import (
    ConnectionFailed,
    DatabaseNotFound,
    ExitCode,
    NotADatabase,
    SchemaError,
    UsageError,
)
from tests.support.rig import REPO, SAMPLE_DB


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentctl", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot_dir(d: Path) -> dict[str, str]:
    return {p.name: digest(p) for p in d.iterdir() if p.is_file()}


async def test_missing_file_is_named_and_not_created(tmp_path):
    path = tmp_path / "typo.db"
    with pytest.raises(DatabaseNotFound, match="database file not found: .*typo.db"):
        async with open_backend(str(path)):
            pass
    assert not path.exists()
    r = cli("--db", str(path), "threads", "list")
    assert r.returncode == ExitCode.NOT_FOUND
    assert r.stderr.strip() == f"agentctl: database file not found: {path}"
    assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []


async def test_directory(tmp_path):
    with pytest.raises(NotADatabase, match="is a directory"):
        async with open_backend(str(tmp_path)):
            pass
    r = cli("--db", str(tmp_path), "threads", "list")
    assert r.returncode == ExitCode.DATABASE
    assert "is a directory" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"", "is an empty file"),
        (b"hello, this is a text file\n" * 100, "is not a SQLite database"),
    ],
)
async def test_not_sqlite(tmp_path, content, expected):
    path = tmp_path / "x.db"
    path.write_bytes(content)
    before = snapshot_dir(tmp_path)
    with pytest.raises((NotADatabase, SchemaError), match=expected):
        async with open_backend(str(path)):
            pass
    r = cli("--db", str(path), "threads", "list")
    assert r.returncode == ExitCode.DATABASE
    assert r.stderr.count("\n") == 1 and expected in r.stderr
    assert snapshot_dir(tmp_path) == before


def make_sqlite(path: Path, ddl: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(ddl)
    conn.commit()
    conn.close()


async def test_other_application_database(tmp_path):
    path = tmp_path / "app.db"
    make_sqlite(path, "CREATE TABLE users (id INTEGER, name TEXT); CREATE TABLE orders (id INTEGER);")
    before = snapshot_dir(tmp_path)
    with pytest.raises(SchemaError, match=r"has no 'checkpoints' table \(it has: orders, users\)"):
        async with open_backend(str(path)):
            pass
    r = cli("--db", str(path), "threads", "list", "--json")
    assert r.returncode == ExitCode.DATABASE and r.stdout == ""
    assert snapshot_dir(tmp_path) == before


async def test_checkpoints_table_of_wrong_shape(tmp_path):
    path = tmp_path / "wrong.db"
    make_sqlite(path, "CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, thread_id TEXT, data TEXT);")
    before = snapshot_dir(tmp_path)
    with pytest.raises(SchemaError, match="lacks column\\(s\\): checkpoint_id, parent_id, step"):
        async with open_backend(str(path)):
            pass
    r = cli("--db", str(path), "threads", "list")
    assert r.returncode == ExitCode.DATABASE and "lacks column(s)" in r.stderr
    assert snapshot_dir(tmp_path) == before


async def test_crewai_checkpoints_table_is_not_agentos(tmp_path):
    """CrewAI's checkpoint store also has a `checkpoints` table: detection goes by the
    columns, so it is CrewAI's (not AgentOS); AgentOS forced on it says which of its
    columns the table lacks (exit 6); nothing is written."""
    from agentctl.storage import detect

    path = tmp_path / "crew.db"
    make_sqlite(
        path,
        "CREATE TABLE checkpoints (id TEXT PRIMARY KEY, created_at TEXT, parent_id TEXT,"
        " branch TEXT, data TEXT); CREATE TABLE crew_runs (id TEXT);"
        "INSERT INTO checkpoints VALUES ('c1', '2026-01-01', NULL, 'main', '{}');",
    )
    before = snapshot_dir(tmp_path)
    assert (await detect(str(path))).name == "crewai"
    r = cli("--db", str(path), "threads", "list")
    assert r.returncode == 0 and r.stdout.splitlines()[1].startswith("main\t"), (r.stdout, r.stderr)
    for args in (("threads", "list"), ("log", "c1")):
        r = cli("--db", str(path), "--format", "agentos", *args)
        assert r.returncode == ExitCode.DATABASE, (args, r.stdout, r.stderr)
        assert "lacks column(s)" in r.stderr and "thread_id" in r.stderr, r.stderr
    assert snapshot_dir(tmp_path) == before


async def test_unknown_url_scheme(tmp_path):
    with pytest.raises(UsageError, match="unsupported database URL scheme 'mysql'"):
        async with open_backend("mysql://x/y"):
            pass


async def test_postgres_refused_names_no_password():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dsn = f"postgresql://bob:hunter2secret@127.0.0.1:{port}/agentos"
    with pytest.raises(ConnectionFailed) as info:
        async with open_backend(dsn):
            pass
    assert "hunter2secret" not in str(info.value)
    assert f"127.0.0.1:{port}/agentos" in str(info.value)
    r = cli("--db", dsn, "threads", "list")
    assert r.returncode == ExitCode.DATABASE
    assert "connection refused" in r.stderr and "hunter2secret" not in r.stderr + r.stdout


async def test_postgres_wrong_password_never_printed(pg_base_dsn):
    from urllib.parse import urlsplit

    parts = urlsplit(pg_base_dsn)
    if not parts.password:
        pytest.skip("the test server takes no password (external AGENTCTL_TEST_PG_DSN)")
    bad = pg_base_dsn.replace(f":{parts.password}@", ":Wr0ngPassw0rd@")
    with pytest.raises(ConnectionFailed, match="refused the login") as info:
        async with open_backend(bad):
            pass
    assert "Wr0ngPassw0rd" not in str(info.value) and parts.password not in str(info.value)
    r = cli("--db", bad, "threads", "list")
    assert r.returncode == ExitCode.DATABASE
    assert "refused the login" in r.stderr
    assert "Wr0ngPassw0rd" not in r.stderr + r.stdout


async def test_postgres_without_table(pg_dsn):
    with pytest.raises(SchemaError, match="has no 'checkpoints' table"):
        async with open_backend(pg_dsn):
            pass
    r = cli("--db", pg_dsn, "threads", "list")
    assert r.returncode == ExitCode.DATABASE
    # nothing was created by the read
    import asyncpg

    conn = await asyncpg.connect(pg_dsn)
    try:
        assert await conn.fetchval("SELECT to_regclass('checkpoints')") is None
    finally:
        await conn.close()


# ---- paths the user names: -o, backup DEST, import FILE, --config ------------------------


def sample_copy(tmp_path: Path) -> Path:
    db = tmp_path / "c.db"
    shutil.copyfile(SAMPLE_DB, db)
    return db


def test_export_into_a_missing_folder_is_one_line(tmp_path):
    db = sample_copy(tmp_path)
    r = cli("--db", str(db), "export", "-o", str(tmp_path / "nope" / "x.jsonl"))
    assert r.returncode == ExitCode.NOT_FOUND, r.stderr
    assert (
        r.stderr
        == f"agentctl: cannot write {tmp_path / 'nope' / 'x.jsonl'}: no directory {tmp_path / 'nope'}\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]


def test_export_to_a_directory_or_a_device(tmp_path):
    db = sample_copy(tmp_path)
    (tmp_path / "d").mkdir()
    for extra in ([], ["--force"]):
        r = cli("--db", str(db), "export", "-o", str(tmp_path / "d"), *extra)
        assert r.returncode == ExitCode.USAGE
        assert r.stderr.startswith(f"agentctl: {tmp_path / 'd'} is a directory") and r.stderr.count("\n") == 1
    assert list((tmp_path / "d").iterdir()) == []
    r = cli("--db", str(db), "export", "-o", os.devnull)  # as `> /dev/null` would: no --force, not replaced
    assert r.returncode == 0, r.stderr
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "-o", "/dev/full"],
        ["export"],
        ["show", "loop-research-7"],
        ["log", "loop-research-7"],
        ["threads", "list"],
    ],
)
def test_output_that_cannot_be_written_is_one_line(argv, tmp_path):
    """A full disk (here /dev/full, which takes nothing): one line, exit 1, no traceback;
    stdout too (`show > /dev/full`)."""
    db = sample_copy(tmp_path)
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "agentctl", "--db", str(db), *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=60,
        )
    where = "/dev/full" if "-o" in argv else "the output"
    assert (r.returncode, r.stderr) == (1, f"agentctl: cannot write {where}: No space left on device\n")


def test_import_of_what_is_not_a_file_says_what_it_is(tmp_path):
    db = sample_copy(tmp_path)
    before = digest(db)
    for path, what in ((tmp_path, "a directory"), (Path(os.devnull), "a character device")):
        r = cli("--db", str(db), "import", str(path))
        assert r.returncode == ExitCode.USAGE
        assert r.stderr == f"agentctl: {path} is {what}, not a file\n"
    assert digest(db) == before


def test_backup_into_a_directory_names_the_file(tmp_path):
    db = sample_copy(tmp_path)
    (tmp_path / "d").mkdir()
    r = cli("--db", str(db), "backup", str(tmp_path / "d"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"backed up {db} to {tmp_path / 'd' / 'c.db'} (")


def test_backup_does_not_make_a_missing_folder(tmp_path):
    db = sample_copy(tmp_path)
    r = cli("--db", str(db), "backup", str(tmp_path / "nope" / "x.db"))
    assert r.returncode == ExitCode.NOT_FOUND
    assert (
        r.stderr == f"agentctl: cannot write {tmp_path / 'nope' / 'x.db'}: no directory {tmp_path / 'nope'}\n"
    )
    assert not (tmp_path / "nope").exists()
    r = cli("--db", str(db), "backup", os.devnull, "--force")
    assert r.returncode == ExitCode.USAGE
    assert r.stderr == f"agentctl: {os.devnull} is a character device, not a file\n"


def test_config_that_is_not_a_file_says_what_it_is(tmp_path):
    from agentctl.runners import find_agent

    with pytest.raises(UsageError, match=f"^--config {tmp_path} is a directory, not a file$"):
        find_agent(None, str(tmp_path), cwd=str(tmp_path))
    with pytest.raises(UsageError, match=f"^--config {tmp_path / 'x.json'}: no such file$"):
        find_agent(None, str(tmp_path / "x.json"), cwd=str(tmp_path))


def test_import_of_nan_or_infinity_is_refused(tmp_path):
    """Python's json writes NaN and Infinity; JSON (RFC 8259) has neither."""
    db = sample_copy(tmp_path)
    before = digest(db)
    good = json.loads(cli("--db", str(db), "export", "support-1042").stdout.splitlines()[0])
    good["metadata"]["checkpoint_id"] = "ckpt-new-1"
    good["metadata"]["thread_id"] = "new"
    for value, word in ((float("nan"), "NaN"), (float("inf"), "Infinity"), ("1e999", "1e999")):
        line = json.dumps({**good, "state": {"x": value}})
        if value == "1e999":
            line = line.replace('"1e999"', "1e999")
        f = tmp_path / "in.jsonl"
        f.write_text(line + "\n")
        r = cli("--db", str(db), "import", str(f))
        assert r.returncode == ExitCode.USAGE, r.stderr
        assert r.stderr.startswith(f"agentctl: {f}:1: not a checkpoint ({word}") and r.stderr.count("\n") == 1
        assert r.stderr.endswith("; nothing was imported\n")
    assert digest(db) == before
