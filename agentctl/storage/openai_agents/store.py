"""Reads of the OpenAI Agents SDK's session tables (see the package's docstring for the
mapping). Every read is a query of the messages table by `session_id` and `id` (the
SDK's index `(session_id, id)`); the transcript of step N decodes items 1..N."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from agentctl import deep
from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.contract import SEARCH_PLACES, Store, local_file_of, skip_copies
from agentctl.storage.openai_agents import (
    FORMAT,
    STRUCTURE_COLUMNS,
    USAGE_COLUMNS,
    choose_pair,
)
from agentctl.storage.openai_agents.items import (
    item_kind,
    searchable_text,
    summary_of,
    tags_of,
    to_message,
)
from agentctl.storage.search import message_hit_path, snippet_around
from agentctl.storage.sqlconn import ConnectedStore, check_sort, connection, prefix_range
from agentctl.storage.sqlutil import in_chunks, marks
from agentctl.storage.timefmt import iso_utc

PREFIX = "item-"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def decode(data: Any) -> tuple[Any, str | None]:
    """(item, None) or (None, reason)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data).decode("utf-8", "replace")
    try:
        return deep.loads(data), None
    except (TypeError, ValueError) as exc:
        return None, str(exc)


def checkpoint_id(row_id: Any) -> str:
    return f"{PREFIX}{int(row_id)}"


def row_id_of(cid: str) -> int | None:
    if not isinstance(cid, str) or not cid.startswith(PREFIX):
        return None
    digits = cid[len(PREFIX) :]
    if not digits.isdigit() or len(digits) > 18:
        return None
    return int(digits)


#: the previous release's op log and trash (moved into the journal by the first write)
OLD_OPLOG = "agentctl_openai_oplog"
OLD_TRASH = "agentctl_openai_trash"


