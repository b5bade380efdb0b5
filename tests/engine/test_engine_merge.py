"""merge_branch on SQLite and Postgres: the merge base across threads, every conflict
case, the strategies, what the merge checkpoint holds, and that a conflict writes nothing."""

from __future__ import annotations

import pytest

from agentctl.diff import MISSING
from agentctl.errors import (
    ExitCode,
    MergeConflictError,
    NothingToMerge,
    OperationError,
    ThreadNotFound,
    UsageError,
)
from tests.support.engine_helpers import dump, make_engine, snap
from tests.support.helpers import make_cp


def msg(text: str) -> dict:
    return {"role": "user", "content": text}


async def fork(
    engine, base_state, ours_state, theirs_state, base_tools=None, ours_tools=None, theirs_tools=None
):
    """A thread "main" with a base checkpoint, a branch from it; each side then writes
    one checkpoint with the given state and tools. Returns (base id, branch thread)."""
    base = await engine.snapshot("main", [msg("base")], base_state, base_tools or {})
    branch = await engine.branch(base, "side")
    await engine.snapshot(
        "main", [msg("base"), msg("ours")], ours_state, base_tools if ours_tools is None else ours_tools
    )
    await engine.snapshot(
        branch,
        [msg("base"), msg("theirs")],
        theirs_state,
        base_tools if theirs_tools is None else theirs_tools,
    )
    return base, branch


async def test_clean_merge_writes_the_merge_checkpoint(backend, engine):
    base, branch = await fork(
        engine,
        {"a": 1, "b": {"x": 1, "y": 1}, "same": 0},
        {"a": 2, "b": {"x": 2, "y": 1}, "same": 5, "ours_only": True},
        {"a": 1, "b": {"x": 1, "y": 3}, "same": 5, "theirs_only": [1]},
        {"t": 1},
        {"t": 1, "o": 1},
        {"t": 2},
    )
    ours = await backend.get_latest("main")
    theirs = await backend.get_latest(branch)
    plan = await engine.plan_merge(branch, "main")
    assert plan.base.checkpoint_id == base and plan.conflicts == [] and not plan.up_to_date
    assert plan.ours.metadata.checkpoint_id == ours.metadata.checkpoint_id
    assert plan.theirs.metadata.checkpoint_id == theirs.metadata.checkpoint_id
    mid = await engine.merge_branch(branch, "main")
    merged = await backend.get(mid)
    assert merged.state == {"a": 2, "b": {"x": 2, "y": 3}, "same": 5, "ours_only": True, "theirs_only": [1]}
    assert merged.tools_result == {"t": 2, "o": 1}
    assert merged.messages == [msg("base"), msg("ours"), msg("theirs")]
    meta = merged.metadata
    assert meta.thread_id == "main" and meta.step == ours.metadata.step + 1
    assert meta.parent_checkpoint_id == ours.metadata.checkpoint_id
    assert meta.tags == ["merge", f"merged:{theirs.metadata.checkpoint_id}", f"branch:{branch}"]
    assert mid.startswith(f"ckpt-main-{meta.step}-")
    assert (await backend.get_latest("main")).metadata.checkpoint_id == mid
    assert plan.merged.state == merged.state and plan.merged.messages == merged.messages
    # the tree draws the merge edge
    tree = await engine.get_checkpoint_tree("main")
    assert {"from": theirs.metadata.checkpoint_id, "to": mid, "kind": "merge"} in tree["edges"]
    assert "merge" in next(n for n in tree["nodes"] if n["id"] == mid)["labels"]
    # undo removes exactly the merge checkpoint
    await engine.undo()
    assert (await backend.get_latest("main")).metadata.checkpoint_id == ours.metadata.checkpoint_id


