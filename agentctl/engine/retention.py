"""Retention: the GC policies as SQL selections (also the snapshot's automatic GC),
`prune` (into the trash, undoable, one operation for any number of threads) and
`delete_thread`."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import timedelta
from typing import Any, Callable, Sequence

from agentctl.backends.base import (
    DELTA_TAG,
    META_COLUMNS,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    Transaction,
    row_to_metadata,
)
from agentctl.engine import delta, oplog
from agentctl.engine.context import EngineContext, thread_count, thread_exists, ts_param
from agentctl.engine.oplog import OpResult
from agentctl.engine.types import CheckpointGC, PrunePlan, Where, as_policy, policy_text
from agentctl.errors import ThreadNotFound, UsageError
from agentctl.storage.contract import PruneSpec, Unsupported

# ---- selections ---------------------------------------------------------------------


def keep_last_where(thread_id: str, count: int, keep: int) -> Where:
    """The oldest rows of a thread of `count` rows beyond the last `keep`, from the front
    of the thread's index order: in steady state one row read, no pass over the thread."""
    return Where(f"id IN (SELECT id FROM checkpoints WHERE thread_id = ? "
                 f"ORDER BY {THREAD_ORDER_ASC} LIMIT CAST(? AS BIGINT))", [thread_id, count - keep])


def gc_selection(kind: str, thread_id: str, policy: CheckpointGC, param: float,
                 cutoff: Any) -> Where | None:
    """A WHERE condition (and its parameters) selecting the rows a policy deletes from
    one thread, or None when the policy deletes nothing. Never selects the head."""
    head = f"(SELECT id FROM checkpoints WHERE thread_id = ? ORDER BY {THREAD_ORDER_DESC} LIMIT 1)"
    if policy is CheckpointGC.KEEP_ALL:
        return None
    if policy is CheckpointGC.KEEP_AGE:
        older = "julianday(created_at) < julianday(?)" if kind == "sqlite" else "created_at < ?"
        return Where(f"thread_id = ? AND {older} AND id <> {head}", [thread_id, cutoff, thread_id])
    n = max(int(param), 1)
    if policy is CheckpointGC.KEEP_LAST_N or n == 1:
        # The last n come from the (thread_id, step) index; no pass over the whole thread.
        return Where(f"thread_id = ? AND id NOT IN (SELECT id FROM checkpoints WHERE thread_id = ? "
                     f"ORDER BY {THREAD_ORDER_DESC} LIMIT CAST(? AS BIGINT))", [thread_id, thread_id, n])
    # keep_milestones: n >= 2 rows kept, the first and the last among them; positions
    # come from a window over the thread.
    keep = ("(r.pos = 0 OR (r.pos * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0) > "
            "((r.pos - 1) * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0))")
    return Where(f"id IN (SELECT r.id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY {THREAD_ORDER_ASC}) - 1 "
                 "AS pos, COUNT(*) OVER () AS total FROM checkpoints WHERE thread_id = ?) r "
                 f"WHERE r.total > CAST(? AS BIGINT) AND NOT {keep})", [thread_id, n, n - 1, n - 1])


def selection(ctx: EngineContext, kind: str, thread_id: str, policy: CheckpointGC,
              param: float) -> Where | None:
    """gc_selection with keep_age's cutoff taken from the engine's clock."""
    cutoff = None
    if policy is CheckpointGC.KEEP_AGE:
        cutoff = ts_param(kind, (ctx.now_dt() - timedelta(seconds=float(param))).isoformat())
    return gc_selection(kind, thread_id, policy, param, cutoff)


def check_param(policy: CheckpointGC, param: Any) -> float:
    try:
        value = float(param)
    except (TypeError, ValueError):
        raise UsageError(f"the parameter of {policy.value} must be a number, not {param!r}") from None
    if value < 0 or value != value:
        raise UsageError(f"the parameter of {policy.value} must be >= 0, not {param!r}")
    return int(value) if policy is not CheckpointGC.KEEP_AGE else value


