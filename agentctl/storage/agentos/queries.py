"""The queries both backends share, written once.

SQL here is the subset SQLite and Postgres agree on, with `?` placeholders (the Postgres
backend rewrites them to `$n`). A backend supplies `_fetch` and `COLLATE` (the suffix
that makes text sort by bytes: empty on SQLite, `COLLATE "C"` on Postgres).
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

from agentctl.errors import CorruptRowError, UsageError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.agentos.base import (
    ALL_COLUMNS,
    DELTA_MARKER,
    META_COLUMNS,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    THREAD_ROW_COLUMNS,
    RowReads,
    complete_checkpoint,
    decode_column,
    metadata_rows,
    row_to_checkpoint,
    row_to_metadata,
    search_messages,
)
from agentctl.storage.agentos.rows import BIG_JSON, fast_loads
from agentctl.storage.contract import SEARCH_PLACES, Content, Store, check_search_places
from agentctl.storage.sqlutil import in_chunks
from agentctl.text import sql_json_type_name

SORTS = ("updated", "thread", "checkpoints", "step", "created")
# The column each search place is stored in.
_PLACE_COLUMN = {"messages": "messages_blob", "tools": "tools_blob", "state": "state_blob"}
SEARCH_COLUMNS = tuple(_PLACE_COLUMN.values())


def _decode_content(checkpoint_id: str, messages: Any, state: Any) -> tuple[Any, Any]:
    return (
        decode_column(checkpoint_id, "messages_blob", messages, list),
        decode_column(checkpoint_id, "state_blob", state, dict),
    )


class _StoredTexts(Content):
    """A row's messages and state texts (str, or their UTF-8 bytes): the key, decoded at
    each `value()`."""

    __slots__ = ("checkpoint_id",)

    def __init__(self, checkpoint_id: str, messages: str | bytes, state: str | bytes):
        self.key = (messages, state)
        self._value = self._decode = None
        self.checkpoint_id = checkpoint_id

    def value(self) -> tuple[Any, Any]:
        return _decode_content(self.checkpoint_id, *self.key)

    def state(self) -> Any:
        text = self.key[1]
        if len(text) < BIG_JSON:  # the usual case straight to orjson; anything else (big,
            try:  # not JSON, not an object, orjson refusing it) as always
                value = fast_loads(text)
                if isinstance(value, dict):
                    return value
            except ValueError:
                pass
        return decode_column(self.checkpoint_id, "state_blob", text, dict)


class SharedQueries(RowReads):
    """The debugger's reads, for a backend (mixed in before CheckpointBackend)."""

    #: why the last search did not use the side index it found (for stderr), or ""
    last_search_note: str = ""
    #: the route of an indexed search: "fts" (an index of the candidates), "index" (the side index)
    _index_route: str = "fts"

    async def _write(self, sql: str, *params: Any) -> int:
        async with self.transaction() as tx:  # type: ignore[attr-defined]
            return await tx.execute(sql, *params)

    async def put(self, checkpoint: Checkpoint) -> str:
        async with self.transaction() as tx:  # type: ignore[attr-defined]
            return await tx.put(checkpoint)

    async def list_checkpoints(
        self, thread_id: str, limit: int = 100, offset: int = 0
    ) -> list[CheckpointMetadata]:
        return await self.read_thread(thread_id, limit, offset, descending=True)

    async def delete_thread(self, thread_id: str) -> int:
        return await self._write("DELETE FROM checkpoints WHERE thread_id = ?", thread_id)

    async def delete_before(self, thread_id: str, before_step: int) -> int:
        return await self._write(
            "DELETE FROM checkpoints WHERE thread_id = ? AND step < ?", thread_id, before_step
        )

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            return int(await self._fetchval("SELECT COUNT(*) AS n FROM checkpoints"))
        return int(
            await self._fetchval("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?", thread_id)
        )

    async def count_threads(self, prefix: str | None = None) -> int:
        if prefix:
            return int(
                await self._fetchval(
                    "SELECT COUNT(DISTINCT thread_id) AS n FROM checkpoints "
                    "WHERE substr(thread_id, 1, ?) = ?",
                    len(prefix),
                    prefix,
                )
            )
        return int(await self._fetchval("SELECT COUNT(DISTINCT thread_id) AS n FROM checkpoints"))

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        found = await self.all_at_step(thread_id, step, 1)
        return found[0] if found else None

    async def list_threads(self, limit: int = 50, offset: int = 0) -> list[CheckpointMetadata]:
        rows = await self._fetch(
            f"""SELECT {", ".join("h." + c.strip() for c in META_COLUMNS.split(","))}
            FROM (SELECT thread_id,
                     (SELECT id FROM checkpoints c WHERE c.thread_id = t.thread_id
                      ORDER BY {THREAD_ORDER_DESC} LIMIT 1) AS head_id
                  FROM (SELECT DISTINCT thread_id FROM checkpoints) t) g
            JOIN checkpoints h ON h.id = g.head_id
            ORDER BY h.created_at DESC, h.thread_id{self.COLLATE} ASC LIMIT ? OFFSET ?""",
            limit,
            offset,
        )
        return [row_to_metadata(r) for r in rows]

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        # A range scan on the checkpoint_id index (LIKE would treat % and _ as wildcards).
        rows = await self._fetch(
            "SELECT checkpoint_id FROM checkpoints WHERE checkpoint_id >= ? AND checkpoint_id < ? "
            "ORDER BY checkpoint_id LIMIT ?",
            prefix,
            prefix + "\U0010ffff",
            limit,
        )
        return [r["checkpoint_id"] for r in rows]

    async def all_at_step(self, thread_id: str, step: int, limit: int = 11) -> list[CheckpointMetadata]:
        rows = await self._fetch(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE thread_id = ? AND step = ? "
            f"ORDER BY {THREAD_ORDER_DESC} LIMIT ?",
            thread_id,
            step,
            int(limit),
        )
        return [row_to_metadata(r) for r in rows]

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        rows = await self._fetch(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE parent_id = ? "
            f"ORDER BY thread_id{self.COLLATE}, {THREAD_ORDER_ASC}",
            checkpoint_id,
        )
        return [row_to_metadata(r) for r in rows]

    # ---- threads ------------------------------------------------------------------

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        found = await self._summary_page(
            "page AS (SELECT thread_id AS tid, 0 AS k FROM checkpoints WHERE thread_id = ? LIMIT ? OFFSET ?)",
            [thread_id],
            1,
            0,
            "ASC",
            "",
        )
        return found[0] if found else None

    async def _newest_heads(self, limit: int, offset: int, prefix: str | None) -> list[ThreadSummary]:
        """thread_summaries by the heads' created_at, newest first, without grouping every
        row: walk an index on created_at from the newest row and keep the rows no other
        row of their thread comes after (the heads) until the page is full. The rows read
        are those newer than the page's oldest head (on Postgres, 2,300 for 51 heads of
        the 1M-row benchmark: 65 ms instead of 2 s)."""
        only, params = "", []
        if prefix:
            only, params = " AND substr(c.thread_id, 1, ?) = ?", [len(prefix), prefix]
        keys = f"""page AS (
            SELECT c.thread_id AS tid, c.created_at AS k FROM checkpoints c
            WHERE NOT EXISTS (SELECT 1 FROM checkpoints d WHERE d.thread_id = c.thread_id
                              AND (d.step, d.created_at, d.id) > (c.step, c.created_at, c.id)){only}
            ORDER BY c.created_at DESC, c.thread_id{self.COLLATE} ASC LIMIT ? OFFSET ?)"""
        return await self._summary_page(keys, params, limit, offset, "DESC", f", tid{self.COLLATE} ASC")

    async def _summary_page(
        self, keys: str, params: list[Any], limit: int, offset: int, direction: str, tiebreak: str
    ) -> list[ThreadSummary]:
        """thread_summaries' page: `keys` defines `page(tid, k)`, the page's threads and
        their sort key; then each gets its count, head, first row and parent thread."""
        rows = await self._fetch(
            f"""WITH {keys}
            SELECT p.tid AS thread_id,
                   (SELECT COUNT(*) FROM checkpoints c WHERE c.thread_id = p.tid) AS n,
                   h.step AS h_step, h.checkpoint_id AS h_id, h.created_at AS h_created_at,
                   h.summary AS h_summary, f.created_at AS first_created_at,
                   f.parent_id AS first_parent
            FROM page p
            JOIN checkpoints h ON h.id = (SELECT id FROM checkpoints c WHERE c.thread_id = p.tid
                                          ORDER BY {THREAD_ORDER_DESC} LIMIT 1)
            JOIN checkpoints f ON f.id = (SELECT id FROM checkpoints c WHERE c.thread_id = p.tid
                                          ORDER BY {THREAD_ORDER_ASC} LIMIT 1)
            ORDER BY p.k {direction}{tiebreak.replace("tid", "p.tid")}""",
            *params,
            limit,
            offset,
        )
        out = [dict(r) for r in rows]
        # parent_thread: the thread of each row's first_parent (looked up for these rows only)
        owner: dict[str, str] = {}
        for ph, chunk in in_chunks(sorted({r["first_parent"] for r in out if r["first_parent"]})):
            for row in await self._fetch(
                f"SELECT checkpoint_id, thread_id FROM checkpoints WHERE checkpoint_id IN ({ph})", *chunk
            ):
                owner[row["checkpoint_id"]] = row["thread_id"]
        for r in out:
            r["parent_thread"] = owner.get(r["first_parent"]) if r["first_parent"] else None
        return to_summaries(out)

    # ---- search and streaming -----------------------------------------------------

    @abstractmethod
    def _search_condition(self, text: str, columns: Sequence[str] = SEARCH_COLUMNS) -> tuple[str, list[Any]]:
        """A SQL condition that keeps every row whose `columns` (of messages_blob,
        tools_blob, state_blob) contain `text` (it may keep more; Python then checks)."""

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        if not text:
            raise UsageError("search text is empty")
        chosen = check_search_places(places)
        if role is not None:  # a role is a message's: tool results and state have none
            chosen &= {"messages"}
        if not chosen:
            self.last_search_path = "scan"
            return []
        self.last_search_note = ""
        if not scan:
            self._index_route = "fts"
            found = await self._indexed_search(text, thread_id, role, limit, chosen)
            if found is not None:
                self.last_search_path = self._index_route
                return found
        self.last_search_path = "scan"
        cond, params = self._search_condition(text, [_PLACE_COLUMN[p] for p in SEARCH_PLACES if p in chosen])
        if thread_id is not None:
            cond += " AND thread_id = ?"
            params.append(thread_id)
        state_column = "state_blob" if "state" in chosen else "NULL AS state_blob"
        hits: list[SearchHit] = []
        offset = 0
        # The first page asks for as many rows as hits are wanted: most matching rows are
        # hits, and Postgres then walks idx_created_at newest first and stops (asked for
        # more rows than it expects to match, it scans the whole table and sorts).
        page = max(1, min(limit, 5000))
        while len(hits) < limit:
            rows = await self._fetch(
                f"SELECT {META_COLUMNS}, messages_blob, tools_blob, {state_column} FROM checkpoints "
                f"WHERE {cond} ORDER BY created_at DESC, id DESC LIMIT {page} OFFSET ?",
                *params,
                offset,
            )
            page = 200
            if not rows:
                break
            offset += len(rows)
            hits.extend(match_rows(rows, text, role, chosen))
        return hits[:limit]

    async def _indexed_search(
        self,
        text: str,
        thread_id: str | None,
        role: str | None,
        limit: int,
        places: frozenset[str] = frozenset(SEARCH_PLACES),
    ) -> list[SearchHit] | None:
        """The hits through a full-text index, or None where there is none (scan then)."""
        return None

    async def all_thread_ids(self) -> list[str]:
        rows = await self._fetch(
            f"SELECT DISTINCT thread_id{self.COLLATE} AS thread_id FROM checkpoints ORDER BY 1"
        )
        return [r["thread_id"] for r in rows]

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        threads = list(thread_ids) if thread_ids is not None else await self.all_thread_ids()
        for thread in threads:
            bases: dict[str, Checkpoint] = {}  # delta rows' bases, per thread
            for offset in itertools.count(0, batch):
                rows = await self._fetch(
                    f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE thread_id = ? "
                    f"ORDER BY {THREAD_ORDER_ASC} LIMIT ? OFFSET ?",
                    thread,
                    batch,
                    offset,
                )
                for r in rows:
                    try:
                        yield await complete_checkpoint(self, row_to_checkpoint(r), bases)
                    except CorruptRowError as exc:
                        yield exc
                if len(rows) < batch:
                    break

    async def lineage(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        # The rows the line goes through, a thread at a time (its metadata: the cheapest
        # read per row) where the thread is not much longer than the line can be (its
        # step), else one recursive query from there; their order is the parent links',
        # followed in Python.
        rows: dict[str, Sequence[Any]] = {}
        line: list[Sequence[Any]] = []
        seen: set[str] = set()
        cur: str | None = checkpoint_id
        while cur and cur not in seen:
            row = rows.get(cur)
            if row is None:
                rows = {**{r[1]: r for r in await self._line_rows(cur)}, **rows}
                row = rows.get(cur)
                if row is None:  # a pruned parent ends the line
                    break
            seen.add(cur)
            line.append(row)
            cur = row[2]
        line.reverse()
        by_id: dict[str, CheckpointMetadata] = {}
        per_thread: dict[str, list[Sequence[Any]]] = {}
        for r in line:
            per_thread.setdefault(r[0], []).append(r[1:])
        for thread, group in per_thread.items():
            by_id.update((m.checkpoint_id, m) for m in metadata_rows(thread, group))
        return [by_id[r[1]] for r in line]

    async def _locate(self, checkpoint_id: str) -> Sequence[Any] | None:
        """(thread_id, step, the thread's row count) of a checkpoint, or None."""
        found = await self._fetch_tuples(
            "SELECT thread_id, step, (SELECT COUNT(*) FROM checkpoints t WHERE t.thread_id = c.thread_id) "
            "FROM checkpoints c WHERE checkpoint_id = ?",
            checkpoint_id,
        )
        return found[0] if found else None

    async def _line_rows(
        self, checkpoint_id: str, texts: bool = False, found: Sequence[Any] | None = None
    ) -> list[Sequence[Any]]:
        """Rows (thread_id, THREAD_ROW_COLUMNS...) holding the checkpoint and at least
        the part of its line in its thread: the whole thread, or the line to its root.
        With `texts`: rows (checkpoint_id, parent_id, thread_id, messages_blob,
        state_blob) instead. `found`: the checkpoint's `_locate`, when known."""
        if found is None:
            found = await self._locate(checkpoint_id)
            if found is None:
                return []
        thread, step, n = found
        if texts:
            columns = "c.checkpoint_id, c.parent_id, c.thread_id, " + await self._content_columns("c.")
        else:
            columns = "c.thread_id, " + ", ".join("c." + col for col in THREAD_ROW_COLUMNS.split(", "))
        if n <= 4 * (max(int(step), 0) + 1) + 1000:
            return await self._fetch_tuples(
                f"SELECT {columns} FROM checkpoints c WHERE c.thread_id = ?", thread
            )
        # UNION: a cycle ends where it repeats
        return await self._fetch_tuples(
            "WITH RECURSIVE line(cid) AS (SELECT CAST(? AS TEXT) UNION "
            "SELECT c.parent_id FROM checkpoints c JOIN line ON c.checkpoint_id = line.cid "
            "WHERE c.parent_id IS NOT NULL AND c.parent_id <> '') "
            f"SELECT {columns} FROM checkpoints c JOIN line ON c.checkpoint_id = line.cid",
            checkpoint_id,
        )

    async def run_lines(self, checkpoint_ids: Sequence[str]) -> tuple[list[list[str]], dict[str, Content]]:
        # Runs that start in threads of their own (two runs in separate threads, the
        # usual compare of a re-run): each thread's line and texts in one read, the rows
        # of another thread the lines go through (a branch's source) by their metadata and
        # their texts by id where wanted. Runs that start in one thread share most of it:
        # the default (the lines first, then the texts after the fork point only).
        from agentctl.errors import CheckpointNotFound

        starts = []
        for cid in checkpoint_ids:
            found = await self._locate(cid)
            if found is None:
                raise CheckpointNotFound(cid)
            starts.append(found)
        if len({f[0] for f in starts}) < len(starts):
            return await Store.run_lines(cast(Store, self), checkpoint_ids)
        # id -> (id, parent, thread, messages, state), or (id, parent, thread) read by metadata
        rows: dict[str, Sequence[Any]] = {}
        for cid, found in zip(checkpoint_ids, starts, strict=False):
            if cid not in rows:
                rows = {**{r[0]: r for r in await self._line_rows(cid, True, found)}, **rows}
        lines: list[list[str]] = []
        for cid in checkpoint_ids:
            line: list[str] = []
            seen: set[str] = set()
            cur: str | None = cid
            while cur and cur not in seen:  # a cycle: the line ends where it repeats
                row = rows.get(cur)
                if row is None:
                    rows = {**{r[1]: (r[1], r[2], r[0]) for r in await self._line_rows(cur)}, **rows}
                    row = rows.get(cur)
                    if row is None:  # a pruned parent ends the line
                        break
                seen.add(cur)
                line.append(cur)
                cur = row[1]
            line.reverse()
            lines.append(line)
        wanted = list(dict.fromkeys(cid for line in lines for cid in line))
        texts: list[Sequence[Any]] = []
        by_id: list[tuple[str, str]] = []
        for cid in wanted:
            row = rows[cid]
            if len(row) == 5:
                texts.append(row)
            else:
                by_id.append((row[2], cid))
        pages = [texts]
        if by_id:
            pages.extend(await self._content_rows(by_id, [cid for _, cid in by_id]))
        return lines, await self._contents_of(wanted, pages)

    async def read_contents(self, metas: Sequence[CheckpointMetadata]) -> dict[str, Content]:
        ids = list(dict.fromkeys(m.checkpoint_id for m in metas))
        return await self._contents_of(
            ids, await self._content_rows([(m.thread_id, m.checkpoint_id) for m in metas], ids)
        )

    async def _contents_of(
        self, ids: list[str], pages: list[list[Any]] | list[list[Sequence[Any]]]
    ) -> dict[str, Content]:
        """The contents of `ids` from pages of rows (checkpoint_id, ..., messages_blob,
        state_blob) holding them (and maybe others). Only the two columns, undecoded: equal
        texts are equal contents (the key), and a checkpoint is decoded only when
        compared with one whose texts differ. A delta row's texts are patches against
        its base: it is read whole and resolved."""
        from agentctl.errors import CheckpointNotFound

        out: dict[str, Content] = {}
        deltas: list[str] = []
        marker = '"' + DELTA_MARKER + '"'
        markers: dict[type, Any] = {str: marker, bytes: marker.encode()}
        wanted = set(ids)
        for rows in pages:
            for row in rows:
                cid, messages, state = row[0], row[-2], row[-1]
                if cid not in wanted or cid in out:  # a thread read whole holds others
                    continue
                kind = type(state)
                if kind not in markers or type(messages) is not kind:
                    out[cid] = Content(value=_decode_content(cid, messages, state))
                elif markers[kind] in state:
                    deltas.append(cid)
                else:
                    out[cid] = _StoredTexts(cid, messages, state)
        bases: dict[str, Checkpoint] = {}
        for cid in deltas:
            full = await self._fetch(f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", cid)
            if full:
                cp = await complete_checkpoint(self, row_to_checkpoint(full[0]), bases)
                out[cid] = Content(value=(cp.messages, cp.state))
        missing = [cid for cid in ids if cid not in out]
        if missing:
            raise CheckpointNotFound(missing[0])
        return out

    async def _content_rows(self, where: Sequence[tuple[str, str]], ids: list[str]) -> list[list[Any]]:
        """Pages of (checkpoint_id, messages_blob, state_blob) holding at least `ids`
        (`where`: their (thread_id, checkpoint_id)): a thread whole where most of its
        rows are wanted (one scan of its rows), the others by id."""
        per_thread: dict[str, int] = {}
        for thread, _ in where:
            per_thread[thread] = per_thread.get(thread, 0) + 1
        pages: list[list[Any]] = []
        whole: set[str] = set()
        columns = await self._content_columns()
        for thread, n in per_thread.items():
            if n >= 500 and await self.count(thread) <= 2 * n:
                whole.add(thread)
                pages.append(
                    await self._fetch_tuples(
                        f"SELECT checkpoint_id, {columns} FROM checkpoints WHERE thread_id = ?", thread
                    )
                )
        rest = [cid for thread, cid in where if thread not in whole] if whole else ids
        for ph, chunk in in_chunks(dict.fromkeys(rest)):
            pages.append(
                await self._fetch_tuples(
                    f"SELECT checkpoint_id, {columns} FROM checkpoints WHERE checkpoint_id IN ({ph})", *chunk
                )
            )
        return pages

    async def _content_columns(self, table: str = "") -> str:
        """The messages and state columns as `read_contents` reads them (SQL)."""
        return f"{table}messages_blob, {table}state_blob"

    async def iter_metadata(self, batch: int = 5000) -> AsyncIterator[CheckpointMetadata]:
        for thread in await self.all_thread_ids():
            for offset in itertools.count(0, batch):
                page = await self.read_thread(thread, batch, offset)
                for meta in page:
                    yield meta
                if len(page) < batch:
                    break

    # ---- health -------------------------------------------------------------------

    # The dialect's SQL of the health reads: the bytes a text column takes as UTF-8 ({}:
    # the column); rows of tag, n; rows of checkpoint_id, ok (parses), t (its JSON type)
    # whose column {c} does not hold JSON of the kind given ("array" or "object").
    BYTES_OF: str
    TAG_COUNTS: str
    INVALID_JSON: str

    async def stats(self) -> dict[str, Any]:
        size = " + ".join(
            self.BYTES_OF.format(c)
            for c in ("messages_blob", "state_blob", "tools_blob", "tags", "summary", "next_node")
        )
        per = await self._fetch(
            f"SELECT thread_id, COUNT(*) AS n, SUM({size}) AS bytes FROM checkpoints "
            f"GROUP BY thread_id ORDER BY bytes DESC, thread_id{self.COLLATE}"
        )
        tags = await self._fetch(self.TAG_COUNTS)
        return {
            "threads": len(per),
            "checkpoints": sum(r["n"] for r in per),
            "bytes": sum(r["bytes"] or 0 for r in per),
            "per_thread": [
                {"thread_id": r["thread_id"], "checkpoints": r["n"], "bytes": r["bytes"] or 0} for r in per
            ],
            "tags": {str(r["tag"]): r["n"] for r in tags},
        }

    JSON_COLUMNS = (
        ("messages_blob", "array"),
        ("state_blob", "object"),
        ("tools_blob", "object"),
        ("tags", "array"),
    )

    async def invalid_json(self, limit: int = 100) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for column, kind in self.JSON_COLUMNS:
            for r in await self._fetch(self.INVALID_JSON.format(c=column), kind, limit):
                reason = (
                    f"JSON {sql_json_type_name(str(r['t']))} where an {kind} is expected"
                    if r["ok"]
                    else "invalid JSON"
                )
                out.append({"checkpoint_id": r["checkpoint_id"], "column": column, "reason": reason})
        return out[:limit]

    async def duplicate_steps(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self._fetch(
            "SELECT thread_id, step, COUNT(*) AS n FROM checkpoints GROUP BY thread_id, step "
            f"HAVING COUNT(*) > 1 ORDER BY thread_id{self.COLLATE}, step LIMIT ?",
            limit,
        )
        return [{"thread_id": r["thread_id"], "step": r["step"], "count": r["n"]} for r in rows]

    async def orphan_parents(self, limit: int = 100) -> list[dict[str, Any]]:
        rows = await self._fetch(
            "SELECT c.thread_id, c.checkpoint_id, c.parent_id FROM checkpoints c "
            "WHERE c.parent_id IS NOT NULL AND c.parent_id <> '' AND NOT EXISTS "
            "(SELECT 1 FROM checkpoints p WHERE p.checkpoint_id = c.parent_id) "
            f"ORDER BY c.thread_id{self.COLLATE}, c.step, c.id LIMIT ?",
            limit,
        )
        return [
            {"thread_id": r["thread_id"], "checkpoint_id": r["checkpoint_id"], "parent_id": r["parent_id"]}
            for r in rows
        ]


def check_sort(sort: str) -> None:
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(SORTS)}")


def match_rows(rows: Sequence[Any], text: str, role: str | None, chosen: Any) -> list[SearchHit]:
    """The search's hits in rows ({META_COLUMNS}, messages_blob, tools_blob, state_blob):
    the one match rule of the scan and of the side index's candidates."""
    hits: list[SearchHit] = []
    for r in rows:
        meta = row_to_metadata(r)
        msgs = decode_or(meta.checkpoint_id, "messages_blob", r["messages_blob"], list)
        tools = decode_or(meta.checkpoint_id, "tools_blob", r["tools_blob"], dict)
        state = (
            decode_or(meta.checkpoint_id, "state_blob", r["state_blob"], dict) if "state" in chosen else None
        )
        if isinstance(state, dict) and DELTA_MARKER in state:
            state = None  # a delta row's state holds patches: not searched, like its placeholder messages
        hits.extend(search_messages(meta, msgs, tools, text, role, state, chosen))
    return hits


def decode_or(checkpoint_id: str, column: str, raw: Any, kind: type) -> Any:
    """The decoded column, or an empty value of its kind when it cannot be decoded."""
    try:
        return decode_column(checkpoint_id, column, raw, kind)
    except CorruptRowError:
        return kind()


def to_summaries(rows: Sequence[Mapping[str, Any]]) -> list[ThreadSummary]:
    out = []
    for r in rows:
        parent_thread = r["parent_thread"]
        branch_of = parent_thread if parent_thread and parent_thread != r["thread_id"] else None
        out.append(
            ThreadSummary(
                thread_id=r["thread_id"],
                checkpoints=r["n"],
                head_step=r["h_step"],
                head_checkpoint_id=r["h_id"],
                updated_at=r["h_created_at"],
                head_summary=r["h_summary"] or "",
                first_created_at=r["first_created_at"],
                branch_of=branch_of,
                branch_point=r["first_parent"] if branch_of else None,
            )
        )
    return out
