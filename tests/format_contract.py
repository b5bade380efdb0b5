"""Invariants every format's Store keeps (agentctl.storage.contract), checked on any
database: `await check_store(store)` reads every thread through each read method and
compares them with each other."""

from __future__ import annotations

from agentctl.tree import checkpoint_tree


async def check_store(store) -> None:
    tids = await store.all_thread_ids()
    assert tids == sorted(tids) and await store.count_threads() == len(tids)
    total = 0
    summaries = {s.thread_id: s for s in await store.thread_summaries(10_000, 0, "thread", False)}
    assert list(summaries) == tids
    for sort in ("updated", "thread", "checkpoints", "step", "created"):
        for descending in (True, False):
            page = await store.thread_summaries(10_000, 0, sort, descending)
            assert sorted(t.thread_id for t in page) == tids, sort
            paged = []
            for offset in range(0, len(tids), 2):
                paged.extend(await store.thread_summaries(2, offset, sort, descending))
            assert [t.thread_id for t in paged] == [t.thread_id for t in page], sort
    counts = [t.checkpoints for t in await store.thread_summaries(10_000, 0, "checkpoints", True)]
    assert counts == sorted(counts, reverse=True)
    for tid in tids:
        s = summaries[tid]
        assert await store.thread_summary(tid) == s
        assert tid in await store.find_thread_ids(tid)
        assert tid in await store.find_thread_ids(tid[:2])
        metas = await store.read_thread(tid, 10_000)
        n = len(metas)
        total += n
        assert n == s.checkpoints == await store.count(tid) and s.head_step == metas[-1].step
        assert s.head_checkpoint_id == metas[-1].checkpoint_id
        assert [m.step for m in metas] == list(range(1, n + 1))
        assert all(m.thread_id == tid for m in metas)
        assert await store.read_thread(tid, 10_000, descending=True) == metas[::-1]
        for limit in (1, 2, 3):
            for offset in range(0, n + 1):
                assert await store.read_thread(tid, limit, offset) == metas[offset:offset + limit]
                want = metas[::-1][offset:offset + limit]
                assert await store.read_thread(tid, limit, offset, descending=True) == want
        for prev, m in zip([None] + metas, metas):
            if prev is not None:
                assert m.parent_checkpoint_id == prev.checkpoint_id
            assert await store.get_metadata(m.checkpoint_id) == m
            assert await store.at_step(tid, m.step) == m
            cp = await store.get(m.checkpoint_id)
            assert cp.metadata == m and len(cp.messages) == m.step
            assert m.checkpoint_id in await store.find_checkpoint_ids(m.checkpoint_id)
            children = await store.children(m.checkpoint_id)
            if m.step < n:
                assert [c.checkpoint_id for c in children] == [metas[m.step].checkpoint_id]
        assert (await store.get_latest(tid)).metadata == metas[-1]
        assert await store.at_step(tid, n + 1) is None and await store.at_step(tid, 0) is None
        streamed = [cp async for cp in store.iter_checkpoints([tid])]
        assert [cp.metadata for cp in streamed] == metas
        for cp in streamed:
            assert cp.to_dict() == (await store.get(cp.metadata.checkpoint_id)).to_dict()
        tree = await checkpoint_tree(store, tid)
        assert tree["total_checkpoints"] >= n
        token = await store.change_token(tid)
        assert token == await store.change_token(tid)
    assert await store.count() == total
    assert await store.get("no-such-checkpoint") is None
    assert await store.get_metadata("no-such-checkpoint") is None
    assert await store.thread_summary("no/such/thread") is None
    assert await store.read_thread("no/such/thread") == []
    assert await store.find_thread_ids("zzz-no-such") == []
