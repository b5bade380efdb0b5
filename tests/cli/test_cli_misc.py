"""tui/demo wiring, shell completion, the pager, colours."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
import typer

from agentctl.cli import app
from agentctl.cli.complete import complete_ref, complete_thread
from agentctl.errors import ExitCode
from tests.support.rig import REPO, SAMPLE_DB
from tests.support.sampledb import cli, cli_json


def fake_tui(monkeypatch) -> list:
    """Stand in for agentctl.tui (built separately; its own tests drive the app)."""
    calls: list = []

    def run(db: str, *, readonly: bool = False, format: str | None = None, **agent: str | None) -> None:
        calls.append(
            {
                "db": db,
                "readonly": readonly,
                "existed": Path(db).exists(),
                "threads": len(cli_json(db, "threads", "list")),
                **{k: v for k, v in agent.items() if v},
            }
        )

    module = types.ModuleType("agentctl.tui")
    module.run = run
    monkeypatch.setitem(sys.modules, "agentctl.tui", module)
    import agentctl.cli.commands.tui

    monkeypatch.setattr(agentctl.cli.commands.tui, "_stdout_is_terminal", lambda: True)  # as on a terminal
    return calls


def test_tui_off_a_terminal_refuses_before_writing_anything(tmp_path):
    """issue 14: `agentctl tui > out.txt` drew escape codes into the file and hung; it
    refuses with one line on stderr, exit 2, the file left empty (so does `demo`)."""
    import os
    import subprocess

    repo = REPO
    for args in (["--db", str(SAMPLE_DB), "tui"], ["demo"]):
        out = tmp_path / "out.txt"
        with open(out, "w") as f:
            r = subprocess.run(
                [sys.executable, "-m", "agentctl", *args],
                stdout=f,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=60,
                cwd=tmp_path,
                env={**os.environ, "PYTHONPATH": str(repo)},
            )
        assert r.returncode == ExitCode.USAGE, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("agentctl: the terminal UI needs a terminal")
        assert out.read_text() == ""


def test_tui_opens_the_database(monkeypatch):
    calls = fake_tui(monkeypatch)
    r = cli(str(SAMPLE_DB), "tui", "--read-only")
    assert r.exit_code == 0, r.stderr
    assert calls == [{"db": str(SAMPLE_DB), "readonly": True, "existed": True, "threads": 7}]


def test_demo_runs_on_a_temporary_copy(monkeypatch):
    calls = fake_tui(monkeypatch)
    r = cli(None, "demo")
    assert r.exit_code == 0, r.stderr
    (call,) = calls
    assert call["existed"] and call["threads"] == 7 and call["readonly"] is False
    assert Path(call["db"]).resolve() != SAMPLE_DB.resolve()
    assert not Path(call["db"]).exists()  # removed afterwards
    # ... so its path is not printed (a path that is gone when one looks)
    assert call["db"] not in r.stderr and "removed when you quit" in r.stderr
    r = cli(None, "demo", "--keep")
    kept = Path(calls[-1]["db"])
    assert kept.exists() and f"demo database: {kept} (kept after you quit)" in r.stderr
    kept.unlink()
    kept.parent.rmdir()


def test_missing_tui_is_a_clear_error(monkeypatch):
    import agentctl.cli.commands.tui

    monkeypatch.setattr(agentctl.cli.commands.tui, "_stdout_is_terminal", lambda: True)
    monkeypatch.setitem(sys.modules, "agentctl.tui", None)  # import fails
    for args in (["tui"], ["demo"]):
        r = cli(str(SAMPLE_DB), *args)
        assert r.exit_code == ExitCode.ERROR
        assert (
            r.stderr.startswith("agentctl: the terminal UI is not available") and "Traceback" not in r.stderr
        )


def context(db: str) -> typer.Context:
    cmd = typer.main.get_command(app)
    return cmd.make_context("agentctl", ["--db", db, "log", "x"], resilient_parsing=True)


def test_completion_reads_ids_from_the_database(tmp_path):
    ctx = context(str(SAMPLE_DB))
    assert complete_thread(ctx, "support-104") == ["support-1042", "support-1043", "support-1044"]
    refs = complete_ref(ctx, "coder-fix-flaky-test-b")
    assert refs == ["coder-fix-flaky-test-branch-retry-backoff-70e7"]
    assert "ckpt-coder-fix-flaky-test-6-4b9fe6" in complete_ref(ctx, "ckpt-coder-fix-flaky-test-6")
    # a database that does not exist: nothing, silently, and no file is created
    missing = tmp_path / "nope.db"
    assert complete_ref(context(str(missing)), "x") == []
    assert not missing.exists()


def test_pager_used_on_a_terminal_for_long_output(tmp_path, monkeypatch):
    out = tmp_path / "paged.txt"
    pager = f"{sys.executable} -c \"import sys; open(r'{out}', 'w').write(sys.stdin.read())\""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("LINES", "10")
    monkeypatch.setenv("PAGER", pager)
    r = cli(str(SAMPLE_DB), "log", "loop-research-7", "-n", "30")
    assert r.exit_code == 0 and r.stdout == ""
    assert out.read_text().count("ckpt-loop-research-7-") == 30
    out.unlink()
    r = cli(str(SAMPLE_DB), "log", "loop-research-7", "-n", "3")  # fits the screen: no pager
    assert r.stdout.count("ckpt-loop-research-7-") == 3 and not out.exists()
    monkeypatch.delenv("FORCE_COLOR")  # piped: never paged
    r = cli(str(SAMPLE_DB), "log", "loop-research-7", "-n", "30")
    assert r.stdout.count("ckpt-loop-research-7-") == 30 and not out.exists()


def test_no_color(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = cli(str(SAMPLE_DB), "log", "support-1042").stdout
    assert "\x1b[33m" in coloured  # ids in yellow
    plain = cli(str(SAMPLE_DB), "--no-color", "log", "support-1042").stdout
    assert "\x1b[33m" not in plain and "ckpt-support-1042-5" in plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[33m" not in cli(str(SAMPLE_DB), "log", "support-1042").stdout


@pytest.mark.parametrize(
    "args",
    [
        ["formats"],
        ["threads", "list"],
        ["log", "support-1042", "--graph"],
        ["show", "support-1042"],
        ["tree", "coder-fix-flaky-test"],
        ["diff", "coder-fix-flaky-test@3", "coder-fix-flaky-test@4"],
        ["search", "flaky"],
        ["stats"],
        ["threads", "show", "support-1042"],
        ["doctor"],
    ],
)
@pytest.mark.parametrize("how", ["env", "option"])
def test_no_color_means_no_escapes_at_all(monkeypatch, args, how):
    """NO_COLOR (or --no-color) on a terminal: no colour and no bold, reverse or
    underline either (https://no-color.org asks for no ANSI styling)."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    if how == "env":
        monkeypatch.setenv("NO_COLOR", "1")
        r = cli(str(SAMPLE_DB), *args)
    else:
        r = cli(str(SAMPLE_DB), "--no-color", *args)
    assert r.exit_code in (0, 5), r.stderr
    assert r.stdout.strip() and "\x1b[" not in r.stdout + r.stderr, r.stdout[:300]


def _on_a_terminal(*args: str) -> list[str]:
    """`agentctl ARGS` with stdout and stderr on one pseudo-terminal: its lines."""
    import os
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: agentctl on the terminal
        os.environ.update(PYTHONPATH=str(REPO), NO_COLOR="1", COLUMNS="200")
        os.execv(sys.executable, [sys.executable, "-m", "agentctl", *args])
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.waitpid(pid, 0)
    os.close(fd)
    return seen.decode().replace("\r\n", "\n").split("\n")


@pytest.mark.parametrize("db", ["langgraph.db", "langgraphjs.db", "checkpoints.db"])
def test_formats_and_doctor_end_with_lines_of_their_own(db):
    """On a terminal (stdout and stderr on one screen) and piped: `formats --db F` ends with
    the database's format line (and its writers'), `doctor` with "no problems found", each
    a line of its own."""
    path = str(REPO / "sample_db" / db)
    lines = _on_a_terminal("formats", "--db", path)
    last = [line for line in lines if line.strip()][-2:]
    assert any(line.startswith("the database is in the ") for line in last), lines
    assert all(not line.rstrip().endswith("no problems found") for line in lines)
    r = cli(path, "formats")
    assert r.exit_code == 0 and r.stderr.endswith("\n") and r.stdout.endswith("\n")
    assert all(line.startswith(("the database is in the ", "written by: ")) for line in r.stderr.splitlines())
    lines = [line for line in _on_a_terminal("--db", path, "doctor") if line.strip()]
    assert lines[-1].strip() == "no problems found", lines
    r = cli(path, "doctor")
    assert r.exit_code == 0 and r.stderr == "no problems found\n" and r.stdout == "PROBLEM\tWHERE\tDETAIL\n"
