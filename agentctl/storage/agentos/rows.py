"""The AgentOS `checkpoints` table below its store: the columns and their DDL, the
codec of a row (JSON columns, tags, delta markers) and the search helpers, which the
store (`base.py`, which re-exports these names) and the write side (the engine) share.
The write side imports this module at run time, the store's classes (`RowReads`,
`Transaction`, `CheckpointBackend`) only for the type checker: the store may then load
the engine's op log and deltas without an import circle.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.search import (  # noqa: F401  (the store re-exports them)
    dumps,
    hit_path,
    json_hit_tokens,
    message_hit_path,
    search_json,
    search_messages,
    snippet_around,
    token_part,
)
from agentctl.storage.sql.conn import Row  # noqa: F401

# orjson's loads where it is installed (the stdlib's otherwise): NaN, Infinity and big
# integers raise ValueError (`loads` falls back to the stdlib for them). orjson parses
# several times faster; the stdlib is the fallback and the reference.
try:
    import orjson as _orjson

    def fast_loads(text: str | bytes) -> Any:
        return _orjson.loads(text)

except ImportError:  # pragma: no cover - orjson is optional
    fast_loads: Callable[[str | bytes], Any] = json.loads  # type: ignore[no-redef]  # the fallback of the def above


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
#: how the journal names the rows of `checkpoints` (agentctl/storage/journal): by key, and
#: their thread column (so an undo can restore some threads of an op)
JOURNAL_KEY = ("checkpoint_id",)
JOURNAL_THREAD = "thread_id"

# Order of rows within a thread, as SQL (both dialects), ascending and descending.
THREAD_ORDER_ASC = "step ASC, created_at ASC, id ASC"
THREAD_ORDER_DESC = "step DESC, created_at DESC, id DESC"

# What the format's DDL says differently in each dialect: the row id's and the columns'
# types, and the indexes (name, columns). The Postgres variant indexes created_at too.
DIALECTS: dict[str, dict[str, str]] = {
    "sqlite": {"id": "INTEGER PRIMARY KEY AUTOINCREMENT", "ts": "TEXT", "ts_default": "", "json": "TEXT"},
    "postgres": {
        "id": "BIGSERIAL PRIMARY KEY",
        "ts": "TIMESTAMPTZ",
        "ts_default": " DEFAULT NOW()",
        "json": "JSONB",
    },
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
    return (
        "\nCREATE TABLE IF NOT EXISTS checkpoints (\n    "
        + ",\n    ".join(columns)
        + "\n);\n"
        + "".join(index_sql(name, cols) + ";\n" for name, cols in DIALECT_INDEXES[dialect])
    )


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
    if len(text) >= BIG_JSON and gc.isenabled():
        # A multi-megabyte value builds hundreds of thousands of containers, and the
        # cyclic GC runs over and over while they appear (a third of the time for a 5 MB
        # state); none of them can be garbage yet.
        gc.disable()
        try:
            return _parse(text)
        finally:
            gc.enable()
    return _parse(text)


#: for readers that parse small texts themselves (`fast_loads`) and leave big ones to `loads`
BIG_JSON = 1 << 20


def _parse(text: str | bytes) -> Any:
    try:
        return fast_loads(text)
    except ValueError:
        return json.loads(text)


def checkpoint_params(cp: Checkpoint, timestamp: Any, blobs: Sequence[str] | None = None) -> tuple[Any, ...]:
    """The values of COLUMNS for a checkpoint; `timestamp` converts created_at.
    `blobs`: messages, state and tools_result already serialised with `dumps`."""
    meta = cp.metadata
    messages, state, tools = (
        blobs if blobs is not None else (dumps(cp.messages), dumps(cp.state), dumps(cp.tools_result))
    )
    return (
        meta.thread_id,
        meta.checkpoint_id,
        meta.parent_checkpoint_id,
        meta.step,
        timestamp(meta.created_at),
        dumps(meta.tags),
        meta.summary,
        messages,
        state,
        tools,
        cp.next_node,
    )


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


# Delta snapshots (agentctl/storage/agentos/delta.py): the marker key of a delta row's state_blob, and
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
        append(
            meta(
                thread_id,
                checkpoint_id,
                step,
                parent_id,
                created_at,
                tags.copy(),
                summary if summary is not None else "",
            )
        )
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
