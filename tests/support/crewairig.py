"""The CrewAI rig: `crewai` in a venv of its own, for the CrewAI format's tests.

CrewAI needs SQLite >= 3.45 (its checkpoints are written with `jsonb()`) and its install
is about 1 GB: it is kept out of the test environment (whose Python may link an older
SQLite: agentctl itself reads and writes JSONB in Python, `storage/sql/jsonb.py`).
`tests/crewai/requirements.txt` names crewai and pysqlite3-binary (a current SQLite,
which the scripts run here put in place of `sqlite3` before crewai is imported). The
session fixture `crewai_python` makes the venv once, keyed by the hash of that file and
of the Python version, `~/.cache/agentctl-tests/crewai-<hash>` (or under
`AGENTCTL_TEST_CREWAI_CACHE`), behind a file lock (xdist workers wait for the first);
later sessions find it done.

`crewai_files` writes the fixture files once per test run with the real crewai
(`tests/crewai/crewai_write.py`; xdist's workers share them, `written`); `crewai_copy(name)`
copies one per test. `crewai_check` asks CrewAI's own view of a file (`tests/crewai/
crewai_check.py`) of one serving process per worker, crewai imported once.

A machine that cannot build the venv (no network, no pip) skips these tests with the
reason, except under `AGENTCTL_REQUIRE_CREWAI=1` (CI), where that is a failure (as
AGENTCTL_REQUIRE_PG and AGENTCTL_REQUIRE_NODE).
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.buildonce import built, shared_folder
from tests.support.rig import REPO, rig_cache

CREWAI_DIR = REPO / "tests" / "crewai"
REQUIREMENTS = CREWAI_DIR / "requirements.txt"
REQUIRE_CREWAI = os.environ.get("AGENTCTL_REQUIRE_CREWAI") == "1"
PIP_TIMEOUT = 1800
_DONE = ".agentctl-crewai-done"


def rig_dir() -> Path:
    h = hashlib.sha256(REQUIREMENTS.read_bytes())
    h.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return rig_cache("AGENTCTL_TEST_CREWAI_CACHE") / f"crewai-{h.hexdigest()[:16]}"


def install() -> Path:
    """The venv's python, made (venv + pip install -r requirements.txt) unless done already."""
    root = rig_dir()
    python = root / "bin" / "python"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / _DONE).exists():
            return python
        shutil.rmtree(root, ignore_errors=True)  # a half-done install of an interrupted run
        steps = (
            [sys.executable, "-m", "venv", str(root)],
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
        )
        for argv in steps:
            try:
                r = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT)
            except (OSError, subprocess.SubprocessError) as exc:
                raise RuntimeError(f"{argv[2]} did not finish: {exc}") from exc
            if r.returncode != 0:
                raise RuntimeError(
                    f"the CrewAI rig's {' '.join(argv[1:3])} failed in {root}: "
                    f"{(r.stderr or r.stdout).strip()[-800:]}"
                )
        (root / _DONE).write_text("ok\n")
        return python


