"""The write side of the article's session store (`ArticleHistory`), SQLite and Postgres.

Every write is one transaction (the backends' `transaction()`: BEGIN IMMEDIATE on
SQLite; on Postgres advisory locks plus `LOCK TABLE ... IN EXCLUSIVE MODE` on the
article's tables, so an agent's writes wait for the commit) and is recorded in side
tables the article's code never reads (see schema.py): the op log, the rows an op
inserted or moved, a fingerprint of each session it changed, and trash tables holding
exact copies of the rows it deleted (ids included) and of session rows before it
updated them. Undo restores every row exactly; it refuses when a session the op
changed has changed since (its fingerprint: the session row's counters, status, title
and updated_at, and the count/min/max/sum of its message, tool log and task ids) or
when an id it would restore was taken again.

- rewind (soft): the later messages, and their tool_logs, move to a new archive session
  (a copy of the session row, id `<session>-rewound-at-<step>`, title
  "<title> (rewound from <session> at step N)"), recorded as a fork of the target in
  `agentctl_article_branches` (kind 'rewind'); hard: they go to the trash. The
  session's message_count and total_tokens are recomputed and updated_at set.
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
- prune / delete: whole sessions with their messages, tool_logs and tasks, into the
  trash, as one operation.
- edit: a message's role/content/tool_calls/tool_call_id and its session's title/status/
  model/metadata changed in place (edit.py); the rows' before-images are 'before' copies
  in the trash, which undo writes back.

messages_fts (SQLite): when it has triggers on messages, they keep it in step; when it
is an external-content index in step with messages before the write, FTS5 'delete'
commands (old values) are issued for every message deleted and inserts for every
message copied or restored (a moved message keeps its rowid and content: nothing to do);
when it was stale before, it is left alone (doctor reports it; search scans).
"""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator, Sequence

from agentctl.storage.results import CheckpointGC, DeletePlan, MergePlan, PrunePlan, RewindPlan, TimeTravelResult
from agentctl.errors import (
    AgentctlError,
    CheckpointNotFound,
    MergeConflictError,
    NotFoundError,
    OperationError,
    ThreadNotFound,
    UsageError,
)
from agentctl.model import Checkpoint, CheckpointMetadata, utc_now_iso
from agentctl.storage.results import OpRecord, OpResult, PurgeResult
from agentctl.storage.article import schema as S
from agentctl.storage.article.store import checkpoint_id, message_id_of, now_text
from agentctl.storage.contract import History, PruneSpec, Unsupported, whole_undo_only
from agentctl.storage.sqlutil import in_chunks, marks

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction
    from agentctl.storage.article.store import ArticleStore

_NAME = re.compile(r"^[\w.-]{1,64}$")
STRATEGIES = ("fail", "three-way", "ours", "theirs")


# merge_branch takes a `checkpoint_id` argument (the contract's), which hides the function.
_message_checkpoint_id = checkpoint_id

