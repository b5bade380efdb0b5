"""Undo (revert an operation exactly) and purge (free the trash), over agentctl.engine.oplog."""

from __future__ import annotations

import logging

from agentctl.engine import oplog
from agentctl.engine.context import EngineContext
from agentctl.engine.oplog import OpResult, PurgeResult
from agentctl.errors import DatabaseBusy, NotFoundError, OperationError

logger = logging.getLogger("agentctl.engine")


async def undo(ctx: EngineContext, op_id: int | None = None) -> OpResult:
    """Revert an operation exactly (None: the last one not undone)."""
    b = ctx.backend
    if op_id is None:
        op_id = await oplog.last_undoable(b)
        if op_id is None:
            raise OperationError("nothing to undo: no operation recorded that is not undone")
    elif await oplog.get_op(b, int(op_id)) is None:
        raise NotFoundError(f"operation {op_id} not found")
    op_id = int(op_id)
    threads = await oplog.changed_threads(b, op_id)
    async with ctx.write(threads) as tx:
        op = await oplog.get_op(tx, op_id)
        if op is None:  # pragma: no cover - ops are never deleted
            raise NotFoundError(f"operation {op_id} not found")
        await oplog.check_undo(tx, op)
        summary = f"undo operation {op_id} ({op.summary})"
        undo_id = await oplog.start(tx, "undo", summary, op.threads,
                                    {"undo_of": op_id, "kind": op.kind}, ctx.now(), undo_of=op_id)
        reverted = await oplog.revert(tx, op_id)
        await oplog.mark_undone(tx, op_id, undo_id)
    ctx.done(undo_id)
    for thread in threads:
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
