"""The backend contract: one async ABC that every storage implements.

`CheckpointBackend` keeps the seven methods of the original AgentOS ABC (`put`, `get`,
`get_latest`, `list_threads`, `list_checkpoints`, `delete_thread`, `delete_before`) with
their signatures, and adds what a debugger needs. Every method returns the model's
dataclasses (never driver rows) and raises `agentctl.errors.AgentctlError` subclasses
for problems the user can act on.

Ordering is the same on every backend:
- within a thread: by `step`, then `created_at`, then the row `id` (the head of a thread
  is the last row in that order);
- threads (`list_threads`, `thread_summaries` by default): by their head's `created_at`,
  newest first, then by `thread_id` (byte order).

A repeated `put` of an existing `checkpoint_id` updates every column of that row in place
(its row `id` stays), on every backend.

Writes: every public write method is one transaction. `transaction()` gives the engine a
transaction (with a per-thread lock on Postgres, `BEGIN IMMEDIATE` on SQLite) in which it
runs several statements written once with `?` placeholders. `query()` and `table_exists()`
let the engine read its side tables (`agentctl_*`, see agentctl/engine/oplog.py) without writing;
`vacuum()` frees the space of what the engine purged.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from abc import ABC, abstractmethod
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Generator, Iterable, Mapping, Sequence, Union

from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.contract import SEARCH_PLACES, FormatSpec, Store
from agentctl.storage.sqlutil import in_chunks

try:  # orjson parses several times faster; the stdlib is the fallback and the reference.
    import orjson as _orjson

    def _fast_loads(text: str | bytes) -> Any:
        return _orjson.loads(text)

except ImportError:  # pragma: no cover - orjson is optional
    _fast_loads: Callable[[str | bytes], Any] = json.loads  # type: ignore[no-redef]  # the fallback of the def above

# The format's columns (docs/formats/agentos.md) in table order, without the row id, with
# their definitions; {ts}, {ts_default} and {json} are the dialect's (DIALECTS).
COLUMN_DEFS = (
    ("thread_id", "TEXT NOT NULL"),
    ("checkpoint_id", "TEXT NOT NULL UNIQUE"),
    ("parent_id", "TEXT"),
    ("step", "INTEGER NOT NULL"),
    ("created_at", "{ts} NOT NULL{ts_default}"),
    ("tags", "{json} NOT NULL DEFAULT '[]'"),
    ("summary", "TEXT NOT NULL DEFAULT ''"),
    ("messages_blob", "{json} NOT NULL DEFAULT '[]'"),
    ("state_blob", "{json} NOT NULL DEFAULT '{{}}'"),
    ("tools_blob", "{json} NOT NULL DEFAULT '{{}}'"),
    ("next_node", "TEXT NOT NULL DEFAULT ''"),
)
COLUMNS = tuple(name for name, _ in COLUMN_DEFS)
META_COLUMNS = "id, thread_id, checkpoint_id, parent_id, step, created_at, tags, summary"
ALL_COLUMNS = "id, " + ", ".join(COLUMNS)

# Order of rows within a thread, as SQL (both dialects), ascending and descending.
THREAD_ORDER_ASC = "step ASC, created_at ASC, id ASC"
THREAD_ORDER_DESC = "step DESC, created_at DESC, id DESC"

THREAD_SORTS = ("updated", "thread", "checkpoints", "step", "created")


# What the format's DDL says differently in each dialect: the row id's and the columns'
# types, and the indexes (name, columns). The Postgres variant indexes created_at too.
DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "ts": "TEXT", "ts_default": "", "json": "TEXT"},
    "postgres": {"id": "BIGSERIAL PRIMARY KEY", "ts": "TIMESTAMPTZ", "ts_default": " DEFAULT NOW()",
                 "json": "JSONB"},
}
INDEXES = (
    ("idx_thread_step", "thread_id, step DESC"),
    ("idx_checkpoint_id", "checkpoint_id"),
    ("idx_parent", "parent_id"),
)
DIALECT_INDEXES = {"sqlite": INDEXES, "postgres": INDEXES + (("idx_created_at", "created_at DESC"),)}


def index_sql(name: str, columns: str) -> str:
    return f"CREATE INDEX IF NOT EXISTS {name} ON checkpoints({columns})"


def schema_sql(dialect: str) -> str:
    """The format's table and indexes in `dialect` ("sqlite", "postgres"), a script."""
    types = DIALECTS[dialect]
    columns = [f"id {types['id']}"] + [f"{name} {ddl.format(**types)}" for name, ddl in COLUMN_DEFS]
    return ("\nCREATE TABLE IF NOT EXISTS checkpoints (\n    " + ",\n    ".join(columns) + "\n);\n"
            + "".join(index_sql(name, cols) + ";\n" for name, cols in DIALECT_INDEXES[dialect]))


