"""CheckpointEngine: the AgentOS engine's public class (AgentOS's names and call
shapes) and the AgentOS format's History, a thin facade over the engine's modules
(importable as `agentctl.engine.CheckpointEngine` and from `agentctl`).

The engine: snapshots, time travel, branches, merges, GC, undo.

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
branch, merge, prune, delete_thread, import, edit, undo, redo, purge) is an op of the
journal (`agentctl.storage.journal`: `agentctl_journal` and `agentctl_trash_checkpoints`,
created by the first such write; the engine's side in `agentctl.storage.agentos.oplog`:
its row changes and the fingerprint; `undo.py`: its checks before an undo). An agent's
`snapshot` is not logged and creates no side table.

Steps. The next step of a thread is max(highest step in the database for the thread,
this engine's counter) + 1, computed inside the write transaction, so a restarted
process or a second engine on the same database never repeats a step. `rewind` sets the
counter to the target's step (as AgentOS did), `branch` to 0, `undo` and
`delete_thread` forget it.

Parents. `snapshot` without `parent_checkpoint_id` links the new checkpoint to the
thread's head (AgentOS stored no parent); an explicit parent is kept as given.

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
full row of the same thread; see `agentctl.storage.agentos.delta` for the encoding, chosen so a foreign
reader sees an explicit placeholder, never a plausible but wrong state. agentctl's own
reads return the full checkpoint either way.

Ids. `ckpt-{thread}-{step}-{6 hex}`; branch threads `{thread}-branch-{name}-{4 hex}`.
The hex digits come from `rng` (a `random.Random`, injectable for reproducible output)
or from the `random` module (seeded from os.urandom); the time from `clock` (a callable returning a datetime or ISO string).
Unknown ids raise `CheckpointNotFound` / `ThreadNotFound` (ValueErrors whose message
says "not found").

Where AgentOS's behaviour was a defect, or unspecified, this engine differs: rewind
moves (not deletes) and reports rewind_depth = checkpoints set aside and
snapshot_count_before = checkpoints in the thread before (AgentOS used the in-memory
counter); a branch's first row copies the source's next_node; merge_branch is three-way
with conflicts; `get_checkpoint_tree(thread, limit=None)` returns every checkpoint of
the thread and its branches (AgentOS's limit=200 cut to the newest rows of one thread;
a limit now applies per thread); snapshot links a parent. Unchanged: an unknown trigger
returns "", `time_travel_to_step` returns None when no checkpoint is at or before the
step (also for an unknown thread), `get_checkpoint_tree` of an unknown thread is empty.

Modules (beside this one in agentctl/storage/agentos/). `CheckpointEngine` is a thin
facade: each method calls a function of one module over one small `EngineContext`
(context.py: the backend, the config, the clock, the id maker, the write transaction,
the step counters):

- types.py      triggers, SnapshotConfig (the plans and results every format shares
                are agentctl/storage/results.py's, re-exported)
- snapshot.py   snapshot writing and the automatic GC after it
- rewind.py     rewind, time_travel_to_step, branch
- merge.py      the merge base, plan_merge, merge_branch
- retention.py  the GC policies as SQL, prune, delete_thread
- transfer.py   import
- oplog.py      the writes as journal row changes, the fingerprint
- undo.py       the checks before an undo, the ids a move names, purge
- legacy.py     the previous op log, moved into the journal by the first write
- delta.py      delta snapshots
- edit.py       edit (a new head with the state changed)
"""

from __future__ import annotations

import functools
import random
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterable, AsyncIterator, Callable, Iterable, Sequence

from agentctl.storage.agentos import merge, oplog, retention, rewind, snapshot, transfer, undo
from agentctl.storage.agentos.context import EngineContext
from agentctl.storage.agentos.oplog import OpResult, PurgeResult
from agentctl.storage.agentos.types import (
    CheckpointGC,
    DeletePlan,
    MergePlan,
    PrunePlan,
    RewindPlan,
    SnapshotConfig,
    SnapshotTrigger,
    TimeTravelResult,
    as_trigger,
)
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.contract import History, PruneSpec
from agentctl.storage.journal import ops
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.agentos import legacy

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import CheckpointBackend, Reader