class OpenAIAgentsStore(ConnectedStore):
    doctor_checks: tuple[str, ...] = ("search_index", "invalid_json")

    def json_places(self) -> list[tuple[str, str, str, Callable[[dict[str, Any]], str]]]:
        return [(self._M, "message_data", "id", lambda r: checkpoint_id(r["id"]))]

    format = FORMAT

    def __init__(
        self,
        kind: str,
        target: str,
        *,
        readonly: bool = True,
        sessions_table: str | None = None,
        messages_table: str | None = None,
        **_: Any,
    ) -> None:
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._asked = (sessions_table, messages_table)
        self._db = connection(kind, target, self._check, readonly=readonly)
        self.display_name = self._db.display_name
        self.sessions_table = ""
        self.messages_table = ""
        self._S = self._M = ""
        self.has_structure = False
        self.has_usage = False
        self._C = ' COLLATE "C"' if kind == "postgres" else ""
        self._archive_map: dict[str, tuple[str, int, str]] | None = None

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        s, m = choose_pair(tables, *self._asked)
        self.sessions_table, self.messages_table = s, m
        self._S, self._M = quote(s), quote(m)
        self.has_structure = all(c in tables.get("message_structure", ()) for c in STRUCTURE_COLUMNS)
        self.has_usage = all(c in tables.get("turn_usage", ()) for c in USAGE_COLUMNS)

    async def _archives(self) -> dict[str, tuple[str, int, str]]:
        """{session: (the session it came from, row id of the item it came after, "rewind"
        or "branch")} of the archive sessions of rewinds and the sessions of branches
        agentctl made, not undone (read once per store, from the journal, or the previous
        release's op log while it is not migrated)."""
        if self._archive_map is None:
            from agentctl.storage.journal.ops import LOG

            await self.connect()
            found: dict[str, tuple[str, int, str]] = {}
            for log in (LOG, OLD_OPLOG):
                if not await self._db.table_exists(log):
                    continue
                rows = await self._q(
                    f"SELECT kind, details FROM {log} WHERE kind IN ('rewind', 'branch') AND undone = 0"
                )
                for r in rows:
                    d = json.loads(r["details"])
                    if r["kind"] == "rewind" and d.get("archive"):
                        found[d["archive"]] = (d["session"], int(d["target"]), "rewind")
                    elif r["kind"] == "branch" and d.get("branch_session"):
                        found[d["branch_session"]] = (d["session"], int(d["target"]), "branch")
            self._archive_map = found
        return self._archive_map

    async def without_copies(self, line: list[CheckpointMetadata]) -> list[CheckpointMetadata]:
        # a branch session holds copies of items 1..N, its first naming the fork point
        forks = {
            session: checkpoint_id(target)
            for session, (_, target, kind) in (await self._archives()).items()
            if kind == "branch"
        }
        return skip_copies(line, forks) if forks else line

    async def archive_threads(self) -> set[str]:
        return {t for t, origin in (await self._archives()).items() if origin[2] == "rewind"}

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        return await self._db.query(sql, *params)

    # ---- lines: a plain session, or one branch of an AdvancedSQLiteSession ---------------

    @property
    def _L(self) -> str:
        """What the thread listings read: rows (session_id: the thread, id: an item) of
        every line, one per step. Without `message_structure` the messages table itself;
        with it, a plain session's items and each branch's `message_structure` rows
        (thread SESSION for main, SESSION#BRANCH for the others)."""
        if not self.has_structure:
            return self._M
        return (
            f"(SELECT session_id, id FROM {self._M} WHERE session_id NOT IN "
            "(SELECT session_id FROM message_structure) UNION ALL "
            "SELECT CASE WHEN s.branch_id = 'main' THEN s.session_id "
            "ELSE s.session_id || '#' || s.branch_id END, s.message_id "
            f"FROM message_structure s JOIN {self._M} m ON m.id = s.message_id "
            "AND m.session_id = s.session_id) AS lines"
        )

    async def _advanced(self, session: str) -> bool:
        """Whether the session has `message_structure` rows (an AdvancedSQLiteSession's)."""
        return self.has_structure and bool(
            await self._q("SELECT 1 AS x FROM message_structure WHERE session_id = ? LIMIT 1", session)
        )

    async def line(self, thread_id: str) -> tuple[str, str | None]:
        """(session, branch) of a thread: branch None for a plain session, "main" for
        an AdvancedSQLiteSession's thread SESSION, BRANCH for SESSION#BRANCH (a branch
        holding rows; else the thread is read as a plain session of that name)."""
        if not self.has_structure:
            return thread_id, None
        if await self._advanced(thread_id):
            return thread_id, "main"
        for i, ch in enumerate(thread_id):
            if (
                ch == "#"
                and thread_id[i + 1 :] != "main"
                and await self._q(
                    "SELECT 1 AS x FROM message_structure WHERE session_id = ? AND branch_id = ? LIMIT 1",
                    thread_id[:i],
                    thread_id[i + 1 :],
                )
            ):
                return thread_id[:i], thread_id[i + 1 :]
        return thread_id, None

    @staticmethod
    def thread_of(session: str, branch: str | None) -> str:
        return session if branch in (None, "main") else f"{session}#{branch}"

    async def _owner(self, session: str, mid: int) -> str | None:
        """The branch an item of an AdvancedSQLiteSession belongs to: the one it was
        added to (its oldest `message_structure` row); None when it is on none."""
        rows = await self._q(
            "SELECT branch_id FROM message_structure WHERE session_id = ? AND message_id = ? "
            "ORDER BY id LIMIT 1",
            session,
            mid,
        )
        return rows[0]["branch_id"] if rows else None

    async def _fork(self, session: str, branch: str) -> tuple[str, int | None, int | None]:
        """Where a branch parts from its source: (the source's thread, the last item it
        shares with it (None: none), its first item of its own (None: none yet))."""
        rows = await self._q(
            "SELECT s.message_id AS mid, (SELECT o.branch_id FROM message_structure o WHERE o.session_id = "
            "s.session_id AND o.message_id = s.message_id ORDER BY o.id LIMIT 1) AS owner "
            f"FROM message_structure s JOIN {self._M} m ON m.id = s.message_id AND m.session_id = s.session_id "
            "WHERE s.session_id = ? AND s.branch_id = ? ORDER BY s.sequence_number",
            session,
            branch,
        )
        shared: tuple[int | None, str] = (None, "main")
        for r in rows:
            if r["owner"] == branch:
                return self.thread_of(session, shared[1]), shared[0], int(r["mid"])
            shared = (int(r["mid"]), r["owner"])
        return self.thread_of(session, shared[1]), shared[0], None

    # ---- threads -------------------------------------------------------------------

    def _prefix_where(self, prefix: str | None, params: list[Any]) -> str:
        if not prefix:
            return ""
        return " WHERE " + prefix_range(f"session_id{self._C}", prefix, params)

    async def _summaries(
        self, where: str, params: list[Any], order: str, limit: int, offset: int
    ) -> list[ThreadSummary]:
        # Only the index (session_id, id): the head is the newest row id, and the SDK
        # writes ids in time order, so "updated"/"created" order by MAX(id)/MIN(id); the
        # times shown are those rows' created_at, read for the page alone.
        rows = await self._q(
            f"SELECT session_id AS tid, COUNT(*) AS n, MAX(id) AS head, MIN(id) AS first "
            f"FROM {self._L}{where} GROUP BY session_id "
            f"ORDER BY {order} LIMIT ? OFFSET ?",
            *params,
            int(limit),
            int(offset),
        )
        heads = await self._items_by_id([r["head"] for r in rows] + [r["first"] for r in rows])
        archives = await self._archives()
        out = []
        for r in rows:
            item = heads.get(int(r["head"]), (None, ""))[0]
            msg = to_message(item, {})
            origin = archives.get(r["tid"])
            if origin is None and self.has_structure and "#" in r["tid"]:
                session, branch = await self.line(r["tid"])
                if branch not in (None, "main"):
                    source, point, _ = await self._fork(session, str(branch))
                    if point is not None:
                        origin = (source, point, "branch")
            out.append(
                ThreadSummary(
                    branch_of=origin[0] if origin else None,
                    branch_point=checkpoint_id(origin[1]) if origin else None,
                    thread_id=r["tid"],
                    checkpoints=int(r["n"]),
                    head_step=int(r["n"]),
                    head_checkpoint_id=checkpoint_id(r["head"]),
                    updated_at=heads.get(int(r["head"]), (None, ""))[1],
                    head_summary=summary_of(item, msg),
                    first_created_at=heads.get(int(r["first"]), (None, ""))[1],
                )
            )
        return out

    async def _items_by_id(self, ids: Sequence[Any]) -> dict[int, tuple[Any, str]]:
        """{row id: (item, created_at)} of these rows (an undecodable item as None)."""
        out: dict[int, tuple[Any, str]] = {}
        for ph, chunk in in_chunks([int(i) for i in ids]):
            rows = await self._q(
                f"SELECT id, message_data, created_at FROM {self._M} WHERE id IN ({ph})", *chunk
            )
            for r in rows:
                out[int(r["id"])] = (decode(r["message_data"])[0], iso_utc(r["created_at"]))
        return out

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        key = {
            "updated": "MAX(id)",
            "created": "MIN(id)",
            "checkpoints": "COUNT(*)",
            "step": "COUNT(*)",
            "thread": f"session_id{self._C}",
        }[check_sort(sort)]
        d = "DESC" if descending else "ASC"
        params: list[Any] = []
        where = self._prefix_where(prefix, params)
        order = f"{key} {d}" + ("" if sort == "thread" else f", session_id{self._C} ASC")
        return await self._summaries(where, params, order, limit, offset)

    async def count_threads(self, prefix: str | None = None) -> int:
        params: list[Any] = []
        where = self._prefix_where(prefix, params)
        rows = await self._q(f"SELECT COUNT(DISTINCT session_id) AS n FROM {self._L}{where}", *params)
        return int(rows[0]["n"])

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        found = await self._summaries(" WHERE session_id = ?", [thread_id], "session_id", 1, 0)
        return found[0] if found else None

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        params: list[Any] = []
        where = self._prefix_where(prefix, params)
        rows = await self._q(
            f"SELECT DISTINCT session_id{self._C} AS tid FROM {self._L}{where} ORDER BY tid LIMIT ?",
            *params,
            int(limit),
        )
        return [r["tid"] for r in rows]

    # ---- checkpoints ---------------------------------------------------------------

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            rows = await self._q(f"SELECT COUNT(*) AS n FROM {self._L}")
            return int(rows[0]["n"])
        session, branch = await self.line(thread_id)
        if branch is not None:
            rows = await self._q(
                f"SELECT COUNT(*) AS n FROM message_structure s JOIN {self._M} m ON "
                "m.id = s.message_id AND m.session_id = s.session_id "
                "WHERE s.session_id = ? AND s.branch_id = ?",
                session,
                branch,
            )
        else:
            rows = await self._q(f"SELECT COUNT(*) AS n FROM {self._M} WHERE session_id = ?", thread_id)
        return int(rows[0]["n"])

    async def _rows(self, thread_id: str, first_step: int, last_step: int | None) -> list[dict[str, Any]]:
        """The rows of steps first_step..last_step (None: to the end), with the row before
        them (for the parent), in id order; each with its `step`."""
        start = max(first_step - 1, 1)
        limit = -1 if last_step is None else max(last_step - start + 1, 0)
        if limit == 0:
            return []
        session, branch = await self.line(thread_id)
        if branch is not None:  # a branch's items in its order (the SDK's get_items)
            rows = await self._q(
                f"SELECT m.id, m.message_data, m.created_at FROM message_structure s JOIN {self._M} m "
                "ON m.id = s.message_id AND m.session_id = s.session_id WHERE s.session_id = ? "
                "AND s.branch_id = ? ORDER BY s.sequence_number LIMIT ? OFFSET ?",
                session,
                branch,
                limit if limit >= 0 else 2**62,
                start - 1,
            )
        else:
            rows = await self._q(
                f"SELECT id, message_data, created_at FROM {self._M} WHERE session_id = ? "
                f"ORDER BY id LIMIT ? OFFSET ?",
                thread_id,
                limit if limit >= 0 else 2**62,
                start - 1,
            )
        for i, r in enumerate(rows):
            r["step"] = start + i
            r["session_id"], r["session"], r["branch"] = thread_id, session, branch
        return rows

    async def _structure(self, ids: Sequence[int]) -> dict[int, list[tuple[str, Any]]]:
        """{message id: [(branch, user turn), ...]} (AdvancedSQLiteSession)."""
        out: dict[int, list[tuple[str, Any]]] = {}
        if not self.has_structure:
            return out
        for ph, chunk in in_chunks(ids):
            rows = await self._q(
                "SELECT message_id, branch_id, user_turn_number FROM message_structure WHERE "
                f"message_id IN ({ph}) ORDER BY branch_id, id",
                *chunk,
            )
            for r in rows:
                out.setdefault(int(r["message_id"]), []).append((r["branch_id"], r["user_turn_number"]))
        return out

    def _meta(
        self,
        row: dict[str, Any],
        parent: int | None,
        item: Any,
        msg: dict[str, Any],
        structure: list[tuple[str, Any]],
    ) -> CheckpointMetadata:
        tags = tags_of(item, msg) + [f"branch:{b}" for b, _t in structure]
        tags += [f"turn:{t}" for t in sorted({t for _b, t in structure if t is not None})]
        return CheckpointMetadata(
            thread_id=row["session_id"],
            checkpoint_id=checkpoint_id(row["id"]),
            step=row["step"],
            parent_checkpoint_id=checkpoint_id(parent) if parent is not None else None,
            created_at=iso_utc(row["created_at"]),
            tags=tags,
            summary=summary_of(item, msg),
        )

    async def _first_parent(self, rows: list[dict[str, Any]]) -> int | None:
        """The parent of a page's first row when it is step 1: the rewind target of an
        archive session, else None."""
        if not rows or rows[0]["step"] != 1:
            return None
        origin = (await self._archives()).get(rows[0]["session_id"])
        return origin[1] if origin else None

    async def _metas(self, rows: list[dict[str, Any]], first_step: int) -> list[CheckpointMetadata]:
        structure = await self._structure([int(r["id"]) for r in rows])
        out = []
        prev: int | None = await self._first_parent(rows)
        names: dict[str, str] = {}
        for r in rows:
            item = decode(r.pop("message_data"))[0]  # the text freed as soon as it is decoded
            msg = to_message(item, names)
            if r["step"] >= first_step:
                out.append(self._meta(r, prev, item, msg, structure.get(int(r["id"]), [])))
            prev = int(r["id"])
        return out

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        limit, offset = max(int(limit), 0), max(int(offset), 0)
        if limit == 0:
            return []
        if descending:
            last = await self.count(thread_id) - offset
            first = max(last - limit + 1, 1)
            if last < 1:
                return []
            metas = await self._metas(await self._rows(thread_id, first, last), first)
            return list(reversed(metas))
        first = offset + 1
        upto = None if limit >= 2**62 else offset + limit
        return await self._metas(await self._rows(thread_id, first, upto), first)

    async def _locate(self, cid: str) -> dict[str, Any] | None:
        rid = row_id_of(cid)
        if rid is None:
            return None
        rows = await self._q(
            f"SELECT id, session_id, created_at FROM {self._M} WHERE id = ?", rid
        )  # not message_data: it may be 50 MB
        if not rows:
            return None
        row = rows[0]
        place = await self._place(row["session_id"], rid)
        if place is None:
            return None
        row["session_id"], row["step"] = place
        return row

    async def _place(self, session: str, rid: int) -> tuple[str, int] | None:
        """(thread, step) of an item: its session's, or on an AdvancedSQLiteSession the
        branch it was added to (None: an item on no branch, which the SDK never reads)."""
        if not await self._advanced(session):
            n = await self._q(
                f"SELECT COUNT(*) AS n FROM {self._M} WHERE session_id = ? AND id <= ?", session, rid
            )
            return session, int(n[0]["n"])
        branch = await self._owner(session, rid)
        if branch is None:
            return None
        n = await self._q(
            f"SELECT COUNT(*) AS n FROM message_structure s JOIN {self._M} m ON m.id = s.message_id "
            "AND m.session_id = s.session_id WHERE s.session_id = ? AND s.branch_id = ? AND s.sequence_number <= "
            "(SELECT MIN(sequence_number) FROM message_structure WHERE session_id = ? AND branch_id = ? "
            "AND message_id = ?)",
            session,
            branch,
            session,
            branch,
            rid,
        )
        return self.thread_of(session, branch), int(n[0]["n"])

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        row = await self._locate(checkpoint_id)
        if row is None:
            return None
        metas = await self._metas(await self._rows(row["session_id"], row["step"], row["step"]), row["step"])
        return metas[0] if metas else None

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        row = await self._locate(checkpoint_id)
        if row is None:
            return None
        return await self._checkpoint_at(row["session_id"], row["step"])

    async def _checkpoint_at(self, thread_id: str, step: int) -> Checkpoint | None:
        rows = await self._rows(thread_id, 1, step)
        if not rows or rows[-1]["step"] != step:
            return None
        cps = [cp async for cp in self._build(rows, only_last=True)]
        cp = cps[-1]
        if isinstance(cp, CorruptRowError):
            raise cp
        return cp

    async def _usage(self, session_id: str) -> list[dict[str, Any]]:
        if not self.has_usage:
            return []
        rows = await self._q(
            "SELECT branch_id, user_turn_number, requests, input_tokens, output_tokens, total_tokens "
            "FROM turn_usage WHERE session_id = ? ORDER BY branch_id, user_turn_number",
            session_id,
        )
        return [
            {
                k: r[k]
                for k in (
                    "branch_id",
                    "user_turn_number",
                    "requests",
                    "input_tokens",
                    "output_tokens",
                    "total_tokens",
                )
            }
            for r in rows
        ]

    async def _build(
        self, rows: list[dict[str, Any]], only_last: bool = False
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        """The checkpoints of consecutive rows of one session starting at step 1."""
        if not rows:
            return
        structure = await self._structure([int(r["id"]) for r in rows])
        usage = await self._usage(rows[0]["session"])
        names: dict[str, str] = {}
        messages: list[dict[str, Any]] = []
        tools: dict[str, Any] = {}
        prev: int | None = await self._first_parent(rows)
        for i, r in enumerate(rows):
            item, err = decode(r.pop("message_data"))  # the text freed as soon as it is decoded
            if err is not None:
                msg: dict[str, Any] = {"role": "invalid", "content": f"(message_data is not JSON: {err})"}
            else:
                msg = to_message(item, names)
            messages.append(msg)
            kind = item_kind(item)
            for call in msg.get("tool_calls") or []:
                tools[str(call.get("id"))] = {"name": call.get("name"), "arguments": call.get("arguments")}
            if msg.get("role") == "tool" and msg.get("tool_call_id"):
                entry = tools.setdefault(str(msg["tool_call_id"]), {"name": msg.get("name")})
                entry["output"] = msg.get("content")
            st = structure.get(int(r["id"]), [])
            meta = self._meta(r, prev, item, msg, st)
            prev = int(r["id"])
            if only_last and i != len(rows) - 1:
                continue
            if err is not None:
                yield CorruptRowError(meta.checkpoint_id, "message_data", err)
                continue
            state: dict[str, Any] = {
                "session_id": r["session"],
                "items": r["step"],
                "item_type": kind,
                "item": item,
            }
            if r["branch"] is not None:
                state["branch"] = r["branch"]
            if st:
                turns = sorted({t for _b, t in st if t is not None})
                state["branches"] = sorted({b for b, _t in st})
                state["user_turn"] = turns[-1] if turns else None
                if usage:
                    upto = turns[-1] if turns else 0
                    state["turn_usage"] = [
                        u
                        for u in usage
                        if u["branch_id"] in state["branches"] and (u["user_turn_number"] or 0) <= upto
                    ]
            yield Checkpoint(
                meta, list(messages), state, {k: dict(v) for k, v in tools.items()}, next_node=""
            )

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        n = await self.count(thread_id)
        return await self._checkpoint_at(thread_id, n) if n else None

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        if step < 1:
            return None
        metas = await self._metas(await self._rows(thread_id, step, step), step)
        return metas[0] if metas and metas[0].step == step else None

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        row = await self._locate(checkpoint_id)
        if row is None:
            return []
        found = await self.at_step(row["session_id"], row["step"] + 1)
        out = [found] if found else []
        session, branch = await self.line(row["session_id"])
        if branch is not None:  # the branches that part from this item
            rid = int(row["id"])
            rows = await self._q(
                "SELECT s.branch_id, n.message_id AS next FROM message_structure s JOIN message_structure n "
                "ON n.session_id = s.session_id AND n.branch_id = s.branch_id AND n.sequence_number = "
                "(SELECT MIN(x.sequence_number) FROM message_structure x WHERE x.session_id = s.session_id "
                "AND x.branch_id = s.branch_id AND x.sequence_number > s.sequence_number) "
                "WHERE s.session_id = ? AND s.message_id = ? AND s.branch_id <> ? ORDER BY s.branch_id",
                session,
                rid,
                branch,
            )
            for r in rows:
                if await self._owner(session, int(r["next"])) == r["branch_id"]:
                    meta = await self.get_metadata(f"{PREFIX}{int(r['next'])}")
                    if meta is not None and meta.checkpoint_id not in {m.checkpoint_id for m in out}:
                        out.append(meta)
        return out

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        """The first items of the archive sessions of rewinds of these sessions and of the
        sessions of their branches; on an AdvancedSQLiteSession, the first item of its
        own of each branch parting from these threads."""
        firsts = [
            await self.at_step(a, 1)
            for a, (session, _, _) in sorted((await self._archives()).items())
            if session in set(thread_ids)
        ]
        if self.has_structure:
            sessions = sorted({(await self.line(t))[0] for t in thread_ids})
            for session in sessions:
                if not await self._advanced(session):
                    continue
                for r in await self._q(
                    "SELECT DISTINCT branch_id FROM message_structure WHERE session_id = ? "
                    "AND branch_id <> 'main' ORDER BY branch_id",
                    session,
                ):
                    if self.thread_of(session, r["branch_id"]) in await self._archives():
                        continue  # a rewind's archive branch: listed above
                    source, _point, own = await self._fork(session, r["branch_id"])
                    if source in thread_ids and own is not None:
                        firsts.append(await self.get_metadata(checkpoint_id(own)))
        return [f for f in firsts if f is not None]

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        if PREFIX.startswith(prefix):
            digits = ""
        elif prefix.startswith(PREFIX) and prefix[len(PREFIX) :].isdigit():
            digits = prefix[len(PREFIX) :]
        else:
            return []
        rows = await self._q(
            f"SELECT CAST(id AS TEXT) AS t FROM {self._M} WHERE CAST(id AS TEXT) LIKE ? "
            f"ORDER BY CAST(id AS TEXT){self._C} LIMIT ?",
            digits + "%",
            int(limit),
        )
        return [PREFIX + r["t"] for r in rows]

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        threads = list(thread_ids) if thread_ids is not None else await self.all_thread_ids()
        for tid in threads:
            rows = await self._rows(tid, 1, None)
            async for cp in self._build(rows):
                yield cp

    # ---- search ----------------------------------------------------------------------

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """A scan of message_data: a LIKE prefilter (for ASCII text, matched against the
        JSON-escaped form the SDK stores), then each candidate decoded and matched."""
        wanted = self.scan_start(places)
        if wanted is None:
            return []
        needle = text.casefold()
        params: list[Any] = []
        where = []
        if thread_id is not None:
            where.append("session_id = ?")
            params.append((await self.line(thread_id))[0])
        self.json_text_filter("message_data", text, where, params)
        if not scan and self.kind == "sqlite" and len(needle) >= 3:
            found = await self._index_search(text, needle, thread_id, role, limit, wanted, where, params)
            if found is not None:
                self.last_search_path = "index"
                return found
        hits: list[SearchHit] = []

        async def take(rows: list[dict[str, Any]]) -> None:
            await self._match(rows, text, needle, role, wanted, limit, hits, thread_id)

        # newest first, a page at a time below the last id read (the SDK's id: the row's
        # INTEGER PRIMARY KEY, never NULL)
        return await self.scan_pages(
            f"SELECT id, session_id, message_data, created_at FROM {self._M}",
            where,
            params,
            "id DESC",
            hits,
            limit,
            take,
            after=("id",),
        )

    async def _match(
        self,
        rows: Sequence[Mapping[str, Any]],
        text: str,
        needle: str,
        role: str | None,
        wanted: Any,
        limit: int,
        hits: list[SearchHit],
        thread_id: str | None = None,
    ) -> None:
        """Add the hits of rows (id, session_id, message_data), in their order, up to `limit`
        (those of `thread_id` alone when given: an item shared by branches is its first's)."""
        for r in rows:
            item, err = decode(r["message_data"])
            if err is not None:
                continue
            msg = to_message(item, {})
            if role is not None and msg.get("role") != role:
                continue
            body = searchable_text(msg)
            pos = body.casefold().find(needle)
            if pos < 0 or ("tools" if msg.get("role") == "tool" else "messages") not in wanted:
                continue
            place = await self._place(r["session_id"], int(r["id"]))
            if place is None or (thread_id is not None and place[0] != thread_id):
                continue  # (None: on no branch of its session, which the SDK never reads)
            hits.append(
                SearchHit(
                    thread_id=place[0],
                    checkpoint_id=checkpoint_id(r["id"]),
                    step=(step := place[1]),
                    where="tools_result" if msg.get("role") == "tool" else "messages",
                    role=msg.get("role"),
                    snippet=snippet_around(body, text, 40),
                    path=message_hit_path(step),
                )
            )  # a tool output is its step's message too
            if len(hits) >= limit:
                break

    # ---- the side search index (agentctl.storage.textindex) ----------------------------

    def text_source(self) -> Any:
        """The side index's view of this store: one document per item (its searchable
        text, casefolded as the search compares), kind 0 a message, 1 a tool output."""
        from agentctl.storage.textindex import Source

        def docs(values: Sequence[Any]) -> list[tuple[int, str]]:
            item, err = decode(values[0])
            if err is not None:
                return []
            msg = to_message(item, {})
            return [(1 if msg.get("role") == "tool" else 0, searchable_text(msg).casefold())]

        return Source(
            format=f"openai-agents:{self.messages_table}",
            table=self._M,
            key="id",
            sort="id",
            fingerprint="length(message_data)",
            columns=("message_data",),
            kinds=("messages", "tools"),
            docs=docs,
        )

    async def search_index(self, action: str) -> dict[str, Any]:
        """`agentctl index build|status|drop` on SQLite (a side file; the database is only read)."""

        from agentctl.storage import textindex
        from agentctl.storage.contract import Unsupported

        if self.kind != "sqlite":
            raise Unsupported(self.format.name, "a search index on Postgres (`agentctl index`)")
        await self.connect()
        return await textindex.index_action(self._db.path, self.text_source(), action, "items")

    async def _index_search(
        self,
        text: str,
        needle: str,
        thread_id: str | None,
        role: str | None,
        limit: int,
        wanted: Any,
        where: list[str],
        params: list[Any],
    ) -> list[SearchHit] | None:
        """The hits through the side index when there is one (its candidates, newest
        first, read from the database with the scan's own test), else None."""
        import asyncio
        import sqlite3

        from agentctl.storage import textindex

        session = await self.open_side_index()
        if session is None:
            return None
        side = textindex.side_path(self._db.path)
        try:
            kinds = [k for k, place in enumerate(("messages", "tools")) if place in wanted]
            candidates = session.candidates(needle, kinds)
            cond = "".join(" AND " + w for w in where)
            hits: list[SearchHit] = []
            batch = max(limit, 20)

            def next_rows() -> list[Any]:
                keys = [k for _, k in zip(range(batch), candidates, strict=False)]
                if not keys:
                    return []
                found = {
                    r[0]: {"id": r[0], "session_id": r[1], "message_data": r[2]}
                    for r in session.con.execute(
                        f"SELECT id, session_id, message_data FROM src.{self._M} "
                        f"WHERE id IN ({marks(len(keys))}){cond}",
                        [*keys, *params],
                    )
                }
                return [found.get(k) for k in keys]

            while len(hits) < limit:
                try:
                    rows = await asyncio.to_thread(next_rows)
                except sqlite3.DatabaseError as exc:  # a side file damaged under our feet
                    self.last_search_note = textindex.fallback_note(side, f"unreadable ({exc})")
                    return None
                if not rows:
                    break
                batch = min(batch * 2, 2000)
                await self._match(
                    [r for r in rows if r is not None], text, needle, role, wanted, limit, hits, thread_id
                )
            return hits
        finally:
            session.close()


def opener(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    """The format's store (its FormatSpec names this opener)."""
    return OpenAIAgentsStore(kind, target, readonly=readonly, **kwargs)