class ArticleHistory(History):
    """Writes of the article's format (see the module doc)."""

    #: a session is pruned whole: by age only (--keep-last counts a user's sessions)
    prune_policies = ("keep_age",)

    def __init__(self, store: ArticleStore, **options: Any):
        self.store = store
        self.db = store.db
        self.kind = store.kind
        self.last_op_id: int | None = None
        self._cols: dict[str, list[str]] = {}

    # ---- plumbing ----------------------------------------------------------------------

    def _now(self) -> str:
        return now_text(self.store._clock)

    def _ts(self, table: str, column: str) -> str:
        """The placeholder of a time or text value written into table.column (TEXT, or on
        Postgres a timestamp or JSON type: the text cast to it)."""
        if self.kind != "postgres":
            return "?"
        typ = (getattr(self.db, "article_types", {}) or {}).get((table, column), "text")
        if typ.startswith("timestamp"):
            return f"CAST(CAST(? AS TEXT) AS {'TIMESTAMPTZ' if 'with time zone' in typ else 'TIMESTAMP'})"
        if typ in ("json", "jsonb"):
            return f"CAST(CAST(? AS TEXT) AS {typ.upper()})"
        return "CAST(? AS TEXT)"

    @asynccontextmanager
    async def _write(self, threads: Sequence[str]) -> AsyncIterator[Any]:
        await self.store.connect()
        async with self.db.transaction(lock_threads=[str(t) for t in dict.fromkeys(threads)]) as tx:
            if tx.kind == "postgres":
                present = [t for t in S.DATA_TABLES if await tx.table_exists(t)]
                await tx.execute(f"LOCK TABLE {', '.join(present)} IN EXCLUSIVE MODE")
            self._fts = await self._fts_mode(tx)
            yield tx
        await self.store._reload_tables()

    async def _has(self, tx: Transaction, table: str) -> bool:
        return bool(await tx.table_exists(table))

    async def _columns(self, tx: Transaction, table: str) -> list[str]:
        if table not in self._cols:
            if tx.kind == "sqlite":
                rows = await tx.fetch("SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
                self._cols[table] = [r["name"] for r in rows]
            else:
                rows = await tx.fetch(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                    "AND table_schema = ANY(current_schemas(false)) ORDER BY ordinal_position", table)
                self._cols[table] = [r["column_name"] for r in rows]
        return self._cols[table]

    async def _ensure_side(self, tx: Transaction) -> None:
        if await self._has(tx, S.OPLOG) and await self._has(tx, S.BRANCHES):
            return
        if tx.kind == "postgres":
            await tx.execute("SELECT pg_advisory_xact_lock(hashtextextended('agentctl_article_oplog', 7340))")
        for ddl in S.side_ddl(tx.kind):
            await tx.execute(ddl)

    async def _ensure_trash(self, tx: Transaction, table: str) -> None:
        if not await self._has(tx, S.trash_name(table)):
            await tx.execute(S.trash_ddl(tx.kind, table))

    async def _fts_mode(self, tx: Transaction) -> str:
        """"maintain", "triggers" or "off" (no FTS, not the article's kind, or stale)."""
        if tx.kind != "sqlite":
            return "off"
        rows = await tx.fetch("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'")
        if not rows:
            return "off"
        low = re.sub(r"\s+", "", (rows[0]["sql"] or "").lower())
        if "content='messages'" not in low and 'content="messages"' not in low:
            return "off"
        if await tx.fetch("SELECT 1 AS x FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
                          "AND sql LIKE '%messages_fts%' LIMIT 1"):
            return "triggers"
        if not await self._has(tx, "messages_fts_docsize"):
            return "off"
        a = (await tx.fetch("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages_fts_docsize"))[0]
        b = (await tx.fetch("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages"))[0]
        return "maintain" if (a["n"], a["mx"], a["sm"]) == (b["n"], b["mx"], b["sm"]) else "off"

    async def _fts_delete(self, tx: Transaction, ids: Sequence[int]) -> None:
        if self._fts != "maintain":
            return
        for ph, chunk in in_chunks(ids):
            await tx.execute("INSERT INTO messages_fts(messages_fts, rowid, content) SELECT 'delete', id, "
                             f"content FROM messages WHERE id IN ({ph})", *chunk)

    async def _fts_insert(self, tx: Transaction, ids: Sequence[int]) -> None:
        if self._fts != "maintain":
            return
        for ph, chunk in in_chunks(ids):
            await tx.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages "
                             f"WHERE id IN ({ph})", *chunk)

    async def _start(self, tx: Transaction, kind: str, summary: str, threads: Sequence[str],
                     details: dict[str, Any], undo_of: int | None = None) -> int:
        await self._ensure_side(tx)
        rows = await tx.fetch(
            f"INSERT INTO {S.OPLOG} (created_at, kind, summary, threads, details, undo_of) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING op_id",
            utc_now_iso(), kind, summary,
            json.dumps(list(dict.fromkeys(threads)), ensure_ascii=False),
            json.dumps(details, ensure_ascii=False), undo_of)
        return int(rows[0]["op_id"])

    async def _set_summary(self, tx: Transaction, op_id: int, summary: str, details: dict[str, Any]) -> None:
        await tx.execute(f"UPDATE {S.OPLOG} SET summary = ?, details = ? WHERE op_id = ?",
                         summary, json.dumps(details, ensure_ascii=False), op_id)

    async def _record(self, tx: Transaction, op_id: int, table: str, ids: Sequence[Any], action: str,
                      old_session: str | None = None) -> None:
        if not ids:
            return
        numeric = table in ("messages", "tool_logs")
        await tx.executemany(
            f"INSERT INTO {S.ROWS} (op_id, tbl, row_key, row_num, action, old_session_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(op_id, table, None if numeric else str(i), int(i) if numeric else None, action, old_session)
             for i in ids])

    async def _trash(self, tx: Transaction, op_id: int, table: str, ids: Sequence[Any], action: str = "deleted") -> int:
        """Copy the rows of `table` with these ids into its trash; delete them unless
        action is 'before' (a copy of a row the op then updates)."""
        if not ids:
            return 0
        await self._ensure_trash(tx, table)
        cols = ", ".join(await self._columns(tx, table))
        n = 0
        for ph, chunk in in_chunks(ids):
            await tx.execute(
                f"INSERT INTO {S.trash_name(table)} (agentctl_op_id, agentctl_action, {cols}) "
                f"SELECT CAST(? AS BIGINT), CAST(? AS TEXT), {cols} FROM {table} WHERE id IN ({ph})",
                op_id, action, *chunk)
            if action == "deleted":
                n += await tx.execute(f"DELETE FROM {table} WHERE id IN ({ph})", *chunk)
        return n

    async def _fingerprint(self, tx: Transaction, sid: str) -> str:
        s = await tx.fetch(f"SELECT message_count, total_tokens, status, title, {self.store.t('updated_at')} "
                           "AS u FROM sessions WHERE id = ?", sid)
        parts: dict[str, Any] = {"session": [str(v) for v in s[0].values()] if s else None}
        m = await tx.fetch("SELECT COUNT(*) AS n, MIN(id) AS a, MAX(id) AS b, SUM(id) AS c FROM messages "
                           "WHERE session_id = ?", sid)
        parts["messages"] = [str(v) for v in m[0].values()]
        for table in ("tool_logs", "tasks"):
            if await self._has(tx, table):
                key = "SUM(id)" if table == "tool_logs" else "MAX(id)"
                r = await tx.fetch(f"SELECT COUNT(*) AS n, {key} AS k FROM {table} WHERE session_id = ?", sid)
                parts[table] = [str(v) for v in r[0].values()]
        return json.dumps(parts, sort_keys=True, ensure_ascii=False)

    async def _finish(self, tx: Transaction, op_id: int, sessions: Sequence[str]) -> None:
        for sid in dict.fromkeys(sessions):
            await tx.execute(f"INSERT INTO {S.AFTER} (op_id, session_id, fingerprint) VALUES (?, ?, ?)",
                             op_id, sid, await self._fingerprint(tx, sid))

    async def _recount(self, tx: Transaction, sid: str) -> None:
        await tx.execute(
            "UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages m WHERE m.session_id = ?), "
            "total_tokens = (SELECT COALESCE(SUM(token_count), 0) FROM messages m WHERE m.session_id = ?), "
            f"updated_at = {self._ts('sessions', 'updated_at')} WHERE id = ?", sid, sid, self._now(), sid)

    async def _session(self, reader: Any, sid: str) -> dict[str, Any] | None:
        rows = await reader.query("SELECT * FROM sessions WHERE id = ?", sid) if hasattr(reader, "query") \
            else await reader.fetch("SELECT * FROM sessions WHERE id = ?", sid)
        return rows[0] if rows else None

    async def _target(self, reader: Any, cid: str) -> tuple[int, str, int]:
        """(message id, session id, step) of a checkpoint id, or CheckpointNotFound."""
        mid = message_id_of(cid)
        rows = await reader.fetch("SELECT session_id FROM messages WHERE id = ?", mid) if mid is not None else []
        if mid is None or not rows:
            raise CheckpointNotFound(cid)
        sid = rows[0]["session_id"]
        step = (await reader.fetch("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND id <= ?",
                                   sid, mid))[0]["n"]
        return mid, sid, int(step)

    async def _fresh_session(self, reader: Any, base: str) -> str:
        name = base
        for i in range(2, 1000):
            if not await reader.fetch("SELECT 1 AS x FROM sessions WHERE id = ?", name):
                return name
            name = f"{base}-{i}"
        raise OperationError("could not find an unused session id")  # pragma: no cover

    async def _copy_session(self, tx: Transaction, src: str, new: str, title: str) -> None:
        cols = await self._columns(tx, "sessions")
        exprs, params = [], []
        now = self._now()
        for c in cols:
            if c == "id":
                exprs.append("CAST(? AS TEXT)")
                params.append(new)
            elif c == "title":
                exprs.append("CAST(? AS TEXT)")
                params.append(title)
            elif c in ("created_at", "updated_at"):
                exprs.append(self._ts("sessions", c))
                params.append(now)
            else:
                exprs.append(c)
        await tx.execute(f"INSERT INTO sessions ({', '.join(cols)}) SELECT {', '.join(exprs)} "
                         "FROM sessions WHERE id = ?", *params, src)

    async def _logs_of(self, tx: Transaction, sid: str, after: int | None = None, upto: int | None = None) -> list[int]:
        """Ids of the tool_logs belonging to the messages of `sid` with after < id <= upto
        (linked by message_id, or unlinked and attributed to them: see store.py)."""
        if not await self._has(tx, "tool_logs"):
            return []
        rng, params = "", []
        if after is not None:
            rng += " AND x.id > ?"
            params.append(after)
        if upto is not None:
            rng += " AND x.id <= ?"
            params.append(upto)
        t = self.store.t
        owner = ("COALESCE((SELECT MAX(y.id) FROM messages y WHERE y.session_id = l.session_id "
                 f"AND {t('y.created_at')} <= {t('l.created_at')}), "
                 "(SELECT MIN(y.id) FROM messages y WHERE y.session_id = l.session_id))")
        rows = await tx.fetch(
            f"SELECT l.id FROM tool_logs l WHERE l.message_id IN (SELECT x.id FROM messages x "
            f"WHERE x.session_id = ?{rng}) OR (l.message_id IS NULL AND l.session_id = ? AND "
            f"{owner} IN (SELECT x.id FROM messages x WHERE x.session_id = ?{rng})) ORDER BY l.id",
            sid, *params, sid, sid, *params)
        return [int(r["id"]) for r in rows]

    async def _copy_messages(self, tx: Transaction, op_id: int, src: str, dst: str, after: int | None,
                             upto: int | None) -> list[int]:
        """Copy the messages of `src` with after < id <= upto (and their tool_logs) into
        `dst` with new ids, in id order; return the new message ids."""
        mcols = [c for c in await self._columns(tx, "messages") if c != "id"]
        exprs = ["CAST(? AS TEXT)" if c == "session_id" else c for c in mcols]
        conds, params = "", []
        if after is not None:
            conds += " AND id > ?"
            params.append(after)
        if upto is not None:
            conds += " AND id <= ?"
            params.append(upto)
        old_ids = [int(r["id"]) for r in await tx.fetch(
            f"SELECT id FROM messages WHERE session_id = ?{conds} ORDER BY id", src, *params)]
        log_ids = await self._logs_of(tx, src, after, upto)
        mapping: dict[int, int] = {}
        for old in old_ids:
            rows = await tx.fetch(f"INSERT INTO messages ({', '.join(mcols)}) SELECT {', '.join(exprs)} "
                                  "FROM messages WHERE id = ? RETURNING id", dst, old)
            mapping[old] = int(rows[0]["id"])
        new_ids = [mapping[o] for o in old_ids]
        await self._record(tx, op_id, "messages", new_ids, "insert")
        await self._fts_insert(tx, new_ids)
        if log_ids:
            lcols = [c for c in await self._columns(tx, "tool_logs") if c != "id"]
            new_logs = []
            for lid in log_ids:
                link = (await tx.fetch("SELECT message_id FROM tool_logs WHERE id = ?", lid))[0]["message_id"]
                lexprs: list[str] = []
                lparams: list[Any] = []
                for c in lcols:
                    if c == "session_id":
                        lexprs.append("CAST(? AS TEXT)")
                        lparams.append(dst)
                    elif c == "message_id":
                        lexprs.append("CAST(? AS BIGINT)")
                        lparams.append(mapping.get(int(link)) if link is not None else None)
                    else:
                        lexprs.append(c)
                rows = await tx.fetch(f"INSERT INTO tool_logs ({', '.join(lcols)}) SELECT {', '.join(lexprs)} "
                                      "FROM tool_logs WHERE id = ? RETURNING id", *lparams, lid)
                new_logs.append(int(rows[0]["id"]))
            await self._record(tx, op_id, "tool_logs", new_logs, "insert")
        return new_ids

    # ---- rewind ------------------------------------------------------------------------

    async def _later(self, reader: Any, sid: str, mid: int) -> list[CheckpointMetadata]:
        step = int((await reader.q("SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND id <= ?",
                                       sid, mid))[0]["n"])
        out = []
        prev = checkpoint_id(mid)
        for r in await reader.q(f"SELECT {self.store._msg_cols()} FROM messages m WHERE m.session_id = ? "
                                    "AND m.id > ? ORDER BY m.id", sid, mid):
            step += 1
            meta = self.store._meta(r, step, prev)
            prev = meta.checkpoint_id
            out.append(meta)
        return out

    async def plan_rewind(self, checkpoint_id_: str, hard: bool = False) -> RewindPlan:
        target = await self.store.get_metadata(checkpoint_id_)
        if target is None:
            raise CheckpointNotFound(checkpoint_id_)
        mid = message_id_of(checkpoint_id_)
        assert mid is not None  # the id of a message get_metadata found
        moved = await self._later(self.store, target.thread_id, mid)
        archive = None
        if moved and not hard:
            archive = await self._fresh_session(self._reader(), f"{target.thread_id}-rewound-at-{target.step}")
        return RewindPlan(target, target.thread_id, moved, archive, hard)

    def _reader(self) -> Any:
        store = self.store

        class _R:
            async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
                return await store.q(sql, *params)

        return _R()

    async def rewind(self, checkpoint_id_: str, hard: bool = False, *,
                     archive_thread: str | None = None) -> TimeTravelResult:
        mid0 = message_id_of(checkpoint_id_)
        if mid0 is None:
            raise CheckpointNotFound(checkpoint_id_)
        if archive_thread is not None and not hard and not _NAME.match(archive_thread):
            raise UsageError(f"invalid archive session id {archive_thread!r} (letters, digits, '.', '_', '-')")
        rows = await self.store.q("SELECT session_id FROM messages WHERE id = ?", mid0)
        if not rows:
            raise CheckpointNotFound(checkpoint_id_)
        sid0 = rows[0]["session_id"]
        result: dict[str, Any] = {}
        async with self._write([sid0] + ([archive_thread] if archive_thread else [])) as tx:
            mid, sid, step = await self._target(tx, checkpoint_id_)
            if sid != sid0:
                raise OperationError(f"checkpoint {checkpoint_id_!r} moved to another session meanwhile; retry")
            if await self._session(tx, sid) is None:
                raise OperationError(f"session {sid!r} of {checkpoint_id_} does not exist; cannot rewind it")
            before = int((await tx.fetch("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", sid))[0]["n"])
            later = [int(r["id"]) for r in await tx.fetch(
                "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id", sid, mid)]
            result.update(sid=sid, before=before, later=later, archive=None, op_id=None)
            if later:
                logs = await self._logs_of(tx, sid, after=mid)
                if hard:
                    op_id = await self._start(
                        tx, "rewind", f"hard rewind {sid} to step {step} ({checkpoint_id_}): deleted "
                        f"{len(later)} message(s)", [sid],
                        {"target": checkpoint_id_, "thread": sid, "hard": True, "count": len(later)})
                    await self._trash(tx, op_id, "sessions", [sid], "before")
                    await self._trash(tx, op_id, "tool_logs", logs)
                    await self._fts_delete(tx, later)
                    await self._trash(tx, op_id, "messages", later)
                    await self._recount(tx, sid)
                    await self._finish(tx, op_id, [sid])
                else:
                    archive = archive_thread or await self._fresh_session(tx, f"{sid}-rewound-at-{step}")
                    if archive == sid or await self._session(tx, archive) is not None:
                        raise UsageError(f"session {archive!r} already exists; choose another archive name")
                    op_id = await self._start(
                        tx, "rewind", f"rewind {sid} to step {step} ({checkpoint_id_}): moved {len(later)} "
                        f"message(s) to {archive}", [sid, archive],
                        {"target": checkpoint_id_, "thread": sid, "hard": False, "archive_thread": archive,
                         "count": len(later)})
                    src = await self._session(tx, sid)
                    assert src is not None  # the session of the target, read in this transaction
                    await self._trash(tx, op_id, "sessions", [sid], "before")
                    await self._copy_session(tx, sid, archive,
                                             f"{src.get('title') or ''} (rewound from {sid} at step {step})")
                    await self._record(tx, op_id, "sessions", [archive], "insert")
                    await self._record(tx, op_id, "messages", later, "move", sid)
                    by_session: dict[str, list[int]] = {}
                    for ph, chunk in in_chunks(logs):
                        for r in await tx.fetch(f"SELECT id, session_id FROM tool_logs WHERE id IN "
                                                f"({ph}) ORDER BY id", *chunk):
                            by_session.setdefault(r["session_id"], []).append(int(r["id"]))
                    for old_sid, ids in by_session.items():
                        await self._record(tx, op_id, "tool_logs", ids, "move", old_sid)
                    for ph, chunk in in_chunks(later):
                        await tx.execute(f"UPDATE messages SET session_id = ? WHERE id IN ({ph})",
                                         archive, *chunk)
                    for ph, chunk in in_chunks(logs):
                        await tx.execute(f"UPDATE tool_logs SET session_id = ? WHERE id IN ({ph})",
                                         archive, *chunk)
                    await tx.execute(
                        f"INSERT INTO {S.BRANCHES} (session_id, kind, name, source_session_id, source_message_id, "
                        "base_step, merged_message_id, into_head, created_at) VALUES (?, 'rewind', NULL, ?, ?, ?, "
                        "NULL, NULL, ?)", archive, sid, mid, step, self._now())
                    await self._record(tx, op_id, S.BRANCHES, [archive], "insert")
                    await self._recount(tx, sid)
                    await self._recount(tx, archive)
                    await self._finish(tx, op_id, [sid, archive])
                    result["archive"] = archive
                result["op_id"] = op_id
        if result["op_id"] is not None:
            self.last_op_id = result["op_id"]
        cp = await self.store.get(checkpoint_id_)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(checkpoint_id_)
        later_ids = [checkpoint_id(i) for i in result["later"]]
        return TimeTravelResult(
            cp, result["sid"], len(later_ids), result["before"], op_id=result["op_id"],
            archive_thread=result["archive"], moved=later_ids if not hard else [],
            deleted=later_ids if hard else [])

    # ---- branch ------------------------------------------------------------------------

    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name or "")
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r}: use 1-64 letters, digits, '.', '_' or '-'")
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
            op_id = await self._start(
                tx, "branch", f"branch {new} from {from_checkpoint_id} (step {step} of {sid})", [new, sid],
                {"from": from_checkpoint_id, "branch_thread": new, "name": name, "step": step})
            await self._copy_session(tx, sid, new, f"{src.get('title') or ''} (branch {name} of {sid} at step {step})")
            await self._record(tx, op_id, "sessions", [new], "insert")
            new_ids = await self._copy_messages(tx, op_id, sid, new, None, mid)
            await tx.execute(
                f"INSERT INTO {S.BRANCHES} (session_id, kind, name, source_session_id, source_message_id, base_step, "
                "merged_message_id, into_head, created_at) VALUES (?, 'branch', ?, ?, ?, ?, ?, ?, ?)",
                new, name, sid, mid, step, new_ids[-1], mid, self._now())
            await self._record(tx, op_id, S.BRANCHES, [new], "insert")
            await self._recount(tx, new)
            await self._finish(tx, op_id, [new])
        self.last_op_id = op_id
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
        if await reader.fetch(*(("SELECT 1 AS x FROM sqlite_master WHERE name = ?", S.BRANCHES) if self.kind == "sqlite"
                                else ("SELECT 1 AS x WHERE to_regclass(?) IS NOT NULL", S.BRANCHES))):
            info = await reader.fetch(f"SELECT * FROM {S.BRANCHES} WHERE session_id = ? AND kind = 'branch'", branch)
        if not info or info[0]["source_session_id"] != into:
            raise UsageError(f"session {branch!r} is not a branch of {into!r} (made by agentctl branch)")
        b = info[0]
        new = [int(r["id"]) for r in await reader.fetch(
            "SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id", branch, b["merged_message_id"])]
        head = (await reader.fetch("SELECT MAX(id) AS h FROM messages WHERE session_id = ?", into))[0]["h"]
        moved = head != b["into_head"]
        return {"info": b, "new": new, "head": head, "moved": moved}

    async def plan_merge(self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail") -> MergePlan:
        from agentctl.merge import Conflict

        await self.store.connect()
        f = await self._merge_facts(self._reader(), branch_thread_id, into_thread_id, strategy)
        ours = await self.store.get_latest(into_thread_id) or Checkpoint(
            CheckpointMetadata(into_thread_id, "", 0), [], {}, {})
        theirs = await self.store.get_latest(branch_thread_id) or Checkpoint(  # (as ours)
            CheckpointMetadata(branch_thread_id, "", 0), [], {}, {})
        base = await self.store.get_metadata(checkpoint_id(f["info"]["into_head"]))
        appended = [m for m in (theirs.messages if theirs else []) if int(m.get("id", 0)) in set(f["new"])]
        conflicts = []
        if f["moved"] and f["new"]:
            conflicts = [Conflict("/messages", checkpoint_id(f["info"]["into_head"]),
                                  checkpoint_id(f["head"]) if f["head"] is not None else None,
                                  [checkpoint_id(i) for i in f["new"]])]
        resolved: list[Any] = []
        if conflicts and strategy in ("ours", "theirs"):
            resolved, conflicts = conflicts, []
        take = not (strategy == "ours" and resolved)
        merged_msgs = list(ours.messages) + (appended if take else [])
        merged = Checkpoint(
            CheckpointMetadata(into_thread_id, "(new)", len(merged_msgs), ours.metadata.checkpoint_id or None,
                               now_text(self.store._clock), ["merge", f"branch:{branch_thread_id}"],
                               f"Merge {branch_thread_id} into {into_thread_id}"),
            merged_msgs, ours.state, ours.tools_result)
        return MergePlan(base, ours, theirs, merged, conflicts, strategy, branch_thread_id, into_thread_id,
                         resolved, up_to_date=not f["new"] or not take)

    async def merge_branch(self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail",
                           *, checkpoint_id: str | None = None) -> str:
        """Append the branch's new messages to the target. (`checkpoint_id` is ignored:
        the appended messages get their ids from the messages table.)"""
        branch, into = branch_thread_id, into_thread_id
        async with self._write([into, branch]) as tx:
            f = await self._merge_facts(tx, branch, into, strategy)
            if not f["new"]:
                raise OperationError(f"nothing to merge: {branch} has no messages after its fork point "
                                     f"(or its last merge) into {into}; nothing was written")
            if f["moved"]:
                if strategy in ("fail", "three-way"):
                    from agentctl.merge import Conflict

                    conflict = Conflict("/messages", _message_checkpoint_id(f["info"]["into_head"]),
                                        _message_checkpoint_id(f["head"]) if f["head"] is not None else None,
                                        [_message_checkpoint_id(i) for i in f["new"]])
                    raise MergeConflictError(
                        [conflict], f"merging {branch} into {into} conflicts: {into} has changed since the fork "
                        f"(head {_message_checkpoint_id(f['head']) if f['head'] is not None else 'none'}, forked at "
                        f"{_message_checkpoint_id(f['info']['into_head'])}); nothing was written; use strategy 'theirs' "
                        "to append the branch's messages anyway")
                if strategy == "ours":
                    raise OperationError(f"strategy 'ours' keeps {into} as it is (it changed since the fork); "
                                         "nothing was written")
            info = f["info"]
            op_id = await self._start(
                tx, "merge", f"merge {branch} into {into}: appended {len(f['new'])} message(s)", [into, branch],
                {"branch_thread": branch, "into": into, "strategy": strategy, "count": len(f["new"]),
                 "old_merged_message_id": info["merged_message_id"], "old_into_head": info["into_head"]})
            await self._trash(tx, op_id, "sessions", [into], "before")
            new_ids = await self._copy_messages(tx, op_id, branch, into, info["merged_message_id"], None)
            await tx.execute(f"UPDATE {S.BRANCHES} SET merged_message_id = ?, into_head = ? WHERE session_id = ?",
                             f["new"][-1], new_ids[-1], branch)
            await self._recount(tx, into)
            await self._finish(tx, op_id, [into])
        self.last_op_id = op_id
        return _message_checkpoint_id(new_ids[-1])

    # ---- edit (see edit.py) -------------------------------------------------------------

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        """What `agentctl edit REF --set KEY=JSON` changes: REF's message and its session's fields."""
        from agentctl.storage.article.edit import edit_view

        return edit_view(cp)

    @staticmethod
    def edit_check(old: dict[str, Any], new: dict[str, Any]) -> None:
        """UsageError when the edited view is nothing the article's tables could hold."""
        from agentctl.storage.article.edit import edit_check

        edit_check(old, new)

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "change message {ref} / session {thread} in place"

    async def edit_state(self, checkpoint_id_: str, state: dict[str, Any], what: str) -> OpResult:
        """The message REF and its session row changed in place to the edited view `state`;
        one op, undone column for column."""
        from agentctl.storage.article.edit import edit_state

        return await edit_state(self, checkpoint_id_, state, what)

    # ---- prune and delete --------------------------------------------------------------

    async def _select_sessions(self, reader: Any, spec: PruneSpec) -> list[str]:
        if spec.milestones is not None:
            raise Unsupported("article", "prune --milestones (sessions are pruned whole)")
        if spec.keep_last is None and spec.older_than is None and not spec.statuses:
            raise UsageError("give at least one of --keep-last N (sessions per user), --older-than AGE, --status")
        if spec.keep_last is not None and spec.threads is not None:
            raise UsageError("the article store prunes whole sessions: --keep-last N keeps each user's newest N "
                             "sessions, so it takes no SESSION (to drop a session's later messages: rewind --hard)")
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
            conds.append("s.id NOT IN (SELECT r.id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id "
                         f"ORDER BY {t('updated_at')} DESC, id{self.store.C} DESC) AS rn FROM sessions) r "
                         "WHERE r.rn <= ?)")
            params.append(int(spec.keep_last))
        if spec.threads is not None:
            if not spec.threads:
                return []
            conds.append(f"s.id IN ({marks(len(spec.threads))})")
            params += list(spec.threads)
        rows = await reader.fetch(f"SELECT s.id FROM sessions s WHERE {' AND '.join(conds)} "
                                  f"ORDER BY s.id{self.store.C}", *params)
        return [r["id"] for r in rows]

    @staticmethod
    def _policy(spec: PruneSpec) -> tuple[CheckpointGC, float]:
        if spec.keep_last is not None:
            return CheckpointGC.KEEP_LAST_N, float(spec.keep_last)
        if spec.older_than is not None:
            return CheckpointGC.KEEP_AGE, float(spec.older_than)
        return CheckpointGC.KEEP_LAST_N, 0.0

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
        sessions = await self._select_sessions(self._reader(), spec)
        policy, param = self._policy(spec)
        out = []
        for sid in sessions:
            n = await self.store.count(sid)
            metas = await self.store.read_thread(sid, n if preview is None else max(0, int(preview)), 0)
            out.append(PrunePlan(sid, policy, param, metas, 0, n, reason=self._reason(spec)))
        return out

    async def _delete_sessions(self, tx: Transaction, op_id: int, sessions: Sequence[str]) -> list[str]:
        deleted: list[str] = []
        for sid in sessions:
            mids = [int(r["id"]) for r in await tx.fetch(
                "SELECT id FROM messages WHERE session_id = ? ORDER BY id", sid)]
            if await self._has(tx, "tool_logs"):
                logs = [int(r["id"]) for r in await tx.fetch(
                    "SELECT id FROM tool_logs WHERE session_id = ? OR message_id IN "
                    "(SELECT id FROM messages WHERE session_id = ?) ORDER BY id", sid, sid)]
                await self._trash(tx, op_id, "tool_logs", logs)
            await self._fts_delete(tx, mids)
            await self._trash(tx, op_id, "messages", mids)
            if await self._has(tx, "tasks"):
                tasks = [r["id"] for r in await tx.fetch("SELECT id FROM tasks WHERE session_id = ?", sid)]
                await self._trash(tx, op_id, "tasks", tasks)
            await self._trash(tx, op_id, "sessions", [sid])
            deleted += [checkpoint_id(m) for m in mids]
        return deleted

    async def prune_spec(self, spec: PruneSpec, *, progress: Any = None, plans: Any = None) -> list[OpResult]:
        await self.store.connect()
        threads = spec.threads or []
        async with self._write(list(threads)) as tx:
            sessions = await self._select_sessions(tx, spec)
            if not sessions:
                return [OpResult(None, "prune", "nothing to prune: no session matches")]
            policy, param = self._policy(spec)
            details = {"sessions": sessions, "keep_last": spec.keep_last, "older_than": spec.older_than,
                       "statuses": spec.statuses, "threads": spec.threads}
            op_id = await self._start(tx, "prune", "prune", sessions, details)
            deleted = await self._delete_sessions(tx, op_id, sessions)
            summary = (f"prune {len(sessions)} session(s) ({', '.join(sessions[:5])}"
                       f"{', …' if len(sessions) > 5 else ''}): deleted {len(deleted)} message(s)")
            await self._set_summary(tx, op_id, summary, details)
            await self._finish(tx, op_id, sessions)
        self.last_op_id = op_id
        return [OpResult(op_id, "prune", summary, deleted=deleted)]

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        await self.store.connect()
        if await self._session(self._reader(), thread_id) is None:
            raise ThreadNotFound(thread_id)
        n = int((await self.store.q("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?",
                                    thread_id))[0]["n"])
        branches = await self.store.branches_of([thread_id])
        return DeletePlan(thread_id, n, [], list(dict.fromkeys(b.thread_id for b in branches)))

    async def delete_thread(self, thread_id: str) -> OpResult:
        async with self._write([thread_id]) as tx:
            if await self._session(tx, thread_id) is None:
                raise ThreadNotFound(thread_id)
            op_id = await self._start(tx, "delete_thread", f"delete session {thread_id}", [thread_id],
                                      {"thread": thread_id})
            deleted = await self._delete_sessions(tx, op_id, [thread_id])
            summary = f"delete session {thread_id} ({len(deleted)} message(s))"
            await self._set_summary(tx, op_id, summary, {"thread": thread_id, "count": len(deleted)})
            await self._finish(tx, op_id, [thread_id])
        self.last_op_id = op_id
        return OpResult(op_id, "delete_thread", summary, deleted=deleted)

    # ---- oplog, undo, purge ------------------------------------------------------------

    async def _trash_tables(self, reader: Any) -> list[str]:
        return [t for t in S.DATA_TABLES if await reader.table_exists(S.trash_name(t))]

    def _op_record(self, r: dict[str, Any], purgeable: int) -> OpRecord:
        def parse(text: Any, default: Any) -> Any:
            try:
                v = json.loads(text)
            except (TypeError, ValueError):
                return default
            return v if isinstance(v, type(default)) else default

        return OpRecord(op_id=int(r["op_id"]), created_at=r["created_at"], kind=r["kind"], summary=r["summary"],
                        threads=[str(x) for x in parse(r["threads"], [])], undone=r["undone_by"] is not None,
                        undo_of=int(r["undo_of"]) if r["undo_of"] is not None else None,
                        purgeable_rows=purgeable,
                        undone_by=int(r["undone_by"]) if r["undone_by"] is not None else None,
                        purged=bool(r["purged"]), details=parse(r["details"], {}))

    async def _purgeable(self, reader: Any, op_id: int) -> int:
        n = 0
        for t in await self._trash_tables(reader):
            rows = await reader.query(f"SELECT COUNT(*) AS n FROM {S.trash_name(t)} WHERE agentctl_op_id = ? "
                                      "AND agentctl_action = 'deleted'", op_id)
            n += int(rows[0]["n"])
        return n

    async def oplog(self, limit: int = 50) -> list[OpRecord]:
        await self.store.connect()
        if not await self.db.table_exists(S.OPLOG):
            return []
        rows = await self.db.query(f"SELECT * FROM {S.OPLOG} ORDER BY op_id DESC LIMIT ?", int(limit))
        return [self._op_record(r, await self._purgeable(self.db, int(r["op_id"]))) for r in rows]

    async def _get_op(self, reader: Any, op_id: int) -> OpRecord | None:
        rows = await reader.fetch(f"SELECT * FROM {S.OPLOG} WHERE op_id = ?", op_id) if hasattr(reader, "fetch") \
            else await reader.query(f"SELECT * FROM {S.OPLOG} WHERE op_id = ?", op_id)
        return self._op_record(rows[0], 0) if rows else None

    async def undo(self, op_id: int | None = None, threads: Sequence[str] | None = None) -> OpResult:
        whole_undo_only("the article's store", threads)
        await self.store.connect()
        if not await self.db.table_exists(S.OPLOG):
            raise OperationError("nothing to undo: no operation recorded")
        if op_id is None:
            rows = await self.db.query(f"SELECT op_id FROM {S.OPLOG} WHERE undone_by IS NULL AND kind NOT IN "
                                       "('undo', 'purge') ORDER BY op_id DESC LIMIT 1")
            if not rows:
                raise OperationError("nothing to undo: no operation recorded that is not undone")
            op_id = int(rows[0]["op_id"])
        op_id = int(op_id)
        pre = await self.db.query(f"SELECT threads FROM {S.OPLOG} WHERE op_id = ?", op_id)
        if not pre:
            raise NotFoundError(f"operation {op_id} not found")
        async with self._write(json.loads(pre[0]["threads"] or "[]")) as tx:
            op = await self._get_op(tx, op_id)
            assert op is not None
            await self._check_undo(tx, op)
            summary = f"undid operation {op_id} ({op.summary})"
            undo_id = await self._start(tx, "undo", summary, op.threads, {"undo_of": op_id, "kind": op.kind},
                                        undo_of=op_id)
            restored, removed, moved = await self._revert(tx, op)
            await tx.execute(f"UPDATE {S.OPLOG} SET undone_by = ? WHERE op_id = ?", undo_id, op_id)
        self.last_op_id = undo_id
        return OpResult(undo_id, "undo", summary, created=restored, deleted=removed, moved=moved)

    async def _check_undo(self, tx: Transaction, op: OpRecord) -> None:
        if op.undone:
            raise OperationError(f"operation {op.op_id} ({op.kind}) was already undone by operation {op.undone_by}")
        if op.kind in ("undo", "purge"):
            raise OperationError(f"operation {op.op_id} is {'an' if op.kind == 'undo' else 'a'} {op.kind}; "
                                 "it cannot be undone")
        if op.purged:
            raise OperationError(f"operation {op.op_id} ({op.kind}) cannot be undone: its trash was purged")
        changed = []
        for r in await tx.fetch(f"SELECT session_id, fingerprint FROM {S.AFTER} WHERE op_id = ? ORDER BY session_id",
                                op.op_id):
            if await self._fingerprint(tx, r["session_id"]) != r["fingerprint"]:
                changed.append(r["session_id"])
        if changed:
            later = await tx.fetch(
                f"SELECT DISTINCT o.op_id FROM {S.OPLOG} o JOIN {S.AFTER} f ON f.op_id = o.op_id WHERE o.op_id > ? "
                f"AND o.undone_by IS NULL AND o.kind NOT IN ('undo', 'purge') AND f.session_id IN "
                f"({marks(len(changed))}) ORDER BY o.op_id DESC", op.op_id, *changed)
            hint = (f"; undo operation(s) {', '.join(str(r['op_id']) for r in later)} first" if later
                    else "; it was written to since")
            raise OperationError(f"cannot undo operation {op.op_id} ({op.kind}): session(s) "
                                 f"{', '.join(changed[:5])} changed after it{hint}")
        if op.kind == "edit" and op.details.get("after") is not None:
            from agentctl.storage.article.edit import message_image

            if await message_image(tx, int(op.details["message_id"])) != op.details["after"]:
                raise OperationError(f"cannot undo operation {op.op_id} (edit): message {op.details.get('ref')} "
                                     "changed after it (another write); nothing was changed")
        for t in await self._trash_tables(tx):
            taken = await tx.fetch(
                f"SELECT t.id FROM {S.trash_name(t)} t WHERE t.agentctl_op_id = ? AND t.agentctl_action = 'deleted' "
                f"AND EXISTS (SELECT 1 FROM {t} x WHERE x.id = t.id) LIMIT 5", op.op_id)
            if taken:
                raise OperationError(f"cannot undo operation {op.op_id} ({op.kind}): {t} id(s) "
                                     f"{', '.join(str(r['id']) for r in taken)} exist again; delete them first")

    async def _revert(self, tx: Transaction, op: OpRecord) -> tuple[list[str], list[str], list[str]]:
        oid = op.op_id
        rows = await tx.fetch(f"SELECT tbl, row_key, row_num, action, old_session_id FROM {S.ROWS} WHERE op_id = ?",
                              oid)
        moved_ids: list[str] = []
        # 1. moved rows go back to their session
        for table in ("messages", "tool_logs"):
            by_old: dict[str, list[int]] = {}
            for r in rows:
                if r["tbl"] == table and r["action"] == "move":
                    by_old.setdefault(r["old_session_id"], []).append(int(r["row_num"]))
            for old, ids in by_old.items():
                for ph, chunk in in_chunks(ids):
                    await tx.execute(f"UPDATE {table} SET session_id = ? WHERE id IN ({ph})",
                                     old, *chunk)
                if table == "messages":
                    moved_ids += [checkpoint_id(i) for i in ids]
        # 2. inserted rows go (children first)
        inserted: dict[str, list[Any]] = {}
        for r in rows:
            if r["action"] == "insert":
                inserted.setdefault(r["tbl"], []).append(r["row_num"] if r["row_num"] is not None else r["row_key"])
        removed = [checkpoint_id(i) for i in inserted.get("messages", [])]
        await self._fts_delete(tx, [int(i) for i in inserted.get("messages", [])])
        for table in ("tool_logs", "messages", "tasks", S.BRANCHES, "sessions"):
            key = "session_id" if table == S.BRANCHES else "id"
            for ph, chunk in in_chunks(inserted.get(table, [])):
                await tx.execute(f"DELETE FROM {table} WHERE {key} IN ({ph})", *chunk)
        # 3. session (and an edit's message) rows the op updated get their old values;
        #    deleted rows come back
        restored: list[str] = []
        trash = await self._trash_tables(tx)
        for table in ("sessions", "messages"):
            if table not in trash:
                continue
            cols = [c for c in await self._columns(tx, table) if c != "id"]
            tn = S.trash_name(table)
            edited = [] if table == "sessions" else [int(r["id"]) for r in await tx.fetch(
                f"SELECT id FROM {tn} WHERE agentctl_op_id = ? AND agentctl_action = 'before'", oid)]
            await self._fts_delete(tx, edited)  # the edited content's entries
            await tx.execute(
                f"UPDATE {table} SET ({', '.join(cols)}) = (SELECT {', '.join('t.' + c for c in cols)} FROM {tn} t "
                f"WHERE t.agentctl_op_id = ? AND t.agentctl_action = 'before' AND t.id = {table}.id) "
                f"WHERE id IN (SELECT id FROM {tn} WHERE agentctl_op_id = ? AND agentctl_action = 'before')",
                oid, oid)
            await self._fts_insert(tx, edited)
        for table in ("sessions", "messages", "tool_logs", "tasks"):
            if table not in trash:
                continue
            tn = S.trash_name(table)
            column_list = ", ".join(await self._columns(tx, table))
            if table == "messages":
                restored = [checkpoint_id(r["id"]) for r in await tx.fetch(
                    f"SELECT id FROM {tn} WHERE agentctl_op_id = ? AND agentctl_action = 'deleted' ORDER BY id", oid)]
            await tx.execute(f"INSERT INTO {table} ({column_list}) SELECT {column_list} FROM {tn} WHERE agentctl_op_id = ? "
                             "AND agentctl_action = 'deleted' ORDER BY id", oid)
            await tx.execute(f"DELETE FROM {tn} WHERE agentctl_op_id = ?", oid)
        await self._fts_insert(tx, [m for c in restored if (m := message_id_of(c)) is not None])  # ids made above
        # 4. a merge's branch record gets its old fork point back
        if op.kind == "merge":
            d = op.details
            await tx.execute(f"UPDATE {S.BRANCHES} SET merged_message_id = ?, into_head = ? WHERE session_id = ?",
                             d.get("old_merged_message_id"), d.get("old_into_head"), d.get("branch_thread"))
        return restored, removed, moved_ids

    async def _deleted_counts(self, reader: Any, trash: Sequence[str]) -> dict[int, int]:
        """{op_id: rows} of the ops whose trash holds deleted rows (a session row kept as
        it was 'before' an update is no deleted data: a soft rewind or a merge stays
        undoable after a purge)."""
        counts: dict[int, int] = {}
        for t in trash:
            for r in await reader.query(f"SELECT agentctl_op_id AS op, COUNT(*) AS n FROM {S.trash_name(t)} "
                                        "WHERE agentctl_action = 'deleted' GROUP BY agentctl_op_id"):
                counts[int(r["op"])] = counts.get(int(r["op"]), 0) + int(r["n"])
        return counts

    async def purge(self, dry_run: bool = False) -> PurgeResult:
        await self.store.connect()
        trash = await self._trash_tables(self.db)
        counts = await self._deleted_counts(self.db, trash)
        if dry_run or not counts:
            return PurgeResult(sorted(counts), sum(counts.values()), dry_run)
        async with self._write([]) as tx:
            counts = await self._deleted_counts(tx, trash)
            ops, rows = sorted(counts), sum(counts.values())
            for ph, chunk in in_chunks(ops):
                for t in trash:
                    await tx.execute(f"DELETE FROM {S.trash_name(t)} WHERE agentctl_op_id IN "
                                     f"({ph})", *chunk)
                await tx.execute(f"UPDATE {S.OPLOG} SET purged = 1 WHERE op_id IN ({ph})", *chunk)
            op_id = await self._start(tx, "purge", f"purge the trash of {len(ops)} operation(s): {rows} row(s)",
                                      [], {"ops": ops, "rows": rows})
        self.last_op_id = op_id
        try:  # SQLite: the whole file; Postgres: the trash tables
            await self.db.vacuum([S.trash_name(t) for t in trash])
            vacuumed = True
        except AgentctlError:  # the purge is done; only the compaction waits (busy)
            vacuumed = False
        return PurgeResult(ops, rows, False, vacuumed=vacuumed, op_id=op_id)
