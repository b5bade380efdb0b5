"""Retention: the GC policies as SQL selections (also the snapshot's automatic GC),
`prune` (into the trash, undoable, one operation for any number of threads) and
`delete_thread`."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any

from agentctl.errors import ThreadNotFound, UsageError
from agentctl.storage.agentos import delta, oplog
from agentctl.storage.agentos.context import EngineContext, thread_count, thread_exists, ts_param
from agentctl.storage.agentos.oplog import OpResult
from agentctl.storage.agentos.rows import (
    DELTA_TAG,
    META_COLUMNS,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    loads,
    row_to_metadata,
)
from agentctl.storage.agentos.types import CheckpointGC, DeletePlan, PrunePlan, Where, as_policy, policy_text
from agentctl.storage.contract import PruneSpec, Unsupported
from agentctl.storage.journal import ops
from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction

# ---- selections ---------------------------------------------------------------------


def keep_last_where(thread_id: str, count: int, keep: int) -> Where:
    """The oldest rows of a thread of `count` rows beyond the last `keep`, from the front
    of the thread's index order: in steady state one row read, no pass over the thread."""
    return Where(
        f"id IN (SELECT id FROM checkpoints WHERE thread_id = ? "
        f"ORDER BY {THREAD_ORDER_ASC} LIMIT CAST(? AS BIGINT))",
        [thread_id, count - keep],
    )


def gc_selection(kind: str, thread_id: str, policy: CheckpointGC, param: float, cutoff: Any) -> Where | None:
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
        return Where(
            f"thread_id = ? AND id NOT IN (SELECT id FROM checkpoints WHERE thread_id = ? "
            f"ORDER BY {THREAD_ORDER_DESC} LIMIT CAST(? AS BIGINT))",
            [thread_id, thread_id, n],
        )
    # keep_milestones: n >= 2 rows kept, the first and the last among them; positions
    # come from a window over the thread.
    keep = (
        "(r.pos = 0 OR (r.pos * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0) > "
        "((r.pos - 1) * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0))"
    )
    return Where(
        f"id IN (SELECT r.id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY {THREAD_ORDER_ASC}) - 1 "
        "AS pos, COUNT(*) OVER () AS total FROM checkpoints WHERE thread_id = ?) r "
        f"WHERE r.total > CAST(? AS BIGINT) AND NOT {keep})",
        [thread_id, n, n - 1, n - 1],
    )


def selection(
    ctx: EngineContext, kind: str, thread_id: str, policy: CheckpointGC, param: float
) -> Where | None:
    """gc_selection with keep_age's cutoff taken from the engine's clock."""
    cutoff = None
    if policy is CheckpointGC.KEEP_AGE:
        cutoff = ts_param(kind, (ctx.now_dt() - timedelta(seconds=float(param))).isoformat())
    return gc_selection(kind, thread_id, policy, param, cutoff)


async def db_stamp(reader: Any) -> tuple[int, int]:
    """(greatest row id, last operation) of the database. Row ids only grow, and what
    agentctl moves, re-parents or brings back is an operation: while the stamp is
    unchanged, no checkpoint was added or re-parented, so no checkpoint became a fork
    point (one deleted meanwhile may leave a fork point with one child: kept anyway,
    as planned)."""
    m = int(await reader._fetchval("SELECT COALESCE(MAX(id), 0) AS m FROM checkpoints") or 0)
    return m, await ops.last_id(reader)


@dataclass
class Selection:
    """What a prune deletes from one thread: the policy's selection less its fork points
    (`where`), the fork points, whether a plan was reused, and (SQLite) the ids of the
    rows it deletes in row-id order (`ids`, None: not read) with their row ids (`rows`,
    None: not read, or row-id order is not the thread's order)."""

    where: Where
    forks: list[str]
    reused: bool = False
    ids: list[str] | None = None
    rows: list[int] | None = None


