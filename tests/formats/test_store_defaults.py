"""The Store contract's defaults (agentctl/storage/contract.py), built on its primitives
(`thread_summaries`, `read_thread`, `get`, `branches_of`), so that a new store writes
fewer methods: on each format's bundled sample (written by the format's own program),
every default answers as the store's own, faster method does, thread by thread and
checkpoint by checkpoint."""

from __future__ import annotations

import pytest

from agentctl.storage import open_store
from agentctl.storage.contract import Store
from tests.support.contract_formats import CASES, SAMPLED, copy_sample


def _key(meta):
    return (
        None if meta is None else (meta.thread_id, meta.checkpoint_id, meta.step, meta.parent_checkpoint_id)
    )


@pytest.mark.parametrize("name", sorted(SAMPLED))
async def test_the_defaults_answer_as_each_store_does(name, tmp_path):
    db = copy_sample(CASES[name].sample, tmp_path / "db.sqlite")
    async with open_store(str(db)) as store:
        threads = [t.thread_id for t in await store.thread_summaries(limit=1000)]
        assert threads
        for tid in threads + ["no-such-thread"]:
            mine, theirs = await Store.thread_summary(store, tid), await store.thread_summary(tid)
            assert (mine and mine.to_dict()) == (theirs and theirs.to_dict()), tid
            listed = [
                t for t in await store.find_thread_ids(tid[:3], 1000) if t in threads
            ]  # (not subgraphs')
            assert await Store.find_thread_ids(store, tid[:3], 5) == listed[:5]
            latest, own = await Store.get_latest(store, tid), await store.get_latest(tid)
            assert _key(latest and latest.metadata) == _key(own and own.metadata), tid
            metas = await store.read_thread(tid, limit=60)
            for meta in metas:
                assert _key(await Store.get_metadata(store, meta.checkpoint_id)) == _key(
                    await store.get_metadata(meta.checkpoint_id)
                )
                assert sorted(map(_key, await Store.children(store, meta.checkpoint_id))) == sorted(
                    map(_key, await store.children(meta.checkpoint_id))
                ), meta.checkpoint_id
            for step in sorted({m.step for m in metas})[:20] + [10**6]:
                assert _key(await Store.at_step(store, tid, step)) == _key(await store.at_step(tid, step))
