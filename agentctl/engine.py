"""The checkpoint engine: snapshots, time travel, branches, merges, GC, undo.

A drop-in for the AgentOS engine (same names, signatures and call shapes:
`CheckpointEngine(checkpointer, config)`, `snapshot`, `snapshot_safe`, `rewind`,
`time_travel_to_step`, `list_time_travel_points`, `branch`, `merge_branch`, the
`snapshot_on` decorator, the `snapshot_scope` context manager, `get_latest`,
`get_checkpoint_tree`), and the one place where agentctl changes history.

    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

    @engine.snapshot_on(SnapshotTrigger.TOOL_CALL)
    async def my_tool(query): ...

    await engine.rewind(checkpoint_id)              # the later checkpoints are set aside
    branch = await engine.branch(checkpoint_id, "bugfix-experiment")
    await engine.merge_branch(branch, "thread-1")   # three-way, conflicts raise

Design
------
Writes. Every write is one backend transaction (`BEGIN IMMEDIATE` on SQLite; a
transaction plus per-thread advisory locks on Postgres), its op-log records included:
a failure midway leaves the database as before, and an agent writing at the same time
waits (busy_timeout / the lock) instead of failing. Every debugger write (rewind,
branch, merge, prune, delete_thread, import, undo, purge) is recorded in the op log of
`agentctl.oplog` (side tables created by the first such write; see there for the
tables, the fingerprints and the undo rules). An agent's `snapshot` is not logged and
creates no side table.

Steps. The next step of a thread is max(highest step in the database for the thread,
this engine's counter) + 1, computed inside the write transaction, so a restarted
process or a second engine on the same database never repeats a step. `rewind` sets the
counter to the target's step (as the seeds did), `branch` to 0, `undo` and
`delete_thread` forget it.

Parents. `snapshot` without `parent_checkpoint_id` links the new checkpoint to the
thread's head (the seeds stored no parent); an explicit parent is kept as given.

Order and head. Within a thread: step, created_at, row id. The head is the last row;
no GC policy or prune ever deletes it.

Rewind. `rewind(id)` moves the checkpoints after the target (in that order) to a new
archive thread `{thread}-branch-rewind-{4 hex}`: the format's reader (`get_latest`,
ORDER BY step DESC) then sees the target as head, and the abandoned future stays as a
branch: the first moved row keeps its parent link to the target (a NULL parent is set
to the target, and undo restores it). Moved rows keep their ids, steps and content.
`hard=True` deletes them instead, into the trash, so undo works until `purge`.
Caveat: rows of the target's step ordered before it (duplicate steps a restarted
writer left) stay in the thread; the format's reader may then pick either as head.

Merge. The base is the nearest common ancestor through parent links across threads; a
merge checkpoint's `merged:<id>` tag counts as its second parent, so merging a branch
again only brings what is new. state and tools_result merge with
`agentctl.merge.three_way_merge` (strategy "three-way", "ours", "theirs"), messages with
`merge_messages`. The merge checkpoint is the new head of the target: parent = the
target's old head, step = next step, tags ["merge", "merged:<branch head>",
"branch:<branch thread>"], next_node of the target's head. Conflicts raise
`MergeConflictError` (their paths are JSON pointers into the checkpoint: "/state/..."
or "/tools_result/...") and nothing is written. A branch head that is already an
ancestor of the target's head raises OperationError ("already merged"). Without any
common ancestor the base is empty ({} and no messages).

GC. Each policy is one SQL condition over the whole thread (any length), applied only
to the thread asked and never to its head: keep_last_n n (the last max(n, 1), found
through the (thread_id, step) index), keep_age s (created_at older than s seconds by
the engine's clock; SQLite compares julianday(), so mixed ISO offsets compare right),
keep_milestones n (the first, the last and evenly spaced ones, n rows in all: position
p of N is kept when p = 0 or floor(p(n-1)/(N-1)) > floor((p-1)(n-1)/(N-1)); a window
function gives positions), keep_all. `prune` moves the deleted rows into the trash
(undoable); the automatic GC after `snapshot` (`SnapshotConfig.gc_policy`, the agent's
own retention policy, in the snapshot's transaction) deletes for real and is not
logged: keeping its deletions would grow the file forever.

Size and deltas. `max_snapshot_size_mb` is enforced (`SnapshotTooLarge`, with the size).
`delta_snapshots` (opt-in; default False) stores a snapshot as a JSON Patch against a
full row of the same thread; see `agentctl.delta` for the encoding, chosen so a foreign
reader sees an explicit placeholder, never a plausible but wrong state. agentctl's own
reads return the full checkpoint either way.

Ids. `ckpt-{thread}-{step}-{6 hex}`; branch threads `{thread}-branch-{name}-{4 hex}`.
The hex digits come from `rng` (a `random.Random`, injectable for reproducible output)
or from the `random` module (seeded from os.urandom); the time from `clock` (a callable returning a datetime or ISO string).
Unknown ids raise `CheckpointNotFound` / `ThreadNotFound` (ValueErrors whose message
says "not found").

Where the seeds' behaviour was a defect, or unspecified, this engine differs: rewind
moves (not deletes) and reports rewind_depth = checkpoints set aside and
snapshot_count_before = checkpoints in the thread before (the seeds used the in-memory
counter); a branch's first row copies the source's next_node; merge_branch is three-way
with conflicts; `get_checkpoint_tree(thread, limit=None)` returns every checkpoint of
the thread and its branches (the seeds' limit=200 cut to the newest rows of one thread;
a limit now applies per thread); snapshot links a parent. Unchanged: an unknown trigger
returns "", `time_travel_to_step` returns None when no checkpoint is at or before the
step (also for an unknown thread), `get_checkpoint_tree` of an unknown thread is empty.

Test-only: `engine._fail_at_statement = n` makes the n-th statement of the next write
transactions raise `InjectedFault` (used to prove that every write is atomic).
"""

from __future__ import annotations

import functools
import logging
import random
from collections import deque
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from enum import Enum
from typing import Any, AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence

from agentctl import delta, oplog
from agentctl.backends.base import (
    COLUMNS,
    META_COLUMNS,
    THREAD_ORDER_ASC,
    THREAD_ORDER_DESC,
    CheckpointBackend,
    Reader,
    DELTA_TAG,
    Transaction,
    WriteSteps,
    checkpoint_params,
    decode_tags,
    dumps,
    row_to_metadata,
)
from agentctl.errors import (
    AgentctlError,
    CheckpointNotFound,
    DatabaseBusy,
    MergeConflictError,
    NotFoundError,
    OperationError,
    SnapshotTooLarge,
    ThreadNotFound,
    UsageError,
)
from agentctl.storage.contract import History, PruneSpec, Unsupported
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.oplog import OpRecord, OpResult, PurgeResult

__all__ = [
    "CheckpointEngine",
    "CheckpointGC",
    "InjectedFault",
    "MergePlan",
    "OpRecord",
    "OpResult",
    "PrunePlan",
    "PurgeResult",
    "RewindPlan",
    "SnapshotConfig",
    "SnapshotTrigger",
    "TimeTravelResult",
    "create_checkpoint_engine",
]

logger = logging.getLogger(__name__)

MERGE_STRATEGIES = ("three-way", "ours", "theirs")
_HEX = "0123456789abcdef"


# ---- types (the seeds' names and defaults) -------------------------------------------


class SnapshotTrigger(str, Enum):
    """What made a snapshot; its value is the checkpoint's tag."""

    TOOL_CALL = "tool_call"
    LLM_CALL = "llm_call"
    STATE_CHANGE = "state_change"
    TASK_BOUNDARY = "task_boundary"
    MANUAL = "manual"
    INTERVAL = "interval"


class CheckpointGC(str, Enum):
    """Retention policies (see the module doc for their exact meaning)."""

    KEEP_ALL = "keep_all"
    KEEP_LAST_N = "keep_last_n"
    KEEP_AGE = "keep_age"
    KEEP_MILESTONES = "keep_milestones"


