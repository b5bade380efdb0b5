"""Invariants every format's Store keeps (agentctl.storage.contract), checked on any
database: `await check_store(store)` reads every thread through each read method and
compares them with each other.

What only some formats promise is asked for by the caller: `first_step` (every thread's
steps are first_step, first_step + 1, ... with no gap), `message_per_step` (the
checkpoint at step N shows N messages: a session store's transcript up to its N-th item)
and `linear` (default: each thread is one chain, in step order, each checkpoint the
parent of the next; without it, as in a LangGraph thread replayed from an old
checkpoint, a thread is a tree read in the writer's order, parents before children).
`check_session_store` asks for both, as the session stores (the article's, the OpenAI
Agents SDK's, ADK's) keep them."""

from __future__ import annotations

from functools import partial

import pytest

from agentctl.errors import AmbiguousReference
from agentctl.refs import resolve
from agentctl.tree import checkpoint_tree


async def check_store(
    store,
    *,
    first_step: int | None = None,
    message_per_step: bool = False,
    linear: bool = True,
    unique_ids: bool = True,
) -> None:
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
    # LangGraph: a subgraph's namespace is not listed as a thread, and is still read by
    # its address THREAD|NS like one
    addresses = await store.all_addresses() if hasattr(store, "all_addresses") else tids
    assert set(tids) <= set(addresses) and all(a in tids or "|" in a for a in addresses)
    for tid in addresses:
        s = summaries[tid] if tid in summaries else await store.thread_summary(tid)
        assert await store.thread_summary(tid) == s
        assert tid in await store.find_thread_ids(tid)
        assert tid in await store.find_thread_ids(tid[:2])
        metas = await store.read_thread(tid, 10_000)
        n = len(metas)
        total += n
        assert n == s.checkpoints == await store.count(tid)
        if n == 0:  # a thread without checkpoints yet (the article's empty session)
            assert not s.head_checkpoint_id and await store.get_latest(tid) is None
            continue
        assert s.head_step == metas[-1].step
        assert s.head_checkpoint_id == metas[-1].checkpoint_id
        steps = [m.step for m in metas]
        assert steps == sorted(steps) or not linear
        if first_step is not None:
            assert steps == list(range(first_step, first_step + n))
        assert all(m.thread_id == tid for m in metas)
        assert await store.read_thread(tid, 10_000, descending=True) == metas[::-1]
        for limit in (1, 2, 3):
            for offset in range(0, n + 1):
                assert await store.read_thread(tid, limit, offset) == metas[offset : offset + limit]
                want = metas[::-1][offset : offset + limit]
                assert await store.read_thread(tid, limit, offset, descending=True) == want
        position = {m.checkpoint_id: i for i, m in enumerate(metas)}
        for prev, m in zip([None] + metas, metas, strict=False):
            if prev is not None and linear:
                assert m.parent_checkpoint_id == prev.checkpoint_id
            elif m.parent_checkpoint_id in position:
                assert position[m.parent_checkpoint_id] < position[m.checkpoint_id]
            found = await store.get_metadata(m.checkpoint_id)
            # unique_ids=False: a format whose branch copies keep the source's ids
            # (LangGraph's): a bare id names the source thread's checkpoint, and the
            # checks by id below are about that one
            shared = not unique_ids and found is not None and found.thread_id != tid
            assert found == m or (shared and found.checkpoint_id == m.checkpoint_id)
            if steps.count(m.step) == 1:
                assert await store.at_step(tid, m.step) == m
            if shared:
                continue
            cp = await store.get(m.checkpoint_id)
            assert cp.metadata == m
            if message_per_step:
                assert len(cp.messages) == m.step
            assert m.checkpoint_id in await store.find_checkpoint_ids(m.checkpoint_id)
            children = await store.children(m.checkpoint_id)
            assert all(c.parent_checkpoint_id == m.checkpoint_id for c in children)
            in_thread = [c.checkpoint_id for c in children if c.thread_id == tid]
            nxt = position[m.checkpoint_id] + 1
            if linear:
                assert in_thread == ([metas[nxt].checkpoint_id] if nxt < n else [])
            else:
                assert sorted(in_thread) == sorted(
                    x.checkpoint_id for x in metas if x.parent_checkpoint_id == m.checkpoint_id
                )
        assert (await store.get_latest(tid)).metadata == metas[-1]
        await check_step_refs(store, tid, metas)
        assert (
            await store.at_step(tid, max(steps) + 1) is None
            and await store.at_step(tid, min(steps) - 1) is None
        )
        streamed = [cp async for cp in store.iter_checkpoints([tid])]
        assert [cp.metadata for cp in streamed] == metas
        for cp in streamed:
            same = await store.get(cp.metadata.checkpoint_id)
            assert cp.to_dict() == same.to_dict() or (not unique_ids and same.metadata.thread_id != tid)
        if unique_ids:
            await check_lineage(store, metas[-1].checkpoint_id)
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


