"""What every SQL connection of the shared layer is, whatever its dialect: database
URLs, reads with `?` placeholders (`Reads`), a write transaction (`Transaction`), a
write given as steps (`WriteSteps`) and the connection's own base (`Connection`: its
schema check, read-only mode, the write connection opened on demand)."""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any

from agentctl.errors import ReadOnlyDatabase, UsageError

DEFAULT_DB = "./checkpoints.db"

# The tables (and views) of the current schemas and their columns, as (table_name,
# column_name), from the catalog: a tenth of the time of information_schema.columns,
# which checks privileges row by row (12 ms -> 1 ms on a small database).
PG_COLUMNS_SQL = (
    "SELECT c.relname AS table_name, a.attname AS column_name FROM pg_catalog.pg_attribute a "
    "JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = ANY(current_schemas(false)) AND c.relkind IN ('r', 'v', 'p', 'm', 'f') "
    "AND a.attnum > 0 AND NOT a.attisdropped"
)

#: a format's schema check: {table: {columns}} of the database (its current schemas on
#: Postgres) -> None, or SchemaError when the format cannot read it
Check = Callable[[Mapping[str, set[str]]], None]

# A row as a driver gives it: a mapping by column name, or SQLite's Row (indexable by
# column name, not a Mapping to the type checker).
Row = Mapping[str, Any] | sqlite3.Row

# ---- a write given as steps ------------------------------------------------------------
# SQLiteConnection.write_steps runs a write given as a generator of steps whole on its
# connection's thread. The generator yields
#   ("fetch", sql, params)     -> its rows, as dicts
#   ("execute", sql, params)   -> the number of rows changed
#   ("call", function)         -> function(the sqlite3 connection), a format's own step
#                                 (AgentOS's ("put", checkpoint, blobs): `steps_of`)
# and returns the write's result.
WriteSteps = Generator[tuple, Any, Any]


def parse_url(url: str | None) -> tuple[str, str]:
    """("sqlite", path) or ("postgres", dsn): a file path, `sqlite:///path`
    (`sqlite:////abs/path`), `postgresql://...` / `postgres://...`; the default is
    `./checkpoints.db`."""
    url = (url or "").strip() or DEFAULT_DB
    lower = url.lower()
    if lower.startswith(("postgresql://", "postgres://")):
        return "postgres", url
    if lower.startswith("sqlite://"):
        path = url[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]  # sqlite:///rel.db -> rel.db, sqlite:////abs.db -> /abs.db
        if not path:
            raise UsageError(f"no file path in {url!r}")
        return "sqlite", path
    if "://" in url.split("/")[0] + "//" and "://" in url:
        scheme = url.split("://", 1)[0]
        raise UsageError(
            f"unsupported database URL scheme {scheme!r}; use a file path, sqlite:///path or postgresql://..."
        )
    return "sqlite", url


class Reads:
    """Reads with `?` placeholders, on a connection and inside a transaction."""

    COLLATE = ""
    kind = ""  # "sqlite" or "postgres"

    @abstractmethod
    async def _fetch(self, sql: str, *params: Any) -> Sequence[Row]:
        """Rows as mappings by column name, created_at as an ISO string."""

    async def _fetch_tuples(self, sql: str, *params: Any) -> list[Sequence[Any]]:
        """Rows as tuples in the order of the selected columns (for many rows: cheaper
        than mappings); created_at as an ISO string."""
        return [
            tuple(r.values()) if isinstance(r, Mapping) else tuple(r) for r in await self._fetch(sql, *params)
        ]

    async def _fetchval(self, sql: str, *params: Any) -> Any:
        rows = await self._fetch(sql, *params)
        if not rows:
            return None
        return next(iter(dict(rows[0]).values()))

    async def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Run a read-only query written with `?` placeholders (both dialects); rows as
        dicts by column name, created_at as an ISO string. It never writes."""
        return [dict(r) for r in await self._fetch(sql, *params)]

    async def table_exists(self, name: str) -> bool:
        """Whether a table of this name exists (in the current schema); creates nothing."""
        sql = (
            "SELECT to_regclass(?) IS NOT NULL AS e"
            if self.kind == "postgres"
            else "SELECT COUNT(*) AS e FROM sqlite_master WHERE type = 'table' AND name = ?"
        )
        return bool(await self._fetchval(sql, name))


class Transaction(Reads, ABC):
    """One open write transaction. Statements use `?` placeholders on every backend."""

    @abstractmethod
    async def execute(self, sql: str, *params: Any) -> int:
        """Run a statement; return the number of rows it changed."""

    @abstractmethod
    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run a statement once per parameter row."""

    async def execute_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Run statements (SQL, parameters) in turn; the rows each changed. (SQLite: in one
        call on the connection's thread.)"""
        return [await self.execute(sql, *params) for sql, params in statements]

    @abstractmethod
    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Run a query; return its rows as dicts (created_at as the ISO string)."""

    async def _fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        return await self.fetch(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        return await self._fetchval(sql, *params)

    @abstractmethod
    def timestamp(self, iso: str) -> Any:
        """The parameter value for a timestamp given as an ISO string."""


class Connection(Reads):
    """A database connection of the shared layer (SQLiteConnection, PostgresConnection):
    read-only unless asked otherwise, the format's schema `check` run when it connects.
    A format's store holds one and reaches it as `store.connection`; the journal writes
    through its `transaction()`."""

    #: a display name of the database, safe to print (no password)
    display_name: str = ""
    local_file: str | None = None  # the database's file on this machine (SQLite)
    _readonly = False
    check: Check | None = None
    create_schema = ""  # the format's tables, made when a new database is created

    @property
    def connection(self) -> Connection:
        """Itself: a store that is its own connection (AgentOS's) offers it as a store
        on another connection does (`store.connection`, what the journal writes through)."""
        return self

    @property
    def readonly(self) -> bool:
        """Whether it was opened read-only (a write then raises ReadOnlyDatabase)."""
        return self._readonly

    def twin(self, target: str | None = None) -> Connection:
        """A writable connection of the same class, with the same schema check, to
        `target` (default: this database), not connected: where a rehearsal writes what is
        then thrown away (the journal's dry runs)."""
        make: Any = type(self)  # the subclasses' constructor: (target, readonly=, create=)
        twin: Connection = make(target if target is not None else self._target, readonly=False, create=False)
        if "check" in vars(self):  # a format's check given to this connection
            twin.check = self.check
        return twin

    @property
    def _target(self) -> str:
        """What the connection was made with (a path, a DSN): not for display."""
        raise NotImplementedError

    async def connect(self) -> None:
        """Open the connection and check the schema (lazily, by every read)."""

    async def close(self) -> None:
        """Release connections. Safe to call twice."""

    async def _connect_writable(self) -> None:
        """Connect for a write: ReadOnlyDatabase on a connection opened read-only."""
        if self._readonly:
            raise ReadOnlyDatabase(f"{self.display_name} was opened read-only")
        await self.connect()

    def _checked(self, rows: Iterable[Sequence[Any]]) -> None:  # `check` on (table, column) rows
        found: dict[str, set[str]] = {}
        for table, column in rows:
            found.setdefault(table, set()).add(column)
        if self.check is not None:
            self.check(found)
