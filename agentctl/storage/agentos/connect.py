"""Storage backends and `open_backend(url)`.

    async with open_backend("checkpoints.db") as backend:          # read-only
        heads = await backend.thread_summaries()
    async with open_backend("postgresql://u@h/db", readonly=False) as backend:
        ...

A URL is a file path, `sqlite:///path` (`sqlite:////abs/path`), or
`postgresql://...` / `postgres://...`. The default is `./checkpoints.db`.
The drivers are imported only when a backend of their kind is opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agentctl.storage.agentos.base import CheckpointBackend, Transaction  # noqa: F401  (re-exported)
from agentctl.storage.sql.conn import DEFAULT_DB, parse_url  # noqa: F401  (re-exported)


def make_backend(
    url: str | None = None, *, readonly: bool = True, create: bool = False, **kwargs: Any
) -> CheckpointBackend:
    """A backend for a URL, not yet connected. The debugger's default is read-only and
    never creates anything; the library's writers use `create_checkpointer`."""
    kind, target = parse_url(url)
    return open_kind(kind, target, readonly=readonly, create=create, **kwargs)


def open_kind(
    kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any
) -> CheckpointBackend:
    """The AgentOS format's store opener (its FormatSpec names it): kind "sqlite"
    (target a file path) or "postgres" (target a DSN)."""
    if kind == "postgres":
        from agentctl.storage.agentos.postgres import PostgresCheckpointer

        return PostgresCheckpointer(target, readonly=readonly, create=create, **kwargs)
    from agentctl.storage.agentos.sqlite import SQLiteCheckpointer

    return SQLiteCheckpointer(target, readonly=readonly, create=create, **kwargs)


@asynccontextmanager
async def open_backend(
    url: str | None = None, *, readonly: bool = True, create: bool = False, **kwargs: Any
) -> AsyncIterator[CheckpointBackend]:
    """Open a backend, check its schema, and close it at the end of the block."""
    backend = make_backend(url, readonly=readonly, create=create, **kwargs)
    try:
        await backend.connect()
        yield backend
    finally:
        await backend.close()


def create_checkpointer(backend: str = "sqlite", **kwargs: Any) -> CheckpointBackend:
    """AgentOS's factory: `create_checkpointer("sqlite", db_path=...)` or
    `create_checkpointer("postgres", dsn=...)`. Creates the table when missing."""
    name = (backend or "sqlite").lower()
    if name in ("sqlite", "sqlite3"):
        from agentctl.storage.agentos.sqlite import SQLiteCheckpointer

        kwargs.pop("dsn", None)
        return SQLiteCheckpointer(**kwargs)
    if name in ("postgres", "postgresql", "pg"):
        from agentctl.storage.agentos.postgres import PostgresCheckpointer

        kwargs.pop("db_path", None)
        return PostgresCheckpointer(**kwargs)
    raise ValueError(f"unknown checkpointer backend {backend!r}; use 'sqlite' or 'postgres'")
