"""The OpenAI Agents SDK format's previous op log (`agentctl_openai_oplog`, trash
`agentctl_openai_trash`), moved into the journal by the first write (`migrate`; the
shared part: journal/legacy.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentctl.storage.journal import ops as journal
from agentctl.storage.journal import trash
from agentctl.storage.journal.legacy import OldLog, done
from agentctl.storage.openai_agents.store import OLD_OPLOG, OLD_TRASH
from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.sql.conn import Transaction

SESSION_KEY = ("session_id",)
ITEM_KEY = ("id",)
OLD = OldLog(OLD_OPLOG, (OLD_TRASH,))
#: the fingerprint of a thread whose old op (migrated) was already written over
CHANGED = "changed before the journal"


class OldOplog:
    """The journal's hooks `old_log` and `migrate` of OpenAIHistory
    (whose `fingerprint`, `_typed` and `_ids` it uses)."""

    store: Any
    fingerprint: Callable[[Any, str], Awaitable[Any]]
    _typed: Callable[[Any, str, str], Awaitable[str]]
    _ids: Callable[[Any, str], Awaitable[list[int]]]

    old_log = OLD

    async def migrate(self, tx: Transaction) -> None:
        """The previous op log into the journal, each op under its op id. A done op gets
        its rows' before- and after-images (from the old trash, its details and the rows
        as they stand) and its threads' fingerprints as it left them (CHANGED when the
        old log's own check finds them written over since): the done ops are taken
        newest first, each undone by the journal once adopted, so that the next one is
        seen as it left the session; then all are redone, which gives the rows back as
        they stand. An undone op cannot be redone (its after-images were not kept)."""
        records = await OLD.records(tx, newest_first=True)
        if records is None:
            return
        undone: list[int] = []
        for rec in records:
            op_id = rec["op_id"]
            still = done(rec)
            if still:
                rec["tables"], ok = await self._old_images(tx, op_id, rec["kind"], rec["details"])
                rec["fingerprints"] = {
                    t: await self.fingerprint(tx, t) if ok else CHANGED for t in rec["threads"]
                }
            await journal.adopt(tx, rec)
            if still:
                await journal.undo(tx, op_id)
                undone.append(op_id)
        for op_id in reversed(undone):
            await journal.redo(tx, op_id)
        await OLD.drop(tx)

    async def _image(
        self,
        tx: Transaction,
        op_id: int,
        table: str,
        image: str,
        where: str,
        params: Sequence[Any],
        **values: Any,
    ) -> None:
        """The rows of `table` matching `where` as an image of op `op_id`, with `values`
        ({column: value as text}) in place of theirs."""
        if not values:
            await trash.set_aside(tx, op_id, table, where, params, image=image)
            return
        cols = await trash.columns(tx, table)
        typed = [
            f"{await self._typed(tx, table, c)} AS {trash._q(c)}" if c in values else trash._q(c)
            for c in cols
        ]
        await trash.add_images(
            tx,
            op_id,
            table,
            image,
            f"SELECT {', '.join(typed)} FROM {trash._q(table)} WHERE {where}",
            [values[c] for c in cols if c in values] + list(params),
        )

    async def _old_images(
        self, tx: Transaction, op_id: int, kind: str, d: dict[str, Any]
    ) -> tuple[dict[str, list[str]], bool]:
        """The images of an old done op in the journal's trash: ({table: key}, whether the
        old log's check still finds its threads as the op left them)."""
        S, M = self.store.sessions_table, self.store.messages_table
        if kind == "branch" and d.get("sdk_branch"):
            where, key = ("session_id = ? AND branch_id = ?", (d["session"], d["sdk_branch"]))
            tables = {"message_structure": list(ITEM_KEY)}
            await self._image(tx, op_id, "message_structure", "after", where, key)
            if d.get("reserved"):
                tables["branch_reservations"] = ["session_id", "branch_id"]
                await self._image(tx, op_id, "branch_reservations", "after", where, key)
            n = await tx.fetch("SELECT COUNT(*) AS n FROM message_structure WHERE " + where, *key)
            return tables, int(n[0]["n"]) == int(d["rows"])
        session = d.get("branch_session") or d["session"]
        ok = "after" not in d or (await self.fingerprint(tx, session))[:4] == d["after"]
        stamp = {"updated_at": d["updated_at_before"]} if d.get("updated_at_before") is not None else {}
        if kind == "branch":
            created = [int(i) for i in d["created"]]
            await self._image(tx, op_id, S, "after", "session_id = ?", (session,))
            await self._image(
                tx,
                op_id,
                M,
                "after",
                f"session_id = ? AND id IN ({marks(len(created))})",
                (session, *created),
            )
            return {S: list(SESSION_KEY), M: list(ITEM_KEY)}, await self._ids(tx, session) == created
        if kind == "edit":
            await self._image(tx, op_id, M, "before", "id = ?", (int(d["row"]),), message_data=d["before"])
            await self._image(tx, op_id, M, "after", "id = ?", (int(d["row"]),))
            now = await tx.fetch(f"SELECT message_data FROM {self.store._M} WHERE id = ?", int(d["row"]))
            return {M: list(ITEM_KEY)}, ok and bool(now) and now[0]["message_data"] == d["new"]
        if kind == "run":
            if not d["session_created"]:
                await self._image(tx, op_id, S, "before", "session_id = ?", (session,), **stamp)
            await self._image(tx, op_id, S, "after", "session_id = ?", (session,))
            ids = [int(i) for i in d["inserted"]]
            await self._image(tx, op_id, M, "after", f"id IN ({marks(len(ids))})" if ids else "1 = 0", ids)
            return {S: list(SESSION_KEY), M: list(ITEM_KEY)}, ok
        # a rewind
        moved = [int(i) for i in d["moved"]]
        among = f"id IN ({marks(len(moved))})"
        await self._image(tx, op_id, S, "before", "session_id = ?", (session,), **stamp)
        await self._image(tx, op_id, S, "after", "session_id = ?", (session,))
        if d["hard"]:
            await trash.add_images(
                tx,
                op_id,
                M,
                "before",
                f"SELECT row_id AS id, session_id, message_data, created_at FROM {OLD_TRASH} WHERE op_id = ?",
                (op_id,),
            )
            n = await tx.fetch(f"SELECT COUNT(*) AS n FROM {OLD_TRASH} WHERE op_id = ?", op_id)
            return {S: list(SESSION_KEY), M: list(ITEM_KEY)}, ok and int(n[0]["n"]) == len(moved)
        archive = d["archive"]
        if d.get("archive_created"):
            await self._image(tx, op_id, S, "after", "session_id = ?", (archive,))
        await self._image(tx, op_id, M, "before", among, moved, session_id=session)
        await self._image(tx, op_id, M, "after", among, moved)
        return {S: list(SESSION_KEY), M: list(ITEM_KEY)}, ok and await self._ids(tx, archive) == moved
