"""`agentctl threads list|show|delete`"""

from typing import Annotated, Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import (
    DryRunOpt,
    JsonOpt,
    LimitOpt,
    NoBackupOpt,
    OffsetOpt,
    ThreadArg,
    VacuumOpt,
    YesOpt,
)
from agentctl.cli.output import emit_json, info, show, show_plan, stdout_is_tty, table

app = typer.Typer(
    help="List, inspect and delete threads.\n\nExample: agentctl --db sample_db/checkpoints.db threads list --limit 5",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SortOpt = Annotated[
    str,
    typer.Option("--sort", help="updated | thread | checkpoints | step | created"),
]


@app.command("list")
def list_threads(
    ctx: typer.Context,
    json_out: JsonOpt = False,
    limit: LimitOpt = 50,
    offset: OffsetOpt = 0,
    sort: SortOpt = "updated",
    asc: Annotated[bool, typer.Option("--asc", help="Ascending order.")] = False,
    prefix: Annotated[
        str | None, typer.Option("--prefix", help="Only threads whose id starts with this.")
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="Session stores: only this user's sessions (id or name).")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", help="Session stores: only sessions in these statuses (comma-separated)."),
    ] = None,
) -> None:
    """List threads, most recently updated first: checkpoints, head step, last update,
    the thread a branch came from, the head's summary.

    Example: agentctl --db sample_db/checkpoints.db threads list --limit 5
    """

    from agentctl.storage import Unsupported

    filters: dict[str, str | list[str]] = {
        k: v for k, v in (("user", user), ("status", status)) if v is not None
    }
    if status is not None:
        filters["status"] = [s.strip() for s in status.split(",") if s.strip()]

    async def go() -> Any:
        async with state(ctx).open() as store:
            for name in filters:
                if name not in store.thread_filters:
                    raise Unsupported(store.format.name, f"threads list --{name}")
            await _check_filter_values(store, filters)
            rows = await store.thread_summaries(limit, offset, sort, not asc, prefix, **filters)
            # a full page: there may be more, said on stderr as `log` says it
            total = await store.count_threads(prefix, **filters) if len(rows) == limit else None
            return rows, total

    rows, total = run(go())
    if total is not None and offset + len(rows) < total:  # also piped and --json: stderr only
        info(f"(showing {len(rows):,} of {total:,}; use --limit N or --offset)")
    if json_out:
        emit_json([r.to_dict() for r in rows])
        return
    if not rows and stdout_is_tty():
        info("no threads" + (" match" if filters or prefix or offset else ""))
        return

    def rich_table() -> Any:
        from agentctl import render  # Rich only on a terminal: piped output is TSV
        from agentctl.cli.output import console

        return render.threads_table(rows, width=console().width)

    extra = [name for name, _ in rows[0].extra_columns()] if rows else []
    table(
        ["THREAD", "CKPTS", "HEAD", *extra, "UPDATED", "BRANCH-OF", "SUMMARY"],
        [
            [
                r.thread_id,
                r.checkpoints,
                r.head_step,
                *(v for _, v in r.extra_columns()),
                r.updated_at,
                r.branch_of or "",
                r.head_summary,
            ]
            for r in rows
        ],  # piped: whole values
        renderable=rich_table,
    )


async def _check_filter_values(store: Any, filters: dict[str, str | list[str]]) -> None:
    """A --user or --status value the database never has is a usage error (exit 2)
    naming the values it has, not an empty list."""
    from agentctl.errors import UsageError

    for name, value in filters.items():
        known = await store.filter_values(name)
        wanted = [value] if isinstance(value, str) else value
        bad = [v for v in wanted if v not in known]
        if bad:
            has = ", ".join(known[:20]) + (", …" if len(known) > 20 else "") if known else "none"
            raise UsageError(f"--{name} {bad[0]!r}: no session has it (this database has: {has})")


@app.command("show")
def show_thread(
    ctx: typer.Context, thread: ThreadArg, json_out: JsonOpt = False, limit: LimitOpt = 10
) -> None:
    """One thread: its summary, where it branched from, its branches, and its latest
    checkpoints.

    Example: agentctl --db sample_db/checkpoints.db threads show coder-fix-flaky-test
    """
    from agentctl.refs import resolve_thread

    async def go() -> Any:
        async with state(ctx).open() as store:
            tid = await resolve_thread(store, thread)
            summary = await store.thread_summary(tid)
            branches = await store.branches_of([tid])
            latest = await store.read_thread(tid, limit, 0, descending=True)
            return summary, branches, latest

    summary, branches, latest = run(go())
    data = summary.to_dict()
    data["branches"] = [
        {
            "thread_id": b.thread_id,
            "branch_point": b.parent_checkpoint_id,
            "first_checkpoint_id": b.checkpoint_id,
        }
        for b in branches
    ]
    if json_out:
        data["latest"] = [m.to_dict() for m in latest]
        emit_json(data)
        return
    from rich.table import Table

    from agentctl import render

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("thread", render.safe(summary.thread_id, "bold", one_line=True))
    grid.add_row("checkpoints", str(summary.checkpoints))
    grid.add_row(
        "head",
        render.safe(
            f"{summary.head_checkpoint_id} (step {summary.head_step})", render.ID_STYLE, one_line=True
        ),
    )
    for name, value in summary.extra_columns():
        grid.add_row(name.lower(), render.safe(str(value), one_line=True))
    grid.add_row("first", render.safe(summary.first_created_at, one_line=True))
    grid.add_row("updated", render.safe(summary.updated_at, one_line=True))
    if summary.branch_of:
        grid.add_row(
            "branch of", render.safe(f"{summary.branch_of} at {summary.branch_point}", one_line=True)
        )
    for b in data["branches"]:
        grid.add_row("branch", render.safe(f"{b['thread_id']} from {b['branch_point']}", one_line=True))
    grid.add_row("summary", render.safe(summary.head_summary))
    heads = {summary.head_checkpoint_id: ["head"]}
    show(grid, render.safe(""), *render.log_lines(latest, heads=heads))
    if summary.checkpoints > len(latest) and stdout_is_tty():
        info(f"(latest {len(latest)} of {summary.checkpoints}; see `agentctl log {summary.thread_id}`)")


@app.command("delete")
def delete_thread(
    ctx: typer.Context,
    thread: ThreadArg,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
    no_backup: NoBackupOpt = False,
    vacuum: VacuumOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Delete a thread and all its checkpoints. Undoable (`agentctl undo`) until `purge`.
    --vacuum runs VACUUM afterwards and reports the size before and after (the rows
    removed stay in the trash until `purge`).

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db threads delete support-1042 --yes
    """
    from agentctl.cli.writes import finish, perform
    from agentctl.ops import DeleteThread

    def present(plan: Any) -> None:
        from agentctl import render

        p, n = plan.data, plan.data.checkpoints
        show_plan(
            render.safe(
                f"delete thread {p.thread_id}: {n} checkpoint{'s' if n != 1 else ''}"
                + (f", with {', '.join(p.included)}" if p.included else "")
                + (f" (it has {len(p.branches_kept)} branch(es), which are kept)" if p.branches_kept else "")
            ),
            to_stdout=dry_run,
        )

    _, result, report = perform(
        state(ctx),
        DeleteThread(thread),
        dry_run=dry_run,
        yes=yes,
        no_backup=no_backup,
        vacuum=vacuum,
        json_out=json_out,
        present=present,
    )
    if result is not None and vacuum:
        result.json["vacuum"] = report
    finish(result, json_out)
