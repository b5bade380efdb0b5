"""Postgres backend on asyncpg, with a connection pool.

Unlike AgentOS's writer it stores `created_at` given as an ISO string or a datetime
(TIMESTAMPTZ wants a datetime), and it reads JSONB as text and decodes it the same way
the SQLite backend does, so both return identical checkpoints. Statements that the
engine writes once with `?` placeholders are rewritten to `$n` here.
"""

from __future__ import annotations

import asyncio
import re
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Iterable, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit

from agentctl.storage.agentos.base import (
    POSTGRES_SCHEMA,
    checkpoint_params,
    COLUMNS,
    META_COLUMNS,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    CheckpointBackend,
    Transaction,
    check_columns,
    dumps,
    row_to_metadata,
    token_part,
)
from agentctl.storage.agentos.queries import SharedQueries, check_sort
from agentctl.errors import (
    AgentctlError,
    ConnectionFailed,
    DatabaseBusy,
    DatabaseError,
    DatabaseNotFound,
    GaveWay,
    ReadOnlyDatabase,
    SchemaError,
    UsageError,
    redact_dsn,
)
from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage.timefmt import iso, to_datetime
from agentctl.storage.journal.ops import THREAD_LOCK  # the lock of one thread's writes, to the end of the transaction

__all__ = ["PostgresCheckpointer", "SCHEMA"]

SCHEMA = POSTGRES_SCHEMA
_C = 'COLLATE "C"'  # byte order for text, as SQLite compares

UPSERT_SQL = (
    f"INSERT INTO checkpoints ({', '.join(COLUMNS)}) VALUES "
    f"({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 1))}) "
    "ON CONFLICT (checkpoint_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "checkpoint_id")
)

_PLACEHOLDER = re.compile(r"\?")


def to_dollar(sql: str) -> str:
    """Rewrite `?` placeholders as `$1, $2, ...` (our SQL has no `?` in literals)."""
    counter = iter(range(1, 10_000))
    return _PLACEHOLDER.sub(lambda _m: f"${next(counter)}", sql)


def _row(record: Any) -> dict[str, Any]:
    d = dict(record.items())
    for key in ("created_at", "h_created_at", "first_created_at"):
        if key in d:
            d[key] = iso(d[key])
    return d


def describe_dsn(dsn: str) -> str:
    """host:port/dbname of a DSN, for messages (never the password)."""
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or "localhost"
        port = parts.port or 5432
        db = parts.path.lstrip("/") or (parts.username or "postgres")
        return f"{host}:{port}/{db}"
    except ValueError:
        return redact_dsn(dsn)


def map_pg_error(exc: BaseException, where: str) -> AgentctlError:
    import asyncpg

    text = redact_dsn(str(exc))
    if isinstance(exc, (asyncpg.UntranslatableCharacterError, asyncpg.CharacterNotInRepertoireError)):
        return DatabaseError(
            f"{where}: Postgres cannot store this text (NUL characters, \\u0000, are not "
            f"allowed in TEXT or JSONB): {text}"
        )
    if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
        return ReadOnlyDatabase(f"{where}: the database is read-only here ({text})")
    if isinstance(exc, (asyncpg.LockNotAvailableError, asyncpg.DeadlockDetectedError)):
        # the first line: "deadlock detected" (not the processes and relations of DETAIL)
        return DatabaseBusy(f"{where}: {(text.splitlines() or [''])[0]}; nothing was changed", nothing_changed=True)
    if isinstance(exc, asyncpg.InsufficientPrivilegeError):
        return ReadOnlyDatabase(f"{where}: permission denied ({text})")
    if isinstance(exc, (asyncpg.DuplicatePreparedStatementError, asyncpg.InvalidSQLStatementNameError)):
        return DatabaseError(f"{where}: {(text.splitlines() or [''])[0]} (a connection pooler in "
                             "transaction mode? say so in the DSN: ?agentctl_pooler=1)")
    return DatabaseError(f"{where}: {text}")


