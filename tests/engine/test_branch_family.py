"""One branch walk (agentctl.tree.branch_family) serves `get_checkpoint_tree` (all
threads) and `agentctl log --graph` (at most MAX_GRAPH_THREADS): the same threads in
the same order, breadth first, each branch with the first row linking it."""

from __future__ import annotations

from agentctl.cli.commands.inspect import MAX_GRAPH_THREADS, _family
from agentctl.tree import branch_family
from tests.support.engine_helpers import make_engine, snap


async def test_the_tree_and_the_log_graph_walk_the_same_branches(backend):
    engine = make_engine(backend)
    ids = await snap(engine, "t", 4)
    b1 = await engine.branch(ids[1], "one")
    b1_ids = await snap(engine, b1, 2)
    b2 = await engine.branch(b1_ids[0], "two")  # a branch of a branch
    b3 = await engine.branch(ids[2], "three")
    archive = (await engine.rewind(ids[2])).archive_thread
    await snap(engine, "other", 2)  # not a branch of t

    family = await branch_family(backend, "t")
    assert family.threads[0] == "t"
    assert set(family.threads) == {"t", b1, b2, b3, archive}
    assert len(family.threads) == len(set(family.threads))
    assert family.threads.index(b2) > family.threads.index(b1)  # breadth first
    assert family.threads.index(b2) > max(family.threads.index(b3), family.threads.index(archive))
    assert set(family.first_rows) == set(family.threads[1:])
    assert family.first_rows[b1].parent_checkpoint_id == ids[1]
    assert family.first_rows[b2].parent_checkpoint_id == b1_ids[0]

    tree = await engine.get_checkpoint_tree("t")
    assert [t["thread_id"] for t in tree["threads"]] == family.threads
    assert await _family(backend, "t") == family.threads

    capped = await branch_family(backend, "t", 3)
    assert capped.threads == family.threads[:3]
    assert set(capped.first_rows) == set(capped.threads[1:])
    assert await branch_family(backend, "t", 1) == (["t"], {})
    assert (await branch_family(backend, "nothing")).threads == ["nothing"]


async def test_log_graph_caps_the_threads(backend):
    engine = make_engine(backend)
    ids = await snap(engine, "t", 1)
    for i in range(MAX_GRAPH_THREADS + 3):
        await engine.branch(ids[0], f"b{i}")
    threads = await _family(backend, "t")
    assert len(threads) == MAX_GRAPH_THREADS and threads[0] == "t"
    assert threads == (await branch_family(backend, "t")).threads[:MAX_GRAPH_THREADS]
    tree = await engine.get_checkpoint_tree("t")
    assert len(tree["threads"]) == MAX_GRAPH_THREADS + 4