async def keep_fork_points(
    reader: Any, thread_id: str, chosen: Where, known: PrunePlan | None = None, size: int = 0
) -> Selection:
    """The selection of a prune less its fork points (as LangGraph's prune keeps them):
    the selected checkpoints that are the parent of a checkpoint in another thread (a
    branch, a rewind's archive) or of several.

    `known`: the plan of this prune, made while the database had the stamp it has now
    (the caller checks): when the policy selects as many rows as then, they are the
    same rows, and its fork points, ids and row ids are reused (finding them reads every
    selected row). `size`: the thread's checkpoints, when the caller knows them: from
    SPLIT_READ_AT on (SQLite, read outside a write), the selected rows are read in two
    parts at once, split by row id at the thread's middle step."""
    where, params = chosen

    def less(forks: list[str]) -> Where:
        return (
            Where(f"({where}) AND checkpoint_id NOT IN ({marks(len(forks))})", [*params, *forks])
            if forks
            else chosen
        )

    if (
        known is not None
        and int(await reader._fetchval(f"SELECT COUNT(*) AS n FROM checkpoints WHERE {where}", *params) or 0)
        == known.delete_count + known.forks_kept
    ):
        kept = list(known.fork_points)
        return Selection(less(kept), kept, True, known.delete_ids, known.delete_rows)
    # One seek of the parent index per selected row: its children, counted, and whether
    # one is in another thread (a child in the thread is mostly the next selected row,
    # whose page is read next anyway).
    fork = (
        "(SELECT COUNT(*) > 1 OR SUM(CASE WHEN c.thread_id <> ? THEN 1 ELSE 0 END) > 0 "
        "FROM checkpoints c WHERE c.parent_id = p.checkpoint_id)"
    )

    def rows(part: str = "") -> str:
        """The selected rows (those of `part` too: a condition on the row id)."""
        return f"FROM checkpoints p WHERE p.id IN (SELECT id FROM checkpoints WHERE ({where}){part})"

    if reader.kind != "sqlite":
        found = [
            r["checkpoint_id"]
            for r in await reader.query(f"SELECT p.checkpoint_id {rows()} AND {fork}", *params, thread_id)
        ]
        return Selection(less(found), found)

    # SQLite: in row-id order, the ids, row ids and steps of the rows it deletes and the
    # fork points, as JSON texts (the prune's move then needs not read them again)
    def read(part: str = "") -> str:
        return (
            "SELECT json_group_array(i) FILTER (WHERE NOT f) AS ids, json_group_array(r) FILTER (WHERE NOT f) "
            "AS rows, json_group_array(s) FILTER (WHERE NOT f) AS steps, json_group_array(i) FILTER (WHERE f) "
            "AS forks FROM (SELECT CASE WHEN typeof(p.checkpoint_id) = 'blob' THEN CAST(p.checkpoint_id AS TEXT) "
            "ELSE p.checkpoint_id END AS i, p.rowid AS r, CASE WHEN typeof(p.step) = 'integer' THEN p.step END "
            f"AS s, CASE WHEN {fork} THEN 1 ELSE 0 END AS f {rows(part)} ORDER BY p.rowid)"
        )

    middle = (
        await reader.query(
            "SELECT rowid AS r FROM checkpoints WHERE thread_id = ? ORDER BY step DESC LIMIT 1 OFFSET ?",
            thread_id,
            size // 2,
        )
        if size >= SPLIT_READ_AT and hasattr(reader, "query_apart")
        else []
    )
    if middle:
        # Two parts read at once (each on a core: the read is SQLite's, outside the GIL),
        # the rows before the middle row id and the rest: together, in row-id order.
        # Each part sees the file as it is when it starts; a write between the two adds
        # a row or an op (the write does not reuse this plan: db_stamp) or deletes one
        # (the write's count differs, or it moves fewer rows and stops).
        cut = middle[0]["r"]
        parts = [
            r[0]
            for r in await reader.query_apart(
                [
                    (read(" AND rowid < ?"), [thread_id, *params, cut]),
                    (read(" AND rowid >= ?"), [thread_id, *params, cut]),
                ]
            )
        ]
    else:
        parts = await reader.query(read(), thread_id, *params)
    forks: list[str] = []
    ids: list[str] = []
    rowids: list[int] = []
    steps: list[Any] = []
    for got in parts:
        forks += loads(got["forks"])
        steps += loads(got["steps"])
        ids += loads(got["ids"])
        rowids += loads(got["rows"])
    # row-id order is the thread's order when the steps grow in it (all integers: others are null)
    ordered = set(map(type, steps)) <= {int} and all(map(operator.lt, steps, islice(steps, 1, None)))
    return Selection(less(forks), forks, False, ids, rowids if ordered else None)


