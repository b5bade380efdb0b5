"""What the stores of other programs' tables share (LangGraph's savers, the OpenAI Agents
SDK's and Google ADK's sessions): `connection(kind, target, check)`, a connection of the
shared layer (agentctl.storage.sql: read-only SQLite (`mode=ro`) or read-only Postgres
sessions (`default_transaction_read_only`), error mapping, `query(sql, *params)` with `?`
placeholders on both dialects and `transaction()`), and `ConnectedStore`, a Store on one.

`check(tables)` gets {table: {columns}} of the database (its current schemas on
Postgres) and raises SchemaError when the format cannot read it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentctl.storage.contract import Capability, Problem, Store, check_search_places
from agentctl.storage.sql.conn import Check, Connection
from agentctl.storage.sqlutil import like_escape  # (ADK's store imports it from here too)

if TYPE_CHECKING:
    from agentctl.model import CheckpointMetadata


def connection(kind: str, target: str, check: Check, *, readonly: bool = True, **kwargs: Any) -> Any:
    """A connection (not connected) to the database whose schema `check` accepts; on
    Postgres one that gives way to the framework's own writers (`yields_to_writers`)."""
    if kind == "postgres":
        from agentctl.storage.sql.postgres import PostgresConnection

        pg = PostgresConnection(target, readonly=readonly, create=False, check=check, **kwargs)
        pg.yields_to_writers = True  # the framework's own service writes these tables
        return pg
    from agentctl.storage.sql.sqlite import SQLiteConnection

    return SQLiteConnection(target, readonly=readonly, create=False, check=check, **kwargs)


async def non_json_numbers(
    db: Any, kind: str, table: str, column: str, key: str, limit: int = 100
) -> list[tuple[dict[str, Any], str]]:
    """(row, why) for rows of `table` whose JSON text `column` holds NaN or Infinity,
    which Python's json writes and reads but JSON (RFC 8259) has not: `show --json` and
    `export` show them as a placeholder. `key`: the columns that name a row. Candidates
    are rows whose text has the words (SQLite: and that json_valid refuses; Postgres'
    json and jsonb cannot hold them), each confirmed by decoding it."""
    from agentctl import deep

    text = f"CAST({column} AS TEXT)"
    where = (
        f"{column} IS NOT NULL AND (instr({text}, 'NaN') OR instr({text}, 'Infinity')) "
        f"AND NOT json_valid({text})"
        if kind == "sqlite"
        else f"{column} IS NOT NULL AND ({text} LIKE '%NaN%' OR {text} LIKE '%Infinity%')"
    )
    out: list[tuple[dict[str, Any], str]] = []
    page, offset = 500, 0
    while len(out) < limit:
        rows = await db.query(
            f"SELECT {key}, {text} AS agentctl_json FROM {table} WHERE {where} "
            f"ORDER BY {key} LIMIT ? OFFSET ?",
            page,
            offset,
        )
        for r in rows:
            why = deep.non_json_number(r.pop("agentctl_json"))
            if why is not None:
                out.append((r, why))
        if len(rows) < page:
            break
        offset += page
    return out[:limit]


def check_sort(sort: str) -> str:
    from agentctl.errors import UsageError

    if sort not in ("updated", "thread", "checkpoints", "step", "created"):
        raise UsageError(f"unknown sort {sort!r}; use updated, thread, checkpoints, step or created")
    return sort


def one_line(text: Any, width: int = 80) -> str:
    text = str(text or "")
    if len(text) > 64 * width:  # a 50 MB text: split only what can show
        text = text[: 64 * width]
    s = " ".join(text.split())
    return s if len(s) <= width else s[: width - 1] + "…"


def prefix_range(column: str, prefix: str, params: list[Any]) -> str:
    """A condition "`column` starts with `prefix`" that an index on the column can serve
    (a range in code point order, as SQLite's BINARY and Postgres' "C" collations
    compare), with the exact test too; appends its parameters."""
    last = prefix[-1]
    if ord(last) < 0x10FFFF and not 0xD7FF <= ord(last) < 0xE000:
        params.extend([prefix, prefix[:-1] + chr(ord(last) + 1), len(prefix), prefix])
        return f"{column} >= ? AND {column} < ? AND substr({column}, 1, ?) = ?"
    params.extend([len(prefix), prefix])
    return f"substr({column}, 1, ?) = ?"


