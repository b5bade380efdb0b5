"""`doctor --fix-indexes`: the only doctor run that writes, and only indexes."""

from __future__ import annotations

import sqlite3

from tests.support.sampledb import cli_json


def index_names(path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'checkpoints' "
                "AND name NOT LIKE 'sqlite_autoindex%'"
            )
        }
    finally:
        con.close()


def test_fix_indexes_creates_the_missing_ones_and_nothing_else(sample_copy):
    con = sqlite3.connect(sample_copy)
    con.execute("DROP INDEX idx_parent")
    con.commit()
    con.close()
    rows_before = sqlite3.connect(sample_copy).execute("SELECT COUNT(*) FROM checkpoints").fetchone()
    d = cli_json(str(sample_copy), "doctor")  # without the flag: a warning, nothing written
    assert d["warnings"] == ["index idx_parent is missing (reads are slower)"]
    assert index_names(sample_copy) == {"idx_thread_step", "idx_checkpoint_id"}
    d = cli_json(str(sample_copy), "doctor", "--fix-indexes")
    assert d["ok"] is True and d["warnings"] == []
    assert index_names(sample_copy) == {
        "idx_thread_step",
        "idx_checkpoint_id",
        "idx_parent",
        "idx_created_at",
    }
    assert sqlite3.connect(sample_copy).execute("SELECT COUNT(*) FROM checkpoints").fetchone() == rows_before
    # threads list reads through the new index and lists the same threads in the same order
    d2 = cli_json(str(sample_copy), "threads", "list")
    con = sqlite3.connect(sample_copy)
    con.execute("DROP INDEX idx_created_at")
    con.commit()
    con.close()
    assert cli_json(str(sample_copy), "threads", "list") == d2
