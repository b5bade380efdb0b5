"""Undo (revert an operation exactly) and purge (free the trash), over agentctl.storage.agentos.oplog."""

from __future__ import annotations

import logging
from typing import Sequence

from agentctl.storage.agentos import oplog
from agentctl.storage.agentos.context import EngineContext
from agentctl.storage.agentos.oplog import OpResult, PurgeResult
from agentctl.errors import DatabaseBusy, NotFoundError, OperationError

logger = logging.getLogger("agentctl.engine")


async def undo(ctx: EngineContext, op_id: int | None = None,
               threads: Sequence[str] | None = None) -> OpResult:
    """Revert an operation exactly (None: the last one not undone). `threads`: of a
    prune, restore those threads alone (the op stays undoable for the others)."""
    b = ctx.backend
    if op_id is None:
        op_id = await oplog.last_undoable(b)
        if op_id is None:
            raise OperationError("nothing to undo: no operation recorded that is not undone")
    elif await oplog.get_op(b, int(op_id)) is None:
        raise NotFoundError(f"operation {op_id} not found")
    op_id = int(op_id)
    first = await oplog.get_op(b, op_id)
    assert first is not None
    left = [t for t in await oplog.changed_threads(b, op_id) if t not in oplog.restored_threads(first)]
    only = oplog.only_threads(first, left, threads)
    async with ctx.write(only if only is not None else left) as tx:
        op = await oplog.get_op(tx, op_id)
        if op is None:  # pragma: no cover - ops are never deleted
            raise NotFoundError(f"operation {op_id} not found")
        await oplog.check_undo(tx, op, only)
        summary = f"undid operation {op_id} ({op.summary})"
        if only is not None:
            summary += f" for thread(s) {', '.join(only)}"
        undo_id = await oplog.start(tx, "undo", summary, only if only is not None else op.threads,
                                    {"undo_of": op_id, "kind": op.kind,
                                     **({"threads": only} if only is not None else {})},
                                    ctx.now(), undo_of=op_id)
        reverted = await oplog.revert(tx, op_id, only)
        rest = [t for t in left if only is not None and t not in only]
        if rest:  # the op stays undoable for the threads left
            done = oplog.restored_threads(op) + list(only or [])
            await oplog.set_summary(tx, op_id, op.summary, {**op.details, "restored": done})
            summary += (f"; left {', '.join(rest[:10])}{', …' if len(rest) > 10 else ''} "
                        f"(`agentctl undo {op_id} --thread THREAD` restores them while they do not change)")
        else:
            await oplog.mark_undone(tx, op_id, undo_id)
    ctx.done(undo_id)
    for thread in only if only is not None else left:
        ctx.counters.pop(thread, None)
    return OpResult(undo_id, "undo", summary, created=reverted.restored, deleted=reverted.deleted,
                    moved=reverted.moved)


async def purge(ctx: EngineContext, dry_run: bool = False) -> PurgeResult:
    """Free what undo could still bring back (the trash); VACUUM on SQLite."""
    counts = await oplog.trash_counts(ctx.backend)
    if dry_run or not counts:
        return PurgeResult([op for op, _ in counts], sum(n for _, n in counts), dry_run)
    async with ctx.write([]) as tx:
        counts = await oplog.trash_counts(tx)
        ops = [op for op, _ in counts]
        rows = await oplog.purge_ops(tx, ops)
        op_id = await oplog.start(
            tx, "purge", f"purge the trash of {len(ops)} operation(s): {rows} checkpoint(s)",
            [], {"ops": ops, "rows": rows}, ctx.now())
    ctx.done(op_id)
    try:
        await ctx.backend.vacuum(["checkpoints", oplog.TRASH])
    except DatabaseBusy as exc:  # the purge is done; only the compaction waits
        logger.warning("purge: VACUUM skipped, the database is busy (%s)", exc)
        return PurgeResult(ops, rows, False, vacuumed=False, op_id=op_id)
    return PurgeResult(ops, rows, False, vacuumed=True, op_id=op_id)
