"""Hostile and broken input, on every command: one line on stderr, the documented exit
code, no traceback, nothing created, nothing changed. (tests/cli/test_bad_input.py checks
the opening of each kind of bad database; this file runs all the commands on them, and
adds what databases really hold: broken rows, huge rows, NUL bytes, quotes and SQL in
ids, read-only and locked files.)"""

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
from agentctl.errors import ExitCode
from tests.support.helpers import make_cp
from tests.support.rig import REPO, SAMPLE_DB, run_sync
from tests.support.sampledb import cli
from tests.support.seed_writer import POSTGRES_DDL, SQLITE_DDL

MAIN = "coder-fix-flaky-test"


def files(d: Path) -> dict[str, str]:
    """Every file under d (recursively) with its content's digest."""
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


def one_clean_line(stderr: str) -> str:
    assert stderr.endswith("\n") and stderr.count("\n") == 1, repr(stderr)
    assert stderr.startswith("agentctl: ") and "Traceback" not in stderr, stderr
    return stderr


def error_line(stderr: str) -> str:
    """The error of a command that may have printed its plan first (on stderr): the
    last line, the only one from the error boundary; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert lines and lines[-1].startswith("agentctl: "), stderr
    assert sum(line.startswith("agentctl: ") for line in lines) == 1, stderr
    return lines[-1]


def run_cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """agentctl in its own process (what a user runs)."""
    return subprocess.run(
        [sys.executable, "-m", "agentctl", *args],
        capture_output=True,
        text=True,
        cwd=kw.pop("cwd", REPO),
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=kw.pop("timeout", 120),
        **kw,
    )


# --------------------------------------------------------------------------- unusable databases

# Every command, reading and writing. {d}: a scratch directory outside the database's.
COMMANDS = [
    ["threads", "list"],
    ["threads", "show", "t"],
    ["log", "t"],
    ["show", "t"],
    ["diff", "t"],
    ["tree", "t"],
    ["search", "x"],
    ["stats"],
    ["doctor"],
    ["oplog"],
    ["export", "-o", "{d}/out.jsonl"],
    ["rewind", "t@1", "--yes"],
    ["branch", "t", "b"],
    ["merge", "t-branch", "--into", "t"],
    ["prune", "t", "--keep-last", "1", "--yes"],
    ["threads", "delete", "t", "--yes"],
    ["undo"],
    ["purge", "--yes"],
    ["import", "{d}/in.jsonl"],
    ["backup", "{d}/copy.db"],
]


def make_bad(kind: str, d: Path) -> Path:
    path = d / "db.sqlite"
    if kind == "missing":
        return path
    if kind == "directory":
        path.mkdir()
        (path / "inside.txt").write_text("x")
        return path
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("THREAD\tSTEP\nnot a database at all\n" * 50)
    else:
        conn = sqlite3.connect(path)
        if kind == "other-app":
            conn.executescript(
                "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT);"
                "INSERT INTO users (email) VALUES ('a@example.com');"
            )
        elif kind == "wrong-shape":
            conn.executescript(
                "CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, thread TEXT, blob TEXT);"
                "INSERT INTO checkpoints (thread, blob) VALUES ('t', '{}');"
            )
        conn.commit()
        conn.close()
    return path


EXPECTED = {
    "missing": (ExitCode.NOT_FOUND, "not found"),
    "directory": (ExitCode.DATABASE, "is a directory"),
    "empty": (ExitCode.DATABASE, "empty file"),
    "text": (ExitCode.DATABASE, "not a SQLite database"),
    "other-app": (ExitCode.DATABASE, "no 'checkpoints' table (it has: users)"),
    "wrong-shape": (ExitCode.DATABASE, "lacks column(s)"),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_every_command_on_an_unusable_database(kind, tmp_path):
    dbdir, scratch = tmp_path / "db", tmp_path / "scratch"
    dbdir.mkdir()
    scratch.mkdir()
    (scratch / "in.jsonl").write_text(
        json.dumps(
            {
                "metadata": {
                    "thread_id": "t",
                    "checkpoint_id": "c",
                    "step": 1,
                    "created_at": "2026-01-01T00:00:00+00:00",
                },
                "messages": [],
                "state": {},
                "tools_result": {},
            }
        )
        + "\n"
    )
    path = make_bad(kind, dbdir)
    before, scratch_before = files(dbdir), files(scratch)
    code, text = EXPECTED[kind]
    for args in COMMANDS:
        args = [a.format(d=scratch) for a in args]
        r = cli(str(path), *args)
        assert r.exit_code == code, (args, r.exit_code, r.stderr)
        assert text in one_clean_line(r.stderr), (args, r.stderr)
        assert r.stdout == "", (args, r.stdout)
        assert files(dbdir) == before, args
        assert files(scratch) == scratch_before, args
    if kind == "missing":
        assert not path.exists()


def test_a_failed_import_create_leaves_no_file(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(make_cp("t", 1).to_dict()) + "\n{not json\n")
    r = cli(str(tmp_path / "new.db"), "import", "--create", str(bad))
    assert r.exit_code == ExitCode.USAGE and "bad.jsonl:2" in one_clean_line(r.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_one_clean_line_from_a_real_process(tmp_path):
    """The same, through the installed entry point's error boundary (no CliRunner)."""
    path = make_bad("other-app", tmp_path)
    before = files(tmp_path)
    for args in (["log", "t"], ["prune", "t", "--keep-last", "1", "--yes"]):
        r = run_cli("--db", str(path), *args)
        assert r.returncode == ExitCode.DATABASE and r.stdout == ""
        assert "no 'checkpoints' table" in one_clean_line(r.stderr)
    assert files(tmp_path) == before


