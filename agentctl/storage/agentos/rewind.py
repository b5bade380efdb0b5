"""Rewind (the later checkpoints move to an archive thread, or with hard=True into the
trash), time travel to a step, and branch (a new thread forked from a checkpoint)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos import delta, oplog
from agentctl.storage.agentos.context import (
    AFTER,
    EngineContext,
    fresh_thread,
    require_meta,
    thread_count,
    thread_exists,
)
from agentctl.storage.agentos.rows import META_COLUMNS, THREAD_ORDER_ASC, THREAD_ORDER_DESC, row_to_metadata
from agentctl.storage.agentos.types import RewindPlan, TimeTravelResult
from agentctl.storage.results import hashed_names

logger = logging.getLogger("agentctl.engine")


def archive_names(thread_id: str, checkpoint_id: str) -> Callable[[], str]:
    """The archive thread names of a rewind to `checkpoint_id`:
    `{thread}-branch-rewind-{4 hex}`, from a hash of the thread and the target."""
    return hashed_names(f"{thread_id}-branch-rewind-", f"{thread_id}\0{checkpoint_id}")


async def plan_rewind(ctx: EngineContext, checkpoint_id: str, hard: bool = False) -> RewindPlan:
    """What `rewind` would do (nothing is written)."""
    b = ctx.backend
    target = await require_meta(b, checkpoint_id)
    rows = await b.query(
        f"SELECT {META_COLUMNS} FROM checkpoints WHERE {AFTER} ORDER BY {THREAD_ORDER_ASC}",
        target.thread_id,
        checkpoint_id,
    )
    moved = [row_to_metadata(r) for r in rows]
    archive = None
    if moved and not hard:
        archive = await fresh_thread(b, archive_names(target.thread_id, target.checkpoint_id))
    return RewindPlan(target, target.thread_id, moved, archive, hard)


async def rewind(
    ctx: EngineContext, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
) -> TimeTravelResult:
    """Make `checkpoint_id` the head of its thread again; see CheckpointEngine.rewind."""
    meta = await require_meta(ctx.backend, checkpoint_id)
    thread = meta.thread_id
    archive = None if hard else archive_thread
    if archive is not None and (not archive.strip() or archive == thread):
        raise UsageError(f"invalid archive thread name {archive_thread!r}")
    if not hard and archive is None:
        archive = await fresh_thread(ctx.backend, archive_names(thread, meta.checkpoint_id))
    async with ctx.write([thread] + ([archive] if archive else [])) as tx:
        target = await require_meta(tx, checkpoint_id)
        if target.thread_id != thread:
            raise OperationError(f"checkpoint {checkpoint_id!r} moved to another thread meanwhile; retry")
        before = await thread_count(tx, thread)
        moved = [
            r["checkpoint_id"]
            for r in await tx.fetch(
                f"SELECT checkpoint_id FROM checkpoints WHERE {AFTER} ORDER BY {THREAD_ORDER_ASC}",
                thread,
                checkpoint_id,
            )
        ]
        full = await tx.get(checkpoint_id)
        if full is None:  # read just above in this transaction
            raise CheckpointNotFound(checkpoint_id)
        if not moved:
            result = TimeTravelResult(full, thread, 0, before)
        elif hard:
            op = await oplog.start(
                tx,
                "rewind",
                f"hard rewind {thread} to step {target.step} "
                f"({checkpoint_id}): deleted {len(moved)} checkpoint(s)",
                [thread],
                {"target": checkpoint_id, "thread": thread, "hard": True, "count": len(moved)},
                ctx.now(),
            )
            await delta.before_delete(tx, thread, AFTER, [thread, checkpoint_id], op)
            await oplog.trash(tx, op, AFTER, thread, checkpoint_id)
            op_id = await oplog.finish(tx, op, [thread])
            result = TimeTravelResult(full, thread, len(moved), before, op_id=op_id, deleted=moved)
        else:
            assert archive is not None  # not hard: given, or made above
            if await thread_exists(tx, archive):
                raise UsageError(f"thread {archive!r} already exists; choose another archive name")
            op = await oplog.start(
                tx,
                "rewind",
                f"rewind {thread} to step {target.step} ({checkpoint_id}): "
                f"moved {len(moved)} checkpoint(s) to {archive}",
                [thread, archive],
                {
                    "target": checkpoint_id,
                    "thread": thread,
                    "hard": False,
                    "archive_thread": archive,
                    "count": len(moved),
                },
                ctx.now(),
            )
            # the moved rows as they were, then as they are (all of the archive thread)
            await oplog.set_aside(tx, op, AFTER, [thread, checkpoint_id], "before")
            await delta.before_move(tx, thread, AFTER, [thread, checkpoint_id], op)
            await tx.execute(
                f"UPDATE checkpoints SET thread_id = ? WHERE {AFTER}", archive, thread, checkpoint_id
            )
            # The abandoned future hangs off the target: a first row without a
            # parent gets the target as parent (undo restores NULL).
            await tx.execute(
                "UPDATE checkpoints SET parent_id = ? WHERE checkpoint_id = ? "
                "AND (parent_id IS NULL OR parent_id = '')",
                checkpoint_id,
                moved[0],
            )
            await oplog.set_aside(tx, op, "thread_id = ?", [archive], "after")
            op_id = await oplog.finish(tx, op, [thread, archive])
            result = TimeTravelResult(
                full, thread, len(moved), before, op_id=op_id, archive_thread=archive, moved=moved
            )
    ctx.done(result.op_id)
    ctx.counters[thread] = target.step
    logger.info(
        "Time travel: rewound %s to %s (step %s), set aside %d checkpoint(s)",
        thread,
        checkpoint_id,
        target.step,
        len(moved),
    )
    return result


async def time_travel_to_step(ctx: EngineContext, thread_id: str, step: int) -> TimeTravelResult | None:
    """Rewind to the last checkpoint of the thread whose step is <= step (None if none)."""
    rows = await ctx.backend.query(
        f"SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND step <= ? "
        f"ORDER BY {THREAD_ORDER_DESC} LIMIT 1",
        thread_id,
        step,
    )
    if not rows:
        return None
    return await rewind(ctx, rows[0]["checkpoint_id"])


async def branch(ctx: EngineContext, from_checkpoint_id: str, branch_name: str) -> str:
    """Fork a new thread from a checkpoint; return the new thread id (see
    CheckpointEngine.branch)."""
    from agentctl.refs import check_branch_name

    name = check_branch_name(branch_name)
    source_meta = await require_meta(ctx.backend, from_checkpoint_id)
    thread = await fresh_thread(ctx.backend, lambda: f"{source_meta.thread_id}-branch-{name}-{ctx.hex(4)}")
    async with ctx.write([thread]) as tx:
        source = await tx.get(from_checkpoint_id)
        if source is None:
            raise CheckpointNotFound(from_checkpoint_id)
        if await thread_exists(tx, thread):
            raise OperationError(f"thread {thread!r} appeared meanwhile; retry")
        cid = f"ckpt-{thread}-0"
        if await tx.get_metadata(cid) is not None:
            raise OperationError(f"checkpoint {cid!r} already exists")
        cp = Checkpoint(
            CheckpointMetadata(
                thread,
                cid,
                0,
                from_checkpoint_id,
                ctx.now(),
                ["branch", name],
                f"Branch '{name}' from {from_checkpoint_id}",
            ),
            list(source.messages),
            dict(source.state),
            dict(source.tools_result),
            source.next_node,
        )
        op = await oplog.start(
            tx,
            "branch",
            f"branch {thread} from {from_checkpoint_id}",
            [thread, source.metadata.thread_id],
            {"from": from_checkpoint_id, "branch_thread": thread, "name": name},
            ctx.now(),
        )
        await tx.put(cp)
        await oplog.record_inserts(tx, op, [(cid, thread)])
        op_id = await oplog.finish(tx, op, [thread])
    ctx.done(op_id)
    ctx.counters[thread] = 0
    logger.info("Created branch: %s from %s", thread, from_checkpoint_id)
    return thread
