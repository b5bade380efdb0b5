"""Every format's writes are all-or-nothing: a failure injected before the 1st, 2nd, ...
statement of a rewind, a hard rewind, a branch and an undo (tests/support/fault_injection.py,
through the backend the format's History writes with) leaves every table of the database,
agentctl's side tables included, exactly as it was; then the write runs to its end and
does change it. The AgentOS engine's own writes: tests/engine/test_engine_atomic.py."""

from __future__ import annotations

import importlib.util
from typing import Any, Awaitable, Callable

import pytest

from agentctl.refs import resolve
from agentctl.storage import Capability, open_store
from tests.support.contract_formats import CASES, Built, FormatCase, dump
from tests.support.fault_injection import InjectedFault, failing_at

KINDS = ("sqlite", "postgres")
PAIRS = [(name, kind) for name in CASES for kind in KINDS]


@pytest.fixture(params=PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
async def built(request, tmp_path) -> tuple[FormatCase, Built]:
    name, kind = request.param
    case = CASES[name]
    for module in case.needs:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed")
    url = str(tmp_path / "db.sqlite") if kind == "sqlite" else request.getfixturevalue("pg_dsn")
    return case, await case.build(kind, url)


async def fails_cleanly_then_works(url: str, store: Any, op: Callable[[], Awaitable[Any]]) -> int:
    """Fail `op` at its 1st, 2nd, ... statement until it completes; each failure must
    leave every table unchanged. Returns how many statements the write has."""
    before = await dump(url)
    n = 1
    while True:
        try:
            with failing_at(store, n):
                await op()
        except InjectedFault:
            assert await dump(url) == before, f"statement {n} left a change behind"
            n += 1
            assert n < 300
            continue
        break
    assert await dump(url) != before
    return n


async def test_rewind_branch_undo_are_atomic(built) -> None:
    case, b = built
    async with open_store(b.url, readonly=False) as store:
        assert store.can(Capability.REWIND) and store.can(Capability.BRANCH)
        history = store.history()
        target = (await resolve(store, f"{b.main}@2")).checkpoint_id
        assert await fails_cleanly_then_works(b.url, store, lambda: history.rewind(target)) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.rewind(target, hard=True)) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
        source = (await resolve(store, f"{b.main}@1")).checkpoint_id
        assert await fails_cleanly_then_works(b.url, store, lambda: history.branch(source, "atomic")) > 1
        assert await fails_cleanly_then_works(b.url, store, lambda: history.undo()) > 1
