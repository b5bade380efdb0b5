"""Merge: the nearest common ancestor through parent links across threads (a merge's
`merged:` tag counts as a second parent), the three-way plan, the merge checkpoint."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agentctl.errors import MergeConflictError, NothingToMerge, OperationError, ThreadNotFound, UsageError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos import oplog
from agentctl.storage.agentos.context import EngineContext
from agentctl.storage.agentos.rows import decode_tags
from agentctl.storage.agentos.types import MERGE_STRATEGIES, MergePlan

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Reader

logger = logging.getLogger("agentctl.engine")


class _Graph:
    """Parent links (and merges' `merged:` tags) loaded a thread at a time."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.parents: dict[str, list[str]] = {}
        self.missing: set[str] = set()

    async def parents_of(self, cid: str) -> list[str]:
        if cid in self.parents:
            return self.parents[cid]
        if cid in self.missing:
            return []
        rows = await self.reader.query("SELECT thread_id FROM checkpoints WHERE checkpoint_id = ?", cid)
        if not rows:
            self.missing.add(cid)
            return []
        for r in await self.reader.query(
            "SELECT checkpoint_id, parent_id, tags FROM checkpoints WHERE thread_id = ?", rows[0]["thread_id"]
        ):
            links = [r["parent_id"]] if r["parent_id"] else []
            links += [t[len("merged:") :] for t in decode_tags(r["tags"]) if t.startswith("merged:")]
            self.parents[r["checkpoint_id"]] = links
        return self.parents.get(cid, [])

    async def walk(self, start: str) -> AsyncIterator[str]:
        """start and its ancestors, nearest first (breadth-first); cycles end the walk."""
        seen = {start}
        queue = deque([start])
        while queue:
            cid = queue.popleft()
            yield cid
            for parent in await self.parents_of(cid):
                if parent not in seen:
                    seen.add(parent)
                    queue.append(parent)


async def merge_base(reader: Reader, a: str, b: str) -> CheckpointMetadata | None:
    """See CheckpointEngine.merge_base."""
    graph = _Graph(reader)
    ancestors = {cid async for cid in graph.walk(a)}
    async for cid in graph.walk(b):
        if cid in ancestors:
            meta = await reader.get_metadata(cid)
            if meta is not None:
                return meta
    return None


async def plan_merge(
    ctx: EngineContext,
    reader: Reader,
    branch_thread_id: str,
    into_thread_id: str,
    strategy: str,
    checkpoint_id: str | None = None,
) -> MergePlan:
    """What merging the head of `branch_thread_id` into `into_thread_id` would write,
    read through `reader` (the backend, or the merge's own transaction)."""
    from agentctl.diff import MISSING
    from agentctl.merge import Conflict, merge_messages, three_way_merge

    if strategy not in MERGE_STRATEGIES:
        raise UsageError(f"unknown merge strategy {strategy!r}; use one of: " + ", ".join(MERGE_STRATEGIES))
    if branch_thread_id == into_thread_id:
        raise UsageError("cannot merge a thread into itself")
    theirs = await reader.get_latest(branch_thread_id)
    if theirs is None:
        raise ThreadNotFound(branch_thread_id)
    ours = await reader.get_latest(into_thread_id)
    if ours is None:
        raise ThreadNotFound(into_thread_id)
    base_meta = await merge_base(reader, ours.metadata.checkpoint_id, theirs.metadata.checkpoint_id)
    base = await reader.get(base_meta.checkpoint_id) if base_meta else None
    conflicts: list[Any] = []
    resolved: list[Any] = []
    sections = {}
    for section in ("state", "tools_result"):
        result = three_way_merge(
            getattr(base, section) if base else {}, getattr(ours, section), getattr(theirs, section), strategy
        )
        sections[section] = {} if result.value is MISSING else result.value
        conflicts += [Conflict(f"/{section}{c.path}", c.base, c.ours, c.theirs) for c in result.conflicts]
        resolved += [Conflict(f"/{section}{c.path}", c.base, c.ours, c.theirs) for c in result.resolved]
    messages = merge_messages(base.messages if base else None, ours.messages, theirs.messages)
    step = await ctx.next_step(reader, into_thread_id)
    theirs_id = theirs.metadata.checkpoint_id
    if checkpoint_id is None and ctx.rng is not None:
        # A seeded engine (tests, the bundled sample's script) draws it from its rng.
        checkpoint_id = f"ckpt-{into_thread_id}-{step}-{ctx.hex(6)}"
    elif checkpoint_id is None:
        # Named after the two heads it merges: a plan (`merge --dry-run`) announces
        # the id the merge of the same heads writes later.
        import hashlib

        digest = hashlib.sha256(
            f"{ours.metadata.checkpoint_id}\0{theirs_id}".encode("utf-8", "surrogatepass")
        ).hexdigest()[:6]
        checkpoint_id = f"ckpt-{into_thread_id}-{step}-{digest}"
        if await reader.get_metadata(checkpoint_id) is not None:
            checkpoint_id = f"ckpt-{into_thread_id}-{step}-{ctx.hex(6)}"
    merged = Checkpoint(
        CheckpointMetadata(
            into_thread_id,
            checkpoint_id,
            step,
            ours.metadata.checkpoint_id,
            ctx.now(),
            ["merge", f"merged:{theirs_id}", f"branch:{branch_thread_id}"],
            f"Merge {branch_thread_id} into {into_thread_id}",
        ),
        list(messages),
        dict(sections["state"]),
        dict(sections["tools_result"]),
        ours.next_node,
    )
    # Nothing to merge: the branch's head is the common ancestor, or merging it would
    # change none of the target head's messages, state or tool results (a branch
    # with no changes of its own).
    up_to_date = (base_meta is not None and base_meta.checkpoint_id == theirs_id) or (
        not conflicts
        and merged.messages == ours.messages
        and merged.state == ours.state
        and merged.tools_result == ours.tools_result
    )
    return MergePlan(
        base_meta,
        ours,
        theirs,
        merged,
        conflicts,
        strategy,
        branch_thread_id,
        into_thread_id,
        resolved,
        up_to_date,
    )


async def merge_branch(
    ctx: EngineContext,
    branch_thread_id: str,
    into_thread_id: str,
    strategy: str = "three-way",
    *,
    checkpoint_id: str | None = None,
) -> str:
    """Merge the head of a branch thread into a thread; see CheckpointEngine.merge_branch."""
    async with ctx.write([into_thread_id, branch_thread_id]) as tx:
        plan = await plan_merge(ctx, tx, branch_thread_id, into_thread_id, strategy, checkpoint_id)
        if checkpoint_id is not None and await tx.get_metadata(checkpoint_id) is not None:
            raise OperationError(f"checkpoint {checkpoint_id!r} already exists; nothing was written")
        if plan.conflicts:
            raise MergeConflictError(
                plan.conflicts,
                f"merging {branch_thread_id} into {into_thread_id} has {len(plan.conflicts)} "
                f"conflict{'s' if len(plan.conflicts) != 1 else ''} "
                f"({', '.join(c.path for c in plan.conflicts[:5])}"
                f"{', …' if len(plan.conflicts) > 5 else ''}); nothing was written; "
                "use strategy 'ours' or 'theirs' to resolve them",
            )
        if plan.up_to_date:
            raise NothingToMerge(
                f"nothing to merge: {into_thread_id} already contains {branch_thread_id} "
                f"(head {plan.theirs.metadata.checkpoint_id}); nothing was written"
            )
        merged = plan.merged
        mid = merged.metadata.checkpoint_id
        op = await oplog.start(
            tx,
            "merge",
            f"merge {branch_thread_id} into {into_thread_id} as {mid}",
            [into_thread_id, branch_thread_id],
            {
                "branch_thread": branch_thread_id,
                "into": into_thread_id,
                "merge_checkpoint": mid,
                "theirs": plan.theirs.metadata.checkpoint_id,
                "ours": plan.ours.metadata.checkpoint_id,
                "base": plan.base.checkpoint_id if plan.base else None,
                "strategy": strategy,
                "resolved": [c.path for c in plan.resolved],
            },
            ctx.now(),
        )
        await tx.put(merged)
        await oplog.record_inserts(tx, op, [(mid, into_thread_id)])
        op_id = await oplog.finish(tx, op, [into_thread_id])
    ctx.done(op_id)
    ctx.bump(into_thread_id, merged.metadata.step)
    logger.info("Merged branch %s -> %s (merge ckpt: %s)", branch_thread_id, into_thread_id, mid)
    return mid