def connect_error(exc: BaseException, dsn: str) -> BaseException:
    """The AgentctlError for a failed connection attempt (other exceptions as they are)."""
    import asyncpg

    where = describe_dsn(dsn)
    if isinstance(exc, asyncpg.InvalidPasswordError):
        return ConnectionFailed(f"Postgres at {where} refused the login (wrong password or user)")
    if isinstance(exc, asyncpg.InvalidAuthorizationSpecificationError):
        return ConnectionFailed(f"Postgres at {where} refused the login: {redact_dsn(str(exc))}")
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return DatabaseNotFound(f"Postgres database not found: {where}")
    if isinstance(exc, (OSError, asyncio.TimeoutError)):
        reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else (
            "timed out" if isinstance(exc, asyncio.TimeoutError) else redact_dsn(str(exc)))
        return ConnectionFailed(f"cannot connect to Postgres at {where}: {reason}")
    if isinstance(exc, asyncpg.PostgresError):
        return ConnectionFailed(f"Postgres at {where}: {redact_dsn(str(exc))}")
    if isinstance(exc, ValueError):  # a malformed DSN
        return UsageError(f"invalid Postgres DSN: {redact_dsn(str(exc))}")
    return exc


# ---- connection poolers (pgbouncer in transaction mode: Supabase's, Neon's pooled URLs) ----
#
# A pooler in transaction mode hands each transaction to any of its server connections:
# it refuses startup parameters it does not know (`default_transaction_read_only`), and
# a prepared statement outlives its transaction on one server connection only (asyncpg's
# statement cache: "prepared statement ... already exists" / "does not exist"). Behind
# one agentctl makes a read-only session's transactions READ ONLY one by one, and turns
# asyncpg's statement cache off (its statements are then unnamed, parsed with each
# execution). A DSN option says it (`agentctl_pooler=1`, or Prisma's `pgbouncer=true`);
# otherwise agentctl finds out: it sends a startup parameter of its own (a placeholder
# setting, which Postgres takes and does nothing with) that a pooler refuses, and then
# connects again as behind a pooler. Advisory locks are transaction-level throughout
# (`pg_advisory_xact_lock`), so they hold behind a pooler as on a server.

#: the DSN options that say whether the server is a pooler (taken out of the DSN)
POOLER_OPTIONS = ("agentctl_pooler", "pgbouncer")
#: the startup parameter a pooler refuses and Postgres takes (a placeholder setting)
POOLER_PROBE = "agentctl.pooler_probe"
_REFUSED = "unsupported startup parameter"


def pooler_option(dsn: str) -> tuple[str, bool | None]:
    """The DSN without agentctl's pooler options, and what they say: True (a pooler),
    False (a server: no probe) or None (not said)."""
    if "?" not in dsn:
        return dsn, None
    parts = urlsplit(dsn)
    said: bool | None = None
    query = parse_qsl(parts.query, keep_blank_values=True)
    keep = [(key, value) for key, value in query if key.lower() not in POOLER_OPTIONS]
    if len(keep) == len(query):
        return dsn, None  # the DSN as given (not re-encoded)
    for key, value in query:
        if key.lower() not in POOLER_OPTIONS:
            continue
        if value.lower() in ("1", "true", "on", "yes"):
            said = True
        elif value.lower() in ("0", "false", "off", "no"):
            said = False
        else:
            raise UsageError(f"invalid Postgres DSN option {key}={value!r}: use 1 (a connection pooler) or 0")
    return parts._replace(query=urlencode(keep)).geturl(), said


