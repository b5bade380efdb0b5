"""Shell completion of thread and checkpoint ids, read from the database.

The callbacks open the database read-only and give up silently: a completion must
never print an error into the user's shell or create a file.
"""

from __future__ import annotations

import os
from typing import Any

import typer

LIMIT = 50


def _db(ctx: typer.Context) -> str:
    root = ctx.find_root()
    return root.params.get("db") or os.environ.get("AGENTCTL_DB") or "./checkpoints.db"


def _complete(ctx: typer.Context, incomplete: str, *, threads: bool, checkpoints: bool) -> list[str]:
    from agentctl.cli.context import run
    from agentctl.storage import open_store

    async def go() -> list[str]:
        out: list[str] = []
        root = ctx.find_root()
        fmt = root.params.get("format_") or os.environ.get("AGENTCTL_FORMAT") or None
        async with open_store(_db(ctx), format=fmt) as store:
            if threads:
                out += await store.find_thread_ids(incomplete, limit=LIMIT)
            if checkpoints:
                out += await store.find_checkpoint_ids(incomplete, limit=LIMIT)
        return out

    try:
        return list(dict.fromkeys(run(go())))
    except Exception:  # noqa: BLE001 - see the module docstring: completion fails silently
        return []


def complete_thread(ctx: typer.Context, incomplete: str) -> list[str]:
    return _complete(ctx, incomplete, threads=True, checkpoints=False)


def complete_ref(ctx: typer.Context, incomplete: str) -> list[str]:
    return _complete(ctx, incomplete, threads=True, checkpoints=True)


def complete_checkpoint(ctx: typer.Context, incomplete: str) -> list[str]:
    return _complete(ctx, incomplete, threads=False, checkpoints=True)


__all__: list[Any] = ["complete_thread", "complete_ref", "complete_checkpoint"]
