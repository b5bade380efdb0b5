"""Ctrl-C says what is true (issue 22, item 2; issue 23, item 12's Ctrl-C part): SIGINT
at many points of a long write (plan, backup, write, commit, after it), the real
command line in a subprocess. Every time: exit 130 with one `agentctl: interrupted`
line (or exit 0 when the command had finished), and the line agrees with the
database: "nothing was changed" when the op log and the rows are as before, "op N was
written" when op N is in the log and the rows are gone."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.rig import REPO


def grown_sample(path: Path, one_thread: bool) -> Path:
    """The AgentOS sample with loop-research-7 copied 60 times (about 14,700
    checkpoints): as 60 threads of their own, or (`one_thread`) inside loop-research-7."""
    shutil.copyfile(REPO / "sample_db" / "checkpoints.db", path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    cols = "created_at, tags, summary, messages_blob, state_blob, tools_blob, next_node"
    conn.execute("BEGIN")
    for k in range(1 if one_thread else 0, 60):
        thread, step = (
            ("thread_id", f"step + {k * 1000}") if one_thread else (f"thread_id || '-c{k}'", "step")
        )
        conn.execute(
            f"INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, {cols}) "
            f"SELECT {thread}, checkpoint_id || '-c{k}', parent_id || '-c{k}', {step}, {cols} "
            "FROM checkpoints WHERE thread_id = 'loop-research-7' AND checkpoint_id NOT LIKE '%-c%'"
        )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture(scope="module")
def big_agentos(tmp_path_factory) -> Path:
    """60 copies of loop-research-7 as threads of their own (a prune of about a second)."""
    return grown_sample(tmp_path_factory.mktemp("big") / "big.db", one_thread=False)


def state(db: Path) -> tuple[int, list[int]]:
    conn = sqlite3.connect(db)
    try:
        n = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        has_log = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'agentctl_journal'").fetchone()
        ops = (
            [r[0] for r in conn.execute("SELECT op_id FROM agentctl_journal ORDER BY op_id")]
            if has_log
            else []
        )
        return n, ops
    finally:
        conn.close()


def interrupt(db: Path, args: list[str], delay: float) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", str(db), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(db.parent),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def check(
    r: subprocess.CompletedProcess, before: tuple[int, list[int]], after: tuple[int, list[int]], what: str
) -> str:
    """The exit code and the message agree with the database; which case it was."""
    lines = [line for line in r.stderr.splitlines() if line.startswith("agentctl: interrupted")]
    if r.returncode == 0:
        assert not lines, r.stderr
        assert after[1] == before[1] + [max(before[1], default=0) + 1], what
        return "finished"
    assert r.returncode == 130, (what, r.returncode, r.stderr)
    assert len(lines) == 1, (what, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    line = lines[0]
    if "nothing was changed" in line:
        assert after == before, (what, line, before, after)
        return "nothing"
    new_op = max(before[1], default=0) + 1
    assert f"op {new_op} was written" in line, (what, line)
    assert after[1] == before[1] + [new_op], (what, line, after)
    assert after[0] != before[0], (what, line)  # rows deleted (prune, delete) or back (undo)
    return "written"


def sweep(total: float) -> list[float]:
    """Delays from just after start-up to the end of a run that takes `total` seconds,
    denser towards the end (the commit, the WAL checkpoint, the result printed)."""
    return [0.3 + (total - 0.3) * f for f in (0.0, 0.3, 0.55, 0.75, 0.85, 0.9, 0.94, 0.97, 0.99)]


def test_ctrl_c_at_every_phase_of_a_prune_says_what_the_database_holds(big_agentos, tmp_path):
    args = ["prune", "--all", "--keep-last", "5", "--yes"]
    db = tmp_path / "timed.db"
    shutil.copyfile(big_agentos, db)
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), *args, "--no-backup"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, r.stderr
    total = time.monotonic() - started
    seen: dict[str, int] = {}
    for i, delay in enumerate(sweep(total)):
        db = tmp_path / f"run{i}.db"
        shutil.copyfile(big_agentos, db)
        backup = ["--no-backup"] if i % 3 else []  # some with the safety backup
        before = state(db)
        r = interrupt(db, [*args, *backup], delay)
        case = check(r, before, state(db), f"SIGINT after {delay:.2f} s of {total:.2f}")
        seen[case] = seen.get(case, 0) + 1
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".agentctl-backup")]
    print(seen)
    assert seen.get("nothing", 0) >= 1, seen


@pytest.fixture(scope="module")
def pruned(big_agentos, tmp_path_factory) -> Path:
    """big_agentos after `prune --all --keep-last 5` (op 1), for undo."""
    path = tmp_path_factory.mktemp("pruned") / "pruned.db"
    shutil.copyfile(big_agentos, path)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentctl",
            "--db",
            str(path),
            "prune",
            "--all",
            "--keep-last",
            "5",
            "--yes",
            "--no-backup",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="module")
def one_big_thread(tmp_path_factory) -> Path:
    """loop-research-7 holding about 14,400 checkpoints (a `threads delete` of about a
    second, like the prune)."""
    return grown_sample(tmp_path_factory.mktemp("onebig") / "onebig.db", one_thread=True)


@pytest.mark.parametrize(
    "command", [["undo"], ["threads", "delete", "loop-research-7", "--yes"]], ids=["undo", "threads-delete"]
)
def test_an_interrupted_undo_or_delete_says_what_is_true(command, one_big_thread, pruned, tmp_path):
    """The delays are a sweep over the time one uninterrupted run takes here (fixed
    delays were all too late on a fast, idle machine)."""
    source = pruned if command == ["undo"] else one_big_thread
    db = tmp_path / "timed.db"
    shutil.copyfile(source, db)
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), *command, "--no-backup"]
        if command[0] == "threads"
        else [sys.executable, "-m", "agentctl", "--db", str(db), *command],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 0, r.stderr
    total = time.monotonic() - started
    seen: dict[str, int] = {}
    for i, delay in enumerate(sweep(total)[:6]):
        db = tmp_path / f"run{i}.db"
        shutil.copyfile(source, db)
        before = state(db)
        r = interrupt(db, command, delay)
        case = check(r, before, state(db), f"{command} after {delay:.2f} s of {total:.2f}")
        seen[case] = seen.get(case, 0) + 1
    print(seen)
    assert "nothing" in seen, seen


def test_ctrl_c_after_the_commit_says_the_op_was_written(big_agentos, tmp_path):
    """SIGINT once the prune has committed (while `--vacuum` compacts the file): the
    line names the op that was written, and the op log and the rows agree."""
    db = tmp_path / "vac.db"
    shutil.copyfile(big_agentos, db)
    before = state(db)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentctl",
            "--db",
            str(db),
            "prune",
            "--all",
            "--keep-last",
            "5",
            "--yes",
            "--no-backup",
            "--vacuum",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )
    assert proc.stderr is not None
    err = []
    for line in proc.stderr:
        err.append(line)
        if line.startswith("running VACUUM"):
            proc.send_signal(signal.SIGINT)
            break
    out, rest = proc.communicate(timeout=60)
    r = subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(err) + rest)
    case = check(r, before, state(db), "SIGINT during VACUUM")
    print(case, r.stderr.splitlines()[-1])
    assert case in ("written", "finished"), r.stderr
    if r.returncode == 130:
        assert "`agentctl undo 1` reverts it" in r.stderr


def test_ctrl_c_at_the_confirmation_prompt_says_nothing_was_changed(big_agentos, tmp_path):
    """On a terminal: the plan, the question, then Ctrl-C (the terminal's ^C, a SIGINT):
    exit 130, "nothing was changed", and nothing was."""
    import pty

    db = tmp_path / "tty.db"
    shutil.copyfile(big_agentos, db)
    before = state(db)
    pid, fd = pty.fork()
    if pid == 0:  # the child: agentctl on the terminal
        os.environ.update(PYTHONPATH=str(REPO), NO_COLOR="1")
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "agentctl",
                "--db",
                str(db),
                "prune",
                "loop-research-7",
                "--keep-last",
                "5",
                "--no-backup",
            ],
        )
    seen = b""
    deadline = time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        try:
            seen += os.read(fd, 4096)
        except OSError:
            break
    assert b"[y/N]" in seen, seen
    os.write(fd, b"\x03")
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 130, seen
    assert b"agentctl: interrupted; nothing was changed" in seen, seen
    assert state(db) == before


@pytest.fixture(scope="module")
def index_db(big_agentos, tmp_path_factory) -> Path:
    """big_agentos four times over (about 58,700 checkpoints): an index build of seconds."""
    db = tmp_path_factory.mktemp("index") / "big.db"
    shutil.copyfile(big_agentos, db)
    conn = sqlite3.connect(db, isolation_level=None)
    cols = "thread_id, parent_id, step, created_at, tags, summary, messages_blob, state_blob, tools_blob, next_node"
    conn.execute("BEGIN")
    for k in range(1, 4):
        conn.execute(
            f"INSERT INTO checkpoints (checkpoint_id, {cols}) SELECT checkpoint_id || '-i{k}', {cols} "
            "FROM checkpoints WHERE checkpoint_id NOT LIKE '%-i_'"
        )
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


def test_ctrl_c_stops_an_index_build_at_once_and_says_what_is_true(index_db, tmp_path):
    """Ctrl-C during `index build`: the build stops within a second (it ran to its end
    before, then said nothing was changed while `index status` showed it complete), no
    index and no temporary file is left, and the line says so."""
    db = tmp_path / "big.db"
    shutil.copyfile(index_db, db)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", str(db), "index", "build"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )
    assert proc.stderr is not None and proc.stderr.readline().startswith("building the search index")
    deadline = time.monotonic() + 30  # the build under way: its temporary file is there
    while not any(p.name.startswith("big.db.agentctl-search.tmp") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None, (
            "the build ended before it was interrupted"
        )
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert err.strip() == "agentctl: interrupted; nothing was changed", err
    assert took < 1.0, f"the build went on {took:.1f} s after Ctrl-C"
    # no index, no temporary file (a read of a WAL database makes its -shm and -wal)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-shm", "-wal"))) == ["big.db"]
    r = subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), "index", "status"],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.stdout.startswith("state: absent"), r.stdout


def test_ctrl_c_during_import_create_says_nothing_was_changed(big_agentos, tmp_path):
    """Ctrl-C during `import --create` into a new file: the file is removed (a failed
    import leaves nothing), and the line says so (it said "see agentctl oplog", which
    then could not open the database)."""
    export = tmp_path / "big.jsonl"
    with export.open("w") as out:
        r = subprocess.run(
            [sys.executable, "-m", "agentctl", "--db", str(big_agentos), "export"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    assert r.returncode == 0, r.stderr
    new = tmp_path / "new" / "new.db"
    new.parent.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentctl", "--db", str(new), "import", "--create", str(export)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"},
    )
    deadline = time.monotonic() + 30
    while not new.exists():  # the import under way: the new file made
        assert time.monotonic() < deadline and proc.poll() is None, (
            "the import ended before it was interrupted"
        )
        time.sleep(0.01)
    time.sleep(0.1)  # (the whole import takes about a second)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert err.strip() == "agentctl: interrupted; nothing was changed", err
    assert list(new.parent.iterdir()) == []
