"""Builders shared by the engine tests (tests/engine/test_engine*.py)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

from agentctl.backends import make_backend
from agentctl.engine import CheckpointEngine, CheckpointGC, SnapshotConfig

SIDE_TABLES = ("agentctl_journal", "agentctl_trash_checkpoints")
T0 = datetime(2026, 3, 1, 10, 0, 0, tzinfo=timezone.utc)


class Clock:
    """A deterministic clock: each call advances `step` (default 1 ms)."""

    def __init__(self, start: datetime = T0, step: timedelta = timedelta(milliseconds=1)):
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


def make_engine(backend: Any, seed: int = 1, clock: Any = None, **config: Any) -> CheckpointEngine:
    config.setdefault("gc_policy", CheckpointGC.KEEP_ALL)
    return CheckpointEngine(
        backend, SnapshotConfig(**config), rng=random.Random(seed), clock=clock or Clock()
    )


async def open_rw(url: str):
    b = make_backend(url, readonly=False, create=True)
    await b.connect()
    return b


async def snap(engine: CheckpointEngine, thread: str, n: int, **kw: Any) -> list[str]:
    """n snapshots on a thread, state {"i": k, "thread": thread}; their ids."""
    ids = []
    for k in range(n):
        ids.append(
            await engine.snapshot(
                thread,
                [{"role": "user", "content": f"{thread} {k}"}],
                {"i": k, "thread": thread},
                {"tool": k},
                **kw,
            )
        )
    return ids


async def bulk(backend: Any, thread: str, n: int, start: int = 1) -> list[str]:
    """n checkpoints of a thread written in one transaction (as a fast foreign writer),
    steps start.., each the parent of the next, created_at 1 s apart; their ids."""
    from agentctl.engine import _INSERT_SQL
    from agentctl.storage.agentos.base import checkpoint_params
    from tests.support.helpers import make_cp

    cps = []
    parent = None
    for step in range(start, start + n):
        created = (T0 + timedelta(seconds=step)).isoformat()
        cp = make_cp(thread, step, parent=parent, created_at=created)
        cps.append(cp)
        parent = cp.metadata.checkpoint_id
    async with backend.transaction() as tx:
        await tx.executemany(_INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in cps])
    return [cp.metadata.checkpoint_id for cp in cps]


async def dump(backend: Any) -> dict[str, list[Any]]:
    """Every row of every table agentctl may touch (the schema too on SQLite), sorted."""
    out: dict[str, list[Any]] = {}
    tables = ["checkpoints"] + [t for t in SIDE_TABLES if await backend.table_exists(t)]
    if backend.kind == "sqlite":
        tables += ["sqlite_master", "sqlite_sequence"]
    for table in tables:
        rows = await backend.query(f"SELECT * FROM {table}")
        out[table] = sorted((tuple(sorted(r.items())) for r in rows), key=repr)
    return out


async def thread_ids(backend: Any, thread: str) -> list[str]:
    return [m.checkpoint_id for m in await backend.read_thread(thread, 100000)]
