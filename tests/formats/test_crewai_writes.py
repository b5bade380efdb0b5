"""agentctl's writes on CrewAI's files, each proven by CrewAI continuing from what agentctl
wrote (tests/crewai/crewai_check.py in the CrewAI rig, one serving process per worker:
Flow.from_checkpoint + kickoff, crewai_cli's listing, SQLiteFlowPersistence.load_state,
kickoff(inputs={"id": uuid})), each undone (every row back, JSONB compared decoded, in rowid order) and redone."""

from __future__ import annotations

import sqlite3

from agentctl.storage.sql import jsonb
from tests.support import crewairig
from tests.support.sampledb import cli, cli_json

crewai_python, crewai_files, crewai_copy, crewai_check = (
    crewairig.crewai_python,
    crewairig.crewai_files,
    crewairig.crewai_copy,
    crewairig.crewai_check,
)


def dump(db: str, table: str) -> list:
    """Every row of CrewAI's table (not agentctl's) with its rowid (CrewAI's order), JSONB
    decoded."""
    con = sqlite3.connect(db)
    try:
        return [
            [jsonb.decode(v) if isinstance(v, bytes) else v for v in r]
            for r in con.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid")
        ]
    finally:
        con.close()


def head(db: str, thread: str) -> dict:
    return cli_json(db, "show", thread)


def ok(db: str, *args: str):
    r = cli(db, *args)
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r


def undo_redo(db: str, table: str, before: list) -> None:
    after = dump(db, table)
    ok(db, "undo")
    assert dump(db, table) == before
    ok(db, "redo")
    assert dump(db, table) == after


