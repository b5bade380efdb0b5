"""Changing history through the engine: `rewind`, `branch`, `merge`, `prune`.

Each write is one engine operation (one transaction, recorded in the op log, undoable).
Destructive ones show their plan first, ask on a terminal, need --yes otherwise, and
write nothing with --dry-run.
"""


import re
from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_thread
from agentctl.cli.context import run, state
from agentctl.cli.options import AcceptYesOpt, DryRunOpt, JsonOpt, NoBackupOpt, RefArg, VacuumOpt, YesOpt
from agentctl.cli.output import confirm, done, emit_json, info, progress, say, show, show_plan
from agentctl.cli.writes import auto_backup, require_compact, run_vacuum


def register(app: typer.Typer) -> None:
    app.command("rewind")(rewind)
    app.command("branch")(branch)
    app.command("merge")(merge)
    app.command("prune")(prune)


def rewind(
    ctx: typer.Context,
    ref: RefArg,
    hard: Annotated[bool, typer.Option("--hard", help="Delete the later checkpoints instead of moving them to an archive thread.")] = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    no_backup: NoBackupOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Make a checkpoint the head of its thread again. The checkpoints after it move to
    an archive thread (shown as abandoned in `tree`), or with --hard are deleted.
    Undoable with `agentctl undo` (until `purge`).

    Example: agentctl --db sample_db/checkpoints.db rewind coder-fix-flaky-test@6 --dry-run
    """
    from agentctl import render
    from agentctl.refs import resolve

    st = state(ctx)

    async def plan():
        async with st.engine(write=False, need="rewind") as (backend, engine):
            meta = await resolve(backend, ref)
            return await engine.plan_rewind(meta.checkpoint_id, hard=hard)

    p = run(plan())
    if json_out and dry_run:
        emit_json(p.to_dict())
        return
    show_plan(render.plan_text(p), to_stdout=dry_run)
    if dry_run or not p.moved:
        return
    in_place = p.archive_thread == p.thread_id  # LangGraph: a fork copy becomes the head
    what = (f"delete {len(p.moved)} checkpoint(s) of {p.thread_id}" if hard
            else f"append a rewind event to {p.thread_id} marking {len(p.moved)} checkpoint(s) rewound"
            if p.marked
            else f"write a fork of {p.target.checkpoint_id} as the head of {p.thread_id}" if in_place
            else f"move {len(p.moved)} checkpoint(s) of {p.thread_id} to {p.archive_thread}")
    confirm(what, yes=yes)
    if hard:
        auto_backup(st, no_backup)

    async def go():
        async with st.engine(need="rewind") as (_, engine):
            if hard:
                return await engine.rewind(p.target.checkpoint_id, hard=True)
            # the archive thread the plan announced, not a new random name
            return await engine.rewind(p.target.checkpoint_id, archive_thread=p.archive_thread)

    result = run(go())
    op_id = result.op_id
    if json_out:
        emit_json(result.to_dict())
        return
    where = "deleted" if hard else f"moved to {result.archive_thread}"
    head = p.target.checkpoint_id
    if result.marked:  # ADK: a rewind event is the new head; the rewound events stay
        new = result.checkpoint.metadata
        say(f"{result.thread_id} is rewound to {head} (step {p.target.step}): a rewind event {new.checkpoint_id} "
            f"(step {new.step}) marks {result.rewind_depth} later checkpoint(s) rewound; they stay in the "
            f"thread, out of the conversation (op {op_id}; undo: agentctl undo {op_id})")
        return
    if result.checkpoint.metadata.checkpoint_id != head:  # a fork copy is the new head
        head = f"{result.checkpoint.metadata.checkpoint_id}, a fork of {p.target.checkpoint_id}"
        where = "deleted" if hard else "kept as a branch"
    say(f"{result.thread_id} is now at {head} (step {p.target.step}); "
        f"{result.rewind_depth} checkpoint(s) {where} (op {op_id}; undo: agentctl undo {op_id})")


def branch(
    ctx: typer.Context,
    ref: RefArg,
    name: Annotated[str, typer.Argument(metavar="NAME", help="Branch name (no spaces, '@', '~', '/', '\\' or '..').")],
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Start a new thread from a checkpoint (the writer's naming:
    THREAD-branch-NAME-XXXX). Prints the new thread id.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db branch coder-fix-flaky-test@6 try-mocks
    """
    from agentctl.refs import check_branch_name, resolve

    check_branch_name(name)
    st = state(ctx)

    async def go():
        async with st.engine(need="branch") as (backend, engine):
            meta = await resolve(backend, ref)
            thread_id = await engine.branch(meta.checkpoint_id, name)
            return meta, thread_id, engine.last_op_id

    meta, thread_id, op_id = run(go())
    if json_out:
        emit_json({"thread_id": thread_id, "from_checkpoint_id": meta.checkpoint_id, "op_id": op_id})
        return
    say(thread_id)
    info(f"branched {thread_id} from {meta.checkpoint_id} (op {op_id}; undo: agentctl undo {op_id})")


def merge(
    ctx: typer.Context,
    branch_thread: Annotated[str, typer.Argument(
        metavar="BRANCH", help="The branch thread to merge.", autocompletion=complete_thread)],
    into: Annotated[str | None, typer.Option(
        "--into", help="Thread to merge into (default: the thread the branch came from).",
        autocompletion=complete_thread)] = None,
    strategy: Annotated[str, typer.Option(
        "--strategy", "-s", help="three-way (conflicts stop the merge) | ours | theirs")] = "three-way",
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Merge a branch's head into a thread: a three-way merge of state and tool results
    from their common ancestor, the branch's new messages appended. Writes one new
    checkpoint. Conflicts print a table (path, base, ours, theirs), exit 4, write nothing.

    Example: agentctl --db sample_db/checkpoints.db merge coder-fix-flaky-test-branch-retry-backoff-70e7 --dry-run
    """
    from agentctl import render
    from agentctl.errors import MergeConflictError, UsageError
    from agentctl.refs import resolve_thread

    if strategy not in ("three-way", "ours", "theirs"):
        raise UsageError(f"unknown strategy {strategy!r}; use three-way, ours or theirs")
    st = state(ctx)

    async def target(backend: Any) -> tuple[str, str]:
        src = await resolve_thread(backend, branch_thread)
        if into is not None:
            dst = await resolve_thread(backend, into)
        else:
            summary = await backend.thread_summary(src)
            if summary is None or not summary.branch_of:
                raise UsageError(f"{src} is not a branch of another thread; say where with --into THREAD")
            dst = summary.branch_of
        if dst == src:
            raise UsageError("cannot merge a thread into itself")
        return src, dst

    async def plan():
        async with st.engine(write=False, need="merge") as (backend, engine):
            src, dst = await target(backend)
            return src, dst, await engine.plan_merge(src, dst, strategy=strategy)

    src, dst, p = run(plan())

    def conflicts_out() -> None:
        if json_out:
            emit_json({"branch": src, "into": dst, "strategy": strategy,
                       "conflicts": [c.to_dict() for c in p.conflicts]})
        else:
            _conflicts_plain(p.conflicts)

    if p.conflicts:
        conflicts_out()
        raise MergeConflictError(p.conflicts, f"merge of {src} into {dst} has {len(p.conflicts)} "
                                              "conflict(s); nothing was written (try --strategy ours|theirs)")
    if dry_run or p.up_to_date:
        if json_out:
            emit_json(p.to_dict())
        elif p.up_to_date:
            say(f"{dst} already contains {src}; nothing to merge")
        else:
            show(render.plan_text(p))
        return

    async def go():
        async with st.engine(need="merge") as (_, engine):
            # the checkpoint id the plan announced (unless the write makes it: LangGraph's
            # carries the time of the write)
            cid = await engine.merge_branch(src, dst, strategy=strategy,
                                            checkpoint_id=None if p.id_at_write else p.merged.metadata.checkpoint_id)
            return cid, engine.last_op_id

    from agentctl.errors import NothingToMerge

    try:
        cid, op_id = run(go())
    except MergeConflictError as exc:  # the threads moved on since the plan
        p.conflicts = exc.conflicts
        conflicts_out()
        raise
    except NothingToMerge:  # another writer brought the branch's head in since the plan
        p.up_to_date = True
        if json_out:
            emit_json(p.to_dict())
        else:
            say(f"{dst} already contains {src}; nothing to merge")
        return
    if json_out:
        emit_json({"branch": src, "into": dst, "strategy": strategy, "checkpoint_id": cid, "op_id": op_id})
        return
    say(cid)
    info(f"merged {src} into {dst} as {cid} (op {op_id}; undo: agentctl undo {op_id})")


def _conflicts_plain(conflicts: list[Any]) -> None:
    from agentctl.cli.output import compact_json, stdout_is_tty, tsv

    if stdout_is_tty():
        from agentctl import render

        from agentctl.cli.output import console

        show(render.conflicts_table(conflicts, width=console().width))
        return
    tsv(["PATH", "BASE", "OURS", "THEIRS"],
        [[c.path, compact_json(c.base), compact_json(c.ours), compact_json(c.theirs)] for c in conflicts])


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """'7d', '12h', '1d12h', '90m', '30s', '2w' -> seconds."""
    from agentctl.errors import UsageError

    s = text.strip().lower()
    parts = _DURATION.findall(s)
    if not s or not parts or "".join(n + u for n, u in parts) != s:
        raise UsageError(f"bad duration {text!r}; use e.g. 7d, 12h, 90m, 1d12h")
    return sum(float(n) * _UNIT[u] for n, u in parts)


def prune(
    ctx: typer.Context,
    thread: Annotated[str | None, typer.Argument(
        metavar="[THREAD]", help="The thread to prune (none, or --all: every thread the policy selects).",
        autocompletion=complete_thread)] = None,
    all_threads: Annotated[bool, typer.Option("--all", help="Prune every thread.")] = False,
    keep_last: Annotated[int | None, typer.Option("--keep-last", min=1, help="Keep the newest N checkpoints.")] = None,
    older_than: Annotated[str | None, typer.Option("--older-than", help="Delete checkpoints older than this (7d, 12h, ...).")] = None,
    milestones: Annotated[int | None, typer.Option("--milestones", min=2, help="Keep N evenly spaced checkpoints (first and last included).")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Session stores: only sessions in these statuses (e.g. completed,cancelled).")] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    no_backup: NoBackupOpt = False,
    vacuum: VacuumOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete old checkpoints by a policy; a thread's head and its fork points (the parent
    of a branch, or of several checkpoints) are always kept, and a kept checkpoint whose
    parent goes gets its nearest kept ancestor as parent, or none (as the plan says). Without THREAD, every
    thread the policy selects (as --all). In a session
    store, whole sessions go (with their messages, tool logs and tasks): --older-than
    (not updated since), --status, --keep-last N per user, combinable. One operation,
    undoable with `agentctl undo` until `purge`. --vacuum runs VACUUM afterwards and
    reports the size before and after (the rows removed stay in the trash until `purge`).

    Example: agentctl --db sample_db/checkpoints.db prune loop-research-7 --keep-last 20 --dry-run
    """
    from agentctl import render
    from agentctl.errors import UsageError
    from agentctl.refs import resolve_thread
    from agentctl.storage.contract import PruneSpec

    statuses = [s.strip() for s in status.split(",") if s.strip()] if status is not None else None
    policy: dict[str, Any] = {n: v for n, v in (("keep_last", keep_last), ("older_than", older_than),
                                                ("milestones", milestones), ("statuses", statuses))
                              if v is not None}
    if not policy:
        raise UsageError("give a policy: --keep-last N, --older-than AGE, --milestones N "
                         "(or, for session stores, --status S)")
    if "older_than" in policy:
        policy["older_than"] = parse_duration(str(older_than))
    if thread is not None and all_threads:
        raise UsageError("give a THREAD or --all (not both)")
    # No THREAD: every thread the policy selects (as --all), with the same plan and prompt.
    all_threads = thread is None
    st = state(ctx)

    async def plan():
        async with st.engine(write=False, need="prune") as (backend, engine):
            if vacuum and not dry_run:
                require_compact(backend)
            tids = None if all_threads else [await resolve_thread(backend, thread)]
            # The plan printed lists the first rows only; --json --dry-run prints all.
            preview = None if json_out and dry_run else render.PRUNE_LISTED
            spec = PruneSpec(threads=tids, **policy)
            return spec, await engine.plan_prune_spec(spec, preview=preview)

    spec, plans = run(plan())
    todo = [p for p in plans if p.delete_count]
    total = sum(p.delete_count for p in todo)
    if json_out and dry_run:
        emit_json([p.to_dict() for p in plans])
        return
    if not plans:
        if json_out:
            emit_json([])
        else:
            say("nothing to prune: no thread matches")
        return
    from rich.text import Text

    shown = todo[:20] if len(todo) > 1 else plans
    parts: list[Any] = [render.plan_text(p) for p in shown]
    if len(todo) > 20:
        parts.append(Text(f"… and {len(todo) - 20} more threads"))
    if len(plans) > 1:
        parts.append(Text(f"in all: delete {total} checkpoint(s) in {len(todo)} of {len(plans)} threads", style="bold"))
    show_plan(parts[0] if len(parts) == 1 else _group(parts), to_stdout=dry_run)
    if dry_run or not total:
        return
    confirm(f"delete {total} checkpoint(s) in {len(todo)} thread(s)", yes=yes)

    auto_backup(st, no_backup)

    async def go():
        # One operation in one transaction (all threads or none), undone by one undo.
        async with st.engine(need="prune") as (_, engine):
            with progress("prune", len(plans), enabled=len(plans) > 1) as advance:
                return await engine.prune_spec(spec, progress=advance, plans=plans)

    results = _all_or_nothing(lambda: run(go()), "prune")
    report = run_vacuum(st) if vacuum else None
    if json_out:
        listed = [r.to_dict() for r in results]
        emit_json({"results": listed, "vacuum": report} if vacuum else listed)
        return
    for r in results:
        done(r.summary, r.op_id)


def _all_or_nothing(write: Any, what: str) -> Any:
    """Run a write that is one transaction; when it fails, say on stderr that nothing
    was changed. (Ctrl-C: AgentctlGroup.invoke says what the database holds.)"""
    from agentctl.errors import AgentctlError

    try:
        return write()
    except AgentctlError as exc:
        if not exc.nothing_changed:
            exc.message = f"{exc.message} (the {what} was rolled back, nothing was changed)"
            exc.nothing_changed = True
        raise


def _group(parts: list[Any]) -> Any:
    from rich.console import Group

    return Group(*parts)
