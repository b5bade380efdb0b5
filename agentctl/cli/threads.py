"""`agentctl threads ...`"""

from __future__ import annotations

from typing import Annotated

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt, LimitOpt, OffsetOpt
from agentctl.cli.output import emit_json, table
from agentctl.text import shorten

app = typer.Typer(help="List and inspect threads.", no_args_is_help=True)

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
    prefix: Annotated[str | None, typer.Option("--prefix", help="Only threads whose id starts with this.")] = None,
) -> None:
    """List threads, most recently updated first.

    Example: agentctl --db sample_db/checkpoints.db threads list --limit 5
    """

    async def go():
        async with state(ctx).open() as backend:
            return await backend.thread_summaries(limit, offset, sort, not asc, prefix)

    rows = run(go())
    if json_out:
        emit_json([r.to_dict() for r in rows])
        return
    table(
        ["THREAD", "CKPTS", "HEAD", "UPDATED", "BRANCH-OF", "SUMMARY"],
        [[r.thread_id, r.checkpoints, r.head_step, r.updated_at[:19], r.branch_of or "",
          shorten(r.head_summary, 60)] for r in rows],
    )
