"""The writes, one operation layer for both faces: each is a plan (what it would do, the
question that confirms it, nothing written) and an apply (the write: one transaction of
the format's History, its summary and its JSON). The CLI's commands and the TUI's flows
only parse, ask and present (headless: no rich, no textual; data only through the
storage contract).

A face runs one the same way: `op.plan(store, history)` -> show the plan, stop on
`plan.nothing`, ask `plan.confirm` (the CLI only when `op.asks`) -> `op.apply(store,
history, plan)` -> say `done.summary` (with how to undo `done.op_id`), print `done.json`.
Both phases on one open store (the CLI: agentctl.cli.writes.perform).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from agentctl.errors import MergeConflictError, NothingToMerge, UsageError

__all__ = [
    "Plan",
    "Done",
    "Operation",
    "Rewind",
    "Branch",
    "Merge",
    "Prune",
    "DeleteThread",
    "Undo",
    "Redo",
    "Purge",
    "EditState",
    "RunAgent",
    "Import",
    "Blocking",
    "OPERATIONS",
]

T = TypeVar("T")
#: how a face waits for a blocking call (a child process): the CLI in place (its
#: terminal's Ctrl-C is the child's), the TUI on a thread (asyncio.to_thread)
Blocking = Callable[..., Awaitable[Any]]


async def in_place(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


@dataclass
class Plan:
    """What a write would do. `data`: the History's plan (storage/results.py) or what the
    operation read; `confirm`: what the write does, as a face asks it; `nothing`: why there
    is nothing to write (no question then, no write); `destructive`: rows deleted beyond
    the op log's reach later (a safety copy of a SQLite file first)."""

    op: Operation
    data: Any = None
    confirm: str = ""
    nothing: str = ""
    destructive: bool = False
    #: what the plan found that the apply and the faces need (e.g. the resolved checkpoint)
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The command's JSON for --dry-run."""
        return self.op.plan_json(self)


@dataclass
class Done:
    """What a write did: `summary`, one line (each face adds how to undo `op_id`, then
    `more`; `lines`: the lines of a prune of several threads), the command's JSON, and
    where the TUI goes after it (`thread`, checkpoint `select`)."""

    kind: str
    summary: str
    op_id: int | None
    json: dict[str, Any]
    thread: str | None = None
    select: str | None = None
    undoable: bool = True
    lines: list[tuple[str, int | None]] = field(default_factory=list)
    data: Any = None
    #: what a face says after how to undo it (a run's output, where it waits)
    more: str = ""


class Operation:
    """One kind of write. `need`: the Capability it needs (Unsupported, exit 2, before
    anything); `asks`: the CLI asks before it (a destructive write; the TUI asks before
    every write). (Its arguments are set by a plain __init__, not @dataclass: eleven more
    dataclasses cost every write command about 5 ms of CPU at import.)"""

    kind: ClassVar[str] = ""
    need: ClassVar[str | None] = None
    asks: ClassVar[bool] = False
    #: the command line plans it before the write (undo, redo: the History picks the op)
    plan_first: ClassVar[bool] = True

    async def plan(self, store: Any, history: Any) -> Plan:
        return Plan(self, confirm=self.kind)

    async def apply(self, store: Any, history: Any, plan: Plan) -> Done:
        raise NotImplementedError

    def refusal(self, plan: Plan) -> Exception | None:
        """The error a face raises for this plan before anything else (nothing written)."""
        return None

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        """The command's --dry-run --json: the same keys as the write's (`Done.json`)."""
        data = plan.data
        return {"dry_run": True, **(data.to_dict() if hasattr(data, "to_dict") else dict(data or {}))}

    def nothing_json(self, plan: Plan) -> dict[str, Any]:
        """The command's --json when the plan finds nothing to write (nothing written):
        the write's keys, no op."""
        return {**self.plan_json(plan), "dry_run": False}


