"""The table of commands in agentctl/cli/registry.py (what `agentctl --help` lists and
where the lazy root group finds each command) is the commands themselves: the same
names in the same order, each in the module the table names, with the summary its own
help gives. It is hand-kept; this is what keeps it from drifting."""

from __future__ import annotations

import importlib
import pkgutil

import typer
from typer.core import TyperGroup

import agentctl.cli.commands as commands_package
from agentctl.cli import registry, root
from tests.support.rig import REPO


def _eager_commands() -> dict[str, object]:
    group = typer.main.get_command(root.eager_app())
    assert isinstance(group, TyperGroup)
    ctx = group.make_context("agentctl", ["--help"], resilient_parsing=True)
    return {name: group.get_command(ctx, name) for name in group.list_commands(ctx)}


def _defined_in(module_name: str) -> list[str]:
    scratch = typer.Typer()
    registry.register_module(scratch, module_name)
    return [
        info.name or typer.main.get_command_name(info.callback.__name__)  # type: ignore[union-attr]
        for info in scratch.registered_commands
    ] + [g.name for g in scratch.registered_groups]


def test_the_table_names_every_command_in_the_listed_order():
    assert list(registry.COMMANDS) == list(_eager_commands())


def test_each_command_is_in_the_module_the_table_names():
    for module_name in registry.modules():
        for name in _defined_in(module_name):
            assert registry.module_of(name) == module_name, name


def test_every_command_module_is_in_the_table():
    found = {f"{commands_package.__name__}.{m.name}" for m in pkgutil.iter_modules(commands_package.__path__)}
    assert found == set(registry.modules())
    for module_name in found:  # and each holds commands
        assert _defined_in(module_name), module_name


def test_each_summary_is_the_first_sentence_of_the_commands_help():
    for name, cmd in _eager_commands().items():
        assert registry.COMMANDS[name][1] == registry.summary(cmd.help), name
        # what the lazy listing does not carry, no command has
        assert cmd.short_help is None and not cmd.hidden and not cmd.deprecated, name


def _root_help(app: typer.Typer, width: int) -> str:
    group = typer.main.get_command(app)
    ctx = group.make_context(
        "agentctl", ["--help"], resilient_parsing=True, terminal_width=width, max_content_width=width
    )
    return group.get_help(ctx)


def test_a_summary_shortens_as_the_whole_help_does():
    """click shortens a command's help for the listing from its first paragraph; the
    listing from the summaries is the same at every width."""
    eager = root.eager_app()
    for width in range(30, 260, 3):
        assert _root_help(root.make_app(root.LazyGroup), width) == _root_help(eager, width), width


def test_the_modules_import_lazily():
    """Importing the registry imports no command module (that is its point)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, agentctl.cli.registry, agentctl.cli.root\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentctl.cli.commands.')))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, timeout=120
    ).stdout
    assert out.strip() == "[]"
    importlib.import_module(registry.module_of("log"))
