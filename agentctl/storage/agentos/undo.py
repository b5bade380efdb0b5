"""The engine's rules around the journal's undo and redo (`JournalHistory`): the
checks an undo makes first (with the engine's messages: which later op to undo first,
an id taken again, a row that continues from what the undo would delete), the checkpoint
ids a move brings back, deletes and moves, and purge (logged, then VACUUM)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from agentctl.errors import DatabaseBusy, OperationError, UsageError
from agentctl.storage.agentos import oplog
from agentctl.storage.agentos.context import EngineContext
from agentctl.storage.journal import ops, trash
from agentctl.storage.results import PurgeResult
from agentctl.storage.sqlutil import marks

logger = logging.getLogger("agentctl.engine")

#: ops that are lines of the log, never undone themselves
ENTRIES = ("undo", "redo", "purge")


def refuse_entry(rec: dict[str, Any]) -> None:
    """OperationError for the undo of an undo, a redo or a purge."""
    kind, of = rec["kind"], rec.get("undo_of")
    hint = f" ({'redo' if kind == 'undo' else 'undo'} operation {of} instead)" if of is not None else ""
    raise OperationError(
        f"operation {rec['op_id']} is {'an' if kind == 'undo' else 'a'} {kind}; it cannot be undone{hint}"
    )


def only_threads(rec: dict[str, Any], threads: Sequence[str]) -> list[str]:
    """`undo --thread`: the threads of a prune named, checked against those left."""
    if rec["kind"] != "prune":
        raise UsageError(
            f"--thread restores some threads of a prune; operation {rec['op_id']} is a "
            f"{rec['kind']} (undo it whole)"
        )
    left = ops.left(rec)
    for t in threads:
        if t not in left:
            raise UsageError(
                f"operation {rec['op_id']} has no thread {t!r} left to restore "
                f"(it has: {', '.join(left[:10]) or 'none'})"
            )
    return list(dict.fromkeys(threads))


def _of(threads: Sequence[str] | None, alias: str = "") -> tuple[str, list[str]]:
    if threads is None:
        return "", []
    return f" AND {alias}thread_id IN ({marks(len(threads))})" if threads else " AND 1 = 0", list(threads)


async def check_undo(tx: Any, rec: dict[str, Any], threads: Sequence[str] | None) -> None:
    """Refuse (OperationError, nothing changed) an undo of `rec` that cannot put its
    rows back exactly now: purged, a thread changed since, a row id taken again, a row
    that continues from one the undo deletes."""
    op_id, kind = int(rec["op_id"]), rec["kind"]
    if rec["undone"]:
        raise OperationError(f"operation {op_id} ({kind}) was already undone by operation {rec['undone_by']}")
    if rec["purged"]:
        raise OperationError(
            f"operation {op_id} ({kind}) cannot be undone: its deleted checkpoints were purged"
        )
    todo = list(threads) if threads is not None else ops.left(rec)
    stale = [
        t
        for t in todo
        if json.loads(json.dumps(await oplog.fingerprint(tx, t))) != rec["fingerprints"].get(t)
    ]
    if stale:
        later = await ops.later(tx, op_id, stale)
        hint = (
            f"; undo operation{'s' if len(later) > 1 else ''} {', '.join(map(str, later))} first"
            if later
            else "; checkpoints were written to or removed from it since"
        )
        still = [t for t in todo if t not in stale]
        if kind == "prune" and threads is None and still:
            hint += (
                f"; `agentctl undo {op_id} --thread THREAD` (repeatable) restores the {len(still)} "
                f"that did not: {oplog.short(still, 10)}"
            )
        raise OperationError(
            f"cannot undo operation {op_id} ({kind}): thread{'s' if len(stale) > 1 else ''} "
            f"{oplog.short(stale)} changed after it{hint}"
        )
    of, args = _of(threads, "t.")
    # the ids the op left (its after-images) and found (before-images); one `?` each: the op
    left, found = (
        f"(SELECT checkpoint_id FROM {trash.images_of(oplog.TABLE, image)} AS i)"
        for image in ("after", "before")
    )
    taken = await tx.fetch(
        f"SELECT t.checkpoint_id FROM {trash.images_of(oplog.TABLE)} AS t WHERE 1 = 1{of} "
        f"AND t.checkpoint_id NOT IN {left} AND (EXISTS (SELECT 1 FROM checkpoints c WHERE "
        f"c.checkpoint_id = t.checkpoint_id) OR EXISTS (SELECT 1 FROM checkpoints c WHERE c.id = t.id "
        f"AND c.checkpoint_id NOT IN {left})) ORDER BY t.checkpoint_id LIMIT 6",
        op_id,
        *args,
        op_id,
        op_id,
    )
    _refuse(rec, taken, "exist again; delete them first")
    # a row the undo deletes (the op inserted it) must not be the parent of one that stays
    children = await tx.fetch(
        f"SELECT c.checkpoint_id FROM checkpoints c WHERE c.parent_id IN {left} AND c.parent_id NOT IN {found} "
        f"AND c.checkpoint_id NOT IN {left} ORDER BY c.checkpoint_id LIMIT 6",
        op_id,
        op_id,
        op_id,
    )
    _refuse(rec, children, "continue from what it created")


def _refuse(rec: dict[str, Any], rows: list[dict[str, Any]], why: str) -> None:
    if rows:
        raise OperationError(
            f"cannot undo operation {rec['op_id']} ({rec['kind']}): checkpoint(s) "
            f"{oplog.short([r['checkpoint_id'] for r in rows])} {why}"
        )


async def moved_ids(tx: Any, op_id: int, image: str, threads: Sequence[str] | None) -> dict[str, list[str]]:
    """{created, deleted, moved}: the checkpoint ids putting `image` of op back brings
    back, deletes, and changes in place (in thread order)."""
    rows = [
        r
        for r in await trash.held(
            tx, op_id, oplog.TABLE, ["thread_id", "step", "created_at", "id", "checkpoint_id"]
        )
        if threads is None or r["thread_id"] in threads
    ]
    held: dict[str, set[str]] = {}
    for r in rows:
        held.setdefault(r["checkpoint_id"], set()).add(r["image"])
    out: dict[str, list[str]] = {"created": [], "deleted": [], "moved": []}
    for r in rows:
        images = held[r["checkpoint_id"]]
        if len(images) > 1:
            if r["image"] == image:
                out["moved"].append(r["checkpoint_id"])
        else:
            out["created" if r["image"] == image else "deleted"].append(r["checkpoint_id"])
    return out


async def purge(ctx: EngineContext, history: Any, dry_run: bool = False) -> PurgeResult:
    """Free what undo and redo could still bring back (the journal's trash), the purge
    logged; VACUUM on SQLite."""
    plan = await ops_held(history)
    if dry_run or not plan.ops:
        return PurgeResult(plan.ops, plan.rows, dry_run, undone=plan.undone)
    async with history.journal_tx() as tx:
        freed, rows = await ops.purge(tx)
        op_id = await ops.log_purge(tx, freed, rows, ctx.now())
    ctx.done(op_id)
    try:
        await ctx.backend.vacuum(["checkpoints", oplog.TRASH])
    except DatabaseBusy as exc:  # the purge is done; only the compaction waits
        logger.warning("purge: VACUUM skipped, the database is busy (%s)", exc)
        return PurgeResult(freed, rows, False, vacuumed=False, op_id=op_id)
    return PurgeResult(freed, rows, False, vacuumed=True, op_id=op_id)


async def ops_held(history: Any) -> PurgeResult:
    """The ops whose images the trash still holds, and how many rows (a read)."""
    from agentctl.storage.journal.history import JournalHistory

    return await JournalHistory.purge(history, dry_run=True)