#: from how many checkpoints in a thread a prune's plan reads the rows it selects in two
#: parts at once (SQLite; see keep_fork_points)
SPLIT_READ_AT = 10_000


async def reparents(
    reader: Any, thread_id: str, chosen: Where
) -> tuple[list[tuple[str, str | None, str | None]], bool]:
    """The kept checkpoints of a thread whose parent a prune of `chosen` deletes, each
    with its old parent and its new one: its nearest ancestor the prune keeps, or None
    (the oldest kept checkpoint, whose ancestors all go, becomes a root, as a thread's
    first checkpoint is). Fork points are kept, so no checkpoint of another thread
    loses its parent. The kept rows are listed by row id (the selected rows are not
    read); from each such row the walk up reads the deleted rows between it and the
    kept row before it in thread order (in a linear thread, its new parent) and stops at
    the first row the prune keeps, however far up (a step past the thread's row count:
    a parent cycle, None). And whether a kept checkpoint is a delta (it may lose its
    base: delta.before_delete)."""
    where, params = chosen
    # The kept rows: the thread's rows the selection leaves; a kept row is an orphan when
    # the selection holds its parent (`where` tested on that one row: the selected rows
    # are not listed).
    kept = await reader.query(
        "SELECT k.checkpoint_id, k.parent_id, CASE WHEN EXISTS (SELECT 1 FROM checkpoints p WHERE "
        f"p.checkpoint_id = k.parent_id AND ({where})) THEN 1 ELSE 0 END AS orphan, "
        f"CASE WHEN {delta._tags_text(reader.kind)} LIKE ? THEN 1 ELSE 0 END AS delta "
        f"FROM checkpoints k WHERE k.thread_id = ? AND ({where}) IS NOT TRUE ORDER BY {THREAD_ORDER_ASC}",
        *params,
        f"%{DELTA_TAG}%",
        thread_id,
        *params,
    )
    ids = {r["checkpoint_id"] for r in kept}
    out: list[tuple[str, str | None, str | None]] = []
    orphans = [i for i, r in enumerate(kept) if r["orphan"]]
    # (a walk longer than the thread's rows goes round a parent cycle: it stops there)
    limit = (
        (await reader.query("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?", thread_id))[0]["n"]
        + 1
        if orphans
        else 0
    )
    for i in orphans:
        r = kept[i]
        # the kept row before it in thread order: in a linear thread, the new parent
        # (the walk stops there); else the walk goes on, through the rows the prune
        # deletes (`gone`), to the first ancestor kept
        before = kept[i - 1]["checkpoint_id"] if i else ""
        new = None
        gone = f"CASE WHEN ({where}) THEN 1 ELSE 0 END"
        path = await reader.query(
            "WITH RECURSIVE agentctl_up(w_cur, w_thread, w_parent, w_gone, w_n) AS (SELECT checkpoint_id, "
            f"thread_id, parent_id, {gone}, 1 FROM checkpoints WHERE checkpoint_id = ? UNION ALL "
            f"SELECT p.checkpoint_id, p.thread_id, p.parent_id, {gone}, u.w_n + 1 FROM agentctl_up u "
            "JOIN checkpoints p ON p.checkpoint_id = u.w_parent WHERE u.w_gone = 1 AND u.w_n < ? "
            "AND u.w_thread = ? AND u.w_parent <> ?) "
            "SELECT w_cur AS cur, w_parent AS parent, w_gone AS gone FROM agentctl_up ORDER BY w_n DESC LIMIT 1",
            *params,
            r["parent_id"],
            *params,
            limit,
            thread_id,
            before,
        )
        # where the walk stopped: at the first ancestor that stays (kept, or of another
        # thread), below `before`, or at a root, a missing parent or a cycle (None)
        for end in path:
            new = end["cur"] if not end["gone"] else end["parent"] if end["parent"] in ids else None
        out.append((r["checkpoint_id"], r["parent_id"], new))
    return sorted(out), any(r["delta"] for r in kept)


