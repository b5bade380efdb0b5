"""The engine on SQLite and on a real Postgres: snapshots, step counter, rewind, branch,
prune, delete, import, undo, purge, the tree, and the seeds' usage."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentctl.backends import make_backend
from agentctl.engine import (
    CheckpointEngine,
    CheckpointGC,
    SnapshotConfig,
    SnapshotTrigger,
)
from agentctl.errors import (
    CheckpointNotFound,
    NotFoundError,
    OperationError,
    ReadOnlyDatabase,
    SnapshotTooLarge,
    ThreadNotFound,
    UsageError,
)
from tests.support.engine_helpers import (
    SIDE_TABLES,
    T0,
    Clock,
    bulk,
    dump,
    make_engine,
    open_rw,
    snap,
    thread_ids,
)
from tests.support.helpers import make_cp, ts

# ---- snapshots --------------------------------------------------------------------------


async def test_snapshot_ids_steps_parents_and_triggers(backend, engine):
    ids = await snap(engine, "t", 3)
    metas = await backend.read_thread("t")
    assert [m.step for m in metas] == [1, 2, 3]
    assert [m.checkpoint_id for m in metas] == ids
    for m in metas:
        assert m.checkpoint_id.startswith(f"ckpt-t-{m.step}-") and len(m.checkpoint_id.split("-")[-1]) == 6
        assert m.tags == ["manual"]
    # without an explicit parent, a snapshot continues from the head
    assert [m.parent_checkpoint_id for m in metas] == [None, ids[0], ids[1]]
    got = await backend.get(ids[2])
    assert got.state == {"i": 2, "thread": "t"} and got.tools_result == {"tool": 2}
    assert got.metadata.summary == "[user] t 2"
    # a trigger that is not enabled writes nothing; strings work like the enum
    assert await engine.snapshot("t", [], {}, {}, trigger=SnapshotTrigger.INTERVAL) == ""
    assert await engine.snapshot("t", [], {}, {}, trigger="nonsense") == ""
    cid = await engine.snapshot(
        "t", [], {"a": 1}, {}, trigger="tool_call", parent_checkpoint_id=ids[0], next_node="tools"
    )
    meta = await backend.get_metadata(cid)
    assert (
        meta.tags == ["tool_call"] and meta.parent_checkpoint_id == ids[0] and meta.summary == "State: 1 keys"
    )
    assert (await backend.get(cid)).next_node == "tools"
    assert await backend.count("t") == 4
    # snapshots create no side table
    for table in SIDE_TABLES:
        assert not await backend.table_exists(table)


async def test_step_counter_continues_across_engines(backend):
    a = make_engine(backend, seed=1)
    await snap(a, "t", 3)
    b = make_engine(backend, seed=2)  # a restarted process: empty in-memory counter
    cid = await b.snapshot("t", [], {}, {})
    assert (await backend.get_metadata(cid)).step == 4
    # two engines interleaving on one database never repeat a step
    for _ in range(3):
        await a.snapshot("t", [], {}, {})
        await b.snapshot("t", [], {}, {})
    steps = [m.step for m in await backend.read_thread("t")]
    assert steps == list(range(1, 11))
    assert await backend.duplicate_steps() == []
    assert (await a.get_latest("t")).metadata.step == 10


async def test_step_counter_survives_deleted_rows(backend, engine):
    await snap(engine, "t", 3)
    await backend.delete_thread("t")  # e.g. a foreign writer's delete
    cid = await engine.snapshot("t", [], {}, {})
    # the in-memory counter is part of max(), so no step is reused
    assert (await backend.get_metadata(cid)).step == 4


async def test_concurrent_snapshots_get_distinct_steps(db_url):
    import asyncio

    b1, b2 = await open_rw(db_url), await open_rw(db_url)
    try:
        e1, e2 = make_engine(b1, seed=1), make_engine(b2, seed=2)
        await asyncio.gather(*[e.snapshot("t", [], {"k": i}, {}) for i in range(8) for e in (e1, e2)])
        steps = sorted(m.step for m in await b1.read_thread("t", 100))
        assert steps == list(range(1, 17))
    finally:
        await b1.close()
        await b2.close()


async def test_an_agent_writing_during_debugger_writes_gets_no_error(db_url):
    import asyncio

    b1, b2 = await open_rw(db_url), await open_rw(db_url)
    try:
        debugger, agent = make_engine(b1, seed=1), make_engine(b2, seed=2)
        ids = await bulk(b1, "t", 2000)

        async def agent_loop():
            return [await agent.snapshot(t, [], {"k": i}, {}) for i in range(10) for t in ("t", "u")]

        async def debugger_ops():
            await debugger.prune("t", "keep_milestones", 50)
            await debugger.branch(ids[0], "side")  # the first row: milestones keep it
            await debugger.undo()  # the branch: the agent does not write to it
            await debugger.rewind(ids[0])

        written, _ = await asyncio.gather(agent_loop(), debugger_ops())
        assert all(written) and await b1.count("u") == 10
        assert await b1.duplicate_steps() == []
    finally:
        await b1.close()
        await b2.close()


async def test_max_snapshot_size(backend):
    engine = make_engine(backend, max_snapshot_size_mb=0.01)
    await engine.snapshot("t", [], {"small": 1}, {})
    with pytest.raises(SnapshotTooLarge) as info:
        await engine.snapshot("t", [{"role": "user", "content": "x" * 20000}], {}, {})
    assert "MB" in str(info.value) and "max_snapshot_size_mb=0.01" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert await backend.count("t") == 1
    assert await engine.snapshot_safe("t", [{"role": "user", "content": "x" * 20000}], {}, {}) == ""
    assert await backend.count("t") == 1


async def test_auto_gc_keep_last_n_exact_on_long_thread(backend):
    await bulk(backend, "long", 620)
    await bulk(backend, "other", 5)
    engine = make_engine(backend, gc_policy=CheckpointGC.KEEP_LAST_N, gc_param=100)
    cid = await engine.snapshot("long", [], {}, {})
    metas = await backend.read_thread("long", 1000)
    assert len(metas) == 100
    assert metas[-1].checkpoint_id == cid and metas[0].step == 522
    assert await backend.count("other") == 5  # only the thread written to
    assert not await backend.table_exists("agentctl_trash_checkpoints")  # the agent's GC is not logged


async def test_auto_gc_policies(backend):
    clock = Clock(step=timedelta(seconds=1))
    e = make_engine(backend, clock=clock, gc_policy=CheckpointGC.KEEP_AGE, gc_param=10)
    await snap(e, "age", 30)
    # the clock advances 1 s per reading (two per snapshot: created_at, then the GC's
    # cutoff): rows older than 10 s before the last cutoff are gone
    created = [m.created_at for m in await backend.read_thread("age")]
    cutoff = (clock.now - timedelta(seconds=10)).isoformat()
    assert len(created) == 5 and all(c > cutoff for c in created)
    await e.prune("age", "keep_all")  # nothing
    clock.now += timedelta(hours=1)
    await e.snapshot("age", [], {}, {})
    assert await backend.count("age") == 1
    m = make_engine(backend, gc_policy="keep_milestones", gc_param=5)
    await snap(m, "ms", 40)
    assert await backend.count("ms") == 5
    e2 = make_engine(backend, gc_policy=CheckpointGC.KEEP_LAST_N, gc_param=0)
    await snap(e2, "zero", 3)
    assert await backend.count("zero") == 1  # the head is never deleted


# ---- rewind ---------------------------------------------------------------------------


async def test_rewind_moves_the_future_to_an_archive_branch(backend, engine):
    ids = await snap(engine, "t", 6)
    plan = await engine.plan_rewind(ids[2])
    assert plan.target.checkpoint_id == ids[2] and [m.checkpoint_id for m in plan.moved] == ids[3:]
    assert plan.archive_thread.startswith("t-branch-rewind-") and not plan.hard
    before = await dump(backend)
    result = await engine.rewind(ids[2], archive_thread=plan.archive_thread)
    assert result.checkpoint.metadata.checkpoint_id == ids[2]
    assert (result.thread_id, result.rewind_depth, result.snapshot_count_before) == ("t", 3, 6)
    assert result.can_replay and result.op_id is not None and result.moved == ids[3:]
    archive = result.archive_thread
    assert archive == plan.archive_thread
    assert await thread_ids(backend, "t") == ids[:3]
    assert await thread_ids(backend, archive) == ids[3:]
    # the format's reader (ORDER BY step DESC LIMIT 1) sees the target as the head
    rows = await backend.query(
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY step DESC LIMIT 1", "t"
    )
    assert rows[0]["checkpoint_id"] == ids[2]
    summary = await backend.thread_summary(archive)
    assert summary.branch_of == "t" and summary.branch_point == ids[2]
    # continuing after the rewind: the next step follows the target
    new = await engine.snapshot("t", [], {}, {})
    meta = await backend.get_metadata(new)
    assert meta.step == 4 and meta.parent_checkpoint_id == ids[2]
    # undo is refused while the thread has new checkpoints, then works
    with pytest.raises(OperationError, match="changed after it"):
        await engine.undo(result.op_id)
    # (a foreign writer removes the new checkpoint: the thread is as the rewind left it)
    await backend._write("DELETE FROM checkpoints WHERE checkpoint_id = ?", new)
    undo = await engine.undo()
    assert undo.moved == sorted(ids[3:]) and undo.kind == "undo"
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]


async def test_rewind_sets_a_missing_parent_and_undo_restores_it(backend, engine):
    for step in range(1, 5):
        await backend.put(make_cp("t", step))  # a foreign writer: no parents
    before = (await dump(backend))["checkpoints"]
    result = await engine.rewind("ckpt-t-2")
    first = await backend.get_metadata("ckpt-t-3")
    assert first.thread_id == result.archive_thread and first.parent_checkpoint_id == "ckpt-t-2"
    assert (await backend.get_metadata("ckpt-t-4")).parent_checkpoint_id is None
    await engine.undo(result.op_id)
    assert (await dump(backend))["checkpoints"] == before


async def test_hard_rewind_deletes_into_the_trash(backend, engine):
    ids = await snap(engine, "t", 5)
    before = (await dump(backend))["checkpoints"]
    plan = await engine.plan_rewind(ids[1], hard=True)
    assert plan.hard and plan.archive_thread is None and len(plan.moved) == 3
    result = await engine.rewind(ids[1], hard=True)
    assert result.archive_thread is None and result.deleted == ids[2:]
    assert await thread_ids(backend, "t") == ids[:2]
    assert (await engine.oplog())[0].purgeable_rows == 3
    await engine.undo()
    assert (await dump(backend))["checkpoints"] == before  # same row ids, blobs, created_at


async def test_rewind_to_head_and_errors(backend, engine):
    ids = await snap(engine, "t", 2)
    result = await engine.rewind(ids[-1])
    assert result.rewind_depth == 0 and result.op_id is None and result.archive_thread is None
    with pytest.raises(CheckpointNotFound, match="not found"):
        await engine.rewind("ckpt-nope")
    with pytest.raises(UsageError):
        await engine.rewind(ids[0], archive_thread=" ")
    with pytest.raises(UsageError):
        await engine.rewind(ids[0], archive_thread="t")
    other = await engine.snapshot("other", [], {}, {})
    with pytest.raises(UsageError, match="already exists"):
        await engine.rewind(ids[0], archive_thread="other")
    assert await thread_ids(backend, "t") == ids and other
    with pytest.raises(ValueError, match="not found"):
        await engine.plan_rewind("ckpt-nope")
    assert not await backend.table_exists("agentctl_journal")


async def test_time_travel_to_step_on_long_thread(backend, engine):
    ids = await bulk(backend, "t", 700)
    result = await engine.time_travel_to_step("t", 3)
    assert result.checkpoint.metadata.checkpoint_id == ids[2] and result.rewind_depth == 697
    assert await engine.time_travel_to_step("t", 0) is None
    assert await engine.time_travel_to_step("nope", 5) is None
    points = await engine.list_time_travel_points("t", limit=2)
    assert [p.step for p in points] == [3, 2]


async def test_rewind_with_duplicate_steps_uses_thread_order(backend, engine):
    # a restarted writer repeated steps 1-2: order is step, created_at, id
    rows = [
        make_cp("t", 1, cid="a1", created_at=ts(1)),
        make_cp("t", 2, cid="a2", created_at=ts(2)),
        make_cp("t", 1, cid="b1", created_at=ts(3)),
        make_cp("t", 2, cid="b2", created_at=ts(4)),
        make_cp("t", 3, cid="a3", created_at=ts(5)),
    ]
    for cp in rows:
        await backend.put(cp)
    plan = await engine.plan_rewind("b1")
    assert [m.checkpoint_id for m in plan.moved] == ["a2", "b2", "a3"]
    await engine.rewind("b1")
    assert await thread_ids(backend, "t") == ["a1", "b1"]


# ---- branch and tree ------------------------------------------------------------------


async def test_branch_like_the_seeds(backend, engine):
    ids = await snap(engine, "t", 4)
    thread = await engine.branch(ids[1], "bugfix-experiment")
    assert thread.startswith("t-branch-bugfix-experiment-") and len(thread.rsplit("-", 1)[1]) == 4
    first = await backend.get(f"ckpt-{thread}-0")
    src = await backend.get(ids[1])
    assert first.metadata.step == 0 and first.metadata.tags == ["branch", "bugfix-experiment"]
    assert first.metadata.parent_checkpoint_id == ids[1]
    assert first.metadata.summary == f"Branch 'bugfix-experiment' from {ids[1]}"
    assert (first.messages, first.state, first.tools_result) == (src.messages, src.state, src.tools_result)
    assert engine.last_op_id == (await engine.oplog())[0].op_id
    nxt = await engine.snapshot(thread, [], {}, {})
    assert (await backend.get_metadata(nxt)).step == 1
    with pytest.raises(CheckpointNotFound):
        await engine.branch("nope", "x")
    with pytest.raises(UsageError):
        await engine.branch(ids[0], "")


async def test_checkpoint_tree_includes_branches_recursively(backend, engine):
    ids = await snap(engine, "t", 5)
    b1 = await engine.branch(ids[1], "one")
    b1_ids = [f"ckpt-{b1}-0"] + await snap(engine, b1, 2)
    b2 = await engine.branch(b1_ids[1], "two")
    rew = await engine.rewind(ids[3])
    await backend.put(make_cp("t", 9, cid="orphan-row", parent="deleted-parent"))
    tree = await engine.get_checkpoint_tree("t")
    assert tree["thread_id"] == "t"
    threads = {t["thread_id"]: t for t in tree["threads"]}
    assert set(threads) == {"t", b1, b2, rew.archive_thread}
    assert threads[b2]["parent_thread"] == b1 and threads[b2]["branch_point"] == b1_ids[1]
    assert threads[rew.archive_thread]["archive"] and not threads[b1]["archive"]
    assert tree["total_checkpoints"] == len(tree["nodes"]) == 5 + 1 + 3 + 1
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert "root" in nodes[ids[0]]["labels"]
    assert "branch-point" in nodes[ids[1]]["labels"] and "branch-point" in nodes[ids[3]]["labels"]
    assert "head" in nodes["orphan-row"]["labels"] and "orphan" in nodes["orphan-row"]["labels"]
    assert set(nodes[ids[4]]["labels"]) == {"head", "abandoned"}
    edges = {(e["from"], e["to"]): e["kind"] for e in tree["edges"]}
    assert edges[(ids[0], ids[1])] == "parent"
    assert edges[(ids[1], b1_ids[0])] == "branch"
    assert edges[(b1_ids[1], f"ckpt-{b2}-0")] == "branch"
    assert edges[(ids[3], ids[4])] == "branch"
    assert set(nodes[ids[0]]) == {
        "id",
        "thread_id",
        "step",
        "tags",
        "summary",
        "created_at",
        "parent_id",
        "labels",
    }
    limited = await engine.get_checkpoint_tree("t", limit=1)
    assert len([n for n in limited["nodes"] if n["thread_id"] == "t"]) == 1
    empty = await engine.get_checkpoint_tree("nope")
    assert empty["nodes"] == [] and empty["total_checkpoints"] == 0


# ---- prune, delete, import ------------------------------------------------------------


@pytest.mark.parametrize(
    "policy,param,kept",
    [
        ("keep_last_n", 10, list(range(591, 601))),
        ("keep_last_n", 0, [600]),
        ("keep_milestones", 5, [1, 151, 301, 451, 600]),
        ("keep_milestones", 2, [1, 600]),
        ("keep_milestones", 1, [600]),
        ("keep_milestones", 1000, list(range(1, 601))),
        ("keep_all", 0, list(range(1, 601))),
    ],
)
async def test_prune_policies_on_600_rows(backend, policy, param, kept):
    engine = make_engine(backend)
    await bulk(backend, "t", 600)
    await bulk(backend, "other", 3)
    before = await dump(backend)
    plan = await engine.plan_prune("t", policy, param)
    assert plan.keep_count == len(kept)
    assert [m.step for m in plan.delete] == [s for s in range(1, 601) if s not in kept]
    result = await engine.prune("t", policy, param)
    assert [m.step for m in await backend.read_thread("t", 1000)] == kept
    assert await backend.count("other") == 3
    assert len(result.deleted) == 600 - len(kept)
    if result.op_id is not None:
        await engine.undo(result.op_id)
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]


async def test_prune_keep_age_by_created_at(backend):
    clock = Clock(start=T0 + timedelta(seconds=550), step=timedelta(0))
    engine = make_engine(backend, clock=clock)
    await bulk(backend, "t", 550)  # created_at T0 + step seconds
    plan = await engine.plan_prune("t", CheckpointGC.KEEP_AGE, 100.5)
    # rows more than 100.5 s older than now go: steps 1..449
    assert plan.keep_count == 101 and plan.delete[0].step == 1 and plan.delete[-1].step == 449
    await engine.prune("t", "keep_age", 100.5)
    assert await backend.count("t") == plan.keep_count
    clock.now += timedelta(days=30)
    res = await engine.prune("t", "keep_age", 1)
    assert len(res.deleted) == plan.keep_count - 1 and await backend.count("t") == 1  # the head stays


async def test_prune_errors(backend, engine):
    with pytest.raises(ThreadNotFound, match="not found"):
        await engine.prune("nope", "keep_last_n", 3)
    await snap(engine, "t", 3)
    with pytest.raises(UsageError, match="unknown GC policy"):
        await engine.plan_prune("t", "keep_some", 3)
    with pytest.raises(UsageError):
        await engine.prune("t", "keep_last_n", -1)
    res = await engine.prune("t", "keep_last_n", 5)
    assert res.op_id is None and not await backend.table_exists("agentctl_journal")


async def test_delete_thread_and_undo(backend, engine):
    ids = await snap(engine, "t", 4)
    await snap(engine, "u", 2)
    before = await dump(backend)
    res = await engine.delete_thread("t")
    assert res.deleted == ids and await backend.count("t") == 0 and await backend.count("u") == 2
    with pytest.raises(ThreadNotFound):
        await engine.delete_thread("t")
    await engine.undo()
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]


async def test_import_skip_replace_error(backend, engine):
    await backend.put(make_cp("t", 1, state={"old": True}))
    incoming = [make_cp("t", 1, state={"new": True}), make_cp("t", 2), make_cp("u", 1)]
    before = await dump(backend)
    with pytest.raises(OperationError, match="exist already"):
        await engine.import_checkpoints(incoming, on_conflict="error")
    assert (await dump(backend)) == before
    res = await engine.import_checkpoints(incoming, on_conflict="skip")
    assert sorted(res.created) == ["ckpt-t-2", "ckpt-u-1"] and res.deleted == []
    assert (await backend.get("ckpt-t-1")).state == {"old": True}
    await engine.undo()
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]

    async def stream():
        for cp in incoming:
            yield cp

    res = await engine.import_checkpoints(stream(), on_conflict="replace")
    assert res.deleted == ["ckpt-t-1"] and len(res.created) == 3
    assert (await backend.get("ckpt-t-1")).state == {"new": True}
    assert (await backend.get("ckpt-t-2")).to_dict() == make_cp("t", 2).to_dict()
    await engine.undo()
    assert (await dump(backend))["checkpoints"] == before["checkpoints"]
    nothing = await engine.import_checkpoints([make_cp("t", 1)], on_conflict="skip")
    assert nothing.op_id is None
    from datetime import datetime, timezone

    dated = make_cp("d", 1)
    dated.metadata.created_at = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
    await engine.import_checkpoints([dated, {"metadata": make_cp("d", 2).metadata.to_dict()}])
    assert (await backend.get("ckpt-d-1")).metadata.created_at == "2026-05-01T12:30:15.123456+00:00"
    assert (await backend.get("ckpt-d-2")).messages == []
    with pytest.raises(UsageError):
        await engine.import_checkpoints([], on_conflict="merge")


# ---- undo, oplog, purge ---------------------------------------------------------------


async def test_undo_rules(backend, engine):
    with pytest.raises(OperationError, match="nothing to undo"):
        await engine.undo()
    ids = await snap(engine, "t", 4)
    b = await engine.branch(ids[0], "x")
    with pytest.raises(NotFoundError, match="not found"):
        await engine.undo(999)
    # a branch of the branch continues from the row the undo would delete
    await engine.branch(f"ckpt-{b}-0", "y")
    with pytest.raises(OperationError, match="continue from"):
        await engine.undo(1)
    res = await engine.undo()  # the second branch
    assert res.deleted and (await engine.oplog())[0].kind == "undo"
    with pytest.raises(OperationError, match="already undone"):
        await engine.undo(2)
    with pytest.raises(OperationError, match="cannot be undone"):
        await engine.undo(3)  # an undo
    await engine.undo()
    assert await backend.count(b) == 0
    ops = await engine.oplog()
    assert [o.kind for o in ops] == ["undo", "undo", "branch", "branch"]
    assert ops[-1].undone and ops[-1].undone_by == ops[0].op_id and ops[0].undo_of == ops[-1].op_id
    assert set(ops[0].to_dict()) >= {
        "op_id",
        "created_at",
        "kind",
        "summary",
        "threads",
        "undone",
        "undo_of",
        "purgeable_rows",
    }


async def test_undo_stack_per_thread(backend, engine):
    ids = await snap(engine, "t", 8)
    before = (await dump(backend))["checkpoints"]
    p = await engine.prune("t", "keep_last_n", 6)
    r = await engine.rewind(ids[4])
    with pytest.raises(OperationError, match=f"undo operation {r.op_id} first"):
        await engine.undo(p.op_id)
    await engine.undo(r.op_id)
    await engine.undo(p.op_id)
    assert (await dump(backend))["checkpoints"] == before


async def test_purge_frees_the_trash(backend, engine):
    ids = await snap(engine, "t", 6)
    r = await engine.rewind(ids[1])  # soft: its 4 moved rows, as they were and as they are
    p = await engine.prune(r.archive_thread, "keep_last_n", 1)  # 3 deleted, 1 re-parented
    dry = await engine.purge(dry_run=True)
    assert dry.dry_run and dry.ops == [r.op_id, p.op_id] and dry.rows == 4 + 4 + 3 + 2
    assert await backend.count() == 3
    res = await engine.purge()
    assert res.rows == 13 and res.ops == [r.op_id, p.op_id] and res.vacuumed
    assert int(await backend._fetchval("SELECT COUNT(*) FROM agentctl_trash_checkpoints")) == 0
    for op in (p, r):
        with pytest.raises(OperationError, match="purged"):
            await engine.undo(op.op_id)
    ops = {o.op_id: o for o in await engine.oplog()}
    assert ops[p.op_id].purged and ops[res.op_id].kind == "purge"
    with pytest.raises(OperationError, match="nothing to undo"):
        await engine.undo()  # the purge is not undone either
    again = await engine.purge()
    assert again.rows == 0 and again.ops == []


async def test_readonly_backend_refuses_writes(db_url):
    b = await open_rw(db_url)
    await make_engine(b).snapshot("t", [], {}, {})
    await b.close()
    ro = make_backend(db_url, readonly=True)
    try:
        engine = make_engine(ro)
        with pytest.raises(ReadOnlyDatabase):
            await engine.snapshot("t", [], {}, {})
        cid = (await ro.get_latest("t")).metadata.checkpoint_id
        with pytest.raises(ReadOnlyDatabase):
            await engine.branch(cid, "x")
        assert await engine.oplog() == []
        assert (await engine.purge(dry_run=True)).rows == 0
    finally:
        await ro.close()


# ---- the seeds' usage -----------------------------------------------------------------


async def test_seeds_docstring_usage_runs_unchanged(tmp_path):
    from agentctl import CheckpointEngine as Engine
    from agentctl import SnapshotTrigger as Trigger
    from agentctl import SQLiteCheckpointer, TimeTravelResult

    engine = Engine(checkpointer=SQLiteCheckpointer(str(tmp_path / "checkpoints.db")))

    @engine.snapshot_on("tool_call")
    async def my_tool(query: str) -> str:
        return f"result for {query}"

    @engine.snapshot_on(Trigger.TOOL_CALL)
    async def search_database(query: str):
        return [query]

    assert (
        await my_tool(query="a", _checkpoint_thread_id="thread-1", _checkpoint_state={"k": 1})
        == "result for a"
    )
    assert await search_database(query="b") == ["b"]
    async with engine.snapshot_scope("thread-1", {"k": 2}):
        pass
    points = await engine.list_time_travel_points("thread-1")
    assert [p.step for p in points] == [4, 3, 2, 1]
    assert points[-1].tags == ["tool_call"] and points[0].tags == ["state_change"]
    before_result = await engine.checkpointer.get(points[-1].checkpoint_id)
    assert before_result.messages == [{"role": "tool_call", "content": "my_tool({'query': 'a'})"}]
    assert before_result.state == {"k": 1}
    checkpoint_42 = points[2].checkpoint_id  # step 2
    result = await engine.rewind(checkpoint_42)
    assert isinstance(result, TimeTravelResult) and result.thread_id == "thread-1"
    assert result.checkpoint.metadata.step == 2 and result.rewind_depth == 2
    assert (await engine.get_latest("thread-1")).metadata.checkpoint_id == checkpoint_42
    branch_id = await engine.branch(checkpoint_42, "bugfix-experiment")
    assert branch_id.startswith("thread-1-branch-bugfix-experiment-")
    tree = await engine.get_checkpoint_tree("thread-1")
    assert {"thread_id", "total_checkpoints", "nodes", "edges"} <= set(tree)
    assert await engine.list_time_travel_points("default") != []
    with pytest.raises(ValueError, match="not found"):
        await engine.rewind("checkpoint-42")
    assert await engine.time_travel_to_step("thread-1", 1) is not None

    # The docstring's lines, verbatim, once a checkpoint "checkpoint-42" exists
    from agentctl import Checkpoint, CheckpointMetadata

    await engine.checkpointer.put(
        Checkpoint(
            CheckpointMetadata("thread-1", "checkpoint-42", 42),
            [{"role": "user", "content": "q"}],
            {"k": 42},
            {},
        )
    )
    await engine.snapshot("thread-1", [], {"k": 43}, {})
    await engine.rewind("checkpoint-42")
    # Now continue execution from that point
    assert (await engine.get_latest("thread-1")).metadata.checkpoint_id == "checkpoint-42"
    branch_id = await engine.branch("checkpoint-42", "bugfix-experiment")
    assert (await engine.get_latest(branch_id)).state == {"k": 42}
    await engine.checkpointer.close()


async def test_seed_subclass_uses_the_private_checkpointer(tmp_path):
    """AgentOS's subclasses of CheckpointEngine reach the backend as `self._checkpointer`
    (and the configuration as `self._config`): both are the engine's own objects."""
    from agentctl import SQLiteCheckpointer

    class AuditedEngine(CheckpointEngine):
        async def latest_summary(self, thread_id: str) -> str:
            cp = await self._checkpointer.get_latest(thread_id)
            return cp.metadata.summary if cp else ""

        async def count_points(self, thread_id: str) -> int:
            return len(await self._checkpointer.list_checkpoints(thread_id, limit=500))

        async def restore(self, checkpoint_id: str) -> dict:
            cp = await self._checkpointer.get(checkpoint_id)
            return cp.state

    backend = SQLiteCheckpointer(str(tmp_path / "c.db"))
    engine = AuditedEngine(backend, SnapshotConfig(gc_param=7))
    try:
        assert engine._checkpointer is backend is engine.checkpointer
        assert engine._config is engine.config and engine._config.gc_param == 7
        first = await engine.snapshot("t", [{"role": "user", "content": "hello"}], {"k": 1}, {})
        await engine.snapshot("t", [], {"k": 2}, {})
        assert await engine.count_points("t") == 2
        assert await engine.restore(first) == {"k": 1}
        assert await engine.latest_summary("t") == "State: 1 keys"
        assert engine._snapshot_counters == {"t": 2}
    finally:
        await backend.close()


