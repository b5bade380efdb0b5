"""What the rig (tests/conftest.py) and the tests share: the repository's paths, a
synchronous way to run a coroutine, and a Postgres DSN narrowed to one schema."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from agentctl.cli.context import run

REPO = Path(__file__).resolve().parent.parent.parent
SAMPLE_DB = REPO / "sample_db" / "checkpoints.db"
# the files the tests run as separate processes (`python FILE ...`)
SCRIPTS = REPO / "tests" / "scripts"
SUPPORT = REPO / "tests" / "support"
REQUIRE_PG = os.environ.get("AGENTCTL_REQUIRE_PG") == "1"


def unavailable(reason: str) -> NoReturn:
    """A part of the Postgres rig is missing: the test skips with the reason, or fails
    when `AGENTCTL_REQUIRE_PG=1`."""
    import pytest

    if REQUIRE_PG:
        pytest.fail("AGENTCTL_REQUIRE_PG=1 but " + reason)
    pytest.skip(reason)


def rig_cache(env_var: str) -> Path:
    """Where a rig keeps what it installs once: `env_var`'s folder if set, else
    `~/.cache/agentctl-tests` (or under XDG_CACHE_HOME)."""
    base = os.environ.get(env_var)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "agentctl-tests"


def fast_tier_refuses(request: Any, what: str) -> None:
    """In the fast tier (`-m "not slow"`) a test asking for `what` is marked wrongly: fail
    it, rather than start a server the tier does without."""
    import pytest

    if "not slow" in (request.config.getoption("markexpr") or ""):
        pytest.fail(f"{what} in the fast tier: mark the test slow (tests/conftest.py)")


def run_sync(coro_fn: Callable[[], Any]) -> Any:
    """Run a coroutine function to completion, also from inside a running event loop."""
    return run(coro_fn())


def pg_execute(dsn: str, *statements: str) -> None:
    """Run SQL statements on a Postgres DSN (one connection), e.g. to make or drop a schema."""
    import asyncpg

    async def go() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            for sql in statements:
                await conn.execute(sql)
        finally:
            await conn.close()

    run_sync(go)


def with_search_path(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}search_path={schema}"