# ---- prune ----------------------------------------------------------------------------


async def plan_prune(ctx: EngineContext, thread_id: str, policy: CheckpointGC | str,
                     param: float = 0, *, preview: int | None = None) -> PrunePlan:
    """Which checkpoints `prune` would delete (never the head); see CheckpointEngine.plan_prune."""
    pol = as_policy(policy)
    param = check_param(pol, param)
    b = ctx.backend
    total = await thread_count(b, thread_id)
    if total == 0:
        raise ThreadNotFound(thread_id)
    chosen = selection(ctx, b.kind, thread_id, pol, param)
    if chosen is None:
        return PrunePlan(thread_id, pol, param, [], total)
    where, params = chosen
    order = f"ORDER BY {THREAD_ORDER_ASC}"
    if preview is None:
        delete = [row_to_metadata(r) for r in await b.query(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE {where} {order}", *params)]
        return PrunePlan(thread_id, pol, param, delete, total - len(delete))
    count = int(await b._fetchval(
        f"SELECT COUNT(*) AS n FROM checkpoints WHERE {where}", *params) or 0)
    delete = []
    if count and preview > 0:
        # The first N in thread order are among the rows up to the N-th smallest step
        # (found in the (thread_id, step) index): only those are read and sorted.
        edge = await b.query(
            f"SELECT step FROM checkpoints WHERE {where} ORDER BY step LIMIT 1 OFFSET ?",
            *params, preview - 1)
        bound, bound_params = ("", []) if not edge else (" AND step <= ?", [edge[0]["step"]])
        delete = [row_to_metadata(r) for r in await b.query(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE ({where}){bound} {order} LIMIT ?",
            *params, *bound_params, preview)]
    return PrunePlan(thread_id, pol, param, delete, total - count, count)


async def prune(ctx: EngineContext, thread_id: str, policy: CheckpointGC | str,
                param: float = 0) -> OpResult:
    """Delete a thread's checkpoints by a GC policy, into the trash (undoable)."""
    pol = as_policy(policy)
    param = check_param(pol, param)
    return await prune_threads(ctx, [thread_id], pol, param, label=thread_id,
                               details={"thread": thread_id, "policy": pol.value, "param": param})


async def prune_threads(ctx: EngineContext, threads: Sequence[str], pol: CheckpointGC,
                        param: float, *, label: str, details: dict[str, Any],
                        must_exist: bool = True,
                        progress: Callable[[int], None] | None = None) -> OpResult:
    """Prune `threads` by one policy in ONE transaction recorded as ONE operation:
    all or nothing (an error or a cancellation anywhere rolls every thread back),
    and one undo restores every thread. `progress(1)` is called after each thread.
    A thread that does not exist raises ThreadNotFound when `must_exist`, else is
    skipped (`prune --all`: a thread deleted since the list was read)."""
    nothing = OpResult(None, "prune", f"{pol.value}: nothing to prune in {label}")
    threads = list(dict.fromkeys(threads))
    if not threads:
        return nothing
    async def body(tx: Transaction) -> OpResult | None:
        op_id = await oplog.start(tx, "prune", f"prune {label}", threads, details, ctx.now())
        deleted: list[str] = []
        changed: list[str] = []
        bulk = getattr(ctx.backend, "bulk_write", None)
        async with bulk() if bulk is not None else nullcontext():
            for thread_id in threads:
                gone = await _prune_one(ctx, tx, op_id, thread_id, pol, param, must_exist)
                if gone:
                    deleted += gone
                    changed.append(thread_id)
                if progress is not None:
                    progress(1)
        if not deleted:
            return None  # rolls back the op record (and new side tables)
        where = changed[0] if len(changed) == 1 else f"{len(changed)} threads"
        summary = (f"prune {where} ({policy_text(pol, param)}): "
                   f"deleted {len(deleted)} checkpoint(s)")
        await oplog.set_summary(tx, op_id, summary)
        await oplog.finish(tx, op_id, changed)
        return OpResult(op_id, "prune", summary, deleted=deleted)

    result = await ctx.write_if(threads, body)
    if result is None:
        return nothing
    ctx.done(result.op_id)
    return result


async def _prune_one(ctx: EngineContext, tx: Transaction, op_id: int, thread_id: str,
                     pol: CheckpointGC, param: float, must_exist: bool) -> list[str]:
    """Move what the policy deletes from one thread into op_id's trash; the ids."""
    if not await thread_exists(tx, thread_id):
        if must_exist:
            raise ThreadNotFound(thread_id)
        return []
    chosen = selection(ctx, tx.kind, thread_id, pol, param)
    if chosen is None:
        return []
    where, params = chosen
    if await tx.query(
            "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? AND "
            f"({where}) IS NOT TRUE AND {delta._tags_text(tx.kind)} LIKE ? LIMIT 1",
            thread_id, *params, f"%{DELTA_TAG}%"):
        # A delta that stays may lose its base. (Looked for among the rows
        # that stay: those the prune deletes are not read for this.)
        await delta.before_delete(tx, thread_id, where, params)
    return await oplog.trash(tx, op_id, where, *params)


def spec_policy(spec: PruneSpec) -> tuple[CheckpointGC, float]:
    if spec.statuses:
        raise Unsupported("agentos", "prune --status (checkpoints have no status)")
    chosen = [(p, v) for p, v in ((CheckpointGC.KEEP_LAST_N, spec.keep_last),
                                  (CheckpointGC.KEEP_AGE, spec.older_than),
                                  (CheckpointGC.KEEP_MILESTONES, spec.milestones)) if v is not None]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --keep-last N, --older-than AGE, --milestones N")
    return chosen[0]


async def spec_threads(ctx: EngineContext, spec: PruneSpec) -> list[str]:
    if spec.threads is not None:
        return list(spec.threads)
    return await ctx.backend.all_thread_ids()


async def plan_prune_spec(ctx: EngineContext, spec: PruneSpec,
                          preview: int | None = None) -> list[PrunePlan]:
    """The plans of `prune_spec` (one per thread)."""
    policy, param = spec_policy(spec)
    return [await plan_prune(ctx, t, policy, param, preview=preview)
            for t in await spec_threads(ctx, spec)]


async def prune_spec(ctx: EngineContext, spec: PruneSpec, *,
                     progress: Callable[[int], None] | None = None) -> list[OpResult]:
    """Prune the threads of the spec as ONE operation; see CheckpointEngine.prune_spec."""
    policy, param = spec_policy(spec)
    pol = as_policy(policy)
    param = check_param(pol, param)
    threads = await spec_threads(ctx, spec)
    every = spec.threads is None
    label = (threads[0] if len(threads) == 1 and not every
             else f"{len(threads)} thread(s)" if not every else "all threads")
    details = {"threads": None if every else threads, "policy": pol.value, "param": param}
    if len(threads) == 1 and not every:
        details = {"thread": threads[0], "policy": pol.value, "param": param}
    return [await prune_threads(ctx, threads, pol, param, label=label, details=details,
                                must_exist=not every, progress=progress)]


# ---- delete ---------------------------------------------------------------------------


async def delete_thread(ctx: EngineContext, thread_id: str) -> OpResult:
    """Delete every checkpoint of a thread, into the trash (undoable)."""
    async with ctx.write([thread_id]) as tx:
        n = await thread_count(tx, thread_id)
        if n == 0:
            raise ThreadNotFound(thread_id)
        summary = f"delete thread {thread_id} ({n} checkpoint(s))"
        op_id = await oplog.start(tx, "delete_thread", summary, [thread_id],
                                  {"thread": thread_id, "count": n}, ctx.now())
        deleted = await oplog.trash(tx, op_id, "thread_id = ?", thread_id)
        await oplog.finish(tx, op_id, [thread_id])
    ctx.done(op_id)
    ctx.counters.pop(thread_id, None)
    return OpResult(op_id, "delete_thread", summary, deleted=deleted)