async def prune_selection(
    ctx: EngineContext,
    reader: Any,
    thread_id: str,
    pol: CheckpointGC,
    param: float,
    known: PrunePlan | None = None,
    size: int = 0,
) -> Selection | None:
    """What a prune deletes from one thread (None: nothing); see keep_fork_points."""
    chosen = selection(ctx, reader.kind, thread_id, pol, param)
    if chosen is None:
        return None
    return await keep_fork_points(reader, thread_id, chosen, known, size)


def check_param(policy: CheckpointGC, param: Any) -> float:
    try:
        value = float(param)
    except (TypeError, ValueError):
        raise UsageError(f"the parameter of {policy.value} must be a number, not {param!r}") from None
    if value < 0 or value != value:
        raise UsageError(f"the parameter of {policy.value} must be >= 0, not {param!r}")
    return int(value) if policy is not CheckpointGC.KEEP_AGE else value


# ---- prune ----------------------------------------------------------------------------


async def plan_prune(
    ctx: EngineContext,
    thread_id: str,
    policy: CheckpointGC | str,
    param: float = 0,
    *,
    preview: int | None = None,
    stamp: Any = None,
) -> PrunePlan:
    """Which checkpoints `prune` would delete (never the head); see CheckpointEngine.plan_prune."""
    pol = as_policy(policy)
    param = check_param(pol, param)
    b = ctx.backend
    total = await thread_count(b, thread_id)
    if total == 0:
        raise ThreadNotFound(thread_id)
    sel = await prune_selection(ctx, b, thread_id, pol, param, size=total)
    if sel is None:
        return PrunePlan(thread_id, pol, param, [], total, stamp=stamp)
    chosen, forks = sel.where, sel.forks
    where, params = chosen
    found = dict(
        forks_kept=len(forks), fork_points=forks, stamp=stamp, delete_ids=sel.ids, delete_rows=sel.rows
    )
    order = f"ORDER BY {THREAD_ORDER_ASC}"
    if preview is None:
        delete = [
            row_to_metadata(r)
            for r in await b.query(f"SELECT {META_COLUMNS} FROM checkpoints WHERE {where} {order}", *params)
        ]
        moved, deltas = await reparents(b, thread_id, chosen) if delete else ([], False)
        return PrunePlan(
            thread_id, pol, param, delete, total - len(delete), reparent=moved, kept_delta=deltas, **found
        )
    count = (
        len(sel.ids)
        if sel.ids is not None
        else int(await b._fetchval(f"SELECT COUNT(*) AS n FROM checkpoints WHERE {where}", *params) or 0)
    )
    delete = []
    if count and preview > 0:
        # The first N in thread order are among the rows up to the N-th smallest step
        # (found in the (thread_id, step) index): only those are read and sorted.
        edge = await b.query(
            f"SELECT step FROM checkpoints WHERE {where} ORDER BY step LIMIT 1 OFFSET ?", *params, preview - 1
        )
        bound, bound_params = ("", []) if not edge else (" AND step <= ?", [edge[0]["step"]])
        delete = [
            row_to_metadata(r)
            for r in await b.query(
                f"SELECT {META_COLUMNS} FROM checkpoints WHERE ({where}){bound} {order} LIMIT ?",
                *params,
                *bound_params,
                preview,
            )
        ]
    moved, deltas = await reparents(b, thread_id, chosen) if count else ([], False)
    return PrunePlan(
        thread_id, pol, param, delete, total - count, count, reparent=moved, kept_delta=deltas, **found
    )


