"""The tree of a thread and its branches (`agentctl tree`, `agentctl log --graph`, the
TUI's tree, the library's `CheckpointEngine.get_checkpoint_tree`), built from any
format's Store."""

from __future__ import annotations

from typing import Any, NamedTuple

from agentctl.model import CheckpointMetadata
from agentctl.storage.contract import Store


class Family(NamedTuple):
    """A thread and the threads branched off it."""

    threads: list[str]  # the thread first, then its branches, breadth first
    first_rows: dict[str, CheckpointMetadata]  # a branch's first row (links to its source)


async def branch_family(store: Store, thread_id: str, max_threads: int | None = None) -> Family:
    """The thread and the threads branched off it, recursively, breadth first (a level
    in the order `store.branches_of` returns them), each once; at most `max_threads`
    threads (None: all)."""
    threads = [thread_id]
    first_rows: dict[str, CheckpointMetadata] = {}
    frontier = [thread_id]
    while frontier and (max_threads is None or len(threads) < max_threads):
        found: list[CheckpointMetadata] = []
        for meta in await store.branches_of(frontier):
            if meta.thread_id != thread_id and meta.thread_id not in first_rows:
                first_rows[meta.thread_id] = meta
                found.append(meta)
        if max_threads is not None:
            for meta in found[max_threads - len(threads) :]:
                del first_rows[meta.thread_id]
            found = found[: max_threads - len(threads)]
        frontier = [meta.thread_id for meta in found]
        threads += frontier
    return Family(threads, first_rows)


async def checkpoint_tree(store: Store, thread_id: str, limit: int | None = None) -> dict[str, Any]:
    """The thread, its branch threads (recursively) and the edges between them.

    {thread_id, total_checkpoints, threads: [{thread_id, parent_thread, branch_point,
    checkpoints, head, archive}], nodes: [{id, thread_id, step, tags, summary,
    created_at, parent_id, labels}], edges: [{from, to, kind}]}. labels: "head",
    "root", "branch-point" (a checkpoint another thread branches from, or with two or
    more children in its own thread: a fork inside the thread), "merge", "abandoned"
    (tip of a rewind's archive thread),
    "orphan" (its parent names no row). Edge kinds: "parent" (same thread), "branch"
    (into another thread), "merge" (a merged branch head into its merge checkpoint).
    `limit` keeps the newest `limit` checkpoints of each thread (None: all)."""
    b = store
    threads, first_rows = await branch_family(store, thread_id)
    metas: list[CheckpointMetadata] = []
    per_thread: dict[str, list[CheckpointMetadata]] = {}
    placed: set[str] = set()
    for thread in threads:
        if limit is None:
            # One query: pages by OFFSET would sort and skip the rows before each page
            # again (a 10,000-step thread read 25,000 rows in three pages).
            rows = await b.read_thread(thread, 2**62, 0)
        else:
            rows = list(reversed(await b.read_thread(thread, int(limit), 0, descending=True)))
        rows = await b.describe(rows)
        per_thread[thread] = rows
        # a checkpoint a branch shares with the thread it parts from (an
        # AdvancedSQLiteSession's branch, a LangGraph branch's copied chain) is one node,
        # in the thread listed first
        metas.extend(m for m in rows if m.checkpoint_id not in placed)
        placed.update(m.checkpoint_id for m in rows)
    if not metas:
        return {"thread_id": thread_id, "total_checkpoints": 0, "threads": [], "nodes": [], "edges": []}
    by_id = {m.checkpoint_id: m for m in metas}
    outside = sorted(
        {
            m.parent_checkpoint_id
            for m in metas
            if m.parent_checkpoint_id and m.parent_checkpoint_id not in by_id
        }
    )
    existing = await b.existing_checkpoint_ids(outside)
    archives = await b.archive_threads()
    heads = {t: rows[-1].checkpoint_id for t, rows in per_thread.items() if rows}
    cross_parents = {
        m.parent_checkpoint_id
        for m in metas
        if m.parent_checkpoint_id in by_id and by_id[m.parent_checkpoint_id].thread_id != m.thread_id
    }
    # a fork inside a thread (a LangGraph thread replayed from an old checkpoint, or
    # rewound): a checkpoint with two or more children in its own thread
    in_thread_children: dict[str, int] = {}
    for m in metas:
        parent = m.parent_checkpoint_id
        if parent in by_id and by_id[parent].thread_id == m.thread_id:
            in_thread_children[parent] = in_thread_children.get(parent, 0) + 1
    cross_parents |= {cid for cid, n in in_thread_children.items() if n > 1}
    nodes = []
    edges = []
    for m in metas:
        labels = []
        if heads.get(m.thread_id) == m.checkpoint_id:
            labels.append("head")
            if m.thread_id in archives or "-branch-rewind-" in m.thread_id:
                labels.append("abandoned")
        parent = m.parent_checkpoint_id
        if not parent:
            labels.append("root")
        elif parent not in by_id and parent not in existing:
            labels.append("orphan")
        if m.checkpoint_id in cross_parents:
            labels.append("branch-point")
        merged_from = [t[len("merged:") :] for t in m.tags if t.startswith("merged:")]
        if "merge" in m.tags or merged_from:
            labels.append("merge")
        nodes.append(
            {
                "id": m.checkpoint_id,
                "thread_id": m.thread_id,
                "step": m.step,
                "tags": m.tags,
                "summary": m.summary,
                "created_at": m.created_at,
                "parent_id": parent,
                "labels": labels,
            }
        )
        if parent and parent in by_id:
            kind = "parent" if by_id[parent].thread_id == m.thread_id else "branch"
            edges.append({"from": parent, "to": m.checkpoint_id, "kind": kind})
        for source in merged_from:
            if source in by_id:
                edges.append({"from": source, "to": m.checkpoint_id, "kind": "merge"})
    thread_info = []
    for thread in threads:
        rows = per_thread[thread]
        if not rows:
            continue
        first = first_rows.get(thread)
        thread_info.append(
            {
                "thread_id": thread,
                "parent_thread": by_id[first.parent_checkpoint_id].thread_id
                if first and first.parent_checkpoint_id in by_id
                else None,
                "branch_point": first.parent_checkpoint_id if first else None,
                "checkpoints": len(rows),
                "head": rows[-1].checkpoint_id,
                "archive": thread in archives or "-branch-rewind-" in thread,
            }
        )
    return {
        "thread_id": thread_id,
        "total_checkpoints": len(metas),
        "threads": thread_info,
        "nodes": nodes,
        "edges": edges,
    }
