"""Edit: a new checkpoint at the head of REF's thread holding REF's state with the
edits made (as a snapshot would write it: the head its parent, the next step), recorded
as one operation (undo deletes it)."""

from __future__ import annotations

from typing import Any

from agentctl.errors import CheckpointNotFound
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos import oplog
from agentctl.storage.agentos.context import INSERT_SQL, EngineContext, require_meta
from agentctl.storage.agentos.oplog import OpResult
from agentctl.storage.agentos.rows import checkpoint_params
from agentctl.storage.agentos.snapshot import head_query


async def edit_state(ctx: EngineContext, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
    """Write REF's checkpoint again as the thread's new head, with `state` as its state
    (the edit's result); `what` says what changed (the op's summary)."""
    meta = await require_meta(ctx.backend, checkpoint_id)
    ref = await ctx.backend.get(checkpoint_id)
    if ref is None:
        raise CheckpointNotFound(checkpoint_id)
    tid = meta.thread_id
    async with ctx.write([tid]) as tx:
        sql, params = head_query(tid, False)
        head = (await tx.fetch(sql, *params))[0]
        step = max(int(head["step"]), ctx.counters.get(tid, 0)) + 1
        cid = f"ckpt-{tid}-{step}-{ctx.hex(6)}"
        summary = f"edit of step {meta.step}: {what}"
        cp = Checkpoint(
            CheckpointMetadata(tid, cid, step, head["checkpoint_id"], ctx.now(), ["edit"], summary),
            ref.messages,
            state,
            ref.tools_result,
            ref.next_node,
        )
        op = await oplog.start(
            tx,
            "edit",
            f"edit {tid} at step {meta.step} ({checkpoint_id}) as {cid}: {what}",
            [tid],
            {"ref": checkpoint_id, "new": cid},
            ctx.now(),
        )
        await tx.execute(INSERT_SQL, *checkpoint_params(cp, tx.timestamp))
        await oplog.record_inserts(tx, op, [(cid, tid)])
        op_id = await oplog.finish(tx, op, [tid])
    ctx.bump(tid, step)
    ctx.done(op_id)
    return OpResult(op_id, "edit", f"edited {tid}: new checkpoint {cid} at step {step}", created=[cid])
