"""`agentctl redo` on LangGraph (its writes are on the journal): after `undo`, `redo
--dry-run` says what it would do and writes nothing, `redo` puts the write back (LangGraph
reads the thread as after the write), `redo` again has nothing to redo."""

from __future__ import annotations

import json

import pytest

from tests.support.contract_formats import build_langgraph, dump
from tests.support.rig import run_sync
from tests.support.sampledb import cli

pytest.importorskip("langgraph.checkpoint.sqlite")


def test_redo_after_undo_on_langgraph(tmp_path):
    url = str(tmp_path / "lg.db")
    run_sync(lambda: build_langgraph("sqlite", url))
    r = cli(url, "rewind", "lg-main@1", "--hard", "--yes", "--no-backup", "--json")
    assert r.exit_code == 0, r.stderr
    after = run_sync(lambda: dump(url, side_tables=False))
    head = json.loads(cli(url, "log", "lg-main", "--json").stdout)
    assert cli(url, "undo").exit_code == 0
    undone = run_sync(lambda: dump(url))
    r = cli(url, "redo", "--dry-run")
    assert r.exit_code == 0 and "redo operation 1 (rewind lg-main" in r.stdout, (r.stdout, r.stderr)
    assert run_sync(lambda: dump(url)) == undone  # a dry run writes nothing
    r = cli(url, "redo", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["kind"] == "redo"
    assert run_sync(lambda: dump(url, side_tables=False)) == after
    assert json.loads(cli(url, "log", "lg-main", "--json").stdout) == head
    r = cli(url, "redo")
    assert r.exit_code == 1 and "nothing to redo" in r.stderr