async def check_lineage(store, checkpoint_id: str) -> None:
    """`compare`'s reads: `lineage` is the line of parents `get_metadata` walks (root
    first), and `read_contents` holds each checkpoint's messages and state as `get` has
    them, equal keys only for equal contents."""
    walked = []
    cur = await store.get_metadata(checkpoint_id)
    while cur is not None and cur.checkpoint_id not in {m.checkpoint_id for m in walked}:
        walked.append(cur)
        cur = await store.get_metadata(cur.parent_checkpoint_id) if cur.parent_checkpoint_id else None
    line = await store.lineage(checkpoint_id)
    assert [m.checkpoint_id for m in line] == [m.checkpoint_id for m in reversed(walked)]
    assert line == list(reversed(walked))
    contents = await store.read_contents(line)
    assert set(contents) == {m.checkpoint_id for m in line}
    by_key: dict = {}
    for m in line:
        cp = await store.get(m.checkpoint_id)
        c = contents[m.checkpoint_id]
        assert c.value() == (cp.messages, cp.state) and c.state() == cp.state
        if c.key is not None:
            assert by_key.setdefault(c.key, c.value()) == c.value()
    assert await store.lineage("no-such-checkpoint") == []


async def check_step_refs(store, tid: str, metas=None, max_steps: int = 200) -> None:
    """`THREAD@STEP` and `THREAD~N` resolve as the README's rule says: a step held by one
    checkpoint of the thread names it; a repeated step (forks inside the thread, as after
    a rewind that appends) names the one on the head's line of parents (the head
    included), and is ambiguous when none or several are; `~N` is the head's N-th
    ancestor inside the thread."""
    metas = metas if metas is not None else await store.read_thread(tid, 100_000)
    by_id = {m.checkpoint_id: m for m in metas}
    line: list = []
    cur = metas[-1]
    while cur is not None and cur not in line:
        line.append(cur)
        cur = by_id.get(cur.parent_checkpoint_id) if cur.parent_checkpoint_id else None
    for n, m in enumerate(line[:max_steps]):
        assert await resolve(store, f"{tid}~{n}") == m
    for step in sorted({m.step for m in metas})[:max_steps]:
        candidates = [m for m in metas if m.step == step]
        on_line = [m for m in line if m.step == step]
        want = candidates[0] if len(candidates) == 1 else on_line[0] if len(on_line) == 1 else None
        if want is not None:
            assert await resolve(store, f"{tid}@{step}") == want, (tid, step)
        else:
            with pytest.raises(AmbiguousReference) as err:
                await resolve(store, f"{tid}@{step}")
            assert all(m.checkpoint_id in str(err.value) for m in candidates[:10])


#: the session stores' promises: steps 1..N, the N-th item's checkpoint shows N messages
check_session_store = partial(check_store, first_step=1, message_per_step=True)