@dataclass
class SnapshotConfig:
    """Which triggers snapshot, the automatic GC after each snapshot, deltas, size limit."""

    triggers: set[SnapshotTrigger] = field(default_factory=lambda: {
        SnapshotTrigger.MANUAL,
        SnapshotTrigger.TOOL_CALL,
        SnapshotTrigger.LLM_CALL,
        SnapshotTrigger.STATE_CHANGE,
    })
    gc_policy: CheckpointGC = CheckpointGC.KEEP_LAST_N
    gc_param: float = 100  # n for keep_last_n / keep_milestones, seconds for keep_age
    delta_snapshots: bool = False  # the seeds' default was True, but it did nothing
    max_snapshot_size_mb: float = 10.0
    delta_keyframe_every: int = 16  # a full row at least every this many snapshots


@dataclass
class TimeTravelResult:
    """What a rewind did. The seeds' five fields, then agentctl's."""

    checkpoint: Checkpoint
    thread_id: str
    rewind_depth: int  # how many checkpoints were set aside (moved or deleted)
    snapshot_count_before: int  # checkpoints in the thread before the rewind
    can_replay: bool = True
    op_id: int | None = None  # None when nothing was after the target
    archive_thread: str | None = None  # where they went (None when hard or nothing moved)
    moved: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_id": self.checkpoint.metadata.checkpoint_id,
            "thread_id": self.thread_id,
            "step": self.checkpoint.metadata.step,
            "rewind_depth": self.rewind_depth,
            "snapshot_count_before": self.snapshot_count_before,
            "can_replay": self.can_replay,
            "op_id": self.op_id,
            "archive_thread": self.archive_thread,
            "moved": list(self.moved),
            "deleted": list(self.deleted),
        }


@dataclass
class RewindPlan:
    """What `rewind(target, hard)` would do. Nothing is written to make it."""

    target: CheckpointMetadata
    thread_id: str
    moved: list[CheckpointMetadata]  # the checkpoints after the target, in order
    archive_thread: str | None  # where they would go; None when hard or nothing moves
    hard: bool

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target.to_dict(), "thread_id": self.thread_id,
                "moved": [m.to_dict() for m in self.moved],
                "archive_thread": self.archive_thread, "hard": self.hard}


@dataclass
class MergePlan:
    """What `merge_branch` would write. `conflicts` are unresolved (three-way);
    `resolved` are those the strategy settled. `up_to_date`: nothing to merge."""

    base: CheckpointMetadata | None
    ours: Checkpoint
    theirs: Checkpoint
    merged: Checkpoint
    conflicts: list[Any]
    strategy: str
    branch_thread_id: str = ""
    into_thread_id: str = ""
    resolved: list[Any] = field(default_factory=list)
    up_to_date: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict() if self.base else None,
            "ours": self.ours.metadata.to_dict(),
            "theirs": self.theirs.metadata.to_dict(),
            "merged": self.merged.to_dict(),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "resolved": [c.to_dict() for c in self.resolved],
            "strategy": self.strategy,
            "branch_thread_id": self.branch_thread_id,
            "into_thread_id": self.into_thread_id,
            "up_to_date": self.up_to_date,
        }


@dataclass
class PrunePlan:
    """What `prune` would delete (in thread order) and how many checkpoints stay.

    `delete_count`: how many it deletes; `len(delete)` unless the plan is a preview
    (`plan_prune(..., preview=N)`), whose `delete` holds only the first N."""

    thread_id: str
    policy: CheckpointGC
    param: float
    delete: list[CheckpointMetadata]
    keep_count: int
    delete_count: int = -1
    #: why, in words, when the policy alone does not say it (a session store's prune
    #: deletes whole sessions: "the whole session (status cancelled)")
    reason: str = ""

    def __post_init__(self) -> None:
        if self.delete_count < 0:
            self.delete_count = len(self.delete)

    def to_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "policy": self.policy.value, "param": self.param,
                "delete": [m.to_dict() for m in self.delete], "keep_count": self.keep_count}


def _skipped_text(counts: Mapping[str, int]) -> str:
    """'skipped 3 checkpoint(s): why' (rows left out, by reason) or ''."""
    total = sum(counts.values())
    if not total:
        return ""
    if len(counts) == 1:
        return f"skipped {total} checkpoint(s): {next(iter(counts))}"
    return f"skipped {total} checkpoint(s): " + "; ".join(f"{n}: {why}" for why, n in counts.items())


class InjectedFault(RuntimeError):
    """Raised by the test-only fault hook (`_fail_at_statement`)."""


# ---- helpers ---------------------------------------------------------------------------


def _as_trigger(trigger: Any) -> SnapshotTrigger | None:
    if isinstance(trigger, SnapshotTrigger):
        return trigger
    try:
        return SnapshotTrigger(trigger)
    except ValueError:
        return None


def as_policy(policy: CheckpointGC | str) -> CheckpointGC:
    if isinstance(policy, CheckpointGC):
        return policy
    try:
        return CheckpointGC(str(policy).replace("-", "_"))
    except ValueError:
        raise UsageError(f"unknown GC policy {policy!r}; use one of: "
                         + ", ".join(p.value for p in CheckpointGC)) from None


