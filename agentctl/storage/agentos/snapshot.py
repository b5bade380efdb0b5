"""Snapshot writing: an agent's checkpoint, the automatic GC after it (the agent's own
retention policy, in the snapshot's transaction, not logged), the size limit, deltas."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

from agentctl.errors import SnapshotTooLarge, UsageError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos import delta
from agentctl.storage.agentos.context import EngineContext, thread_count
from agentctl.storage.agentos.retention import keep_last_where, selection
from agentctl.storage.agentos.rows import DELTA_TAG, THREAD_ORDER_DESC, dumps
from agentctl.storage.agentos.types import CheckpointGC, SnapshotInput, SnapshotTrigger, as_policy, as_trigger

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction, WriteSteps

logger = logging.getLogger("agentctl.engine")


def head_query(thread_id: str, counted: bool) -> tuple[str, list[Any]]:
    """A thread's head (its id is a snapshot's parent, its step the highest) and, when
    `counted`, the thread's row count as `n`: one statement."""
    count = ", (SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?) AS n" if counted else ""
    return (
        f"SELECT checkpoint_id, step{count} FROM checkpoints WHERE thread_id = ? "
        f"ORDER BY {THREAD_ORDER_DESC} LIMIT 1",
        [thread_id] * (2 if counted else 1),
    )


def auto_summary(messages: list[dict[str, Any]], state: dict[str, Any]) -> str:
    if messages:
        last = messages[-1]
        if isinstance(last, dict):
            role = last.get("role", "unknown")
            content = str(last.get("content", ""))[:100]
            return f"[{role}] {content}"
        return str(last)[:100]
    return f"State: {len(state)} keys"


async def snapshot(
    ctx: EngineContext,
    thread_id: str,
    messages: list[dict[str, Any]],
    state: dict[str, Any],
    tools_result: dict[str, Any],
    trigger: SnapshotTrigger = SnapshotTrigger.MANUAL,
    parent_checkpoint_id: str | None = None,
    next_node: str = "",
) -> str:
    """Write a checkpoint; return its id ("" when the trigger is not enabled)."""
    config = ctx.config
    trig = as_trigger(trigger)
    if trig is None or trig not in config.triggers:
        return ""
    if not isinstance(thread_id, str) or not thread_id:
        raise UsageError("thread_id must be a non-empty string")
    messages = list(messages)
    state = dict(state)
    tools = dict(tools_result or {})
    blobs = serialize(ctx, thread_id, messages, state, tools)
    summary = auto_summary(messages, state)
    policy = as_policy(config.gc_policy)
    counted = policy in (CheckpointGC.KEEP_LAST_N, CheckpointGC.KEEP_MILESTONES)
    # Computed here, not in the write: the write may run on the database's thread.
    made = SnapshotInput(
        trig, summary, parent_checkpoint_id, next_node, ctx.hex(6), ctx.now(), ctx.counters.get(thread_id, 0)
    )
    write_steps = getattr(ctx.backend, "write_steps", None)
    if (
        write_steps is not None
        and not config.delta_snapshots
        and policy in (CheckpointGC.KEEP_ALL, CheckpointGC.KEEP_LAST_N)
    ):
        # The usual case, in one call on SQLite's connection thread (no round trip
        # per statement): the head, the row, the keep_last_n deletes.
        keep = max(int(config.gc_param), 1) if counted else None
        written = await write_steps(snapshot_steps(ctx, thread_id, messages, state, tools, blobs, made, keep))
        if written is not None:
            ctx.bump(thread_id, written.metadata.step)
            return written.metadata.checkpoint_id
        # None: the thread holds delta rows (nothing was written); the general way
        # rewrites them.
    async with ctx.write([thread_id], exclusive=False) as tx:
        sql, params = head_query(thread_id, counted)
        cp, count = next_checkpoint(await tx.fetch(sql, *params), thread_id, messages, state, tools, made)
        if config.delta_snapshots:
            row = await delta.encode_for_thread(tx, cp, config.delta_keyframe_every)
        else:
            row = cp
        await tx.put(row, blobs if row is cp else None)
        await auto_gc(ctx, tx, thread_id, count if counted else None)
    ctx.bump(thread_id, cp.metadata.step)
    return cp.metadata.checkpoint_id


class NextCheckpoint(NamedTuple):
    checkpoint: Checkpoint  # what the snapshot writes
    rows: int  # the thread's rows with it (meaningful when head_query counted them)