def session_kwargs(kwargs: dict[str, Any], *, readonly: bool, pooler: bool | None) -> dict[str, Any]:
    """asyncpg's connect / create_pool arguments for a session: read-only sessions
    (`default_transaction_read_only` on a server; per transaction behind a pooler), the
    probe when it is not known whether the server is a pooler, no statement cache
    behind one."""
    kwargs = dict(kwargs)
    settings = dict(kwargs.pop("server_settings", None) or {})
    if pooler:
        kwargs["statement_cache_size"] = 0
    else:
        if readonly:
            settings.setdefault("default_transaction_read_only", "on")
        if pooler is None:
            settings.setdefault(POOLER_PROBE, "1")
    if settings:
        kwargs["server_settings"] = settings
    return kwargs


def refused_as_pooler(exc: BaseException) -> bool:
    """Whether a connection attempt failed as a pooler refuses agentctl's own startup
    parameters (then it is one)."""
    import asyncpg

    text = str(exc)
    return (isinstance(exc, asyncpg.PostgresError) and _REFUSED in text
            and (POOLER_PROBE in text or "default_transaction_read_only" in text))


async def pg_connect(open_: Any, dsn: str, kwargs: dict[str, Any], *, readonly: bool) -> tuple[Any, bool]:
    """`open_(dsn=..., **kwargs)` (asyncpg.connect or create_pool) with the session's
    settings, again as behind a pooler when a pooler refused them; (what it returned,
    whether the server is a pooler). A failure is raised as connect_error's."""
    bare, said = pooler_option(dsn)
    try:
        return await open_(dsn=bare, **session_kwargs(kwargs, readonly=readonly, pooler=said)), bool(said)
    except BaseException as exc:
        if said is not None or not refused_as_pooler(exc):
            raise connect_error(exc, dsn) from None
    try:
        return await open_(dsn=bare, **session_kwargs(kwargs, readonly=readonly, pooler=True)), True
    except BaseException as exc:
        raise connect_error(exc, dsn) from None


#: the search index on Postgres: one pg_trgm GIN index per searched column
_TRGM_INDEXES = {"messages_blob": "agentctl_search_messages", "tools_blob": "agentctl_search_tools",
                 "state_blob": "agentctl_search_state"}


#: how long (ms) a write transaction on another program's tables waits for a lock before
#: it gives way (`PostgresCheckpointer.yields_to_writers`; at most half the server's
#: deadlock_timeout, so it gives up before the other side looks for a deadlock), and
#: when it looks for a deadlock itself (shorter than the server's default 1 s, so
#: agentctl is the one that finds it and rolls back; set only where the role may: a
#: superuser or one granted SET)
YIELD_LOCK_TIMEOUT_MS = 500
YIELD_DEADLOCK_TIMEOUT = "100ms"


async def _give_way(conn: Any) -> None:
    """Make the open transaction the one that yields to other writers."""
    import asyncpg

    await conn.execute(
        "SELECT set_config('lock_timeout', LEAST($1::int, GREATEST(10, (SELECT setting::int / 2 FROM pg_settings "
        "WHERE name = 'deadlock_timeout')))::text || 'ms', true)", YIELD_LOCK_TIMEOUT_MS)
    try:
        async with conn.transaction():  # a savepoint: a refused SET leaves the transaction usable
            await conn.execute(f"SET LOCAL deadlock_timeout = '{YIELD_DEADLOCK_TIMEOUT}'")
    except asyncpg.InsufficientPrivilegeError:
        pass


async def _no_reset(conn: Any) -> None:
    """The pool's reset of a read-only session's connection: nothing to undo."""


class _PgTransaction(Transaction):
    kind = "postgres"

    def __init__(self, conn: Any):
        self._conn = conn

    async def execute(self, sql: str, *params: Any) -> int:
        status = await self._conn.execute(to_dollar(sql), *params)
        try:
            return int(status.split()[-1])
        except (ValueError, IndexError):
            return 0

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(to_dollar(sql), list(rows))

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return [_row(r) for r in await self._conn.fetch(to_dollar(sql), *params)]

    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        await self._conn.execute(UPSERT_SQL, *checkpoint_params(checkpoint, to_datetime, blobs))
        return checkpoint.metadata.checkpoint_id

    def timestamp(self, iso_text: str) -> Any:
        return to_datetime(iso_text)


