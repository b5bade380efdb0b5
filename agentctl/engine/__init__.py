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
`agentctl.engine.oplog` (side tables created by the first such write; see there for the
tables, the fingerprints and the undo rules). An agent's `snapshot` is not logged and
creates no side table.

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
full row of the same thread; see `agentctl.engine.delta` for the encoding, chosen so a foreign
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

Modules. `CheckpointEngine` (history.py) is a thin facade: each method calls a function
of one module over one small `EngineContext` (context.py: the backend, the config, the
clock, the id maker, the write transaction, the step counters):

- types.py      triggers, policies, SnapshotConfig, the plans and results
- snapshot.py   snapshot writing and the automatic GC after it
- rewind.py     rewind, time_travel_to_step, branch
- merge.py      the merge base, plan_merge, merge_branch
- retention.py  the GC policies as SQL, prune, delete_thread
- transfer.py   import
- undo.py       undo, purge
- oplog.py      the op log, trash and undo rules (side tables)
- delta.py      delta snapshots
"""



from typing import TYPE_CHECKING, Any

# Loaded on first use (as agentctl/__init__.py does): a reader that needs only
# agentctl.engine.oplog or agentctl.engine.delta (e.g. `agentctl tree`) does not pay
# for the engine's other modules.
_EXPORTS = {
    "CheckpointEngine": "agentctl.engine.history",
    "create_checkpoint_engine": "agentctl.engine.history",
    "OpRecord": "agentctl.engine.oplog",
    "OpResult": "agentctl.engine.oplog",
    "PurgeResult": "agentctl.engine.oplog",
    "MERGE_STRATEGIES": "agentctl.engine.types",
    "CheckpointGC": "agentctl.engine.types",
    "DeletePlan": "agentctl.engine.types",
    "MergePlan": "agentctl.engine.types",
    "PrunePlan": "agentctl.engine.types",
    "RewindPlan": "agentctl.engine.types",
    "SnapshotConfig": "agentctl.engine.types",
    "SnapshotTrigger": "agentctl.engine.types",
    "TimeTravelResult": "agentctl.engine.types",
    "as_policy": "agentctl.engine.types",
    # The INSERT of a full `checkpoints` row (tests and benchmarks write rows with it).
    "_INSERT_SQL": "agentctl.engine.context",
    # The error types callers of the engine catch, re-exported for convenience.
    "AgentctlError": "agentctl.errors",
    "MergeConflictError": "agentctl.errors",
    "SnapshotTooLarge": "agentctl.errors",
}
_RENAMED = {"_INSERT_SQL": "INSERT_SQL"}

__all__ = [name for name in _EXPORTS if not name.startswith("_")]

if TYPE_CHECKING:
    from agentctl.engine.context import INSERT_SQL as _INSERT_SQL  # noqa: F401
    from agentctl.engine.history import CheckpointEngine, create_checkpoint_engine  # noqa: F401
    from agentctl.engine.oplog import OpRecord, OpResult, PurgeResult  # noqa: F401
    from agentctl.engine.types import (  # noqa: F401
        MERGE_STRATEGIES,
        CheckpointGC,
        DeletePlan,
        MergePlan,
        PrunePlan,
        RewindPlan,
        SnapshotConfig,
        SnapshotTrigger,
        TimeTravelResult,
        as_policy,
    )
    from agentctl.errors import AgentctlError, MergeConflictError, SnapshotTooLarge  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentctl.engine' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value
