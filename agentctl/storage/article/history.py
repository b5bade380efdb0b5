"""The write side of the article's session store (`ArticleHistory`), SQLite and Postgres.

Every write is one transaction (the backends' `transaction()`: BEGIN IMMEDIATE on
SQLite; on Postgres advisory locks plus `LOCK TABLE ... IN EXCLUSIVE MODE` on the
article's tables, so an agent's writes wait for the commit), recorded in the journal
(agentctl/storage/journal/) as row changes of the article's tables: the rows it
deletes, updates and inserts, their images kept in the journal's trash. Undo and redo
are the journal's moves, rows the op updated updated back in place (the Postgres
tables refer to each other by foreign keys). They refuse when a session the op
changed has changed since (its `fingerprint`: the session row's counters, status,
title and updated_at, and the count/min/max/sum of its message, tool log and task
ids) or when a row the op left is no longer as it left it (`journal_move`). The
previous release's op log (`agentctl_article_oplog` and its side tables) is moved
into the journal by the first write (legacy.py).

- rewind (soft): the later messages, and their tool_logs, move to a new archive session
  (a copy of the session row, id `<session>-rewound-at-<step>`, title
  "<title> (rewound from <session> at step N)"), recorded as a fork of the target in
  `agentctl_article_branches` (kind 'rewind'); hard: they are deleted. The session's
  message_count and total_tokens are recomputed and updated_at set.
- branch: a new session `<session>-branch-<name>` (a copy of the session row, title
  "<title> (branch <name> of <session> at step N)") with copies of the first N messages
  and their tool_logs (new ids); the fork point is recorded in
  `agentctl_article_branches` (kind 'branch'): the branch's first message's parent is
  the source message's checkpoint.
- merge: the branch's messages after its fork point (or after its last merge) are
  appended (copied) to the source session when that session's head is still the one
  the branch forked from (or the last merge left); otherwise a conflict
  (MergeConflictError, nothing written) unless strategy "theirs" (appended anyway);
  strategy "ours" keeps the target as it is.
- prune / delete: whole sessions with their messages, tool_logs and tasks, as one operation.
- edit: a message's role/content/tool_calls/tool_call_id and its session's title/status/
  model/metadata changed in place (edit.py).

messages_fts (SQLite): when it has triggers on messages, they keep it in step (the
journal's moves go through them too); when it is an external-content index in step with
messages before the write ("maintain"), FTS5 'delete' commands (old values) are issued
for every message deleted or changed and inserts for every message written (a moved
message keeps its rowid and content: nothing to do), and an undo or redo deletes the
entries of the messages standing at the op's keys before its move and indexes the ones
standing there after it; when it was stale before, it is left alone (doctor reports it;
search scans).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentctl.errors import (
    AgentctlError,
    CheckpointNotFound,
    MergeConflictError,
    OperationError,
    ThreadNotFound,
    UsageError,
)
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.article import edit, legacy
from agentctl.storage.article import schema as S
from agentctl.storage.article.store import checkpoint_id, indexes_messages, message_id_of, now_text
from agentctl.storage.contract import History, PruneSpec, Unsupported, retried_write
from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.results import (
    CheckpointGC,
    DeletePlan,
    MergePlan,
    OpResult,
    PrunePlan,
    PurgeResult,
    RewindPlan,
    TimeTravelResult,
)
from agentctl.storage.sqlutil import in_chunks, marks

if TYPE_CHECKING:
    from agentctl.storage.article.store import ArticleStore
    from agentctl.storage.sql.conn import Transaction

_NAME = re.compile(r"^[\w.-]{1,64}$")
STRATEGIES = ("fail", "three-way", "ours", "theirs")
KEYS = S.KEYS
#: how a refusal names the rows of a table that changed
_LABELS = {"sessions": "session(s) {}", "messages": "message {}", S.BRANCHES: "the branch record of {}"}


def _between(column: str, after: int | None, upto: int | None) -> tuple[str, list[Any]]:
    """` AND column > ? AND column <= ?` for the bounds given, and their parameters."""
    bounds = [(f" AND {column} > ?", after), (f" AND {column} <= ?", upto)]
    return "".join(c for c, v in bounds if v is not None), [v for _, v in bounds if v is not None]


# merge_branch takes a `checkpoint_id` argument (the contract's), which hides the function.
_message_checkpoint_id = checkpoint_id


class ArticleHistory(JournalHistory, History):
    """Writes of the article's format (see the module doc)."""

    #: a session is pruned whole: by age only (--keep-last counts a user's sessions)
    prune_policies = ("keep_age",)

    def __init__(self, store: ArticleStore, **options: Any):
        self.store = store
        self.db = store.db
        self.kind = store.kind
        self.last_op_id: int | None = None
        self._cols: dict[str, list[str]] = {}
        self._fts = "off"
        #: the messages the last undo or redo created, deleted and moved (undo_result)
        self._moved: dict[str, list[str]] = {}

    # ---- plumbing ----------------------------------------------------------------------

    def _now(self) -> str:
        return now_text(self.store._clock)

    def journal_now(self) -> str:
        """An op's time in the log (ISO, as the previous release's op log has it)."""
        from agentctl.model import utc_now_iso

        return utc_now_iso()

    def _ts(self, table: str, column: str) -> str:
        """The placeholder of a time or text value written into table.column (TEXT, or on
        Postgres a timestamp or JSON type: the text cast to it)."""
        if self.kind != "postgres":
            return "?"
        typ = self.store.column_types.get((table, column), "text")
        if typ.startswith("timestamp"):
            return f"CAST(CAST(? AS TEXT) AS {'TIMESTAMPTZ' if 'with time zone' in typ else 'TIMESTAMP'})"
        if typ in ("json", "jsonb"):
            return f"CAST(CAST(? AS TEXT) AS {typ.upper()})"
        return "CAST(? AS TEXT)"

    async def lock(self, tx: Any, threads: Sequence[str]) -> None:
        """Postgres: the article's tables locked against other writers (readers go on)."""
        if tx.kind == "postgres":
            present = [t for t in S.DATA_TABLES if await self.store.has(t)]
            await tx.execute(f"LOCK TABLE {', '.join(present)} IN EXCLUSIVE MODE")

    @asynccontextmanager
    async def _write(self, threads: Sequence[str]) -> AsyncIterator[Any]:
        async with self.journal_tx([str(t) for t in dict.fromkeys(threads)]) as tx:
            self._fts = await self._fts_mode(tx)
            yield tx
        await self.store._reload_tables()

    async def _begin(
        self,
        tx: Transaction,
        kind: str,
        summary: str,
        threads: Sequence[str],
        details: dict[str, Any],
        tables: Sequence[str],
    ) -> ops.Op:
        """An op of the journal, the tables it may change taken parents first."""
        if S.BRANCHES in tables:
            for ddl in S.branches_ddl(tx.kind):
                await tx.execute(ddl)
        op = await self.journal_begin(tx, kind, summary, list(dict.fromkeys(threads)), details)
        for table in KEYS:
            if table in tables and (table == S.BRANCHES or await self.store.has(table)):
                await op.declare(table, [KEYS[table]])
        return op

    async def _has(self, tx: Transaction, table: str) -> bool:
        """Whether the article's optional table is there (as the store last read the tables;
        a write never makes or drops one of them)."""
        return await self.store.has(table) if table in S.DATA_TABLES else bool(await tx.table_exists(table))

    async def _columns(self, tx: Transaction, table: str) -> list[str]:
        if table not in self._cols:
            self._cols[table] = await trash.columns(tx, table)
        return self._cols[table]

    async def _fts_mode(self, tx: Transaction) -> str:
        """ "maintain", "triggers" or "off" (no FTS, not the article's kind, or stale)."""
        if tx.kind != "sqlite":
            return "off"
        rows = await tx.fetch("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'")
        if not rows or not indexes_messages(rows[0]["sql"]):
            return "off"
        if await tx.fetch(
            "SELECT 1 AS x FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
            "AND sql LIKE '%messages_fts%' LIMIT 1"
        ):
            return "triggers"
        if not await self._has(tx, "messages_fts_docsize"):
            return "off"
        a = (await tx.fetch("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages_fts_docsize"))[
            0
        ]
        b = (await tx.fetch("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages"))[0]
        return "maintain" if (a["n"], a["mx"], a["sm"]) == (b["n"], b["mx"], b["sm"]) else "off"

    async def _fts_index(self, tx: Transaction, action: str, where: str, params: Sequence[Any] = ()) -> None:
        """When agentctl keeps messages_fts in step: drop ("delete", with the values the
        rows hold now) or add ("insert") the index entries of the messages matching `where`."""
        if self._fts != "maintain":
            return
        if action == "delete":
            await tx.execute(
                "INSERT INTO messages_fts(messages_fts, rowid, content) SELECT 'delete', id, content "
                f"FROM messages WHERE {where}",
                *params,
            )
        else:
            await tx.execute(
                f"INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages WHERE {where}",
                *params,
            )

    async def fingerprint(self, tx: Any, sid: str) -> str:
        """The session row's counters, status, title and updated_at, and the count/min/max/
        sum of the ids of its messages, tool logs and tasks, in one statement (the same
        text as the previous release's: its ops keep their fingerprints)."""
        import json

        session = ["message_count", "total_tokens", "status", "title", self.store.t("updated_at")]
        parts = {
            "messages": ("COUNT(*)", "MIN(id)", "MAX(id)", "SUM(id)"),
            "tool_logs": ("COUNT(*)", "SUM(id)"),
            "tasks": ("COUNT(*)", "MAX(id)"),
        }
        parts = {t: p for t, p in parts.items() if t == "messages" or await self.store.has(t)}
        cols = ["(SELECT COUNT(*) FROM sessions WHERE id = ?)"]
        cols += [f"(SELECT {c} FROM sessions WHERE id = ?)" for c in session]
        cols += [f"(SELECT {e} FROM {t} WHERE session_id = ?)" for t, p in parts.items() for e in p]
        row = list(
            (
                await tx.fetch(
                    f"SELECT {', '.join(f'{c} AS c{i}' for i, c in enumerate(cols))}", *[sid] * len(cols)
                )
            )[0].values()
        )
        out: dict[str, Any] = {"session": [str(v) for v in row[1:6]] if row[0] else None}
        at = 6
        for table, exprs in parts.items():
            out[table] = [str(v) for v in row[at : at + len(exprs)]]
            at += len(exprs)
        return json.dumps(out, sort_keys=True, ensure_ascii=False)

    async def _recount(self, op: ops.Op | None, tx: Transaction, sid: str) -> None:
        """The session's message_count and total_tokens recomputed, updated_at now (`op`:
        recorded as its update; None: a row the op inserts)."""
        assign = (
            "message_count = (SELECT COUNT(*) FROM messages m WHERE m.session_id = ?), "
            "total_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM messages m WHERE m.session_id = ?), "
            f"updated_at = {self._ts('sessions', 'updated_at')}"
        )
        if op is None:
            await tx.execute(f"UPDATE sessions SET {assign} WHERE id = ?", sid, sid, self._now(), sid)
        else:
            await op.update("sessions", ("id",), "id = ?", (sid,), assign, (sid, sid, self._now()))

    async def _update_ids(
        self, op: ops.Op, table: str, ids: Sequence[Any], assign: str, values: Sequence[Any]
    ) -> None:
        for ph, chunk in in_chunks(ids):
            await op.update(table, (KEYS[table],), f"id IN ({ph})", chunk, assign, values)

    async def _inserted_ids(self, op: ops.Op, table: str, ids: Sequence[Any]) -> None:
        for ph, chunk in in_chunks(ids):
            await op.inserted(table, (KEYS[table],), f"id IN ({ph})", chunk)

    async def _session(self, reader: Any, sid: str) -> dict[str, Any] | None:
        rows = await reader.fetch("SELECT * FROM sessions WHERE id = ?", sid)
        return rows[0] if rows else None

    async def _target(self, reader: Any, cid: str) -> tuple[int, str, int]:
        """(message id, session id, step) of a checkpoint id, or CheckpointNotFound."""
        mid = message_id_of(cid)
        rows = (
            await reader.fetch("SELECT session_id FROM messages WHERE id = ?", mid) if mid is not None else []
        )
        if mid is None or not rows:
            raise CheckpointNotFound(cid)
        sid = rows[0]["session_id"]
        step = (
            await reader.fetch(
                "SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND id <= ?", sid, mid
            )
        )[0]["n"]
        return mid, sid, int(step)

    async def _fresh_session(self, reader: Any, base: str) -> str:
        name = base
        for i in range(2, 1000):
            if not await reader.fetch("SELECT 1 AS x FROM sessions WHERE id = ?", name):
                return name
            name = f"{base}-{i}"
        raise OperationError("could not find an unused session id")  # pragma: no cover

    async def _copy_session(self, tx: Transaction, src: str, new: str, title: str) -> None:
        cols, now = await self._columns(tx, "sessions"), self._now()
        given = {
            "id": ("CAST(? AS TEXT)", new),
            "title": ("CAST(? AS TEXT)", title),
            **{c: (self._ts("sessions", c), now) for c in ("created_at", "updated_at")},
        }
        exprs = [given[c][0] if c in given else c for c in cols]
        await tx.execute(
            f"INSERT INTO sessions ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM sessions WHERE id = ?",
            *[given[c][1] for c in cols if c in given],
            src,
        )

    async def _logs_of(
        self, tx: Transaction, sid: str, after: int | None = None, upto: int | None = None
    ) -> list[int]:
        """Ids of the tool_logs belonging to the messages of `sid` with after < id <= upto
        (linked by message_id, or unlinked and attributed to them: see store.py)."""
        if not await self._has(tx, "tool_logs"):
            return []
        rng, params = _between("x.id", after, upto)
        rows = await tx.fetch(
            f"SELECT l.id FROM tool_logs l WHERE l.message_id IN (SELECT x.id FROM messages x "
            f"WHERE x.session_id = ?{rng}) OR (l.message_id IS NULL AND l.session_id = ? AND "
            f"{self.store._attributed()} IN (SELECT x.id FROM messages x WHERE x.session_id = ?{rng})) "
            "ORDER BY l.id",
            sid,
            *params,
            sid,
            sid,
            *params,
        )
        return [int(r["id"]) for r in rows]

    async def _copy_messages(
        self, tx: Transaction, src: str, dst: str, after: int | None, upto: int | None
    ) -> tuple[list[int], list[int]]:
        """Copy the messages of `src` with after < id <= upto (and their tool_logs) into
        `dst` with new ids, in id order; return the new message ids and tool log ids."""
        mcols = [c for c in await self._columns(tx, "messages") if c != "id"]
        exprs = ["CAST(? AS TEXT)" if c == "session_id" else c for c in mcols]
        conds, params = _between("id", after, upto)
        old_ids = [
            int(r["id"])
            for r in await tx.fetch(
                f"SELECT id FROM messages WHERE session_id = ?{conds} ORDER BY id", src, *params
            )
        ]
        log_ids = await self._logs_of(tx, src, after, upto)
        mapping: dict[int, int] = {}
        for old in old_ids:
            rows = await tx.fetch(
                f"INSERT INTO messages ({', '.join(mcols)}) SELECT {', '.join(exprs)} "
                "FROM messages WHERE id = ? RETURNING id",
                dst,
                old,
            )
            mapping[old] = int(rows[0]["id"])
        new_ids = [mapping[o] for o in old_ids]
        for ph, chunk in in_chunks(new_ids):
            await self._fts_index(tx, "insert", f"id IN ({ph})", chunk)
        new_logs = []
        lcols = [c for c in await self._columns(tx, "tool_logs") if c != "id"] if log_ids else []
        lexprs = {"session_id": "CAST(? AS TEXT)", "message_id": "CAST(? AS BIGINT)"}
        for lid in log_ids:
            link = (await tx.fetch("SELECT message_id FROM tool_logs WHERE id = ?", lid))[0]["message_id"]
            given = {"session_id": dst, "message_id": mapping.get(int(link)) if link is not None else None}
            rows = await tx.fetch(
                f"INSERT INTO tool_logs ({', '.join(lcols)}) SELECT "
                f"{', '.join(lexprs.get(c, c) for c in lcols)} FROM tool_logs WHERE id = ? "
                "RETURNING id",
                *[given[c] for c in lcols if c in given],
                lid,
            )
            new_logs.append(int(rows[0]["id"]))
        return new_ids, new_logs

    # ---- rewind ------------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id_: str, hard: bool = False) -> RewindPlan:
        target = await self.store.get_metadata(checkpoint_id_)
        if target is None:
            raise CheckpointNotFound(checkpoint_id_)
        moved = await self.store.read_thread(target.thread_id, 2**62, target.step)
        archive = None
        if moved and not hard:
            archive = await self._fresh_session(self.store, f"{target.thread_id}-rewound-at-{target.step}")
        return RewindPlan(target, target.thread_id, moved, archive, hard)

    @retried_write
    async def rewind(
        self, checkpoint_id_: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        mid0 = message_id_of(checkpoint_id_)
        if mid0 is None:
            raise CheckpointNotFound(checkpoint_id_)
        if archive_thread is not None and not hard and not _NAME.match(archive_thread):
            raise UsageError(
                f"invalid archive session id {archive_thread!r} (letters, digits, '.', '_', '-')"
            )
        rows = await self.store.q("SELECT session_id FROM messages WHERE id = ?", mid0)
        if not rows:
            raise CheckpointNotFound(checkpoint_id_)
        sid0 = rows[0]["session_id"]
        result: dict[str, Any] = {}
        async with self._write([sid0] + ([archive_thread] if archive_thread else [])) as tx:
            mid, sid, step = await self._target(tx, checkpoint_id_)
            if sid != sid0:
                raise OperationError(
                    f"checkpoint {checkpoint_id_!r} moved to another session meanwhile; retry"
                )
            if await self._session(tx, sid) is None:
                raise OperationError(f"session {sid!r} of {checkpoint_id_} does not exist; cannot rewind it")
            before = int(
                (await tx.fetch("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", sid))[0]["n"]
            )
            later = [
                int(r["id"])
                for r in await tx.fetch(
                    "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id", sid, mid
                )
            ]
            result.update(sid=sid, before=before, later=later, archive=None, op_id=None)
            if later:
                logs = await self._logs_of(tx, sid, after=mid)
                if hard:
                    op = await self._begin(
                        tx,
                        "rewind",
                        f"hard rewind {sid} to step {step} ({checkpoint_id_}): deleted "
                        f"{len(later)} message(s)",
                        [sid],
                        {"target": checkpoint_id_, "thread": sid, "hard": True, "count": len(later)},
                        ("sessions", "messages", "tool_logs"),
                    )
                    for ph, chunk in in_chunks(logs):
                        await op.delete("tool_logs", ("id",), f"id IN ({ph})", chunk)
                    await self._fts_index(tx, "delete", "session_id = ? AND id > ?", (sid, mid))
                    await op.delete("messages", ("id",), "session_id = ? AND id > ?", (sid, mid))
                    await self._recount(op, tx, sid)
                else:
                    archive = archive_thread or await self._fresh_session(tx, f"{sid}-rewound-at-{step}")
                    if archive == sid or await self._session(tx, archive) is not None:
                        raise UsageError(f"session {archive!r} already exists; choose another archive name")
                    op = await self._begin(
                        tx,
                        "rewind",
                        f"rewind {sid} to step {step} ({checkpoint_id_}): moved {len(later)} "
                        f"message(s) to {archive}",
                        [sid, archive],
                        {
                            "target": checkpoint_id_,
                            "thread": sid,
                            "hard": False,
                            "archive_thread": archive,
                            "count": len(later),
                        },
                        ("sessions", "messages", "tool_logs", S.BRANCHES),
                    )
                    src = await self._session(tx, sid)
                    assert src is not None  # the session of the target, read in this transaction
                    await self._copy_session(
                        tx, sid, archive, f"{src.get('title') or ''} (rewound from {sid} at step {step})"
                    )
                    await self._update_ids(op, "messages", later, "session_id = ?", (archive,))
                    await self._update_ids(op, "tool_logs", logs, "session_id = ?", (archive,))
                    await tx.execute(
                        f"INSERT INTO {S.BRANCHES} (session_id, kind, name, source_session_id, source_message_id, "
                        "base_step, merged_message_id, into_head, created_at) VALUES (?, 'rewind', NULL, ?, ?, ?, "
                        "NULL, NULL, ?)",
                        archive,
                        sid,
                        mid,
                        step,
                        self._now(),
                    )
                    await op.inserted(S.BRANCHES, ("session_id",), "session_id = ?", (archive,))
                    await self._recount(op, tx, sid)
                    await self._recount(None, tx, archive)
                    await op.inserted("sessions", ("id",), "id = ?", (archive,))
                    result["archive"] = archive
                result["op_id"] = await self.journal_finish(op)
        cp = await self.store.get(checkpoint_id_)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(checkpoint_id_)
        later_ids = [checkpoint_id(i) for i in result["later"]]
        return TimeTravelResult(
            cp,
            result["sid"],
            len(later_ids),
            result["before"],
            op_id=result["op_id"],
            archive_thread=result["archive"],
            moved=later_ids if not hard else [],
            deleted=later_ids if hard else [],
        )

    # ---- branch ------------------------------------------------------------------------

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name or "")
        if not _NAME.match(name):
            raise UsageError(
                f"invalid branch name {branch_name!r}: use 1-64 letters, digits, '.', '_' or '-'"
            )
        meta = await self.store.get_metadata(from_checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(from_checkpoint_id)
        new = f"{meta.thread_id}-branch-{name}"
        async with self._write([meta.thread_id, new]) as tx:
            mid, sid, step = await self._target(tx, from_checkpoint_id)
            src = await self._session(tx, sid)
            if src is None:
                raise OperationError(f"session {sid!r} of {from_checkpoint_id} does not exist; cannot branch")
            if await self._session(tx, new) is not None:
                raise UsageError(f"session {new!r} already exists; choose another branch name")
            op = await self._begin(
                tx,
                "branch",
                f"branch {new} from {from_checkpoint_id} (step {step} of {sid})",
                [new, sid],
                {"from": from_checkpoint_id, "branch_thread": new, "name": name, "step": step},
                ("sessions", "messages", "tool_logs", S.BRANCHES),
            )
            await self._copy_session(
                tx, sid, new, f"{src.get('title') or ''} (branch {name} of {sid} at step {step})"
            )
            new_ids, _ = await self._copy_messages(tx, sid, new, None, mid)
            await tx.execute(
                f"INSERT INTO {S.BRANCHES} (session_id, kind, name, source_session_id, source_message_id, base_step, "
                "merged_message_id, into_head, created_at) VALUES (?, 'branch', ?, ?, ?, ?, ?, ?, ?)",
                new,
                name,
                sid,
                mid,
                step,
                new_ids[-1],
                mid,
                self._now(),
            )
            await self._recount(None, tx, new)
            await op.inserted("sessions", ("id",), "id = ?", (new,))
            await op.inserted("messages", ("id",), "session_id = ?", (new,))
            if await self._has(tx, "tool_logs"):
                await op.inserted("tool_logs", ("id",), "session_id = ?", (new,))
            await op.inserted(S.BRANCHES, ("session_id",), "session_id = ?", (new,))
            await self.journal_finish(op)
        return new

    # ---- merge -------------------------------------------------------------------------

    async def _merge_facts(self, reader: Any, branch: str, into: str, strategy: str) -> dict[str, Any]:
        if strategy not in STRATEGIES:
            raise UsageError(f"unknown merge strategy {strategy!r}; use one of: {', '.join(STRATEGIES)}")
        if branch == into:
            raise UsageError("cannot merge a session into itself")
        for sid in (branch, into):
            if not await reader.fetch("SELECT 1 AS x FROM sessions WHERE id = ?", sid):
                raise ThreadNotFound(sid)
        info = []
        if await reader.fetch(
            *(
                ("SELECT 1 AS x FROM sqlite_master WHERE name = ?", S.BRANCHES)
                if self.kind == "sqlite"
                else ("SELECT 1 AS x WHERE to_regclass(?) IS NOT NULL", S.BRANCHES)
            )
        ):
            info = await reader.fetch(
                f"SELECT * FROM {S.BRANCHES} WHERE session_id = ? AND kind = 'branch'", branch
            )
        if not info or info[0]["source_session_id"] != into:
            raise UsageError(f"session {branch!r} is not a branch of {into!r} (made by agentctl branch)")
        b = info[0]
        new = [
            int(r["id"])
            for r in await reader.fetch(
                "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
                branch,
                b["merged_message_id"],
            )
        ]
        head = (await reader.fetch("SELECT MAX(id) AS h FROM messages WHERE session_id = ?", into))[0]["h"]
        from agentctl.merge import Conflict

        moved = head != b["into_head"]
        conflict = (
            Conflict(
                "/messages",
                checkpoint_id(b["into_head"]),
                checkpoint_id(head) if head is not None else None,
                [checkpoint_id(i) for i in new],
            )
            if moved and new
            else None
        )
        return {"info": b, "new": new, "head": head, "moved": moved, "conflict": conflict}

    async def plan_merge(
        self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail"
    ) -> MergePlan:
        await self.store.connect()
        f = await self._merge_facts(self.store, branch_thread_id, into_thread_id, strategy)
        ours = await self.store.get_latest(into_thread_id) or Checkpoint(
            CheckpointMetadata(into_thread_id, "", 0), [], {}, {}
        )
        theirs = await self.store.get_latest(branch_thread_id) or Checkpoint(  # (as ours)
            CheckpointMetadata(branch_thread_id, "", 0), [], {}, {}
        )
        base = await self.store.get_metadata(checkpoint_id(f["info"]["into_head"]))
        appended = [m for m in theirs.messages if int(m.get("id", 0)) in set(f["new"])]
        conflicts = [f["conflict"]] if f["conflict"] else []
        resolved: list[Any] = []
        if conflicts and strategy in ("ours", "theirs"):
            resolved, conflicts = conflicts, []
        take = not (strategy == "ours" and resolved)
        merged_msgs = list(ours.messages) + (appended if take else [])
        merged = Checkpoint(
            CheckpointMetadata(
                into_thread_id,
                "(new)",
                len(merged_msgs),
                ours.metadata.checkpoint_id or None,
                now_text(self.store._clock),
                ["merge", f"branch:{branch_thread_id}"],
                f"Merge {branch_thread_id} into {into_thread_id}",
            ),
            merged_msgs,
            ours.state,
            ours.tools_result,
        )
        return MergePlan(
            base,
            ours,
            theirs,
            merged,
            conflicts,
            strategy,
            branch_thread_id,
            into_thread_id,
            resolved,
            up_to_date=not f["new"] or not take,
            id_at_write="its id is the first appended message's, numbered by the write",
        )

    @retried_write
    async def merge_branch(
        self,
        branch_thread_id: str,
        into_thread_id: str,
        strategy: str = "fail",
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """Append the branch's new messages to the target. (`checkpoint_id` is ignored:
        the appended messages get their ids from the messages table.)"""
        branch, into = branch_thread_id, into_thread_id
        async with self._write([into, branch]) as tx:
            f = await self._merge_facts(tx, branch, into, strategy)
            if not f["new"]:
                raise OperationError(
                    f"nothing to merge: {branch} has no messages after its fork point "
                    f"(or its last merge) into {into}; nothing was written"
                )
            if f["moved"]:
                if strategy in ("fail", "three-way"):
                    conflict = f["conflict"]
                    raise MergeConflictError(
                        [conflict],
                        f"merging {branch} into {into} conflicts: {into} has changed since the fork "
                        f"(head {conflict.ours or 'none'}, forked at {conflict.base}); nothing was written; "
                        "use strategy 'theirs' to append the branch's messages anyway",
                    )
                if strategy == "ours":
                    raise OperationError(
                        f"strategy 'ours' keeps {into} as it is (it changed since the fork); "
                        "nothing was written"
                    )
            info = f["info"]
            op = await self._begin(
                tx,
                "merge",
                f"merge {branch} into {into}: appended {len(f['new'])} message(s)",
                [into, branch],
                {
                    "branch_thread": branch,
                    "into": into,
                    "strategy": strategy,
                    "count": len(f["new"]),
                    "old_merged_message_id": info["merged_message_id"],
                    "old_into_head": info["into_head"],
                },
                ("sessions", "messages", "tool_logs", S.BRANCHES),
            )
            new_ids, new_logs = await self._copy_messages(tx, branch, into, info["merged_message_id"], None)
            await op.update(
                S.BRANCHES,
                ("session_id",),
                "session_id = ?",
                (branch,),
                "merged_message_id = ?, into_head = ?",
                (f["new"][-1], new_ids[-1]),
            )
            await self._recount(op, tx, into)
            await self._inserted_ids(op, "messages", new_ids)
            await self._inserted_ids(op, "tool_logs", new_logs)
            await self.journal_finish(op)
        return _message_checkpoint_id(new_ids[-1])

    # ---- edit (see edit.py): REF's message and its session's fields, in place -----------

    edit_view = staticmethod(edit.edit_view)
    edit_check = staticmethod(edit.edit_check)
    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "change message {ref} / session {thread} in place"
    edit_state = edit.edit_state

    # ---- prune and delete --------------------------------------------------------------

    async def _select_sessions(self, reader: Any, spec: PruneSpec) -> list[str]:
        if spec.milestones is not None:
            raise Unsupported("article", "prune --milestones (sessions are pruned whole)")
        if spec.keep_last is None and spec.older_than is None and not spec.statuses:
            raise UsageError(
                "give at least one of --keep-last N (sessions per user), --older-than AGE, --status"
            )
        if spec.keep_last is not None and spec.threads is not None:
            raise UsageError(
                "the article store prunes whole sessions: --keep-last N keeps each user's newest N "
                "sessions, so it takes no SESSION (to drop a session's later messages: rewind --hard)"
            )
        conds: list[str] = []
        params: list[Any] = []
        t = self.store.t
        if spec.older_than is not None:
            if float(spec.older_than) < 0:
                raise UsageError("--older-than must be >= 0")
            conds.append(f"{t('s.updated_at')} < ?")
            params.append(self.store._cutoff(float(spec.older_than) / 86400))
        if spec.statuses:
            st = [x.strip() for s_ in spec.statuses for x in str(s_).split(",") if x.strip()]
            conds.append(f"s.status IN ({marks(len(st))})")
            params += st
        if spec.keep_last is not None:
            if int(spec.keep_last) < 0:
                raise UsageError("--keep-last must be >= 0")
            conds.append(
                "s.id NOT IN (SELECT r.id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id "
                f"ORDER BY {t('updated_at')} DESC, id{self.store.C} DESC) AS rn FROM sessions) r "
                "WHERE r.rn <= ?)"
            )
            params.append(int(spec.keep_last))
        if spec.threads is not None:
            if not spec.threads:
                return []
            conds.append(f"s.id IN ({marks(len(spec.threads))})")
            params += list(spec.threads)
        rows = await reader.fetch(
            f"SELECT s.id FROM sessions s WHERE {' AND '.join(conds)} ORDER BY s.id{self.store.C}", *params
        )
        return [r["id"] for r in rows]

    @staticmethod
    def _policy(spec: PruneSpec) -> tuple[CheckpointGC | None, float | None]:
        if spec.keep_last is not None:
            return CheckpointGC.KEEP_LAST_N, float(spec.keep_last)
        if spec.older_than is not None:
            return CheckpointGC.KEEP_AGE, float(spec.older_than)
        return None, None  # --status alone: no retention policy (the reason says it)

    @staticmethod
    def _reason(spec: PruneSpec) -> str:
        parts = []
        if spec.statuses:
            parts.append("status " + ",".join(spec.statuses))
        if spec.older_than is not None:
            parts.append(f"not updated for {spec.older_than / 86400:g} days")
        if spec.keep_last is not None:
            parts.append(f"beyond its user's newest {spec.keep_last}")
        return "the whole session: " + (", ".join(parts) or "asked for")

    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        await self.store.connect()
        sessions = await self._select_sessions(self.store, spec)
        policy, param = self._policy(spec)
        out = []
        for sid in sessions:
            n = await self.store.count(sid)
            metas = await self.store.read_thread(sid, n if preview is None else max(0, int(preview)), 0)
            out.append(PrunePlan(sid, policy, param, metas, 0, n, reason=self._reason(spec)))
        return out

    async def _delete_sessions(self, op: ops.Op, tx: Transaction, sessions: Sequence[str]) -> None:
        for ph, chunk in in_chunks(sessions):
            if await self._has(tx, "tool_logs"):
                await op.delete(
                    "tool_logs",
                    ("id",),
                    f"session_id IN ({ph}) OR message_id IN "
                    f"(SELECT id FROM messages WHERE session_id IN ({ph}))",
                    (*chunk, *chunk),
                )
            await self._fts_index(tx, "delete", f"session_id IN ({ph})", chunk)
            await op.delete("messages", ("id",), f"session_id IN ({ph})", chunk)
            if await self._has(tx, "tasks"):
                await op.delete("tasks", ("id",), f"session_id IN ({ph})", chunk)
            await op.delete("sessions", ("id",), f"id IN ({ph})", chunk)

    async def _messages_of(self, tx: Transaction, sessions: Sequence[str]) -> list[str]:
        out: list[str] = []
        for sid in sessions:
            out += [
                checkpoint_id(r["id"])
                for r in await tx.fetch("SELECT id FROM messages WHERE session_id = ? ORDER BY id", sid)
            ]
        return out

    @retried_write
    async def prune_spec(
        self,
        spec: PruneSpec,
        *,
        progress: Callable[[int], Any] | None = None,
        plans: Sequence[PrunePlan] | None = None,
    ) -> list[OpResult]:
        await self.store.connect()
        threads = spec.threads or []
        async with self._write(list(threads)) as tx:
            sessions = await self._select_sessions(tx, spec)
            if not sessions:
                return [OpResult(None, "prune", "nothing to prune: no session matches")]
            details = {
                "sessions": sessions,
                "keep_last": spec.keep_last,
                "older_than": spec.older_than,
                "statuses": spec.statuses,
                "threads": spec.threads,
            }
            deleted = await self._messages_of(tx, sessions)
            summary = (
                f"prune {len(sessions)} session(s) ({', '.join(sessions[:5])}"
                f"{', …' if len(sessions) > 5 else ''}): deleted {len(deleted)} message(s)"
            )
            op = await self._begin(tx, "prune", summary, sessions, details, tuple(KEYS)[:4])
            await self._delete_sessions(op, tx, sessions)
            op_id = await self.journal_finish(op)
        return [OpResult(op_id, "prune", summary, deleted=deleted)]

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        await self.store.connect()
        if await self._session(self.store, thread_id) is None:
            raise ThreadNotFound(thread_id)
        branches = await self.store.branches_of([thread_id])
        return DeletePlan(
            thread_id,
            await self.store.count(thread_id),
            [],
            list(dict.fromkeys(b.thread_id for b in branches)),
        )

    @retried_write
    async def delete_thread(self, thread_id: str) -> OpResult:
        async with self._write([thread_id]) as tx:
            if await self._session(tx, thread_id) is None:
                raise ThreadNotFound(thread_id)
            deleted = await self._messages_of(tx, [thread_id])
            summary = f"delete session {thread_id} ({len(deleted)} message(s))"
            op = await self._begin(
                tx,
                "delete_thread",
                summary,
                [thread_id],
                {"thread": thread_id, "count": len(deleted)},
                tuple(KEYS)[:4],
            )
            await self._delete_sessions(op, tx, [thread_id])
            op_id = await self.journal_finish(op)
        return OpResult(op_id, "delete_thread", summary, deleted=deleted)

    # ---- undo, redo, purge: the journal's (agentctl/storage/journal/history.py) ------------

    async def journal_move(
        self, tx: Any, record: dict[str, Any], image: str, threads: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The journal's move, after checking that every row the op (or its undo) left
        is still as it left it (none changed, none deleted, no key taken again), and with
        messages_fts kept in step where agentctl keeps it."""
        undo = image == "before"
        await ops.check(tx, record, 1 if undo else 0, None)
        await legacy.unchecked(self, tx, record)
        self._fts = await self._fts_mode(tx)
        images: dict[int, dict[str, Any]] = {}  # {message id: {image: its session}}
        if "messages" in record["tables"]:
            for r in await trash.held(tx, record["op_id"], "messages", ("id", "session_id")):
                images.setdefault(int(r["id"]), {})[r["image"]] = r["session_id"]
        for ph, chunk in in_chunks(list(images)):
            await self._fts_index(tx, "delete", f"id IN ({ph})", chunk)
        moved = await super().journal_move(tx, record, image, threads)
        for ph, chunk in in_chunks(list(images)):
            await self._fts_index(tx, "insert", f"id IN ({ph})", chunk)
        other = "after" if undo else "before"
        self._moved = {
            kind: [checkpoint_id(i) for i, d in images.items() if test(d)]
            for kind, test in (
                ("created", lambda d: other not in d),
                ("deleted", lambda d: image not in d),
                ("moved", lambda d: len(d) == 2 and d[image] != d[other]),
            )
        }
        return moved

    def describe_rows(self, table: str, keys: Sequence[tuple[Any, ...]]) -> str:
        names = ", ".join(checkpoint_id(k[0]) if table == "messages" else str(k[0]) for k in keys)
        return _LABELS.get(table, table + " row(s) {}").format(names)

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        """The messages the last move put back (created), took away (deleted) or moved."""
        result, self._moved = self._moved, {}
        return result

    old_log = legacy.OLD

    async def migrate(self, tx: Any) -> None:
        await legacy.migrate(tx)

    async def journal_moved(self) -> None:
        await self.store._reload_tables()

    @retried_write
    async def purge(self, dry_run: bool = False) -> PurgeResult:
        """The journal's purge, then VACUUM (SQLite: the whole file; Postgres: the trash tables)."""
        result: PurgeResult = await JournalHistory.purge(self, dry_run)
        if dry_run or not result.ops:
            return result
        await self.store._reload_tables()
        try:
            await self.db.vacuum([t for t in await self.store.tables() if t.startswith(trash.PREFIX)])
            result.vacuumed = True
        except AgentctlError:  # the purge is done; only the compaction waits (busy)
            result.vacuumed = False
        return result