# --------------------------------------------------------------------------- broken rows


def seed_sqlite(path: Path, rows: list[tuple]) -> None:
    """Rows written with raw SQL (any text in any column), like a foreign writer."""
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_DDL)
    conn.executemany(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, tags, summary, "
        "messages_blob, state_blob, tools_blob, next_node) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.commit()
    conn.close()


def raw(thread, cid, parent, step, *, tags='["manual"]', summary="", messages=None, state=None, tools="{}"):
    msgs = (
        messages if messages is not None else json.dumps([{"role": "user", "content": f"{cid} says hello"}])
    )
    st = state if state is not None else json.dumps({"step": step, "who": cid})
    return (
        thread,
        cid,
        parent,
        step,
        f"2026-02-01T10:00:{step:02d}+00:00",
        tags,
        summary,
        msgs,
        st,
        tools,
        "",
    )


BROKEN_ROWS = [
    raw("t", "t1", None, 1),
    raw("t", "t2", "t1", 2, state='{"step": 2, "unterminated'),  # unparsable JSON
    raw("t", "t3", "t2", 3, messages='[{"role": "user", "content": "ok"}'),  # unparsable JSON
    raw("t", "t4", "t3", 4, state="[1, 2, 3]"),  # a list for an object
    raw("t", "t5", "t4", 5, tags="not json", summary="tags broken"),  # tags: shown as []
    raw("t", "t6", "t5", 6),
    raw("t", "t7", "t6", 7),
]


def test_broken_rows_are_named_and_the_rest_still_works(tmp_path):
    path = tmp_path / "broken.db"
    seed_sqlite(path, BROKEN_ROWS)
    db = str(path)
    before = files(tmp_path)

    r = cli(db, "threads", "list", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["checkpoints"] == 7
    r = cli(db, "log", "t", "--json")
    assert r.exit_code == 0 and [m["checkpoint_id"] for m in json.loads(r.stdout)] == [
        f"t{i}" for i in range(7, 0, -1)
    ]
    assert json.loads(r.stdout)[2]["tags"] == []  # t5's unreadable tags
    for ref, column, reason in (
        ("t2", "state_blob", "invalid JSON"),
        ("t3", "messages_blob", "invalid JSON"),
        ("t4", "state_blob", "JSON array where an object is expected"),
    ):
        r = cli(db, "show", ref)  # its metadata and why the rest is not shown (issue 33.16)
        assert r.exit_code == 0 and ref in r.stdout and column in r.stdout and reason in r.stdout, r.stderr
        shown = json.loads(cli(db, "show", ref, "--json").stdout)
        assert shown["state"] is None and shown["unusable"]["column"] == column
        for args in (["diff", "t1", ref], ["diff", ref]):
            r = cli(db, *args)
            assert r.exit_code == ExitCode.DATABASE, (args, r.stderr)
            line = one_clean_line(r.stderr)
            assert f"'{ref}'" in line and column in line and reason in line, line
            assert r.stdout == "", args
    for args in (
        ["show", "t7"],
        ["show", "t5", "--json"],
        ["diff", "t6", "t7"],
        ["tree", "t"],
        ["stats"],
        ["search", "says hello"],
        ["search", "says hello", "--scan"],
    ):
        r = cli(db, *args)
        assert r.exit_code == 0, (args, r.stderr)
    r = cli(db, "search", "says hello", "--json")
    assert {h["checkpoint_id"] for h in json.loads(r.stdout)} >= {"t1", "t7"}
    r = cli(db, "doctor", "--json")
    assert r.exit_code == ExitCode.PROBLEMS
    found = {(p["checkpoint_id"], p["column"]) for p in json.loads(r.stdout)["problems"]["invalid_json"]}
    assert {("t2", "state_blob"), ("t3", "messages_blob"), ("t4", "state_blob"), ("t5", "tags")} <= found
    r = cli(db, "export", "-o", str(tmp_path / "out.jsonl"))
    assert r.exit_code == ExitCode.ERROR and "3 row(s) could not be read" in r.stderr
    exported = [
        json.loads(line)["metadata"]["checkpoint_id"]
        for line in (tmp_path / "out.jsonl").read_text().splitlines()
    ]
    assert exported == ["t1", "t5", "t6", "t7"]
    assert {k: v for k, v in files(tmp_path).items() if k != "out.jsonl"} == before  # reads changed nothing

    # writes that move rows without reading their JSON work; those that must read it say why
    r = cli(db, "branch", "t2", "try")
    assert r.exit_code == ExitCode.DATABASE and "'t2'" in one_clean_line(r.stderr)
    r = cli(db, "rewind", "t1", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["moved"] == [f"t{i}" for i in range(2, 8)]
    assert cli(db, "undo").exit_code == 0
    r = cli(db, "prune", "t", "--keep-last", "2", "--yes", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["results"][0]["deleted"] == [
        "t1",
        "t2",
        "t3",
        "t4",
        "t5",
    ]
    assert cli(db, "undo").exit_code == 0
    conn = sqlite3.connect(path)
    assert conn.execute(
        "SELECT checkpoint_id, state_blob FROM checkpoints WHERE checkpoint_id IN ('t2', 't4') ORDER BY 1"
    ).fetchall() == [("t2", BROKEN_ROWS[1][8]), ("t4", "[1, 2, 3]")]
    conn.close()


async def test_wrong_types_in_jsonb_columns(pg_dsn):
    """Postgres JSONB always parses, but can hold the wrong kind of value."""
    import asyncpg

    conn = await asyncpg.connect(pg_dsn)
    try:
        await conn.execute(POSTGRES_DDL)
        for cid, state, messages in (
            ("p1", '{"a": 1}', "[]"),
            ("p2", "[1, 2]", "[]"),
            ("p3", '{"a": 2}', '"text"'),
        ):
            await conn.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, step, created_at, state_blob, messages_blob) "
                "VALUES ('p', $1, $2, now(), $3::jsonb, $4::jsonb)",
                cid,
                int(cid[1]),
                state,
                messages,
            )
    finally:
        await conn.close()
    assert cli(pg_dsn, "log", "p").exit_code == 0
    for ref, column in (("p2", "state_blob"), ("p3", "messages_blob")):
        r = cli(pg_dsn, "show", ref)  # a placeholder for the row's contents (issue 33.16)
        assert r.exit_code == 0 and column in r.stdout and ref in r.stdout, r.stderr
    assert cli(pg_dsn, "show", "p1", "--json").exit_code == 0
    assert cli(pg_dsn, "doctor").exit_code == ExitCode.PROBLEMS


# --------------------------------------------------------------------------- a 50 MB row

BIG = 50 * 1024 * 1024
# agentctl in a process that reports its peak resident memory (VmHWM: this process's
# own, unlike ru_maxrss, which counts the parent's pages it was forked with).
_MEASURED = """
import atexit, sys
def report(path=sys.argv[1]):
    with open("/proc/self/status") as f:
        peak = [line.split()[1] for line in f if line.startswith("VmHWM:")][0]
    with open(path, "w") as f:
        f.write(peak)
atexit.register(report)
sys.argv = ["agentctl"] + sys.argv[2:]
from agentctl.cli import main
main()
"""


def peak_mb(url: str, args: list[str], tmp: Path) -> tuple[int, float, Path]:
    """Run agentctl; return (exit code, its peak resident memory in MB, its stdout file)."""
    out, hwm = tmp / "stdout", tmp / "hwm"
    with out.open("w") as stdout:
        r = subprocess.run(
            [sys.executable, "-c", _MEASURED, str(hwm), "--db", url, *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert r.returncode == 0, (args, r.stderr)
    return r.returncode, int(hwm.read_text()) / 1024, out


@pytest.fixture(params=["sqlite", "postgres"])
def big_db(request, tmp_path) -> str:
    """A thread whose middle checkpoint carries a 50 MB state, written with raw SQL."""
    blob = json.dumps({"small": False, "huge": "0123456789abcdef" * (BIG // 16)})
    if request.param == "sqlite":
        path = tmp_path / "big.db"
        seed_sqlite(
            path,
            [raw("big", "b1", None, 1), raw("big", "b2", "b1", 2, state=blob), raw("big", "b3", "b2", 3)],
        )
        return str(path)
    dsn = request.getfixturevalue("pg_dsn")

    async def build() -> None:
        import asyncpg

        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(POSTGRES_DDL)
            for cid, parent, step, state in (
                ("b1", None, 1, "{}"),
                ("b2", "b1", 2, blob),
                ("b3", "b2", 3, "{}"),
            ):
                await conn.execute(
                    "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, state_blob) "
                    "VALUES ('big', $1, $2, $3, $4::jsonb)",
                    cid,
                    parent,
                    step,
                    state,
                )
        finally:
            await conn.close()

    run_sync(build)
    return dsn


def test_a_50_mb_row_works_in_bounded_memory(big_db, tmp_path):
    for args in (["threads", "list"], ["show", "b3"], ["diff", "b1", "b3"], ["tree", "big"]):
        r = cli(big_db, *args)
        assert r.exit_code == 0, (args, r.stderr)
    if big_db.startswith("postgres") or not Path("/proc/self/status").exists():
        # memory is measured on SQLite (the reading code after the driver is shared)
        r = cli(big_db, "show", "b2", "--json")
        assert r.exit_code == 0 and len(json.loads(r.stdout)["state"]["huge"]) == BIG
        return
    _, base, _ = peak_mb(big_db, ["log", "big"], tmp_path)  # never reads the row's content
    _, shown, out = peak_mb(big_db, ["show", "b2", "--json"], tmp_path)
    assert out.stat().st_size > BIG
    assert json.loads(out.read_text())["state"]["huge"].startswith("0123456789abcdef")
    # text, parsed value and output: a few times the row, not more
    assert shown < base + 8 * BIG / 2**20, (shown, base)
    assert base < 200, base  # and the thread's listing did not load it at all


# --------------------------------------------------------------------------- NUL bytes

NUL_TEXT = "before\x00after"


def test_nul_bytes_in_sqlite_are_shown_and_refused_by_postgres(tmp_path, pg_dsn):
    path = tmp_path / "nul.db"
    seed_sqlite(
        path,
        [
            raw(
                "n",
                "n1",
                None,
                1,
                summary=NUL_TEXT,
                messages=json.dumps([{"role": "user", "content": NUL_TEXT}]),
                state=json.dumps({"k\x00ey": NUL_TEXT}),
            ),
            raw("n", "n2", "n1", 2),
        ],
    )
    db = str(path)
    r = cli(db, "show", "n1")
    assert r.exit_code == 0 and "\x00" not in r.stdout and "before\\x00after" in r.stdout
    r = cli(db, "show", "n1", "--json")
    assert r.exit_code == 0 and "\x00" not in r.stdout
    assert json.loads(r.stdout)["messages"][0]["content"] == NUL_TEXT
    for args in (["log", "n"], ["threads", "list"], ["diff", "n1", "n2"], ["search", "after"], ["doctor"]):
        r = cli(db, *args)
        assert r.exit_code == 0 and "\x00" not in r.stdout, (args, r.stderr)
    # agentctl's own writes carry NUL through on SQLite
    branch = json.loads(cli(db, "branch", "n1", "keep", "--json").stdout)["thread_id"]
    assert json.loads(cli(db, "show", branch, "--json").stdout)["state"] == {"k\x00ey": NUL_TEXT}
    exported = tmp_path / "nul.jsonl"
    assert cli(db, "export", "n", "-o", str(exported)).exit_code == 0

    # Postgres cannot store U+0000 in TEXT or JSONB: a clear error, nothing written,
    # not even the table --create made
    r = cli(pg_dsn, "import", "--create", str(exported))
    assert r.exit_code == ExitCode.DATABASE and "NUL" in one_clean_line(r.stderr)
    r = cli(pg_dsn, "threads", "list")
    assert r.exit_code == ExitCode.DATABASE and "no 'checkpoints' table" in r.stderr
    seed = tmp_path / "seed.jsonl"
    seed.write_text(exported.read_text().splitlines()[1] + "\n")  # n2: no NUL
    assert cli(pg_dsn, "import", "--create", str(seed)).exit_code == 0
    r = cli(pg_dsn, "import", str(exported))
    assert r.exit_code == ExitCode.DATABASE
    assert "NUL" in one_clean_line(r.stderr) and r.stdout == ""
    r = cli(pg_dsn, "log", "n", "--json")
    assert [m["checkpoint_id"] for m in json.loads(r.stdout)] == ["n2"]
    assert [op["kind"] for op in json.loads(cli(pg_dsn, "oplog", "--json").stdout)] == ["import"]


# --------------------------------------------------------------------------- quotes and SQL in ids

EVIL_IDS = [
    "'; DROP TABLE checkpoints; --",
    'it\'s "quoted"',
    "x' OR '1'='1",
    "100%_done",
    "a\\b",
    "$1 ?",
    "--",
]


@pytest.fixture(params=["sqlite", "postgres"])
def evil_db(request, tmp_path) -> str:
    url = str(tmp_path / "evil.db") if request.param == "sqlite" else request.getfixturevalue("pg_dsn")

    async def build() -> None:
        async with open_backend(url, readonly=False, create=True) as b:
            async with b.transaction() as tx:
                for n, thread in enumerate(EVIL_IDS):
                    parent = None
                    for step in (1, 2, 3):
                        cid = f"{thread}#{step}"
                        await tx.put(
                            make_cp(
                                thread,
                                step,
                                cid=cid,
                                parent=parent,
                                state={"n": n, "step": step},
                                summary=thread,
                            )
                        )
                        parent = cid

    run_sync(build)
    return url


def test_ids_with_quotes_and_sql_are_just_text(evil_db):
    db = evil_db
    listed = {t["thread_id"]: t for t in json.loads(cli(db, "threads", "list", "--json").stdout)}
    assert set(listed) == set(EVIL_IDS) and all(t["checkpoints"] == 3 for t in listed.values())
    for n, thread in enumerate(EVIL_IDS):
        r = cli(db, "log", "--json", "--", thread)
        assert r.exit_code == 0, (thread, r.stderr)
        assert [m["checkpoint_id"] for m in json.loads(r.stdout)] == [f"{thread}#{s}" for s in (3, 2, 1)]
        refs = ((f"{thread}#2", 2), (f"{thread}@1", 1), (f"{thread}~1", 2), (thread, 3))
        for ref, step in refs if n < 3 else refs[:1]:
            r = cli(db, "show", "--json", "--", ref)
            assert r.exit_code == 0 and json.loads(r.stdout)["metadata"]["step"] == step, (ref, r.stderr)
        if n < 3:
            r = cli(db, "diff", "--json", "--", f"{thread}#1", f"{thread}#3")
            assert r.exit_code == 0 and json.loads(r.stdout)
            assert cli(db, "tree", "--json", "--", thread).exit_code == 0
    for text in ("' OR 1=1 --", "%_"):
        r = cli(db, "search", "--json", "--", text)
        assert r.exit_code == 0, (text, r.stderr)
    # lookups of such strings that match nothing: not found, nothing happens
    for ref in ("x'; DELETE FROM checkpoints; --", "%", "_#1"):
        r = cli(db, "show", "--", ref)
        assert r.exit_code in (ExitCode.NOT_FOUND, ExitCode.USAGE), (ref, r.stderr)
    # writes on them
    thread = EVIL_IDS[0]
    branch = json.loads(cli(db, "branch", "--json", "--", f"{thread}#2", "b").stdout)["thread_id"]
    assert branch.startswith(thread + "-branch-b-")
    r = cli(db, "rewind", "--yes", "--json", "--", f"{thread}~2")
    assert r.exit_code == 0 and json.loads(r.stdout)["moved"] == [f"{thread}#2", f"{thread}#3"]
    r = cli(db, "prune", "--keep-last", "1", "--yes", "--json", "--", EVIL_IDS[1])
    assert r.exit_code == 0 and json.loads(r.stdout)["results"][0]["deleted"] == [
        f"{EVIL_IDS[1]}#1",
        f"{EVIL_IDS[1]}#2",
    ]
    assert cli(db, "undo").exit_code == 0 and cli(db, "undo").exit_code == 0
    # the branch as it is changes nothing: nothing to merge, nothing written
    r = cli(db, "merge", "--into", thread, "--strategy", "theirs", "--json", "--", branch)
    assert r.exit_code == 0 and json.loads(r.stdout)["up_to_date"], r.stderr

    async def change_the_branch() -> None:
        async with open_backend(db, readonly=False) as b:
            head = await b.get_latest(branch)
            await b.put(
                make_cp(
                    branch,
                    1,
                    cid=f"{branch}#x'; --",
                    parent=head.metadata.checkpoint_id,
                    state={"'; DROP TABLE checkpoints; --": 1},
                )
            )

    run_sync(change_the_branch)
    r = cli(db, "merge", "--into", thread, "--strategy", "theirs", "--json", "--", branch)
    assert r.exit_code == 0, r.stderr
    after = {
        t["thread_id"]: t["checkpoints"] for t in json.loads(cli(db, "threads", "list", "--json").stdout)
    }
    assert after == {**{t: 3 for t in EVIL_IDS}, thread: 4, branch: 2}


# --------------------------------------------------------------------------- read-only files


def without_write_permission(tmp_path: Path) -> list[str] | None:
    """A command prefix under which agentctl cannot write a file whose mode forbids it:
    as root (whom file modes do not stop) drop the capabilities that bypass them; as
    anyone else, nothing is needed. None when that is not possible here."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]
    probe = tmp_path / "probe"
    probe.write_text("x")
    probe.chmod(0o444)
    r = subprocess.run([*prefix, sys.executable, "-c", f"open({str(probe)!r}, 'a')"], capture_output=True)
    probe.unlink()
    return prefix if r.returncode != 0 and b"PermissionError" in r.stderr else None


def test_read_only_file_reads_and_refuses_writes(tmp_path):
    prefix = without_write_permission(tmp_path)
    if prefix is None:
        pytest.skip(
            "running as root without setpriv (or it cannot drop CAP_DAC_OVERRIDE): "
            "file modes cannot be enforced on this machine"
        )
    d = tmp_path / "ro"
    d.mkdir()
    db = d / "checkpoints.db"
    shutil.copyfile(SAMPLE_DB, db)
    db.chmod(0o444)
    before = files(d)
    new_rows = tmp_path / "new.jsonl"
    new_rows.write_text(json.dumps(make_cp("new", 1).to_dict()) + "\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "agentctl", "--db", str(db), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    for args in (["log", MAIN], ["show", MAIN + "@6", "--json"]):
        r = run(*args)
        assert r.returncode == 0 and r.stdout, (args, r.stderr)
    for args in (["rewind", MAIN + "@6", "--yes"], ["import", str(new_rows)], ["branch", MAIN, "x"]):
        r = run(*args)
        assert r.returncode == ExitCode.DATABASE, (args, r.returncode, r.stderr)
        assert "read-only" in error_line(r.stderr), r.stderr
    db.chmod(0o644)
    assert files(d) == before


# whoever runs agentctl (root too, whom the kernel lets write any file): the file's mode
# decides; every SQLite format's writes open their connection through the same backend
READ_ONLY_WRITES = {
    "checkpoints.db": [
        ["rewind", MAIN + "@6", "--yes"],
        ["branch", MAIN, "x"],
        ["edit", "support-1042@3", "--set", 'stage="x"', "--yes"],
        ["prune", MAIN, "--keep-last", "2", "--yes", "--no-backup"],
        ["import", "{new}"],
    ],
    "sessions.db": [["rewind", "s-weather-paris@3", "--yes"], ["branch", "s-wang-report@5", "w1"]],
    "langgraph.db": [["rewind", "deploy-approved~1", "--yes"], ["branch", "research~1", "r1"]],
    "openai_agents.db": [["rewind", "weather-1~3", "--yes"]],
    "adk.db": [["rewind", "trip-planner/alice/s-1@4", "--yes"]],
}


EMPTY = hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("sample", list(READ_ONLY_WRITES))
def test_a_file_nobody_may_write_is_not_written_whoever_runs_agentctl(sample, tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    db = d / sample
    shutil.copyfile(REPO / "sample_db" / sample, db)
    db.chmod(0o444)
    before = files(d)
    new_rows = tmp_path / "new.jsonl"
    new_rows.write_text(json.dumps(make_cp("new", 1).to_dict()) + "\n")
    for args in READ_ONLY_WRITES[sample]:
        args = [str(new_rows) if a == "{new}" else a for a in args]
        r = subprocess.run(
            [sys.executable, "-m", "agentctl", "--db", str(db), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert r.returncode == ExitCode.DATABASE, (args, r.returncode, r.stderr)
        assert error_line(r.stderr).startswith(
            f"agentctl: {db}: the database is read-only, cannot write (the file's mode is -r--r--r--)"
        ), args
        # a read of a WAL database may make its -shm and an empty -wal, nothing else
        assert {k: v for k, v in files(d).items() if not k.endswith("-shm")} == before | (
            {sample + "-wal": EMPTY} if os.path.exists(str(db) + "-wal") else {}
        ), args
    db.chmod(0o644)  # and the same writes go through once it may be written
    r = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), *READ_ONLY_WRITES[sample][0]],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- a locked database


def test_locked_beyond_the_busy_timeout(tmp_path):
    """Another process holds BEGIN EXCLUSIVE: writes fail after the timeout with a clear
    message (exit 6); on a WAL file reads go on meanwhile."""
    wal, delete = tmp_path / "wal.db", tmp_path / "delete.db"
    for path, mode in ((wal, "WAL"), (delete, "DELETE")):
        shutil.copyfile(SAMPLE_DB, path)
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA journal_mode = {mode}")
        conn.close()
    holders = []
    for path in (wal, delete):
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("UPDATE checkpoints SET summary = summary WHERE id = 1")
        holders.append(conn)
    try:
        slow = [
            subprocess.Popen(
                [sys.executable, "-m", "agentctl", "--db", str(db), *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            for db, args in (
                (wal, ["rewind", MAIN + "@6", "--yes"]),
                (wal, ["branch", MAIN, "x"]),
                (delete, ["threads", "list"]),
            )
        ]
        r = run_cli("--db", str(wal), "log", MAIN, "--json")  # reads of a WAL file go on
        assert r.returncode == 0 and len(json.loads(r.stdout)) == 13
        results = [(p.wait(timeout=120), *p.communicate()) for p in slow]
    finally:
        for conn in holders:
            conn.rollback()
            conn.close()
    for code, out, err in results:
        assert code == ExitCode.DATABASE and out == "", err
        assert "locked" in error_line(err)
    # nothing was written, and once the lock is gone the same write works
    assert len(json.loads(cli(str(wal), "log", MAIN, "--json").stdout)) == 13
    assert cli(str(wal), "branch", MAIN, "x").exit_code == 0


# --------------------------------------------------------------------------- Postgres refusing


def test_postgres_down_or_wrong_password_for_every_kind_of_command(pg_base_dsn, tmp_path):
    import socket
    from urllib.parse import urlsplit

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = "S3cret-pw-never-shown"
    down = f"postgresql://agent:{secret}@127.0.0.1:{port}/agents"
    dsns = [(down, "connection refused")]
    parts = urlsplit(pg_base_dsn)
    if parts.password:
        dsns.append((pg_base_dsn.replace(f":{parts.password}@", f":{secret}@"), "refused the login"))
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps(make_cp("t", 1).to_dict()) + "\n")
    for dsn, text in dsns:
        for args in (
            ["threads", "list"],
            ["show", "t"],
            ["doctor"],
            ["rewind", "t@1", "--yes"],
            ["prune", "t", "--keep-last", "1", "--yes"],
            ["import", str(rows)],
            ["import", "--create", str(rows)],
        ):
            r = cli(dsn, *args)
            assert r.exit_code == ExitCode.DATABASE, (args, r.exit_code, r.stderr)
            assert text in one_clean_line(r.stderr) and secret not in r.stderr + r.stdout, r.stderr
        r = run_cli("log", "t", env={"AGENTCTL_DB": dsn})  # the DSN from the environment
        assert r.returncode == ExitCode.DATABASE and secret not in r.stderr + r.stdout
