"""Start-up: the stored root help (agentctl/cli/helptext.py) is what Typer renders, the
lazily built commands are the ones Typer would build, and the fast ways in and out of
the process (fasthelp, os._exit after a command) change no byte and no exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentctl.cli import genhelp, helptext, root
from tests.support.sampledb import SAMPLE_DB

from tests.support.rig import REPO


def test_stored_help_is_what_typer_renders():
    """Fails when a command, its help or the root options changed without regenerating:
    run `python -m agentctl.cli.genhelp`."""
    assert genhelp.TARGET.read_text(encoding="utf-8") == genhelp.render(), \
        "agentctl/cli/helptext.py is stale: run `python -m agentctl.cli.genhelp`"


def _help_tree(app: typer.Typer, width: int) -> dict[tuple[str, ...], str]:
    out = {}

    def walk(cmd, path, parent):
        ctx = cmd.make_context(" ".join(("agentctl",) + path), ["--help"], parent=parent,
                               resilient_parsing=True, terminal_width=width)
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
    return subprocess.run([sys.executable, *argv], capture_output=True, env={**base, **(env or {})},
                          stdin=subprocess.DEVNULL, timeout=120, cwd=REPO)


@pytest.mark.parametrize("args", genhelp.ROOT_HELP_ARGS, ids=lambda a: " ".join(a) or "no-args")
def test_fast_root_help_is_byte_identical_and_skips_typer(tmp_path, args):
    # typer cannot be imported: the output can only come from the stored text
    script = _launcher(tmp_path, "sys.modules['typer'] = None")
    r = _run(str(script), *args)
    code, out, err = helptext.ROOT[" ".join(args)]
    assert (r.returncode, r.stdout.decode(), r.stderr.decode()) == (code, out, err)
    # and a terminal-width setting that changes the wrapping goes to Typer
    r = _run(str(_launcher(tmp_path)), *args, env={"COLUMNS": "60"})
    assert r.returncode == code and (r.stdout or r.stderr).decode() != (out or err)
    assert (r.stdout or r.stderr).startswith(b"Usage: agentctl [OPTIONS] COMMAND [ARGS]...")


def test_help_served_by_typer_when_the_program_is_not_agentctl():
    r = _run("-m", "agentctl", "--help")
    assert r.returncode == 0 and r.stdout.startswith(b"Usage: python -m agentctl [OPTIONS]")


def test_a_command_imports_only_its_own_module():
    code = (
        "import sys\nsys.argv = ['agentctl', '--db', %r, 'show', 'coder-fix-flaky-test', '--json']\n"
        "from agentctl.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(m for m in sys.modules if m.startswith('agentctl.cli.')))\n" % str(SAMPLE_DB)
    )
    r = _run("-c", code)
    loaded = set(r.stdout.decode().splitlines()[-1].split())
    assert "agentctl.cli.inspect" in loaded
    assert not loaded & {"agentctl.cli.history", "agentctl.cli.threads", "agentctl.cli.transfer",
                         "agentctl.cli.health", "agentctl.cli.ops", "agentctl.cli.search", "agentctl.cli.tui"}


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
            r = subprocess.run([sys.executable, str(script), *args], stdout=full, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
        assert r.returncode == 1 and b"No space left on device" in r.stderr
        reader, writer = os.pipe()
        os.close(reader)
        r = subprocess.run([sys.executable, str(script), *args], stdout=writer, stderr=subprocess.PIPE,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
        os.close(writer)
        assert r.returncode == 1 and r.stderr == b"", args


def test_the_collector_is_paused_for_the_start_up_only(monkeypatch, capsys):
    """main() pauses the cyclic GC while the CLI and the command's module are imported
    and resumes it (start-up objects frozen) before the command runs: a long command
    such as the TUI must not run without it."""
    import gc

    import agentctl.cli as cli

    seen: list[bool] = []
    real_end = cli.end_start_up

    def end() -> None:
        seen.append(gc.isenabled())
        real_end()
        seen.append(gc.isenabled())

    monkeypatch.setattr(cli, "end_start_up", end)
    monkeypatch.setattr(sys, "argv", ["agentctl", "--db", str(SAMPLE_DB), "threads", "list"])
    assert gc.isenabled()
    try:
        with pytest.raises(SystemExit) as done:
            cli.main()
        assert done.value.code in (0, None)
        assert seen == [False, True]
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert "support-1042" in capsys.readouterr().out
    finally:
        gc.unfreeze()
        gc.enable()