CONFLICTS = [
    # (name, base, ours, theirs, conflict path, base, ours, theirs at that path
    #  [, (state merged with strategy "ours", with "theirs")])
    ("both changed", {"k": 1}, {"k": 2}, {"k": 3}, "/state/k", 1, 2, 3),
    ("deleted vs changed", {"k": 1, "z": 0}, {"z": 0}, {"k": 3, "z": 0}, "/state/k", 1, MISSING, 3),
    ("changed vs deleted", {"k": 1}, {"k": 2}, {}, "/state/k", 1, 2, MISSING),
    ("type change", {"k": {"x": 1}}, {"k": [1]}, {"k": {"x": 2}}, "/state/k", {"x": 1}, [1], {"x": 2}),
    ("scalar to object", {"k": 1}, {"k": "1"}, {"k": {"v": 1}}, "/state/k", 1, "1", {"v": 1}),
    (
        "nested",
        {"a": {"b": {"c": 1, "d": 1}}},
        {"a": {"b": {"c": 2, "d": 1}}},
        {"a": {"b": {"c": 3, "d": 2}}},
        "/state/a/b/c",
        1,
        2,
        3,
        # d changed on one side only: it merges whatever the strategy
        ({"a": {"b": {"c": 2, "d": 2}}}, {"a": {"b": {"c": 3, "d": 2}}}),
    ),
    ("both added", {}, {"new": 1}, {"new": 2}, "/state/new", MISSING, 1, 2),
    ("list", {"l": [1, 2]}, {"l": [1, 2, 3]}, {"l": [0, 1, 2]}, "/state/l", [1, 2], [1, 2, 3], [0, 1, 2]),
    ("escaped key", {"a/b": {"~": 1}}, {"a/b": {"~": 2}}, {"a/b": {"~": 3}}, "/state/a~1b/~0", 1, 2, 3),
]


@pytest.mark.parametrize("case", CONFLICTS, ids=[c[0] for c in CONFLICTS])
async def test_conflicts_raise_and_write_nothing(backend, engine, case):
    _, base, ours, theirs, path, b, o, t = case[:8]
    want_ours, want_theirs = case[8] if len(case) > 8 else (ours, theirs)
    _, branch = await fork(engine, base, ours, theirs)
    before = await dump(backend)
    with pytest.raises(MergeConflictError) as info:
        await engine.merge_branch(branch, "main")
    err = info.value
    assert err.exit_code == ExitCode.CONFLICT == 4
    assert [(c.path, c.base, c.ours, c.theirs) for c in err.conflicts] == [(path, b, o, t)]
    assert path in str(err) and "nothing was written" in str(err)
    assert await dump(backend) == before  # the op log included
    plan = await engine.plan_merge(branch, "main")
    assert [c.path for c in plan.conflicts] == [path]
    # the strategies resolve it, taking that side's value (or its deletion)
    mid = await engine.merge_branch(branch, "main", strategy="ours")
    assert (await backend.get(mid)).state == want_ours
    await engine.undo()
    mid = await engine.merge_branch(branch, "main", strategy="theirs")
    merged = await backend.get(mid)
    assert merged.state == want_theirs
    assert (await engine.oplog())[0].details["resolved"] == [path]


async def test_conflicts_in_tools_result_and_several_at_once(backend, engine):
    _, branch = await fork(
        engine,
        {"a": 1, "b": 1},
        {"a": 2, "b": 2},
        {"a": 3, "b": 3},
        {"run": {"code": 0}},
        {"run": {"code": 1}},
        {"run": {"code": 2}},
    )
    with pytest.raises(MergeConflictError) as info:
        await engine.merge_branch(branch, "main")
    assert [c.path for c in info.value.conflicts] == ["/state/a", "/state/b", "/tools_result/run/code"]
    assert info.value.conflicts[0].to_dict()["ours"] == 2


async def test_merge_base_across_threads_and_repeated_merges(backend, engine):
    root = await engine.snapshot("main", [msg("r")], {"n": 0}, {})
    b1 = await engine.branch(root, "one")
    b1_head = await engine.snapshot(b1, [msg("r"), msg("b1")], {"n": 0, "b1": 1}, {})
    b2 = await engine.branch(b1_head, "two")  # a branch of the branch
    await engine.snapshot(b2, [msg("r"), msg("b1"), msg("b2")], {"n": 0, "b1": 1, "b2": 2}, {})
    await engine.snapshot("main", [msg("r"), msg("m")], {"n": 1}, {})
    plan = await engine.plan_merge(b2, "main")
    assert plan.base.checkpoint_id == root
    mid = await engine.merge_branch(b2, "main")
    merged = await backend.get(mid)
    assert merged.state == {"n": 1, "b1": 1, "b2": 2}
    assert merged.messages == [msg("r"), msg("m"), msg("b1"), msg("b2")]
    # merging again: nothing new
    with pytest.raises(OperationError, match="nothing to merge"):
        await engine.merge_branch(b2, "main")
    assert (await engine.plan_merge(b2, "main")).up_to_date
    # the branch goes on: only what is new since the last merge comes over
    await engine.snapshot(
        b2, [msg("r"), msg("b1"), msg("b2"), msg("b2 again")], {"n": 0, "b1": 1, "b2": 3}, {}
    )
    plan = await engine.plan_merge(b2, "main")
    assert plan.base.thread_id == b2 and plan.conflicts == []
    mid2 = await engine.merge_branch(b2, "main")
    again = await backend.get(mid2)
    assert again.messages == [msg("r"), msg("m"), msg("b1"), msg("b2"), msg("b2 again")]
    assert again.state == {"n": 1, "b1": 1, "b2": 3}
    # merging the target into the branch fast-forwards to the merged content
    mid3 = await engine.merge_branch("main", b2)
    assert (await backend.get(mid3)).state == again.state


