"""Start-up: the lazily built commands (and the root help listed from
agentctl/cli/registry.py) are the ones Typer would build, and the fast way out of the
process (os._exit after a command, agentctl/cli/startup.py) changes no byte and no exit
code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentctl.cli import root
from tests.support.rig import REPO
from tests.support.sampledb import SAMPLE_DB

ROOT_HELP_ARGS = ((), ("--help",), ("-h",))


def _help_tree(app: typer.Typer, width: int) -> dict[tuple[str, ...], str]:
    out = {}

    def walk(cmd, path, parent):
        ctx = cmd.make_context(
            " ".join(("agentctl",) + path),
            ["--help"],
            parent=parent,
            resilient_parsing=True,
            terminal_width=width,
        )
        out[path] = cmd.get_help(ctx)
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + (name,), ctx)

    walk(typer.main.get_command(app), (), None)
    return out


@pytest.mark.parametrize("width", [50, 78, 120])
def test_lazy_commands_are_the_ones_typer_builds(width):
    lazy, eager = _help_tree(root.make_app(root.LazyGroup), width), _help_tree(root.eager_app(), width)
    assert list(lazy) == list(eager)
    for path in eager:
        assert lazy[path] == eager[path], path


def _launcher(tmp_path: Path, prelude: str = "") -> Path:
    """A console script named `agentctl`, like the one pip writes."""
    script = tmp_path / "agentctl"
    script.write_text(f"import sys\n{prelude}\nfrom agentctl.cli import main\nsys.exit(main())\n")
    return script


def _run(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "_AGENTCTL_COMPLETE")}
    base["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        env={**base, **(env or {})},
        stdin=subprocess.DEVNULL,
        timeout=120,
        cwd=REPO,
    )


# The app with every command built up front (as before lazy loading), run as the
# console script would be: what the lazy root help must write, byte for byte.
_EAGER = """
import sys
sys.argv = ["agentctl", *sys.argv[1:]]
from agentctl.cli.root import eager_app
eager_app()()
"""


@pytest.mark.parametrize("args", ROOT_HELP_ARGS, ids=lambda a: " ".join(a) or "no-args")
def test_root_help_is_byte_identical_to_the_eager_app(tmp_path, args):
    r = _run(str(_launcher(tmp_path)), *args)
    eager = _run("-c", _EAGER, *args)
    assert (r.returncode, r.stdout.decode(), r.stderr.decode()) == (
        eager.returncode,
        eager.stdout.decode(),
        eager.stderr.decode(),
    )
    assert r.returncode == (2 if not args else 0)
    code, out, err = r.returncode, r.stdout.decode(), r.stderr.decode()
    assert (out or err).startswith("Usage: agentctl [OPTIONS] COMMAND [ARGS]...")
    assert "  threads  List, inspect and delete threads." in (out or err)
    # and a terminal-width setting that changes the wrapping goes to Typer
    r = _run(str(_launcher(tmp_path)), *args, env={"COLUMNS": "60"})
    assert r.returncode == code and (r.stdout or r.stderr).decode() != (out or err)
    assert (r.stdout or r.stderr).startswith(b"Usage: agentctl [OPTIONS] COMMAND [ARGS]...")


def test_help_served_by_typer_when_the_program_is_not_agentctl():
    r = _run("-m", "agentctl", "--help")
    assert r.returncode == 0 and r.stdout.startswith(b"Usage: python -m agentctl [OPTIONS]")


def test_a_command_imports_only_its_own_module():
    code = (
        f"import sys\nsys.argv = ['agentctl', '--db', {str(SAMPLE_DB)!r}, 'show', 'coder-fix-flaky-test', '--json']\n"
        "from agentctl.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(m for m in sys.modules if m.startswith('agentctl.cli.')))\n"
    )
    r = _run("-c", code)
    loaded = set(r.stdout.decode().splitlines()[-1].split())
    assert "agentctl.cli.commands.inspect" in loaded
    assert not loaded & {
        "agentctl.cli.commands.history",
        "agentctl.cli.commands.threads",
        "agentctl.cli.commands.transfer",
        "agentctl.cli.commands.health",
        "agentctl.cli.commands.ops",
        "agentctl.cli.commands.search",
        "agentctl.cli.commands.tui",
    }


def test_exit_after_a_command_keeps_output_atexit_and_exit_code(tmp_path):
    """The console script leaves through os._exit: what was written and the atexit
    handlers still come out, and the exit code is the command's."""
    mark = tmp_path / "atexit-ran"
    script = _launcher(tmp_path, f"import atexit\natexit.register(lambda: open({str(mark)!r}, 'w').close())")
    r = _run(str(script), "--db", str(SAMPLE_DB), "log", "loop-research-7", "--all")
    assert r.returncode == 0 and mark.exists()
    assert r.stdout.decode().count("\n") == 240 and r.stderr == b""
    r = _run(str(script), "--db", str(SAMPLE_DB), "show", "no-such-checkpoint")
    assert r.returncode == 3 and r.stderr.startswith(b"agentctl: ")
    r = _run(str(script), "log")
    assert r.returncode == 2 and b"Missing argument" in r.stderr


