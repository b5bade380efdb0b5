"""The previous release's op log of the AgentOS engine (`agentctl_oplog`, `_rows`,
`_threads`, `agentctl_trash`), moved into the journal by the first write (`migrate`; the
shared part: journal/legacy.py). The images of an op still done: the rows it deleted
(its rows in the old trash: "before"), the rows it inserted or moved (standing now:
"after"; a moved row's "before": the same row with the old thread and parent its
`agentctl_oplog_rows` kept). An undone op is adopted purged. Its fingerprints are the
old ones (the same function), so an op whose thread moved since stays refused."""

from __future__ import annotations

from typing import Any

from agentctl.storage.agentos.rows import ALL_COLUMNS, COLUMNS
from agentctl.storage.agentos.rows import JOURNAL_KEY as KEY
from agentctl.storage.agentos.rows import JOURNAL_THREAD as THREAD
from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.legacy import OldLog, done

TABLE = "checkpoints"
ROWS = "agentctl_oplog_rows"
THREADS = "agentctl_oplog_threads"
TRASH = "agentctl_trash"
OLD = OldLog("agentctl_oplog", (TRASH,), others=(ROWS, THREADS))


async def migrate(tx: Any) -> None:
    """The old op log and trash into the journal, in the caller's transaction."""
    records = await OLD.records(tx)
    if records is None:
        return
    has_trash = await tx.table_exists(TRASH)
    # a moved row as it was: the standing row with the thread and parent it had
    was = ", ".join(
        "r.old_thread_id AS thread_id"
        if c == THREAD
        else "r.old_parent_id AS parent_id"
        if c == "parent_id"
        else f"c.{c}"
        for c in ["id", *COLUMNS]
    )
    moved = (
        f"SELECT {was} FROM checkpoints c JOIN {ROWS} r ON r.checkpoint_id = c.checkpoint_id "
        "WHERE r.op_id = ? AND r.action = 'move'"
    )
    standing = f"checkpoint_id IN (SELECT checkpoint_id FROM {ROWS} WHERE op_id = ?)"
    for rec in records:
        op_id = rec["op_id"]
        prints = {
            f["thread_id"]: [int(f["n"]), int(f["min_id"]), int(f["max_id"]), str(f["sum_id"])]
            for f in await tx.fetch(f"SELECT * FROM {THREADS} WHERE op_id = ?", op_id)
        }
        rec["fingerprints"] = prints
        if done(rec):
            rec["tables"] = {TABLE: {"key": list(KEY), "thread": THREAD}}
            if has_trash:
                await trash.add_images(
                    tx, op_id, TABLE, "before", f"SELECT {ALL_COLUMNS} FROM {TRASH} WHERE op_id = ?", (op_id,)
                )
            await trash.add_images(tx, op_id, TABLE, "before", moved, (op_id,))
            await trash.set_aside(tx, op_id, TABLE, standing, (op_id,), image="after")
            rec["threads"] = list(prints) or rec["threads"]  # the threads it changed: those undo compares
        else:
            rec["purged"] = rec["kind"] != "undo"
        await ops.adopt(tx, rec)
    await OLD.drop(tx)
