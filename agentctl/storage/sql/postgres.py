"""Postgres connections on asyncpg: what every format's store on a Postgres database
opens. A pool; read-only sessions (`default_transaction_read_only`; behind a
connection pooler every read a READ ONLY transaction, see `pg_connect`); statements
written once with `?` placeholders rewritten to `$n`; timestamps read as ISO text;
write transactions that lock the threads they change (and, on another program's
tables, give way to its writers: `yields_to_writers`); asyncpg's errors as
AgentctlErrors (`map_pg_error`, `connect_error`)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from agentctl.errors import (
    AgentctlError,
    ConnectionFailed,
    DatabaseBusy,
    DatabaseError,
    DatabaseNotFound,
    GaveWay,
    ReadOnlyDatabase,
    UsageError,
    redact_dsn,
)
from agentctl.storage.journal.ops import (
    THREAD_LOCK,  # the lock of one thread's writes, to the end of the transaction
)
from agentctl.storage.sql.conn import PG_COLUMNS_SQL, Check, Connection, Transaction
from agentctl.storage.timefmt import iso, to_datetime

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
        return DatabaseBusy(
            f"{where}: {(text.splitlines() or [''])[0]}; nothing was changed", nothing_changed=True
        )
    if isinstance(exc, asyncpg.InsufficientPrivilegeError):
        return ReadOnlyDatabase(f"{where}: permission denied ({text})")
    if isinstance(exc, (asyncpg.DuplicatePreparedStatementError, asyncpg.InvalidSQLStatementNameError)):
        return DatabaseError(
            f"{where}: {(text.splitlines() or [''])[0]} (a connection pooler in "
            "transaction mode? say so in the DSN: ?agentctl_pooler=1)"
        )
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
        reason = (
            "connection refused"
            if isinstance(exc, ConnectionRefusedError)
            else ("timed out" if isinstance(exc, asyncio.TimeoutError) else redact_dsn(str(exc)))
        )
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
    return (
        isinstance(exc, asyncpg.PostgresError)
        and _REFUSED in text
        and (POOLER_PROBE in text or "default_transaction_read_only" in text)
    )


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


#: how long (ms) a write transaction on another program's tables waits for a lock before
#: it gives way (`PostgresConnection.yields_to_writers`; at most half the server's
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
        "WHERE name = 'deadlock_timeout')))::text || 'ms', true)",
        YIELD_LOCK_TIMEOUT_MS,
    )
    try:
        async with conn.transaction():  # a savepoint: a refused SET leaves the transaction usable
            await conn.execute(f"SET LOCAL deadlock_timeout = '{YIELD_DEADLOCK_TIMEOUT}'")
    except asyncpg.InsufficientPrivilegeError:
        pass


async def _no_reset(conn: Any) -> None:
    """The pool's reset of a read-only session's connection: nothing to undo."""


class PgTransaction(Transaction):
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

    def timestamp(self, iso_text: str) -> Any:
        return to_datetime(iso_text)


class PostgresConnection(Connection):
    """A Postgres database (see the module doc); `check` the format's schema check (or
    override `_check_schema`). `create`: the format's `create_schema` run on connect."""

    kind = "postgres"
    COLLATE = ' COLLATE "C"'  # byte order for text, as SQLite compares
    #: the class of `transaction()`'s transactions
    transaction_class: type[PgTransaction] = PgTransaction
    #: write transactions give way to other programs' writers (a connection to
    #: LangGraph's or an SDK's tables): a short lock_timeout and deadlock_timeout, and a
    #: lock wait or deadlock raises GaveWay (rolled back), which History's writes retry
    yields_to_writers = False

    def __init__(
        self,
        dsn: str = "",
        *,
        readonly: bool = False,
        create: bool = True,
        check: Check | None = None,
        **kwargs: Any,
    ):
        if check is not None:
            self.check = check
        self._dsn = dsn or "postgresql://localhost:5432/agentos"
        self.display_name = describe_dsn(self._dsn)
        self._readonly = readonly
        self._create = create and not readonly
        self._kwargs = kwargs
        self._pool: Any = None
        #: whether the server is a connection pooler (pooler_option, pg_connect)
        self._pooler = False
        self._connect_lock = asyncio.Lock()

    @property
    def _target(self) -> str:
        return self._dsn

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
            pool, self._pooler = await pg_connect(
                asyncpg.create_pool, self._dsn, kwargs, readonly=self._readonly
            )
            try:
                async with self._acquire(pool) as conn:
                    if self._create:
                        await conn.execute(self.create_schema)
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
        """The format's `check` on the current schemas' tables and columns."""
        self._checked(await conn.fetch(PG_COLUMNS_SQL))

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
    async def transaction(self, lock_threads: Sequence[str] = ()) -> AsyncIterator[Any]:
        await self._connect_writable()
        import asyncpg

        try:
            async with self._pool.acquire() as conn:
                async with conn.transaction():
                    if self.yields_to_writers:
                        await _give_way(conn)
                    for thread in sorted(set(lock_threads)):
                        await conn.execute(THREAD_LOCK.replace("?", "$1"), thread)
                    yield self.transaction_class(conn)
        except asyncpg.PostgresError as exc:
            if self.yields_to_writers and isinstance(
                exc, (asyncpg.LockNotAvailableError, asyncpg.DeadlockDetectedError)
            ):
                raise GaveWay(self.display_name) from None
            raise map_pg_error(exc, self.display_name) from None

    async def size_bytes(self, tables: Sequence[str] = ("checkpoints",)) -> int:
        total = await self._fetchval(
            "SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0)::bigint AS n "
            "FROM unnest(CAST(? AS text[])) AS t",
            list(dict.fromkeys(tables)),
        )
        return int(total or 0)

    async def vacuum(self, tables: Sequence[str] = ("checkpoints",)) -> None:
        await self._connect_writable()
        import asyncpg

        tables = [
            t
            for t in dict.fromkeys(tables)
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", t) and await self.table_exists(t)
        ]
        if not tables:
            return
        try:
            async with self._pool.acquire() as conn:
                await conn.execute("VACUUM " + ", ".join(tables))
        except asyncpg.PostgresError as exc:
            raise map_pg_error(exc, self.display_name) from None
