"""Fault injection from outside agentctl's code: `failing_at(backend, n)` makes the n-th
statement of the writes the backend runs while the block runs raise `InjectedFault`
(before the statement runs): the statements of its write transactions and of its
`write_steps` writes (SQLite's snapshot path), counted together from the start of the
block, so that an operation split into two transactions cannot pass for atomic. It wraps the backend's public
`transaction()` and `write_steps()` on that one object, as tests/scripts/paused_agentctl.py
wraps `transaction()`; agentctl's code is untouched.

    with failing_at(backend, 3):
        await engine.rewind(cid)   # raises InjectedFault at its 3rd statement

`failing_at` takes a backend or any format's Store: every format's History writes
through a backend's `transaction()` (`write_connection` finds it), so the same faults
reach every format's writes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from agentctl.storage.agentos.base import Transaction, WriteSteps


class InjectedFault(RuntimeError):
    """The fault `failing_at` injects."""


class _Counter:
    def __init__(self, limit: int):
        self.limit = limit
        self.statements = 0

    def tick(self) -> None:
        """Count a statement; fail the n-th one (and any after it)."""
        self.statements += 1
        if self.statements >= self.limit:
            raise InjectedFault(f"fault injected at statement {self.statements}")


class FailingTransaction(Transaction):
    """A transaction whose statements are counted, the n-th failing. A Transaction
    itself, so that its row reads (get, query, ...) go through its counted `fetch`."""

    def __init__(self, tx: Transaction, counter: _Counter):
        self._tx = tx
        self._counter = counter
        self.kind = tx.kind

    async def execute(self, sql: str, *params: Any) -> int:
        self._counter.tick()
        return await self._tx.execute(sql, *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._counter.tick()
        await self._tx.executemany(sql, rows)

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        self._counter.tick()
        return await self._tx.fetch(sql, *params)

    async def put(self, checkpoint: Any, blobs: Sequence[str] | None = None) -> str:
        self._counter.tick()
        return await self._tx.put(checkpoint, blobs)

    def timestamp(self, iso: str) -> Any:
        return self._tx.timestamp(iso)

    async def table_exists(self, name: str) -> bool:
        self._counter.tick()
        return await self._tx.table_exists(name)


def _failing_steps(steps: WriteSteps, counter: _Counter) -> WriteSteps:
    """`steps` with each statement counted before it runs."""
    result = None
    try:
        while True:
            op = steps.send(result)
            counter.tick()
            result = yield op
    except StopIteration as done:
        return done.value


def write_connection(target: Any) -> Any:
    """The backend a Store's History writes through: the AgentOS store is its backend;
    the other formats' stores hold one (`_db`: LangGraph, the SDKs; `db`: the article)."""
    for attr in ("_db", "db"):
        inner = getattr(target, attr, None)
        if inner is not None and hasattr(inner, "transaction"):
            return inner
    assert hasattr(target, "transaction"), f"{type(target).__name__} has no transaction()"
    return target


@contextmanager
def failing_at(target: Any, n: int) -> Iterator[None]:
    """While the block runs, the n-th statement written through `target`'s backend (a
    backend or a Store, see `write_connection`; and every one after it) raises
    InjectedFault."""
    backend = write_connection(target)
    transaction = backend.transaction
    write_steps = getattr(backend, "write_steps", None)
    counter = _Counter(n)

    @asynccontextmanager
    async def failing_transaction(lock_threads: Sequence[str] = ()) -> AsyncIterator[Transaction]:
        async with transaction(lock_threads=lock_threads) as tx:
            yield FailingTransaction(tx, counter)

    async def failing_write_steps(steps: WriteSteps) -> Any:
        assert write_steps is not None
        return await write_steps(_failing_steps(steps, counter))

    backend.transaction = failing_transaction
    if write_steps is not None:
        backend.write_steps = failing_write_steps
    try:
        yield
    finally:
        del backend.transaction
        if write_steps is not None:
            del backend.write_steps


async def fails_cleanly_then_works(target: Any, state: Any, op: Any, *, limit: int = 300) -> int:
    """Fail `op()` at its 1st, 2nd, ... statement written through `target` (see
    `failing_at`) until it completes; after each failure `await state()` must be what it
    was before, and after the completed run it must differ. Returns the statement count."""
    before = await state()
    n = 1
    while True:
        try:
            with failing_at(target, n):
                await op()
        except InjectedFault:
            assert await state() == before, f"statement {n} left a change behind"
            n += 1
            assert n < limit
            continue
        break
    assert await state() != before
    return n