SQLITE_SCHEMA = schema_sql("sqlite")
POSTGRES_SCHEMA = schema_sql("postgres")

REQUIRED_COLUMNS = ("id",) + COLUMNS


def loads(text: Any) -> Any:
    """Parse a JSON column value. orjson first; the stdlib for what orjson refuses
    (NaN, Infinity, big integers), as the original writer's `json.dumps` can write them."""
    if text is None:
        raise ValueError("NULL")
    if not isinstance(text, (str, bytes)):
        return text
    if len(text) >= _BIG_JSON and gc.isenabled():
        # A multi-megabyte value builds hundreds of thousands of containers, and the
        # cyclic GC runs over and over while they appear (a third of the time for a 5 MB
        # state); none of them can be garbage yet.
        gc.disable()
        try:
            return _parse(text)
        finally:
            gc.enable()
    return _parse(text)


_BIG_JSON = 1 << 20
#: for readers that parse small texts themselves (`fast_loads`) and leave big ones to `loads`
BIG_JSON = _BIG_JSON
#: orjson's loads where it is installed (the stdlib's otherwise): NaN, Infinity and big
#: integers raise ValueError (`loads` falls back to the stdlib for them)
fast_loads = _fast_loads


def _parse(text: str | bytes) -> Any:
    try:
        return _fast_loads(text)
    except ValueError:
        return json.loads(text)


def dumps(value: Any) -> str:
    """Serialise as the original writer does (`ensure_ascii=False`)."""
    return json.dumps(value, ensure_ascii=False)


def checkpoint_params(cp: Checkpoint, timestamp: Any,
                      blobs: Sequence[str] | None = None) -> tuple[Any, ...]:
    """The values of COLUMNS for a checkpoint; `timestamp` converts created_at.
    `blobs`: messages, state and tools_result already serialised with `dumps`."""
    meta = cp.metadata
    messages, state, tools = blobs if blobs is not None else (
        dumps(cp.messages), dumps(cp.state), dumps(cp.tools_result))
    return (meta.thread_id, meta.checkpoint_id, meta.parent_checkpoint_id, meta.step,
            timestamp(meta.created_at), dumps(meta.tags), meta.summary,
            messages, state, tools, cp.next_node)


def decode_column(checkpoint_id: str, column: str, raw: Any, kind: type) -> Any:
    from agentctl.text import json_type_name

    try:
        value = loads(raw)
    except ValueError as exc:
        raise CorruptRowError(checkpoint_id, column, f"invalid JSON ({exc})") from None
    if not isinstance(value, kind):
        expected = "an object" if kind is dict else "an array"
        raise CorruptRowError(
            checkpoint_id, column, f"JSON {json_type_name(value)} where {expected} is expected"
        )
    return value


# Delta snapshots (agentctl/engine/delta.py): the marker key of a delta row's state_blob, and
# the prefix of the tag that names its base (dropped from the tags agentctl returns).
DELTA_MARKER = "__agentctl_delta__"
DELTA_TAG = "agentctl-delta:"


def decode_tags_raw(raw: Any) -> list[str]:
    """Tags are shown, not trusted: unreadable tags read as [] (`doctor` reports them)."""
    try:
        value = loads(raw)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, str) else json.dumps(v) for v in value]


def decode_tags(raw: Any) -> list[str]:
    """The tags of a row as agentctl returns them (without a delta row's base tag)."""
    tags = decode_tags_raw(raw)
    if any(t.startswith(DELTA_TAG) for t in tags):
        return [t for t in tags if not t.startswith(DELTA_TAG)]
    return tags


async def complete_checkpoint(reader: RowReads, cp: Checkpoint, cache: dict | None = None) -> Checkpoint:
    """The full checkpoint of a row: a delta row (agentctl/engine/delta.py) is resolved."""
    marker = cp.state.get(DELTA_MARKER) if isinstance(cp.state, dict) else None
    if not isinstance(marker, dict):
        return cp
    from agentctl.engine.delta import resolve

    return await resolve(reader, cp, cache)


