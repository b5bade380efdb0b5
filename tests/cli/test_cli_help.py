"""Every command has help with an example; the root help lists the exit codes."""

from __future__ import annotations

import pytest
import typer

from agentctl.cli import app
from tests.support.sampledb import cli


def walk(cmd, path: tuple[str, ...] = ()):
    yield path, cmd
    if hasattr(cmd, "list_commands"):  # a group (the root one builds its commands when asked)
        ctx = cmd.make_context("agentctl", ["--help"], resilient_parsing=True)
        for name in cmd.list_commands(ctx):
            yield from walk(cmd.get_command(ctx, name), path + (name,))


COMMANDS = [path for path, _ in walk(typer.main.get_command(app))]


def test_the_tree_has_every_command():
    names = {" ".join(p) for p in COMMANDS}
    assert {
        "threads list",
        "threads show",
        "threads delete",
        "log",
        "show",
        "diff",
        "tree",
        "search",
        "rewind",
        "branch",
        "merge",
        "prune",
        "undo",
        "oplog",
        "purge",
        "stats",
        "doctor",
        "export",
        "import",
        "backup",
        "tui",
        "demo",
    } <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "agentctl")
def test_help_has_an_example(path):
    for flag in ("--help", "-h"):
        r = cli(None, *path, flag)
        assert r.exit_code == 0, r.stderr
        assert "Example: agentctl" in r.stdout, path
        assert r.stdout.startswith("Usage: ")


def test_root_help_lists_exit_codes():
    r = cli(None, "--help")
    text = " ".join(r.stdout.split())
    assert (
        "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 merge conflict, 5 doctor found problems" in text
    )


def test_root_help_names_every_format():
    from agentctl.storage import formats

    text = "".join(cli(None, "--help").stdout.split())  # wrapping may break at a hyphen
    for spec in formats():
        assert f"({spec.name})" in text, spec.name


def test_usage_errors_exit_2():
    r = cli(None, "log")
    assert r.exit_code == 2 and "Missing argument" in r.stderr
    r = cli(None, "no-such-command")
    assert r.exit_code == 2


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    from agentctl import __version__

    r = cli(None, flag)
    assert r.exit_code == 0 and r.stdout == f"agentctl {__version__}\n"


@pytest.mark.parametrize(
    "path",
    [(), ("prune",), ("threads",), ("threads", "delete"), ("help",)],
    ids=lambda p: " ".join(p) or "agentctl",
)
def test_help_command_is_dash_dash_help(path):
    """`agentctl help [COMMAND]...` prints what `agentctl [COMMAND]... --help` prints."""
    r = cli(None, "help", *path)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == cli(None, *path, "--help").stdout


def test_help_of_an_unknown_command():
    r = cli(None, "help", "threads", "nope")
    assert r.exit_code == 2 and "no such command: 'threads nope'" in r.stderr