async def prune(ctx: EngineContext, thread_id: str, policy: CheckpointGC | str, param: float = 0) -> OpResult:
    """Delete a thread's checkpoints by a GC policy, into the trash (undoable)."""
    pol = as_policy(policy)
    param = check_param(pol, param)
    return await prune_threads(
        ctx,
        [thread_id],
        pol,
        param,
        label=thread_id,
        details={"thread": thread_id, "policy": pol.value, "param": param},
    )


async def prune_threads(
    ctx: EngineContext,
    threads: Sequence[str],
    pol: CheckpointGC,
    param: float,
    *,
    label: str,
    details: dict[str, Any],
    must_exist: bool = True,
    progress: Callable[[int], None] | None = None,
    plans: Sequence[PrunePlan] | None = None,
) -> OpResult:
    """Prune `threads` by one policy in ONE transaction recorded as ONE operation:
    all or nothing (an error or a cancellation anywhere rolls every thread back),
    and one undo restores every thread. `progress(1)` is called after each thread.
    A thread that does not exist raises ThreadNotFound when `must_exist`, else is
    skipped (`prune --all`: a thread deleted since the list was read). `plans`: the
    plans shown for this prune, whose fork points are reused while the database is
    as they saw it."""
    nothing = OpResult(None, "prune", f"{pol.value}: nothing to prune in {label}")
    threads = list(dict.fromkeys(threads))
    if not threads:
        return nothing

    async def body(tx: Transaction) -> OpResult | None:
        known: dict[str, PrunePlan] = {}
        stamps = {p.stamp for p in plans or ()}
        if plans and len(stamps) == 1 and None not in stamps and await db_stamp(tx) in stamps:
            known = {p.thread_id: p for p in plans if p.policy is pol and p.param == param}
        op = await oplog.start(tx, "prune", f"prune {label}", threads, details, ctx.now())
        deleted: list[str] = []
        changed: list[str] = []
        bulk = getattr(ctx.backend, "bulk_write", None)
        async with bulk() if bulk is not None else nullcontext():
            for thread_id in threads:
                gone = await _prune_one(ctx, tx, op, thread_id, pol, param, must_exist, known.get(thread_id))
                if gone:
                    deleted += gone
                    changed.append(thread_id)
                if progress is not None:
                    progress(1)
        if not deleted:
            return None  # rolls back the op record (and new side tables)
        where = changed[0] if len(changed) == 1 else f"{len(changed)} threads"
        summary = f"prune {where} ({policy_text(pol, param)}): deleted {len(deleted)} checkpoint(s)"
        op_id = await oplog.finish(tx, op, changed, summary)
        return OpResult(op_id, "prune", summary, deleted=deleted)

    result = await ctx.write_if(threads, body)
    if result is None:
        return nothing
    ctx.done(result.op_id)
    return result


async def _prune_one(
    ctx: EngineContext,
    tx: Transaction,
    op: ops.Op,
    thread_id: str,
    pol: CheckpointGC,
    param: float,
    must_exist: bool,
    known: PrunePlan | None = None,
) -> list[str]:
    """Move what the policy deletes from one thread into op_id's trash; the ids."""
    if not await thread_exists(tx, thread_id):
        if must_exist:
            raise ThreadNotFound(thread_id)
        return []
    sel = await prune_selection(ctx, tx, thread_id, pol, param, known)
    if sel is None:
        return []
    chosen = sel.where
    where, params = chosen
    # the kept rows whose parent goes, and their new parents, read before the rows go
    # (the same rows as the plan's while it holds), and whether a delta stays
    moved, deltas = (
        (list(known.reparent), known.kept_delta)
        if sel.reused and known is not None
        else await reparents(tx, thread_id, chosen)
    )
    if deltas:
        # A delta that stays may lose its base. (Looked for among the rows
        # that stay: those the prune deletes are not read for this.)
        await delta.before_delete(tx, thread_id, where, params, op)
    gone = await oplog.trash(tx, op, where, *params, ids=sel.ids, rows=sel.rows, thread=thread_id)
    await oplog.record_reparents(tx, op, thread_id, moved)
    return gone


