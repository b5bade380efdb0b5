"""AgentOS's store on Postgres: its checkpoints table on the shared Postgres connection
(agentctl.storage.sql.postgres: the pool, read-only sessions, `?` placeholders, error
mapping).

Unlike AgentOS's writer it stores `created_at` given as an ISO string or a datetime
(TIMESTAMPTZ wants a datetime), and it reads JSONB as text and decodes it the same way
the SQLite backend does, so both return identical checkpoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentctl.errors import AgentctlError, SchemaError
from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage.agentos.base import (
    COLUMNS,
    META_COLUMNS,
    POSTGRES_SCHEMA,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    CheckpointBackend,
    Transaction,
    check_columns,
    checkpoint_params,
    dumps,
    row_to_metadata,
    token_part,
)
from agentctl.storage.agentos.queries import SharedQueries, check_sort
from agentctl.storage.journal.ops import THREAD_LOCK  # noqa: F401  (its old import place)
from agentctl.storage.sql.postgres import (  # noqa: F401  (their old import place)
    PgTransaction,
    PostgresConnection,
    describe_dsn,
    map_pg_error,
    pg_connect,
    to_dollar,
)
from agentctl.storage.timefmt import to_datetime

__all__ = ["PostgresCheckpointer", "SCHEMA"]

SCHEMA = POSTGRES_SCHEMA
_C = 'COLLATE "C"'  # byte order for text, as SQLite compares

UPSERT_SQL = (
    f"INSERT INTO checkpoints ({', '.join(COLUMNS)}) VALUES "
    f"({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 1))}) "
    "ON CONFLICT (checkpoint_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "checkpoint_id")
)

#: the search index on Postgres: one pg_trgm GIN index per searched column
_TRGM_INDEXES = {
    "messages_blob": "agentctl_search_messages",
    "tools_blob": "agentctl_search_tools",
    "state_blob": "agentctl_search_state",
}


class _PgTransaction(PgTransaction, Transaction):
    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        await self._conn.execute(UPSERT_SQL, *checkpoint_params(checkpoint, to_datetime, blobs))
        return checkpoint.metadata.checkpoint_id


class PostgresCheckpointer(PostgresConnection, SharedQueries, CheckpointBackend):
    """Checkpoints in Postgres.

    `PostgresCheckpointer(dsn=..., **pool_kwargs)` is AgentOS's constructor: it creates
    the table on first use. agentctl's commands use `readonly=True, create=False`, which
    also makes every session `default_transaction_read_only` (behind a connection
    pooler: every read a READ ONLY transaction; see `pg_connect`).
    """

    create_schema = SCHEMA
    transaction_class = _PgTransaction
    # Whether thread_id and checkpoint_id compare in byte order (a C / POSIX / C.UTF-8
    # collation of the libc provider): then a prefix is a range of their indexes.
    _byte_order = False

    async def _check_schema(self, conn: Any) -> None:
        # From the catalog (information_schema's view takes ~10 ms to plan): the columns of
        # the `checkpoints` the search path finds, and the collation the text columns
        # compare with ("default" is the database's; the provider column exists from 15).
        provider = (
            "(SELECT datlocprovider::text FROM pg_database WHERE datname = current_database())"
            if conn.get_server_version() >= (15,)
            else "'c'"
        )
        rows = await conn.fetch(
            "SELECT a.attname::text AS name, CASE WHEN co.collname = 'default' "
            "THEN current_setting('lc_collate') ELSE co.collcollate END AS coll, "
            f"CASE WHEN co.collname = 'default' THEN {provider} ELSE co.collprovider::text END AS provider "
            "FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_collation co "
            "ON co.oid = a.attcollation WHERE a.attrelid = to_regclass('checkpoints') "
            "AND a.attnum > 0 AND NOT a.attisdropped"
        )
        cols = {r["name"] for r in rows}
        byte_order = ("C", "POSIX", "C.UTF-8", "C.utf8")
        self._byte_order = all(
            r["coll"] in byte_order and r["provider"] == "c"
            for r in rows
            if r["name"] in ("thread_id", "checkpoint_id")
        )
        if not cols:
            raise SchemaError(f"Postgres database {self.display_name} has no 'checkpoints' table")
        check_columns(self.display_name, cols)

    # ---- dialect-specific reads ---------------------------------------------------

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        if sort == "updated" and descending:  # the default listing, through idx_created_at
            return await self._newest_heads(limit, offset, prefix)
        check_sort(sort)
        direction = "DESC" if descending else "ASC"
        key = {"thread": f"thread_id {_C}", "checkpoints": "COUNT(*)", "step": "MAX(step)"}.get(sort) or (
            "(SELECT created_at FROM checkpoints c WHERE c.thread_id = t.thread_id ORDER BY "
            f"{THREAD_ORDER_DESC if sort == 'updated' else THREAD_ORDER_ASC} LIMIT 1)"
        )
        where, params = "", []
        if prefix:
            where, params = "WHERE substr(thread_id, 1, ?) = ?", [len(prefix), prefix]
        tiebreak = f", thread_id {_C} ASC" if sort != "thread" else ""
        keys = (
            f"page AS (SELECT thread_id AS tid, {key} AS k FROM checkpoints t {where} GROUP BY thread_id "
            f"ORDER BY k {direction}{tiebreak} LIMIT ? OFFSET ?)"
        )
        return await self._summary_page(
            keys, params, limit, offset, direction, tiebreak.replace("thread_id", "tid")
        )

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        cols = ", ".join("c." + c.strip() for c in META_COLUMNS.split(","))
        rows = await self._fetch(
            f"SELECT {cols} FROM checkpoints p JOIN checkpoints c ON c.parent_id = p.checkpoint_id "
            "WHERE p.thread_id = ANY(?::text[]) AND c.thread_id <> p.thread_id "
            f"ORDER BY c.thread_id {_C}, c.step, c.created_at, c.id",
            list(dict.fromkeys(thread_ids)),
        )
        return [row_to_metadata(r) for r in rows]

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        await self.connect()
        if self._byte_order:  # the column compares in byte order: a range, as on SQLite
            return await super().find_checkpoint_ids(prefix, limit)
        rows = await self._fetch(
            f"SELECT checkpoint_id FROM checkpoints WHERE left(checkpoint_id, ?) = ? "
            f"ORDER BY checkpoint_id {_C} LIMIT ?",
            len(prefix),
            prefix,
            limit,
        )
        return [r["checkpoint_id"] for r in rows]

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        await self.connect()
        if self._byte_order:
            # The prefix is a range of idx_thread_step: walk its distinct values, one index
            # seek each (a skip scan), rather than a pass over every row (left() cannot
            # use the index: 0.65 s for `log long-thread` on the 1M-row benchmark) or
            # over every row of the range (5 ms for a 10,000-row thread).
            end = prefix + "\U0010ffff"
            rows = await self._fetch(
                "WITH RECURSIVE t(thread_id) AS (SELECT MIN(thread_id) FROM checkpoints "
                "WHERE thread_id >= ? AND thread_id < ? UNION ALL SELECT (SELECT MIN(c.thread_id) "
                "FROM checkpoints c WHERE c.thread_id > t.thread_id AND c.thread_id < ?) FROM t "
                "WHERE t.thread_id IS NOT NULL) "
                "SELECT thread_id FROM t WHERE thread_id IS NOT NULL LIMIT ?",
                prefix,
                end,
                end,
                limit,
            )
        else:
            rows = await self._fetch(
                f"SELECT DISTINCT thread_id {_C} AS thread_id FROM checkpoints "
                "WHERE left(thread_id, ?) = ? ORDER BY 1 LIMIT ?",
                len(prefix),
                prefix,
                limit,
            )
        return [r["thread_id"] for r in rows]

    async def search_index(self, action: str) -> dict[str, Any]:
        """The search index on Postgres: pg_trgm GIN indexes on the searched columns'
        text, which the search's ILIKE uses (Postgres keeps them current). "build"
        creates them (and the pg_trgm extension), "drop" drops them, "status" says
        which exist. Only through `agentctl index` (the user's database is not ours to
        change unasked)."""
        from agentctl.errors import OperationError

        before = await self._trgm_indexes() if action == "drop" else {}
        if action in ("build", "drop"):
            try:
                async with self.transaction() as tx:
                    if action == "build":
                        await tx.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                        found = await tx.fetch(
                            "SELECT n.nspname AS s FROM pg_extension e JOIN pg_namespace n "
                            "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
                        )
                        ops = '"' + found[0]["s"].replace('"', '""') + '".gin_trgm_ops'
                        for column, name in _TRGM_INDEXES.items():
                            await tx.execute(
                                f"CREATE INDEX IF NOT EXISTS {name} ON checkpoints "
                                f"USING gin (({column}::text) {ops})"
                            )
                    else:
                        for name in _TRGM_INDEXES.values():
                            await tx.execute(f"DROP INDEX IF EXISTS {name}")
            except OperationError:
                raise
            except AgentctlError as exc:
                raise OperationError(f"cannot {action} the search index: {exc}") from None
        have = await self._trgm_indexes()
        state_ = "current" if len(have) == len(_TRGM_INDEXES) else "absent" if not have else "partial"
        detail = {
            "current": "pg_trgm GIN indexes: search's ILIKE uses them (Postgres keeps them current)",
            "absent": "no search index (build one with `agentctl index build`)",
            "partial": "some of the pg_trgm indexes are missing (`agentctl index build`)",
        }[state_]
        # rows and built: the side file's (SQLite); Postgres indexes every row, and keeps no date
        return {
            "state": state_,
            "path": "checkpoints: " + ", ".join(sorted(have) or ["-"]),
            "detail": detail,
            "rows": None,
            "dead_documents": 0,
            "bytes": int(sum(have.values())),
            "built_at": None,
            "new_rows": 0,
            "changed_rows": 0,
            **(
                {"dropped": bool(before), "removed": "checkpoints: " + ", ".join(sorted(before))}
                if action == "drop"
                else {}
            ),
        }

    async def _trgm_indexes(self) -> dict[str, int]:
        """agentctl's pg_trgm indexes on the checkpoints table: {name: bytes}."""
        rows = await self._fetch(
            "SELECT i.indexname AS name, pg_relation_size(c.oid) AS size FROM pg_indexes i "
            "JOIN pg_class c ON c.relname = i.indexname JOIN pg_namespace n ON n.oid = c.relnamespace "
            "AND n.nspname = i.schemaname WHERE i.tablename = 'checkpoints' "
            "AND i.schemaname = current_schema()"
        )
        return {r["name"]: int(r["size"]) for r in rows if r["name"] in _TRGM_INDEXES.values()}

    def _search_condition(
        self,
        text: str,
        columns: Sequence[str] = ("messages_blob", "tools_blob", "state_blob"),
    ) -> tuple[str, list[Any]]:
        # The part of the text a hit holds inside one JSON string, key or number (the
        # whole text can span JSON structure: '"city": "pa'); jsonb::text writes
        # non-ASCII as is and escapes like json.dumps does.
        part = token_part(text)
        if not part:
            return "(TRUE)", []
        needle = dumps(part)[1:-1]
        pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return "(" + " OR ".join(f"{c}::text ILIKE ?" for c in columns) + ")", [pattern] * len(columns)

    BYTES_OF = "octet_length({}::text)"
    TAG_COUNTS = (
        "SELECT j AS tag, COUNT(*) AS n FROM checkpoints c CROSS JOIN LATERAL "
        "jsonb_array_elements_text(CASE WHEN jsonb_typeof(c.tags) = 'array' THEN c.tags "
        f"ELSE '[]'::jsonb END) AS j GROUP BY j ORDER BY n DESC, j {_C}"
    )
    # JSONB always parses; a TEXT column of a foreign writer is cast (and must parse).
    INVALID_JSON = (
        "SELECT checkpoint_id, TRUE AS ok, jsonb_typeof({c}::jsonb) AS t FROM checkpoints "
        "WHERE jsonb_typeof({c}::jsonb) <> ? ORDER BY id LIMIT ?"
    )
