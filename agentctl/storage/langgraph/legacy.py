"""The previous release's op log of the LangGraph format (`agentctl_langgraph_oplog`, trash
`agentctl_langgraph_trash_checkpoints`, `_writes`, `_blobs`), moved into the journal by
the first write (`migrate`; the shared part: journal/legacy.py). The images of an op
still done: what it deleted (its rows in the old trash: "before") and what it inserted
(the rows standing at the keys its details name: "after"): a rewind's fork (and a
merge's blobs), a branch's thread, a run's or edit's rows. An undone op is adopted
purged. Its fingerprints are the old ones (the same function)."""

from __future__ import annotations

from typing import Any

from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.legacy import OldLog, done
from agentctl.storage.langgraph.store import OPLOG, TRASH_B, TRASH_CP, TRASH_W

OLD = OldLog(OPLOG, (TRASH_W, TRASH_CP, TRASH_B), op="agentctl_op_id")


async def _after(h: Any, tx: Any, op_id: int, kind: str, d: dict[str, Any]) -> list[str]:
    """Set aside the rows the op inserted (its "after" images); the tables written."""

    async def take(table: str, where: str, *params: Any) -> str:
        await trash.set_aside(tx, op_id, table, where, params, image="after")
        return table

    tid = d.get("thread_id")
    if kind in ("rewind", "merge"):
        where = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
        out = [
            await take(h.W, where, tid, d.get("ns", ""), d["fork"]),
            await take("checkpoints", where, tid, d.get("ns", ""), d["fork"]),
        ]
        if kind == "merge" and h._pg:  # the blobs it added: versions no other checkpoint names
            b = "checkpoint_blobs"
            out.append(
                await take(
                    b,
                    f"thread_id = ? AND checkpoint_ns = '' AND (channel, version) IN (SELECT v.key, "
                    "v.value FROM checkpoints c CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> "
                    "'channel_versions') v WHERE c.thread_id = ? AND c.checkpoint_ns = '' AND "
                    "c.checkpoint_id = ?) AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id "
                    f"= {b}.thread_id AND c.checkpoint_ns = '' AND c.checkpoint_id <> ? AND "
                    f"c.checkpoint -> 'channel_versions' ->> {b}.channel = {b}.version)",
                    tid,
                    tid,
                    d["fork"],
                    d["fork"],
                )
            )
        return out
    if kind == "branch":
        return [await take(t, "thread_id = ?", d["new_thread"]) for t in h._keys]
    if kind in ("run", "edit"):
        out = []
        for table, keys in (d.get("inserted") or {}).items():
            if table in h._keys and keys:  # each key but its thread_id
                one = "(" + " AND ".join(f"{c} = ?" for c in h._keys[table][1:]) + ")"
                out.append(
                    await take(
                        table,
                        f"thread_id = ? AND ({' OR '.join(one for _ in keys)})",
                        tid,
                        *[v for k in keys for v in k],
                    )
                )
        return out
    return []


async def migrate(h: Any, tx: Any) -> None:
    """The old op log and trash into the journal, in the caller's transaction."""
    if not await tx.table_exists(OPLOG):
        return
    await h.lock(tx, [])
    olds = {h.W: TRASH_W, "checkpoints": TRASH_CP, "checkpoint_blobs": TRASH_B}
    present = {t: o for t, o in olds.items() if await tx.table_exists(o)}
    for rec in await OLD.records(tx) or []:
        op_id, kind, d = rec["op_id"], rec["kind"], rec["details"]
        after = d.pop("after", None) or {}
        threads = (
            [d["new_thread"]]
            if kind == "branch"
            else [d["thread_id"]]
            if kind == "merge"
            else list(after) or rec["threads"]
        )
        rec["fingerprints"] = {t: after[t] for t in threads if t in after}
        if kind != "undo":
            rec["threads"] = threads
        tables: list[str] = []
        if done(rec):
            for table, old in present.items():
                if await trash.add_images(
                    tx, op_id, table, "before", f"SELECT * FROM {old} WHERE agentctl_op_id = ?", (op_id,)
                ):
                    tables.append(table)
            tables += await _after(h, tx, op_id, kind, d)
        else:  # an undone op kept no image (its undo emptied its trash); a purge is no op to undo
            rec["purged"] = kind != "undo"
        rec["tables"] = {t: {"key": list(h._keys[t]), "thread": "thread_id"} for t in h._keys if t in tables}
        await ops.adopt(tx, rec)
    await OLD.drop(tx)
