"""Every format's writes are all-or-nothing: a failure injected before the 1st, 2nd, ...
statement of a rewind, a hard rewind, a branch and an undo (tests/support/fault_injection.py,
through the backend the format's History writes with) leaves every table of the database,
agentctl's side tables included, exactly as it was; then the write runs to its end and
does change it. The AgentOS engine's own writes: tests/engine/test_engine_atomic.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentctl.refs import resolve
from agentctl.storage import Capability, open_store
from tests.support.contract_formats import Built, FormatCase, asyncpg_connect, dump
from tests.support.contract_suite import WRITING
from tests.support.fault_injection import fails_cleanly_then_works as failing_everywhere


#: the stores that write (a read-only one refuses every write: test_writes.py)
@pytest.mark.parametrize("built", WRITING, ids=[f"{n}-{k}" for n, k in WRITING], indirect=True)
async def test_rewind_branch_undo_are_atomic(built) -> None:
    case, b = built
    # the tables are read after every failed statement: through one connection on Postgres
    conn = await asyncpg_connect(b.url)

    async def fails_cleanly_then_works(url: str, store: Any, op: Callable[[], Awaitable[Any]]) -> int:
        """`op` failed at each statement leaves every table of `url` unchanged (then works)."""
        return await failing_everywhere(store, lambda: dump(url, conn=conn), op)

    try:
        await _atomic_writes(case, b, fails_cleanly_then_works)
    finally:
        if conn is not None:
            await conn.close()


async def _atomic_writes(case: FormatCase, b: Built, fails_cleanly_then_works: Any) -> None:
    async with open_store(b.url, readonly=False) as store:
        assert store.can(Capability.REWIND) and store.can(Capability.BRANCH)
        history = store.history()
        target = (await resolve(store, f"{b.main}@2")).checkpoint_id
        assert await fails_cleanly_then_works(b.url, store, lambda: history.rewind(target)) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
        if case.hard_rewind:
            assert await fails_cleanly_then_works(b.url, store, lambda: history.rewind(target, hard=True)) > 1
            assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
        source = (await resolve(store, f"{b.main}@1")).checkpoint_id
        assert await fails_cleanly_then_works(b.url, store, lambda: history.branch(source, "atomic")) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