async def test_merge_without_common_ancestor_and_broken_links(backend, engine):
    # parent links that loop, and a parent that no longer exists: no hang, no crash
    await backend.put(make_cp("x", 1, cid="x1", parent="x2", state={"a": 1, "x": 1}))
    await backend.put(make_cp("x", 2, cid="x2", parent="x1", state={"a": 1, "x": 2}))
    await backend.put(make_cp("y", 1, cid="y1", parent="gone", state={"a": 1, "y": 1}, messages=[msg("y")]))
    await backend.put(
        make_cp("y", 2, cid="y2", parent="y2", state={"a": 1, "y": 2}, messages=[msg("y"), msg("y2")])
    )
    assert await engine.merge_base("x2", "y2") is None
    plan = await engine.plan_merge("y", "x")
    assert plan.base is None and plan.conflicts == []
    # without a base, keys both sides added alike merge; all of theirs' messages come over
    mid = await engine.merge_branch("y", "x", strategy="ours")
    merged = await backend.get(mid)
    assert merged.state == {"a": 1, "x": 2, "y": 2}
    assert merged.messages == [msg("m2"), msg("y"), msg("y2")]


async def test_merge_when_the_common_ancestor_was_deleted(backend, engine):
    base, branch = await fork(engine, {"a": 1}, {"a": 1, "o": 1}, {"a": 1, "t": 1})
    # another program deleted the branch point (agentctl's prune keeps fork points)
    async with backend.transaction() as tx:
        await tx.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", base)
    assert (
        await engine.merge_base(
            (await backend.get_latest("main")).metadata.checkpoint_id,
            (await backend.get_latest(branch)).metadata.checkpoint_id,
        )
        is None
    )
    plan = await engine.plan_merge(branch, "main")
    assert plan.base is None and plan.conflicts == []
    assert plan.merged.state == {"a": 1, "o": 1, "t": 1}


async def test_merge_errors(backend, engine):
    await engine.snapshot("main", [], {}, {})
    with pytest.raises(ThreadNotFound, match="not found"):
        await engine.merge_branch("nope", "main")
    with pytest.raises(ThreadNotFound):
        await engine.plan_merge("main", "nope")
    with pytest.raises(UsageError):
        await engine.merge_branch("main", "main")
    with pytest.raises(UsageError, match="strategy"):
        await engine.merge_branch("main", "other", strategy="union")


async def test_merge_uses_the_checkpoint_id_its_plan_announced(backend):
    """issue 14: the id `merge --dry-run` shows is the id the merge writes."""
    engine = make_engine(backend)
    [root] = await snap(engine, "main", 1)
    b = await engine.branch(root, "b")
    await engine.snapshot(b, [], {"i": 0, "thread": "main", "new": 1}, {})
    plan = await engine.plan_merge(b, "main")
    announced = plan.merged.metadata.checkpoint_id
    assert not plan.up_to_date
    assert await engine.merge_branch(b, "main", checkpoint_id=announced) == announced
    assert (await backend.get(announced)).state["new"] == 1


async def test_merging_a_branch_without_changes_writes_nothing(backend):
    """A branch that changed nothing (just created, or changes the target has too):
    the plan says up to date and the merge refuses, "nothing to merge" (NothingToMerge:
    the CLI says "already contains" and exits 0 when another writer got there between
    its plan and its write), no row, no op."""
    engine = make_engine(backend)
    [root] = await snap(engine, "main", 1)
    b = await engine.branch(root, "idle")
    assert (await engine.plan_merge(b, "main")).up_to_date
    ops = await engine.oplog()
    with pytest.raises(NothingToMerge, match="nothing to merge"):
        await engine.merge_branch(b, "main")
    assert await backend.count("main") == 1 and await engine.oplog() == ops
