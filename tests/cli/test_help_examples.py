"""Issue 33.9: every example in every `-h` works as written on a fresh clone (run here,
in order, on a copy of sample_db/), none writes into sample_db/ (the bundled samples
stay byte for byte), and none is wrapped across lines by the help's formatter."""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
from pathlib import Path

import pytest
import typer

from tests.support.rig import REPO
from tests.support.sampledb import cli

#: examples that start something interactive or a server (not run here)
INTERACTIVE = {("demo",), ("tui",), ("serve",)}


def _paths() -> list[tuple[str, ...]]:
    from agentctl.cli.root import eager_app

    out: list[tuple[str, ...]] = [()]

    def walk(cmd, path):
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            out.append((*path, name))
            walk(sub, (*path, name))

    walk(typer.main.get_command(eager_app()), ())
    return out


def _examples(path: tuple[str, ...]) -> list[str]:
    r = cli(None, *path, "-h")
    assert r.exit_code == 0, r.stderr
    found = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s*Example: (.*)$", line)
        if m:
            found.append(re.split(r"\s{2,}\(", m.group(1))[0].strip())
    return found


PATHS = _paths()


def _tree_digest(root: Path) -> dict[str, str]:
    """Each file's digest; SQLite's -shm and an empty -wal beside a WAL database are left
    out: a reader makes them (a read-only connection cannot remove them), they hold no data."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }


def _run(example: str) -> None:
    for part in example.split(" && "):
        argv = shlex.split(part)
        if argv[0] == "cp":
            shutil.copyfile(argv[1], argv[2])
            continue
        assert argv[0] == "agentctl", example
        r = cli(None, *argv[1:])
        assert r.exit_code == 0, (part, r.exit_code, r.stdout[-2000:], r.stderr[-2000:])
        assert "Traceback" not in r.stdout + r.stderr


def test_every_help_has_an_example_or_is_a_group():
    assert sum(bool(_examples(p)) for p in PATHS) >= 30


@pytest.mark.parametrize(
    "path", [p for p in PATHS if p not in INTERACTIVE], ids=lambda p: " ".join(p) or "root"
)
def test_help_examples_work_on_a_fresh_clone(path, tmp_path, monkeypatch):
    examples = _examples(path)
    if not examples:
        return
    # (a -wal/-shm beside the sample is a reader's in another test, there now and gone
    # the next moment: a fresh clone has none)
    shutil.copytree(
        REPO / "sample_db",
        tmp_path / "sample_db",
        symlinks=False,
        ignore=shutil.ignore_patterns("__pycache__", "*.db-wal", "*.db-shm"),
    )
    before = _tree_digest(tmp_path / "sample_db")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTCTL_NO_FAST_EXIT", "1")
    monkeypatch.delenv("AGENTCTL_DB", raising=False)
    for example in examples:
        _run(example)
    assert _tree_digest(tmp_path / "sample_db") == before, "an example wrote into sample_db/"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "root")
def test_help_examples_are_not_wrapped(path):
    """At 60 columns an example stays on its line (copied whole, no id cut in two)."""
    r = cli(None, *path, "-h", env={"COLUMNS": "60"})
    lines = r.stdout.splitlines()
    for i, line in enumerate(lines):
        if "Example:" in line and i + 1 < len(lines):
            nxt = lines[i + 1].strip()
            assert not nxt or nxt.startswith(("Example:", "Arguments", "Options")) or nxt.endswith(":"), (
                line,
                lines[i + 1],
            )
