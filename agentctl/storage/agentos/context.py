"""The small context every engine module works over: the backend, the configuration,
the clock, the id maker, the write transaction, and what the engine remembers between
calls (its step counters, the threads a scan found free of delta rows, the last op)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from agentctl.errors import CheckpointNotFound, OperationError
from agentctl.model import CheckpointMetadata, utc_now_iso
from agentctl.storage.agentos.rows import COLUMNS
from agentctl.storage.agentos.types import SnapshotConfig
from agentctl.storage.sqlutil import marks
from agentctl.storage.timefmt import iso, to_datetime

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import CheckpointBackend, Reader, Transaction

_HEX = "0123456789abcdef"
T = TypeVar("T")


INSERT_SQL = f"INSERT INTO checkpoints ({', '.join(COLUMNS)}) VALUES ({marks(len(COLUMNS))})"

# The rows of a thread after a given checkpoint, in (step, created_at, id) order.
AFTER = (
    "thread_id = ? AND (step, created_at, id) > "
    "(SELECT step, created_at, id FROM checkpoints WHERE checkpoint_id = ?)"
)


@dataclass
class EngineContext:
    backend: CheckpointBackend
    config: SnapshotConfig
    rng: random.Random | None = None
    clock: Callable[[], Any] | None = None
    #: thread -> the highest step this engine wrote or rewound to (see the package doc)
    counters: dict[str, int] = field(default_factory=dict)
    #: SQLite: thread -> (data_version, write_generation) when a scan last found no
    #: delta rows in it (see snapshot.snapshot_steps)
    delta_free: dict[str, tuple[int, Any]] = field(default_factory=dict)
    #: the op id of the last write this engine recorded (None before any)
    last_op_id: int | None = None

    def hex(self, n: int) -> str:
        if self.rng is not None:
            return "".join(self.rng.choice(_HEX) for _ in range(n))
        # `random` is seeded from os.urandom at import; uuid4() would ask the kernel
        # for 16 bytes per id (tens of microseconds a call in some VMs).
        return f"{random.getrandbits(4 * n):0{n}x}"

    def now_dt(self) -> datetime:
        return to_datetime(self.clock(), "the engine's clock") if self.clock else datetime.now(timezone.utc)

    def now(self) -> str:
        return iso(self.clock()) if self.clock else utc_now_iso()

    @asynccontextmanager
    async def write(self, threads: Sequence[str], *, exclusive: bool = True) -> AsyncIterator[Transaction]:
        """One write transaction locking `threads` (Postgres: and agents' writes)."""
        async with self.backend.transaction(lock_threads=list(dict.fromkeys(threads))) as tx:
            if exclusive and tx.kind == "postgres":
                # Agents write without our advisory locks, and under READ COMMITTED each
                # statement sees what committed before it: a row an agent adds between
                # two statements of a rewind would be moved without being recorded. Hold
                # their writes off (reads go on) until the commit, as BEGIN IMMEDIATE
                # does on SQLite. An agent's own snapshot does not need this.
                await tx.execute("LOCK TABLE checkpoints IN EXCLUSIVE MODE")
            yield tx

    async def write_if(
        self, threads: Sequence[str], body: Callable[[Transaction], Awaitable[T | None]]
    ) -> T | None:
        """`body(tx)` in one write transaction (as `write`): kept when it returns a
        value, undone (nothing written, no side table created) when it returns None,
        e.g. a prune that found nothing to delete after recording its op: the body runs
        inside a savepoint, rolled back to when it returns None (the transaction then
        commits nothing)."""
        async with self.write(threads) as tx:
            await tx.execute("SAVEPOINT agentctl_write_if")
            value = await body(tx)
            if value is None:
                await tx.execute("ROLLBACK TO SAVEPOINT agentctl_write_if")
            await tx.execute("RELEASE SAVEPOINT agentctl_write_if")
            return value

    async def next_step(self, reader: Reader, thread_id: str) -> int:
        top = await reader.max_step(thread_id)
        return max(int(top) if top is not None else 0, self.counters.get(thread_id, 0)) + 1

    def bump(self, thread_id: str, step: int) -> None:
        self.counters[thread_id] = max(self.counters.get(thread_id, 0), step)

    def done(self, op_id: int | None) -> int | None:
        """Remember `op_id` (unless None) as the last op this engine recorded; return it."""
        if op_id is not None:
            self.last_op_id = op_id
        return op_id


# ---- reads shared by the modules ----------------------------------------------------


async def require_meta(reader: Reader, checkpoint_id: str) -> CheckpointMetadata:
    meta = await reader.get_metadata(checkpoint_id)
    if meta is None:
        raise CheckpointNotFound(checkpoint_id)
    return meta


async def thread_count(reader: Reader, thread_id: str) -> int:
    return int(
        await reader._fetchval("SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?", thread_id) or 0
    )


async def thread_exists(reader: Reader, thread_id: str) -> bool:
    return bool(await reader.query("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", thread_id))


async def fresh_thread(reader: Reader, make: Callable[[], str]) -> str:
    for _ in range(50):
        name = make()
        if not await thread_exists(reader, name):
            return name
    raise OperationError("could not find an unused thread name")  # pragma: no cover


def ts_param(kind: str, iso: str) -> Any:
    return to_datetime(iso) if kind == "postgres" else iso