async def test_create_checkpoint_engine_quick_start(tmp_path):
    from agentctl.engine import create_checkpoint_engine

    engine = await create_checkpoint_engine("sqlite", db_path=str(tmp_path / "c.db"))
    assert isinstance(engine, CheckpointEngine)
    assert (await engine.snapshot("t", [], {}, {})).startswith("ckpt-t-1-")
    await engine.checkpointer.close()


def test_config_defaults_match_the_seeds_except_delta():
    c = SnapshotConfig()
    assert c.triggers == {
        SnapshotTrigger.MANUAL,
        SnapshotTrigger.TOOL_CALL,
        SnapshotTrigger.LLM_CALL,
        SnapshotTrigger.STATE_CHANGE,
    }
    assert c.gc_policy is CheckpointGC.KEEP_LAST_N and c.gc_param == 100
    assert c.max_snapshot_size_mb == 10.0 and c.delta_snapshots is False
    assert CheckpointEngine(None).config == c  # type: ignore[arg-type]


# ---- the bundled sample ---------------------------------------------------------------


async def test_sample_branch_and_merge_made_by_the_engine(tmp_path):
    import subprocess
    import sys

    from tests.support.rig import REPO, SAMPLE_DB

    async with make_backend(str(SAMPLE_DB), readonly=True) as b:
        for table in SIDE_TABLES:
            assert not await b.table_exists(table)
        branch = "coder-fix-flaky-test-branch-retry-backoff-70e7"
        head = await b.get_latest("coder-fix-flaky-test")
        assert head.metadata.step == 13 and head.metadata.tags == [
            "merge",
            "merged:" + (await b.get_latest(branch)).metadata.checkpoint_id,
            "branch:" + branch,
        ]
        assert head.state["retry"] == {"strategy": "exponential", "attempts": 3}
        tree = await CheckpointEngine(b).get_checkpoint_tree("coder-fix-flaky-test")
        assert {t["thread_id"] for t in tree["threads"]} == {"coder-fix-flaky-test", branch}
        assert sum(e["kind"] == "merge" for e in tree["edges"]) == 1
    # the shipped file is what the script writes (deterministic)
    out = tmp_path / "sample.db"
    subprocess.run(
        [sys.executable, str(REPO / "sample_db" / "make_sample.py"), str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert out.read_bytes() == SAMPLE_DB.read_bytes()


async def test_first_writes_of_two_engines_at_once(db_url):
    """Both create the side tables in their first write: neither fails."""
    import asyncio

    b1, b2 = await open_rw(db_url), await open_rw(db_url)
    try:
        e1, e2 = make_engine(b1, seed=1), make_engine(b2, seed=2)
        a = await e1.snapshot("a", [], {}, {})
        b = await e1.snapshot("b", [], {}, {})
        threads = await asyncio.gather(e1.branch(a, "x"), e2.branch(b, "y"))
        assert len({t for t in threads}) == 2
        assert len(await e1.oplog()) == 2
    finally:
        await b1.close()
        await b2.close()


async def test_purge_when_vacuum_must_wait(tmp_path):
    import sqlite3

    path = str(tmp_path / "c.db")
    b = make_backend(path, readonly=False, create=True, busy_timeout_ms=100)
    real_vacuum = b.vacuum

    async def vacuum_while_another_writer_holds_the_lock(tables):
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # e.g. an agent in the middle of a write
        try:
            await real_vacuum(tables)
        finally:
            other.execute("ROLLBACK")
            other.close()

    try:
        engine = make_engine(b)
        ids = await snap(engine, "t", 4)
        await engine.rewind(ids[0], hard=True)
        b.vacuum = vacuum_while_another_writer_holds_the_lock
        res = await engine.purge()
        assert res.rows == 3 and not res.vacuumed  # purged; the compaction is left for later
        assert (await engine.purge(dry_run=True)).rows == 0
    finally:
        await b.close()


@pytest.mark.parametrize("bad", ["x@1", "has space", "../../etc", "a/b", "a\\b", "..", "x\x01", "y~2", ""])
async def test_branch_names_the_engine_refuses(backend, bad):
    """The engine applies the CLI's rule (agentctl.refs.check_branch_name) too."""
    from agentctl.errors import UsageError
    from agentctl.refs import check_branch_name

    engine = make_engine(backend)
    [cid] = await snap(engine, "t", 1)
    with pytest.raises(UsageError):
        check_branch_name(bad)
    with pytest.raises(UsageError, match="bad branch name"):
        await engine.branch(cid, bad)
    assert await backend.all_thread_ids() == ["t"]
    assert check_branch_name("retry-backoff.v2") == "retry-backoff.v2"


async def test_undo_refuses_when_a_trashed_rows_id_was_taken_again(backend):
    """A prune put rows in the trash; a writer then stored a checkpoint under one of
    their ids (in another thread, so the pruned thread itself did not change): undo
    refuses with a clear message (not a raw UNIQUE error) and writes nothing."""
    from agentctl.errors import OperationError

    engine = make_engine(backend)
    await bulk(backend, "t", 5)
    result = await engine.prune("t", "keep_last_n", 2)
    taken = result.deleted[0]
    async with backend.transaction() as tx:
        await tx.put(make_cp("other", 1, cid=taken))
    before = await dump(backend)
    with pytest.raises(
        OperationError,
        match=rf"cannot undo operation {result.op_id} \(prune\).*"
        rf"{taken}.*exist again",
    ):
        await engine.undo(result.op_id)
    assert await dump(backend) == before


async def test_prune_reuses_its_plan_only_while_the_database_is_as_planned(backend):
    """issue 23 item 4: a prune given its plan reuses the plan's fork points (finding
    them reads every row it selects) only while nothing was added since: a branch made
    between the plan and the prune from a checkpoint the plan deletes makes it a fork
    point, which the prune keeps; with the database as planned, the prune deletes
    exactly what the plan said, and no kept checkpoint names a deleted parent."""
    from agentctl.storage import PruneSpec

    engine = make_engine(backend)
    await bulk(backend, "t", 30)
    spec = PruneSpec(threads=["t"], keep_last=5)
    plans = await engine.plan_prune_spec(spec)
    assert plans[0].delete_count == 25 and plans[0].forks_kept == 0
    doomed = plans[0].delete[3].checkpoint_id
    branch = await engine.branch(doomed, "late")  # after the plan
    (result,) = await engine.prune_spec(spec, plans=plans)
    assert doomed not in result.deleted and len(result.deleted) == 24
    assert (await backend.get(doomed)) is not None
    assert (await backend.read_thread(branch, 1))[0].parent_checkpoint_id == doomed
    await engine.undo()
    plans = await engine.plan_prune_spec(spec)  # now the branch's fork point is planned
    assert plans[0].fork_points == [doomed] and plans[0].delete_count == 24
    (result,) = await engine.prune_spec(spec, plans=plans)
    assert sorted(result.deleted) == sorted(m.checkpoint_id for m in plans[0].delete)
    kept = {m.checkpoint_id: m.parent_checkpoint_id for m in await backend.read_thread("t", 100)}
    assert all(p is None or p in kept for p in kept.values())
    first_kept = next(c for c in kept if c != doomed)
    assert {r[0]: r[2] for r in plans[0].reparent} == {doomed: None, first_kept: doomed}
    assert (kept[doomed], kept[first_kept]) == (None, doomed)


async def test_sqlite_prune_moves_the_planned_rows_only_while_they_are_the_threads(tmp_path):
    """SQLite: a prune given its plan moves the rows the plan read by their row ids (the
    selection is not read again) when row-id order is the thread's order. If another
    program moved one of them to another thread (and one into the thread: as many rows,
    no new id, no op) the prune stops and writes nothing; with steps out of row-id order
    the plan holds no row ids, and the prune reads the selection again and deletes it in
    thread order."""
    import sqlite3

    from agentctl.errors import OperationError
    from agentctl.storage import PruneSpec

    path = str(tmp_path / "p.db")
    backend = make_backend(path, readonly=False, create=True)
    try:
        engine = make_engine(backend)
        await bulk(backend, "t", 20)
        await bulk(backend, "u", 3)
        spec = PruneSpec(threads=["t"], keep_last=2)
        plans = await engine.plan_prune_spec(spec)
        assert plans[0].delete_rows is not None and len(plans[0].delete_rows) == 18
        await backend.close()
        conn = sqlite3.connect(path)
        with conn:
            conn.execute(
                "UPDATE checkpoints SET thread_id = 'u' WHERE id = (SELECT MIN(id) FROM checkpoints)"
            )
            conn.execute(
                "UPDATE checkpoints SET thread_id = 't', step = 0 WHERE id = (SELECT MAX(id) FROM checkpoints)"
            )
        conn.close()
        before = await dump(backend)
        with pytest.raises(OperationError, match="changed while prune was planned; nothing was deleted"):
            await engine.prune_spec(spec, plans=plans)
        assert await dump(backend) == before
        # steps against row-id order: thread "v" written newest step first
        async with backend.transaction() as tx:
            from agentctl.engine import _INSERT_SQL
            from agentctl.storage.agentos.base import checkpoint_params

            await tx.executemany(
                _INSERT_SQL,
                [checkpoint_params(make_cp("v", s, created_at=ts(s)), tx.timestamp) for s in (5, 4, 3, 2, 1)],
            )
        spec = PruneSpec(threads=["v"], keep_last=1)
        plans = await engine.plan_prune_spec(spec)
        assert plans[0].delete_rows is None and plans[0].delete_count == 4
        (result,) = await engine.prune_spec(spec, plans=plans)
        assert result.deleted == [m.checkpoint_id for m in plans[0].delete] and len(result.deleted) == 4
        assert [m.step for m in await backend.read_thread("v", 10)] == [5]
    finally:
        await backend.close()


async def test_prune_plan_fork_points_and_new_parents_on_a_random_forest(backend):
    """A prune's plan on trees of three threads (seeded): forks inside a thread, branches
    into other threads, a thread starting from another's checkpoint, a parent that does
    not exist. The fork points are the selected checkpoints with a child in another
    thread or several children; each kept checkpoint whose parent goes gets its nearest
    ancestor that stays (None when the line ends first); the prune then leaves no kept
    checkpoint naming a deleted parent."""
    await _prune_random_forest(backend)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_random_forest_plan_read_in_two_parts_at_once(backend, monkeypatch):
    """The same forest, each thread's selected rows read in two parts at once (a large
    thread's plan on SQLite: split by row id at its middle step, the threads' rows
    interleaved in row-id order): the same fork points, deletions and new parents, and
    the prune made from those plans deletes what they showed, in thread order."""
    from agentctl.storage.agentos import retention
    from agentctl.storage.agentos.sqlite import SQLiteCheckpointer

    monkeypatch.setattr(retention, "SPLIT_READ_AT", 1)
    parts: list[int] = []
    real = SQLiteCheckpointer.query_apart

    async def counted(self, statements):
        parts.append(len(statements))
        return await real(self, statements)

    monkeypatch.setattr(SQLiteCheckpointer, "query_apart", counted)
    await _prune_random_forest(backend)
    assert parts and set(parts) == {2}  # every plan (3 threads, then a's again) split


async def test_query_apart_gives_each_parts_rows_and_agentctls_errors(tmp_path):
    """SQLiteCheckpointer.query_apart: the rows of each statement as `query` gives them,
    in the order given (the first on the reader, the others each on a connection of
    its own); a part that fails raises agentctl's error naming the file, not SQLite's."""
    from agentctl.errors import DatabaseError
    from agentctl.storage.agentos.sqlite import SQLiteCheckpointer

    b = SQLiteCheckpointer(str(tmp_path / "apart.db"))
    await b.connect()
    try:
        got = await b.query_apart([("SELECT ? AS x", [1]), ("SELECT ? AS x, 'b' AS y", [2])])
        assert got == [[{"x": 1}], [{"x": 2, "y": "b"}]]
        with pytest.raises(DatabaseError, match=r"apart\.db: no such table: nowhere"):
            await b.query_apart([("SELECT 1 AS x", []), ("SELECT * FROM nowhere", [])])
    finally:
        await b.close()


async def _prune_random_forest(backend) -> None:
    import random

    from agentctl.engine import _INSERT_SQL
    from agentctl.storage.agentos.base import checkpoint_params

    rnd = random.Random(7)
    rows: list[tuple[str, int, str, str | None]] = []  # thread, step, id, parent
    for n in range(120):
        thread = rnd.choice(["a", "a", "b", "c"])
        mine = [r for r in rows if r[0] == thread]
        if n == 5:
            parent: str | None = "ckpt-gone"
        elif mine and rnd.random() < 0.8:
            parent = mine[-1][2] if rnd.random() < 0.75 else rnd.choice(mine)[2]
        else:
            parent = rnd.choice(rows)[2] if rows and rnd.random() < 0.7 else None
        rows.append((thread, len(mine) + 1, f"ck{n}", parent))
    cps = [make_cp(t, s, cid=c, parent=p, created_at=ts(i)) for i, (t, s, c, p) in enumerate(rows)]
    async with backend.transaction() as tx:
        await tx.executemany(_INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in cps])
    engine = make_engine(backend)
    parent_of = {c: p for _, _, c, p in rows}
    thread_of = {c: t for t, _, c, _ in rows}
    gone_of: dict[str, set[str]] = {}
    for thread in ("a", "b", "c"):
        line = [c for t, _, c, _ in rows if t == thread]  # thread order (steps grow)
        selected = set(line[:-4])
        children = {c: [k for k in parent_of if parent_of[k] == c] for c in line}
        forks = {
            c for c in selected if len(children[c]) > 1 or any(thread_of[k] != thread for k in children[c])
        }
        gone = selected - forks
        gone_of[thread] = gone
        expected = {}
        for k in line:
            if k in gone or parent_of[k] not in gone:
                continue
            up = parent_of[k]
            while up in gone:
                up = parent_of[up]
            expected[k] = up if up in parent_of else None
        plan = await engine.plan_prune(thread, "keep_last_n", 4)
        assert sorted(plan.fork_points) == sorted(forks), thread
        assert plan.delete_count == len(gone) and {m.checkpoint_id for m in plan.delete} == gone
        assert {k: new for k, _, new in plan.reparent} == expected, thread
    from agentctl.storage import PruneSpec

    (planned,) = await engine.prune_spec(
        PruneSpec(threads=["a"], keep_last=4),
        plans=await engine.plan_prune_spec(PruneSpec(threads=["a"], keep_last=4)),
    )
    results = [planned] + [await engine.prune(thread, "keep_last_n", 4) for thread in ("b", "c")]
    line = [c for t, _, c, _ in rows if t == "a"]
    assert planned.deleted == [c for c in line if c in gone_of["a"]]  # as planned, in thread order
    for thread, result in zip(
        ("b", "c"), results[1:], strict=False
    ):  # (a's prune may have freed fork points)
        line = [c for t, _, c, _ in rows if t == thread]
        assert result.deleted == [c for c in line if c in set(result.deleted)], thread
    kept = {
        m.checkpoint_id: m.parent_checkpoint_id
        for t in ("a", "b", "c")
        for m in await backend.read_thread(t, 200)
    }
    assert all(p is None or p in kept or p == "ckpt-gone" for p in kept.values())


async def test_undo_refuses_when_another_thread_continues_from_what_the_op_made(backend):
    """A branch's new thread got a child in a thread of its own (another program
    branched from it): the branch's threads are as it left them, but its undo would
    leave that child without its parent: refused, naming it, nothing written."""
    engine = make_engine(backend)
    await bulk(backend, "t", 4)
    branch = await engine.branch("ckpt-t-3", "j")
    head = (await backend.read_thread(branch, 10))[-1].checkpoint_id
    async with backend.transaction() as tx:
        await tx.put(make_cp("k", 1, cid="ckpt-k-1", parent=head))
    before = await dump(backend)
    with pytest.raises(OperationError, match=r"checkpoint\(s\) ckpt-k-1 continue from what it created"):
        await engine.undo()
    assert await dump(backend) == before


async def test_prune_reparents_to_a_kept_ancestor_far_up(backend):
    """A kept checkpoint more than a thousand deleted rows below its nearest kept
    ancestor gets that ancestor as its parent (not made a root): the walk up through
    deleted rows has no length limit. Thread: root A, a chain of 1,001 rows from A, a
    sibling E of that chain (A is a fork point: kept), K at the chain's end; keep the
    last 2 (E, K): K's new parent is A."""
    from agentctl.engine import _INSERT_SQL
    from agentctl.storage.agentos.base import checkpoint_params

    chain = [f"d{i}" for i in range(1, 1002)]
    rows = [("A", None)] + [(c, "A" if i == 0 else chain[i - 1]) for i, c in enumerate(chain)]
    rows += [("E", "A"), ("K", chain[-1])]
    cps = [make_cp("t", s, cid=c, parent=p, created_at=ts(s)) for s, (c, p) in enumerate(rows, 1)]
    async with backend.transaction() as tx:
        await tx.executemany(_INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in cps])
    engine = make_engine(backend)
    plan = await engine.plan_prune("t", "keep_last_n", 2)
    assert plan.delete_count == len(chain)
    assert {k: new for k, _, new in plan.reparent} == {"K": "A"}
    await engine.prune("t", "keep_last_n", 2)
    kept = {m.checkpoint_id: m.parent_checkpoint_id for m in await backend.read_thread("t", 100)}
    assert kept == {"A": None, "E": "A", "K": "A"}