def row_to_metadata(row: Any, created_at: str | None = None) -> CheckpointMetadata:
    return CheckpointMetadata(
        thread_id=row["thread_id"],
        checkpoint_id=row["checkpoint_id"],
        parent_checkpoint_id=row["parent_id"],
        step=row["step"],
        created_at=created_at if created_at is not None else row["created_at"],
        tags=decode_tags(row["tags"]),
        summary=row["summary"] if row["summary"] is not None else "",
    )


# The columns of a thread's rows read as tuples (`metadata_rows`): META_COLUMNS without
# the row id and the thread (known), each a Python object per row less.
THREAD_ROW_COLUMNS = "checkpoint_id, parent_id, step, created_at, tags, summary"


def metadata_rows(thread_id: str, rows: Iterable[Sequence[Any]]) -> list[CheckpointMetadata]:
    """CheckpointMetadata of a thread's rows given as tuples of THREAD_ROW_COLUMNS: what
    `row_to_metadata` makes of each, for thousands of rows at a time (positional
    fields; the tags of equal `tags` texts decoded once, each row getting its own list)."""
    tags_of: dict[Any, list[str]] = {}
    out: list[CheckpointMetadata] = []
    append = out.append
    meta = CheckpointMetadata
    for checkpoint_id, parent_id, step, created_at, raw_tags, summary in rows:
        try:
            tags = tags_of.get(raw_tags)
        except TypeError:  # an unhashable value (a driver's JSON object): not cached
            tags = decode_tags(raw_tags)
        if tags is None:
            tags = tags_of[raw_tags] = decode_tags(raw_tags)
        append(meta(thread_id, checkpoint_id, step, parent_id, created_at, tags.copy(),
                    summary if summary is not None else ""))
    return out


def row_to_checkpoint(row: Any, created_at: str | None = None) -> Checkpoint:
    meta = row_to_metadata(row, created_at)
    cid = meta.checkpoint_id
    return Checkpoint(
        metadata=meta,
        messages=decode_column(cid, "messages_blob", row["messages_blob"], list),
        state=decode_column(cid, "state_blob", row["state_blob"], dict),
        tools_result=decode_column(cid, "tools_blob", row["tools_blob"], dict),
        next_node=row["next_node"] if row["next_node"] is not None else "",
    )


