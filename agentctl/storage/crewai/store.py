"""Reads of CrewAI's three stores (see the package's docstring for the mapping).

One shape serves the three: a table whose rows are checkpoints, each in a thread (an
SQL expression of its columns: `branch`, `flow_uuid`, or one constant thread), ordered
within it by one column (`rowid`, `id`, `task_index`): step N is the thread's N-th row.
What differs is data (`RowStore`'s class attributes) and each format's decoding of a row
(`decode`). No row's text is executed: JSON (and JSONB) decoded as plain data."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agentctl import deep
from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.contract import SEARCH_PLACES, Problem, Store, local_file_of
from agentctl.storage.crewai import (
    CHECKPOINT_COLUMNS,
    FLOW_COLUMNS,
    FLOWS,
    FORMAT,
    REPLAY,
    REPLAY_COLUMNS,
)
from agentctl.storage.search import snippet_around
from agentctl.storage.sql import jsonb
from agentctl.storage.sqlconn import ConnectedStore, check_sort, connection, one_line, prefix_range
from agentctl.storage.timefmt import iso_utc

#: the replay store's one thread
REPLAY_THREAD = "latest_kickoff"


def ts_iso(value: Any) -> str:
    """CrewAI's checkpoint time ("20261206T194022", UTC) as ISO-8601; other text as iso_utc."""
    text = "" if value is None else str(value)
    if len(text) == 15 and text[8] == "T" and text[:8].isdigit() and text[9:].isdigit():
        return f"{text[:4]}-{text[4:6]}-{text[6:8]}T{text[9:11]}:{text[11:13]}:{text[13:15]}+00:00"
    return iso_utc(value)


