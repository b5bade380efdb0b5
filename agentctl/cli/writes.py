"""What the write commands share: the safety copy of a SQLite file before a destructive
write, VACUUM after one, and the line said when Ctrl-C interrupts a command (checked
against the database: whether the write committed). Infrastructure beside the commands, so that no command module
imports another (tests/structure/test_layers.py)."""

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentctl.cli.context import CliState, note_write, run
from agentctl.cli.output import confirm, info, progress

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.ops import Done, Operation, Plan

T = TypeVar("T")

LARGE_DB_BYTES = 32 * 1024 * 1024  # progress bars only for databases at least this big


def sqlite_backup(src: str, dest: str, *, force: bool = False) -> tuple[Path, int]:
    """agentctl.storage.backup.sqlite_backup, with a progress bar on a terminal for a
    large database: the file written and its size."""
    from agentctl.storage.backup import backup_target, keep_mode
    from agentctl.storage.backup import sqlite_backup as backup

    size = os.path.getsize(src) if os.path.isfile(src) else 0
    written = backup_target(src, dest)
    with progress(f"backup {os.path.basename(src)}", None, enabled=size >= LARGE_DB_BYTES) as advance:
        n = backup(src, str(written), force=force, on_step=lambda: advance(0))
    keep_mode(src, str(written))
    return written, n


def auto_backup(st: CliState, no_backup: bool) -> str | None:
    """Before a hard delete or purge on SQLite: copy the file aside (unless --no-backup)
    and say where on stderr."""
    from agentctl.storage.backup import safety_copy

    path = st.sqlite_path()
    if no_backup or path is None:
        return None
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    with progress(f"backup {os.path.basename(path)}", None, enabled=size >= LARGE_DB_BYTES) as advance:
        dest = safety_copy(path, on_step=lambda: advance(0))
    info(f"agentctl: backup of {path} written to {dest} (skip with --no-backup)")
    return dest


def perform(
    st: CliState,
    op: "Operation",
    *,
    dry_run: bool = False,
    yes: bool = False,
    create: bool = False,
    no_backup: bool = False,
    vacuum: bool = False,
    json_out: bool = False,
    present: Callable[["Plan"], None] | None = None,
    refused: Callable[["Plan"], None] | None = None,
    rolled_back: bool = False,
    **apply: Any,
) -> tuple["Plan | None", "Done | None", dict[str, Any] | None]:
    """A write command's one pass over the database (one open, one event loop): the plan
    (agentctl.ops; one the operation refuses: `refused(plan)`, then its error), `present(plan)`
    (the command shows it; --json --dry-run: its JSON instead), then, unless --dry-run or the plan finds nothing to do, the question
    (`op.asks`: --yes, or a person on a terminal; a plan with nothing to do: --json prints
    `op.nothing_json`, the write's keys and no op), the safety copy before a destructive
    write (unless --no-backup), the write (`apply`: the operation's extra arguments) and
    VACUUM (--vacuum, reported on stderr); `create`: the database may be made (import
    --create); `rolled_back`: a failed write says that
    nothing was changed (one transaction). An operation that is not `plan_first` on the
    command line (undo, redo: the History picks the op) is written without a plan.
    (plan, done, vacuum's report)."""

    from agentctl.errors import AgentctlError

    async def go() -> tuple["Plan | None", "Done | None", dict[str, Any] | None]:
        async with st.open(write=not dry_run, create=create, need=op.need, note=False) as store:
            history = store.history()
            if vacuum and not dry_run:
                require_compact(store)
            if not op.plan_first and not dry_run:
                await note_write(st, store)
                return None, await op.apply(store, history, None, **apply), None  # type: ignore[arg-type]
            plan = await op.plan(store, history)
            refusal = op.refusal(plan)
            if refusal is not None:  # (a merge's conflicts: `refused(plan)` shows them)
                if refused is not None:
                    refused(plan)
                raise refusal
            if json_out and dry_run:
                from agentctl.cli.output import emit_json

                emit_json(plan.to_dict())
            elif present is not None:
                present(plan)
            if dry_run or plan.nothing:
                if json_out and not dry_run:  # (the write's keys, no op: one shape per command)
                    from agentctl.cli.output import emit_json

                    emit_json(op.nothing_json(plan))
                return plan, None, None
            if op.asks:
                interruptible(confirm, plan.confirm, yes=yes)
            if plan.destructive:
                interruptible(auto_backup, st, no_backup)
            await note_write(st, store)  # from here Ctrl-C says what the op log holds
            try:
                done = await op.apply(store, history, plan, **apply)
            except AgentctlError as exc:
                if rolled_back:  # (Ctrl-C: AgentctlGroup.invoke says what the database holds)
                    say_rolled_back(exc, op.kind)
                raise
            return plan, done, (await compact(store) if vacuum else None)

    return run(go())


def finish(result: "Done | None", json_out: bool) -> None:
    """A write's result: its JSON, or its line with how to undo it."""
    from agentctl.cli.output import done, emit_json

    if result is None:
        return
    if json_out:
        emit_json(result.json)
        return
    done(result.summary, result.op_id, undoable=result.undoable)


def interruptible(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A blocking step of a command's coroutine (a question, a backup) that Ctrl-C
    interrupts at once, as outside the event loop (asyncio's handler only cancels the
    task, which the step would finish first)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_line(st: CliState | None, what: str = "write") -> str:
    """What is true after Ctrl-C: nothing written before the write began; after it, what
    the op log says (the op that committed, or nothing). `what`: the command's name."""
    if st is None or not st.writing:
        return "interrupted; nothing was changed"
    before = st.op_before
    unknown = f"interrupted during the {what}; see `agentctl oplog` for whether it was committed"
    if before is None:
        return unknown

    async def newest() -> Any:
        async with st.open() as store:
            return await store.history().oplog(1)

    try:
        ops = run(newest())
    except BaseException:  # noqa: BLE001 - a second Ctrl-C, or the database unusable now
        return unknown
    if not ops or ops[0].op_id <= before:
        return f"interrupted; the {what} was rolled back, nothing was changed"
    op = ops[0]
    if op.kind in ("undo", "purge"):
        return f"interrupted, but op {op.op_id} was written ({op.summary}); it was committed"
    return f"interrupted, but op {op.op_id} was written ({op.summary}); `agentctl undo {op.op_id}` reverts it"


def require_compact(store: Any) -> None:
    """Refuse --vacuum (exit 2, before anything is written) where the format has no VACUUM."""
    from agentctl.storage.contract import Store, Unsupported

    if type(store).compact is Store.compact:
        raise Unsupported(store.format.name, "--vacuum")


async def compact(store: Any) -> dict[str, Any]:
    """The store's `compact` after a delete, its sizes said on stderr."""
    info("running VACUUM …")
    report: dict[str, Any] = await store.compact()
    where = "file" if report.get("vacuumed") == "file" else "tables"
    info(f"vacuum: {where} size {_size(report['before'])} before, {_size(report['after'])} after")
    return report


def _size(n: Any) -> str:
    if n is None:
        return "unknown"
    n = int(n)
    value, unit = float(n), "B"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            break
        value /= 1024
    return f"{n:,} B" if unit == "B" else f"{value:.1f} {unit} ({n:,} B)"


def say_rolled_back(exc: Any, what: str) -> None:
    """A failed write that was one transaction says, once, that nothing was changed; an
    error that says so already (its type's or its maker's word, `nothing_changed`; not
    guessed from its text) is left as it is."""
    if not exc.nothing_changed:
        exc.message = f"{exc.message} (the {what} was rolled back, nothing was changed)"
        exc.nothing_changed = True
