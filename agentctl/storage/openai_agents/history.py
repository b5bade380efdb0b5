"""Writes on the OpenAI Agents SDK's session tables: `rewind` (and its `undo`).

`rewind SESSION@N` keeps the session's items 1..N; the later items move, with their
row ids, to an archive session `SESSION-rewind-XXXX` (a new row of the sessions
table), so `SQLiteSession.get_items()` of the session returns items 1..N and the
archive session's `get_items()` the rest. With `hard=True` they go to agentctl's trash
table instead (until `purge`). Each rewind is one transaction, recorded in
`agentctl_openai_oplog` (the trash is `agentctl_openai_trash`); `undo` moves the items
back and the session's `updated_at` to its value before the rewind, refusing when the
session changed in any way since (items added, popped, cleared or replaced: its items'
count and ids, and its row, are kept after the rewind and compared).

On Postgres every write locks the sessions' rows first, as the SDK's SQLAlchemySession
does before it touches their items.

Sessions of an `AdvancedSQLiteSession` (rows in `message_structure`, whose branches
share item rows) are refused by rewind: moving their rows would break the SDK's branches.

`branch SESSION@N NAME`: on a `SQLiteSession` session, a new session
`SESSION-branch-NAME-XXXX` with copies of items 1..N (the SDK reads it like any
session); on an `AdvancedSQLiteSession` session, a branch NAME of the same session
holding items 1..N of the item's branch (`message_structure` rows, as the SDK's
`create_branch_from_turn` makes them, and a `branch_reservations` row), which
`list_branches` lists and `switch_to_branch` opens. Undo removes what the branch
added, refusing once the SDK added items to it.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import TYPE_CHECKING, Any, Sequence

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.model import utc_now_iso
from agentctl.storage.contract import History, whole_undo_only
from agentctl.storage.sidelog import RewindAndBranchOnly, SideLog, purge_trash
from agentctl.storage.openai_agents.store import OPLOG, TRASH
from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction
    from agentctl.storage.openai_agents.store import OpenAIAgentsStore

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: the ops of `agentctl run` (the SDK's Runner wrote the items) and `agentctl edit`
BY_THE_SDK = ("run", "edit")


class OpenAIHistory(RewindAndBranchOnly, History):
    def __init__(self, store: OpenAIAgentsStore, *, now: Any = None, hex4: Any = None) -> None:
        self.store = store
        self._now = now or utc_now_iso
        self._hex = hex4 or (lambda: secrets.token_hex(2))
        self.log = SideLog(OPLOG, store.kind)

    # ---- helpers ---------------------------------------------------------------------

    async def _ensure_tables(self, tx: Transaction) -> None:
        await self.log.ensure(tx)
        await tx.execute(
            f"CREATE TABLE IF NOT EXISTS {TRASH} (op_id INTEGER NOT NULL, row_id BIGINT NOT NULL, "
            "session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TIMESTAMP)")

    async def _record(self, tx: Transaction, kind: str, summary: str, threads: list[str],
                      details: dict[str, Any], undo_of: int | None = None) -> int:
        op_id = await self.log.record(tx, self._now(), kind, summary, threads, details, undo_of)
        self.last_op_id = op_id
        return op_id

    async def _lock_sessions(self, tx: Transaction, sessions: list[str]) -> None:
        """Postgres: the sessions' rows locked first, as the SDK's SQLAlchemySession
        locks a session's row before its items (an agentctl write and the SDK's then
        wait on each other instead of deadlocking)."""
        if self.store.kind == "postgres" and sessions:
            names = sorted(set(sessions))
            await tx.fetch(f"SELECT session_id FROM {self.store._S} WHERE session_id IN ({marks(len(names))}) "
                           "ORDER BY session_id FOR UPDATE", *names)

    async def _items_print(self, tx: Transaction, session: str) -> list[Any]:
        """What changes whenever the SDK writes the session's items (ids only grow: an
        added, popped, cleared or replaced item changes it) and whether its row exists."""
        M, S = self.store._M, self.store._S
        r = (await tx.fetch(f"SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m, COALESCE(SUM(id), 0) AS s FROM {M} "
                            "WHERE session_id = ?", session))[0]
        row = await tx.fetch(f"SELECT 1 AS x FROM {S} WHERE session_id = ?", session)
        return [int(r["n"]), int(r["m"]), int(r["s"]), bool(row)]

    async def _updated_at(self, tx: Transaction, session: str) -> str | None:
        rows = await tx.fetch(f"SELECT CAST(updated_at AS TEXT) AS u FROM {self.store._S} WHERE session_id = ?",
                              session)
        return rows[0]["u"] if rows else None

    async def _set_updated_at(self, tx: Transaction, session: str, text: str | None) -> None:
        """The session's updated_at back to `text` (as read by `_updated_at`)."""
        S = self.store._S
        if text is None:
            return
        value = "?"
        if self.store.kind == "postgres":  # text to the column's own type
            typ = (await tx.fetch("SELECT format_type(a.atttypid, a.atttypmod) AS t FROM pg_attribute a "
                                  "WHERE a.attrelid = to_regclass(?) AND a.attname = 'updated_at'", S))[0]["t"]
            value = f"CAST(CAST(? AS TEXT) AS {typ})"
        await tx.execute(f"UPDATE {S} SET updated_at = {value} WHERE session_id = ?", text, session)

    async def _oplog_exists(self) -> bool:
        return await self.store._db.table_exists(OPLOG)

    async def _target(self, checkpoint_id: str) -> Any:
        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        if self.store.has_structure:
            rows = await self.store._q("SELECT 1 AS x FROM message_structure WHERE session_id = ? LIMIT 1",
                                       meta.thread_id)
            if rows:
                raise UsageError(
                    f"session {meta.thread_id!r} is an AdvancedSQLiteSession (its branches share "
                    "item rows); agentctl rewinds only SQLiteSession sessions")
        return meta

    async def _fresh_archive(self, session: str, checkpoint_id: str) -> str:
        from agentctl.storage.results import hashed_names

        # from a hash of the session and the target: a --dry-run names the session the write uses
        names = hashed_names(f"{session}-rewind-", f"{session}\0{checkpoint_id}")
        for _ in range(20):
            name = names()
            if not await self.store._q(f"SELECT 1 AS x FROM {self.store._M} WHERE session_id = ? LIMIT 1", name) \
                    and not await self.store._q(
                        f"SELECT 1 AS x FROM {self.store._S} WHERE session_id = ? LIMIT 1", name):
                return name
        raise OperationError(f"no free archive session name for {session!r}; retry")

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> Any:
        from agentctl.storage.results import RewindPlan

        meta = await self._target(checkpoint_id)
        moved = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        archive = None if hard or not moved else await self._fresh_archive(meta.thread_id, meta.checkpoint_id)
        return RewindPlan(target=meta, thread_id=meta.thread_id, moved=moved, archive_thread=archive, hard=hard)

    async def rewind(self, checkpoint_id: str, hard: bool = False, *,
                     archive_thread: str | None = None) -> Any:
        from agentctl.storage.results import TimeTravelResult
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of, row_id_of

        meta = await self._target(checkpoint_id)
        session = meta.thread_id
        target_id = row_id_of(meta.checkpoint_id)
        before = await self.store.count(session)
        S, M = self.store._S, self.store._M
        archive = None if hard else (archive_thread or await self._fresh_archive(session, meta.checkpoint_id))
        op_id = None
        moved: list[int] = []
        async with self.store._db.transaction([session]) as tx:
            await self._lock_sessions(tx, [session])
            rows = await tx.fetch(f"SELECT id FROM {M} WHERE session_id = ? AND id > ? ORDER BY id",
                                  session, target_id)
            moved = [int(r["id"]) for r in rows]
            if moved:
                await self._ensure_tables(tx)
                details: dict[str, Any] = {"session": session, "target": target_id, "moved": moved,
                                           "hard": hard, "archive": archive, "archive_created": False,
                                           "updated_at_before": await self._updated_at(tx, session)}
                if hard:
                    summary = f"rewind {session} to step {meta.step}; {len(moved)} item(s) to the trash"
                else:
                    summary = f"rewind {session} to step {meta.step}; {len(moved)} item(s) to {archive}"
                op_id = await self._record(tx, "rewind", summary, [session] + ([archive] if archive else []),
                                           details)
                if hard:
                    await tx.execute(
                        f"INSERT INTO {TRASH} (op_id, row_id, session_id, message_data, created_at) "
                        f"SELECT CAST(? AS INTEGER), id, session_id, message_data, created_at FROM {M} "
                        "WHERE session_id = ? AND id > ?", op_id, session, target_id)
                    await tx.execute(f"DELETE FROM {M} WHERE session_id = ? AND id > ?", session, target_id)
                else:
                    exists = await tx.fetch(f"SELECT 1 AS x FROM {S} WHERE session_id = ?", archive)
                    if await tx.fetch(f"SELECT 1 AS x FROM {M} WHERE session_id = ? LIMIT 1", archive):
                        raise OperationError(f"archive session {archive!r} appeared meanwhile; retry")
                    if not exists:
                        await tx.execute(f"INSERT INTO {S} (session_id) VALUES (?)", archive)
                        details["archive_created"] = True
                        await self.log.set_details(tx, op_id, details)
                    await tx.execute(f"UPDATE {M} SET session_id = ? WHERE session_id = ? AND id > ?",
                                     archive, session, target_id)
                await tx.execute(f"UPDATE {S} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?", session)
                details["after"] = await self._items_print(tx, session)
                await self.log.set_details(tx, op_id, details)
        self.store._archive_map = None  # the store reads the log again
        cp = await self.store.get(meta.checkpoint_id)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(meta.checkpoint_id)
        ids = [cid_of(i) for i in moved]
        return TimeTravelResult(checkpoint=cp, thread_id=session, rewind_depth=len(moved),
                                snapshot_count_before=before, op_id=op_id,
                                archive_thread=archive if moved else None,
                                moved=[] if hard else ids, deleted=ids if hard else [])

    # ---- branch ----------------------------------------------------------------------

    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """A SQLiteSession session: a new session `SESSION-branch-NAME-XXXX` with copies of
        items 1..N (new row ids, same data and times); its id. An AdvancedSQLiteSession
        session: a branch NAME of the session (rows of `message_structure` naming the
        items 1..N of the item's branch, as `create_branch_from_turn` copies them), which
        the SDK's `list_branches` / `switch_to_branch` see; the session's id."""
        from agentctl.storage.openai_agents.store import row_id_of

        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-')")
        meta = await self.store.get_metadata(from_checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(from_checkpoint_id)
        session, target = meta.thread_id, row_id_of(meta.checkpoint_id)
        assert target is not None  # the id of a row get_metadata found
        if self.store.has_structure and await self.store._q(
                "SELECT 1 AS x FROM message_structure WHERE session_id = ? LIMIT 1", session):
            return await self._sdk_branch(meta, session, target, name)
        S, M = self.store._S, self.store._M
        new = await self._fresh_name(session, f"{session}-branch-{name}")
        async with self.store._db.transaction([session, new]) as tx:
            await self._lock_sessions(tx, [session, new])
            rows = await tx.fetch(f"SELECT id FROM {M} WHERE session_id = ? AND id <= ? ORDER BY id",
                                  session, target)
            if await tx.fetch(f"SELECT 1 AS x FROM {M} WHERE session_id = ? LIMIT 1", new):
                raise OperationError(f"session {new!r} appeared meanwhile; retry")
            await self._ensure_tables(tx)
            op_id = await self._record(tx, "branch", f"branch {new} from {session} step {meta.step}",
                                       [new, session], {"session": session, "target": target,
                                                        "branch_session": new, "created": []})
            if not await tx.fetch(f"SELECT 1 AS x FROM {S} WHERE session_id = ?", new):
                await tx.execute(f"INSERT INTO {S} (session_id) VALUES (?)", new)
            for r in rows:  # one by one: the copies' ids in the items' order
                await tx.execute(f"INSERT INTO {M} (session_id, message_data, created_at) "
                                 f"SELECT ?, message_data, created_at FROM {M} WHERE id = ?", new, int(r["id"]))
            created = [int(r["id"]) for r in await tx.fetch(
                f"SELECT id FROM {M} WHERE session_id = ? ORDER BY id", new)]
            await self.log.set_details(tx, op_id, {"session": session, "target": target,
                                                   "branch_session": new, "created": created})
        self.store._archive_map = None
        return new

    async def _fresh_name(self, session: str, stem: str) -> str:
        for _ in range(20):
            name = f"{stem}-{self._hex()}"
            if not await self.store._q(f"SELECT 1 AS x FROM {self.store._M} WHERE session_id = ? LIMIT 1", name) \
                    and not await self.store._q(
                        f"SELECT 1 AS x FROM {self.store._S} WHERE session_id = ? LIMIT 1", name):
                return name
        raise OperationError(f"no free session name for a branch of {session!r}; retry")

    async def _sdk_branch(self, meta: Any, session: str, target: int, name: str) -> str:
        async with self.store._db.transaction([session]) as tx:
            await self._lock_sessions(tx, [session])
            have = await tx.fetch("SELECT branch_id, sequence_number FROM message_structure WHERE session_id = ? "
                                  "AND message_id = ? ORDER BY branch_id", session, target)
            if not have:
                raise UsageError(f"item {meta.checkpoint_id} is on no branch of session {session!r}")
            source = next((h for h in have if h["branch_id"] == "main"), have[0])
            taken = await tx.fetch("SELECT 1 AS x FROM message_structure WHERE session_id = ? AND branch_id = ? "
                                   "LIMIT 1", session, name)
            reservations = await tx.table_exists("branch_reservations")
            if reservations:
                taken = taken or await tx.fetch("SELECT 1 AS x FROM branch_reservations WHERE session_id = ? "
                                                "AND branch_id = ?", session, name)
            if taken:
                raise UsageError(f"branch {name!r} of session {session!r} exists (or was used); choose another name")
            rows = await tx.fetch(
                "SELECT message_id, message_type, user_turn_number, branch_turn_number, tool_name "
                "FROM message_structure WHERE session_id = ? AND branch_id = ? AND sequence_number <= ? "
                "ORDER BY sequence_number", session, source["branch_id"], source["sequence_number"])
            start = (await tx.fetch("SELECT COALESCE(MAX(sequence_number), 0) AS n FROM message_structure "
                                    "WHERE session_id = ?", session))[0]["n"]
            await self._ensure_tables(tx)
            op_id = await self._record(
                tx, "branch", f"branch {name} of {session} from {source['branch_id']} step {meta.step}",
                [session], {"session": session, "target": target, "sdk_branch": name,
                            "from_branch": source["branch_id"], "rows": len(rows), "reserved": reservations})
            for i, r in enumerate(rows, 1):
                await tx.execute(
                    "INSERT INTO message_structure (session_id, message_id, branch_id, message_type, "
                    "sequence_number, user_turn_number, branch_turn_number, tool_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    session, r["message_id"], name, r["message_type"], int(start) + i, r["user_turn_number"],
                    r["branch_turn_number"], r["tool_name"])
            if reservations:
                await tx.execute("INSERT INTO branch_reservations (session_id, branch_id) VALUES (?, ?)", session, name)
        self.last_op_id = op_id
        return session

    # ---- the log ---------------------------------------------------------------------

    def _op(self, row: dict[str, Any]) -> Any:
        details = json.loads(row["details"])
        purgeable = len(details.get("moved", [])) if details.get("hard") and not row["undone"] \
            and not row["purged"] else 0
        return SideLog.record_of(row, purgeable)

    async def oplog(self, limit: int = 50) -> list[Any]:
        return [self._op(r) for r in await self.log.rows(self.store, limit)]

    async def undo(self, op_id: int | None = None, threads: Sequence[str] | None = None) -> Any:
        whole_undo_only("openai-agents", threads)
        from agentctl.storage.results import OpResult
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of

        S, M = self.store._S, self.store._M
        op = await self.log.pick(self.store, op_id, ("rewind", "branch") + BY_THE_SDK)
        op_id = op.op_id
        d = op.details
        if op.kind == "branch":
            return await self._undo_branch(op)
        if op.kind in BY_THE_SDK:
            return await self._undo_sdk_write(op)
        session, moved = d["session"], [int(i) for i in d["moved"]]
        async with self.store._db.transaction([session] + ([d["archive"]] if d.get("archive") else [])) as tx:
            await self._lock_sessions(tx, [session] + ([d["archive"]] if d.get("archive") else []))
            newer = await tx.fetch(f"SELECT COUNT(*) AS n FROM {M} WHERE session_id = ? AND id > ?",
                                   session, int(d["target"]))
            if int(newer[0]["n"]):
                raise OperationError(
                    f"session {session!r} has {newer[0]['n']} item(s) added since operation {op_id}; "
                    "undoing it would interleave them with the restored items")
            if "after" in d and await self._items_print(tx, session) != d["after"]:
                raise OperationError(
                    f"session {session!r} changed since operation {op_id} (the SDK removed or replaced "
                    "items); undoing it would leave a hole in the conversation; nothing was changed")
            if d["hard"]:
                trash = await tx.fetch(f"SELECT COUNT(*) AS n FROM {TRASH} WHERE op_id = ?", int(op_id))
                if int(trash[0]["n"]) != len(moved):
                    raise OperationError(f"the trash of operation {op_id} is incomplete")
                await tx.execute(
                    f"INSERT INTO {M} (id, session_id, message_data, created_at) "
                    f"SELECT row_id, session_id, message_data, created_at FROM {TRASH} WHERE op_id = ?",
                    int(op_id))
                await tx.execute(f"DELETE FROM {TRASH} WHERE op_id = ?", int(op_id))
            else:
                archive = d["archive"]
                here = await tx.fetch(f"SELECT id FROM {M} WHERE session_id = ? ORDER BY id", archive)
                if [int(r["id"]) for r in here] != moved:
                    raise OperationError(f"archive session {archive!r} changed since operation {op_id}")
                await tx.execute(f"UPDATE {M} SET session_id = ? WHERE session_id = ?", session, archive)
                if d.get("archive_created"):
                    await tx.execute(f"DELETE FROM {S} WHERE session_id = ?", archive)
            if "updated_at_before" in d:  # as it was before the operation
                await self._set_updated_at(tx, session, d["updated_at_before"])
            else:  # an operation recorded before agentctl kept it
                await tx.execute(f"UPDATE {S} SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?", session)
            new_id = await self._record(tx, "undo", f"undid operation {op_id} ({op.summary})", op.threads,
                                        {"undo_of": int(op_id)}, undo_of=int(op_id))
            await self.log.mark_undone(tx, int(op_id), new_id)
        self.store._archive_map = None
        ids = [cid_of(i) for i in moved]
        return OpResult(op_id=new_id, kind="undo", summary=f"undid operation {op_id} ({op.summary})",
                        created=ids if d["hard"] else [], moved=[] if d["hard"] else ids)

    async def _undo_branch(self, op: Any) -> Any:
        from agentctl.storage.results import OpResult
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of

        S, M = self.store._S, self.store._M
        d = op.details
        session = d.get("branch_session") or d["session"]
        async with self.store._db.transaction([session]) as tx:
            await self._lock_sessions(tx, [session])
            if d.get("sdk_branch"):
                name = d["sdk_branch"]
                n = await tx.fetch("SELECT COUNT(*) AS n FROM message_structure WHERE session_id = ? AND branch_id = ?",
                                   session, name)
                if int(n[0]["n"]) != int(d["rows"]):
                    raise OperationError(f"branch {name!r} of {session!r} changed since operation {op.op_id} "
                                         "(the SDK added items on it); undoing it would lose them")
                await tx.execute("DELETE FROM message_structure WHERE session_id = ? AND branch_id = ?", session, name)
                if d.get("reserved"):
                    await tx.execute("DELETE FROM branch_reservations WHERE session_id = ? AND branch_id = ?",
                                     session, name)
                deleted: list[str] = []
            else:
                here = [int(r["id"]) for r in await tx.fetch(f"SELECT id FROM {M} WHERE session_id = ? ORDER BY id",
                                                             session)]
                if here != [int(i) for i in d["created"]]:
                    raise OperationError(f"session {session!r} changed since operation {op.op_id}; "
                                         "undoing the branch would lose its new items")
                await tx.execute(f"DELETE FROM {M} WHERE session_id = ?", session)
                await tx.execute(f"DELETE FROM {S} WHERE session_id = ?", session)
                deleted = [cid_of(i) for i in here]
            new_id = await self._record(tx, "undo", f"undid operation {op.op_id} ({op.summary})", op.threads,
                                        {"undo_of": op.op_id}, undo_of=op.op_id)
            await self.log.mark_undone(tx, op.op_id, new_id)
        self.store._archive_map = None
        return OpResult(op_id=new_id, kind="undo", summary=f"undid operation {op.op_id} ({op.summary})",
                        deleted=deleted)

    # ---- run and edit: what the SDK's Runner wrote, an item's content -----------------

    def run_options(self) -> dict[str, Any]:
        """What the run's child needs besides the database: the session tables' names."""
        return {"tables": [self.store.sessions_table, self.store.messages_table]}

    async def run_keys(self, thread_id: str) -> dict[str, set[tuple[Any, ...]]]:
        """The session's item ids and its row's updated_at now (read before a run)."""
        await self.store.connect()
        M, S = self.store._M, self.store._S
        items = {(int(r["id"]),) for r in await self.store._q(f"SELECT id FROM {M} WHERE session_id = ?", thread_id)}
        row = await self.store._q(f"SELECT CAST(updated_at AS TEXT) AS u FROM {S} WHERE session_id = ?", thread_id)
        return {"items": items, "session": {(r["u"],) for r in row}}

    async def record_run(self, thread_id: str, before: dict[str, set[tuple[Any, ...]]], summary: str,
                         details: dict[str, Any], kind: str = "run") -> int | None:
        """One op for what the SDK's Runner wrote to the session since `before`: the item
        rows it inserted (undo moves them to the trash) and the session row's before-image
        (undo deletes the row the run created, or puts its updated_at back). None: the
        run wrote nothing."""
        M = self.store._M
        async with self.store._db.transaction([thread_id]) as tx:
            await self._lock_sessions(tx, [thread_id])
            now = [int(r["id"]) for r in await tx.fetch(f"SELECT id FROM {M} WHERE session_id = ? ORDER BY id",
                                                        thread_id)]
            inserted = [i for i in now if (i,) not in before.get("items", set())]
            had = sorted(before.get("session", set()))
            if not inserted and [(await self._updated_at(tx, thread_id),)] == had:
                return None
            await self._ensure_tables(tx)
            details = dict(details, session=thread_id, inserted=inserted, session_created=not had,
                           updated_at_before=had[0][0] if had else None, after=await self._items_print(tx, thread_id))
            op_id = await self._record(tx, kind, summary, [thread_id], details)
        return op_id

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        """What `agentctl edit ITEM --set KEY=JSON` changes: the item as the SDK stores it."""
        item = (cp.state or {}).get("item")
        if not isinstance(item, dict):
            raise UsageError(f"{cp.metadata.checkpoint_id} is not an item object; agentctl edits an item's keys")
        return item

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "change item {ref} of {thread} in place"

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> Any:
        """The item's message_data, in place, is `state` (the edited item) as the SDK
        writes it (`json.dumps`): `get_items` returns it where it was. One op; its undo
        puts the row's message_data back byte for byte."""
        from agentctl.storage.results import OpResult
        from agentctl.storage.openai_agents.store import row_id_of

        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        session, row = meta.thread_id, row_id_of(meta.checkpoint_id)
        M = self.store._M
        new = json.dumps(state)
        async with self.store._db.transaction([session]) as tx:
            await self._lock_sessions(tx, [session])
            old = await tx.fetch(f"SELECT message_data FROM {M} WHERE id = ? AND session_id = ?", row, session)
            if not old:
                raise CheckpointNotFound(checkpoint_id)
            before = old[0]["message_data"]
            if isinstance(before, (bytes, bytearray, memoryview)):
                raise UsageError(f"{checkpoint_id}: its message_data is not text; agentctl edits text rows only")
            await self._ensure_tables(tx)
            summary = f"edit {session} at step {meta.step} ({checkpoint_id}): {what}"
            await tx.execute(f"UPDATE {M} SET message_data = ? WHERE id = ?", new, row)
            op_id = await self._record(tx, "edit", summary, [session],
                                       {"session": session, "row": row, "before": before, "new": new,
                                        "after": await self._items_print(tx, session)})
        return OpResult(op_id, "edit", f"edited {session}: item {checkpoint_id} (step {meta.step}) in place")

    async def _undo_sdk_write(self, op: Any) -> Any:
        """Undo of a run (its items to the trash; the session row as before it) or of an
        edit (the item's message_data as before it); refused when the session changed."""
        from agentctl.storage.results import OpResult
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of

        S, M = self.store._S, self.store._M
        d = op.details
        session = d["session"]
        async with self.store._db.transaction([session]) as tx:
            await self._lock_sessions(tx, [session])
            changed = await self._items_print(tx, session) != d["after"]
            if op.kind == "edit" and not changed:
                now = await tx.fetch(f"SELECT message_data FROM {M} WHERE id = ?", int(d["row"]))
                changed = not now or now[0]["message_data"] != d["new"]
            if changed:
                raise OperationError(f"cannot undo operation {op.op_id} ({op.kind}): session {session!r} changed "
                                     "after it (the SDK or another operation wrote to it); nothing was changed")
            deleted: list[str] = []
            if op.kind == "edit":
                await tx.execute(f"UPDATE {M} SET message_data = ? WHERE id = ?", d["before"], int(d["row"]))
            else:
                ids = [int(i) for i in d["inserted"]]
                for i in ids:
                    await tx.execute(f"INSERT INTO {TRASH} (op_id, row_id, session_id, message_data, created_at) "
                                     f"SELECT CAST(? AS INTEGER), id, session_id, message_data, created_at FROM {M} "
                                     "WHERE id = ?", op.op_id, i)
                    await tx.execute(f"DELETE FROM {M} WHERE id = ?", i)
                if d["session_created"]:
                    await tx.execute(f"DELETE FROM {S} WHERE session_id = ?", session)
                else:
                    await self._set_updated_at(tx, session, d["updated_at_before"])
                deleted = [cid_of(i) for i in ids]
            new_id = await self._record(tx, "undo", f"undo {op.op_id}: {op.summary}", op.threads,
                                        {"undo_of": op.op_id}, undo_of=op.op_id)
            await self.log.mark_undone(tx, op.op_id, new_id)
        return OpResult(op_id=new_id, kind="undo", summary=f"undid operation {op.op_id} ({op.summary})",
                        deleted=deleted)

    async def purge(self, dry_run: bool = False) -> Any:
        return await purge_trash(self.store, TRASH, OPLOG, dry_run)
