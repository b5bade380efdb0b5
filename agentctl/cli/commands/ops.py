"""The operation log: `oplog`, `undo`, `redo`, `purge`."""


from typing import Annotated

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import AcceptYesOpt, DryRunOpt, JsonOpt, NoBackupOpt, YesOpt
from agentctl.cli.output import confirm, done, emit_json, say, show, show_plan, stdout_is_tty, tsv


def register(app: typer.Typer) -> None:
    app.command("oplog")(oplog)
    app.command("undo")(undo)
    app.command("redo")(redo)
    app.command("purge")(purge)


def oplog(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many operations at most.")] = 50,
    json_out: JsonOpt = False,
) -> None:
    """The operations agentctl wrote (rewind, branch, merge, prune, delete, import,
    undo), newest first, and whether they were undone.

    Example: agentctl --db sample_db/checkpoints.db oplog
    """

    async def go():
        async with state(ctx).engine(write=False, need="undo") as (_, engine):
            return await engine.oplog(limit)

    ops = run(go())
    if json_out:
        emit_json([op.to_dict() for op in ops])
        return
    if not stdout_is_tty():
        tsv(["OP", "WHEN", "KIND", "SUMMARY", "THREADS", "STATUS"],
            [[op.op_id, op.created_at, op.kind, op.summary, ",".join(op.threads or []),
              "undone" if op.undone else (f"{op.kind} of {op.undo_of}" if op.undo_of else
                                          f"partly undone ({len(op.details['restored'])} thread(s))"
                                          if op.details.get("restored") else "done")] for op in ops])
        return
    if not ops:
        from agentctl.cli.output import info

        info("no operations")
        return
    from agentctl import render

    from agentctl.cli.output import console

    show(render.op_table(ops, width=console().width))


def undo(
    ctx: typer.Context,
    op: Annotated[int | None, typer.Argument(metavar="[OP]", help="The operation id (default: the last one not undone).")] = None,
    thread: Annotated[list[str] | None, typer.Option(
        "--thread", "-t", metavar="THREAD",
        help="Of a prune of several threads: restore this thread alone (repeatable); the threads "
             "written to since stay pruned, and the op stays undoable for them.")] = None,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Undo an operation (default: the latest not yet undone): a rewind, branch, merge,
    prune, thread delete or import. The undo is itself an operation. Undo is refused
    when what it would touch changed since (nothing is changed then); of a prune, the
    threads that did not change can be restored with --thread.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db branch coder-fix-flaky-test@6 try-mocks && agentctl --db my.db undo
    Example: agentctl --db my.db prune --keep-last 3 --yes && agentctl --db my.db undo 3 --thread support-1042   (of that prune: this thread alone)
    """

    async def go():
        async with state(ctx).engine(need="undo") as (_, engine):
            return await engine.undo(op, thread) if thread else await engine.undo(op)

    result = run(go())
    if json_out:
        emit_json(result.to_dict())
        return
    done(result.summary, result.op_id, undoable=False)


def redo(
    ctx: typer.Context,
    op: Annotated[int | None, typer.Argument(metavar="[OP]", help="The operation id (default: the newest undone one).")] = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Re-apply an undone operation (default: the newest undone one), when nothing it
    touched changed since its undo. Refused otherwise (nothing is changed then). The
    redo is itself an operation, undoable. Offered by the formats on the journal.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db branch coder-fix-flaky-test@6 try-mocks && agentctl --db my.db undo && agentctl --db my.db redo 1 --dry-run
    Example: agentctl --db my.db redo
    """

    async def go():
        async with state(ctx).engine(write=not dry_run, need="redo") as (_, engine):
            return await engine.redo(op, dry_run=dry_run)

    result = run(go())
    if json_out:
        emit_json(result.to_dict())
        return
    if dry_run:
        show_plan(result.summary, to_stdout=True)
        return
    done(result.summary, result.op_id)


def purge(
    ctx: typer.Context,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
    no_backup: NoBackupOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Free for good what undo could still bring back (rows set aside by rewind --hard,
    prune, delete); then VACUUM on SQLite. Not undoable.

    Example: agentctl --db sample_db/checkpoints.db purge --dry-run
    """
    from rich.text import Text

    from agentctl.cli.writes import auto_backup

    st = state(ctx)

    async def preview():  # writable before a purge: Postgres rehearses an old op log in it
        async with st.engine(write=not dry_run, need="undo") as (_, engine):
            return await engine.purge(dry_run=True)

    before = run(preview())
    if json_out and dry_run:
        emit_json(before.to_dict())
        return
    rows, ops = before.rows, before.ops
    if not ops:
        show_plan(Text("nothing to purge: no rows are kept for undo or redo"), to_stdout=dry_run)
        if json_out:  # (a purge with nothing to do: the result, nothing freed)
            import dataclasses

            emit_json(dataclasses.replace(before, dry_run=dry_run).to_dict())
        return
    kept = before.kept_for()  # an undone operation's rows are kept for its redo
    text = Text(f"purge: free {rows} row(s) kept for {kept} by {len(ops)} operation(s)"
                + f" ({', '.join(map(str, ops[:20]))}{', …' if len(ops) > 20 else ''})"
                + ("; they can no longer be undone" if kept == "undo" else
                   "; they can no longer be redone" if kept == "redo" else
                   f"; they can no longer be undone, nor redone ({', '.join(map(str, before.undone[:20]))})"))
    show_plan(text, to_stdout=dry_run)
    if dry_run:
        return
    confirm(f"purge what {kept} could bring back (this cannot be undone)", yes=yes)
    auto_backup(st, no_backup)

    async def go():
        async with st.engine(need="undo") as (_, engine):
            return await engine.purge()

    result = run(go())
    if json_out:
        emit_json(result.to_dict())
        return
    say(f"purged {result.rows} row(s) of {len(result.ops)} operation(s)"
        + (" and compacted the file" if result.vacuumed else ""))