class ConnectedStore(Store):
    """A Store whose connection is `self._db` (one of `connection`'s, also its public
    `connection`): it opens and closes with it."""

    _db: Any

    @property
    def connection(self) -> Connection:
        """The store's connection (agentctl.storage.sql): what its History writes through."""
        return self._db

    #: the rows a search's scan reads by its first query; each next one reads twice as
    #: many, up to 32 times as many (scan_pages)
    scan_page = 500

    async def connect(self) -> None:
        await self._db.connect()

    async def close(self) -> None:
        await self._db.close()

    async def backup(self, dest: str) -> str:
        self.require(Capability.BACKUP, "backup")
        return await self._db.backup(dest)

    # ---- the side search index (agentctl.storage.textindex), for the SDK formats -------

    #: the checks `doctor --json` lists even when they find nothing
    doctor_checks: tuple[str, ...] = ("search_index",)

    async def doctor(self, limit: int = 100) -> list[Problem]:
        """The side search index's state (SQLite): a warning when it is behind the
        database, an error when it cannot be used."""
        from agentctl.storage.textindex import search_index_problems

        self.require(Capability.DOCTOR, "doctor")
        problems = await search_index_problems(self)
        if self.json_places():
            await self.connect()
        for table, column, key, name in self.json_places():
            for row, why in await non_json_numbers(self._db, self._db.kind, table, column, key, limit):
                problems.append(Problem("error", "invalid_json", name(row), f"{column}: {why}"))
        return problems

    def json_places(self) -> list[tuple[str, str, str, Callable[[dict[str, Any]], str]]]:
        """The format's JSON text columns `doctor` checks for NaN and Infinity: (table,
        column, the key columns of a row, the name of a row from them)."""
        return []

    def text_source(self) -> Any:
        """The format's `textindex.Source` (its rows as index documents)."""
        raise NotImplementedError

    def scan_start(self, places: Sequence[str]) -> frozenset[str] | None:
        """A search by scan begins: the places asked for, or None when none of them is
        one the scan searches (messages, tools: the state is not searched)."""
        self.last_search_path = "scan"
        self.last_search_note = ""
        wanted = check_search_places(places)
        return wanted if wanted & {"messages", "tools"} else None

    def json_text_filter(self, column: str, text: str, where: list[str], params: list[Any]) -> None:
        """Narrow a scan for `text` to the rows whose JSON text `column` holds it as JSON
        writes it (escaped, `json.dumps`), case-insensitively: an ASCII `text` only (a
        non-ASCII one may be stored escaped or not, and casefolds beyond LIKE's reach)."""
        if text.isascii() and text:
            op = "ILIKE" if self.kind == "postgres" else "LIKE"
            where.append(f"{column} {op} ? ESCAPE '!'")
            params.append("%" + like_escape(json.dumps(text)[1:-1]) + "%")

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """The rows of a query (`?` placeholders), as dicts: each format's store has its own."""
        raise NotImplementedError

    async def scan_pages(
        self,
        select: str,
        where: Sequence[str],
        params: Sequence[Any],
        order: str,
        hits: list[Any],
        limit: int,
        take: Callable[[list[dict[str, Any]]], Awaitable[None]],
        *,
        after: Sequence[str] = (),
    ) -> list[Any]:
        """Run a search's scan: `select` with `where` (ANDed; `params` theirs) in `order`,
        a page at a time, each page's rows handed to `take` (which adds its hits to
        `hits`), until `limit` hits or the last page; `hits`. Each page is a query of its
        own (no read lock held between them: a live writer gets in), twice as long as the
        one before up to 32 `scan_page`s (a query without an index in `order` sorts every
        row it has not yet passed: a deep scan in few queries). `after`: columns
        that order the rows (`order` is each of them DESC, in turn; together unique,
        never NULL): a page goes on below the last row's values of them (a row-value
        comparison, which an index in that order answers), not by OFFSET (which reads
        every row before the page again, each page)."""
        last: list[Any] = []
        offset, page = 0, self.scan_page
        while len(hits) < limit:
            conds, args = list(where), list(params)
            if last:
                conds.append(f"({', '.join(after)}) < ({', '.join('?' for _ in after)})")
                args += last
            sql = f"{select}{' WHERE ' + ' AND '.join(conds) if conds else ''} ORDER BY {order} LIMIT ?"
            args.append(page)
            if not after:
                sql += " OFFSET ?"
                args.append(offset)
            rows = await self._q(sql, *args)
            await take(rows)
            if len(rows) < page:
                break
            offset += page
            page = min(page * 2, self.scan_page * 32)
            last = [rows[-1][c] for c in after]
        return hits

    async def open_side_index(self) -> Any:
        """The side index opened (and caught up) for a search, or None: none there, or
        it cannot be used (then `last_search_note` says why; the caller scans)."""
        from agentctl.storage import textindex

        await self.connect()
        session, note = await textindex.open_side(self._db.path, self.text_source())
        if note:
            self.last_search_note = note
        return session


class SteppedStore(ConnectedStore):
    """A ConnectedStore whose checkpoints are the numbered steps of a thread, found by
    id with `_locate(id)` -> (the thread's key, step) or None and read by `_page(key,
    first, last)` -> those steps' metadata (Agno's runs, ADK's events)."""

    async def _locate(self, checkpoint_id: str) -> tuple[Any, int] | None:
        raise NotImplementedError

    async def _page(self, key: Any, first: int, last: int) -> list[CheckpointMetadata]:
        raise NotImplementedError

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        found = await self._locate(checkpoint_id)
        if found is None:
            return None
        metas = await self._page(found[0], found[1], found[1])
        return metas[0] if metas else None
