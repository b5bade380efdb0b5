"""delta_snapshots on SQLite and Postgres: rows stored as patches read back full through
every read of agentctl, a foreign reader sees an explicit placeholder, and prune, GC,
rewind, delete and undo keep every delta readable."""

from __future__ import annotations

import json

import pytest

from agentctl.errors import CorruptRowError
from agentctl.storage.agentos.base import DELTA_MARKER, DELTA_TAG, loads
from tests.support.engine_helpers import make_engine


def content(k: int) -> tuple[list, dict, dict]:
    """A growing run: each step adds a long message and a note."""
    messages = [{"role": "assistant", "content": f"step {i}: " + "lorem ipsum " * 20} for i in range(k + 6)]
    state = {"notes": [f"note {i} " * 10 for i in range(k + 6)], "step": k, "nested": {"k": k % 3}}
    return messages, state, {"last": {"i": k}}


async def write(engine, thread: str, n: int, start: int = 0) -> dict[str, tuple]:
    out = {}
    for k in range(start, start + n):
        messages, state, tools = content(k)
        cid = await engine.snapshot(thread, messages, state, tools, trigger="tool_call")
        out[cid] = (messages, state, tools)
    return out


async def raw(backend, cid: str) -> dict:
    row = (
        await backend.query(
            "SELECT tags, messages_blob, state_blob, tools_blob FROM checkpoints WHERE checkpoint_id = ?", cid
        )
    )[0]
    return {k: loads(v) for k, v in row.items()}


async def check_full(backend, written: dict[str, tuple]) -> None:
    for cid, (messages, state, tools) in written.items():
        cp = await backend.get(cid)
        assert (cp.messages, cp.state, cp.tools_result) == (messages, state, tools), cid
        assert cp.metadata.tags == ["tool_call"]


async def test_delta_rows_read_back_full(backend):
    engine = make_engine(backend, delta_snapshots=True, delta_keyframe_every=4)
    written = await write(engine, "t", 10)
    ids = list(written)
    kinds = []
    for cid in ids:
        r = await raw(backend, cid)
        kinds.append("delta" if DELTA_MARKER in r["state_blob"] else "full")
    # a keyframe, then deltas against it until the keyframe interval
    assert kinds == ["full", "delta", "delta", "delta", "full", "delta", "delta", "delta", "full", "delta"]
    await check_full(backend, written)
    head = await backend.get_latest("t")
    assert head.metadata.checkpoint_id == ids[-1] and head.state == written[ids[-1]][1]
    streamed = {cp.metadata.checkpoint_id: cp async for cp in backend.iter_checkpoints(["t"], batch=3)}
    assert {c: (cp.messages, cp.state, cp.tools_result) for c, cp in streamed.items()} == written
    async with backend.transaction() as tx:  # reads inside a write transaction too
        assert (await tx.get(ids[2])).state == written[ids[2]][1]
    assert [m.tags for m in await backend.read_thread("t")] == [["tool_call"]] * 10
    # the delta rows are smaller
    sizes = {c: len(json.dumps(await raw(backend, c))) for c in ids[:2]}
    assert sizes[ids[1]] * 2 < sizes[ids[0]]


async def test_a_foreign_reader_sees_a_placeholder_not_a_wrong_state(backend):
    engine = make_engine(backend, delta_snapshots=True)
    ids = list(await write(engine, "t", 3))
    r = await raw(backend, ids[2])
    assert r["tags"] == ["tool_call", DELTA_TAG + ids[0]]
    assert len(r["messages_blob"]) == 1 and "agentctl delta snapshot" in r["messages_blob"][0]["content"]
    assert ids[0] in r["messages_blob"][0]["content"]
    assert list(r["state_blob"]) == [DELTA_MARKER] and r["state_blob"][DELTA_MARKER]["base"] == ids[0]
    assert r["tools_blob"] == {DELTA_MARKER: "see state_blob"}
    # a small snapshot is not worth a delta: stored full
    small = await engine.snapshot("s", [], {"a": 1}, {})
    small2 = await engine.snapshot("s", [], {"a": 2}, {})
    assert DELTA_MARKER not in (await raw(backend, small2))["state_blob"] and small


async def test_delta_is_off_by_default(backend):
    engine = make_engine(backend)
    ids = list(await write(engine, "t", 3))
    assert DELTA_MARKER not in (await raw(backend, ids[2]))["state_blob"]


