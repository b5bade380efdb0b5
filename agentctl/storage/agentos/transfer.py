"""Import: checkpoints written as they are (ids, steps, created_at kept), in one
transaction, recorded as one operation (undoable)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from datetime import datetime
from typing import Any

from agentctl.errors import OperationError, UsageError
from agentctl.model import Checkpoint
from agentctl.storage.agentos import delta, oplog
from agentctl.storage.agentos.context import INSERT_SQL, EngineContext
from agentctl.storage.agentos.oplog import OpResult
from agentctl.storage.agentos.rows import checkpoint_params
from agentctl.storage.agentos.types import skipped_text
from agentctl.storage.sqlutil import chunks, in_chunks
from agentctl.storage.timefmt import iso


async def import_checkpoints(
    ctx: EngineContext,
    checkpoints: AsyncIterable[Checkpoint] | Iterable[Checkpoint],
    on_conflict: str = "skip",
) -> OpResult:
    """Write checkpoints as they are; see CheckpointEngine.import_checkpoints."""
    if on_conflict not in ("skip", "replace", "error"):
        raise UsageError(f"unknown on_conflict {on_conflict!r}; use skip, replace or error")
    if hasattr(checkpoints, "__aiter__"):
        items = [import_item(item) async for item in checkpoints]
    else:
        items = [import_item(item) for item in checkpoints]
    by_id: dict[str, Checkpoint] = {}
    skipped: dict[str, str] = {}  # id -> why it was left out
    counts: dict[str, int] = {}  # why -> how many rows
    for cp in items:
        cid = cp.metadata.checkpoint_id
        if cid in by_id:
            if on_conflict == "error":
                raise OperationError(f"checkpoint {cid!r} occurs twice in the import; nothing was written")
            if on_conflict == "skip":
                skipped[cid] = why = "id repeated in the import (the first one is taken)"
                counts[why] = counts.get(why, 0) + 1
                continue
        by_id[cid] = cp
    threads = sorted({cp.metadata.thread_id for cp in by_id.values()})
    async with ctx.write(threads) as tx:
        existing: dict[str, str] = {}
        for ph, chunk in in_chunks(list(by_id)):
            for r in await tx.fetch(
                f"SELECT checkpoint_id, thread_id FROM checkpoints WHERE checkpoint_id IN ({ph})", *chunk
            ):
                existing[r["checkpoint_id"]] = r["thread_id"]
        if existing and on_conflict == "error":
            shown = sorted(existing)
            raise OperationError(
                f"{len(shown)} checkpoint(s) exist already ({oplog.short(shown)}); nothing was written"
            )
        if on_conflict == "skip":
            for cid in existing:
                by_id.pop(cid)
                skipped[cid] = why = "id exists in the database (--on-conflict skip; replace overwrites)"
                counts[why] = counts.get(why, 0) + 1
            existing = {}
        why = skipped_text(counts)
        if not by_id:
            return OpResult(
                None, "import", "nothing to import: " + (why or "no checkpoints"), skipped=skipped
            )
        threads = sorted({cp.metadata.thread_id for cp in by_id.values()})
        changed = sorted(set(threads) | set(existing.values()))
        summary = (
            f"import {len(by_id)} checkpoint(s) into {len(changed)} thread(s)"
            + (f", replacing {len(existing)}" if existing else "")
            + (f"; {why}" if why else "")
        )
        op = await oplog.start(
            tx,
            "import",
            summary,
            changed,
            {"on_conflict": on_conflict, "count": len(by_id), "replaced": len(existing)},
            ctx.now(),
        )
        replaced = sorted(existing)
        for ph, chunk in in_chunks(replaced):
            where = f"checkpoint_id IN ({ph})"
            for thread in sorted({existing[c] for c in chunk}):
                await delta.before_delete(tx, thread, where, chunk, op)
            await oplog.trash(tx, op, where, *chunk)
        for batch in chunks(list(by_id.values()), 1000):
            await tx.executemany(INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in batch])
            await oplog.record_inserts(
                tx, op, [(cp.metadata.checkpoint_id, cp.metadata.thread_id) for cp in batch]
            )
        op_id = await oplog.finish(tx, op, changed)
    ctx.done(op_id)
    return OpResult(op_id, "import", summary, created=list(by_id), deleted=replaced, skipped=skipped)


def import_item(item: Any) -> Checkpoint:
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, dict):
        item = Checkpoint.from_dict(item)
    if not isinstance(item, Checkpoint):
        raise UsageError(f"cannot import {type(item).__name__}; expected a Checkpoint")
    if isinstance(item.metadata.created_at, datetime):  # stored as the ISO text, as put() does
        item.metadata.created_at = iso(item.metadata.created_at)
    return item