def one_shape(
    dry_run: bool, plan: Any, keys: tuple[str, ...], written: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A write command's --json, one object whether it plans or writes: `dry_run`, `plan`
    (--dry-run: the History's plan; a write: null) and the write's `keys` (a dry run:
    those the plan knows, the others null)."""
    out: dict[str, Any] = {"dry_run": dry_run, "plan": plan, **dict.fromkeys(keys)}
    out.update(written or {})
    return out


def _undo_hint(op_id: int | None) -> str:
    return f" (op {op_id}; undo: agentctl undo {op_id})" if op_id is not None else ""


# ---- rewind, branch, merge -------------------------------------------------------------------


class Rewind(Operation):
    """REF becomes the head of its thread again; what the later checkpoints become is the
    format's (`effect`): moved to an archive thread, deleted (--hard), a fork copy the new
    head (LangGraph), or marked rewound by a rewind event (ADK)."""

    kind: ClassVar[str] = "rewind"
    need: ClassVar[str | None] = "rewind"
    asks: ClassVar[bool] = True

    def __init__(self, ref: str, hard: bool = False) -> None:
        self.ref = ref
        self.hard = hard

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.refs import resolve

        meta = await resolve(store, self.ref)
        p = await history.plan_rewind(meta.checkpoint_id, hard=self.hard)
        effect = (
            "delete"
            if self.hard
            else "mark"
            if p.marked
            else "fork"
            if p.archive_thread == p.thread_id
            else "move"
        )
        n, thread = len(p.moved), p.thread_id
        confirm = {
            "delete": f"delete {n} checkpoint(s) of {thread}",
            "mark": f"append a rewind event to {thread} marking {n} checkpoint(s) rewound",
            "fork": f"write a fork of {p.target.checkpoint_id} as the head of {thread}",
            "move": f"move {n} checkpoint(s) of {thread} to {p.archive_thread}",
        }[effect]
        nothing = (
            "" if p.moved else f"{meta.checkpoint_id} is already the head of {thread}: nothing to rewind"
        )
        return Plan(self, p, confirm, nothing, destructive=self.hard, facts={"effect": effect})

    #: rewind --json: `dry_run`, `plan` and these (the write's TimeTravelResult)
    keys: ClassVar[tuple[str, ...]] = (
        "checkpoint_id",
        "thread_id",
        "step",
        "rewind_depth",
        "snapshot_count_before",
        "can_replay",
        "op_id",
        "archive_thread",
        "moved",
        "deleted",
        "marked",
    )

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        p = plan.data
        return one_shape(
            True,
            p.to_dict(),
            self.keys,
            {
                "thread_id": p.thread_id,
                "archive_thread": p.archive_thread,
                "marked": p.marked,
                "rewind_depth": len(p.moved),
            },
        )

    def nothing_json(self, plan: Plan) -> dict[str, Any]:
        return {**self.plan_json(plan), "dry_run": False, "plan": None}

    async def apply(self, store: Any, history: Any, plan: Plan) -> Done:
        p = plan.data
        target = p.target
        if self.hard:
            result = await history.rewind(target.checkpoint_id, hard=True)
        else:  # the archive thread the plan announced, not a new random name
            result = await history.rewind(target.checkpoint_id, archive_thread=p.archive_thread)
        new = result.checkpoint.metadata
        if result.marked:  # ADK: a rewind event is the new head; the rewound events stay
            summary = (
                f"{result.thread_id} is rewound to {target.checkpoint_id} (step {target.step}): a rewind "
                f"event {new.checkpoint_id} (step {new.step}) marks {result.rewind_depth} later "
                "checkpoint(s) rewound; they stay in the thread, out of the conversation"
            )
        else:
            head, where = (
                target.checkpoint_id,
                "deleted" if self.hard else f"moved to {result.archive_thread}",
            )
            if new.checkpoint_id != head:  # a fork copy is the new head (LangGraph)
                head = f"{new.checkpoint_id}, a fork of {target.checkpoint_id}"
                where = "deleted" if self.hard else "kept as a branch"
            summary = (
                f"{result.thread_id} is now at {head} (step {target.step}); "
                f"{result.rewind_depth} checkpoint(s) {where}"
            )
        return Done(
            self.kind,
            summary,
            result.op_id,
            one_shape(False, None, self.keys, result.to_dict()),
            result.thread_id,
            new.checkpoint_id,
            data=result,
        )


class Branch(Operation):
    """A new thread from REF (the writer's naming: THREAD-branch-NAME-XXXX)."""

    kind: ClassVar[str] = "branch"
    need: ClassVar[str | None] = "branch"

    def __init__(self, ref: str, name: str = "") -> None:
        self.ref = ref
        self.name = name

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.refs import check_branch_name, resolve

        check_branch_name(self.name)
        meta = await resolve(store, self.ref)
        return Plan(
            self,
            meta,
            f"start a thread {meta.thread_id}-branch-{self.name}-XXXX from {meta.checkpoint_id}",
            facts={"meta": meta},
        )

    async def apply(self, store: Any, history: Any, plan: Plan) -> Done:
        meta = plan.data
        thread_id = await history.branch(meta.checkpoint_id, self.name)
        op_id = history.last_op_id
        return Done(
            self.kind,
            f"branched {thread_id} from {meta.checkpoint_id}",
            op_id,
            {
                "dry_run": False,
                "thread_id": thread_id,
                "from_checkpoint_id": meta.checkpoint_id,
                "op_id": op_id,
            },
            thread_id,
        )


class Merge(Operation):
    """A branch's head merged into a thread (default: the one it came from). The plan's
    conflicts stop a three-way merge (the CLI: exit 4; the TUI offers ours or theirs:
    `apply(..., strategy=)`)."""

    kind: ClassVar[str] = "merge"
    need: ClassVar[str | None] = "merge"

    def __init__(self, branch: str, into: str | None = None, strategy: str = "three-way") -> None:
        self.branch = branch
        self.into = into
        self.strategy = strategy

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.refs import resolve_thread

        if self.strategy not in ("three-way", "ours", "theirs"):
            raise UsageError(f"unknown strategy {self.strategy!r}; use three-way, ours or theirs")
        src = await resolve_thread(store, self.branch)
        if self.into is not None:
            dst = await resolve_thread(store, self.into)
        else:
            summary = await store.thread_summary(src)
            if summary is None or not summary.branch_of:
                raise UsageError(f"{src} is not a branch of another thread; say where with --into THREAD")
            dst = summary.branch_of
        if dst == src:
            raise UsageError("cannot merge a thread into itself")
        p = await history.plan_merge(src, dst, strategy=self.strategy)
        return Plan(
            self,
            p,
            f"merge {src} into {dst}",
            f"{dst} already contains {src}; nothing to merge" if p.up_to_date else "",
            facts={"branch": src, "into": dst},
        )

    #: merge --json: `dry_run`, `plan` and these (what the write did)
    keys: ClassVar[tuple[str, ...]] = ("branch", "into", "strategy", "checkpoint_id", "op_id", "up_to_date")

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        p = plan.data
        return one_shape(
            True,
            p.to_dict(),
            self.keys,
            self._known(plan, checkpoint_id=p.to_dict()["checkpoint_id"], up_to_date=p.up_to_date),
        )

    def nothing_json(self, plan: Plan) -> dict[str, Any]:
        return one_shape(False, None, self.keys, self._known(plan, up_to_date=True))

    def _known(self, plan: Plan, **more: Any) -> dict[str, Any]:
        return {"branch": plan.facts["branch"], "into": plan.facts["into"], "strategy": self.strategy, **more}

    def conflicts_json(self, plan: Plan) -> dict[str, Any]:
        return {
            "branch": plan.facts["branch"],
            "into": plan.facts["into"],
            "strategy": self.strategy,
            "conflicts": [c.to_dict() for c in plan.data.conflicts],
        }

    def refusal(self, plan: Plan) -> MergeConflictError | None:
        """A three-way plan's conflicts (nothing written; the TUI offers a side instead)."""
        if not plan.data.conflicts:
            return None
        n, src, dst = len(plan.data.conflicts), plan.facts["branch"], plan.facts["into"]
        return MergeConflictError(
            plan.data.conflicts,
            f"merge of {src} into {dst} has {n} conflict(s); "
            "nothing was written (try --strategy ours|theirs)",
        )

    async def apply(self, store: Any, history: Any, plan: Plan, strategy: str | None = None) -> Done:
        """The merge (MergeConflictError when the threads moved on since the plan; another
        writer that brought the branch in since: a Done with no op, the plan up to date)."""
        p, src, dst = plan.data, plan.facts["branch"], plan.facts["into"]
        how = strategy or self.strategy
        try:
            # the checkpoint id the plan announced (unless the write makes it: LangGraph's
            # carries the time of the write)
            cid = await history.merge_branch(
                src,
                dst,
                strategy=how,
                checkpoint_id=None if p.id_at_write else p.merged.metadata.checkpoint_id,
            )
        except MergeConflictError as exc:
            p.conflicts = exc.conflicts
            raise
        except NothingToMerge:
            p.up_to_date = True
            return Done(
                self.kind,
                plan.nothing or f"{dst} already contains {src}; nothing to merge",
                None,
                self.nothing_json(plan),
                dst,
                undoable=False,
            )
        op_id = history.last_op_id
        return Done(
            self.kind,
            f"merged {src} into {dst} as {cid}",
            op_id,
            one_shape(
                False,
                None,
                self.keys,
                {
                    "branch": src,
                    "into": dst,
                    "strategy": how,
                    "checkpoint_id": cid,
                    "op_id": op_id,
                    "up_to_date": False,
                },
            ),
            dst,
            cid,
        )


# ---- prune, delete -------------------------------------------------------------------------


class Prune(Operation):
    """Old checkpoints deleted by a policy (`policy`: PruneSpec's fields keep_last,
    older_than (seconds), milestones, statuses), in `thread` or every thread (None).
    `preview`: how many rows each plan lists (None: all)."""

    kind: ClassVar[str] = "prune"
    need: ClassVar[str | None] = "prune"
    asks: ClassVar[bool] = True

    def __init__(self, thread: str | None, policy: dict[str, Any], preview: int | None = None) -> None:
        self.thread = thread
        self.policy = policy
        self.preview = preview

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.refs import resolve_thread
        from agentctl.storage.contract import PruneSpec

        tids = None if self.thread is None else [await resolve_thread(store, self.thread)]
        spec = PruneSpec(threads=tids, **self.policy)
        plans = await history.plan_prune_spec(spec, preview=self.preview)
        todo = [p for p in plans if p.delete_count]
        total = sum(p.delete_count for p in todo)
        kept = sum(p.keep_count for p in plans)
        nothing = (
            "nothing to prune: no thread matches"
            if not plans
            else ""
            if total
            else f"nothing to prune: the policy keeps all {kept} checkpoint(s)"
        )
        return Plan(
            self,
            plans,
            f"delete {total} checkpoint(s) in {len(todo)} thread(s)",
            nothing,
            destructive=True,
            facts={"spec": spec, "todo": todo, "total": total, "kept": kept},
        )

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        return self.shape(True, plans=[p.to_dict() for p in plan.data])

    def nothing_json(self, plan: Plan) -> dict[str, Any]:
        return self.shape(False)

    @staticmethod
    def shape(
        dry_run: bool,
        plans: list[Any] | None = None,
        results: list[Any] | None = None,
        vacuum: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """prune --json, one object: the plans (--dry-run), the results (a write), VACUUM's report."""
        return {"dry_run": dry_run, "plans": plans or [], "results": results or [], "vacuum": vacuum}

    async def apply(
        self, store: Any, history: Any, plan: Plan, progress: Callable[[int], Any] | None = None
    ) -> Done:
        """`progress(n)`: a context manager giving the callable advanced per thread (a
        face's progress bar over n threads)."""
        # One operation in one transaction (all threads or none), undone by one undo.
        if progress is None:
            results = await history.prune_spec(plan.facts["spec"], plans=plan.data)
        else:
            with progress(len(plan.data)) as advance:
                results = await history.prune_spec(plan.facts["spec"], progress=advance, plans=plan.data)
        results = results if isinstance(results, list) else [results]
        deleted = sum(len(r.deleted) for r in results)
        threads = [p.thread_id for p in plan.facts["todo"]]
        op_id = next((r.op_id for r in results if r.op_id is not None), None)
        where = threads[0] if len(threads) == 1 else f"{len(threads)} threads"
        return Done(
            self.kind,
            f"pruned {where}: {deleted} checkpoint(s) deleted, {plan.facts['kept']} kept",
            op_id,
            self.shape(False, results=[r.to_dict() for r in results]),
            threads[0] if threads else None,
            lines=[(r.summary, r.op_id) for r in results],
            data=results,
        )


class DeleteThread(Operation):
    """A thread and all its checkpoints deleted (into the trash until purge)."""

    kind: ClassVar[str] = "delete"
    need: ClassVar[str | None] = "delete"
    asks: ClassVar[bool] = True

    def __init__(self, thread: str) -> None:
        self.thread = thread

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.refs import resolve_thread

        p = await history.plan_delete_thread(await resolve_thread(store, self.thread))
        return Plan(self, p, f"delete thread {p.thread_id} ({p.checkpoints} checkpoints)", destructive=True)

    #: threads delete --json: `dry_run`, `plan`, these (the write's OpResult) and `vacuum`
    keys: ClassVar[tuple[str, ...]] = (
        "op_id",
        "kind",
        "summary",
        "created",
        "deleted",
        "moved",
        "skipped",
        "vacuum",
    )

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        return one_shape(True, plan.data.to_dict(), self.keys, {"kind": self.kind})

    async def apply(self, store: Any, history: Any, plan: Plan) -> Done:
        result = await history.delete_thread(plan.data.thread_id)
        return Done(
            self.kind,
            result.summary,
            result.op_id,
            one_shape(False, None, self.keys, result.to_dict()),
            data=result,
        )


# ---- undo, redo, purge ----------------------------------------------------------------------


class Undo(Operation):
    """An op undone (default: the newest not undone; `threads`: of a prune, those alone)."""

    kind: ClassVar[str] = "undo"
    need: ClassVar[str | None] = "undo"
    plan_first: ClassVar[bool] = False

    def __init__(
        self, op_id: int | None = None, threads: list[str] | None = None, dry_run: bool = False
    ) -> None:
        self.op_id = op_id
        self.threads = threads
        self.dry_run = dry_run

    async def plan(self, store: Any, history: Any) -> Plan:
        if self.dry_run:  # the History's own dry run: refused as the undo would be, its checkpoints named
            p = await history.undo(self.op_id, self.threads, dry_run=True)
            return Plan(self, p, f"undo op {p.op_id}")
        ops = [
            op
            for op in await history.oplog(limit=50)
            if (
                op.op_id == self.op_id
                if self.op_id is not None
                else getattr(op, "undoable", not op.undone and op.kind not in ("undo", "purge"))
            )
        ]
        if not ops:
            return Plan(self, None, nothing="nothing to undo")
        return Plan(self, ops[0], f"undo op {ops[0].op_id} ({ops[0].kind}: {ops[0].summary})")

    async def apply(self, store: Any, history: Any, plan: Plan | None = None) -> Done:
        op_id = plan.data.op_id if plan is not None and plan.data is not None else self.op_id
        result = await (history.undo(op_id, self.threads) if self.threads else history.undo(op_id))
        record = plan.data if plan is not None else None
        return Done(
            self.kind,
            result.summary,
            result.op_id,
            {"dry_run": False, **result.to_dict()},
            record.threads[0] if record is not None and record.threads else None,
            undoable=False,
            data=result,
        )


class Redo(Operation):
    """An undone op re-applied (default: the newest undone one); its plan is the
    History's dry run."""

    kind: ClassVar[str] = "redo"
    need: ClassVar[str | None] = "redo"
    plan_first: ClassVar[bool] = False

    def __init__(self, op_id: int | None = None) -> None:
        self.op_id = op_id

    async def plan(self, store: Any, history: Any) -> Plan:
        p = await history.redo(self.op_id, dry_run=True)
        return Plan(self, p, f"redo op {p.op_id}")

    async def apply(self, store: Any, history: Any, plan: Plan | None = None) -> Done:
        op_id = plan.data.op_id if plan is not None else self.op_id
        result = await history.redo(op_id)
        return Done(
            self.kind, result.summary, result.op_id, {"dry_run": False, **result.to_dict()}, data=result
        )


class Purge(Operation):
    """What undo or redo could still bring back freed for good (not undoable)."""

    kind: ClassVar[str] = "purge"
    need: ClassVar[str | None] = "undo"
    asks: ClassVar[bool] = True

    async def plan(self, store: Any, history: Any) -> Plan:
        p = await history.purge(dry_run=True)
        if not p.ops:
            return Plan(self, p, nothing="nothing to purge: no rows are kept for undo or redo")
        kept = p.kept_for()  # an undone operation's rows are kept for its redo
        return Plan(
            self,
            p,
            f"purge what {kept} could bring back (this cannot be undone)",
            destructive=True,
            facts={"kept": kept},
        )

    def describe(self, plan: Plan) -> str:
        """The plan in a line."""
        p = plan.data
        if plan.nothing:
            return plan.nothing
        kept, ops = plan.facts["kept"], p.ops
        return (
            f"purge: free {p.rows} row(s) kept for {kept} by {len(ops)} operation(s)"
            + f" ({', '.join(map(str, ops[:20]))}{', …' if len(ops) > 20 else ''})"
            + (
                "; they can no longer be undone"
                if kept == "undo"
                else "; they can no longer be redone"
                if kept == "redo"
                else f"; they can no longer be undone, nor redone ({', '.join(map(str, p.undone[:20]))})"
            )
        )

    async def apply(self, store: Any, history: Any, plan: Plan) -> Done:
        result = await history.purge()
        return Done(
            self.kind,
            f"purged {result.rows} row(s) of {len(result.ops)} operation(s)"
            + (" and compacted the file" if result.vacuumed else ""),
            None,
            result.to_dict(),
            undoable=False,
            data=result,
        )


# ---- edit, run: the framework's own writes -----------------------------------------------


class EditState(Operation):
    """The state at REF changed (agentctl.edits): by the format's History itself
    (`native`), or by the framework in the user's interpreter (LangGraph's update_state,
    the agent found as `run` finds it: `agent`, `config`, `python`, `node`), then recorded
    as one op. `url`: the database, for the child; `for_write`: also find the agent and
    read what the record needs (not for a dry run)."""

    kind: ClassVar[str] = "edit"
    asks: ClassVar[bool] = True

    def __init__(
        self,
        ref: str,
        edits: list[Any],
        url: str = "",
        as_node: str | None = None,
        agent: str | None = None,
        config: str | None = None,
        python: str | None = None,
        node: str | None = None,
        settings: dict[str, Any] | None = None,
        for_write: bool = True,
    ) -> None:
        self.ref = ref
        self.edits = edits
        self.url = url
        self.as_node = as_node
        self.agent = agent
        self.config = config
        self.python = python
        self.node = node
        self.settings = settings or {}
        self.for_write = for_write

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.edits import graph_at_hand, plan_edit
        from agentctl.refs import resolve

        if self.as_node is not None and store.format.name != "langgraph":
            raise UsageError(
                f"--as-node is LangGraph's (update_state's as_node); this is a {store.format.name} database"
            )
        p = await plan_edit(
            store,
            history,
            await resolve(store, self.ref),
            self.edits,
            for_write=self.for_write,
            graph=graph_at_hand(self.agent, self.config),
        )
        if self.settings and p.native:
            raise UsageError(
                "--context and --configurable are given to your graph: name it with --agent "
                "(or --config, a langgraph.json here)"
            )
        facts: dict[str, Any] = {}
        if not p.native and self.for_write:  # the agent first: a wrong --agent is one line, before anything
            from agentctl.runners import find_agent, pick_interpreter

            facts["agent"] = who = find_agent(self.agent, self.config)
            facts["python"] = pick_interpreter(who, self.python, self.node)
        return Plan(self, p, p.confirm_text, facts=facts)

    def shape(self, plan: Plan, dry_run: bool, result: dict[str, Any] | None = None) -> dict[str, Any]:
        """edit --json, one object: the checkpoint edited (`ref`, `thread_id`, `step`), the
        changes, and (a write) the op, its summary and the checkpoints it made
        (`checkpoint_id`: the new one, None when the edit changed a row in place;
        through the graph: its `new_step` and LangGraph's `next` nodes after it)."""
        m = plan.data.meta
        out: dict[str, Any] = {
            "dry_run": dry_run,
            "kind": "edit",
            "ref": m.checkpoint_id,
            "thread_id": m.thread_id,
            "step": m.step,
            "changes": [c.to_dict() for c in plan.data.changes],
            "op_id": None,
            "summary": None,
            "checkpoint_id": None,
            "created": [],
            "deleted": [],
            "moved": [],
            "new_step": None,
            "next": None,
        }
        out.update(result or {})
        return out

    def plan_json(self, plan: Plan) -> dict[str, Any]:
        return self.shape(plan, True)

    async def apply(self, store: Any, history: Any, plan: Plan, blocking: Blocking = in_place) -> Done:
        from agentctl.edits import edit_natively, edit_through_agent, record_edit

        p, m = plan.data, plan.data.meta
        if p.native:
            result = await edit_natively(history, p, self.as_node)
            created = list(result.created or [])
            return Done(
                self.kind,
                result.summary,
                result.op_id,
                self.shape(
                    plan,
                    False,
                    {
                        "op_id": result.op_id,
                        "summary": result.summary,
                        "created": created,
                        "checkpoint_id": created[-1] if created else None,
                        "deleted": result.deleted,
                        "moved": result.moved,
                    },
                ),
                m.thread_id,
                created[-1] if created else m.checkpoint_id,
                data=result,
            )
        who = plan.facts["agent"]
        outcome = await blocking(
            edit_through_agent, p, self.url, who, plan.facts["python"], self.as_node, self.settings
        )
        op_id = await record_edit(history, p, who.label, self.as_node)
        cid = outcome.get("id")
        summary = f"edited {m.thread_id}: new checkpoint {cid} at step {outcome.get('step')}"
        return Done(
            self.kind,
            summary,
            op_id,
            self.shape(
                plan,
                False,
                {
                    "op_id": op_id,
                    "summary": summary,
                    "checkpoint_id": cid,
                    "created": [cid] if cid else [],
                    "new_step": outcome.get("step"),
                    "next": outcome.get("next"),
                },
            ),
            m.thread_id,
            str(cid) if cid else None,
        )


class RunAgent(Operation):
    """The user's agent run on from a checkpoint (agentctl.runs): the plan checks it can
    start and finds the agent and its interpreter; `apply` runs the child (`blocking`:
    how the face waits for it; `on_checkpoint(event)` for each new checkpoint, on the
    child's reading thread; `on_start(child)`) and records what it saved as one op."""

    kind: ClassVar[str] = "run"

    def __init__(
        self,
        thread: str,
        from_ref: str | None = None,
        input_text: str | None = None,
        resume_text: str | None = None,
        context_text: str | None = None,
        configurable: list[str] | None = None,
        url: str = "",
        agent: str | None = None,
        config: str | None = None,
        python: str | None = None,
        node: str | None = None,
    ) -> None:
        self.thread = thread
        self.from_ref = from_ref
        self.input_text = input_text
        self.resume_text = resume_text
        self.context_text = context_text
        self.configurable = configurable
        self.url = url
        self.agent = agent
        self.config = config
        self.python = python
        self.node = node

    async def plan(self, store: Any, history: Any) -> Plan:
        from agentctl.runners import find_agent, pick_interpreter
        from agentctl.runs import RunTally, plan_run

        p = await plan_run(
            store,
            history,
            self.thread,
            self.from_ref,
            self.input_text,
            self.resume_text,
            self.context_text,
            self.configurable,
        )
        who = find_agent(self.agent, self.config, fmt=p.fmt)
        python = pick_interpreter(who, self.python, self.node)
        start = f"from {p.from_id}" if p.from_id else f"on from the end of {self.thread}"
        return Plan(
            self,
            p,
            f"run {who.label} {start}",
            facts={"agent": who, "python": python, "tally": RunTally(p), "start": start},
        )

    async def apply(
        self,
        store: Any,
        history: Any,
        plan: Plan,
        blocking: Blocking = in_place,
        on_checkpoint: Callable[[dict[str, Any]], None] | None = None,
        on_start: Callable[[Any], None] | None = None,
    ) -> Done:
        """Done.json: the child's last event with `op_id` and `checkpoints` (how many it
        saved); Done.data: that event's kind ("done", "error", "interrupted")."""
        from agentctl.runners import RUNNERS, run_child
        from agentctl.runs import record_run, recorded_summary, short, start_request

        p, who, tally = plan.data, plan.facts["agent"], plan.facts["tally"]

        def take(event: dict[str, Any]) -> None:
            if tally.take(event) and on_checkpoint is not None:
                on_checkpoint(event)

        args: list[Any] = [p.fmt, plan.facts["python"], start_request(p, self.url, who), take]
        ended = await blocking(run_child, *args, *([on_start] if on_start is not None else []))
        outcome, result, summary = recorded_summary(p, who.label, ended)
        op_id = await record_run(history, p, who.label, summary, result)
        outcome["op_id"], outcome["checkpoints"] = op_id, tally.saved
        unit, kind, more = RUNNERS[p.fmt].unit, str(outcome.get("event")), ""
        if kind == "interrupted":  # (each face says who stopped it)
            said = f"the run saved {tally.saved} {unit}, which stay"
        elif kind == "error":  # (each face shows the error: error_line, the frames)
            said = f"the run saved {tally.saved} {unit} before the error"
        else:
            waiting, nxt = outcome.get("interrupts") or [], outcome.get("next") or []
            import json

            said = f"ran {p.thread}: {tally.saved} new {unit}"
            more = (
                (f"; output: {short(str(outcome['output']))}" if outcome.get("output") is not None else "")
                + (f"; waiting at {', '.join(map(str, nxt))}" if nxt else "")
                + (
                    f"; interrupt: {short(json.dumps(waiting[0], default=repr))} (answer with --resume JSON)"
                    if waiting
                    else ""
                )
            )
        return Done(
            self.kind,
            said,
            op_id,
            outcome,
            p.thread,
            tally.ids[-1] if tally.ids else None,
            data=kind,
            more=more,
        )


class Import(Operation):
    """Checkpoints from JSON Lines (`rows`: the parsed lines, read as the write goes) in
    one transaction; `on_conflict`: skip, replace or error."""

    kind: ClassVar[str] = "import"
    need: ClassVar[str | None] = "import"
    plan_first: ClassVar[bool] = False

    def __init__(self, rows: Any, on_conflict: str = "skip") -> None:
        self.rows = rows
        self.on_conflict = on_conflict

    async def apply(self, store: Any, history: Any, plan: Plan | None = None) -> Done:
        if self.on_conflict not in ("skip", "replace", "error"):
            raise UsageError(f"unknown --on-conflict {self.on_conflict!r}; use skip, replace or error")
        result = await history.import_checkpoints(self.rows, on_conflict=self.on_conflict)
        return Done(self.kind, result.summary, result.op_id, result.to_dict(), data=result)


#: the operations by kind (what the faces look a write up by)
OPERATIONS: dict[str, type[Operation]] = {
    op.kind: op
    for op in (Rewind, Branch, Merge, Prune, DeleteThread, Undo, Redo, Purge, EditState, RunAgent, Import)
}