class _Store:
    """The engine's backend as the journal's History reads it (`store._db`, `store.connect`)."""

    def __init__(self, backend: CheckpointBackend) -> None:
        self._db = backend
        self.format = backend.format

    async def connect(self) -> None:
        await self._db.connect()


class CheckpointEngine(JournalHistory, History):
    """Step-level checkpoints with non-destructive time travel, branches, merges and undo.
    The History of the AgentOS format (agentctl.storage.contract); its writes are ops of
    the journal (agentctl.storage.journal; the engine's side in oplog.py and undo.py)."""

    #: a prune can be undone thread by thread (`undo --thread`)
    undo_by_thread = True

    def __init__(
        self,
        checkpointer: CheckpointBackend,
        config: SnapshotConfig | None = None,
        *,
        rng: random.Random | None = None,
        clock: Callable[[], Any] | None = None,
    ):
        self._ctx = EngineContext(checkpointer, config or SnapshotConfig(), rng, clock)
        self._last_delta: dict[str, dict[str, Any]] = {}  # AgentOS's attribute, unused

    @property
    def checkpointer(self) -> CheckpointBackend:
        return self._ctx.backend

    @property
    def config(self) -> SnapshotConfig:
        return self._ctx.config

    # AgentOS's private names, which its CheckpointEngine subclasses use
    # (`self._checkpointer.get(...)`, `self._config.gc_param`): the same objects.
    @property
    def _checkpointer(self) -> CheckpointBackend:
        return self._ctx.backend

    @_checkpointer.setter
    def _checkpointer(self, value: CheckpointBackend) -> None:
        self._ctx.backend = value

    @property
    def _config(self) -> SnapshotConfig:
        return self._ctx.config

    @_config.setter
    def _config(self, value: SnapshotConfig) -> None:
        self._ctx.config = value

    @property
    def _snapshot_counters(self) -> dict[str, int]:
        return self._ctx.counters

    @property
    def last_op_id(self) -> int | None:
        """The op id of the last write this engine recorded (None before any)."""
        return self._ctx.last_op_id

    @last_op_id.setter
    def last_op_id(self, value: int | None) -> None:
        self._ctx.last_op_id = value

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
        return await snapshot.snapshot(self._ctx, thread_id, messages, state, tools_result,
                                       trigger, parent_checkpoint_id, next_node)

    async def snapshot_safe(self, *args: Any, **kwargs: Any) -> str:
        """`snapshot` (the same arguments) that never raises: a failure is logged and ""
        returned, so checkpointing never breaks the agent's own flow."""
        return await snapshot.snapshot_safe(self._ctx, *args, **kwargs)

    # ---- AgentOS's decorator and scope ------------------------------------------------

    def snapshot_on(self, trigger: SnapshotTrigger):
        """Decorator: snapshot before and after each call of an async function.

        The thread and state come from the keyword arguments `_checkpoint_thread_id`
        (default "default") and `_checkpoint_state` (default {}), removed before the call.
        """
        trig = as_trigger(trigger) or trigger

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
        trig = as_trigger(trigger) or SnapshotTrigger.STATE_CHANGE
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
        return await self._ctx.backend.get_latest(thread_id)

    async def list_time_travel_points(self, thread_id: str, limit: int = 50) -> list[CheckpointMetadata]:
        """A thread's checkpoints, newest first (AgentOS's order)."""
        return await self._ctx.backend.list_checkpoints(thread_id, limit=limit)

    async def get_checkpoint_tree(self, thread_id: str, limit: int | None = None) -> dict[str, Any]:
        """The thread, its branch threads (recursively) and the edges between them
        (see agentctl.tree.checkpoint_tree)."""
        from agentctl.tree import checkpoint_tree

        return await checkpoint_tree(self._ctx.backend, thread_id, limit)

    # ---- rewind and branch -------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        """What `rewind` would do (nothing is written)."""
        return await rewind.plan_rewind(self._ctx, checkpoint_id, hard)

    async def rewind(self, checkpoint_id: str, hard: bool = False, *,
                     archive_thread: str | None = None) -> TimeTravelResult:
        """Make `checkpoint_id` the head of its thread again.

        The checkpoints after it move to a new archive thread (or, with hard=True, are
        deleted into the trash). `archive_thread` names the archive (e.g. a plan's)."""
        return await rewind.rewind(self._ctx, checkpoint_id, hard, archive_thread=archive_thread)

    async def time_travel_to_step(self, thread_id: str, step: int) -> TimeTravelResult | None:
        """Rewind to the last checkpoint of the thread whose step is <= step (None if none)."""
        return await rewind.time_travel_to_step(self._ctx, thread_id, step)

    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """Fork a new thread from a checkpoint; return the new thread id.

        The thread is `{source thread}-branch-{name}-{4 hex}`; its first row (step 0,
        tags ["branch", name]) copies the source's content and points at it."""
        return await rewind.branch(self._ctx, from_checkpoint_id, branch_name)

    # ---- merge -------------------------------------------------------------------------

    async def merge_base(self, a: str, b: str, reader: Reader | None = None) -> CheckpointMetadata | None:
        """The nearest common ancestor of checkpoints a and b (None if they share none):
        the first ancestor of b, breadth-first, that is also an ancestor of a and still
        exists (a deleted checkpoint both name as parent cannot serve as a base)."""
        return await merge.merge_base(reader or self._ctx.backend, a, b)

    async def plan_merge(self, branch_thread_id: str, into_thread_id: str,
                         strategy: str = "three-way") -> MergePlan:
        """What `merge_branch` would write, with its conflicts (nothing is written)."""
        return await merge.plan_merge(self._ctx, self._ctx.backend, branch_thread_id,
                                      into_thread_id, strategy)

    async def merge_branch(self, branch_thread_id: str, into_thread_id: str,
                           strategy: str = "three-way", *, checkpoint_id: str | None = None) -> str:
        """Merge the head of a branch thread into a thread; return the merge checkpoint id.

        `checkpoint_id` names the merge checkpoint (the one a plan announced, as
        `plan_merge(...).merged.metadata.checkpoint_id`). Raises MergeConflictError
        (nothing written) when conflicts remain, OperationError when there is nothing
        to merge (nothing written)."""
        return await merge.merge_branch(self._ctx, branch_thread_id, into_thread_id, strategy,
                                        checkpoint_id=checkpoint_id)

    # ---- prune and delete --------------------------------------------------------------

    async def plan_prune(self, thread_id: str, policy: CheckpointGC | str, param: float = 0,
                         *, preview: int | None = None) -> PrunePlan:
        """Which checkpoints `prune` would delete (never the head).

        With `preview=N`, `delete` holds only the first N of them and `delete_count`
        how many there are: a plan to show, without reading the metadata of every row
        (a prune of 100,000 rows would hold 100,000 of them)."""
        return await retention.plan_prune(self._ctx, thread_id, policy, param, preview=preview)

    async def prune(self, thread_id: str, policy: CheckpointGC | str, param: float = 0) -> OpResult:
        """Delete a thread's checkpoints by a GC policy, into the trash (undoable)."""
        return await retention.prune(self._ctx, thread_id, policy, param)

    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        """The plans of `prune_spec` (one per thread)."""
        return await retention.plan_prune_spec(self._ctx, spec, preview)

    async def prune_spec(self, spec: PruneSpec, *,
                         progress: Callable[[int], None] | None = None,
                         plans: list[PrunePlan] | None = None) -> list[OpResult]:
        """Prune the threads of the spec (every thread when `spec.threads` is None) as
        ONE operation in one transaction: all or nothing, one undo restores them all.
        A list of one OpResult (its op_id None when there was nothing to prune).
        `progress(1)` is called after each thread (a progress bar's advance)."""
        return await retention.prune_spec(self._ctx, spec, progress=progress, plans=plans)

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        """What `delete_thread` would delete (nothing is written)."""
        return await retention.plan_delete_thread(self._ctx, thread_id)

    async def delete_thread(self, thread_id: str) -> OpResult:
        """Delete every checkpoint of a thread, into the trash (undoable)."""
        return await retention.delete_thread(self._ctx, thread_id)

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
        return await transfer.import_checkpoints(self._ctx, checkpoints, on_conflict)

    # ---- edit --------------------------------------------------------------------------

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "write a new head of {thread} holding this checkpoint with these values"

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        """A new head of the checkpoint's thread: the checkpoint again, with `state` as its
        state (`agentctl edit`); `what` says what changed. One operation, undoable."""
        from agentctl.storage.agentos.edit import edit_state

        return await edit_state(self._ctx, checkpoint_id, state, what)

    # ---- the journal: undo, redo, oplog, purge ------------------------------------------

    @property
    def store(self) -> _Store:
        return _Store(self._ctx.backend)

    def _now(self) -> str:
        return self._ctx.now()

    @asynccontextmanager
    async def journal_tx(self, threads: Sequence[str] = ()) -> AsyncIterator[Any]:
        """The engine's write transaction (Postgres: agents' writes held off), the previous
        op log migrated first."""
        async with self._ctx.write(list(threads)) as tx:
            await self.migrate(tx)
            yield tx

    async def fingerprint(self, tx: Any, thread: str) -> Any:
        return await oplog.fingerprint(tx, thread)

    old_log = legacy.OLD

    async def migrate(self, tx: Any) -> None:
        await legacy.migrate(tx)

    async def _pick(self, tx: Any, op_id: int | None, undone: bool) -> dict[str, Any]:
        if op_id is not None and not undone and await tx.table_exists(ops.LOG):
            try:
                rec = await ops.record(tx, int(op_id))
            except LookupError:
                rec = None
            if rec is not None and rec["kind"] in undo.ENTRIES:
                undo.refuse_entry(rec)
        return await super()._pick(tx, op_id, undone)

    async def undo_threads(self, record: dict[str, Any], threads: Sequence[str]) -> list[str]:
        return undo.only_threads(record, threads)

    async def journal_move(self, tx: Any, record: dict[str, Any], image: str,
                           threads: Sequence[str] | None = None) -> dict[str, Any]:
        if image == "before":
            await undo.check_undo(tx, record, threads)
        self._moved_ids = await undo.moved_ids(tx, int(record["op_id"]), image, threads)
        moved = await super().journal_move(tx, record, image, threads)
        for thread in moved["moved"]:
            self._ctx.counters.pop(thread, None)
        return moved

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        return dict(getattr(self, "_moved_ids", None) or {})

    async def journal_ready(self) -> None:
        self._moved_ids = {}
        await super().journal_ready()

    async def purge(self, dry_run: bool = False) -> PurgeResult:
        """Free what undo could still bring back (the trash); VACUUM on SQLite.
        The ops whose trash is purged can no longer be undone."""
        return await undo.purge(self._ctx, self, dry_run)


async def create_checkpoint_engine(backend: str = "sqlite", db_path: str = "checkpoints.db",
                                   **kwargs: Any) -> CheckpointEngine:
    """AgentOS's quick start: an engine over a new or existing checkpointer."""
    from agentctl.storage.agentos.connect import create_checkpointer

    return CheckpointEngine(create_checkpointer(backend, db_path=db_path, **kwargs))