def test_checkpoint_rewind_crewai_resumes_from_it(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    target = w["paris"][1]
    want = cli_json(db, "show", target)["state"]["entities"][0]
    plan = cli_json(db, "rewind", target, "--dry-run")["plan"]
    assert [m["checkpoint_id"] for m in plan["moved"]] == w["paris"][2:] + w["rome"] + w["resumed"]
    assert dump(db, "checkpoints") == before  # a dry run writes nothing
    ok(db, "rewind", target, "--yes")
    new = head(db, "main")["metadata"]
    assert new["parent_checkpoint_id"] == target and new["checkpoint_id"] not in before
    listing = crewai_check(db, "list", cwd=tmp_path)
    assert listing["latest"] == {"name": new["checkpoint_id"], "branch": "main", "parent_id": target}
    undo_redo(db, "checkpoints", before)
    went = crewai_check(db, "resume", new["checkpoint_id"], cwd=tmp_path)
    assert went["restored"]["state"] == want["checkpoint_state"]
    assert went["restored"]["completed"] == sorted(want["checkpoint_completed_methods"])
    assert went["result"] == "report Paris zephyrine"
    assert [r[1:] for r in went["written"]] == [["main", new["checkpoint_id"]]]


def test_checkpoint_rewind_hard_refused(crewai_copy, crewai_files):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    r = cli(db, "rewind", w["rome"][2], "--hard", "--yes", "--no-backup")
    assert r.exit_code == 2 and "--hard is not offered on CrewAI checkpoints" in r.stderr
    assert dump(db, "checkpoints") == before


def test_checkpoint_branch_and_edit_crewai_continue(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    ok(db, "branch", w["rome"][0], "try-2", "--yes")
    first = head(db, "try-2")["metadata"]
    assert first["parent_checkpoint_id"] == w["rome"][0]
    undo_redo(db, "checkpoints", before)
    went = crewai_check(db, "resume", first["checkpoint_id"], cwd=tmp_path)
    assert went["restored"]["completed"] == ["plan"] and went["final"]["city"] == "Rome"
    assert {r[1] for r in went["written"]} == {"try-2"}  # CrewAI goes on on the branch
    # edit: a new row of the branch, a copy with the value
    mid = dump(db, "checkpoints")
    ok(db, "edit", w["rome"][0], "--set", 'entities.0.checkpoint_state.city="Oslo"', "--yes")
    edited = head(db, "main")["metadata"]
    assert edited["parent_checkpoint_id"] == w["rome"][0]
    undo_redo(db, "checkpoints", mid)
    went = crewai_check(db, "resume", edited["checkpoint_id"], cwd=tmp_path)
    assert went["restored"]["state"]["city"] == "Oslo" and went["result"] == "report Oslo zephyrine"
    assert went["written"][0][1:] == ["main", edited["checkpoint_id"]]


def test_checkpoint_threads_delete(crewai_copy, crewai_files):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    plan = cli_json(db, "threads", "delete", w["fork_branch"], "--dry-run")["plan"]
    assert plan["checkpoints"] == 1
    ok(db, "threads", "delete", w["fork_branch"], "--yes", "--no-backup")
    assert [t["thread_id"] for t in cli_json(db, "threads", "list")] == ["main"]
    undo_redo(db, "checkpoints", before)


def test_checkpoint_prune_keeps_fork_points_and_the_newest(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    before = dump(db, "checkpoints")
    plan = cli_json(db, "prune", "--keep-last", "2", "--dry-run")["plans"]
    main = [p for p in plan if p["thread_id"] == "main"][0]
    assert main["fork_points"] == [w["rome"][1]]  # the fork's parent stays
    gone = [m["checkpoint_id"] for m in main["delete"]]
    assert gone == w["paris"] + [w["rome"][0], w["rome"][2]]
    ok(db, "prune", "--keep-last", "2", "--yes", "--no-backup")
    listing = crewai_check(db, "list", cwd=tmp_path)
    assert {c["name"] for c in listing["list"]} == {w["rome"][1], *w["resumed"], *w["fork"]}
    undo_redo(db, "checkpoints", before)  # rows back at their rowids: CrewAI's order
    went = crewai_check(db, "resume", w["rome"][1], cwd=tmp_path)  # a kept fork point
    assert went["restored"]["completed"] == ["book", "plan"] and went["result"] == "report Rome zephyrine"


def test_flow_rewind_load_state_and_kickoff_continue(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("flow_states.db")
    oslo = w["flows"][0]
    before = dump(db, "flow_states")
    row2 = cli_json(db, "show", f"{oslo}@2")["state"]
    plan = cli_json(db, "rewind", f"{oslo}@2", "--dry-run")["plan"]
    ok(db, "rewind", f"{oslo}@2", "--yes")
    archive = plan["archive_thread"]
    assert cli_json(db, "threads", "list", "--prefix", archive)[0]["checkpoints"] == 2  # the named archive
    assert crewai_check(db, "load", oslo, cwd=tmp_path) == row2
    undo_redo(db, "flow_states", before)
    went = crewai_check(db, "continue", oslo, cwd=tmp_path)
    assert went["steps"] == row2["steps"] + ["plan", "book"]
    # --hard: the later rows to the trash
    db2 = crewai_copy("flow_states.db")
    ok(db2, "rewind", f"{oslo}@1", "--hard", "--yes", "--no-backup")
    assert crewai_check(db2, "load", oslo, cwd=tmp_path)["steps"] == ["plan"]
    undo_redo(db2, "flow_states", before)


def test_flow_branch_edit_delete(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("flow_states.db")
    oslo, lima = w["flows"]
    before = dump(db, "flow_states")
    ok(db, "branch", f"{oslo}@2", "alt", "--yes")
    new = [t["thread_id"] for t in cli_json(db, "threads", "list") if t["thread_id"] not in (oslo, lima)][0]
    loaded = crewai_check(db, "load", new, cwd=tmp_path)
    assert loaded["id"] == new and loaded["steps"] == ["plan", "book"]
    undo_redo(db, "flow_states", before)
    assert crewai_check(db, "continue", new, cwd=tmp_path)["steps"] == ["plan", "book", "plan", "book"]
    mid = dump(db, "flow_states")
    ok(db, "edit", lima, "--set", 'note="hello"', "--yes")
    assert crewai_check(db, "load", lima, cwd=tmp_path)["note"] == "hello"
    undo_redo(db, "flow_states", mid)
    edited = dump(db, "flow_states")
    ok(db, "threads", "delete", lima, "--yes", "--no-backup")
    assert crewai_check(db, "load", lima, cwd=tmp_path) is None
    undo_redo(db, "flow_states", edited)