def next_checkpoint(
    found: list[dict[str, Any]], thread_id: str, messages: Any, state: Any, tools: Any, made: SnapshotInput
) -> NextCheckpoint:
    """The checkpoint a snapshot writes after the head `found` (head_query's rows),
    and the thread's row count with it."""
    head = found[0] if found else None
    step = max(int(head["step"]) if head is not None else 0, made.counter) + 1
    parent = made.parent
    if parent is None and head is not None:
        parent = head["checkpoint_id"]
    cid = f"ckpt-{thread_id}-{step}-{made.hex6}"
    cp = Checkpoint(
        CheckpointMetadata(thread_id, cid, step, parent, made.now, [made.trigger.value], made.summary),
        messages,
        state,
        tools,
        made.next_node,
    )
    return NextCheckpoint(cp, (int(head.get("n") or 0) if head is not None else 0) + 1)


def snapshot_steps(
    ctx: EngineContext,
    thread_id: str,
    messages: Any,
    state: Any,
    tools: Any,
    blobs: tuple[str, str, str],
    made: SnapshotInput,
    keep: int | None,
) -> WriteSteps:
    """A snapshot under keep_all / keep_last_n without delta rows, as write steps.
    Their result: the checkpoint written, or None (nothing written) when the
    keep_last_n delete would meet delta rows, which only the general path rewrites."""
    sql, params = head_query(thread_id, keep is not None)
    cp, count = next_checkpoint((yield ("fetch", sql, params)), thread_id, messages, state, tools, made)
    where = None
    if keep is not None and count > keep:
        where, params = keep_last_where(thread_id, count, keep)
        # Not when the thread holds delta rows: their bases would have to be
        # rewritten first. Looking costs a pass over the thread's rows, so it is
        # skipped when nothing but this process's own snapshots (which write no
        # deltas) changed the file since the last pass found none: no other
        # connection committed (data_version) and no other write of ours did.
        version = (yield ("fetch", "PRAGMA data_version", []))[0]["data_version"]
        seen = (int(version), getattr(ctx.backend, "write_generation", None))
        if ctx.delta_free.get(thread_id) != seen:
            if (
                yield (
                    "fetch",
                    "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? AND tags LIKE ? LIMIT 1",
                    [thread_id, f"%{DELTA_TAG}%"],
                )
            ):
                return None
            if len(ctx.delta_free) > 4096:
                ctx.delta_free.clear()
            ctx.delta_free[thread_id] = seen
    yield ("put", cp, blobs)
    if where is not None:
        yield ("execute", f"DELETE FROM checkpoints WHERE {where}", params)
    return cp


def serialize(
    ctx: EngineContext, thread_id: str, messages: Any, state: Any, tools: Any
) -> tuple[str, str, str]:
    """The three JSON columns, checked against max_snapshot_size_mb."""
    blobs = (dumps(messages), dumps(state), dumps(tools))
    limit = ctx.config.max_snapshot_size_mb
    if limit and limit > 0:
        size = sum(len(b.encode("utf-8")) for b in blobs)
        if size > limit * 1024 * 1024:
            raise SnapshotTooLarge(
                f"snapshot of thread {thread_id!r} is {size / 1048576:.2f} MB "
                f"({size} bytes), over max_snapshot_size_mb={limit:g}; nothing was written"
            )
    return blobs


async def snapshot_safe(ctx: EngineContext, *args: Any, **kwargs: Any) -> str:
    """See CheckpointEngine.snapshot_safe."""
    try:
        return await snapshot(ctx, *args, **kwargs)
    except Exception as exc:  # AgentOS's contract: never break the agent's flow
        logger.error("Snapshot failed (non-blocking): %s", exc)
        return ""


async def auto_gc(ctx: EngineContext, tx: Transaction, thread_id: str, count: int | None = None) -> None:
    """The configured retention after a snapshot: deletes for real (not logged).
    `count`: the thread's rows, when the caller knows it."""
    policy = as_policy(ctx.config.gc_policy)
    param = ctx.config.gc_param
    if policy is CheckpointGC.KEEP_ALL:
        return
    if policy is not CheckpointGC.KEEP_AGE:
        if count is None:
            count = await thread_count(tx, thread_id)
        if count <= max(int(param), 1):
            return
    if policy is CheckpointGC.KEEP_LAST_N and count is not None:
        # The thread has `count` rows (counted in this transaction): the oldest
        # count - n go, found from the front of the thread's index order. A snapshot
        # in steady state reads one row for this instead of the whole thread.
        where, params = keep_last_where(thread_id, count, max(int(param), 1))
    else:
        chosen = selection(ctx, tx.kind, thread_id, policy, param)
        if chosen is None:
            return
        where, params = chosen
    await delta.before_delete(tx, thread_id, where, params)
    await tx.execute(f"DELETE FROM checkpoints WHERE {where}", *params)