def test_broken_pipe_and_full_disk_keep_their_exit_codes(tmp_path):
    script = _launcher(tmp_path)
    for args in (["--help"], ["--db", str(SAMPLE_DB), "log", "loop-research-7", "--all"]):
        with open("/dev/full", "wb") as full:
            r = subprocess.run(
                [sys.executable, str(script), *args],
                stdout=full,
                stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                timeout=120,
            )
        assert r.returncode == 1 and b"No space left on device" in r.stderr
        reader, writer = os.pipe()
        os.close(reader)
        r = subprocess.run(
            [sys.executable, str(script), *args],
            stdout=writer,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=120,
        )
        os.close(writer)
        assert r.returncode == 1 and r.stderr == b"", args


def test_the_collector_is_paused_for_the_start_up_only(monkeypatch, capsys):
    """main() pauses the cyclic GC while the CLI and the command's module are imported
    and resumes it (start-up objects frozen) before the command runs: a long command
    such as the TUI must not run without it."""
    import gc

    import agentctl.cli as cli
    from agentctl.cli import startup

    seen: list[bool] = []
    real_end = startup.end_start_up

    def end() -> None:
        seen.append(gc.isenabled())
        real_end()
        seen.append(gc.isenabled())

    monkeypatch.setattr(startup, "end_start_up", end)
    monkeypatch.setattr(sys, "argv", ["agentctl", "--db", str(SAMPLE_DB), "threads", "list"])
    assert gc.isenabled()
    frozen = gc.get_freeze_count()  # (the rig's: tests/conftest.py freezes for each test)
    try:
        with pytest.raises(SystemExit) as done:
            cli.main()
        assert done.value.code in (0, None)
        assert seen == [False, True]
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        assert "support-1042" in capsys.readouterr().out
    finally:
        gc.unfreeze()
        gc.enable()


def test_ctrl_c_while_the_command_line_is_read_is_one_line_exit_130(tmp_path):
    """SIGINT can land after the imports and before the command's own handler (a loaded
    machine: Typer building the command's options): one line, exit 130, no traceback (seen
    in the interrupt sweep of a prune under load)."""
    db = tmp_path / "c.db"
    shutil.copyfile(SAMPLE_DB, db)
    code = (
        "import sys, typer.main\n"
        "def get_command(app):  # Typer builds the root command's options here\n"
        "    raise KeyboardInterrupt\n"
        "typer.main.get_command = get_command\n"
        "sys.argv = ['agentctl', '--db', sys.argv[1], 'threads', 'list']\n"
        "from agentctl.cli import main\n"
        "main()\n"
    )
    before = db.read_bytes()
    r = subprocess.run(
        [sys.executable, "-c", code, str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 130, r.stderr
    assert r.stderr == "agentctl: interrupted; nothing was changed\n"
    assert db.read_bytes() == before


@pytest.mark.parametrize("how", ["console script", "-m"])
def test_ctrl_c_while_the_agentctl_program_imports_is_one_line_exit_130(tmp_path, how):
    """SIGINT right after the package's first line runs, before main() (Python's own
    start-up and the imports of the launcher): one line, exit 130, no traceback. Imported
    as a library, the package leaves SIGINT to Python; main() gives it back to Python
    (a command's Ctrl-C is a KeyboardInterrupt again)."""
    kill = "import os, signal, time; os.kill(os.getpid(), signal.SIGINT); time.sleep(5)\n"
    if how == "-m":  # runpy imports the package, then its __main__ (which would run main)
        (tmp_path / "sitecustomize.py").write_text(
            "import sys, importlib.abc\n"
            "class After(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'agentctl.lazy':\n"
            "            " + kill.replace("\n", "") + "\n"
            "sys.meta_path.insert(0, After())\n"
        )
        args = ["-m", "agentctl", "--version"]
    else:
        args = [
            "-c",
            "import sys; sys.argv = ['/usr/bin/agentctl', '--version']\nimport agentctl\n"
            + kill
            + "from agentctl.cli import main\nmain()\n",
        ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=60)
    assert (r.returncode, r.stderr, r.stdout) == (130, "agentctl: interrupted; nothing was changed\n", "")
    # a library import, and the program once main() runs: Python's own handler
    code = (
        "import signal, sys\nimport agentctl\nassert signal.getsignal(signal.SIGINT) is signal.default_int_handler\n"
        "del sys.modules['agentctl']\nsys.argv = ['agentctl', '--version']\nimport agentctl\n"
        "assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler\n"
        "import agentctl.cli.root\n"
        "agentctl.cli.root.app = lambda: print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
        "from agentctl.cli import main\nmain()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert (r.returncode, r.stdout) == (0, "True\n"), r.stderr
