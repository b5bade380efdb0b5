"""Databases written by the previous release (tests/fixtures/journal/, made at commit
7c893ed): their ops stay listed by `oplog` and undoable, and undoing every op agentctl
wrote gives back the framework's tables as the builder left them, row for row."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests.support.contract_formats import dump
from tests.support.sampledb import cli_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"
NAMES = ["agentos", "article", "langgraph", "openai_agents", "adk"]


@pytest.mark.parametrize("name", NAMES)
def test_previous_release_ops_listed_and_undone(tmp_path: Path, name: str) -> None:
    db = tmp_path / f"{name}.db"
    shutil.copyfile(FIXTURES / f"{name}.db", db)
    built = json.loads((FIXTURES / f"{name}.built.json").read_text())
    ops = cli_json(str(db), "oplog")
    kinds = {op["kind"] for op in ops}
    assert {"rewind", "branch", "undo"} <= kinds
    assert any(op["undone"] for op in ops), ops
    # undo, newest first, every op the CLI wrote that is still done
    todo = sorted(
        (
            op
            for op in ops
            if op["op_id"] > built["ops_before"] and op["kind"] != "undo" and not (op["undone"])
        ),
        key=lambda op: -op["op_id"],
    )
    assert todo
    for op in todo:
        cli_json(str(db), "undo", str(op["op_id"]))
    after = asyncio.run(dump(str(db), side_tables=False))
    assert after == built["tables"]


@pytest.mark.parametrize("name", [*NAMES, "article_more", "openai_agents_all"])
def test_purge_dry_run_says_what_the_purge_does(tmp_path: Path, name: str) -> None:
    """On a database whose old op log is not migrated yet, `purge --dry-run` counts what
    the purge frees (it migrates first: the old trash and the images of the ops still
    done), and writes nothing (the file unchanged, the old log still there)."""
    db = tmp_path / f"{name}.db"
    shutil.copyfile(FIXTURES / f"{name}.db", db)
    before = db.read_bytes()
    said = cli_json(str(db), "purge", "--dry-run")
    assert db.read_bytes() == before
    assert said["ops"] and said["rows"] > 0
    done = cli_json(str(db), "purge", "--yes", "--no-backup")
    assert (done["ops"], done["rows"]) == (said["ops"], said["rows"])
    assert cli_json(str(db), "purge", "--dry-run")["ops"] == []
