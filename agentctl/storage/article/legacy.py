"""The article's previous op log, moved into the journal by the first write (`migrate`;
the shared part: journal/legacy.py). Its tables besides the log: `agentctl_article_rows`
(rows an op inserted, action 'insert', or moved to another session, 'move' with the old
session id), `agentctl_article_sessions_after` (each changed session's fingerprint after
the op) and `agentctl_article_trash_<table>` (exact copies of the rows an op deleted,
`agentctl_action` 'deleted', or of a row before it updated it, 'before').

The images of an op still done:
- before: the old trash's rows ('deleted' and 'before'); a moved row's current image with
  its old session; a merge's branch record with the fork point its details kept;
- after: each row the op inserted, moved or updated as it stands now, or, when a later op
  deleted or updated it, as that op's trash kept it (the earliest such op);
- fingerprints: the old ones (the fingerprint is computed as it was); a thread the old
  log did not check (a branch's source) is not checked by the op's first move either
  (`unchecked`: its fingerprint taken as it stands then).
Undone ops and the old log's purge lines are adopted purged. The old tables are then
dropped (`agentctl_article_branches` stays: the store reads it)."""

from __future__ import annotations

import json
from typing import Any

from agentctl.storage.article import schema as S
from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.legacy import OldLog, done

ROWS = S.PREFIX + "rows"
AFTER = S.PREFIX + "sessions_after"
#: the previous release's trash of each table
OLD_TRASH = {t: f"{S.PREFIX}trash_{t}" for t in ("sessions", "messages", "tool_logs", "tasks")}
OLD = OldLog(
    S.PREFIX + "oplog",
    tuple(OLD_TRASH.values()),
    op="agentctl_op_id",
    freed="agentctl_action = 'deleted'",
    others=(ROWS, AFTER),
)
#: details of an adopted op: its threads the old log kept no fingerprint of
UNCHECKED = "unchecked_before_journal"


async def unchecked(history: Any, tx: Any, record: dict[str, Any]) -> None:
    """Before an adopted op's first move: the threads the old log did not check get their
    fingerprint as they stand (the old undo's check, no stricter)."""
    threads = record["details"].get(UNCHECKED)
    if not threads or record["undone"]:
        return
    prints = {**record["fingerprints"], **{t: await history.fingerprint(tx, t) for t in threads}}
    details = {k: v for k, v in record["details"].items() if k != UNCHECKED}
    await tx.execute(
        f"UPDATE {ops.LOG} SET fingerprints = ?, details = ? WHERE op_id = ?",
        json.dumps(prints),
        json.dumps(details),
        record["op_id"],
    )


async def _after(tx: Any, op_id: int, table: str, keys: str, params: tuple[Any, ...]) -> None:
    """The after-images of the rows of `table` whose key is in `keys` (a SELECT): as a later
    op's old trash kept them (the earliest), else as they stand now."""
    key = "session_id" if table == S.BRANCHES else "id"
    cols = ", ".join(f'"{c}"' for c in await trash.columns(tx, table))
    old = OLD_TRASH.get(table)
    if old is not None and await tx.table_exists(old):
        await trash.add_images(
            tx,
            op_id,
            table,
            "after",
            f"SELECT {cols} FROM {old} o WHERE o.agentctl_op_id > ? AND o.id IN ({keys}) AND o.agentctl_op_id = "
            f"(SELECT MIN(p.agentctl_op_id) FROM {old} p WHERE p.id = o.id AND p.agentctl_op_id > ?)",
            (op_id, *params, op_id),
        )
    await trash.set_aside(
        tx,
        op_id,
        table,
        f"{key} IN ({keys}) AND {key} NOT IN (SELECT {key} FROM "
        f"{trash.trash_name(table)} WHERE {trash.OP} = ? AND {trash.IMAGE} = 'after')",
        (*params, op_id),
        image="after",
    )


async def _before_from_after(
    tx: Any,
    op_id: int,
    table: str,
    replace: dict[str, str],
    params: tuple[Any, ...],
    where: str = "1 = 1",
    wparams: tuple[Any, ...] = (),
) -> None:
    """Before-images made of the op's after-images with some columns replaced (SQL)."""
    cols = await trash.columns(tx, table)
    exprs = ", ".join(f'{replace[c]} AS "{c}"' if c in replace else f'"{c}"' for c in cols)
    await trash.add_images(
        tx,
        op_id,
        table,
        "before",
        f"SELECT {exprs} FROM {trash.trash_name(table)} WHERE {trash.OP} = ? AND "
        f"{trash.IMAGE} = 'after' AND {where}",
        (*params, op_id, *wparams),
    )