def snippet_around(text: str, needle: str, width: int = 60) -> str:
    """A one-line excerpt of `text` around the first case-insensitive match of `needle`
    (up to `width` characters on each side of it)."""
    flat = " ".join(text.split())
    pos = flat.lower().find(needle.lower())
    if pos < 0:
        return flat[: width * 2]
    start = max(0, pos - width)
    end = min(len(flat), pos + len(needle) + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


_KEY_HIT = object()


def json_hit_tokens(value: Any, needle: str) -> list[Any] | None:
    """Where `needle` (lower case) first occurs in a JSON value, in document order: the
    tokens (keys, indexes) of the first leaf whose text, or of the value under the
    first key whose name, contains it; [] when only the serialised whole does (a match
    across a key and its value), None when not even that. Iterative (deep values)."""
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        v, tokens = stack.pop()
        if isinstance(v, dict):
            children = []
            for k, x in v.items():
                if needle in str(k).lower():
                    children.append((_KEY_HIT, tokens + [k]))  # a key: the path of its value
                    break
                children.append((x, tokens + [k]))
            stack.extend(reversed(children))
        elif isinstance(v, list):
            stack.extend(reversed([(x, tokens + [i]) for i, x in enumerate(v)]))
        elif v is _KEY_HIT:
            return tokens
        else:
            text = v if isinstance(v, str) else dumps(v)
            if needle in text.lower():
                return tokens
    return [] if needle in dumps(value).lower() else None


def hit_path(place: str, tokens: Sequence[Any]) -> str:
    """A hit's path as `diff` writes paths: state.trip.city, messages[3].content."""
    from agentctl.diff import format_path, join_pointer

    return format_path(join_pointer([place, *tokens]))


def search_json(meta: CheckpointMetadata, where: str, value: Any, text: str) -> SearchHit | None:
    """The hit of `text` in the tool results or the state of a checkpoint, or None: the
    snippet from the whole value, the path to the first leaf (or key) that has it."""
    if not isinstance(value, dict) or not value:
        return None
    needle = text.lower()
    tokens = json_hit_tokens(value, needle)
    if tokens is None:
        return None
    return SearchHit(meta.thread_id, meta.checkpoint_id, meta.step, where, None,
                     snippet_around(dumps(value), text), hit_path(where, tokens))


def search_messages(
    cp_meta: CheckpointMetadata, messages: Any, tools: Any, text: str, role: str | None,
    state: Any = None, places: Any = ("messages", "tools", "state"),
) -> list[SearchHit]:
    """Find `text` (case-insensitive) in a checkpoint's messages, tool results and
    state (of `places`; with a `role`, in the messages only)."""
    hits: list[SearchHit] = []
    needle = text.lower()
    if isinstance(messages, list) and "messages" in places:
        # The newest matching message is the hit's own (the earlier ones are history
        # the checkpoint carries, and hits of the earlier checkpoints).
        for i in range(len(messages) - 1, -1, -1):
            msg = messages[i]
            if not isinstance(msg, dict):
                continue
            msg_role = msg.get("role")
            if role is not None and msg_role != role:
                continue
            content = msg.get("content", "")
            body = content if isinstance(content, str) else dumps(content)
            if needle in body.lower():
                hits.append(SearchHit(cp_meta.thread_id, cp_meta.checkpoint_id, cp_meta.step,
                                      "messages", msg_role if isinstance(msg_role, str) else None,
                                      snippet_around(body, text), hit_path("messages", [i, "content"])))
                break
    if role is None and "tools" in places:
        hit = search_json(cp_meta, "tools_result", tools, text)
        if hit is not None:
            hits.append(hit)
    if role is None and "state" in places and not (isinstance(state, dict) and DELTA_MARKER in state):
        # (a delta row's state holds patches: not searched, like its placeholder messages)
        hit = search_json(cp_meta, "state", state, text)
        if hit is not None:
            hits.append(hit)
    return hits


# A row as a backend's driver gives it: a mapping by column name, or SQLite's Row
# (indexable by column name, not a Mapping to the type checker).
Row = Union[Mapping[str, Any], sqlite3.Row]


class RowReads:
    """Reads of single rows, usable on a backend and inside a transaction."""

    COLLATE = ""

    @abstractmethod
    async def _fetch(self, sql: str, *params: Any) -> Sequence[Row]:
        """Rows as mappings by column name, created_at as an ISO string."""

    async def _fetch_tuples(self, sql: str, *params: Any) -> list[Sequence[Any]]:
        """Rows as tuples in the order of the selected columns (for many rows: cheaper
        than mappings); created_at as an ISO string."""
        return [tuple(r.values()) if isinstance(r, Mapping) else tuple(r)
                for r in await self._fetch(sql, *params)]

    async def _fetchval(self, sql: str, *params: Any) -> Any:
        rows = await self._fetch(sql, *params)
        if not rows:
            return None
        return next(iter(dict(rows[0]).values()))

    async def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Run a read-only query written with `?` placeholders (both dialects); rows as
        dicts by column name, created_at as an ISO string. For the engine's reads of
        its side tables and of what a write will do; it never writes."""
        return [dict(r) for r in await self._fetch(sql, *params)]

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        rows = await self._fetch(
            f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id)
        return await complete_checkpoint(self, row_to_checkpoint(rows[0])) if rows else None

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        rows = await self._fetch(
            f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE thread_id = ? "
            f"ORDER BY {THREAD_ORDER_DESC} LIMIT 1", thread_id)
        return await complete_checkpoint(self, row_to_checkpoint(rows[0])) if rows else None

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        rows = await self._fetch(
            f"SELECT {META_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id)
        return row_to_metadata(rows[0]) if rows else None

    async def max_step(self, thread_id: str) -> int | None:
        return await self._fetchval(
            "SELECT MAX(step) AS m FROM checkpoints WHERE thread_id = ?", thread_id)

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        return metadata_rows(thread_id, await self._thread_rows(thread_id, limit, offset, descending))

    async def read_thread_forks(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> tuple[list[CheckpointMetadata], list[str]]:
        """read_thread, and the ids of those checkpoints that have children in other
        threads (forks), found while the rows are read: an idx_parent probe per row,
        whose child is mostly the next step, a row just read."""
        rows = await self._thread_rows(thread_id, limit, offset, descending, FORKED)
        forks = [r[0] for r in rows if r[6]]
        return metadata_rows(thread_id, [r[:6] for r in rows]), forks

    async def _thread_rows(self, thread_id: str, limit: int, offset: int, descending: bool,
                           extra: str = "") -> list[Sequence[Any]]:
        """A page of a thread's rows (table `t`) as tuples of THREAD_ROW_COLUMNS, then
        the `extra` columns."""
        order = THREAD_ORDER_DESC if descending else THREAD_ORDER_ASC
        return await self._fetch_tuples(
            f"SELECT {THREAD_ROW_COLUMNS}{extra} FROM checkpoints t WHERE thread_id = ? "
            f"ORDER BY {order} LIMIT ? OFFSET ?", thread_id, limit, offset)


# An extra column of _thread_rows: 1 if the row has a child in another thread, else 0.
FORKED = (", CASE WHEN EXISTS (SELECT 1 FROM checkpoints k WHERE k.parent_id = t.checkpoint_id "
          "AND k.thread_id <> t.thread_id) THEN 1 ELSE 0 END")


# ---- a write given as steps ------------------------------------------------------------
# SQLiteCheckpointer.write_steps runs a write given as a generator of steps whole on its
# connection's thread. The generator yields
#   ("fetch", sql, params)     -> its rows, as dicts
#   ("execute", sql, params)   -> the number of rows changed
#   ("put", checkpoint, blobs) -> the checkpoint id (blobs: see checkpoint_params)
# and returns the write's result.
WriteSteps = Generator[tuple, Any, Any]


class Transaction(RowReads, ABC):
    """One open write transaction. Statements use `?` placeholders on every backend."""

    kind: str  # "sqlite" or "postgres"

    @abstractmethod
    async def execute(self, sql: str, *params: Any) -> int:
        """Run a statement; return the number of rows it changed."""

    @abstractmethod
    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run a statement once per parameter row."""

    @abstractmethod
    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Run a query; return its rows as dicts (created_at as the ISO string)."""

    async def _fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return await self.fetch(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        return await self._fetchval(sql, *params)

    @abstractmethod
    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        """Upsert one checkpoint inside this transaction (`blobs`: see checkpoint_params)."""

    @abstractmethod
    def timestamp(self, iso: str) -> Any:
        """The parameter value for a `created_at` given as an ISO string."""

    @abstractmethod
    async def table_exists(self, name: str) -> bool:
        """Whether a table of this name exists (in the current schema)."""


class CheckpointBackend(Store):
    """Storage for checkpoints: the store of the AgentOS format. Use as
    `async with backend:` or call `close()`.

    Implementations: `agentctl.backends.sqlite.SQLiteCheckpointer`,
    `agentctl.backends.postgres.PostgresCheckpointer`.
    """

    kind: str = ""
    #: a display name of the database, safe to print (no password)
    display_name: str = ""

    if TYPE_CHECKING:
        # Supplied by the mix-in every implementation puts first, SharedQueries (a
        # RowReads): declared here for the type checker only.
        COLLATE: str

        async def _fetch(self, sql: str, *params: Any) -> Sequence[Row]: ...

        async def query(self, sql: str, *params: Any) -> list[dict[str, Any]]: ...

        async def _fetchval(self, sql: str, *params: Any) -> Any: ...

        async def max_step(self, thread_id: str) -> int | None: ...

    @property
    def format(self) -> FormatSpec:  # type: ignore[override]
        from agentctl.storage.agentos import FORMAT

        return FORMAT

    doctor_checks = ("duplicate_steps", "orphan_parents", "invalid_json", "cycles")

    async def doctor(self, limit: int = 100) -> list[Any]:
        from agentctl.storage import agentos_doctor

        return await agentos_doctor.problems(self, limit)

    async def fix_indexes(self) -> list[str]:
        from agentctl.storage import agentos_doctor

        return await agentos_doctor.fix_indexes(self)

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        """`stats()`: AgentOS checkpoints have no users or sessions to filter by."""
        if user is not None or days is not None:
            from agentctl.storage.contract import Unsupported

            raise Unsupported("agentos", "stats --user/--days (checkpoints have no users)")
        return await self.stats()

    async def existing_checkpoint_ids(self, ids: Sequence[str]) -> set[str]:
        existing: set[str] = set()
        for ph, chunk in in_chunks(ids):
            existing |= {r["checkpoint_id"] for r in await self.query(
                f"SELECT checkpoint_id FROM checkpoints WHERE checkpoint_id IN ({ph})", *chunk)}
        return existing

    async def drop_if_empty(self) -> bool:
        """Drop the checkpoints table if it holds no row (what `import --create` made,
        when the import failed); whether it was dropped."""
        async with self.transaction() as tx:
            if await tx.fetch("SELECT 1 AS x FROM checkpoints LIMIT 1"):
                return False
            await tx.execute("DROP TABLE checkpoints")
            return True

    async def fork_children(self, parent_ids: Sequence[str], thread_id: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for ph, chunk in in_chunks(parent_ids):
            out.extend((r["thread_id"], r["parent_id"]) for r in await self.query(
                f"SELECT thread_id, parent_id FROM checkpoints WHERE parent_id IN ({ph}) AND thread_id <> ? "
                f"ORDER BY thread_id{self.COLLATE}, step, created_at, id", *chunk, thread_id))
        return out

    async def change_token(self, thread_id: str | None) -> tuple[Any, Any]:
        """The highest row id (rows added anywhere) and the thread's size and highest
        row id: index lookups only, in one round trip."""
        if thread_id is None:
            rows = await self.query("SELECT MAX(id) AS top FROM checkpoints")
            return rows[0]["top"], None
        rows = await self.query(
            "SELECT (SELECT MAX(id) FROM checkpoints) AS top, COUNT(*) AS n, MAX(id) AS last "
            "FROM checkpoints WHERE thread_id = ?", thread_id)
        row = rows[0]
        return row["top"], (row["n"], row["last"])

    async def archive_threads(self) -> set[str]:
        from agentctl.engine import oplog

        return await oplog.archive_threads(self)

    def history(self, **options: Any) -> Any:
        """The engine over this backend (the AgentOS format's History); `options` go to
        CheckpointEngine (config, rng, clock)."""
        from agentctl.engine import CheckpointEngine

        return CheckpointEngine(self, **options)

    async def __aenter__(self) -> "CheckpointBackend":
        await self.connect()
        return self

    # ---- the seven methods of the original ABC ------------------------------------

    @abstractmethod
    async def put(self, checkpoint: Checkpoint) -> str:
        """Save a checkpoint (upsert by checkpoint_id); return its checkpoint_id."""

    @abstractmethod
    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with this id, or None. Raises CorruptRowError if it cannot be decoded."""

    @abstractmethod
    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        """The head of a thread (last in step, created_at, id order), or None."""

    @abstractmethod
    async def list_threads(self, limit: int = 50, offset: int = 0) -> list[CheckpointMetadata]:
        """The head metadata of each thread, most recently updated first."""

    @abstractmethod
    async def list_checkpoints(
        self, thread_id: str, limit: int = 100, offset: int = 0
    ) -> list[CheckpointMetadata]:
        """A thread's checkpoints, newest first (step, created_at, id descending)."""

    @abstractmethod
    async def delete_thread(self, thread_id: str) -> int:
        """Delete every checkpoint of a thread; return how many. (No undo: the engine's
        `delete_thread` is the undoable one.)"""

    @abstractmethod
    async def delete_before(self, thread_id: str, before_step: int) -> int:
        """Delete a thread's checkpoints with step < before_step; return how many."""

    # ---- what the debugger adds ----------------------------------------------------

    @abstractmethod
    async def count(self, thread_id: str | None = None) -> int:
        """Number of checkpoints (in one thread, or in all)."""

    @abstractmethod
    async def count_threads(self, prefix: str | None = None) -> int:
        """Number of distinct threads (whose id starts with `prefix`, if given)."""

    @abstractmethod
    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        """One row per thread with its count and head, in one query.

        sort: "updated" (head created_at), "thread" (id), "checkpoints" (count),
        "step" (head step), "created" (first checkpoint's created_at). Ties by thread id.
        """

    @abstractmethod
    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        """The summary of one thread, or None when it has no checkpoints."""

    @abstractmethod
    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        """A page of a thread's checkpoints in step order (oldest first by default)."""

    @abstractmethod
    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        """Only the metadata of a checkpoint (no blobs are read)."""

    @abstractmethod
    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        """Checkpoints whose parent is this one, in any thread."""

    @abstractmethod
    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        """Rows in other threads whose parent is a checkpoint of one of these threads
        (the first rows of their branches)."""

    @abstractmethod
    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        """The checkpoint of a thread at a step (the last one if the step repeats)."""

    @abstractmethod
    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """Checkpoint ids that start with `prefix`, sorted."""

    @abstractmethod
    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """Thread ids that start with `prefix`, sorted."""

    @abstractmethod
    async def search(
        self, text: str, thread_id: str | None = None, role: str | None = None, limit: int = 50,
        scan: bool = False, places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """Checkpoints whose messages (of `role`, if given), tool results or state
        contain `text`, case-insensitively; newest first (see Store.search)."""

    @abstractmethod
    def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        """Every checkpoint (of these threads), in thread then step order, streamed.
        A row that cannot be decoded is yielded as its CorruptRowError, not raised."""

    @abstractmethod
    def iter_metadata(self, batch: int = 5000) -> AsyncIterator[CheckpointMetadata]:
        """The metadata of every row, streamed in thread then step order."""

    @abstractmethod
    async def stats(self) -> dict[str, Any]:
        """{"threads", "checkpoints", "bytes", "per_thread": [{thread_id, checkpoints, bytes}],
        "tags": {tag: count}} with per_thread sorted by bytes, largest first."""

    @abstractmethod
    async def duplicate_steps(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{thread_id, step, count}] for steps that occur more than once in a thread."""

    @abstractmethod
    async def orphan_parents(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{thread_id, checkpoint_id, parent_id}] whose parent_id names no row."""

    @abstractmethod
    async def invalid_json(self, limit: int = 100) -> list[dict[str, Any]]:
        """[{checkpoint_id, column, reason}] for blobs that do not parse or have the wrong type."""

    @abstractmethod
    async def table_exists(self, name: str) -> bool:
        """Whether a table of this name exists (read-only; creates nothing)."""

    async def size_bytes(self, tables: Sequence[str] = ("checkpoints",)) -> int:
        """The database's size in bytes (SQLite: the file and its WAL; Postgres: these
        tables, those that exist, with their indexes and TOAST)."""
        raise NotImplementedError

    async def compact(self) -> dict[str, Any]:
        from agentctl.engine import oplog

        tables = ["checkpoints", oplog.TRASH]
        before = await self.size_bytes(tables)
        await self.vacuum(tables)
        if self.kind == "sqlite":
            await self.truncate_wal()  # type: ignore[attr-defined]
        return {"vacuumed": "file" if self.kind == "sqlite" else tables,
                "before": before, "after": await self.size_bytes(tables)}

    async def vacuum(self, tables: Sequence[str] = ("checkpoints",)) -> None:
        """Give the space of deleted rows back (SQLite: VACUUM of the whole file, which
        shrinks it; Postgres: VACUUM of these tables (those that exist), which makes
        their space reusable). Runs outside any
        transaction and waits for other writers like a write does."""

    @abstractmethod
    def transaction(self, lock_threads: Sequence[str] = ()) -> AbstractAsyncContextManager[Transaction]:
        """A write transaction. It commits when the block ends normally and rolls back
        when it raises. Raises ReadOnlyDatabase on a backend opened read-only."""


# What reads rows: an open transaction or a backend (both RowReads).
Reader = Union[Transaction, CheckpointBackend]


# What a text's part for the SQL test leaves out: JSON's structure (a hit in the JSON text
# of a value may span it, and writers space it differently), what JSON escapes, and
# non-ASCII letters with case (SQLite's LIKE folds ASCII case only). The SQL searches'
# prefilter (SQLite LIKE, Postgres ILIKE) tests this part: it never drops a hit.
_NOT_IN_PART = frozenset('"\\/,:[]{}')


def token_part(text: str) -> str:
    """The longest run of `text` that any match of it holds inside one JSON string,
    key or number of the stored text, in the same characters: no JSON structure or
    escaped character, no non-ASCII character that has case, no space at its ends (a
    space after a comma or colon is structure)."""
    best = ""
    for run in _split_runs(text):
        run = run.strip(" ")
        if len(run) > len(best):
            best = run
    return best


def _split_runs(text: str) -> list[str]:
    runs: list[str] = []
    run = ""
    for ch in text:
        if ch in _NOT_IN_PART or ch < " " or (ch > "\x7f" and (ch.lower() != ch or ch.upper() != ch)):
            runs.append(run)
            run = ""
        else:
            run += ch
    return runs + [run]