def spec_policy(spec: PruneSpec) -> tuple[CheckpointGC, float]:
    if spec.statuses:
        raise Unsupported("agentos", "prune --status (checkpoints have no status)")
    chosen = [
        (p, v)
        for p, v in (
            (CheckpointGC.KEEP_LAST_N, spec.keep_last),
            (CheckpointGC.KEEP_AGE, spec.older_than),
            (CheckpointGC.KEEP_MILESTONES, spec.milestones),
        )
        if v is not None
    ]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --keep-last N, --older-than AGE, --milestones N")
    return chosen[0]


async def spec_threads(ctx: EngineContext, spec: PruneSpec) -> list[str]:
    if spec.threads is not None:
        return list(spec.threads)
    return await ctx.backend.all_thread_ids()


async def plan_prune_spec(ctx: EngineContext, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
    """The plans of `prune_spec` (one per thread)."""
    policy, param = spec_policy(spec)
    stamp = await db_stamp(ctx.backend)
    return [
        await plan_prune(ctx, t, policy, param, preview=preview, stamp=stamp)
        for t in await spec_threads(ctx, spec)
    ]


async def prune_spec(
    ctx: EngineContext,
    spec: PruneSpec,
    *,
    progress: Callable[[int], None] | None = None,
    plans: Sequence[PrunePlan] | None = None,
) -> list[OpResult]:
    """Prune the threads of the spec as ONE operation; see CheckpointEngine.prune_spec."""
    policy, param = spec_policy(spec)
    pol = as_policy(policy)
    param = check_param(pol, param)
    threads = await spec_threads(ctx, spec)
    every = spec.threads is None
    label = (
        threads[0]
        if len(threads) == 1 and not every
        else f"{len(threads)} thread(s)"
        if not every
        else "all threads"
    )
    details = {"threads": None if every else threads, "policy": pol.value, "param": param}
    if len(threads) == 1 and not every:
        details = {"thread": threads[0], "policy": pol.value, "param": param}
    return [
        await prune_threads(
            ctx,
            threads,
            pol,
            param,
            label=label,
            details=details,
            must_exist=not every,
            progress=progress,
            plans=plans,
        )
    ]


# ---- delete ---------------------------------------------------------------------------


async def plan_delete_thread(ctx: EngineContext, thread_id: str) -> DeletePlan:
    """What delete_thread deletes: every checkpoint of the thread (its branches stay)."""
    n = await thread_count(ctx.backend, thread_id)
    if n == 0:
        raise ThreadNotFound(thread_id)
    branches = await ctx.backend.branches_of([thread_id])
    return DeletePlan(thread_id, n, [], list(dict.fromkeys(b.thread_id for b in branches)))


async def delete_thread(ctx: EngineContext, thread_id: str) -> OpResult:
    """Delete every checkpoint of a thread, into the trash (undoable)."""
    async with ctx.write([thread_id]) as tx:
        n = await thread_count(tx, thread_id)
        if n == 0:
            raise ThreadNotFound(thread_id)
        summary = f"delete thread {thread_id} ({n} checkpoint(s))"
        op = await oplog.start(
            tx, "delete_thread", summary, [thread_id], {"thread": thread_id, "count": n}, ctx.now()
        )
        deleted = await oplog.trash(tx, op, "thread_id = ?", thread_id)
        op_id = await oplog.finish(tx, op, [thread_id])
    ctx.done(op_id)
    ctx.counters.pop(thread_id, None)
    return OpResult(op_id, "delete_thread", summary, deleted=deleted)