def _iso(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _to_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        dt = datetime.fromisoformat(text)
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


# The rows of a thread after a given checkpoint, in (step, created_at, id) order.
_AFTER = ("thread_id = ? AND (step, created_at, id) > "
          "(SELECT step, created_at, id FROM checkpoints WHERE checkpoint_id = ?)")


def _head_query(thread_id: str, counted: bool) -> tuple[str, list[Any]]:
    """A thread's head (its id is a snapshot's parent, its step the highest) and, when
    `counted`, the thread's row count as `n`: one statement."""
    count = ", (SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?) AS n" if counted else ""
    return (f"SELECT checkpoint_id, step{count} FROM checkpoints WHERE thread_id = ? "
            f"ORDER BY {THREAD_ORDER_DESC} LIMIT 1", [thread_id] * (2 if counted else 1))


def _keep_last_where(thread_id: str, count: int, keep: int) -> tuple[str, list[Any]]:
    """The oldest rows of a thread of `count` rows beyond the last `keep`, from the front
    of the thread's index order: in steady state one row read, no pass over the thread."""
    return (f"id IN (SELECT id FROM checkpoints WHERE thread_id = ? "
            f"ORDER BY {THREAD_ORDER_ASC} LIMIT CAST(? AS BIGINT))", [thread_id, count - keep])


class _HasDeltas(Exception):
    """A snapshot's keep_last_n delete meets delta rows: the general path rewrites them."""


def _gc_selection(kind: str, thread_id: str, policy: CheckpointGC, param: float,
                  cutoff: Any) -> tuple[str, list[Any]] | None:
    """A WHERE condition (and its parameters) selecting the rows a policy deletes from
    one thread, or None when the policy deletes nothing. Never selects the head."""
    head = f"(SELECT id FROM checkpoints WHERE thread_id = ? ORDER BY {THREAD_ORDER_DESC} LIMIT 1)"
    if policy is CheckpointGC.KEEP_ALL:
        return None
    if policy is CheckpointGC.KEEP_AGE:
        older = "julianday(created_at) < julianday(?)" if kind == "sqlite" else "created_at < ?"
        return f"thread_id = ? AND {older} AND id <> {head}", [thread_id, cutoff, thread_id]
    n = max(int(param), 1)
    if policy is CheckpointGC.KEEP_LAST_N or n == 1:
        # The last n come from the (thread_id, step) index; no pass over the whole thread.
        return (f"thread_id = ? AND id NOT IN (SELECT id FROM checkpoints WHERE thread_id = ? "
                f"ORDER BY {THREAD_ORDER_DESC} LIMIT CAST(? AS BIGINT))", [thread_id, thread_id, n])
    # keep_milestones: n >= 2 rows kept, the first and the last among them; positions
    # come from a window over the thread.
    keep = ("(r.pos = 0 OR (r.pos * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0) > "
            "((r.pos - 1) * CAST(? AS BIGINT)) / NULLIF(r.total - 1, 0))")
    return (f"id IN (SELECT r.id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY {THREAD_ORDER_ASC}) - 1 "
            "AS pos, COUNT(*) OVER () AS total FROM checkpoints WHERE thread_id = ?) r "
            f"WHERE r.total > CAST(? AS BIGINT) AND NOT {keep})", [thread_id, n, n - 1, n - 1])


class _NothingToDo(Exception):
    """Raised inside a write transaction that turned out to change nothing (rolls it back)."""


class _Graph:
    """Parent links (and merges' `merged:` tags) loaded a thread at a time."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.parents: dict[str, list[str]] = {}
        self.missing: set[str] = set()

    async def parents_of(self, cid: str) -> list[str]:
        if cid in self.parents:
            return self.parents[cid]
        if cid in self.missing:
            return []
        rows = await self.reader.query(
            "SELECT thread_id FROM checkpoints WHERE checkpoint_id = ?", cid)
        if not rows:
            self.missing.add(cid)
            return []
        for r in await self.reader.query(
                "SELECT checkpoint_id, parent_id, tags FROM checkpoints WHERE thread_id = ?",
                rows[0]["thread_id"]):
            links = [r["parent_id"]] if r["parent_id"] else []
            links += [t[len("merged:"):] for t in decode_tags(r["tags"]) if t.startswith("merged:")]
            self.parents[r["checkpoint_id"]] = links
        return self.parents.get(cid, [])

    async def walk(self, start: str) -> AsyncIterator[str]:
        """start and its ancestors, nearest first (breadth-first); cycles end the walk."""
        seen = {start}
        queue = deque([start])
        while queue:
            cid = queue.popleft()
            yield cid
            for parent in await self.parents_of(cid):
                if parent not in seen:
                    seen.add(parent)
                    queue.append(parent)


class _GuardedTx(Transaction):
    """A transaction whose statements pass the engine's test-only fault hook."""

    def __init__(self, tx: Transaction, engine: "CheckpointEngine"):
        self._tx = tx
        self._engine = engine
        self.kind = tx.kind

    def _tick(self) -> None:
        self._engine._tick()

    async def execute(self, sql: str, *params: Any) -> int:
        self._tick()
        return await self._tx.execute(sql, *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._tick()
        await self._tx.executemany(sql, rows)

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        self._tick()
        return await self._tx.fetch(sql, *params)

    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str:
        self._tick()
        return await self._tx.put(checkpoint, blobs)

    def timestamp(self, iso: str) -> Any:
        return self._tx.timestamp(iso)

    async def table_exists(self, name: str) -> bool:
        self._tick()
        return await self._tx.table_exists(name)


_INSERT_SQL = (f"INSERT INTO checkpoints ({', '.join(COLUMNS)}) "
               f"VALUES ({', '.join('?' for _ in COLUMNS)})")


# ---- the engine ------------------------------------------------------------------------


class CheckpointEngine(History):
    """Step-level checkpoints with non-destructive time travel, branches, merges and undo.
    The History of the AgentOS format (agentctl.storage.contract)."""

    def __init__(
        self,
        checkpointer: CheckpointBackend,
        config: SnapshotConfig | None = None,
        *,
        rng: random.Random | None = None,
        clock: Callable[[], Any] | None = None,
    ):
        self._checkpointer = checkpointer
        self._config = config or SnapshotConfig()
        self._snapshot_counters: dict[str, int] = {}
        # SQLite: thread -> (data_version, write_generation) when a scan last found no
        # delta rows in it (see _snapshot_steps).
        self._delta_free: dict[str, tuple[int, Any]] = {}
        self._last_delta: dict[str, dict[str, Any]] = {}  # the seeds' attribute, unused
        self._rng = rng
        self._clock = clock
        #: the op id of the last write this engine recorded (None before any)
        self.last_op_id: int | None = None
        # Test-only fault hook (see the module doc).
        self._fail_at_statement: int | None = None
        self._statements = 0

    @property
    def checkpointer(self) -> CheckpointBackend:
        return self._checkpointer

    @property
    def config(self) -> SnapshotConfig:
        return self._config

    # ---- small helpers -----------------------------------------------------------------

    def _tick(self) -> None:
        """The test-only fault hook: count a statement, fail the n-th one."""
        self._statements += 1
        limit = self._fail_at_statement
        if limit is not None and self._statements >= limit:
            raise InjectedFault(f"fault injected at statement {self._statements}")

    def _hex(self, n: int) -> str:
        if self._rng is not None:
            return "".join(self._rng.choice(_HEX) for _ in range(n))
        # `random` is seeded from os.urandom at import; uuid4() would ask the kernel
        # for 16 bytes per id (tens of microseconds a call in some VMs).
        return f"{random.getrandbits(4 * n):0{n}x}"

    def _now_dt(self) -> datetime:
        return _to_datetime(self._clock()) if self._clock else datetime.now(timezone.utc)

    def _now(self) -> str:
        if self._clock:
            return _iso(self._clock())
        return datetime.now(timezone.utc).isoformat()

    @asynccontextmanager
    async def _write(self, threads: Sequence[str], *, exclusive: bool = True) -> AsyncIterator[Transaction]:
        async with self._checkpointer.transaction(lock_threads=list(dict.fromkeys(threads))) as tx:
            if exclusive and tx.kind == "postgres":
                # Agents write without our advisory locks, and under READ COMMITTED each
                # statement sees what committed before it: a row an agent adds between
                # two statements of a rewind would be moved without being recorded. Hold
                # their writes off (reads go on) until the commit, as BEGIN IMMEDIATE
                # does on SQLite. An agent's own snapshot does not need this.
                await tx.execute("LOCK TABLE checkpoints IN EXCLUSIVE MODE")
            self._statements = 0
            yield _GuardedTx(tx, self)

    async def _next_step(self, reader: Reader, thread_id: str) -> int:
        top = await reader.max_step(thread_id)
        return max(int(top) if top is not None else 0,
                   self._snapshot_counters.get(thread_id, 0)) + 1

    def _bump(self, thread_id: str, step: int) -> None:
        self._snapshot_counters[thread_id] = max(self._snapshot_counters.get(thread_id, 0), step)

    async def _head_meta(self, reader: Reader, thread_id: str) -> CheckpointMetadata | None:
        page = await reader.read_thread(thread_id, 1, 0, descending=True)
        return page[0] if page else None

    async def _require_meta(self, reader: Reader, checkpoint_id: str) -> CheckpointMetadata:
        meta = await reader.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        return meta

    async def _thread_count(self, reader: Reader, thread_id: str) -> int:
        return int(await reader._fetchval(
            "SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = ?", thread_id) or 0)

    async def _fresh_thread(self, reader: Reader, make: Callable[[], str]) -> str:
        for _ in range(50):
            name = make()
            if not await reader.query(
                    "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", name):
                return name
        raise OperationError("could not find an unused thread name")  # pragma: no cover

    def _ts_param(self, kind: str, iso: str) -> Any:
        if kind == "postgres":
            from agentctl.backends.postgres import to_datetime

            return to_datetime(iso)
        return iso

    def _auto_summary(self, messages: list[dict[str, Any]], state: dict[str, Any]) -> str:
        if messages:
            last = messages[-1]
            if isinstance(last, dict):
                role = last.get("role", "unknown")
                content = str(last.get("content", ""))[:100]
                return f"[{role}] {content}"
            return str(last)[:100]
        return f"State: {len(state)} keys"

    # ---- snapshots ---------------------------------------------------------------------

    async def snapshot(
        self,
        thread_id: str,
        messages: list[dict[str, Any]],
        state: dict[str, Any],
        tools_result: dict[str, Any],
        trigger: SnapshotTrigger = SnapshotTrigger.MANUAL,
        parent_checkpoint_id: str | None = None,
        next_node: str = "",
    ) -> str:
        """Write a checkpoint; return its id ("" when the trigger is not enabled)."""
        trig = _as_trigger(trigger)
        if trig is None or trig not in self._config.triggers:
            return ""
        if not isinstance(thread_id, str) or not thread_id:
            raise UsageError("thread_id must be a non-empty string")
        messages = list(messages)
        state = dict(state)
        tools = dict(tools_result or {})
        blobs = self._serialize(thread_id, messages, state, tools)
        summary = self._auto_summary(messages, state)
        policy = as_policy(self._config.gc_policy)
        counted = policy in (CheckpointGC.KEEP_LAST_N, CheckpointGC.KEEP_MILESTONES)
        # Computed here, not in the write: the write may run on the database's thread.
        made = (trig, summary, parent_checkpoint_id, next_node, self._hex(6), self._now(),
                self._snapshot_counters.get(thread_id, 0))
        write_steps = getattr(self._checkpointer, "write_steps", None)
        if (write_steps is not None and not self._config.delta_snapshots
                and policy in (CheckpointGC.KEEP_ALL, CheckpointGC.KEEP_LAST_N)):
            # The usual case, in one call on SQLite's connection thread (no round trip
            # per statement): the head, the row, the keep_last_n deletes.
            keep = max(int(self._config.gc_param), 1) if counted else None
            self._statements = 0
            try:
                cid, step = await write_steps(self._guarded_steps(
                    self._snapshot_steps(thread_id, messages, state, tools, blobs, made, keep)))
            except _HasDeltas:  # rolled back; the general way rewrites them
                pass
            else:
                self._bump(thread_id, step)
                return cid
        async with self._write([thread_id], exclusive=False) as tx:
            sql, params = _head_query(thread_id, counted)
            cp, count = self._next_checkpoint(await tx.fetch(sql, *params), thread_id,
                                              messages, state, tools, made)
            if self._config.delta_snapshots:
                row = await delta.encode_for_thread(tx, cp, self._config.delta_keyframe_every)
            else:
                row = cp
            await tx.put(row, blobs if row is cp else None)
            await self._auto_gc(tx, thread_id, count if counted else None)
        self._bump(thread_id, cp.metadata.step)
        return cp.metadata.checkpoint_id

    def _next_checkpoint(self, found: list[dict[str, Any]], thread_id: str, messages: Any,
                         state: Any, tools: Any, made: tuple) -> tuple[Checkpoint, int]:
        """The checkpoint a snapshot writes after the head `found` (_head_query's rows),
        and the thread's row count with it."""
        trig, summary, parent, next_node, hex6, now, counter = made
        head = found[0] if found else None
        step = max(int(head["step"]) if head is not None else 0, counter) + 1
        if parent is None and head is not None:
            parent = head["checkpoint_id"]
        cid = f"ckpt-{thread_id}-{step}-{hex6}"
        cp = Checkpoint(CheckpointMetadata(thread_id, cid, step, parent, now, [trig.value], summary),
                        messages, state, tools, next_node)
        return cp, (int(head.get("n") or 0) if head is not None else 0) + 1

    def _snapshot_steps(self, thread_id: str, messages: Any, state: Any, tools: Any,
                        blobs: tuple[str, str, str], made: tuple, keep: int | None) -> WriteSteps:
        """A snapshot under keep_all / keep_last_n without delta rows, as write steps."""
        sql, params = _head_query(thread_id, keep is not None)
        cp, count = self._next_checkpoint((yield ("fetch", sql, params)), thread_id,
                                          messages, state, tools, made)
        yield ("put", cp, blobs)
        if keep is not None and count > keep:
            where, params = _keep_last_where(thread_id, count, keep)
            # Not when the thread holds delta rows: their bases would have to be
            # rewritten first. Looking costs a pass over the thread's rows, so it is
            # skipped when nothing but this process's own snapshots (which write no
            # deltas) changed the file since the last pass found none: no other
            # connection committed (data_version) and no other write of ours did.
            version = (yield ("fetch", "PRAGMA data_version", []))[0]["data_version"]
            seen = (int(version), getattr(self._checkpointer, "write_generation", None))
            if self._delta_free.get(thread_id) == seen:
                yield ("execute", f"DELETE FROM checkpoints WHERE {where}", params)
            else:
                deleted = yield ("execute", f"DELETE FROM checkpoints WHERE {where} AND NOT "
                                 "EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = ? AND "
                                 "tags LIKE ?)", [*params, thread_id, f"%{DELTA_TAG}%"])
                if deleted == 0:
                    raise _HasDeltas()
                if len(self._delta_free) > 4096:
                    self._delta_free.clear()
                self._delta_free[thread_id] = seen
        return cp.metadata.checkpoint_id, cp.metadata.step

    def _guarded_steps(self, steps: WriteSteps) -> WriteSteps:
        """`steps` passing each statement through the test-only fault hook, as _GuardedTx."""
        result = None
        try:
            while True:
                op = steps.send(result)
                self._tick()
                result = yield op
        except StopIteration as done:
            return done.value

    def _serialize(self, thread_id: str, messages: Any, state: Any,
                   tools: Any) -> tuple[str, str, str]:
        """The three JSON columns, checked against max_snapshot_size_mb."""
        blobs = (dumps(messages), dumps(state), dumps(tools))
        limit = self._config.max_snapshot_size_mb
        if limit and limit > 0:
            size = sum(len(b.encode("utf-8")) for b in blobs)
            if size > limit * 1024 * 1024:
                raise SnapshotTooLarge(
                    f"snapshot of thread {thread_id!r} is {size / 1048576:.2f} MB "
                    f"({size} bytes), over max_snapshot_size_mb={limit:g}; nothing was written")
        return blobs

    async def snapshot_safe(self, *args: Any, **kwargs: Any) -> str:
        """`snapshot` (the same arguments) that never raises: a failure is logged and ""
        returned, so checkpointing never breaks the agent's own flow."""
        try:
            return await self.snapshot(*args, **kwargs)
        except Exception as exc:  # the seeds' contract: never break the agent's flow
            logger.error("Snapshot failed (non-blocking): %s", exc)
            return ""

    async def _auto_gc(self, tx: Transaction, thread_id: str, count: int | None = None) -> None:
        """The configured retention after a snapshot: deletes for real (not logged).
        `count`: the thread's rows, when the caller knows it."""
        policy = as_policy(self._config.gc_policy)
        param = self._config.gc_param
        if policy is CheckpointGC.KEEP_ALL:
            return
        if policy is not CheckpointGC.KEEP_AGE:
            if count is None:
                count = await self._thread_count(tx, thread_id)
            if count <= max(int(param), 1):
                return
        if policy is CheckpointGC.KEEP_LAST_N and count is not None:
            # The thread has `count` rows (counted in this transaction): the oldest
            # count - n go, found from the front of the thread's index order. A snapshot
            # in steady state reads one row for this instead of the whole thread.
            where, params = _keep_last_where(thread_id, count, max(int(param), 1))
        else:
            selection = self._selection(tx.kind, thread_id, policy, param)
            if selection is None:
                return
            where, params = selection
        await delta.before_delete(tx, thread_id, where, params)
        await tx.execute(f"DELETE FROM checkpoints WHERE {where}", *params)

    def _selection(self, kind: str, thread_id: str, policy: CheckpointGC,
                   param: float) -> tuple[str, list[Any]] | None:
        cutoff = None
        if policy is CheckpointGC.KEEP_AGE:
            cutoff = self._ts_param(kind, (self._now_dt() - timedelta(seconds=float(param))).isoformat())
        return _gc_selection(kind, thread_id, policy, param, cutoff)

    # ---- the seeds' decorator and scope ------------------------------------------------

    def snapshot_on(self, trigger: SnapshotTrigger):
        """Decorator: snapshot before and after each call of an async function.

        The thread and state come from the keyword arguments `_checkpoint_thread_id`
        (default "default") and `_checkpoint_state` (default {}), removed before the call.
        """
        trig = _as_trigger(trigger) or trigger

        def decorator(func):
            @functools.wraps(func)
            async def wrapper(*args, **kwargs):
                thread_id = kwargs.pop("_checkpoint_thread_id", "default")
                state = kwargs.pop("_checkpoint_state", {})
                await self.snapshot_safe(
                    thread_id=thread_id,
                    messages=[{"role": "tool_call", "content": f"{func.__name__}({kwargs})"}],
                    state=state, tools_result={}, trigger=trig)
                result = await func(*args, **kwargs)
                await self.snapshot_safe(
                    thread_id=thread_id,
                    messages=[{"role": "tool_result", "content": str(result)[:500]}],
                    state=state, tools_result={"result": str(result)[:1000]}, trigger=trig)
                return result
            return wrapper
        return decorator

    @asynccontextmanager
    async def snapshot_scope(
        self,
        thread_id: str,
        state: dict[str, Any],
        trigger: SnapshotTrigger = SnapshotTrigger.STATE_CHANGE,
    ):
        """Snapshot on entering and on leaving the block (also when it raises)."""
        trig = _as_trigger(trigger) or SnapshotTrigger.STATE_CHANGE
        await self.snapshot_safe(
            thread_id=thread_id,
            messages=[{"role": "system", "content": f"Enter scope ({trig.value})"}],
            state=state, tools_result={}, trigger=trig)
        try:
            yield
        finally:
            await self.snapshot_safe(
                thread_id=thread_id,
                messages=[{"role": "system", "content": f"Exit scope ({trig.value})"}],
                state=state, tools_result={}, trigger=trig)

    # ---- reads -------------------------------------------------------------------------

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        return await self._checkpointer.get_latest(thread_id)

    async def list_time_travel_points(self, thread_id: str, limit: int = 50) -> list[CheckpointMetadata]:
        """A thread's checkpoints, newest first (the seeds' order)."""
        return await self._checkpointer.list_checkpoints(thread_id, limit=limit)

    # ---- rewind ------------------------------------------------------------------------

    def _archive_name(self, thread_id: str) -> str:
        return f"{thread_id}-branch-rewind-{self._hex(4)}"

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        """What `rewind` would do (nothing is written)."""
        b = self._checkpointer
        target = await self._require_meta(b, checkpoint_id)
        rows = await b.query(f"SELECT {META_COLUMNS} FROM checkpoints WHERE {_AFTER} "
                             f"ORDER BY {THREAD_ORDER_ASC}", target.thread_id, checkpoint_id)
        moved = [row_to_metadata(r) for r in rows]
        archive = None
        if moved and not hard:
            archive = await self._fresh_thread(b, lambda: self._archive_name(target.thread_id))
        return RewindPlan(target, target.thread_id, moved, archive, hard)

    async def rewind(self, checkpoint_id: str, hard: bool = False, *,
                     archive_thread: str | None = None) -> TimeTravelResult:
        """Make `checkpoint_id` the head of its thread again.

        The checkpoints after it move to a new archive thread (or, with hard=True, are
        deleted into the trash). `archive_thread` names the archive (e.g. a plan's)."""
        meta = await self._require_meta(self._checkpointer, checkpoint_id)
        thread = meta.thread_id
        archive = None if hard else archive_thread
        if archive is not None and (not archive.strip() or archive == thread):
            raise UsageError(f"invalid archive thread name {archive_thread!r}")
        if not hard and archive is None:
            archive = await self._fresh_thread(self._checkpointer, lambda: self._archive_name(thread))
        async with self._write([thread] + ([archive] if archive else [])) as tx:
            target = await self._require_meta(tx, checkpoint_id)
            if target.thread_id != thread:
                raise OperationError(f"checkpoint {checkpoint_id!r} moved to another thread meanwhile; retry")
            before = await self._thread_count(tx, thread)
            moved = [r["checkpoint_id"] for r in await tx.fetch(
                f"SELECT checkpoint_id FROM checkpoints WHERE {_AFTER} ORDER BY {THREAD_ORDER_ASC}",
                thread, checkpoint_id)]
            full = await tx.get(checkpoint_id)
            if full is None:  # read just above in this transaction
                raise CheckpointNotFound(checkpoint_id)
            if not moved:
                result = TimeTravelResult(full, thread, 0, before)
            elif hard:
                op_id = await oplog.start(
                    tx, "rewind", f"hard rewind {thread} to step {target.step} "
                    f"({checkpoint_id}): deleted {len(moved)} checkpoint(s)", [thread],
                    {"target": checkpoint_id, "thread": thread, "hard": True, "count": len(moved)},
                    self._now())
                await delta.before_delete(tx, thread, _AFTER, [thread, checkpoint_id])
                await oplog.trash(tx, op_id, _AFTER, thread, checkpoint_id)
                await oplog.finish(tx, op_id, [thread])
                result = TimeTravelResult(full, thread, len(moved), before, op_id=op_id, deleted=moved)
            else:
                assert archive is not None  # not hard: given, or made above
                if await tx.query("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", archive):
                    raise UsageError(f"thread {archive!r} already exists; choose another archive name")
                op_id = await oplog.start(
                    tx, "rewind", f"rewind {thread} to step {target.step} ({checkpoint_id}): "
                    f"moved {len(moved)} checkpoint(s) to {archive}", [thread, archive],
                    {"target": checkpoint_id, "thread": thread, "hard": False,
                     "archive_thread": archive, "count": len(moved)}, self._now())
                await delta.before_move(tx, thread, _AFTER, [thread, checkpoint_id])
                await tx.execute(
                    f"INSERT INTO {oplog.OPLOG_ROWS} (op_id, checkpoint_id, action, thread_id, "
                    "old_thread_id, old_parent_id, parent_id) SELECT CAST(? AS BIGINT), checkpoint_id, "
                    f"'move', CAST(? AS TEXT), thread_id, parent_id, parent_id FROM checkpoints WHERE {_AFTER}",
                    op_id, archive, thread, checkpoint_id)
                await tx.execute(f"UPDATE checkpoints SET thread_id = ? WHERE {_AFTER}",
                                 archive, thread, checkpoint_id)
                # The abandoned future hangs off the target: a first row without a
                # parent gets the target as parent (undo restores NULL).
                first = moved[0]
                await tx.execute(
                    "UPDATE checkpoints SET parent_id = ? WHERE checkpoint_id = ? "
                    "AND (parent_id IS NULL OR parent_id = '')", checkpoint_id, first)
                await tx.execute(
                    f"UPDATE {oplog.OPLOG_ROWS} SET parent_id = ? WHERE op_id = ? AND checkpoint_id = ? "
                    "AND (old_parent_id IS NULL OR old_parent_id = '')", checkpoint_id, op_id, first)
                await oplog.finish(tx, op_id, [thread, archive])
                result = TimeTravelResult(full, thread, len(moved), before, op_id=op_id,
                                          archive_thread=archive, moved=moved)
        if result.op_id is not None:
            self.last_op_id = result.op_id
        self._snapshot_counters[thread] = target.step
        logger.info("Time travel: rewound %s to %s (step %s), set aside %d checkpoint(s)",
                    thread, checkpoint_id, target.step, len(moved))
        return result

    async def time_travel_to_step(self, thread_id: str, step: int) -> TimeTravelResult | None:
        """Rewind to the last checkpoint of the thread whose step is <= step (None if none)."""
        rows = await self._checkpointer.query(
            f"SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND step <= ? "
            f"ORDER BY {THREAD_ORDER_DESC} LIMIT 1", thread_id, step)
        if not rows:
            return None
        return await self.rewind(rows[0]["checkpoint_id"])

    # ---- branch ------------------------------------------------------------------------

    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """Fork a new thread from a checkpoint; return the new thread id.

        The thread is `{source thread}-branch-{name}-{4 hex}`; its first row (step 0,
        tags ["branch", name]) copies the source's content and points at it."""
        from agentctl.refs import check_branch_name

        name = check_branch_name(branch_name)
        source_meta = await self._require_meta(self._checkpointer, from_checkpoint_id)
        thread = await self._fresh_thread(
            self._checkpointer, lambda: f"{source_meta.thread_id}-branch-{name}-{self._hex(4)}")
        async with self._write([thread]) as tx:
            source = await tx.get(from_checkpoint_id)
            if source is None:
                raise CheckpointNotFound(from_checkpoint_id)
            if await tx.query("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", thread):
                raise OperationError(f"thread {thread!r} appeared meanwhile; retry")
            cid = f"ckpt-{thread}-0"
            if await tx.get_metadata(cid) is not None:
                raise OperationError(f"checkpoint {cid!r} already exists")
            cp = Checkpoint(
                CheckpointMetadata(thread, cid, 0, from_checkpoint_id, self._now(),
                                   ["branch", name], f"Branch '{name}' from {from_checkpoint_id}"),
                list(source.messages), dict(source.state), dict(source.tools_result),
                source.next_node)
            op_id = await oplog.start(
                tx, "branch", f"branch {thread} from {from_checkpoint_id}",
                [thread, source.metadata.thread_id],
                {"from": from_checkpoint_id, "branch_thread": thread, "name": name}, self._now())
            await tx.put(cp)
            await oplog.record_inserts(tx, op_id, [(cid, thread)])
            await oplog.finish(tx, op_id, [thread])
        self.last_op_id = op_id
        self._snapshot_counters[thread] = 0
        logger.info("Created branch: %s from %s", thread, from_checkpoint_id)
        return thread

    # ---- merge -------------------------------------------------------------------------

    async def merge_base(self, a: str, b: str, reader: Reader | None = None) -> CheckpointMetadata | None:
        """The nearest common ancestor of checkpoints a and b (None if they share none):
        the first ancestor of b, breadth-first, that is also an ancestor of a and still
        exists (a deleted checkpoint both name as parent cannot serve as a base)."""
        reader = reader or self._checkpointer
        graph = _Graph(reader)
        ancestors = {cid async for cid in graph.walk(a)}
        async for cid in graph.walk(b):
            if cid in ancestors:
                meta = await reader.get_metadata(cid)
                if meta is not None:
                    return meta
        return None

    async def _plan_merge(self, reader: Reader, branch_thread_id: str, into_thread_id: str,
                          strategy: str, checkpoint_id: str | None = None) -> MergePlan:
        from agentctl.merge import Conflict, merge_messages, three_way_merge
        from agentctl.diff import MISSING

        if strategy not in MERGE_STRATEGIES:
            raise UsageError(f"unknown merge strategy {strategy!r}; use one of: "
                             + ", ".join(MERGE_STRATEGIES))
        if branch_thread_id == into_thread_id:
            raise UsageError("cannot merge a thread into itself")
        theirs = await reader.get_latest(branch_thread_id)
        if theirs is None:
            raise ThreadNotFound(branch_thread_id)
        ours = await reader.get_latest(into_thread_id)
        if ours is None:
            raise ThreadNotFound(into_thread_id)
        base_meta = await self.merge_base(ours.metadata.checkpoint_id, theirs.metadata.checkpoint_id,
                                          reader)
        base = await reader.get(base_meta.checkpoint_id) if base_meta else None
        conflicts: list[Any] = []
        resolved: list[Any] = []
        sections = {}
        for section in ("state", "tools_result"):
            result = three_way_merge(getattr(base, section) if base else {},
                                     getattr(ours, section), getattr(theirs, section), strategy)
            sections[section] = {} if result.value is MISSING else result.value
            conflicts += [Conflict(f"/{section}{c.path}", c.base, c.ours, c.theirs)
                          for c in result.conflicts]
            resolved += [Conflict(f"/{section}{c.path}", c.base, c.ours, c.theirs)
                         for c in result.resolved]
        messages = merge_messages(base.messages if base else None, ours.messages, theirs.messages)
        step = await self._next_step(reader, into_thread_id)
        theirs_id = theirs.metadata.checkpoint_id
        if checkpoint_id is None and self._rng is not None:
            # A seeded engine (tests, the bundled sample's script) draws it from its rng.
            checkpoint_id = f"ckpt-{into_thread_id}-{step}-{self._hex(6)}"
        elif checkpoint_id is None:
            # Named after the two heads it merges: a plan (`merge --dry-run`) announces
            # the id the merge of the same heads writes later.
            import hashlib

            digest = hashlib.sha256(f"{ours.metadata.checkpoint_id}\0{theirs_id}".encode(
                "utf-8", "surrogatepass")).hexdigest()[:6]
            checkpoint_id = f"ckpt-{into_thread_id}-{step}-{digest}"
            if await reader.get_metadata(checkpoint_id) is not None:
                checkpoint_id = f"ckpt-{into_thread_id}-{step}-{self._hex(6)}"
        merged = Checkpoint(
            CheckpointMetadata(
                into_thread_id, checkpoint_id, step,
                ours.metadata.checkpoint_id, self._now(),
                ["merge", f"merged:{theirs_id}", f"branch:{branch_thread_id}"],
                f"Merge {branch_thread_id} into {into_thread_id}"),
            list(messages), dict(sections["state"]), dict(sections["tools_result"]),
            ours.next_node)
        # Nothing to merge: the branch's head is the common ancestor, or merging it would
        # change none of the target head's messages, state or tool results (a branch
        # with no changes of its own).
        up_to_date = ((base_meta is not None and base_meta.checkpoint_id == theirs_id)
                      or (not conflicts and merged.messages == ours.messages
                          and merged.state == ours.state and merged.tools_result == ours.tools_result))
        return MergePlan(base_meta, ours, theirs, merged, conflicts, strategy,
                         branch_thread_id, into_thread_id, resolved, up_to_date)

    async def plan_merge(self, branch_thread_id: str, into_thread_id: str,
                         strategy: str = "three-way") -> MergePlan:
        """What `merge_branch` would write, with its conflicts (nothing is written)."""
        return await self._plan_merge(self._checkpointer, branch_thread_id, into_thread_id, strategy)

    async def merge_branch(self, branch_thread_id: str, into_thread_id: str,
                           strategy: str = "three-way", *, checkpoint_id: str | None = None) -> str:
        """Merge the head of a branch thread into a thread; return the merge checkpoint id.

        `checkpoint_id` names the merge checkpoint (the one a plan announced, as
        `plan_merge(...).merged.metadata.checkpoint_id`). Raises MergeConflictError
        (nothing written) when conflicts remain, OperationError when there is nothing
        to merge (nothing written)."""
        async with self._write([into_thread_id, branch_thread_id]) as tx:
            plan = await self._plan_merge(tx, branch_thread_id, into_thread_id, strategy, checkpoint_id)
            if checkpoint_id is not None and await tx.get_metadata(checkpoint_id) is not None:
                raise OperationError(f"checkpoint {checkpoint_id!r} already exists; nothing was written")
            if plan.conflicts:
                raise MergeConflictError(
                    plan.conflicts,
                    f"merging {branch_thread_id} into {into_thread_id} has {len(plan.conflicts)} "
                    f"conflict{'s' if len(plan.conflicts) != 1 else ''} "
                    f"({', '.join(c.path for c in plan.conflicts[:5])}"
                    f"{', …' if len(plan.conflicts) > 5 else ''}); nothing was written; "
                    "use strategy 'ours' or 'theirs' to resolve them")
            if plan.up_to_date:
                raise OperationError(
                    f"nothing to merge: {into_thread_id} already contains {branch_thread_id} "
                    f"(head {plan.theirs.metadata.checkpoint_id}); nothing was written")
            merged = plan.merged
            mid = merged.metadata.checkpoint_id
            op_id = await oplog.start(
                tx, "merge", f"merge {branch_thread_id} into {into_thread_id} as {mid}",
                [into_thread_id, branch_thread_id],
                {"branch_thread": branch_thread_id, "into": into_thread_id, "merge_checkpoint": mid,
                 "theirs": plan.theirs.metadata.checkpoint_id,
                 "ours": plan.ours.metadata.checkpoint_id,
                 "base": plan.base.checkpoint_id if plan.base else None, "strategy": strategy,
                 "resolved": [c.path for c in plan.resolved]}, self._now())
            await tx.put(merged)
            await oplog.record_inserts(tx, op_id, [(mid, into_thread_id)])
            await oplog.finish(tx, op_id, [into_thread_id])
        self.last_op_id = op_id
        self._bump(into_thread_id, merged.metadata.step)
        logger.info("Merged branch %s -> %s (merge ckpt: %s)", branch_thread_id, into_thread_id, mid)
        return mid

    # ---- prune and delete --------------------------------------------------------------

    async def plan_prune(self, thread_id: str, policy: CheckpointGC | str, param: float = 0,
                         *, preview: int | None = None) -> PrunePlan:
        """Which checkpoints `prune` would delete (never the head).

        With `preview=N`, `delete` holds only the first N of them and `delete_count`
        how many there are: a plan to show, without reading the metadata of every row
        (a prune of 100,000 rows would hold 100,000 of them)."""
        pol = as_policy(policy)
        param = self._check_param(pol, param)
        b = self._checkpointer
        total = await self._thread_count(b, thread_id)
        if total == 0:
            raise ThreadNotFound(thread_id)
        selection = self._selection(b.kind, thread_id, pol, param)
        if selection is None:
            return PrunePlan(thread_id, pol, param, [], total)
        where, params = selection
        order = f"ORDER BY {THREAD_ORDER_ASC}"
        if preview is None:
            delete = [row_to_metadata(r) for r in await b.query(
                f"SELECT {META_COLUMNS} FROM checkpoints WHERE {where} {order}", *params)]
            return PrunePlan(thread_id, pol, param, delete, total - len(delete))
        count = int(await b._fetchval(
            f"SELECT COUNT(*) AS n FROM checkpoints WHERE {where}", *params) or 0)
        delete = []
        if count and preview > 0:
            # The first N in thread order are among the rows up to the N-th smallest step
            # (found in the (thread_id, step) index): only those are read and sorted.
            edge = await b.query(
                f"SELECT step FROM checkpoints WHERE {where} ORDER BY step LIMIT 1 OFFSET ?",
                *params, preview - 1)
            bound, bound_params = ("", []) if not edge else (" AND step <= ?", [edge[0]["step"]])
            delete = [row_to_metadata(r) for r in await b.query(
                f"SELECT {META_COLUMNS} FROM checkpoints WHERE ({where}){bound} {order} LIMIT ?",
                *params, *bound_params, preview)]
        return PrunePlan(thread_id, pol, param, delete, total - count, count)

    def _check_param(self, policy: CheckpointGC, param: Any) -> float:
        try:
            value = float(param)
        except (TypeError, ValueError):
            raise UsageError(f"the parameter of {policy.value} must be a number, not {param!r}") from None
        if value < 0 or value != value:
            raise UsageError(f"the parameter of {policy.value} must be >= 0, not {param!r}")
        return int(value) if policy is not CheckpointGC.KEEP_AGE else value

    async def prune(self, thread_id: str, policy: CheckpointGC | str, param: float = 0) -> OpResult:
        """Delete a thread's checkpoints by a GC policy, into the trash (undoable)."""
        pol = as_policy(policy)
        param = self._check_param(pol, param)
        return await self._prune_threads([thread_id], pol, param, label=thread_id,
                                         details={"thread": thread_id, "policy": pol.value,
                                                  "param": param})

    async def _prune_threads(self, threads: Sequence[str], pol: CheckpointGC, param: float, *,
                             label: str, details: dict[str, Any], must_exist: bool = True,
                             progress: Callable[[int], None] | None = None) -> OpResult:
        """Prune `threads` by one policy in ONE transaction recorded as ONE operation:
        all or nothing (an error or a cancellation anywhere rolls every thread back),
        and one undo restores every thread. `progress(1)` is called after each thread.
        A thread that does not exist raises ThreadNotFound when `must_exist`, else is
        skipped (`prune --all`: a thread deleted since the list was read)."""
        nothing = OpResult(None, "prune", f"{pol.value}: nothing to prune in {label}")
        threads = list(dict.fromkeys(threads))
        if not threads:
            return nothing
        try:
            async with self._write(threads) as tx:
                op_id = await oplog.start(tx, "prune", f"prune {label}", threads, details, self._now())
                deleted: list[str] = []
                changed: list[str] = []
                bulk = getattr(self._checkpointer, "bulk_write", None)
                async with bulk() if bulk is not None else nullcontext():
                    for thread_id in threads:
                        gone = await self._prune_one(tx, op_id, thread_id, pol, param, must_exist)
                        if gone:
                            deleted += gone
                            changed.append(thread_id)
                        if progress is not None:
                            progress(1)
                if not deleted:
                    raise _NothingToDo()  # rolls back the op record (and new side tables)
                where = changed[0] if len(changed) == 1 else f"{len(changed)} threads"
                summary = (f"prune {where} ({pol.value} {param:g}): "
                           f"deleted {len(deleted)} checkpoint(s)")
                await oplog.set_summary(tx, op_id, summary)
                await oplog.finish(tx, op_id, changed)
        except _NothingToDo:
            return nothing
        self.last_op_id = op_id
        return OpResult(op_id, "prune", summary, deleted=deleted)

    async def _prune_one(self, tx: Transaction, op_id: int, thread_id: str, pol: CheckpointGC,
                         param: float, must_exist: bool) -> list[str]:
        """Move what the policy deletes from one thread into op_id's trash; the ids."""
        if not await tx.query("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1",
                              thread_id):
            if must_exist:
                raise ThreadNotFound(thread_id)
            return []
        selection = self._selection(tx.kind, thread_id, pol, param)
        if selection is None:
            return []
        where, params = selection
        if await tx.query(
                "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? AND "
                f"({where}) IS NOT TRUE AND {delta._tags_text(tx.kind)} LIKE ? LIMIT 1",
                thread_id, *params, f"%{DELTA_TAG}%"):
            # A delta that stays may lose its base. (Looked for among the rows
            # that stay: those the prune deletes are not read for this.)
            await delta.before_delete(tx, thread_id, where, params)
        return await oplog.trash(tx, op_id, where, *params)

    def _spec_policy(self, spec: PruneSpec) -> tuple[CheckpointGC, float]:
        if spec.statuses:
            raise Unsupported("agentos", "prune --status (checkpoints have no status)")
        chosen = [(p, v) for p, v in ((CheckpointGC.KEEP_LAST_N, spec.keep_last),
                                      (CheckpointGC.KEEP_AGE, spec.older_than),
                                      (CheckpointGC.KEEP_MILESTONES, spec.milestones)) if v is not None]
        if len(chosen) != 1:
            raise UsageError("give exactly one of --keep-last N, --older-than AGE, --milestones N")
        return chosen[0]

    async def _spec_threads(self, spec: PruneSpec) -> list[str]:
        if spec.threads is not None:
            return list(spec.threads)
        return await self._checkpointer.all_thread_ids()

    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        """The plans of `prune_spec` (one per thread)."""
        policy, param = self._spec_policy(spec)
        return [await self.plan_prune(t, policy, param, preview=preview)
                for t in await self._spec_threads(spec)]

    async def prune_spec(self, spec: PruneSpec, *,
                         progress: Callable[[int], None] | None = None) -> list[OpResult]:
        """Prune the threads of the spec (every thread when `spec.threads` is None) as
        ONE operation in one transaction: all or nothing, one undo restores them all.
        A list of one OpResult (its op_id None when there was nothing to prune).
        `progress(1)` is called after each thread (a progress bar's advance)."""
        policy, param = self._spec_policy(spec)
        pol = as_policy(policy)
        param = self._check_param(pol, param)
        threads = await self._spec_threads(spec)
        every = spec.threads is None
        label = (threads[0] if len(threads) == 1 and not every
                 else f"{len(threads)} thread(s)" if not every else "all threads")
        details = {"threads": None if every else threads, "policy": pol.value, "param": param}
        if len(threads) == 1 and not every:
            details = {"thread": threads[0], "policy": pol.value, "param": param}
        return [await self._prune_threads(threads, pol, param, label=label, details=details,
                                          must_exist=not every, progress=progress)]

    async def delete_thread(self, thread_id: str) -> OpResult:
        """Delete every checkpoint of a thread, into the trash (undoable)."""
        async with self._write([thread_id]) as tx:
            n = await self._thread_count(tx, thread_id)
            if n == 0:
                raise ThreadNotFound(thread_id)
            summary = f"delete thread {thread_id} ({n} checkpoint(s))"
            op_id = await oplog.start(tx, "delete_thread", summary, [thread_id],
                                      {"thread": thread_id, "count": n}, self._now())
            deleted = await oplog.trash(tx, op_id, "thread_id = ?", thread_id)
            await oplog.finish(tx, op_id, [thread_id])
        self.last_op_id = op_id
        self._snapshot_counters.pop(thread_id, None)
        return OpResult(op_id, "delete_thread", summary, deleted=deleted)

    # ---- import ------------------------------------------------------------------------

    async def import_checkpoints(
        self,
        checkpoints: AsyncIterable[Checkpoint] | Iterable[Checkpoint],
        on_conflict: str = "skip",
    ) -> OpResult:
        """Write checkpoints as they are (ids, steps, created_at kept), in one transaction.

        on_conflict for an id that exists: "skip" it, "replace" the row (the old one goes
        to the trash), or "error" (nothing is written). An item that is an exception
        (e.g. a CorruptRowError from `iter_checkpoints`) is raised; nothing is written."""
        if on_conflict not in ("skip", "replace", "error"):
            raise UsageError(f"unknown on_conflict {on_conflict!r}; use skip, replace or error")
        items: list[Checkpoint] = []
        if hasattr(checkpoints, "__aiter__"):
            async for item in checkpoints:
                items.append(self._import_item(item))
        else:
            for item in checkpoints:
                items.append(self._import_item(item))
        by_id: dict[str, Checkpoint] = {}
        skipped: dict[str, str] = {}  # id -> why it was left out
        counts: dict[str, int] = {}  # why -> how many rows
        for cp in items:
            cid = cp.metadata.checkpoint_id
            if cid in by_id:
                if on_conflict == "error":
                    raise OperationError(f"checkpoint {cid!r} occurs twice in the import; nothing was written")
                if on_conflict == "skip":
                    skipped[cid] = why = "id repeated in the import (the first one is taken)"
                    counts[why] = counts.get(why, 0) + 1
                    continue
            by_id[cid] = cp
        threads = sorted({cp.metadata.thread_id for cp in by_id.values()})
        async with self._write(threads) as tx:
            existing: dict[str, str] = {}
            ids = list(by_id)
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for r in await tx.fetch(
                        "SELECT checkpoint_id, thread_id FROM checkpoints WHERE checkpoint_id IN ("
                        + ", ".join("?" for _ in chunk) + ")", *chunk):
                    existing[r["checkpoint_id"]] = r["thread_id"]
            if existing and on_conflict == "error":
                shown = sorted(existing)
                raise OperationError(
                    f"{len(shown)} checkpoint(s) exist already ({oplog._short(shown)}); nothing was written")
            if on_conflict == "skip":
                for cid in existing:
                    by_id.pop(cid)
                    skipped[cid] = why = "id exists in the database (--on-conflict skip; replace overwrites)"
                    counts[why] = counts.get(why, 0) + 1
                existing = {}
            why = _skipped_text(counts)
            if not by_id:
                return OpResult(None, "import", "nothing to import: " + (why or "no checkpoints"),
                                skipped=skipped)
            threads = sorted({cp.metadata.thread_id for cp in by_id.values()})
            changed = sorted(set(threads) | set(existing.values()))
            summary = (f"import {len(by_id)} checkpoint(s) into {len(changed)} thread(s)"
                       + (f", replacing {len(existing)}" if existing else "") + (f"; {why}" if why else ""))
            op_id = await oplog.start(tx, "import", summary, changed,
                                      {"on_conflict": on_conflict, "count": len(by_id),
                                       "replaced": len(existing)}, self._now())
            replaced = sorted(existing)
            for i in range(0, len(replaced), 500):
                chunk = replaced[i:i + 500]
                where = "checkpoint_id IN (" + ", ".join("?" for _ in chunk) + ")"
                for thread in sorted({existing[c] for c in chunk}):
                    await delta.before_delete(tx, thread, where, chunk)
                await oplog.trash(tx, op_id, where, *chunk)
            cps = list(by_id.values())
            for i in range(0, len(cps), 1000):
                batch = cps[i:i + 1000]
                await tx.executemany(_INSERT_SQL, [checkpoint_params(cp, tx.timestamp) for cp in batch])
                await oplog.record_inserts(
                    tx, op_id, [(cp.metadata.checkpoint_id, cp.metadata.thread_id) for cp in batch])
            await oplog.finish(tx, op_id, changed)
        self.last_op_id = op_id
        return OpResult(op_id, "import", summary, created=list(by_id), deleted=replaced, skipped=skipped)

    @staticmethod
    def _import_item(item: Any) -> Checkpoint:
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, dict):
            item = Checkpoint.from_dict(item)
        if not isinstance(item, Checkpoint):
            raise UsageError(f"cannot import {type(item).__name__}; expected a Checkpoint")
        if isinstance(item.metadata.created_at, datetime):  # stored as the ISO text, as put() does
            item.metadata.created_at = _iso(item.metadata.created_at)
        return item

    # ---- undo, oplog, purge ------------------------------------------------------------

    async def oplog(self, limit: int = 50) -> list[OpRecord]:
        """The newest operations first."""
        return await oplog.list_ops(self._checkpointer, limit)

    async def undo(self, op_id: int | None = None) -> OpResult:
        """Revert an operation exactly (None: the last one not undone)."""
        b = self._checkpointer
        if op_id is None:
            op_id = await oplog.last_undoable(b)
            if op_id is None:
                raise OperationError("nothing to undo: no operation recorded that is not undone")
        elif await oplog.get_op(b, int(op_id)) is None:
            raise NotFoundError(f"operation {op_id} not found")
        op_id = int(op_id)
        threads = await oplog.changed_threads(b, op_id)
        async with self._write(threads) as tx:
            op = await oplog.get_op(tx, op_id)
            if op is None:  # pragma: no cover - ops are never deleted
                raise NotFoundError(f"operation {op_id} not found")
            await oplog.check_undo(tx, op)
            summary = f"undo operation {op_id} ({op.summary})"
            undo_id = await oplog.start(tx, "undo", summary, op.threads,
                                        {"undo_of": op_id, "kind": op.kind}, self._now(), undo_of=op_id)
            restored, deleted, moved = await oplog.revert(tx, op_id)
            await oplog.mark_undone(tx, op_id, undo_id)
        self.last_op_id = undo_id
        for thread in threads:
            self._snapshot_counters.pop(thread, None)
        return OpResult(undo_id, "undo", summary, created=restored, deleted=deleted, moved=moved)

    async def purge(self, dry_run: bool = False) -> PurgeResult:
        """Free what undo could still bring back (the trash); VACUUM on SQLite.
        The ops whose trash is purged can no longer be undone."""
        counts = await oplog.trash_counts(self._checkpointer)
        if dry_run or not counts:
            return PurgeResult([op for op, _ in counts], sum(n for _, n in counts), dry_run)
        async with self._write([]) as tx:
            counts = await oplog.trash_counts(tx)
            ops = [op for op, _ in counts]
            rows = await oplog.purge_ops(tx, ops)
            op_id = await oplog.start(
                tx, "purge", f"purge the trash of {len(ops)} operation(s): {rows} checkpoint(s)",
                [], {"ops": ops, "rows": rows}, self._now())
        self.last_op_id = op_id
        try:
            await self._checkpointer.vacuum(["checkpoints", oplog.TRASH])
        except DatabaseBusy as exc:  # the purge is done; only the compaction waits
            logger.warning("purge: VACUUM skipped, the database is busy (%s)", exc)
            return PurgeResult(ops, rows, False, vacuumed=False, op_id=op_id)
        return PurgeResult(ops, rows, False, vacuumed=True, op_id=op_id)

    # ---- the tree ----------------------------------------------------------------------

    async def get_checkpoint_tree(self, thread_id: str, limit: int | None = None) -> dict[str, Any]:
        """The thread, its branch threads (recursively) and the edges between them
        (see agentctl.tree.checkpoint_tree)."""
        from agentctl.tree import checkpoint_tree

        return await checkpoint_tree(self._checkpointer, thread_id, limit)


async def create_checkpoint_engine(backend: str = "sqlite", db_path: str = "checkpoints.db",
                                   **kwargs: Any) -> CheckpointEngine:
    """The seeds' quick start: an engine over a new or existing checkpointer."""
    from agentctl.backends import create_checkpointer

    return CheckpointEngine(create_checkpointer(backend, db_path=db_path, **kwargs))


# The error types callers of the engine catch, re-exported for convenience.
__all__ += ["AgentctlError", "MergeConflictError", "SnapshotTooLarge"]