async def _images(tx: Any, op_id: int, details: dict[str, Any], kind: str) -> list[str]:
    """The op's images into the journal's trash; the tables they are of."""
    rows = (
        await tx.fetch(
            f"SELECT tbl, row_key, row_num, action, old_session_id FROM {ROWS} WHERE op_id = ?", op_id
        )
        if await tx.table_exists(ROWS)
        else []
    )
    for table in ("sessions", "messages", "tool_logs", "tasks"):
        old = OLD_TRASH[table]
        if not await tx.table_exists(old) or not await tx.table_exists(table):
            continue
        cols = ", ".join(f'"{c}"' for c in await trash.columns(tx, table))
        await trash.add_images(
            tx, op_id, table, "before", f"SELECT {cols} FROM {old} WHERE agentctl_op_id = ?", (op_id,)
        )
        await _after(
            tx,
            op_id,
            table,
            f"SELECT id FROM {old} WHERE agentctl_op_id = ? AND agentctl_action = 'before'",
            (op_id,),
        )
    for table in ("sessions", "messages", "tool_logs", "tasks", S.BRANCHES):
        col = "row_num" if table in ("messages", "tool_logs") else "row_key"
        for action in ("insert", "move"):
            if any(r["tbl"] == table and r["action"] == action for r in rows):
                await _after(
                    tx,
                    op_id,
                    table,
                    f"SELECT {col} FROM {ROWS} WHERE op_id = ? AND tbl = ? AND action = ?",
                    (op_id, table, action),
                )
        for old_sid in sorted(
            {r["old_session_id"] for r in rows if r["tbl"] == table and r["action"] == "move"}
        ):
            await _before_from_after(
                tx,
                op_id,
                table,
                {"session_id": "CAST(? AS TEXT)"},
                (old_sid,),
                f"id IN (SELECT row_num FROM {ROWS} WHERE op_id = ? AND tbl = ? AND "
                "action = 'move' AND old_session_id = ?)",
                (op_id, table, old_sid),
            )
    if kind == "merge" and await tx.table_exists(S.BRANCHES):
        await _after(tx, op_id, S.BRANCHES, "SELECT CAST(? AS TEXT)", (details.get("branch_thread"),))
        big = "BIGINT" if tx.kind == "postgres" else "INTEGER"
        await _before_from_after(
            tx,
            op_id,
            S.BRANCHES,
            {"merged_message_id": f"CAST(? AS {big})", "into_head": f"CAST(? AS {big})"},
            (details.get("old_merged_message_id"), details.get("old_into_head")),
        )
    held = []
    for table in S.KEYS:
        if await tx.table_exists(trash.trash_name(table)) and (
            await tx.fetch(
                f"SELECT 1 AS x FROM {trash.trash_name(table)} WHERE {trash.OP} = ? LIMIT 1", op_id
            )
        ):
            held.append(table)
    return held


async def migrate(tx: Any) -> None:
    """The old op log into the journal, in this transaction (see the module doc)."""
    records = await OLD.records(tx)
    if records is None:
        return
    prints: dict[int, dict[str, str]] = {}
    if await tx.table_exists(AFTER):
        for r in await tx.fetch(f"SELECT op_id, session_id, fingerprint FROM {AFTER} ORDER BY op_id"):
            prints.setdefault(int(r["op_id"]), {})[r["session_id"]] = r["fingerprint"]
    for rec in records:
        op_id = rec["op_id"]
        if done(rec):
            held = await _images(tx, op_id, rec["details"], rec["kind"])
            rec.update(tables={t: [S.KEYS[t]] for t in held}, fingerprints=prints.get(op_id, {}))
            unchecked = [t for t in rec["threads"] if t not in rec["fingerprints"]]
            if unchecked:
                rec["details"][UNCHECKED] = unchecked
        else:  # an undone op's undo emptied its trash: listed, not redone
            rec["purged"] = rec["kind"] != "undo"
        await ops.adopt(tx, rec)
    await OLD.drop(tx)