def python() -> str:
    """The rig's interpreter (crewai installed; pysqlite3 for a current SQLite), or the
    test skipped saying why (failed under AGENTCTL_REQUIRE_CREWAI=1)."""
    try:
        return str(install())
    except RuntimeError as exc:
        if REQUIRE_CREWAI:
            pytest.fail(f"AGENTCTL_REQUIRE_CREWAI=1 but {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def crewai_python() -> str:
    """The rig's interpreter (crewai installed; pysqlite3 for a current SQLite)."""
    return python()


#: CrewAI's own race (its checkpoint listener's thread dumping a state being changed): the
#: script is run again (run_crewai, crewai_files)
RACE = "dictionary changed size during iteration"


def _env(cwd: Path) -> dict[str, str]:
    """The environment of a script run in the rig (CrewAI's storage under cwd, no telemetry)."""
    return {
        **os.environ,
        "PYTHONPATH": str(CREWAI_DIR),
        "CREWAI_STORAGE_DIR": str(cwd / "storage"),
        "CREWAI_DISABLE_TELEMETRY": "true",
        "OTEL_SDK_DISABLED": "true",
        "CREWAI_TRACING_ENABLED": "false",
    }


class _Files:
    """The files among a script's arguments (with their -wal and -shm), as they were: put
    back after a run CrewAI's race broke."""

    def __init__(self, args: tuple[str, ...]) -> None:
        self.files = [Path(f"{a}{s}") for a in args for s in ("", "-wal", "-shm") if Path(a).is_file()]
        self.saved = {f: f.read_bytes() for f in self.files if f.exists()}

    def restore(self) -> None:
        for f in self.files:
            if f in self.saved:
                f.write_bytes(self.saved[f])
            else:
                f.unlink(missing_ok=True)


def run_crewai(
    python: str,
    script: str | Path,
    *args: str,
    cwd: Path,
    timeout: float = 300,
    check: bool = True,
    retry: bool = True,
) -> subprocess.CompletedProcess:
    """Run a script of tests/crewai (or a script's text) with the rig's python in `cwd`
    (CrewAI's default storage under cwd, no telemetry).

    CrewAI's checkpoint listener dumps the flow's state on a thread of its own while the flow
    changes it, and now and then fails with RACE: the files among `args` are then put back as
    they were and the script is run again (up to three times; not with retry=False)."""
    if not isinstance(script, Path):
        path = cwd / "crewai_script.py"
        path.write_text(script)
        script = path
    files = _Files(args)
    for _attempt in range(3 if retry else 1):
        r = subprocess.run(
            [python, str(script), *args],
            cwd=cwd,
            env=_env(cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode == 0 or RACE not in r.stderr:
            break
        files.restore()
    if check and r.returncode != 0:
        pytest.fail(f"{script.name} exited {r.returncode}:\n{r.stderr.strip()[-3000:]}")
    return r


class CheckServer:
    """`crewai_check.py --serve`: one process per test process, crewai imported once (3 s
    and more a process), asked `check(db, WHAT, ...)` as `python crewai_check.py DB WHAT
    ...` would be (the same commands; each request's flows its own, CrewAI's listener
    threads done before it answers). CrewAI's race (RACE) is retried as by run_crewai:
    the files among the arguments put back, asked again."""

    def __init__(self, python: str, log: Path) -> None:
        self.python, self.log = python, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        """The process, started unless it runs (its import of crewai goes on meanwhile)."""
        if self.proc is None or self.proc.poll() is not None:
            with open(self.log, "ab") as err:
                self.proc = subprocess.Popen(
                    [self.python, str(CREWAI_DIR / "crewai_check.py"), "--serve"],
                    cwd=self.log.parent,
                    env=_env(self.log.parent),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                )
        return self.proc

    def _ask(self, argv: list[str], cwd: Path, timeout: float) -> dict[str, Any]:
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd)}) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            proc.wait()
            tail = self.log.read_text(errors="replace")[-3000:]
            pytest.fail(f"crewai_check.py --serve gave no answer to {argv} in {timeout} s:\n{tail}")
        return json.loads(line)

    def __call__(self, db: str, *args: str, cwd: Path, timeout: float = 300) -> Any:
        files = _Files((db, *args))
        for _attempt in range(3):
            answer = self._ask([db, *args], cwd, timeout)
            if "ok" in answer or RACE not in answer["error"]:
                break
            files.restore()
        if "ok" not in answer:
            pytest.fail(f"crewai_check.py {db} {' '.join(args)} failed:\n{answer['error'][-3000:]}")
        return answer["ok"]

    def close(self) -> None:
        """Ended (it holds nothing: each request's files closed before its answer; CrewAI's
        own shutdown at exit takes seconds)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()


_SERVERS: list[CheckServer] = []


@pytest.fixture(scope="session")
def crewai_check(crewai_python, tmp_path_factory) -> CheckServer:
    """check(db, WHAT, *args, cwd=tmp_path) -> CrewAI's answer (tests/crewai/crewai_check.py:
    its JSON value), from one serving process per test process (CheckServer; one for all
    the test files importing this fixture, each of which has a session instance of its own:
    ended at the process's exit)."""
    if not _SERVERS:
        _SERVERS.append(CheckServer(crewai_python, tmp_path_factory.mktemp("crewai-check") / "stderr.log"))
        atexit.register(_SERVERS[0].close)
        # (started now: crewai imported while this process gets on with its test, e.g.
        # waiting for `written`: the tests ask for crewai_check before crewai_files)
        _SERVERS[0].start()
    return _SERVERS[0]


def last_json(out: str) -> Any:
    """The JSON value on the last line of a script's stdout (CrewAI prints panels before)."""
    return json.loads(out.strip().splitlines()[-1])


_WRITTEN: list[tuple[Path, dict[str, Any]]] = []
#: the folder shared by this test run's processes (xdist's workers): set by `run_folder`
_RUN: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def run_folder(request, tmp_path_factory) -> Path:
    """The folder this test run's processes share (xdist's workers: the parent of their
    base temp folders; one process: its own), where `written` writes the files once.
    When the run holds tests of CrewAI's files, they are begun now, on a thread (the
    first test process to get there writes them, the others' threads wait): the tests
    that read them find them written rather than each wait for the run of crewai."""
    _RUN[:] = [shared_folder(tmp_path_factory, "crewai")]
    if any(_needs_files(item) for item in request.session.items):
        threading.Thread(target=_write_early, name="crewai-files", daemon=True).start()
    return _RUN[0]


def _needs_files(item: Any) -> bool:
    """Whether a test reads CrewAI's written files (its fixtures, or a case of the one
    list of stores that is CrewAI's)."""
    names = getattr(item, "fixturenames", ())
    return "crewai_files" in names or "crewai_copy" in names or "[crewai" in item.nodeid


def _write_early() -> None:
    """`written`'s build, done ahead of the first test that asks (which then finds it
    done, or waits for it under the same lock). A failure is left to that test to meet
    and report: it builds again."""
    try:
        interpreter = str(install())
        built(_RUN[0], "written", _builder(interpreter))
    except BaseException:  # noqa: BLE001 - (pytest.fail's too) the asking test reports it
        pass


def written() -> tuple[Path, dict[str, Any]]:
    """The fixture files written by the real crewai, once per test run (the
    `crewai_files` fixture and the contract suite's CrewAI cases share them; xdist's
    workers too: the first writes them under `run_folder`, behind a file lock, the others
    wait and read them): (their folder, what was written: the ids of each run's
    checkpoints, the fork's branch, the flows' uuids, the task ids)."""
    if _WRITTEN:
        return _WRITTEN[0]
    build = _builder(python())
    if _RUN:
        out = built(_RUN[0], "written", build)
    else:  # (outside pytest's session: a folder of this process's)
        out = Path(tempfile.mkdtemp(prefix="agentctl-crewai-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        build(out)
    _WRITTEN.append((out / "files", json.loads((out / "written.json").read_text())))
    return _WRITTEN[0]


def _builder(interpreter: str) -> Any:
    """What `built` runs to write the files into its folder: crewai_write.py's run, and
    its summary as written.json."""

    def build(out: Path) -> None:
        (out / "written.json").write_text(json.dumps(_write(interpreter, out)))

    return build


def _write(interpreter: str, out: Path) -> dict[str, Any]:
    """crewai_write.py's run into OUT/files: its summary."""
    for _attempt in range(3):  # CrewAI's checkpoint listener dumps the state on a thread of its
        # own while the flow changes it: now and then "dictionary changed size during
        # iteration" (CrewAI's race)
        shutil.rmtree(out / "files", ignore_errors=True)
        r = run_crewai(
            interpreter, CREWAI_DIR / "crewai_write.py", str(out / "files"), cwd=out, check=False, retry=False
        )
        if r.returncode == 0 or RACE not in r.stderr:
            break
    if r.returncode != 0:
        pytest.fail(f"crewai_write.py exited {r.returncode}:\n{r.stderr.strip()[-3000:]}")
    return last_json(r.stdout)


@pytest.fixture(scope="session")
def crewai_files(crewai_python) -> tuple[Path, dict[str, Any]]:
    """The fixture files written once by the real crewai (`written`)."""
    return written()


def copy_file(folder: Path, name: str, dest: Path) -> str:
    """A copy of one fixture file (its -wal and -shm too) at `dest`."""
    source = folder / name
    shutil.copyfile(source, dest)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{source}{suffix}")
        if side.exists():
            shutil.copyfile(side, f"{dest}{suffix}")
    return str(dest)


@pytest.fixture
def crewai_copy(crewai_files, tmp_path):
    """copy(name) -> the path of a fresh copy of one fixture file ("checkpoints.db",
    "flow_states.db", "latest_kickoff_task_outputs.db") in this test's folder."""
    folder, _ = crewai_files

    def copy(name: str) -> str:
        return copy_file(folder, name, tmp_path / name)

    return copy
