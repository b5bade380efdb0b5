"""Formats and `open_store(url)`: the one way the CLI, the TUI and library users open a
database of any agent store.

    async with open_store("sessions.db") as store:           # detected, read-only
        print(store.format.name, await store.thread_summaries(10))
    async with open_store(url, readonly=False) as store:
        await store.history().rewind("s1@3")

The format is detected from the schema (tables and columns), never from the file
name; `format=NAME` (the CLI's `--format`, `AGENTCTL_FORMAT`) forces one. A database
that matches no format raises SchemaError naming the tables it has (exit 6).
Drivers are imported only when a database of their kind is opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from agentctl.errors import SchemaError, UsageError
from agentctl.storage.contract import (
    Capability,
    FormatSpec,
    History,
    Problem,
    PruneSpec,
    Store,
    Unsupported,
)

__all__ = [
    "Capability",
    "FormatSpec",
    "History",
    "Problem",
    "PruneSpec",
    "Store",
    "Unsupported",
    "formats",
    "get_format",
    "detect",
    "make_store",
    "open_store",
    "parse_url",
    "local_file",
    "first_thread_page",
]


def parse_url(url: str | None) -> tuple[str, str]:
    """("sqlite", path) or ("postgres", dsn)."""
    from agentctl.storage.sql.conn import parse_url as _parse

    return _parse(url)


def target_to_write(url: str | None) -> tuple[str, str]:
    """`parse_url` of a database another program (the user's agent, in the child process)
    is about to write: a SQLite file whose mode lets nobody write it is refused
    (ReadOnlyDatabase) before anything runs, as agentctl's own writes refuse it."""
    kind, target = parse_url(url)
    if kind == "sqlite":
        from agentctl.storage.sqlutil import refuse_unwritable

        refuse_unwritable(target)
    return kind, target


def local_file(url: str | None) -> str | None:
    """The file of the database at `url` when it is one on this machine (SQLite), else
    None: what its store's `local_file` will say, known before a store is opened."""
    from agentctl.storage.contract import local_file_of

    return local_file_of(*parse_url(url))


_FORMATS: list[FormatSpec] | None = None


def formats() -> list[FormatSpec]:
    """Every format agentctl knows, in detection order: the built-ins (LangGraph first:
    its `checkpoints` table also satisfies looser matchers), then the stores plugged in
    through the entry-point group `agentctl.stores` (agentctl/storage/plugins.py)."""
    global _FORMATS
    if _FORMATS is None:
        from agentctl.storage.plugins import load_formats

        _FORMATS = load_formats()
    return list(_FORMATS)


def get_format(name: str) -> FormatSpec:
    wanted = (name or "").strip().lower()
    for spec in formats():
        if spec.name == wanted:
            return spec
    raise UsageError(f"unknown format {name!r}; known: " + ", ".join(f.name for f in formats()))


def _pick(tables: Mapping[str, set[str]]) -> FormatSpec | None:
    for spec in formats():
        if spec.matches(tables):
            return spec
    return None


def no_format_error(where: str, tables: Mapping[str, set[str]]) -> SchemaError:
    names = sorted(t for t in tables if not t.startswith(("sqlite_", "agentctl_")))
    shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
    known = ", ".join(f.name for f in formats())
    why = next((w for f in formats() if f.mismatch and (w := f.mismatch(tables))), "no format's tables")
    return SchemaError(
        f"{where} matches no known format ({known}); {why}"
        + (f" (it has: {shown})" if names else " (it has no tables)")
    )


async def detect(url: str | None) -> FormatSpec:
    """The format of the database at `url` (reads only its schema)."""
    from agentctl.storage import schema

    kind, target = parse_url(url)
    tables = await schema.tables_or_none(kind, target)
    if not tables:  # the AgentOS store's own checks say why (missing file, not a database)
        async with open_store(url, format="agentos"):
            pass
        tables = await schema.tables(kind, target)
    spec = _pick(tables)
    if spec is None:
        raise no_format_error(schema.where(kind, target), tables)
    return spec


async def make_store(
    url: str | None = None,
    *,
    format: str | None = None,
    readonly: bool = True,
    create: bool = False,
    **kwargs: Any,
) -> Store:
    """The store of a database, not yet connected. With `format` the detection is
    skipped; without it, a database whose schema cannot be read at all is opened as
    AgentOS, whose own checks then name the problem (missing file, not a database)."""
    import os

    kind, target = parse_url(url)
    name = format or os.environ.get("AGENTCTL_FORMAT") or ""
    if name:
        spec = get_format(name)
    else:
        from agentctl.storage import schema

        tables = await schema.tables_or_none(kind, target)
        if tables is None or not tables:
            spec = get_format("agentos")
        else:
            picked = _pick(tables)
            if picked is None:
                raise no_format_error(schema.where(kind, target), tables)
            spec = picked
    return spec.open(kind, target, readonly=readonly, create=create, **kwargs)


def first_thread_page(path: str, limit: int) -> list[Any]:
    """The first page of `threads list` of an AgentOS SQLite file, read synchronously on
    the caller's thread with a connection of its own (the TUI starts it before Textual
    is imported). Raises for anything else; the caller then reads the normal way."""
    return get_format("agentos").read_first_page(path, limit)


@asynccontextmanager
async def open_store(
    url: str | None = None,
    *,
    format: str | None = None,
    readonly: bool = True,
    create: bool = False,
    **kwargs: Any,
) -> AsyncIterator[Store]:
    """Open the store of a database (detected unless `format`), connected, and close it
    at the end of the block."""
    store = await make_store(url, format=format, readonly=readonly, create=create, **kwargs)
    try:
        await store.connect()
        yield store
    finally:
        await store.close()
