"""CheckpointEngine: the AgentOS engine's public class (AgentOS's names, signatures and
call shapes; importable as `agentctl.engine.CheckpointEngine` and from `agentctl`), the
AgentOS format's History, and the one place where agentctl changes history.

    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

    @engine.snapshot_on(SnapshotTrigger.TOOL_CALL)
    async def my_tool(query): ...

    await engine.rewind(checkpoint_id)              # the later checkpoints are set aside
    branch = await engine.branch(checkpoint_id, "bugfix-experiment")
    await engine.merge_branch(branch, "thread-1")   # three-way, conflicts raise

Design (what users see: docs/library.md, "The library: CheckpointEngine")
-------------------------------------------------------------------
Writes. One backend transaction each (`BEGIN IMMEDIATE` on SQLite; per-thread advisory
locks and a table lock on Postgres), its journal records included: a failure midway
leaves the database as before; an agent writing meanwhile waits. Every debugger write
is an op of the journal (`agentctl.storage.journal`, created by the first such write;
the engine's side in oplog.py and undo.py). An agent's `snapshot` is not logged.

Steps. The next step of a thread is max(highest step in the database, this engine's
counter) + 1, computed inside the write transaction. `rewind` sets the counter to the
target's step (as AgentOS did), `branch` to 0, `undo` and `delete_thread` forget it.
`snapshot` without `parent_checkpoint_id` links to the thread's head (AgentOS stored
no parent). Within a thread rows are ordered by step, created_at, row id; the head is
the last row, and no GC policy or prune ever deletes it.

Rewind. The checkpoints after the target move, ids, steps and content kept, to a new
archive thread `{thread}-branch-rewind-{4 hex}`; the first moved row keeps its parent
link to the target (a NULL parent is set to it; undo restores it). `hard=True` deletes
them into the trash instead. Caveat: rows of the target's step ordered before it
(duplicate steps a restarted writer left) stay; the format's reader may pick either.

Merge. The base is the nearest common ancestor through parent links across threads,
a `merged:<id>` tag counting as a second parent. The merge checkpoint: parent = the
target's old head, step = next step, tags ["merge", "merged:<branch head>",
"branch:<branch thread>"], the next_node of the target's head. Conflict paths are JSON
pointers ("/state/...", "/tools_result/..."); a branch head already an ancestor of the
target's head raises OperationError ("already merged"); no common ancestor: an empty base.

GC. Each policy is one SQL condition over the whole thread asked, never its head:
keep_last_n n (the last max(n, 1)), keep_age s (created_at older than s seconds by the
engine's clock; SQLite compares julianday()), keep_milestones n (position p of N kept
when p = 0 or floor(p(n-1)/(N-1)) > floor((p-1)(n-1)/(N-1))), keep_all. `prune` moves
rows into the trash (undoable); the automatic GC after `snapshot` deletes for real, in
the snapshot's transaction, unlogged (keeping its deletions would grow the file forever).

Ids. `ckpt-{thread}-{step}-{6 hex}`; branch threads `{thread}-branch-{name}-{4 hex}`;
the hex digits from `rng` (a `random.Random`, for reproducible output) or `random`, the
time from `clock` (returning a datetime or ISO string). Unknown ids raise
`CheckpointNotFound` / `ThreadNotFound` (ValueErrors saying "not found").

Where AgentOS was defective or unspecified this engine differs: rewind moves (not
deletes), rewind_depth = checkpoints set aside, snapshot_count_before = checkpoints in
the thread before; a branch's first row copies the source's next_node; merge_branch is
three-way; `get_checkpoint_tree(thread, limit=None)` returns every checkpoint of the
thread and its branches (a limit applies per thread); snapshot links a parent.
Unchanged: an unknown trigger returns "", `time_travel_to_step` returns None when no
checkpoint is at or before the step, `get_checkpoint_tree` of an unknown thread is empty.

`CheckpointEngine` is a thin facade: each method calls a function of one module beside
this one (snapshot, rewind, merge, retention, transfer, edit, undo; each says what it
does) over one small `EngineContext` (context.py).
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos import legacy, merge, oplog, retention, rewind, snapshot, transfer, undo
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
from agentctl.storage.contract import History, PruneSpec, retried_write
from agentctl.storage.journal import ops
from agentctl.storage.journal.history import JournalHistory

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import CheckpointBackend, Reader


class _Store:
    """The engine's backend as the journal's History reads it (`store.connection`,
    `store.connect`): the AgentOS store is its own connection."""

    def __init__(self, backend: CheckpointBackend) -> None:
        self.connection = backend
        self.format = backend.format

    async def connect(self) -> None:
        await self.connection.connect()


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
        return await snapshot.snapshot(
            self._ctx, thread_id, messages, state, tools_result, trigger, parent_checkpoint_id, next_node
        )

    async def snapshot_safe(self, *args: Any, **kwargs: Any) -> str:
        """`snapshot` (the same arguments) that never raises: a failure is logged and ""
        returned, so checkpointing never breaks the agent's own flow."""
        return await snapshot.snapshot_safe(self._ctx, *args, **kwargs)

    # ---- AgentOS's decorator and scope ------------------------------------------------

    def snapshot_on(self, trigger: SnapshotTrigger) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: snapshot before and after each call of an async function.

        The thread and state come from the keyword arguments `_checkpoint_thread_id`
        (default "default") and `_checkpoint_state` (default {}), removed before the call.
        """
        trig = as_trigger(trigger) or trigger

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(func)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                thread_id = kwargs.pop("_checkpoint_thread_id", "default")
                state = kwargs.pop("_checkpoint_state", {})
                await self.snapshot_safe(
                    thread_id=thread_id,
                    messages=[{"role": "tool_call", "content": f"{func.__name__}({kwargs})"}],
                    state=state,
                    tools_result={},
                    trigger=trig,
                )
                result = await func(*args, **kwargs)
                await self.snapshot_safe(
                    thread_id=thread_id,
                    messages=[{"role": "tool_result", "content": str(result)[:500]}],
                    state=state,
                    tools_result={"result": str(result)[:1000]},
                    trigger=trig,
                )
                return result

            return wrapper

        return decorator

    @asynccontextmanager
    async def snapshot_scope(
        self,
        thread_id: str,
        state: dict[str, Any],
        trigger: SnapshotTrigger = SnapshotTrigger.STATE_CHANGE,
    ) -> AsyncIterator[None]:
        """Snapshot on entering and on leaving the block (also when it raises)."""
        trig = as_trigger(trigger) or SnapshotTrigger.STATE_CHANGE
        await self.snapshot_safe(
            thread_id=thread_id,
            messages=[{"role": "system", "content": f"Enter scope ({trig.value})"}],
            state=state,
            tools_result={},
            trigger=trig,
        )
        try:
            yield
        finally:
            await self.snapshot_safe(
                thread_id=thread_id,
                messages=[{"role": "system", "content": f"Exit scope ({trig.value})"}],
                state=state,
                tools_result={},
                trigger=trig,
            )

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

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        """Make `checkpoint_id` the head of its thread again.

        The checkpoints after it move to a new archive thread (or, with hard=True, are
        deleted into the trash). `archive_thread` names the archive (e.g. a plan's)."""
        return await rewind.rewind(self._ctx, checkpoint_id, hard, archive_thread=archive_thread)

    async def time_travel_to_step(self, thread_id: str, step: int) -> TimeTravelResult | None:
        """Rewind to the last checkpoint of the thread whose step is <= step (None if none)."""
        return await rewind.time_travel_to_step(self._ctx, thread_id, step)

    @retried_write
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

    async def plan_merge(
        self, branch_thread_id: str, into_thread_id: str, strategy: str = "three-way"
    ) -> MergePlan:
        """What `merge_branch` would write, with its conflicts (nothing is written)."""
        return await merge.plan_merge(
            self._ctx, self._ctx.backend, branch_thread_id, into_thread_id, strategy
        )

    @retried_write
    async def merge_branch(
        self,
        branch_thread_id: str,
        into_thread_id: str,
        strategy: str = "three-way",
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """Merge the head of a branch thread into a thread; return the merge checkpoint id.

        `checkpoint_id` names the merge checkpoint (the one a plan announced, as
        `plan_merge(...).merged.metadata.checkpoint_id`). Raises MergeConflictError
        (nothing written) when conflicts remain, OperationError when there is nothing
        to merge (nothing written)."""
        return await merge.merge_branch(
            self._ctx, branch_thread_id, into_thread_id, strategy, checkpoint_id=checkpoint_id
        )

    # ---- prune and delete --------------------------------------------------------------

    async def plan_prune(
        self, thread_id: str, policy: CheckpointGC | str, param: float = 0, *, preview: int | None = None
    ) -> PrunePlan:
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

    @retried_write
    async def prune_spec(
        self,
        spec: PruneSpec,
        *,
        progress: Callable[[int], None] | None = None,
        plans: Sequence[PrunePlan] | None = None,
    ) -> list[OpResult]:
        """Prune the threads of the spec (every thread when `spec.threads` is None) as
        ONE operation in one transaction: all or nothing, one undo restores them all.
        A list of one OpResult (its op_id None when there was nothing to prune).
        `progress(1)` is called after each thread (a progress bar's advance)."""
        return await retention.prune_spec(self._ctx, spec, progress=progress, plans=plans)

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        """What `delete_thread` would delete (nothing is written)."""
        return await retention.plan_delete_thread(self._ctx, thread_id)

    @retried_write
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
        if op_id is not None and not undone:
            rec = await ops.find(tx, int(op_id))
            if rec is not None and rec["kind"] in undo.ENTRIES:
                undo.refuse_entry(rec)
        return await super()._pick(tx, op_id, undone)

    async def undo_threads(self, record: dict[str, Any], threads: Sequence[str]) -> list[str]:
        return undo.only_threads(record, threads)

    async def journal_move(
        self, tx: Any, record: dict[str, Any], image: str, threads: Sequence[str] | None = None
    ) -> dict[str, Any]:
        if image == "before":
            await undo.check_undo(tx, record, threads)
        self._moved_ids = await undo.moved_ids(tx, int(record["op_id"]), image, threads)
        moved = await super().journal_move(tx, record, image, threads)
        for thread in moved["moved"]:
            self._ctx.counters.pop(thread, None)
        return moved

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        return dict(getattr(self, "_moved_ids", None) or {})

    async def preview_result(self, reader: Any, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        return await undo.moved_ids(reader, int(record["op_id"]), image, None)

    async def journal_ready(self) -> None:
        self._moved_ids = {}
        await super().journal_ready()

    @retried_write
    async def purge(self, dry_run: bool = False) -> PurgeResult:
        """Free what undo could still bring back (the trash); VACUUM on SQLite.
        The ops whose trash is purged can no longer be undone."""
        return await undo.purge(self._ctx, self, dry_run)


async def create_checkpoint_engine(
    backend: str = "sqlite", db_path: str = "checkpoints.db", **kwargs: Any
) -> CheckpointEngine:
    """AgentOS's quick start: an engine over a new or existing checkpointer."""
    from agentctl.storage.agentos.connect import create_checkpointer

    return CheckpointEngine(create_checkpointer(backend, db_path=db_path, **kwargs))
