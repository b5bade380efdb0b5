"""The read side of the article's session store (`ArticleStore`), on SQLite and Postgres.

Mapping onto agentctl's model:

- a session is a thread: `thread_id` = `sessions.id`;
- its messages in `messages.id` order are its steps: step N is the N-th message (from 1);
- checkpoint ids are `msg-<messages.id>` (stable while the message exists; a message
  moved to another session by a rewind keeps its id);
- checkpoint N holds the transcript up to and including message N (role, content,
  tool_calls decoded from `tool_calls_json` — the raw text when it is not JSON, with
  `tool_calls_error` —, tool_call_id, id, token_count, created_at);
  `state` = {"session": the session row with `metadata` decoded from metadata_json,
  "user": {id, name, quota_total, quota_used} or None, "tasks": the session's tasks};
  `tools_result` = {"<tool_name>#<tool_logs.id>": the log row (input/output decoded)}
  for the tool_logs linked to that message (`message_id`) and the unlinked ones
  (`message_id` NULL) attributed to it. Attribution rule for an unlinked log: the last
  message of its session (highest id) whose created_at <= the log's created_at; the
  session's first message when none is that old;
- metadata: parent = the previous message's checkpoint (the first message of a branch
  session made by `branch` points at the source message it was forked from; see
  history.py), created_at = messages.created_at, tags = ["tool_call"] (a message with
  tool calls) or ["tool_result"] (a tool message) or none, summary = "[role] " + the first 80 characters of the content
  on one line.

`thread_summaries` returns `SessionSummary` (a ThreadSummary with the session's own
fields). `search` uses messages_fts when it exists and is in step with messages (see
`fts_state`), else a scan; `last_search_path` says which ran ("fts" or "scan").
No rich/textual imports here: the CLI and the TUI reach this through the contract.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from agentctl import deep
from agentctl.errors import (
    CorruptRowError,
    SchemaError,
    UsageError,
)
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.article import FORMAT, REQUIRED
from agentctl.storage.article import schema as S
from agentctl.storage.contract import (
    SEARCH_PLACES,
    Capability,
    Problem,
    Store,
    check_search_places,
    local_file_of,
)
from agentctl.storage.search import message_hit_path, snippet_around
from agentctl.storage.sqlutil import in_chunks, marks

CID_PREFIX = "msg-"
_CID = re.compile(r"^msg-([0-9]{1,18})$")
SORTS = ("updated", "thread", "checkpoints", "step", "created")


def checkpoint_id(message_id: int) -> str:
    return f"{CID_PREFIX}{int(message_id)}"


def message_id_of(cid: str) -> int | None:
    m = _CID.match(cid or "")
    return int(m.group(1)) if m else None


def one_line(text: Any, width: int = 80) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def now_text(clock: Any = None) -> str:
    """The article's time format (`datetime('now')`: UTC, seconds)."""
    dt = clock() if clock else datetime.now(timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def decode_json(raw: Any) -> tuple[Any, str | None]:
    """(value, None) or (the raw text, the error)."""
    if raw is None:
        return None, None
    if not isinstance(raw, (str, bytes)):
        return raw, None
    try:
        return deep.loads(raw), None
    except ValueError as exc:
        return raw, f"not JSON ({exc})"


def _put_json(out: dict[str, Any], key: str, raw: Any) -> None:
    """out[key]: `raw` decoded (its text when it is not JSON, the error in out[key + "_error"])."""
    out[key], err = decode_json(raw)
    if err:
        out[key + "_error"] = err


def indexes_messages(sql: str | None) -> bool:
    """Whether messages_fts's CREATE statement makes it an external-content index of messages."""
    low = re.sub(r"\s+", "", (sql or "").lower())
    return "content='messages'" in low or 'content="messages"' in low


@dataclass
class SessionSummary(ThreadSummary):
    """A thread summary with the article's session fields."""

    user_id: str | None = None
    user_name: str | None = None
    title: str | None = None
    status: str | None = None
    model: str | None = None
    message_count: int | None = None
    total_tokens: int | None = None
    total_cost: float | None = None

    def extra_columns(self) -> list[tuple[str, Any]]:
        return [
            ("USER", self.user_name or self.user_id or ""),
            ("TITLE", self.title or ""),
            ("STATUS", self.status or ""),
            ("MODEL", self.model or ""),
            ("TOKENS", self.total_tokens if self.total_tokens is not None else ""),
            ("COST", self.total_cost if self.total_cost is not None else ""),
        ]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(
            user_id=self.user_id,
            user_name=self.user_name,
            title=self.title,
            status=self.status,
            model=self.model,
            message_count=self.message_count,
            total_tokens=self.total_tokens,
            total_cost=self.total_cost,
        )
        return d


# ---- connections: the existing backends, with the article's schema check -------------------


def _check_tables(where: str, tables: dict[str, set[str]]) -> None:
    for table, cols in REQUIRED.items():
        if table not in tables:
            shown = ", ".join(sorted(t for t in tables if not t.startswith("sqlite_"))[:8])
            raise SchemaError(
                f"{where} has no '{table}' table, not an article session store"
                + (f" (it has: {shown})" if shown else " (it has no tables)")
            )
        missing = [c for c in cols if c not in tables[table]]
        if missing:
            raise SchemaError(f"{where}: the '{table}' table lacks column(s): {', '.join(missing)}")


class ArticleStore(Store):
    """The article's store on one database (see the module doc)."""

    thread_filters = ("user", "status")

    def __init__(self, kind: str, target: str, *, readonly: bool = True, clock: Any = None, **kwargs: Any):
        self.format = FORMAT
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._readonly = readonly
        self._clock = clock
        # the shared layer's connection (the driver imported when a database of its kind opens)
        if kind == "postgres":
            from agentctl.storage.sql.postgres import PostgresConnection as Conn
        else:
            from agentctl.storage.sql.sqlite import SQLiteConnection as Conn  # type: ignore[assignment]
        self.db: Any = Conn(target, readonly=readonly, create=False, check=self._check, **kwargs)
        self.display_name = self.db.display_name
        #: Postgres: the data type of each (table, column), read when it connects
        self.column_types: dict[tuple[str, str], str] = {}
        #: which path the last `search` took: "fts" or "scan"
        self.last_search_path = ""  # (the contract's type: a str, empty before a search)
        self._tables: dict[str, set[str]] | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    @property
    def connection(self) -> Any:
        """The store's connection (agentctl.storage.sql): what its History writes through."""
        return self.db

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        _check_tables(
            f"Postgres database {self.display_name}" if self.kind == "postgres" else self.display_name,
            dict(tables),
        )
        self._tables = dict(tables)

    async def connect(self) -> None:
        await self.db.connect()
        if self.kind == "postgres" and not self.column_types:
            self.column_types = {
                (r["table_name"], r["column_name"]): r["data_type"]
                for r in await self.db.query(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = ANY(current_schemas(false))"
                )
            }

    async def close(self) -> None:
        await self.db.close()

    async def q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        return await self.db.query(sql, *params)

    fetch = q  # (a transaction's name: the store reads where a write's checks read)

    async def has(self, table: str) -> bool:
        await self.connect()
        assert self._tables is not None
        return table in self._tables

    async def _reload_tables(self) -> None:
        if self.kind == "sqlite":
            rows = await self.db.query(
                "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p "
                "WHERE m.type = 'table'"
            )
        else:
            from agentctl.storage.schema import PG_COLUMNS_SQL

            rows = await self.db.query(f"SELECT table_name AS t, column_name AS c FROM ({PG_COLUMNS_SQL}) q")
        tables: dict[str, set[str]] = {}
        for r in rows:
            tables.setdefault(r["t"], set()).add(r["c"])
        self._tables = tables

    async def tables(self) -> dict[str, set[str]]:
        await self.connect()
        await self._reload_tables()
        assert self._tables is not None
        return self._tables

    # ---- dialect helpers -------------------------------------------------------------------

    @property
    def C(self) -> str:  # byte order for text on Postgres, as SQLite compares
        return ' COLLATE "C"' if self.kind == "postgres" else ""

    def t(self, expr: str) -> str:
        """A column as text (times and JSON may be TIMESTAMPTZ / JSONB on Postgres)."""
        return f"CAST({expr} AS TEXT)" if self.kind == "postgres" else expr

    def contains(self, expr: str) -> str:
        """A condition: `expr` contains the parameter (already lower-cased), case-insensitively."""
        if self.kind == "postgres":
            return f"strpos(lower(CAST({expr} AS TEXT)), ?) > 0"
        return f"instr(lower({expr}), ?) > 0"

    # ---- rows to model ---------------------------------------------------------------------

    _MSG_COLS = "m.id, m.session_id, m.role, m.content, m.tool_calls_json, m.tool_call_id, m.token_count"

    def _msg_cols(self) -> str:
        return self._MSG_COLS + f", {self.t('m.created_at')} AS created_at"

    @staticmethod
    def _message(row: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = {"id": row["id"], "role": row["role"], "content": row["content"]}
        if row.get("tool_calls_json") is not None:
            _put_json(msg, "tool_calls", row["tool_calls_json"])
        if row.get("tool_call_id") is not None:
            msg["tool_call_id"] = row["tool_call_id"]
        msg["token_count"] = row.get("token_count")
        msg["created_at"] = row.get("created_at")
        return msg

    @staticmethod
    def _tags(row: dict[str, Any]) -> list[str]:
        # The role is in the summary ("[assistant] ..."); tags mark what a step did.
        raw = row.get("tool_calls_json")
        if raw is not None and str(raw).strip() not in ("", "null", "[]"):
            return ["tool_call"]
        return ["tool_result"] if row["role"] == "tool" else []

    def _meta(self, row: dict[str, Any], step: int, parent: str | None) -> CheckpointMetadata:
        return CheckpointMetadata(
            thread_id=row["session_id"],
            checkpoint_id=checkpoint_id(row["id"]),
            step=step,
            parent_checkpoint_id=parent,
            created_at=str(row.get("created_at") or ""),
            tags=self._tags(row),
            summary=f"[{row['role']}] {one_line(row['content'])}",
        )

    async def _fork_parent(self, session_id: str) -> str | None:
        """The checkpoint a branch session's first message points at (None: not a branch)."""
        if not await self.has(S.BRANCHES):
            return None
        rows = await self.q(f"SELECT source_message_id FROM {S.BRANCHES} WHERE session_id = ?", session_id)
        return checkpoint_id(rows[0]["source_message_id"]) if rows else None

    async def _steps_of(self, message_ids: list[int], with_session: bool = False) -> dict[int, Any]:
        """{message id: its step} (or (session, step)) of existing messages, in one query."""
        out: dict[int, Any] = {}
        ids = sorted(set(message_ids))
        for ph, chunk in in_chunks(ids):
            for r in await self.q(
                "SELECT m.id, m.session_id, (SELECT COUNT(*) FROM messages x WHERE "
                f"x.session_id = m.session_id AND x.id <= m.id) AS step FROM messages m WHERE m.id IN ({ph})",
                *chunk,
            ):
                out[int(r["id"])] = (r["session_id"], int(r["step"])) if with_session else int(r["step"])
        return out

    # ---- threads ---------------------------------------------------------------------------

    def _summary_sql(self, where: str, order: str) -> str:
        """One row per session of `where`; `order` (with LIMIT) picks the page in a
        subquery first, so the counts and heads are computed for the page only."""
        page = f"SELECT s.id AS pid, ROW_NUMBER() OVER ({order.split(' LIMIT')[0]}) AS rn FROM sessions s {where}"
        if " LIMIT" in order:
            page = f"SELECT pid, rn FROM ({page}) q ORDER BY rn LIMIT ? OFFSET ?"
        return (
            "SELECT s.id AS sid, s.user_id, s.title, s.status, s.model, s.message_count, "
            f"s.total_tokens, s.total_cost, {self.t('s.created_at')} AS s_created, "
            f"{self.t('s.updated_at')} AS s_updated, "
            "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n, "
            "(SELECT MAX(id) FROM messages m WHERE m.session_id = s.id) AS head_id, "
            "(SELECT MIN(id) FROM messages m WHERE m.session_id = s.id) AS first_id"
            f" FROM ({page}) p JOIN sessions s ON s.id = p.pid ORDER BY p.rn"
        )

    async def _filters(
        self, prefix: str | None, user: str | None, status: Any, thread: str | None = None
    ) -> tuple[str, list[Any]]:
        conds: list[str] = []
        params: list[Any] = []
        if thread is not None:
            conds.append("s.id = ?")
            params.append(thread)
        if prefix:
            if self.kind == "sqlite":  # a range of the primary key (byte order)
                conds.append("s.id >= ? AND s.id < ?")
                params += [prefix, prefix + "\U0010ffff"]
            else:
                conds.append("left(s.id, ?) = ?")
                params += [len(prefix), prefix]
        if user:
            if await self.has("users"):
                conds.append("(s.user_id = ? OR s.user_id IN (SELECT id FROM users WHERE name = ?))")
                params += [user, user]
            else:
                conds.append("s.user_id = ?")
                params.append(user)
        if status:
            statuses = [status] if isinstance(status, str) else list(status)
            statuses = [x for s_ in statuses for x in str(s_).split(",") if x.strip()]
            conds.append(f"s.status IN ({marks(len(statuses))})")
            params += [x.strip() for x in statuses]
        return ("WHERE " + " AND ".join(conds)) if conds else "", params

    async def _by_key(self, sql: str, keys: Sequence[Any], key: str = "id") -> dict[Any, dict[str, Any]]:
        """{row[key]: row} of `sql` (`{}`: the placeholders of `keys`), 400 keys a query."""
        return {r[key]: r for ph, chunk in in_chunks(keys, 400) for r in await self.q(sql.format(ph), *chunk)}

    async def _summaries(self, rows: list[dict[str, Any]]) -> list[ThreadSummary]:
        if not rows:
            return []
        head_rows = await self._by_key(
            f"SELECT {self._msg_cols()} FROM messages m WHERE m.id IN ({{}})",
            [r["head_id"] for r in rows if r["head_id"] is not None],
        )
        first_rows = await self._by_key(
            f"SELECT id, {self.t('created_at')} AS created_at FROM messages WHERE id IN ({{}})",
            [r["first_id"] for r in rows if r["first_id"] is not None],
        )
        uids = sorted({r["user_id"] for r in rows if r["user_id"] is not None})
        users = (
            await self._by_key("SELECT id, name FROM users WHERE id IN ({})", uids)
            if uids and await self.has("users")
            else {}
        )
        branches = (
            await self._by_key(
                f"SELECT * FROM {S.BRANCHES} WHERE session_id IN ({{}})",
                [r["sid"] for r in rows],
                "session_id",
            )
            if await self.has(S.BRANCHES)
            else {}
        )
        out: list[ThreadSummary] = []
        for r in rows:
            head = head_rows.get(int(r["head_id"])) if r["head_id"] is not None else None
            branch = branches.get(r["sid"])
            out.append(
                SessionSummary(
                    thread_id=r["sid"],
                    checkpoints=int(r["n"] or 0),
                    head_step=int(r["n"] or 0),
                    head_checkpoint_id=checkpoint_id(head["id"]) if head else "",
                    updated_at=str(r["s_updated"] or ""),
                    head_summary=f"[{head['role']}] {one_line(head['content'])}" if head else "",
                    first_created_at=str(
                        first_rows.get(int(r["first_id"]), {}).get("created_at", "")
                        if r["first_id"] is not None
                        else (r["s_created"] or "")
                    ),
                    branch_of=branch["source_session_id"] if branch else None,
                    branch_point=checkpoint_id(branch["source_message_id"]) if branch else None,
                    user_id=r["user_id"],
                    user_name=users.get(r["user_id"], {}).get("name"),
                    title=r["title"],
                    status=r["status"],
                    model=r["model"],
                    message_count=r["message_count"],
                    total_tokens=r["total_tokens"],
                    total_cost=r["total_cost"],
                )
            )
        return out

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
        *,
        user: str | None = None,
        status: Any = None,
    ) -> list[ThreadSummary]:
        if sort not in SORTS:
            raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(SORTS)}")
        where, params = await self._filters(prefix, user, status)
        d = "DESC" if descending else "ASC"
        key = {
            "updated": f"{self.t('s.updated_at')} {d}",
            "created": f"{self.t('s.created_at')} {d}",
            "thread": f"s.id{self.C} {d}",
            "checkpoints": f"(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) {d}",
            "step": f"(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) {d}",
        }[sort]
        tie = "" if sort == "thread" else f", s.id{self.C} ASC"
        rows = await self.q(
            self._summary_sql(where, f"ORDER BY {key}{tie} LIMIT ? OFFSET ?"),
            *params,
            int(limit),
            int(offset),
        )
        return await self._summaries(rows)

    async def count_threads(
        self, prefix: str | None = None, *, user: str | None = None, status: Any = None
    ) -> int:
        where, params = await self._filters(prefix, user, status)
        rows = await self.q(f"SELECT COUNT(*) AS n FROM sessions s {where}", *params)
        return int(rows[0]["n"])

    async def filter_values(self, name: str) -> list[str]:
        """ "status": the sessions' statuses; "user": their users' ids and names."""
        if name == "status":
            rows = await self.q("SELECT DISTINCT status AS v FROM sessions WHERE status IS NOT NULL")
        elif name != "user":
            return []
        elif await self.has("users"):
            rows = await self.q(
                "SELECT DISTINCT s.user_id AS v FROM sessions s WHERE s.user_id IS NOT NULL "
                "UNION SELECT u.name AS v FROM users u JOIN sessions s ON s.user_id = u.id "
                "WHERE u.name IS NOT NULL"
            )
        else:
            rows = await self.q("SELECT DISTINCT user_id AS v FROM sessions WHERE user_id IS NOT NULL")
        return sorted({str(r["v"]) for r in rows})

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        rows = await self.q(self._summary_sql("WHERE s.id = ?", ""), thread_id)
        found = await self._summaries(rows)
        return found[0] if found else None

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        where, params = await self._filters(prefix or None, None, None)
        rows = await self.q(
            f"SELECT s.id FROM sessions s {where} ORDER BY s.id{self.C} LIMIT ?", *params, int(limit)
        )
        return [r["id"] for r in rows]

    async def change_token(self, thread_id: str | None) -> tuple[Any, Any]:
        """For a follow mode: changes when a message is added anywhere (the highest
        message id), sessions are added or updated (count, latest updated_at; on SQLite
        any commit of another connection, `PRAGMA data_version`), and when the
        shown thread changes (its message count and highest id). Aggregates only."""
        top = (
            await self.q(
                f"SELECT (SELECT MAX(id) FROM messages) AS top, COUNT(*) AS n, "
                f"MAX({self.t('updated_at')}) AS u FROM sessions"
            )
        )[0]
        token: tuple[Any, ...] = (top["top"], top["n"], top["u"])
        if self.kind == "sqlite":  # another connection committed (any change at all)
            token += ((await self.q("PRAGMA data_version"))[0]["data_version"],)
        if thread_id is None:
            return token, None
        row = (
            await self.q(
                "SELECT COUNT(*) AS n, MAX(id) AS last FROM messages WHERE session_id = ?", thread_id
            )
        )[0]
        return token, (row["n"], row["last"])

    # ---- checkpoints -----------------------------------------------------------------------

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            rows = await self.q("SELECT COUNT(*) AS n FROM messages")
        else:
            rows = await self.q("SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", thread_id)
        return int(rows[0]["n"])

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        limit, offset = int(limit), max(0, int(offset))
        lo, n = offset, limit  # the page: n rows (ascending) from index lo
        if descending:
            hi = await self.count(thread_id) - offset
            if hi <= 0:
                return []
            lo = max(0, hi - limit)
            n = hi - lo
        # one row more before the page: the parent of its first row
        start, first_step, skip_first = max(0, lo - 1), lo + 1, lo > 0
        rows = await self.q(
            f"SELECT {self._msg_cols()} FROM messages m WHERE m.session_id = ? "
            "ORDER BY m.id LIMIT ? OFFSET ?",
            thread_id,
            n + int(skip_first),
            start,
        )
        fork = await self._fork_parent(thread_id) if start == 0 and rows else None
        out: list[CheckpointMetadata] = []
        prev: str | None = fork
        for i, r in enumerate(rows):
            cid = checkpoint_id(r["id"])
            if skip_first and i == 0:
                prev = cid
                continue
            out.append(self._meta(r, first_step + len(out), prev))
            prev = cid
        if descending:
            out.reverse()
        return out

    async def _message_of(self, checkpoint_id_: str) -> tuple[int, dict[str, Any]] | None:
        """(message id, its row) of a checkpoint id, or None when it names no message."""
        mid = message_id_of(checkpoint_id_)
        if mid is None:
            return None
        rows = await self.q(f"SELECT {self._msg_cols()} FROM messages m WHERE m.id = ?", mid)
        return (mid, rows[0]) if rows else None

    async def get_metadata(self, checkpoint_id_: str) -> CheckpointMetadata | None:
        found = await self._message_of(checkpoint_id_)
        if found is None:
            return None
        mid, row = found
        sid = row["session_id"]
        at = (
            await self.q(
                "SELECT COUNT(*) AS n, MAX(CASE WHEN id < ? THEN id END) AS prev FROM messages "
                "WHERE session_id = ? AND id <= ?",
                mid,
                sid,
                mid,
            )
        )[0]
        parent = checkpoint_id(at["prev"]) if at["prev"] is not None else await self._fork_parent(sid)
        return self._meta(row, int(at["n"]), parent)

    async def _state(self, session_id: str) -> dict[str, Any]:
        rows = await self.q("SELECT * FROM sessions WHERE id = ?", session_id)
        session: dict[str, Any] | None = None
        user = None
        if rows:
            session = {k: (str(v) if hasattr(v, "isoformat") else v) for k, v in rows[0].items()}
            if "metadata_json" in session:
                _put_json(session, "metadata", session.pop("metadata_json"))
            if await self.has("users") and session.get("user_id") is not None:
                urows = await self.q(
                    "SELECT id, name, quota_total, quota_used FROM users WHERE id = ?", session["user_id"]
                )
                user = urows[0] if urows else None
        tasks: list[dict[str, Any]] = []
        if await self.has("tasks"):
            for t in await self.q(
                f"SELECT * FROM tasks WHERE session_id = ? ORDER BY {self.t('created_at')}, id{self.C}",
                session_id,
            ):
                task = {k: (str(v) if hasattr(v, "isoformat") else v) for k, v in t.items()}
                for col, key in (("payload_json", "payload"), ("result_json", "result")):
                    if col in task:
                        _put_json(task, key, task.pop(col))
                tasks.append(task)
        return {"session": session, "user": user, "tasks": tasks}

    def _attributed(self) -> str:
        """SQL: the message id an unlinked tool log `l` belongs to (see the module doc)."""
        return (
            "COALESCE((SELECT MAX(x.id) FROM messages x WHERE x.session_id = l.session_id "
            f"AND {self.t('x.created_at')} <= {self.t('l.created_at')}), "
            "(SELECT MIN(x.id) FROM messages x WHERE x.session_id = l.session_id))"
        )

    def _tool_log(self, r: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        entry: dict[str, Any] = {"id": r["id"], "tool_name": r["tool_name"], "message_id": r["message_id"]}
        for col, key in (("input_json", "input"), ("output_json", "output")):
            _put_json(entry, key, r.get(col))
        for col in ("elapsed_ms", "success", "error_message", "created_at"):
            entry[col] = r.get(col)
        return f"{r['tool_name']}#{r['id']}", entry

    def _log_cols(self) -> str:
        return (
            "l.id, l.session_id, l.message_id, l.tool_name, l.input_json, l.output_json, "
            f"l.elapsed_ms, l.success, l.error_message, {self.t('l.created_at')} AS created_at"
        )

    async def _tools_for(self, session_id: str, message_id: int) -> dict[str, Any]:
        if not await self.has("tool_logs"):
            return {}
        rows = await self.q(
            f"SELECT {self._log_cols()} FROM tool_logs l WHERE l.message_id = ? "
            f"OR (l.message_id IS NULL AND l.session_id = ? AND {self._attributed()} = ?) ORDER BY l.id",
            message_id,
            session_id,
            message_id,
        )
        return dict(self._tool_log(r) for r in rows)

    async def _tools_by_message(self, session_id: str) -> dict[int, dict[str, Any]]:
        """Every tool log of a session's messages, by the message they belong to."""
        out: dict[int, dict[str, Any]] = {}
        if not await self.has("tool_logs"):
            return out
        rows = await self.q(
            f"SELECT {self._log_cols()}, CASE WHEN l.message_id IS NOT NULL THEN l.message_id "
            f"ELSE {self._attributed()} END AS owner FROM tool_logs l WHERE l.session_id = ? "
            "OR l.message_id IN (SELECT id FROM messages WHERE session_id = ?) ORDER BY l.id",
            session_id,
            session_id,
        )
        for r in rows:
            if r["owner"] is None:
                continue
            key, entry = self._tool_log(r)
            out.setdefault(int(r["owner"]), {})[key] = entry
        return out

    async def get(self, checkpoint_id_: str) -> Checkpoint | None:
        found = await self._message_of(checkpoint_id_)
        if found is None:
            return None
        mid, row = found
        sid = row["session_id"]
        rows = await self.q(
            f"SELECT {self._msg_cols()} FROM messages m WHERE m.session_id = ? AND m.id <= ? ORDER BY m.id",
            sid,
            mid,
        )
        parent = checkpoint_id(rows[-2]["id"]) if len(rows) > 1 else await self._fork_parent(sid)
        meta = self._meta(row, len(rows), parent)
        return Checkpoint(
            meta,
            [self._message(r) for r in rows],
            await self._state(sid),
            await self._tools_for(sid, mid),
            next_node="",
        )

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        rows = await self.q("SELECT MAX(id) AS h FROM messages WHERE session_id = ?", thread_id)
        if rows[0]["h"] is None:
            return None
        return await self.get(checkpoint_id(rows[0]["h"]))

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        step = int(step)
        if step < 1 or step >= 2**62:
            return None
        rows = await self.q(
            f"SELECT {self._msg_cols()} FROM messages m WHERE m.session_id = ? "
            "ORDER BY m.id LIMIT 2 OFFSET ?",
            thread_id,
            max(0, step - 2),
        )
        if step == 1:
            if not rows:
                return None
            return self._meta(rows[0], 1, await self._fork_parent(thread_id))
        if len(rows) < 2:
            return None
        return self._meta(rows[1], step, checkpoint_id(rows[0]["id"]))

    async def children(self, checkpoint_id_: str) -> list[CheckpointMetadata]:
        meta = await self.get_metadata(checkpoint_id_)
        if meta is None:
            return []
        mid = message_id_of(checkpoint_id_)
        out: list[CheckpointMetadata] = []
        rows = await self.q(
            f"SELECT {self._msg_cols()} FROM messages m WHERE m.session_id = ? "
            "AND m.id > ? ORDER BY m.id LIMIT 1",
            meta.thread_id,
            mid,
        )
        if rows:
            out.append(self._meta(rows[0], meta.step + 1, checkpoint_id_))
        if await self.has(S.BRANCHES):
            for b in await self.q(
                f"SELECT session_id FROM {S.BRANCHES} WHERE source_message_id = ? "
                f"ORDER BY session_id{self.C}",
                mid,
            ):
                first = await self.at_step(b["session_id"], 1)
                if first is not None:
                    out.append(first)
        return out

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        if not await self.has(S.BRANCHES):
            return []
        ids = list(dict.fromkeys(thread_ids))
        out: list[CheckpointMetadata] = []
        for ph, chunk in in_chunks(ids, 400):
            for b in await self.q(
                f"SELECT b.session_id FROM {S.BRANCHES} b WHERE b.source_session_id IN ({ph}) "
                "AND EXISTS (SELECT 1 FROM messages m "
                "WHERE m.id = b.source_message_id AND m.session_id = b.source_session_id) "
                f"ORDER BY b.session_id{self.C}",
                *chunk,
            ):
                first = await self.at_step(b["session_id"], 1)
                if first is not None:
                    out.append(first)
        return out

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """Ids `msg-<n>` starting with `prefix`, in text order: for each number of digits
        the smallest matching ids are a range of the primary key."""
        limit = int(limit)
        if limit <= 0:
            return []
        digits = prefix[len(CID_PREFIX) :]  # ("" for a prefix of "msg-")
        if not CID_PREFIX.startswith(prefix) and not (
            prefix.startswith(CID_PREFIX)
            and digits.isdigit()
            and digits.isascii()
            and len(digits) <= 18
            and digits[0] != "0"
        ):
            return []
        top = (await self.q("SELECT MAX(id) AS m FROM messages"))[0]["m"]
        if top is None:
            return []
        found: list[str] = []
        for width in range(max(1, len(digits)), len(str(int(top))) + 1):
            pad = width - len(digits)
            if digits:
                lo, hi = int(digits) * 10**pad, int(digits) * 10**pad + 10**pad - 1
            else:
                lo, hi = 10 ** (width - 1), 10**width - 1
            for r in await self.q(
                "SELECT id FROM messages WHERE id >= ? AND id <= ? ORDER BY id LIMIT ?", lo, hi, limit
            ):
                found.append(checkpoint_id(r["id"]))
        return sorted(found)[:limit]

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        if thread_ids is None:
            sessions = [
                r["sid"]
                for r in await self.q(
                    f"SELECT session_id AS sid FROM messages GROUP BY session_id ORDER BY session_id{self.C}"
                )
            ]
        else:
            sessions = list(dict.fromkeys(thread_ids))
        for sid in sessions:
            state = await self._state(sid)
            tools = await self._tools_by_message(sid)
            transcript: list[dict[str, Any]] = []
            prev = await self._fork_parent(sid)
            after: list[Any] = []  # the last id read
            while True:
                rows = await self.q(
                    f"SELECT {self._msg_cols()} FROM messages m WHERE m.session_id = ?"
                    + (" AND m.id > ?" if after else "")
                    + " ORDER BY m.id LIMIT ?",
                    sid,
                    *after,
                    batch,
                )
                for r in rows:
                    transcript.append(self._message(r))
                    meta = self._meta(r, len(transcript), prev)
                    yield Checkpoint(meta, list(transcript), state, tools.get(int(r["id"]), {}), "")
                    prev = meta.checkpoint_id
                if len(rows) < batch:
                    break
                after = [rows[-1]["id"]]

    # ---- search ----------------------------------------------------------------------------

    async def fts_state(self) -> tuple[str, str]:
        """("ok"|"missing"|"stale"|"corrupt"|"foreign", detail) of messages_fts (SQLite).
        In step: the index holds exactly the rows of messages (count, max and sum of ids
        of its docsize table equal those of messages); read-only, no integrity-check."""
        if self.kind != "sqlite" or not await self.has("messages_fts"):
            return "missing", "no messages_fts table"
        try:
            sql = await self.q("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'")
            if not indexes_messages(sql[0]["sql"]):
                return "foreign", "messages_fts is not an external-content table of messages"
            if not await self.has("messages_fts_docsize"):
                return "foreign", "messages_fts has no docsize table (columnsize=0)"
            fts = (
                await self.q("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages_fts_docsize")
            )[0]
            await self.q("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1", '"agentctl"')
        except Exception as exc:  # noqa: BLE001 - a broken index is reported, not raised
            return "corrupt", f"messages_fts cannot be read ({exc})"
        msg = (await self.q("SELECT COUNT(*) AS n, MAX(id) AS mx, SUM(id) AS sm FROM messages"))[0]
        if (fts["n"], fts["mx"], fts["sm"]) != (msg["n"], msg["mx"], msg["sm"]):
            return "stale", (
                f"messages_fts indexes {fts['n']} row(s), messages has {msg['n']} "
                "(nothing keeps the external-content index in step)"
            )
        return "ok", "in step"

    async def _fts_searchable(self) -> int | None:
        """For a search: the highest message id messages_fts indexes when it can serve
        (an external-content table of messages, readable), else None. Cheaper than
        `fts_state` (two index lookups, no count): hits are joined with messages and
        their content checked again, so a deleted or rewritten row is never returned
        stale; the rows above that id (written since the index was last built) are
        scanned in the same search; a row missing below it is what `doctor` reports."""
        if (
            self.kind != "sqlite"
            or not await self.has("messages_fts")
            or not await self.has("messages_fts_docsize")
        ):
            return None
        if not indexes_messages(
            (await self.q("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'"))[0]["sql"]
        ):
            return None
        try:
            top = (await self.q("SELECT MAX(id) AS mx FROM messages_fts_docsize"))[0]["mx"]
        except Exception:  # noqa: BLE001 - a broken index: scan (doctor reports it)
            return None
        return int(top or 0)

    @staticmethod
    def _needs_scan(text: str) -> bool:
        # unicode61 does not split CJK text into words: a substring of it is no token
        return any(ord(ch) >= 0x2E80 for ch in text) or not re.search(r"\w", text)

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """The messages and the tool logs (`places` messages, tools); the session's
        state is not searched."""
        if not text:
            raise UsageError("search text is empty")
        wanted = check_search_places(places)
        limit = int(limit)
        needle = text.lower()
        hits: list[SearchHit] = []
        indexed = None
        if self.kind == "sqlite" and not scan and not self._needs_scan(text):
            indexed = await self._fts_searchable()
        use_fts = bool(indexed)  # an index never built (empty) serves nothing: scan
        self.last_search_path = "fts" if use_fts else "scan"
        conds, params = [], []
        if thread_id is not None:
            conds.append("m.session_id = ?")
            params.append(thread_id)
        if role is not None:
            conds.append("m.role = ?")
            params.append(role)
        extra = "".join(" AND " + c for c in conds)
        rows: list[dict[str, Any]] = []
        if use_fts:
            # every word as a phrase, the last one as a prefix
            match = " ".join('"' + t.replace('"', '""') + '"' for t in re.findall(r"\w+", text)) + "*"
            # The rows written since the index was built, newest first, then the index's
            # hits in its own rowid order (descending: no sort of every match).
            rows = [
                r
                for r in await self.q(
                    f"SELECT {self._msg_cols()} FROM messages m WHERE m.id > ? AND "
                    f"{self.contains('m.content')}{extra} ORDER BY m.id DESC LIMIT ?",
                    indexed,
                    needle,
                    *params,
                    limit,
                )
                if needle in str(r["content"]).lower()
            ]
            last = None
            while len(rows) < limit:
                page = await self.q(
                    f"SELECT {self._msg_cols()} FROM messages_fts f JOIN messages m ON m.id = f.rowid "
                    f"WHERE messages_fts MATCH ?{extra}"
                    + (" AND f.rowid < ?" if last else "")
                    + " ORDER BY f.rowid DESC LIMIT ?",
                    match,
                    *params,
                    *([last] if last else []),
                    limit * 2,
                )
                rows += [r for r in page if needle in str(r["content"]).lower()]
                if len(page) < limit * 2:
                    break
                last = page[-1]["id"]
            rows = rows[:limit]
        else:
            rows = await self.q(
                f"SELECT {self._msg_cols()} FROM messages m WHERE {self.contains('m.content')}{extra} "
                "ORDER BY m.id DESC LIMIT ?",
                needle,
                *params,
                limit,
            )
            if self.kind == "sqlite":  # SQLite's lower() folds ASCII only: Python decides
                rows = [r for r in rows if needle in str(r["content"]).lower()]
        steps = await self._steps_of([r["id"] for r in rows]) if "messages" in wanted else {}
        for r in rows if "messages" in wanted else []:
            hits.append(
                SearchHit(
                    r["session_id"],
                    checkpoint_id(r["id"]),
                    steps[r["id"]],
                    "messages",
                    r["role"],
                    snippet_around(str(r["content"]), text),
                    message_hit_path(steps[r["id"]]),
                )
            )
        if role is None and "tools" in wanted and await self.has("tool_logs"):
            tparams = [] if thread_id is None else [thread_id]
            tl = await self.q(
                f"SELECT {self._log_cols()}, CASE WHEN l.message_id IS NOT NULL THEN l.message_id "
                f"ELSE {self._attributed()} END AS owner FROM tool_logs l WHERE "
                f"({self.contains('l.input_json')} OR {self.contains('l.output_json')} OR "
                f"{self.contains('l.tool_name')} OR {self.contains('l.error_message')})"
                + (" AND l.session_id = ?" if tparams else "")
                + " ORDER BY l.id DESC LIMIT ?",
                needle,
                needle,
                needle,
                needle,
                *tparams,
                limit,
            )
            owners = await self._steps_of(
                [int(r["owner"]) for r in tl if r["owner"] is not None], with_session=True
            )
            for r in tl:
                if r["owner"] is None or int(r["owner"]) not in owners:
                    continue
                session_id, step = owners[int(r["owner"])]
                body = " ".join(
                    str(r.get(c) or "") for c in ("tool_name", "input_json", "output_json", "error_message")
                )
                hits.append(
                    SearchHit(
                        session_id,
                        checkpoint_id(int(r["owner"])),
                        step,
                        "tools_result",
                        None,
                        snippet_around(body, text),
                    )
                )
        hits.sort(key=lambda h: -(message_id_of(h.checkpoint_id) or 0))
        return hits[:limit]

    # ---- statistics ------------------------------------------------------------------------

    def _cutoff(self, days: float | None) -> str | None:
        if days is None:
            return None
        dt = (self._clock() if self._clock else datetime.now(timezone.utc)) - timedelta(days=float(days))
        return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        """The article's statistics (`get_usage_stats`): per user sessions, tokens and
        messages of the sessions updated in the period; per tool calls, mean latency
        and failures of the logs of the period. Totals over the users selected."""
        cutoff = self._cutoff(days)
        sconds, sparams = [], []
        if cutoff is not None:
            sconds.append(f"{self.t('s.updated_at')} > ?")
            sparams.append(cutoff)
        uid = None
        if user is not None:
            uid = user
            if await self.has("users"):
                found = await self.q(
                    "SELECT id FROM users WHERE id = ? OR name = ? ORDER BY "
                    "CASE WHEN id = ? THEN 0 ELSE 1 END LIMIT 1",
                    user,
                    user,
                    user,
                )
                if found:
                    uid = found[0]["id"]
            sconds.append("s.user_id = ?")
            sparams.append(uid)
        where = ("WHERE " + " AND ".join(sconds)) if sconds else ""
        has_users = await self.has("users")
        per_user = await self.q(
            "SELECT s.user_id, "
            + (
                "(SELECT name FROM users u WHERE u.id = s.user_id) AS name, "
                if has_users
                else "NULL AS name, "
            )
            + "COUNT(*) AS session_count, SUM(s.total_tokens) AS total_tokens, "
            f"SUM(s.message_count) AS total_messages FROM sessions s {where} GROUP BY s.user_id "
            f"ORDER BY s.user_id{self.C}",
            *sparams,
        )
        tool_usage: list[dict[str, Any]] = []
        if await self.has("tool_logs"):
            tconds, tparams = [], []
            if uid is not None:
                tconds.append("l.session_id IN (SELECT id FROM sessions WHERE user_id = ?)")
                tparams.append(uid)
            if cutoff is not None:
                tconds.append(f"{self.t('l.created_at')} > ?")
                tparams.append(cutoff)
            twhere = ("WHERE " + " AND ".join(tconds)) if tconds else ""
            tool_usage = [
                {
                    "tool_name": r["tool_name"],
                    "call_count": int(r["call_count"]),
                    "avg_latency": float(r["avg_latency"]) if r["avg_latency"] is not None else None,
                    "failures": int(r["failures"] or 0),
                }
                for r in await self.q(
                    "SELECT l.tool_name, COUNT(*) AS call_count, AVG(l.elapsed_ms) AS avg_latency, "
                    "SUM(CASE WHEN l.success = 0 THEN 1 ELSE 0 END) AS failures "
                    f"FROM tool_logs l {twhere} GROUP BY l.tool_name "
                    f"ORDER BY call_count DESC, l.tool_name{self.C}",
                    *tparams,
                )
            ]
        users = [
            {
                "user_id": r["user_id"],
                "name": r["name"],
                "session_count": int(r["session_count"]),
                "total_tokens": int(r["total_tokens"] or 0),
                "total_messages": int(r["total_messages"] or 0),
            }
            for r in per_user
        ]
        return {
            "period_days": days,
            "user": uid,
            "session_count": sum(u["session_count"] for u in users),
            "total_tokens": sum(u["total_tokens"] for u in users),
            "total_messages": sum(u["total_messages"] for u in users),
            "tool_usage": tool_usage,
            "users": users,
        }

    # ---- doctor ----------------------------------------------------------------------------

    async def backup(self, dest: str) -> str:
        self.require(Capability.BACKUP, "backup")
        return await self.db.backup(dest)

    async def doctor(self, limit: int = 100) -> list[Problem]:
        self.require(Capability.DOCTOR, "doctor")
        tables = await self.tables()
        out: list[Problem] = []
        for t in ("users", "tasks", "tool_logs"):
            if t not in tables:
                out.append(
                    Problem(
                        "warning",
                        "missing_table",
                        t,
                        f"the optional table {t!r} is missing; its data reads as empty",
                    )
                )
        if self.kind == "sqlite":
            state, detail = await self.fts_state()
            if state == "missing":
                out.append(
                    Problem(
                        "warning",
                        "missing_table",
                        "messages_fts",
                        "no messages_fts: search scans the messages",
                    )
                )
            elif state != "ok":
                out.append(
                    Problem(
                        "warning" if state != "corrupt" else "error",
                        f"fts_{state}",
                        "messages_fts",
                        detail + "; search scans the messages",
                    )
                )
        for r in await self.q(
            "SELECT m.session_id, COUNT(*) AS n FROM messages m WHERE NOT EXISTS "
            "(SELECT 1 FROM sessions s WHERE s.id = m.session_id) GROUP BY m.session_id "
            f"ORDER BY m.session_id{self.C} LIMIT 100"
        ):
            out.append(
                Problem(
                    "error",
                    "orphan_messages",
                    str(r["session_id"]),
                    f"{r['n']} message(s) of session {r['session_id']!r}, which does not exist",
                )
            )
        bad = await self._bad_json()
        for r in bad:
            out.append(
                Problem(
                    "error",
                    "invalid_json",
                    checkpoint_id(r["id"]),
                    f"messages.tool_calls_json of message {r['id']} is not JSON",
                )
            )
        out.extend(await self._non_json_numbers(tables, limit))
        if self.kind == "sqlite":
            for t in [t for t in ("sessions", "messages", "tasks", "tool_logs") if t in tables]:
                for r in await self.q(f"SELECT * FROM pragma_foreign_key_check('{t}') LIMIT 100"):
                    out.append(
                        Problem(
                            "error",
                            "foreign_key",
                            f"{t}:{r.get('rowid')}",
                            f"{t} row {r.get('rowid')} names a missing {r.get('parent')} row",
                        )
                    )
        else:
            checks = [
                ("sessions", "user_id", "users", "id"),
                ("messages", "session_id", "sessions", "id"),
                ("tasks", "session_id", "sessions", "id"),
                ("tool_logs", "session_id", "sessions", "id"),
                ("tool_logs", "message_id", "messages", "id"),
            ]
            for t, col, parent, pcol in checks:
                if t in tables and parent in tables:
                    for r in await self.q(
                        f"SELECT c.id FROM {t} c WHERE c.{col} IS NOT NULL AND NOT EXISTS "
                        f"(SELECT 1 FROM {parent} p WHERE p.{pcol} = c.{col}) LIMIT 100"
                    ):
                        out.append(
                            Problem(
                                "error",
                                "foreign_key",
                                f"{t}:{r['id']}",
                                f"{t} row {r['id']} names a missing {parent} row",
                            )
                        )
        n, tok = (
            "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)",
            "(SELECT COALESCE(SUM(token_count), 0) FROM messages m WHERE m.session_id = s.id)",
        )
        differ = "IS DISTINCT FROM" if self.kind == "postgres" else "IS NOT"
        for r in await self.q(
            f"SELECT s.id, s.message_count, s.total_tokens, {n} AS n, {tok} AS tok FROM sessions s "
            f"WHERE s.message_count {differ} {n} OR s.total_tokens {differ} {tok} ORDER BY s.id{self.C} LIMIT 100"
        ):
            out.append(
                Problem(
                    "warning",
                    "session_counters",
                    str(r["id"]),
                    f"message_count={r['message_count']} total_tokens={r['total_tokens']}, "
                    f"but its messages count {r['n']} with {r['tok']} tokens",
                )
            )
        return out

    async def _non_json_numbers(self, tables: Any, limit: int) -> list[Problem]:
        """NaN or Infinity in the JSON of a session's metadata or a user's preferences
        (and, on Postgres, of a message's tool calls: on SQLite `_bad_json` finds those),
        which Python's json writes but JSON has not."""
        from agentctl.storage.sqlconn import non_json_numbers

        places = [("sessions", "metadata_json", "session"), ("users", "preferences_json", "user")]
        if self.kind != "sqlite":
            places.append(("messages", "tool_calls_json", "message"))
        out: list[Problem] = []
        for table, column, what in places:
            if table not in tables:
                continue
            for r, why in await non_json_numbers(self.db, self.kind, table, column, "id", limit):
                subject = checkpoint_id(r["id"]) if table == "messages" else str(r["id"])
                out.append(
                    Problem("error", "invalid_json", subject, f"{table}.{column} of {what} {r['id']}: {why}")
                )
        return out

    async def _bad_json(self) -> list[dict[str, Any]]:
        if self.kind == "sqlite":
            return await self.q(
                "SELECT id FROM messages WHERE tool_calls_json IS NOT NULL AND "
                "NOT json_valid(tool_calls_json) ORDER BY id LIMIT 100"
            )
        # Postgres: no json_valid before 16; check in Python, a page at a time
        out: list[dict[str, Any]] = []
        last = 0
        while len(out) < 100:
            rows = await self.q(
                "SELECT id, CAST(tool_calls_json AS TEXT) AS j FROM messages WHERE "
                "tool_calls_json IS NOT NULL AND id > ? ORDER BY id LIMIT 2000",
                last,
            )
            for r in rows:
                if decode_json(r["j"])[1]:
                    out.append({"id": r["id"]})
            if len(rows) < 2000:
                break
            last = rows[-1]["id"]
        return out[:100]


def opener(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    """The format's store (its FormatSpec names this opener)."""
    return ArticleStore(kind, target, readonly=readonly, **kwargs)
