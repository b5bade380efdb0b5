"""The operation log: `oplog`, `undo`, `redo`, `purge`."""

from typing import Annotated, Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import AcceptYesOpt, DryRunOpt, JsonOpt, NoBackupOpt, YesOpt
from agentctl.cli.output import emit_json, show, show_plan, stdout_is_tty, tsv
from agentctl.cli.writes import finish, perform


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

    async def go() -> Any:
        async with state(ctx).history(write=False, need="undo") as (_, history):
            return await history.oplog(limit)

    ops = run(go())
    if json_out:
        emit_json([op.to_dict() for op in ops])
        return
    if not stdout_is_tty():
        tsv(
            ["OP", "WHEN", "KIND", "SUMMARY", "THREADS", "STATUS"],
            [
                [
                    op.op_id,
                    op.created_at,
                    op.kind,
                    op.summary,
                    ",".join(op.threads or []),
                    "undone"
                    if op.undone
                    else (
                        f"{op.kind} of {op.undo_of}"
                        if op.undo_of
                        else f"partly undone ({len(op.details['restored'])} thread(s))"
                        if op.details.get("restored")
                        else "done"
                    ),
                ]
                for op in ops
            ],
        )
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
    op: Annotated[
        int | None,
        typer.Argument(metavar="[OP]", help="The operation id (default: the last one not undone)."),
    ] = None,
    thread: Annotated[
        list[str] | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="THREAD",
            help="Of a prune of several threads: restore this thread alone (repeatable); the threads "
            "written to since stay pruned, and the op stays undoable for them.",
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Undo an operation (default: the latest not yet undone): a rewind, branch, merge,
    prune, thread delete or import. The undo is itself an operation. Undo is refused
    when what it would touch changed since (nothing is changed then); of a prune, the
    threads that did not change can be restored with --thread.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db branch coder-fix-flaky-test@6 try-mocks && agentctl --db my.db undo
    Example: agentctl --db my.db prune --keep-last 3 --yes && agentctl --db my.db undo 3 --thread support-1042   (of that prune: this thread alone)
    Example: agentctl --db my.db undo --dry-run   (what it would do, the checkpoints it names; nothing written)
    """

    from agentctl.ops import Undo

    _, result, _ = perform(
        state(ctx),
        Undo(op, thread, dry_run),
        dry_run=dry_run,
        json_out=json_out,
        present=lambda plan: show_plan(plan.data.summary, to_stdout=True),
    )
    finish(result, json_out)


def redo(
    ctx: typer.Context,
    op: Annotated[
        int | None, typer.Argument(metavar="[OP]", help="The operation id (default: the newest undone one).")
    ] = None,
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

    from agentctl.ops import Redo

    _, result, _ = perform(
        state(ctx),
        Redo(op),
        dry_run=dry_run,
        json_out=json_out,
        present=lambda plan: show_plan(plan.data.summary, to_stdout=True),
    )
    finish(result, json_out)


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

    from agentctl.ops import Purge

    op = Purge()

    def present(plan: Any) -> None:
        show_plan(Text(op.describe(plan)), to_stdout=dry_run)

    finish(
        perform(
            state(ctx), op, dry_run=dry_run, yes=yes, no_backup=no_backup, json_out=json_out, present=present
        )[1],
        json_out,
    )