async def test_prune_rewind_delete_and_undo_keep_deltas_readable(backend):
    engine = make_engine(backend, delta_snapshots=True, delta_keyframe_every=8)
    written = await write(engine, "t", 12)
    ids = list(written)
    # the prune deletes the keyframe ids[0]: the surviving deltas are rewritten full
    res = await engine.prune("t", "keep_last_n", 5)
    assert res.deleted == ids[:7]
    survivors = {c: written[c] for c in ids[7:]}
    await check_full(backend, survivors)
    assert DELTA_MARKER not in (await raw(backend, ids[7]))["state_blob"]
    await engine.undo()
    await check_full(backend, written)
    # a rewind separates deltas from their base: the moved ones are stored full
    r = await engine.rewind(ids[3])
    await check_full(backend, written)
    assert DELTA_MARKER not in (await raw(backend, ids[4]))["state_blob"]
    more = await write(engine, "t", 3, start=20)  # continues with deltas after the target
    await check_full(backend, more)
    await engine.rewind(ids[1], hard=True)
    await check_full(backend, {c: written[c] for c in ids[:2]})
    await check_full(backend, {c: written[c] for c in ids[4:]})  # the archive thread
    await engine.undo()
    await check_full(backend, more)
    await engine.delete_thread(r.archive_thread)
    await engine.undo()
    await check_full(backend, written)


async def test_a_prune_given_its_plan_rewrites_the_deltas_it_would_orphan(backend):
    """The plan of a prune notes that a delta stays (read with the rows that stay); the
    prune given that plan reuses it and makes full the deltas whose keyframe it deletes."""
    from agentctl.storage import PruneSpec

    engine = make_engine(backend, delta_snapshots=True, delta_keyframe_every=8)
    written = await write(engine, "t", 12)
    ids = list(written)
    spec = PruneSpec(threads=["t"], keep_last=5)
    (plan,) = await engine.plan_prune_spec(spec)
    assert plan.kept_delta and plan.delete_count == 7
    (res,) = await engine.prune_spec(spec, plans=[plan])
    assert res.deleted == ids[:7]
    await check_full(backend, {c: written[c] for c in ids[7:]})
    assert DELTA_MARKER not in (await raw(backend, ids[7]))["state_blob"]


async def test_auto_gc_with_deltas(backend):
    engine = make_engine(backend, delta_snapshots=True, gc_policy="keep_last_n", gc_param=3)
    written = await write(engine, "t", 9)
    kept = list(written)[-3:]
    assert [m.checkpoint_id for m in await backend.read_thread("t")] == kept
    await check_full(backend, {c: written[c] for c in kept})


async def test_a_missing_base_reads_as_a_corrupt_row(backend):
    engine = make_engine(backend, delta_snapshots=True)
    ids = list(await write(engine, "t", 3))
    async with backend.transaction() as tx:  # a foreign writer deletes the keyframe
        await tx.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", ids[0])
    with pytest.raises(CorruptRowError, match="no longer exists"):
        await backend.get(ids[1])
    items = [item async for item in backend.iter_checkpoints(["t"])]
    assert all(isinstance(i, CorruptRowError) for i in items)
    assert ids[0] in str(items[0])


async def test_auto_gc_of_a_plain_engine_on_a_thread_with_deltas(backend):
    """An engine without delta snapshots meeting delta rows (written by another engine)
    when its keep_last_n deletes their base: they are rewritten full, nothing is lost."""
    written = await write(make_engine(backend, delta_snapshots=True), "t", 6)
    plain = make_engine(backend, gc_policy="keep_last_n", gc_param=4)
    written.update(await write(plain, "t", 3, start=6))
    kept = list(written)[-4:]
    assert [m.checkpoint_id for m in await backend.read_thread("t")] == kept
    await check_full(backend, {c: written[c] for c in kept})


@pytest.mark.parametrize("writer", ["same backend", "another connection"])
async def test_deltas_written_after_plain_snapshots_are_kept_whole_by_their_gc(backend, db_url, writer):
    """A plain engine with keep_last_n that has already snapshotted the thread (and found
    no delta rows in it) still notices delta rows added later, by an engine on the same
    backend or by another connection, before its GC deletes their base."""
    from agentctl.backends import make_backend

    plain = make_engine(backend, gc_policy="keep_last_n", gc_param=4)
    written = await write(plain, "t", 6)
    other = backend if writer == "same backend" else make_backend(db_url, readonly=False, create=False)
    try:
        written.update(await write(make_engine(other, seed=2, delta_snapshots=True), "t", 3, start=6))
    finally:
        if other is not backend:
            await other.close()
    written.update(await write(plain, "t", 2, start=9))
    kept = list(written)[-4:]
    assert [m.checkpoint_id for m in await backend.read_thread("t")] == kept
    await check_full(backend, {c: written[c] for c in kept})
