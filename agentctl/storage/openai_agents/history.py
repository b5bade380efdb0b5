"""Writes on the OpenAI Agents SDK's session tables, as row changes recorded by the
journal (agentctl/storage/journal/): undo, redo, oplog and purge are the journal's.

`rewind SESSION@N` keeps the session's items 1..N; the later items move, with their
row ids, to an archive session `SESSION-rewind-XXXX` (a new row of the sessions
table), so `SQLiteSession.get_items()` of the session returns items 1..N and the
archive session's `get_items()` the rest. With `hard=True` they are deleted (kept in
the journal's trash until `purge`). The session row's `updated_at` moves to the time of
the rewind, as an SDK write moves it; undo puts it back as it was, byte for byte.

A session's fingerprint (what undo and redo compare: "nothing changed since") is its
items' count, ids and sizes, its row and updated_at, and its `message_structure` rows:
an SDK write (items added, popped, cleared, a branch made) changes it.

On Postgres every write locks the sessions' rows first, as the SDK's SQLAlchemySession
does before it touches their items.

On an `AdvancedSQLiteSession` (rows in `message_structure`, whose branches share item
rows) a thread is a branch (`SESSION`: main, `SESSION#BRANCH`): its rewind moves the
branch's later `message_structure` rows to an archive branch `BRANCH-rewind-XXXX`
(`hard`: deletes them and the items no branch holds any more), never an item row another
branch shares; run uses the SDK's `AdvancedSQLiteSession` switched to the branch; an edit
of an item several branches share is refused. The journal's threads are the sessions.

`branch SESSION@N NAME`: on a `SQLiteSession` session, a new session
`SESSION-branch-NAME-XXXX` with copies of items 1..N (the SDK reads it like any
session); on an `AdvancedSQLiteSession` session, a branch NAME of the same session
holding items 1..N of the item's branch (`message_structure` rows, as the SDK's
`create_branch_from_turn` makes them, and a `branch_reservations` row), which
`list_branches` lists and `switch_to_branch` opens.

`record_run` (what the SDK's Runner wrote in `agentctl run`) and `edit_state` (an
item's content in place) are ops like the others.

The previous release's op log (`agentctl_openai_oplog`, trash `agentctl_openai_trash`)
is moved into the journal by the first write (`legacy.py`), its ops under their ids.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.model import utc_now_iso
from agentctl.storage.contract import History, RewindAndBranchOnly, retried_write
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.openai_agents.legacy import ITEM_KEY, SESSION_KEY, OldOplog
from agentctl.storage.openai_agents.store import quote
from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.openai_agents.store import OpenAIAgentsStore
    from agentctl.storage.results import OpResult, RewindPlan, TimeTravelResult
    from agentctl.storage.sql.conn import Transaction

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class OpenAIHistory(OldOplog, JournalHistory, RewindAndBranchOnly, History):
    def __init__(self, store: OpenAIAgentsStore, *, now: Any = None, hex4: Any = None) -> None:
        self.store = store
        self._now = now or utc_now_iso
        self._hex = hex4 or (lambda: secrets.token_hex(2))

    # ---- the journal's hooks ---------------------------------------------------------

    async def lock(self, tx: Transaction, threads: Sequence[str]) -> None:
        """Postgres: the sessions' rows locked first, as the SDK's SQLAlchemySession
        locks a session's row before its items (an agentctl write and the SDK's then
        wait on each other instead of deadlocking)."""
        if self.store.kind == "postgres" and threads:
            names = sorted(set(threads))
            await tx.fetch(
                f"SELECT session_id FROM {self.store._S} WHERE session_id IN ({marks(len(names))}) "
                "ORDER BY session_id FOR UPDATE",
                *names,
            )

    async def fingerprint(self, tx: Transaction, thread: str) -> list[Any]:
        """[items, max id, sum of ids, row exists, sum of item sizes, updated_at(,
        message_structure rows, max id)]: the first four are the previous op log's
        print of a session."""
        M, S = self.store._M, self.store._S
        r = (
            await tx.fetch(
                f"SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m, COALESCE(SUM(id), 0) AS s, "
                f"COALESCE(SUM(LENGTH(message_data)), 0) AS b FROM {M} WHERE session_id = ?",
                thread,
            )
        )[0]
        row = await tx.fetch(f"SELECT CAST(updated_at AS TEXT) AS u FROM {S} WHERE session_id = ?", thread)
        out = [int(r["n"]), int(r["m"]), int(r["s"]), bool(row), int(r["b"]), row[0]["u"] if row else None]
        if self.store.has_structure:
            st = (
                await tx.fetch(
                    "SELECT COUNT(*) AS n, COALESCE(MAX(id), 0) AS m FROM message_structure "
                    "WHERE session_id = ?",
                    thread,
                )
            )[0]
            out += [int(st["n"]), int(st["m"])]
        return out

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of

        d, kind, undo = record["details"], record["kind"], image == "before"
        if kind == "rewind":
            ids = [cid_of(i) for i in d.get("moved", [])]
            if not d.get("hard"):
                return {"moved": ids}
            return {"created": ids} if undo else {"deleted": ids}
        ids = [cid_of(i) for i in d.get("created", d.get("inserted", []))]
        return {"deleted": ids} if undo else {"created": ids}

    async def journal_moved(self) -> None:
        self.store._archive_map = None  # the store reads the log again

    # ---- helpers ---------------------------------------------------------------------

    async def _typed(self, tx: Transaction, table: str, column: str) -> str:
        """A `?` holding a column's value as text, cast to the column's own type."""
        if self.store.kind != "postgres":
            return "?"
        typ = (
            await tx.fetch(
                "SELECT format_type(a.atttypid, a.atttypmod) AS t FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(?) AND a.attname = ?",
                quote(table),
                column,
            )
        )[0]["t"]
        return f"CAST(CAST(? AS TEXT) AS {typ})"

    async def _ids(self, tx: Transaction, session: str) -> list[int]:
        return [
            int(r["id"])
            for r in await tx.fetch(
                f"SELECT id FROM {self.store._M} WHERE session_id = ? ORDER BY id", session
            )
        ]

    async def _target(self, checkpoint_id: str) -> Any:
        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        return meta

    async def _fresh(self, names: Callable[[], str], what: str) -> str:
        """The first of 20 `names()` that no item and no session row has."""
        for _ in range(20):
            name = names()
            if not await self.store._q(
                f"SELECT 1 AS x FROM {self.store._M} WHERE session_id = ? LIMIT 1", name
            ) and not await self.store._q(
                f"SELECT 1 AS x FROM {self.store._S} WHERE session_id = ? LIMIT 1", name
            ):
                return name
        raise OperationError(f"no free {what}; retry")

    async def _fresh_archive(self, session: str, checkpoint_id: str) -> str:
        from agentctl.storage.results import hashed_names

        # from a hash of the session and the target: a --dry-run names the session the write uses
        names = hashed_names(f"{session}-rewind-", f"{session}\0{checkpoint_id}")
        return await self._fresh(names, f"archive session name for {session!r}")

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        from agentctl.storage.results import RewindPlan

        meta = await self._target(checkpoint_id)
        moved = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        session, line = await self.store.line(meta.thread_id)
        if line is not None:
            archive = (
                None
                if hard or not moved
                else self.store.thread_of(session, await self._fresh_line(session, line, meta.checkpoint_id))
            )
        else:
            archive = (
                None if hard or not moved else await self._fresh_archive(meta.thread_id, meta.checkpoint_id)
            )
        return RewindPlan(
            target=meta, thread_id=meta.thread_id, moved=moved, archive_thread=archive, hard=hard
        )

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of
        from agentctl.storage.openai_agents.store import row_id_of
        from agentctl.storage.results import TimeTravelResult

        meta = await self._target(checkpoint_id)
        session = meta.thread_id
        target_id = row_id_of(meta.checkpoint_id)
        sdk_session, line = await self.store.line(session)
        if line is not None:
            return await self._rewind_line(meta, sdk_session, line, hard, archive_thread)
        before = await self.store.count(session)
        S, M = self.store._S, self.store._M
        sessions, items = self.store.sessions_table, self.store.messages_table
        archive = None if hard else (archive_thread or await self._fresh_archive(session, meta.checkpoint_id))
        threads = [session] + ([archive] if archive else [])
        op_id = None
        async with self.journal_tx(threads) as tx:
            moved = [i for i in await self._ids(tx, session) if i > int(target_id or 0)]
            if moved:
                if hard:
                    summary = f"rewind {session} to step {meta.step}; {len(moved)} item(s) to the trash"
                else:
                    summary = f"rewind {session} to step {meta.step}; {len(moved)} item(s) to {archive}"
                    if await tx.fetch(f"SELECT 1 AS x FROM {M} WHERE session_id = ? LIMIT 1", archive):
                        raise OperationError(f"archive session {archive!r} appeared meanwhile; retry")
                op = await self.journal_begin(
                    tx,
                    "rewind",
                    summary,
                    threads,
                    {
                        "session": session,
                        "target": target_id,
                        "moved": moved,
                        "hard": hard,
                        "archive": archive,
                    },
                )
                await op.update(
                    sessions, SESSION_KEY, "session_id = ?", (session,), "updated_at = CURRENT_TIMESTAMP", ()
                )
                if hard:
                    await op.delete(items, ITEM_KEY, "session_id = ? AND id > ?", (session, target_id))
                else:
                    if not await tx.fetch(f"SELECT 1 AS x FROM {S} WHERE session_id = ?", archive):
                        await tx.execute(f"INSERT INTO {S} (session_id) VALUES (?)", archive)
                        await op.inserted(sessions, SESSION_KEY, "session_id = ?", (archive,))
                    # (the rows before and after: the archive session holds no item but these)
                    await op.update(
                        items,
                        ITEM_KEY,
                        "session_id IN (?, ?) AND id > ?",
                        (session, archive, target_id),
                        "session_id = ?",
                        (archive,),
                    )
                op_id = await self.journal_finish(op)
        self.store._archive_map = None  # the store reads the log again
        cp = await self.store.get(meta.checkpoint_id)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(meta.checkpoint_id)
        ids = [cid_of(i) for i in moved]
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=session,
            rewind_depth=len(moved),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=archive if moved else None,
            moved=[] if hard else ids,
            deleted=ids if hard else [],
        )

    async def _fresh_line(self, session: str, line: str, checkpoint_id: str) -> str:
        """A branch name for a rewind's archive of a branch of an AdvancedSQLiteSession:
        `BRANCH-rewind-XXXX` from a hash of the branch and the target, on no row of
        `message_structure` nor `branch_reservations`."""
        from agentctl.storage.results import hashed_names

        names = hashed_names(f"{line}-rewind-", f"{session}\0{line}\0{checkpoint_id}")
        reserved = await self.store.connection.table_exists("branch_reservations")
        for _ in range(20):
            name = names()
            if not await self.store._q(
                "SELECT 1 AS x FROM message_structure WHERE session_id = ? AND branch_id = ? LIMIT 1",
                session,
                name,
            ) and not (
                reserved
                and await self.store._q(
                    "SELECT 1 AS x FROM branch_reservations WHERE session_id = ? AND branch_id = ?",
                    session,
                    name,
                )
            ):
                return name
        raise OperationError(f"no free archive branch name for {line!r} of {session!r}; retry")

    async def _rewind_line(
        self, meta: Any, session: str, line: str, hard: bool, archive_thread: str | None
    ) -> Any:
        """Rewind of a branch of an AdvancedSQLiteSession (thread SESSION for main,
        SESSION#BRANCH): the branch's `message_structure` rows after the target move to
        an archive branch `BRANCH-rewind-XXXX` (reserved, as the SDK reserves a branch's
        name), so `get_items()` of the branch returns items 1..N and the archive
        branch's the rest; with `hard` they are deleted, and the items no branch holds
        any more with them (as the SDK's `pop_item` and `delete_branch` do). The item
        rows other branches share are never touched."""
        from agentctl.storage.openai_agents.store import checkpoint_id as cid_of
        from agentctl.storage.openai_agents.store import row_id_of
        from agentctl.storage.results import TimeTravelResult

        thread = meta.thread_id
        target_id = row_id_of(meta.checkpoint_id)
        before = await self.store.count(thread)
        archive = None
        if not hard:
            if archive_thread is not None:
                archive = (
                    archive_thread[len(session) + 1 :] if archive_thread.startswith(session + "#") else None
                )
                if not archive:
                    raise UsageError(f"{archive_thread!r} is not a branch of session {session!r}")
            else:
                archive = await self._fresh_line(session, line, meta.checkpoint_id)
        structure, items = "message_structure", self.store.messages_table
        op_id, moved = None, []
        async with self.journal_tx([session]) as tx:
            seq = await tx.fetch(
                "SELECT MIN(sequence_number) AS n FROM message_structure WHERE session_id = ? "
                "AND branch_id = ? AND message_id = ?",
                session,
                line,
                target_id,
            )
            if not seq or seq[0]["n"] is None:
                raise CheckpointNotFound(meta.checkpoint_id)
            after = int(seq[0]["n"])
            later = "session_id = ? AND branch_id = ? AND sequence_number > ?"
            moved = [
                int(r["message_id"])
                for r in await tx.fetch(
                    f"SELECT message_id FROM message_structure WHERE {later} ORDER BY sequence_number",
                    session,
                    line,
                    after,
                )
            ]
            if moved:
                where = "to the trash" if hard else f"to {self.store.thread_of(session, archive)}"
                summary = f"rewind {thread} to step {meta.step}; {len(moved)} item(s) {where}"
                reserved = await tx.table_exists("branch_reservations")
                if archive is not None:
                    used = await tx.fetch(
                        "SELECT 1 AS x FROM message_structure WHERE session_id = ? AND branch_id = ? LIMIT 1",
                        session,
                        archive,
                    )
                    if used or (
                        reserved
                        and await tx.fetch(
                            "SELECT 1 AS x FROM branch_reservations WHERE session_id = ? AND branch_id = ?",
                            session,
                            archive,
                        )
                    ):
                        raise OperationError(f"archive branch {archive!r} appeared meanwhile; retry")
                archive_id = None if archive is None else self.store.thread_of(session, archive)
                op = await self.journal_begin(
                    tx,
                    "rewind",
                    summary,
                    [session],
                    {
                        "session": thread,
                        "sdk_session": session,
                        "branch": line,
                        "target": target_id,
                        "moved": moved,
                        "hard": hard,
                        "archive": archive_id,
                    },
                )
                if hard:
                    await op.delete(structure, ITEM_KEY, later, (session, line, after))
                    # the items now on no branch of the session (what the SDK's pop_item drops)
                    await op.delete(
                        items,
                        ITEM_KEY,
                        f"session_id = ? AND id IN ({marks(len(moved))}) AND id NOT IN "
                        "(SELECT message_id FROM message_structure WHERE session_id = ?)",
                        (session, *moved, session),
                    )
                else:
                    # (the rows before and after: the archive branch holds no row but these)
                    await op.update(
                        structure,
                        ITEM_KEY,
                        "session_id = ? AND branch_id IN (?, ?) AND sequence_number > ?",
                        (session, line, archive, after),
                        "branch_id = ?",
                        (archive,),
                    )
                    if reserved:
                        await tx.execute(
                            "INSERT INTO branch_reservations (session_id, branch_id) VALUES (?, ?)",
                            session,
                            archive,
                        )
                        await op.inserted(
                            "branch_reservations",
                            ("session_id", "branch_id"),
                            "session_id = ? AND branch_id = ?",
                            (session, archive),
                        )
                op_id = await self.journal_finish(op)
        self.store._archive_map = None
        cp = await self.store.get(meta.checkpoint_id)
        if cp is None:
            raise CheckpointNotFound(meta.checkpoint_id)
        ids = [cid_of(i) for i in moved]
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=thread,
            rewind_depth=len(moved),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=self.store.thread_of(session, archive) if moved and archive else None,
            moved=[] if hard else ids,
            deleted=ids if hard else [],
        )

    # ---- branch ----------------------------------------------------------------------

    @retried_write
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
        target = row_id_of(meta.checkpoint_id)
        assert target is not None  # the id of a row get_metadata found
        session, line = await self.store.line(meta.thread_id)
        if line is not None:
            return await self._sdk_branch(meta, session, target, name, line)
        S, M = self.store._S, self.store._M
        new = await self._fresh(
            lambda: f"{session}-branch-{name}-{self._hex()}", f"session name for a branch of {session!r}"
        )
        async with self.journal_tx([session, new]) as tx:
            rows = [i for i in await self._ids(tx, session) if i <= target]
            if await tx.fetch(f"SELECT 1 AS x FROM {M} WHERE session_id = ? LIMIT 1", new):
                raise OperationError(f"session {new!r} appeared meanwhile; retry")
            made = not await tx.fetch(f"SELECT 1 AS x FROM {S} WHERE session_id = ?", new)
            if made:
                await tx.execute(f"INSERT INTO {S} (session_id) VALUES (?)", new)
            for i in rows:  # one by one: the copies' ids in the items' order
                await tx.execute(
                    f"INSERT INTO {M} (session_id, message_data, created_at) "
                    f"SELECT ?, message_data, created_at FROM {M} WHERE id = ?",
                    new,
                    i,
                )
            op = await self.journal_begin(
                tx,
                "branch",
                f"branch {new} from {session} step {meta.step}",
                [new, session],
                {
                    "session": session,
                    "target": target,
                    "branch_session": new,
                    "created": await self._ids(tx, new),
                },
            )
            if made:
                await op.inserted(self.store.sessions_table, SESSION_KEY, "session_id = ?", (new,))
            await op.inserted(self.store.messages_table, ITEM_KEY, "session_id = ?", (new,))
            await self.journal_finish(op)
        self.store._archive_map = None
        return new

    async def _sdk_branch(self, meta: Any, session: str, target: int, name: str, line: str) -> str:
        async with self.journal_tx([session]) as tx:
            have = await tx.fetch(
                "SELECT branch_id, sequence_number FROM message_structure WHERE session_id = ? "
                "AND message_id = ? AND branch_id = ? ORDER BY sequence_number",
                session,
                target,
                line,
            )
            if not have:
                raise UsageError(
                    f"item {meta.checkpoint_id} is not on branch {line!r} of session {session!r}"
                )
            source = have[0]
            taken = await tx.fetch(
                "SELECT 1 AS x FROM message_structure WHERE session_id = ? AND branch_id = ? LIMIT 1",
                session,
                name,
            )
            reservations = await tx.table_exists("branch_reservations")
            if reservations:
                taken = taken or await tx.fetch(
                    "SELECT 1 AS x FROM branch_reservations WHERE session_id = ? AND branch_id = ?",
                    session,
                    name,
                )
            if taken:
                raise UsageError(
                    f"branch {name!r} of session {session!r} exists (or was used); choose another name"
                )
            rows = await tx.fetch(
                "SELECT message_id, message_type, user_turn_number, branch_turn_number, tool_name "
                "FROM message_structure WHERE session_id = ? AND branch_id = ? AND sequence_number <= ? "
                "ORDER BY sequence_number",
                session,
                source["branch_id"],
                source["sequence_number"],
            )
            start = (
                await tx.fetch(
                    "SELECT COALESCE(MAX(sequence_number), 0) AS n FROM message_structure "
                    "WHERE session_id = ?",
                    session,
                )
            )[0]["n"]
            op = await self.journal_begin(
                tx,
                "branch",
                f"branch {name} of {session} from {source['branch_id']} step {meta.step}",
                [session],
                {
                    "session": session,
                    "target": target,
                    "sdk_branch": name,
                    "from_branch": source["branch_id"],
                    "rows": len(rows),
                    "reserved": reservations,
                },
            )
            for i, r in enumerate(rows, 1):
                await tx.execute(
                    "INSERT INTO message_structure (session_id, message_id, branch_id, message_type, "
                    "sequence_number, user_turn_number, branch_turn_number, tool_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    session,
                    r["message_id"],
                    name,
                    r["message_type"],
                    int(start) + i,
                    r["user_turn_number"],
                    r["branch_turn_number"],
                    r["tool_name"],
                )
            await op.inserted(
                "message_structure", ITEM_KEY, "session_id = ? AND branch_id = ?", (session, name)
            )
            if reservations:
                await tx.execute(
                    "INSERT INTO branch_reservations (session_id, branch_id) VALUES (?, ?)", session, name
                )
                await op.inserted(
                    "branch_reservations",
                    ("session_id", "branch_id"),
                    "session_id = ? AND branch_id = ?",
                    (session, name),
                )
            await self.journal_finish(op)
        return self.store.thread_of(session, name)

    # ---- run and edit: what the SDK's Runner wrote, an item's content -----------------

    async def run_options(self, thread_id: str, from_id: str | None = None) -> dict[str, Any]:
        """What the run's child needs besides the database: the session tables' names,
        and for a branch of an AdvancedSQLiteSession (thread SESSION or SESSION#BRANCH)
        the session and the branch the SDK's AdvancedSQLiteSession is switched to."""
        session, line = await self.store.line(thread_id)
        out: dict[str, Any] = {"tables": [self.store.sessions_table, self.store.messages_table]}
        if line is not None:
            out.update(session=session, branch=line)
        return out

    async def run_keys(self, thread_id: str) -> dict[str, set[tuple[Any, ...]]]:
        """The session's item ids and its row's updated_at now (read before a run); on an
        AdvancedSQLiteSession also its `message_structure` row ids, reserved branch names
        and clear-generation row."""
        await self.store.connect()
        M, S = self.store._M, self.store._S
        session, line = await self.store.line(thread_id)
        items = {
            (int(r["id"]),) for r in await self.store._q(f"SELECT id FROM {M} WHERE session_id = ?", session)
        }
        row = await self.store._q(
            f"SELECT CAST(updated_at AS TEXT) AS u FROM {S} WHERE session_id = ?", session
        )
        out = {"items": items, "session": {(r["u"],) for r in row}}
        if line is not None:
            for key, sql in self._sdk_side_tables():
                if await self.store.connection.table_exists(key):
                    out[key] = {tuple(r.values()) for r in await self.store._q(sql, session)}
        return out

    @staticmethod
    def _sdk_side_tables() -> list[tuple[str, str]]:
        """The AdvancedSQLiteSession's own tables a run writes to besides the items, with
        the keys of a session's rows (the key columns named as the table's)."""
        return [
            ("message_structure", "SELECT id FROM message_structure WHERE session_id = ?"),
            (
                "branch_reservations",
                "SELECT session_id, branch_id FROM branch_reservations WHERE session_id = ?",
            ),
            (
                "session_clear_generations",
                "SELECT session_id FROM session_clear_generations WHERE session_id = ?",
            ),
        ]

    @retried_write
    async def record_run(
        self,
        thread_id: str,
        before: dict[str, set[tuple[Any, ...]]],
        summary: str,
        details: dict[str, Any],
        kind: str = "run",
    ) -> int | None:
        """One op for what the SDK's Runner wrote to the session since `before`: the item
        rows it inserted and the session row (inserted, or its updated_at moved: the row
        is put back as before the run, then moved again through the journal, so that undo
        has its before-image); on an AdvancedSQLiteSession the rows it added to its own
        tables too. None: the run wrote nothing."""
        from agentctl.storage.sqlutil import in_chunks

        S = self.store._S
        sessions = self.store.sessions_table
        session, line = await self.store.line(thread_id)
        async with self.journal_tx([session]) as tx:
            inserted = [i for i in await self._ids(tx, session) if (i,) not in before.get("items", set())]
            had = sorted(before.get("session", set()))
            row = await tx.fetch(
                f"SELECT CAST(updated_at AS TEXT) AS u FROM {S} WHERE session_id = ?", session
            )
            now = row[0]["u"] if row else None
            if not inserted and [(now,)] == had:
                return None
            op = await self.journal_begin(
                tx, kind, summary, [session], dict(details, session=thread_id, inserted=inserted)
            )
            if had and had[0][0] != now:
                value = await self._typed(tx, sessions, "updated_at")
                await tx.execute(
                    f"UPDATE {S} SET updated_at = {value} WHERE session_id = ?", had[0][0], session
                )
                await op.update(
                    sessions, SESSION_KEY, "session_id = ?", (session,), f"updated_at = {value}", (now,)
                )
            elif not had:
                await op.inserted(sessions, SESSION_KEY, "session_id = ?", (session,))
            for ph, chunk in in_chunks(inserted):
                await op.inserted(self.store.messages_table, ITEM_KEY, f"id IN ({ph})", chunk)
            if line is not None:  # (children after their parents: undo deletes them first)
                for table, sql in self._sdk_side_tables():
                    if table not in before or not await tx.table_exists(table):
                        continue
                    new = [
                        k
                        for k in map(lambda r: tuple(r.values()), await tx.fetch(sql, session))
                        if k not in before[table]
                    ]
                    cols = (
                        ("id",)
                        if table == "message_structure"
                        else ("session_id", "branch_id")
                        if table == "branch_reservations"
                        else ("session_id",)
                    )
                    for key in new:
                        await op.inserted(table, cols, " AND ".join(f"{c} = ?" for c in cols), key)
            return await self.journal_finish(op)

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        """What `agentctl edit ITEM --set KEY=JSON` changes: the item as the SDK stores it."""
        item = (cp.state or {}).get("item")
        shared = (cp.state or {}).get("branches") or []
        if len(shared) > 1:
            raise UsageError(_shared_item(cp.metadata.checkpoint_id, shared, cp.state.get("session_id")))
        if not isinstance(item, dict):
            raise UsageError(
                f"{cp.metadata.checkpoint_id} is not an item object; agentctl edits an item's keys"
            )
        return item

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "change item {ref} of {thread} in place"

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        """The item's message_data, in place, is `state` (the edited item) as the SDK
        writes it (`json.dumps`): `get_items` returns it where it was. One op; its undo
        puts the row's message_data back byte for byte."""
        from agentctl.storage.openai_agents.store import row_id_of
        from agentctl.storage.results import OpResult

        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        row = row_id_of(meta.checkpoint_id)
        session, line = await self.store.line(meta.thread_id)
        if line is not None:
            on = [
                r["branch_id"]
                for r in await self.store._q(
                    "SELECT DISTINCT branch_id FROM message_structure WHERE session_id = ? AND message_id = ? "
                    "ORDER BY branch_id",
                    session,
                    row,
                )
            ]
            if len(on) > 1:
                raise UsageError(_shared_item(checkpoint_id, on, session))
        async with self.journal_tx([session]) as tx:
            old = await tx.fetch(
                f"SELECT message_data FROM {self.store._M} WHERE id = ? AND session_id = ?", row, session
            )
            if not old:
                raise CheckpointNotFound(checkpoint_id)
            if isinstance(old[0]["message_data"], (bytes, bytearray, memoryview)):
                raise UsageError(
                    f"{checkpoint_id}: its message_data is not text; agentctl edits text rows only"
                )
            op = await self.journal_begin(
                tx,
                "edit",
                f"edit {meta.thread_id} at step {meta.step} ({checkpoint_id}): {what}",
                [session],
                {"session": session, "row": row},
            )
            await op.update(
                self.store.messages_table,
                ITEM_KEY,
                "id = ?",
                (row,),
                "message_data = ?",
                (json.dumps(state),),
            )
            op_id = await self.journal_finish(op)
        return OpResult(
            op_id, "edit", f"edited {meta.thread_id}: item {checkpoint_id} (step {meta.step}) in place"
        )


def _shared_item(checkpoint_id: str, branches: Sequence[str], session: Any) -> str:
    return (
        f"{checkpoint_id} is an item of branches {', '.join(branches)} of session {session!r}: "
        "an edit in place would change it on each; edit an item of one branch alone"
    )