class PostgresCheckpointer(SharedQueries, CheckpointBackend):
    """Checkpoints in Postgres.

    `PostgresCheckpointer(dsn=..., **pool_kwargs)` is AgentOS's constructor: it creates
    the table on first use. agentctl's commands use `readonly=True, create=False`, which
    also makes every session `default_transaction_read_only` (behind a connection
    pooler: every read a READ ONLY transaction; see `pg_connect`).
    """

    kind = "postgres"
    COLLATE = " " + _C
    #: write transactions give way to other programs' writers (a connection to
    #: LangGraph's or an SDK's tables): a short lock_timeout and deadlock_timeout, and a
    #: lock wait or deadlock raises GaveWay (rolled back), which History's writes retry
    yields_to_writers = False

    def __init__(self, dsn: str = "", *, readonly: bool = False, create: bool = True, **kwargs: Any):
        self._dsn = dsn or "postgresql://localhost:5432/agentos"
        self.display_name = describe_dsn(self._dsn)
        self._readonly = readonly
        self._create = create and not readonly
        self._kwargs = kwargs
        self._pool: Any = None
        #: whether the server is a connection pooler (pooler_option, pg_connect)
        self._pooler = False
        self._connect_lock = asyncio.Lock()
        # Whether thread_id and checkpoint_id compare in byte order (a C / POSIX / C.UTF-8
        # collation of the libc provider): then a prefix is a range of their indexes.
        self._byte_order = False

    async def connect(self) -> None:
        if self._pool is not None:
            return
        async with self._connect_lock:
            if self._pool is not None:
                return
            import asyncpg

            kwargs = dict(self._kwargs)
            kwargs.setdefault("min_size", 1)
            kwargs.setdefault("max_size", 4)
            kwargs.setdefault("timeout", 10)
            if self._readonly:
                # A read-only session leaves nothing to reset when a connection goes back
                # to the pool (no session locks, LISTEN, cursors or SET: transactions are
                # refused): skip asyncpg's reset statement, a round trip per read.
                # (`reset=` exists from asyncpg 0.30; 0.29 keeps its reset statement.)
                if "_reset" in getattr(asyncpg.pool.Pool, "__slots__", ()):
                    kwargs.setdefault("reset", _no_reset)
            pool, self._pooler = await pg_connect(asyncpg.create_pool, self._dsn, kwargs,
                                                  readonly=self._readonly)
            try:
                async with self._acquire(pool) as conn:
                    if self._create:
                        await conn.execute(SCHEMA)
                    await self._check_schema(conn)
            except asyncpg.PostgresError as exc:
                await pool.close()
                raise map_pg_error(exc, self.display_name) from None
            except BaseException:
                await pool.close()
                raise
            self._pool = pool

    @asynccontextmanager
    async def _acquire(self, pool: Any = None) -> AsyncIterator[Any]:
        """A connection of the pool for reads: behind a pooler a read-only session's
        reads are one READ ONLY transaction (the server's sessions are not ours to make
        read-only), on a server the session is."""
        async with (pool or self._pool).acquire() as conn:
            if self._pooler and self._readonly:
                async with conn.transaction(readonly=True):
                    yield conn
            else:
                yield conn

    async def _check_schema(self, conn: Any) -> None:
        # From the catalog (information_schema's view takes ~10 ms to plan): the columns of
        # the `checkpoints` the search path finds, and the collation the text columns
        # compare with ("default" is the database's; the provider column exists from 15).
        provider = ("(SELECT datlocprovider::text FROM pg_database WHERE datname = current_database())"
                    if conn.get_server_version() >= (15,) else "'c'")
        rows = await conn.fetch(
            "SELECT a.attname::text AS name, CASE WHEN co.collname = 'default' "
            "THEN current_setting('lc_collate') ELSE co.collcollate END AS coll, "
            f"CASE WHEN co.collname = 'default' THEN {provider} ELSE co.collprovider::text END AS provider "
            "FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_collation co "
            "ON co.oid = a.attcollation WHERE a.attrelid = to_regclass('checkpoints') "
            "AND a.attnum > 0 AND NOT a.attisdropped")
        cols = {r["name"] for r in rows}
        byte_order = ("C", "POSIX", "C.UTF-8", "C.utf8")
        self._byte_order = all(
            r["coll"] in byte_order and r["provider"] == "c"
            for r in rows if r["name"] in ("thread_id", "checkpoint_id"))
        if not cols:
            raise SchemaError(f"Postgres database {self.display_name} has no 'checkpoints' table")
        check_columns(self.display_name, cols)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # ---- helpers ------------------------------------------------------------------

    async def _fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        import asyncpg

        try:
            async with self._acquire() as conn:
                return [_row(r) for r in await conn.fetch(to_dollar(sql), *params)]
        except asyncpg.PostgresError as exc:
            raise map_pg_error(exc, self.display_name) from None

    @asynccontextmanager
    async def transaction(self, lock_threads: Sequence[str] = ()) -> AsyncIterator[Transaction]:
        await self._connect_writable()
        import asyncpg

        try:
            async with self._pool.acquire() as conn:
                async with conn.transaction():
                    if self.yields_to_writers:
                        await _give_way(conn)
                    for thread in sorted(set(lock_threads)):
                        await conn.execute(THREAD_LOCK.replace("?", "$1"), thread)
                    yield _PgTransaction(conn)
        except asyncpg.PostgresError as exc:
            if self.yields_to_writers and isinstance(
                    exc, (asyncpg.LockNotAvailableError, asyncpg.DeadlockDetectedError)):
                raise GaveWay(self.display_name) from None
            raise map_pg_error(exc, self.display_name) from None

    async def size_bytes(self, tables: Sequence[str] = ("checkpoints",)) -> int:
        total = await self._fetchval(
            "SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0)::bigint AS n "
            "FROM unnest(CAST(? AS text[])) AS t", list(dict.fromkeys(tables)))
        return int(total or 0)

    async def vacuum(self, tables: Sequence[str] = ("checkpoints",)) -> None:
        await self._connect_writable()
        import asyncpg

        tables = [t for t in dict.fromkeys(tables) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t)
                  and await self.table_exists(t)]
        if not tables:
            return
        try:
            async with self._pool.acquire() as conn:
                await conn.execute("VACUUM " + ", ".join(tables))
        except asyncpg.PostgresError as exc:
            raise map_pg_error(exc, self.display_name) from None

    # ---- dialect-specific reads ---------------------------------------------------

    async def thread_summaries(
        self, limit: int = 50, offset: int = 0, sort: str = "updated",
        descending: bool = True, prefix: str | None = None,
    ) -> list[ThreadSummary]:
        if sort == "updated" and descending:  # the default listing, through idx_created_at
            return await self._newest_heads(limit, offset, prefix)
        check_sort(sort)
        direction = "DESC" if descending else "ASC"
        key = {"thread": f"thread_id {_C}", "checkpoints": "COUNT(*)", "step": "MAX(step)"}.get(sort) or (
            "(SELECT created_at FROM checkpoints c WHERE c.thread_id = t.thread_id ORDER BY "
            f"{THREAD_ORDER_DESC if sort == 'updated' else THREAD_ORDER_ASC} LIMIT 1)")
        where, params = "", []
        if prefix:
            where, params = "WHERE substr(thread_id, 1, ?) = ?", [len(prefix), prefix]
        tiebreak = f", thread_id {_C} ASC" if sort != "thread" else ""
        keys = (f"page AS (SELECT thread_id AS tid, {key} AS k FROM checkpoints t {where} GROUP BY thread_id "
                f"ORDER BY k {direction}{tiebreak} LIMIT ? OFFSET ?)")
        return await self._summary_page(keys, params, limit, offset, direction,
                                        tiebreak.replace("thread_id", "tid"))

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
            f"ORDER BY checkpoint_id {_C} LIMIT ?", len(prefix), prefix, limit)
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
                "SELECT thread_id FROM t WHERE thread_id IS NOT NULL LIMIT ?", prefix, end, end, limit)
        else:
            rows = await self._fetch(
                f"SELECT DISTINCT thread_id {_C} AS thread_id FROM checkpoints "
                "WHERE left(thread_id, ?) = ? ORDER BY 1 LIMIT ?", len(prefix), prefix, limit)
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
                            "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'")
                        ops = '"' + found[0]["s"].replace('"', '""') + '".gin_trgm_ops'
                        for column, name in _TRGM_INDEXES.items():
                            await tx.execute(f"CREATE INDEX IF NOT EXISTS {name} ON checkpoints "
                                             f"USING gin (({column}::text) {ops})")
                    else:
                        for name in _TRGM_INDEXES.values():
                            await tx.execute(f"DROP INDEX IF EXISTS {name}")
            except OperationError:
                raise
            except AgentctlError as exc:
                raise OperationError(f"cannot {action} the search index: {exc}") from None
        have = await self._trgm_indexes()
        state_ = ("current" if len(have) == len(_TRGM_INDEXES) else "absent" if not have else "partial")
        detail = {"current": "pg_trgm GIN indexes: search's ILIKE uses them (Postgres keeps them current)",
                  "absent": "no search index (build one with `agentctl index build`)",
                  "partial": "some of the pg_trgm indexes are missing (`agentctl index build`)"}[state_]
        # rows and built: the side file's (SQLite); Postgres indexes every row, and keeps no date
        return {"state": state_, "path": "checkpoints: " + ", ".join(sorted(have) or ["-"]), "detail": detail,
                "rows": None, "dead_documents": 0, "bytes": int(sum(have.values())), "built_at": None,
                "new_rows": 0, "changed_rows": 0,
                **({"dropped": bool(before), "removed": "checkpoints: " + ", ".join(sorted(before))}
                   if action == "drop" else {})}

    async def _trgm_indexes(self) -> dict[str, int]:
        """agentctl's pg_trgm indexes on the checkpoints table: {name: bytes}."""
        rows = await self._fetch(
            "SELECT i.indexname AS name, pg_relation_size(c.oid) AS size FROM pg_indexes i "
            "JOIN pg_class c ON c.relname = i.indexname JOIN pg_namespace n ON n.oid = c.relnamespace "
            "AND n.nspname = i.schemaname WHERE i.tablename = 'checkpoints' "
            "AND i.schemaname = current_schema()")
        return {r["name"]: int(r["size"]) for r in rows if r["name"] in _TRGM_INDEXES.values()}

    def _search_condition(self, text: str, columns: Sequence[str] = ("messages_blob", "tools_blob", "state_blob"),
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
    TAG_COUNTS = ("SELECT j AS tag, COUNT(*) AS n FROM checkpoints c CROSS JOIN LATERAL "
                  "jsonb_array_elements_text(CASE WHEN jsonb_typeof(c.tags) = 'array' THEN c.tags "
                  f"ELSE '[]'::jsonb END) AS j GROUP BY j ORDER BY n DESC, j {_C}")
    # JSONB always parses; a TEXT column of a foreign writer is cast (and must parse).
    INVALID_JSON = ("SELECT checkpoint_id, TRUE AS ok, jsonb_typeof({c}::jsonb) AS t FROM checkpoints "
                    "WHERE jsonb_typeof({c}::jsonb) <> ? ORDER BY id LIMIT ?")
