"""The headless core imports neither rich nor textual; --help and read commands skip textual."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.rig import REPO


def loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=True,
    ).stdout
    return {m.split(".")[0] for m in out.split()}


@pytest.mark.parametrize(
    "module",
    [
        "agentctl.model",
        "agentctl.errors",
        "agentctl.backends",
        "agentctl.storage.agentos.sqlite",
        "agentctl.storage.agentos.postgres",
        "agentctl.text",
        "agentctl.refs",
        "agentctl.ops",
        "agentctl.edits",
        "agentctl.runs",
    ],
)
def test_core_is_headless(module):
    mods = loaded_after(f"import {module}")
    assert "rich" not in mods and "textual" not in mods


def test_top_level_api_importable():
    mods = loaded_after(
        "from agentctl import Checkpoint, CheckpointMetadata, CheckpointBackend, "
        "SQLiteCheckpointer, PostgresCheckpointer, create_checkpointer"
    )
    assert "textual" not in mods and "rich" not in mods


def run_cli_modules(*args: str) -> set[str]:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['agentctl', *{list(args)!r}]\n"
        "try:\n    runpy.run_module('agentctl', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    ).stdout
    line = [x for x in out.splitlines() if x.startswith("MODULES")][-1]
    return {m.split(".")[0] for m in line.split()[1:]}


def test_help_does_not_import_textual_or_asyncpg():
    mods = run_cli_modules("--help")
    assert "textual" not in mods
    assert "asyncpg" not in mods
    # nor what only running a command needs (bench/README.md: --help in < 0.15 s)
    assert "pydantic" not in mods and "asyncio" not in mods


def test_read_command_does_not_import_textual():
    mods = run_cli_modules("--db", "sample_db/checkpoints.db", "threads", "list", "--json")
    assert "textual" not in mods and "asyncpg" not in mods
    assert "pydantic" not in mods  # agentctl.cli.coercion converts the option values


def test_render_imports_rich_not_textual():
    mods = loaded_after("import agentctl.render")
    assert "rich" in mods and "textual" not in mods and "asyncpg" not in mods


@pytest.mark.parametrize("module", ["agentctl.diff", "agentctl.merge"])
def test_pure_modules_import_only_the_standard_library(module):
    """diff and merge are pure: nothing outside the stdlib but optional orjson."""
    code = (
        "import sys\nimport agentctl\nbefore = set(sys.modules)\n"
        f"import {module}\n"
        "loaded = {name.split('.')[0] for name in set(sys.modules) - before}\n"
        "allowed = set(sys.stdlib_module_names) | {'agentctl', 'orjson'}\n"
        "print(sorted(n for n in loaded - allowed if not n.startswith('_sysconfigdata')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO, timeout=60
    )
    assert out.stdout.strip() == "[]"
