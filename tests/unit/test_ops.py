"""agentctl.ops, the one operation layer of both faces (issue 38 item 2), on copies of
the bundled samples (real SQLite files): a plan writes nothing and says what the write
will do; the apply writes one op whose summary is the Done's; a format's special cases
(LangGraph's rewind is a fork copy, the engine's a move) are the plan's, not the faces'."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from agentctl import ops
from agentctl.storage import open_store
from tests.support.rig import REPO, SAMPLE_DB, run_sync

MAIN = "coder-fix-flaky-test"


def _copy(tmp_path, name: str) -> str:
    dest = tmp_path / name
    shutil.copyfile(SAMPLE_DB.parent / name, dest)
    return str(dest)


def _rows(path: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT * FROM checkpoints ORDER BY 1, 2").fetchall()
    finally:
        conn.close()


async def _plan_apply(url: str, op: ops.Operation) -> tuple[ops.Plan, ops.Done | None, list]:
    async with open_store(url, readonly=False) as store:
        history = store.history()
        plan = await op.plan(store, history)
        if plan.nothing:
            return plan, None, await history.oplog(5)
        done = await op.apply(store, history, plan)
        return plan, done, await history.oplog(5)


@pytest.mark.parametrize(
    "db, ref, effect, confirm, said",
    [
        (
            "checkpoints.db",
            f"{MAIN}@6",
            "move",
            f"move 7 checkpoint(s) of {MAIN} to {MAIN}-branch-rewind-",
            f"{MAIN} is now at ckpt-coder-fix-flaky-test-6-4b9fe6 (step 6); 7 checkpoint(s) moved to ",
        ),
        ("langgraph.db", "support-refund@1", "fork", "write a fork of ", "a fork of "),
    ],
)
def test_a_rewind_plans_its_effect_then_writes_one_op(tmp_path, db, ref, effect, confirm, said):
    url = _copy(tmp_path, db)

    async def plan_only():
        async with open_store(url, readonly=True) as store:
            return await ops.Rewind(ref).plan(store, store.history())

    before = _rows(url)
    plan = run_sync(plan_only)
    assert _rows(url) == before  # the plan wrote nothing
    assert plan.facts["effect"] == effect and plan.confirm.startswith(confirm) and not plan.nothing
    assert plan.to_dict()["plan"] == plan.data.to_dict()  # --dry-run --json: the History's plan
    planned = plan.to_dict()
    plan, done, log = run_sync(lambda: _plan_apply(url, ops.Rewind(ref)))
    assert done is not None and said in done.summary and done.op_id == log[0].op_id
    assert log[0].kind == "rewind" and done.json["op_id"] == done.op_id
    assert set(planned) == set(done.json) and planned["dry_run"] and done.json["plan"] is None


def test_nothing_to_do_is_the_plans_word_and_nothing_is_written(tmp_path):
    url = _copy(tmp_path, "checkpoints.db")
    before = _rows(url)
    for op, words in [
        (ops.Rewind(MAIN), "is already the head of"),
        (ops.Prune(MAIN, {"keep_last": 100}), "nothing to prune: the policy keeps all 13"),
        (ops.Undo(), "nothing to undo"),
        (ops.Purge(), "nothing to purge"),
    ]:
        plan, done, log = run_sync(lambda op=op: _plan_apply(url, op))
        assert words in plan.nothing and done is None and log == [], (op, plan.nothing)
    assert _rows(url) == before


def test_a_prune_is_one_object_of_json_and_one_op_undone_by_the_undo_op(tmp_path):
    url = _copy(tmp_path, "checkpoints.db")
    before = _rows(url)
    op = ops.Prune(None, {"keep_last": 2})
    plan, done, log = run_sync(lambda: _plan_apply(url, op))
    assert plan.destructive and plan.confirm == (
        f"delete {plan.facts['total']} checkpoint(s) in {len(plan.facts['todo'])} thread(s)"
    )
    assert set(plan.to_dict()) == set(done.json) == {"dry_run", "plans", "results", "vacuum"}
    assert [o.kind for o in log] == ["prune"] and {r["op_id"] for r in done.json["results"]} == {done.op_id}
    plan, undone, _ = run_sync(lambda: _plan_apply(url, ops.Undo()))
    assert plan.data.op_id == done.op_id and plan.confirm.startswith(f"undo op {done.op_id} (prune")
    assert not undone.undoable and _rows(url) == before


def test_edit_json_has_one_shape_planned_or_written(tmp_path):
    from agentctl.edits import parse_edits

    url = _copy(tmp_path, "checkpoints.db")
    op = ops.EditState(f"{MAIN}@6", parse_edits(["plan=[]"], None), url)
    plan, done, log = run_sync(lambda: _plan_apply(url, op))
    planned = plan.to_dict()
    assert set(planned) == set(done.json) and planned["dry_run"] and not done.json["dry_run"]
    assert done.json["checkpoint_id"] == done.json["created"][-1] == done.select
    assert log[0].kind == "edit" and done.json["op_id"] == log[0].op_id


def test_the_tuis_keys_start_the_operations_through_one_table():
    """flows.FLOWS names every write the main screen binds (its `_write` actions)."""
    pytest.importorskip("textual")
    import re

    from agentctl.tui import flows

    main = (REPO / "agentctl" / "tui" / "screens" / "main.py").read_text()
    assert set(re.findall(r'self\._write\("(\w+)"\)', main)) == set(flows.FLOWS)
    assert set(flows.FLOWS) <= set(ops.OPERATIONS) | {"delete"}
