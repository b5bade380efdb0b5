"""The fast exit's switch (agentctl/cli/startup.py): with AGENTCTL_NO_FAST_EXIT=1 the
console script ends through the interpreter's normal shutdown (sys.exit, never
os._exit; the atexit handlers run), and what it writes and its exit code are the same
as with the fast exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.rig import REPO, SAMPLE_DB

# Marks, in a directory given by the test: `fast` when os._exit ends the process,
# `atexit` when the atexit handlers ran. (Objects' finalizers at shutdown are no sign:
# the start-up objects are frozen, gc.freeze, and __main__ is not cleared either way.)
_PRELUDE = """
import atexit, os
_marks = {marks!r}
_real_exit = os._exit
def _spy_exit(code):
    open(os.path.join(_marks, 'fast'), 'w').close()
    _real_exit(code)
os._exit = _spy_exit
atexit.register(lambda: open(os.path.join(_marks, 'atexit'), 'w').close())
"""


def _launcher(tmp_path: Path, marks: Path) -> Path:
    """A console script named `agentctl`, like the one pip writes, with the spies."""
    script = tmp_path / "agentctl"
    script.write_text(
        "import sys\n"
        + _PRELUDE.format(marks=str(marks))
        + "from agentctl.cli import main\nsys.exit(main())\n"
    )
    return script


def _run(tmp_path: Path, args: list[str], no_fast_exit: bool) -> tuple[subprocess.CompletedProcess, set[str]]:
    marks = tmp_path / ("slow" if no_fast_exit else "fast")
    marks.mkdir(exist_ok=True)
    for mark in marks.iterdir():
        mark.unlink()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("COLUMNS", "_AGENTCTL_COMPLETE", "AGENTCTL_NO_FAST_EXIT", "AGENTCTL_DEBUG")
    }
    env["PYTHONPATH"] = str(REPO)
    if no_fast_exit:
        env["AGENTCTL_NO_FAST_EXIT"] = "1"
    r = subprocess.run(
        [sys.executable, str(_launcher(tmp_path, marks)), *args],
        capture_output=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        cwd=REPO,
    )
    return r, {m.name for m in marks.iterdir()}


@pytest.mark.parametrize(
    "args, code",
    [
        (["--db", str(SAMPLE_DB), "log", "loop-research-7", "--all"], 0),
        (["--db", str(SAMPLE_DB), "threads", "list", "--json"], 0),
        (["--db", str(SAMPLE_DB), "show", "no-such-checkpoint"], 3),
        (["log"], 2),
        (["--help"], 0),
        ([], 2),
    ],
    ids=["log", "threads-list", "not-found", "usage", "help", "no-args"],
)
def test_no_fast_exit_ends_through_normal_shutdown_with_the_same_output(tmp_path, args, code):
    fast, fast_marks = _run(tmp_path, args, no_fast_exit=False)
    slow, slow_marks = _run(tmp_path, args, no_fast_exit=True)
    assert fast.returncode == slow.returncode == code
    assert (fast.stdout, fast.stderr) == (slow.stdout, slow.stderr)
    assert fast.stdout or fast.stderr
    assert fast_marks == {"fast", "atexit"}  # the fast exit: os._exit after the atexit handlers
    assert slow_marks == {"atexit"}  # sys.exit: the interpreter's own shutdown


def test_zero_does_not_turn_the_fast_exit_off(tmp_path, monkeypatch):
    from agentctl.cli import startup

    monkeypatch.setenv("AGENTCTL_NO_FAST_EXIT", "0")
    assert startup.fast_exit_enabled()
    monkeypatch.setenv("AGENTCTL_NO_FAST_EXIT", "1")
    assert not startup.fast_exit_enabled()
    monkeypatch.delenv("AGENTCTL_NO_FAST_EXIT")
    assert startup.fast_exit_enabled()


@pytest.mark.parametrize(
    "args", [["--help"], ["--db", str(SAMPLE_DB), "log", "loop-research-7", "--all"]], ids=["help", "log"]
)
def test_no_fast_exit_keeps_the_exit_codes_of_a_full_disk_and_a_closed_pipe(tmp_path, args):
    script = tmp_path / "agentctl"
    script.write_text("import sys\nfrom agentctl.cli import main\nsys.exit(main())\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AGENTCTL_NO_FAST_EXIT": "1"}
    with open("/dev/full", "wb") as full:
        r = subprocess.run(
            [sys.executable, str(script), *args], stdout=full, stderr=subprocess.PIPE, env=env, timeout=120
        )
    assert r.returncode == 1 and b"No space left on device" in r.stderr
    reader, writer = os.pipe()
    os.close(reader)
    r = subprocess.run(
        [sys.executable, str(script), *args], stdout=writer, stderr=subprocess.PIPE, env=env, timeout=120
    )
    os.close(writer)
    assert r.returncode == 1 and r.stderr == b"", args