def load_json(value: Any) -> Any:
    """A JSON (or JSONB) column's value; ValueError when it is neither."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = bytes(value)
        if jsonb.is_jsonb(blob):
            return jsonb.decode(blob)
        value = blob.decode("utf-8", "replace")
    if value is None:
        return None
    try:
        return deep.loads(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not JSON: {exc}") from None


class Decoded:
    """A row as agentctl shows it: messages, state, tool results, a summary, its tags and
    (where the row names it) its parent."""

    __slots__ = ("messages", "state", "tools", "summary", "tags", "parent", "raw")

    def __init__(
        self,
        messages: list[dict[str, Any]],
        state: dict[str, Any],
        summary: str,
        *,
        tags: list[str] | None = None,
        parent: str | None = None,
        raw: Any = None,
        tools: dict[str, Any] | None = None,
    ):
        self.messages, self.state, self.summary = messages, state, summary
        self.tags, self.parent, self.raw, self.tools = tags or [], parent, raw, tools or {}


class RowStore(ConnectedStore):
    """A table of checkpoints, threads by `THREAD`, steps by `ORDER` (see the module)."""

    TABLE = ""
    COLUMNS: tuple[str, ...] = ()
    THREAD = ""  # the thread of a row (SQL)
    ORDER = ""  # its place in the thread (SQL, one column, unique in a thread)
    KEY = ""  # the column naming a row
    TIME = ""  # its time
    #: the parent is named by the row (checkpoints) rather than the row before it
    own_parents = False

    def __init__(self, kind: str, target: str, *, readonly: bool = True, **_: Any) -> None:
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._db = connection(kind, target, self._check, readonly=readonly)
        self.display_name = self._db.display_name

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        from agentctl.errors import SchemaError

        if not all(c in tables.get(self.TABLE, ()) for c in self.COLUMNS):
            raise SchemaError(f"no CrewAI table {self.TABLE} here (want columns {', '.join(self.COLUMNS)})")

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        return await self._db.query(sql, *params)

    # ---- what differs ----------------------------------------------------------------

    def cid(self, row: Mapping[str, Any]) -> str:
        return str(row["k"])

    def key_of(self, checkpoint_id: str) -> Any:
        """The KEY value of a checkpoint id, or None when it cannot name a row."""
        return checkpoint_id if isinstance(checkpoint_id, str) and checkpoint_id else None

    def decode(self, row: Mapping[str, Any]) -> Decoded:
        raise NotImplementedError

    @property
    def _SELECT(self) -> str:
        cols = ", ".join(c for c in self.COLUMNS)
        return (
            f"SELECT {self.THREAD} AS t, {self.ORDER} AS o, {self.KEY} AS k, {self.TIME} AS at, {cols} "
            f"FROM {self.TABLE}"
        )

    # ---- threads -----------------------------------------------------------------------

    async def _summaries(
        self, where: str, params: list[Any], order: str, limit: int, offset: int
    ) -> list[ThreadSummary]:
        rows = await self._q(
            f"SELECT {self.THREAD} AS t, COUNT(*) AS n, MAX({self.ORDER}) AS last, MIN({self.ORDER}) AS first "
            f"FROM {self.TABLE}{where} GROUP BY {self.THREAD} ORDER BY {order} LIMIT ? OFFSET ?",
            *params,
            int(limit),
            int(offset),
        )
        out = []
        for r in rows:
            head = await self._row_at(r["t"], r["last"])
            first = await self._row_at(r["t"], r["first"])
            if head is None or first is None:
                continue
            meta = await self._meta(head, int(r["n"]))
            fork = await self._fork_of(first)
            out.append(
                ThreadSummary(
                    thread_id=r["t"],
                    checkpoints=int(r["n"]),
                    head_step=int(r["n"]),
                    head_checkpoint_id=meta.checkpoint_id,
                    updated_at=meta.created_at,
                    head_summary=meta.summary,
                    first_created_at=ts_iso(first["at"]),
                    branch_of=fork[0] if fork else None,
                    branch_point=fork[1] if fork else None,
                )
            )
        return out

    async def _fork_of(self, first: Mapping[str, Any]) -> tuple[str, str] | None:
        """(thread, checkpoint) a thread's first row was forked from, in another thread."""
        if not self.own_parents:
            return None
        parent = self._decode_safe(first).parent
        if not parent:
            return None
        rows = await self._q(f"SELECT {self.THREAD} AS t FROM {self.TABLE} WHERE {self.KEY} = ?", parent)
        if rows and rows[0]["t"] != first["t"]:
            return rows[0]["t"], parent
        return None

    def _where_prefix(self, prefix: str | None, params: list[Any]) -> str:
        return f" WHERE {prefix_range(self.THREAD, prefix, params)}" if prefix else ""

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        d = "DESC" if descending else "ASC"
        key = {
            "updated": "MAX(" + self.ORDER + ")",
            "thread": "t",
            "checkpoints": "n",
            "step": "n",
            "created": "MIN(" + self.ORDER + ")",
        }[check_sort(sort)]
        params: list[Any] = []
        where = self._where_prefix(prefix, params)
        order = f"{key} {d}" + (", t ASC" if key != "t" else "")
        return await self._summaries(where, params, order, limit, offset)

    async def count_threads(self, prefix: str | None = None) -> int:
        params: list[Any] = []
        rows = await self._q(
            f"SELECT COUNT(DISTINCT {self.THREAD}) AS n FROM {self.TABLE}"
            f"{self._where_prefix(prefix, params)}",
            *params,
        )
        return int(rows[0]["n"])

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        found = await self._summaries(f" WHERE {self.THREAD} = ?", [thread_id], "t", 1, 0)
        return found[0] if found else None

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        params: list[Any] = []
        rows = await self._q(
            f"SELECT DISTINCT {self.THREAD} AS t FROM {self.TABLE}"
            f"{self._where_prefix(prefix, params)} ORDER BY t LIMIT ?",
            *params,
            int(limit),
        )
        return [r["t"] for r in rows]

    # ---- rows --------------------------------------------------------------------------

    async def _row_at(self, thread_id: str, order: Any) -> dict[str, Any] | None:
        rows = await self._q(f"{self._SELECT} WHERE {self.THREAD} = ? AND {self.ORDER} = ?", thread_id, order)
        return rows[0] if rows else None

    async def _row(self, checkpoint_id: str) -> dict[str, Any] | None:
        key = self.key_of(checkpoint_id)
        if key is None:
            return None
        rows = await self._q(f"{self._SELECT} WHERE {self.KEY} = ?", key)
        return rows[0] if rows else None

    async def _step(self, row: Mapping[str, Any]) -> int:
        rows = await self._q(
            f"SELECT COUNT(*) AS n FROM {self.TABLE} WHERE {self.THREAD} = ? AND {self.ORDER} <= ?",
            row["t"],
            row["o"],
        )
        return int(rows[0]["n"])

    def _decode_safe(self, row: Mapping[str, Any]) -> Decoded:
        try:
            return self.decode(row)
        except ValueError as exc:
            return Decoded([], {}, f"(unreadable: {exc})", tags=["invalid"], raw=exc)

    async def _prev_key(self, row: Mapping[str, Any]) -> str | None:
        rows = await self._q(
            f"SELECT {self.KEY} AS k FROM {self.TABLE} WHERE {self.THREAD} = ? AND "
            f"{self.ORDER} < ? ORDER BY {self.ORDER} DESC LIMIT 1",
            row["t"],
            row["o"],
        )
        return self.cid(rows[0]) if rows else None

    async def _meta(
        self,
        row: Mapping[str, Any],
        step: int | None = None,
        prev: str | None = "?",
        decoded: Decoded | None = None,
    ) -> CheckpointMetadata:
        d = decoded or self._decode_safe(row)
        if self.own_parents:
            parent = d.parent
        else:
            parent = await self._prev_key(row) if prev == "?" else prev
        return CheckpointMetadata(
            thread_id=row["t"],
            checkpoint_id=self.cid(row),
            step=step if step is not None else await self._step(row),
            parent_checkpoint_id=parent,
            created_at=ts_iso(row["at"]),
            tags=list(d.tags),
            summary=d.summary,
        )

    def _checkpoint(self, meta: CheckpointMetadata, d: Decoded) -> Checkpoint:
        if isinstance(d.raw, ValueError):
            raise CorruptRowError(meta.checkpoint_id, self.TABLE, str(d.raw))
        return Checkpoint(meta, d.messages, d.state, d.tools, next_node="")

    # ---- checkpoints -------------------------------------------------------------------

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            rows = await self._q(f"SELECT COUNT(*) AS n FROM {self.TABLE}")
        else:
            rows = await self._q(f"SELECT COUNT(*) AS n FROM {self.TABLE} WHERE {self.THREAD} = ?", thread_id)
        return int(rows[0]["n"])

    async def _page(self, thread_id: str, limit: int, offset: int, descending: bool) -> list[dict[str, Any]]:
        d = "DESC" if descending else "ASC"
        return await self._q(
            f"{self._SELECT} WHERE {self.THREAD} = ? ORDER BY {self.ORDER} {d} LIMIT ? OFFSET ?",
            thread_id,
            int(limit),
            int(offset),
        )

    async def _metas(
        self, thread_id: str, rows: list[dict[str, Any]], first_step: int, descending: bool
    ) -> list[CheckpointMetadata]:
        out = []
        for i, r in enumerate(rows):
            step = first_step - i if descending else first_step + i
            prev: str | None = "?"
            if not descending and i:
                prev = self.cid(rows[i - 1])
            elif descending and i + 1 < len(rows):
                prev = self.cid(rows[i + 1])
            elif step == 1:
                prev = None
            out.append(await self._meta(r, step, prev))
        return out

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        rows = await self._page(thread_id, limit, offset, descending)
        if not rows:
            return []
        first = (await self.count(thread_id)) - offset if descending else offset + 1
        return await self._metas(thread_id, rows, first, descending)

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        row = await self._row(checkpoint_id)
        if row is None:
            return None
        d = self._decode_safe(row)
        return self._checkpoint(await self._meta(row, decoded=d), d)

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        row = await self._row(checkpoint_id)
        return None if row is None else await self._meta(row)

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        rows = await self._page(thread_id, 1, 0, True)
        if not rows:
            return None
        d = self._decode_safe(rows[0])
        return self._checkpoint(await self._meta(rows[0], await self.count(thread_id), decoded=d), d)

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        if step < 1:
            return None
        rows = await self._page(thread_id, 1, step - 1, False)
        return await self._meta(rows[0], step) if rows else None

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        row = await self._row(checkpoint_id)
        if row is None:
            return []
        if not self.own_parents:
            nxt = await self._q(
                f"{self._SELECT} WHERE {self.THREAD} = ? AND {self.ORDER} > ? ORDER BY {self.ORDER} LIMIT 1",
                row["t"],
                row["o"],
            )
            return [await self._meta(nxt[0], prev=checkpoint_id)] if nxt else []
        return [
            m for m in await self._with_parent_in([checkpoint_id]) if m.parent_checkpoint_id == checkpoint_id
        ]

    async def _with_parent_in(self, ids: Sequence[str]) -> list[CheckpointMetadata]:
        """The checkpoints whose parent is one of `ids` (own_parents formats): their
        `parent_id` column as a candidate filter, each confirmed by its decoded data."""
        from agentctl.storage.sqlutil import in_chunks

        out: list[CheckpointMetadata] = []
        for ph, chunk in in_chunks(ids):
            for r in await self._q(f"{self._SELECT} WHERE parent_id IN ({ph}) ORDER BY {self.ORDER}", *chunk):
                out.append(await self._meta(r))
        return out

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        if not self.own_parents:
            return []
        want = set(thread_ids)
        out: list[CheckpointMetadata] = []
        # every branch's first row in one query (one pass, with or without an index)
        for r in await self._q(
            f"SELECT {self.THREAD} AS t, MIN({self.ORDER}) AS o FROM {self.TABLE} "
            f"GROUP BY {self.THREAD} ORDER BY t"
        ):
            first = None if r["t"] in want else await self._row_at(r["t"], r["o"])
            fork = await self._fork_of(first) if first is not None else None
            if first is not None and fork and fork[0] in want:
                out.append(await self._meta(first, 1))
        return out

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        params: list[Any] = []
        rows = await self._q(
            f"SELECT {self.KEY} AS k FROM {self.TABLE} WHERE {self._key_prefix(prefix, params)} "
            f"ORDER BY k LIMIT ?",
            *params,
            int(limit),
        )
        return sorted(self.cid(r) for r in rows)

    def _key_prefix(self, prefix: str, params: list[Any]) -> str:
        return prefix_range(f"CAST({self.KEY} AS TEXT)", prefix, params) if prefix else "1 = 1"

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        threads = list(thread_ids) if thread_ids is not None else await self.all_thread_ids()
        for tid in threads:
            step = 0
            prev: str | None = None
            last: Any = None
            while True:  # a page at a time after the last row read (not OFFSET: no re-reading)
                after = "" if last is None else f" AND {self.ORDER} > ?"
                rows = await self._q(
                    f"{self._SELECT} WHERE {self.THREAD} = ?{after} ORDER BY {self.ORDER} LIMIT ?",
                    tid,
                    *(() if last is None else (last,)),
                    int(batch),
                )
                for r in rows:
                    step += 1
                    d = self._decode_safe(r)
                    meta = await self._meta(r, step, prev, decoded=d)
                    prev = meta.checkpoint_id
                    try:
                        yield self._checkpoint(meta, d)
                    except CorruptRowError as exc:
                        yield exc
                if len(rows) < batch:
                    break
                last = rows[-1]["o"]

    # ---- search, doctor, stats -----------------------------------------------------------

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """A scan, newest first: each row decoded and its messages (of `role`) and state
        matched, case-insensitively."""
        from agentctl.storage.contract import check_search_places

        self.last_search_path, self.last_search_note = "scan", ""
        wanted = check_search_places(places)
        needle = text.casefold()
        hits: list[SearchHit] = []
        where, params = [], []
        if thread_id is not None:
            where.append(f"{self.THREAD} = ?")
            params.append(thread_id)
        if self._text_column() and text.isascii() and text:
            self.json_text_filter(self._text_column(), text, where, params)

        async def take(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if len(hits) >= limit:
                    return
                d = self._decode_safe(r)
                if isinstance(d.raw, ValueError):
                    continue
                meta: CheckpointMetadata | None = None
                if "messages" in wanted:
                    for i, m in enumerate(d.messages):
                        body = str(m.get("content") or "")
                        if (role is None or m.get("role") == role) and needle in body.casefold():
                            meta = meta or await self._meta(r, decoded=d)
                            hits.append(
                                SearchHit(
                                    meta.thread_id,
                                    meta.checkpoint_id,
                                    meta.step,
                                    "messages",
                                    m.get("role"),
                                    snippet_around(body, text, 40),
                                    f"messages[{i}].content",
                                )
                            )
                            break
                if "state" in wanted and role is None and len(hits) < limit:
                    body = json.dumps(d.state, ensure_ascii=False, default=str)
                    if needle in body.casefold():
                        meta = meta or await self._meta(r, decoded=d)
                        hits.append(
                            SearchHit(
                                meta.thread_id,
                                meta.checkpoint_id,
                                meta.step,
                                "state",
                                None,
                                snippet_around(body, text, 40),
                                "state",
                            )
                        )

        return await self.scan_pages(self._SELECT, where, params, f"{self.ORDER} DESC", hits, limit, take)

    def _text_column(self) -> str:
        """A column of JSON text a LIKE can narrow a scan by ("" for JSONB)."""
        return ""

    async def doctor(self, limit: int = 100) -> list[Problem]:
        self.require("doctor")
        problems: list[Problem] = []
        async for item in self.iter_checkpoints():
            if isinstance(item, CorruptRowError):
                problems.append(Problem("error", "invalid_rows", item.checkpoint_id, str(item)))
        return problems[:limit] + await self._more_problems(limit)

    async def _more_problems(self, limit: int) -> list[Problem]:
        return []

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        from agentctl.storage.contract import Unsupported

        if user is not None or days is not None:
            raise Unsupported(self.format.name, "stats --user/--days")
        size = " + ".join(f"COALESCE(LENGTH(CAST({c} AS BLOB)), 0)" for c in self.COLUMNS)
        per = await self._q(
            f"SELECT {self.THREAD} AS t, COUNT(*) AS n, SUM({size}) AS bytes FROM {self.TABLE} "
            f"GROUP BY {self.THREAD} ORDER BY 3 DESC, t"
        )
        rows = [{"thread_id": r["t"], "checkpoints": int(r["n"]), "bytes": int(r["bytes"] or 0)} for r in per]
        return {
            "threads": len(rows),
            "checkpoints": sum(r["checkpoints"] for r in rows),
            "bytes": sum(r["bytes"] for r in rows),
            "bytes_of": self.TABLE,
            "per_thread": rows,
            "tags": {},
        }


def _entity_name(e: Mapping[str, Any]) -> str:
    return str(e.get("name") or e.get("role") or e.get("entity_type") or "entity")


class CheckpointStore(RowStore):
    """CrewAI's checkpoints: a thread per branch (rowid order), parents from `data`."""

    format = FORMAT
    TABLE = "checkpoints"
    COLUMNS = CHECKPOINT_COLUMNS
    THREAD = "branch"
    ORDER = "rowid"
    KEY = "id"
    TIME = "created_at"
    own_parents = True
    doctor_checks = ("invalid_rows", "resumed_entities", "column_mismatch", "missing_index")

    def decode(self, row: Mapping[str, Any]) -> Decoded:
        data = load_json(row["data"])
        if not isinstance(data, dict):
            raise ValueError("data is not a JSON object")
        parent = data.get("parent_id", row.get("parent_id"))
        entities = [e for e in data.get("entities") or [] if isinstance(e, dict)]
        messages: list[dict[str, Any]] = []
        done: list[str] = []
        for e in entities:
            for out in e.get("checkpoint_method_outputs") or []:
                if isinstance(out, dict):
                    messages.append(
                        {
                            "role": "assistant",
                            "name": str(out.get("method", "")),
                            "content": out.get("output")
                            if isinstance(out.get("output"), str)
                            else json.dumps(out.get("output"), default=str),
                        }
                    )
            done.extend(str(m) for m in e.get("checkpoint_completed_methods") or [])
            for t in e.get("tasks") or []:
                out = t.get("output") if isinstance(t, dict) else None
                if isinstance(out, dict) and out.get("raw") is not None:
                    messages.append(
                        {
                            "role": "assistant",
                            "name": str(out.get("agent") or t.get("name") or "task"),
                            "content": str(out.get("raw")),
                        }
                    )
        state = {k: v for k, v in data.items() if k != "event_record"}
        events = (
            (data.get("event_record") or {}).get("nodes")
            if isinstance(data.get("event_record"), dict)
            else None
        )
        state["events"] = len(events) if isinstance(events, dict) else 0
        kinds = [str(e.get("entity_type")) for e in entities]
        last = messages[-1] if messages else None
        summary = (
            f"{last['name']}: {one_line(last['content'], 60)}"
            if last
            else ", ".join(_entity_name(e) for e in entities) or "(no entities)"
        )
        tags = sorted(set(kinds))
        if kinds.count("flow") > 1:
            tags.append("resumed")
        return Decoded(
            messages, state, summary, tags=tags, parent=parent if isinstance(parent, str) else None, raw=data
        )

    #: the index agentctl's reads of a branch want (CrewAI's table has only its primary
    #: key): `doctor --fix-indexes` creates it; CrewAI's own writes and reads ignore it
    INDEX = (
        "agentctl_checkpoints_branch",
        "CREATE INDEX IF NOT EXISTS agentctl_checkpoints_branch ON checkpoints(branch)",
    )

    async def _has_index(self) -> bool:
        return bool(
            await self._q(
                "SELECT 1 AS x FROM sqlite_master WHERE type = 'index' AND tbl_name = 'checkpoints' "
                "AND sql LIKE '%(branch%'"
            )
        )

    async def fix_indexes(self) -> list[str]:
        """The index on checkpoints(branch) (`threads list`, `show BRANCH`, `log` read a
        branch through it instead of scanning every row), in one transaction."""
        if await self._has_index():
            return []
        async with self._db.transaction() as tx:
            await tx.execute(self.INDEX[1])
        return [self.INDEX[0]]

    async def _more_problems(self, limit: int) -> list[Problem]:
        """Rows a resumed run wrote (two flow entities, the first empty: CrewAI's
        `Flow.from_checkpoint`), and rows whose branch or parent columns disagree with
        their `data` (CrewAI reads `data`)."""
        problems: list[Problem] = []
        if not await self._has_index():
            problems.append(
                Problem(
                    "warning",
                    "missing_index",
                    "checkpoints",
                    "no index on checkpoints(branch): reads of a branch scan every row "
                    "(`agentctl doctor --fix-indexes` adds one; CrewAI ignores it)",
                )
            )
        last = -(2**63)
        while len(problems) < 2 * limit:
            rows = await self._q(f"{self._SELECT} WHERE rowid > ? ORDER BY rowid LIMIT 500", last)
            for r in rows:
                d = self._decode_safe(r)
                if not isinstance(d.raw, dict):
                    continue
                if "resumed" in d.tags:
                    problems.append(
                        Problem(
                            "warning",
                            "resumed_entities",
                            self.cid(r),
                            f"{self.cid(r)}: two flow entities (a run resumed by Flow.from_checkpoint); "
                            "the first is empty",
                        )
                    )
                if d.raw.get("branch", r["branch"]) != r["branch"] or d.parent != r["parent_id"]:
                    problems.append(
                        Problem(
                            "warning",
                            "column_mismatch",
                            self.cid(r),
                            f"{self.cid(r)}: the branch/parent_id columns differ from data's (CrewAI reads data)",
                        )
                    )
            if len(rows) < 500:
                break
            last = rows[-1]["o"]
        return problems


class FlowStateStore(RowStore):
    """`@persist` flow states: a thread per flow_uuid, rows by id."""

    format = FLOWS
    TABLE = "flow_states"
    COLUMNS = FLOW_COLUMNS
    THREAD = "flow_uuid"
    ORDER = "id"
    KEY = "id"
    TIME = "timestamp"
    PREFIX = "state-"
    doctor_checks = ("invalid_rows",)

    def cid(self, row: Mapping[str, Any]) -> str:
        return f"{self.PREFIX}{int(row['k'])}"

    def key_of(self, checkpoint_id: str) -> Any:
        digits = checkpoint_id[len(self.PREFIX) :] if isinstance(checkpoint_id, str) else ""
        if not checkpoint_id.startswith(self.PREFIX) or not digits.isdigit() or len(digits) > 18:
            return None
        return int(digits)

    def _key_prefix(self, prefix: str, params: list[Any]) -> str:
        if self.PREFIX.startswith(prefix):
            return "1 = 1"
        if prefix.startswith(self.PREFIX) and prefix[len(self.PREFIX) :].isdigit():
            params.append(prefix[len(self.PREFIX) :] + "%")
            return "CAST(id AS TEXT) LIKE ?"
        return "1 = 0"

    def _text_column(self) -> str:
        return "state_json"

    def decode(self, row: Mapping[str, Any]) -> Decoded:
        state = load_json(row["state_json"])
        if not isinstance(state, dict):
            state = {"value": state}
        method = str(row.get("method_name") or "")
        shown = {k: v for k, v in state.items() if k != "id"}
        return Decoded(
            [],
            state,
            f"{method}: {one_line(json.dumps(shown, default=str), 60)}",
            tags=[f"method:{method}"],
            raw=state,
        )


class ReplayStore(RowStore):
    """The replay store: one thread, a checkpoint per task by task_index."""

    format = REPLAY
    TABLE = "latest_kickoff_task_outputs"
    COLUMNS = REPLAY_COLUMNS
    THREAD = f"'{REPLAY_THREAD}'"
    ORDER = "task_index"
    KEY = "task_id"
    TIME = "timestamp"
    doctor_checks = ("invalid_rows",)

    def _text_column(self) -> str:
        return "output"

    def decode(self, row: Mapping[str, Any]) -> Decoded:
        output = load_json(row["output"])
        inputs = load_json(row["inputs"]) if row.get("inputs") is not None else None
        out = output if isinstance(output, dict) else {"raw": output}
        messages = [m for m in out.get("messages") or [] if isinstance(m, dict)]
        raw = out.get("raw")
        messages.append(
            {
                "role": "assistant",
                "name": str(out.get("agent") or ""),
                "content": "" if raw is None else str(raw),
            }
        )
        state = {
            "task_key": row["task_key"],
            "task_index": row["task_index"],
            "expected_output": row["expected_output"],
            "inputs": inputs,
            "was_replayed": bool(row["was_replayed"]),
            "output": {k: v for k, v in out.items() if k != "messages"},
        }
        desc = out.get("description") or row["task_key"]
        return Decoded(
            messages,
            state,
            f"{one_line(desc, 40)}: {one_line(raw, 40)}",
            tags=["replayed"] if row["was_replayed"] else [],
            raw=out,
        )


def open_checkpoints(
    kind: str, target: str, *, readonly: bool = True, create: bool = False, **kw: Any
) -> Store:
    return CheckpointStore(kind, target, readonly=readonly, **kw)


def open_flows(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kw: Any) -> Store:
    return FlowStateStore(kind, target, readonly=readonly, **kw)


def open_replay(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kw: Any) -> Store:
    return ReplayStore(kind, target, readonly=readonly, **kw)
