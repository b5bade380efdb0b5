"""Small pieces of SQL the storage layer writes in many places: `?` placeholders, and
an `IN (...)` list a chunk at a time (SQLite's default limit is 999 parameters a
statement; Postgres takes 32,767, and a long list plans slowly on both)."""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence, TypeVar

T = TypeVar("T")

#: rows an `IN (...)` list holds by default
CHUNK = 500


def marks(n: int) -> str:
    """`n` placeholders for an `IN (...)` list or a VALUES row: "?, ?, ?"."""
    return ", ".join("?" * n)


def chunks(items: Sequence[T] | Iterable[T], n: int = CHUNK) -> Iterator[list[T]]:
    """`items` in lists of at most `n`, in order (none for no items)."""
    seq = items if isinstance(items, list) else list(items)
    for i in range(0, len(seq), n):
        yield seq[i:i + n]  # a list slice is a new list


def in_chunks(items: Sequence[T] | Iterable[T], n: int = CHUNK) -> Iterator[tuple[str, list[T]]]:
    """(placeholders, chunk) for each chunk of `items`: `f"... IN ({ph})", *chunk`."""
    for chunk in chunks(items, n):
        yield marks(len(chunk)), chunk
