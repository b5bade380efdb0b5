"""The private APIs agentctl leans on for speed, each confined to one module and checked
live on the installed release (the newest published when this was written: aiosqlite
0.22.1, typer 0.29.2), so a release that drops one fails here, not silently slower:

- aiosqlite's `Connection._execute` and `._conn` (run a function on the connection's
  thread): only in agentctl/storage/sql/sqlite.py (`_thread_runner`, which falls back
  to the public path without them; pyproject pins aiosqlite below 0.23);
- Typer's `typer._coercion.RuntimeParam`: only in agentctl/cli/coercion.py (`install`,
  which leaves Typer's own conversion without it)."""

from __future__ import annotations

import re

from tests.support.rig import REPO

#: a private API -> the one module allowed to use it
CONFINED = {
    r"""["']_execute["']|["']_conn["']|\._execute\(""": "agentctl/storage/sql/sqlite.py",
    r"\btyper\._coercion\b": "agentctl/cli/coercion.py",
}


def test_each_private_api_is_used_in_one_module() -> None:
    for pattern, home in CONFINED.items():
        users = sorted(
            {
                str(p.relative_to(REPO))
                for p in (REPO / "agentctl").rglob("*.py")
                if re.search(pattern, p.read_text(encoding="utf-8"))
            }
        )
        assert users == [home], (pattern, users)


async def test_aiosqlite_private_thread_runner_is_live(tmp_path) -> None:
    import sqlite3

    import aiosqlite

    from agentctl.storage.sql.sqlite import _thread_runner

    async with aiosqlite.connect(tmp_path / "x.db") as conn:
        found = _thread_runner(conn)
        assert found is not None, f"aiosqlite {aiosqlite.__version__} has no _execute/_conn"
        run, raw = found
        assert isinstance(raw, sqlite3.Connection)
        assert await run(lambda: raw.execute("SELECT 41 + 1").fetchone()[0]) == 42


def test_typer_runtime_param_hook_is_live() -> None:
    from typer import core

    from agentctl.cli import coercion

    coercion.install()
    assert getattr(core._TyperParameter.get_runtime_param, "agentctl_plain", False), (
        "typer's _coercion.RuntimeParam hook is not installed on this Typer"
    )
