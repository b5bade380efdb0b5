"""`agentctl redo`: on a format whose writes are not on the journal yet it exits 2 with one
line naming the format, and writes nothing (the database file unchanged to the byte)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.sampledb import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"


@pytest.mark.parametrize(("name", "fmt"), [("agentos", "agentos"), ("article", "article"),
                                           ("openai_agents", "openai-agents"), ("adk", "adk")])
@pytest.mark.parametrize("args", [(), ("3",), ("--dry-run",), ("--json",)])
def test_redo_refused_off_the_journal(tmp_path: Path, name: str, fmt: str, args: tuple[str, ...]) -> None:
    db = tmp_path / f"{name}.db"
    shutil.copyfile(FIXTURES / f"{name}.db", db)
    before = db.read_bytes()
    r = cli(str(db), "redo", *args)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stderr.strip().splitlines() == [f"agentctl: the {fmt} format does not support redo"]
    assert r.stdout == ""
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]
