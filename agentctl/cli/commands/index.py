"""`agentctl index build|status|drop`: the full-text index `search` uses: on SQLite a side
file next to the database (`DB.agentctl-search`; the database itself is only read), on
Postgres pg_trgm GIN indexes on the searched columns."""

from typing import Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import AcceptYesOpt, JsonOpt

app = typer.Typer(
    help="The search index `search` uses when present: a side file next to a SQLite "
    "database, pg_trgm indexes on Postgres (build, status, drop).\n\n"
    "Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db index build",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _call(ctx: typer.Context, action: str) -> dict[str, Any]:
    st = state(ctx)
    # Postgres: the indexes are the database's own (a write, asked for by build and
    # drop); SQLite: the side file is written, the database only read.
    write = action in ("build", "drop") and st.sqlite_path() is None

    async def go() -> Any:
        async with st.open(write=write) as store:
            return await store.search_index(action)

    return run(go())


def _print(data: dict[str, Any], json_out: bool) -> None:
    from agentctl.cli.output import emit_json, say

    if json_out:
        emit_json(data)
        return
    lines = [f"state: {data['state']}", f"path: {data['path']}"]
    if data["state"] in ("current", "behind"):
        lines += [
            f"{name}: {data[key]}"
            for name, key in (("rows", "rows"), ("bytes", "bytes"), ("built", "built_at"))
            if data.get(key) is not None
        ]  # Postgres' indexes: no rows, no date of their own
        if data.get("dead_documents"):
            lines.append(
                f"dead documents: {data['dead_documents']} (rows deleted or rewritten since the build)"
            )
    if data.get("detail"):
        lines.append(data["detail"])
    for line in lines:
        say(line)


@app.command("build")
def build(ctx: typer.Context, json_out: JsonOpt = False, yes: AcceptYesOpt = False) -> None:
    """Build (or rebuild) the search index of the database, next to it (on Postgres:
    pg_trgm GIN indexes in it, which Postgres keeps current); `search` then uses it and
    catches it up with later writes.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db index build
    """
    from agentctl.cli.output import info

    info(
        "building the search index (the database is only read)…"
        if state(ctx).sqlite_path() is not None
        else "building the search index (pg_trgm GIN indexes on the checkpoints table)…"
    )
    _print(_call(ctx, "build"), json_out)


@app.command("status")
def status(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Whether the database has a search index, and whether it is current, behind
    (the next search catches up) or corrupt (search scans; rebuild it).

    Example: agentctl --db sample_db/checkpoints.db index status
    """
    _print(_call(ctx, "status"), json_out)


@app.command("drop")
def drop(ctx: typer.Context, json_out: JsonOpt = False, yes: AcceptYesOpt = False) -> None:
    """Remove the search index (the side file; on Postgres its indexes); `search` scans again.

    Example: agentctl --db sample_db/checkpoints.db backup my.db && agentctl --db my.db index build && agentctl --db my.db index drop
    """
    from agentctl.cli.output import info

    data = _call(ctx, "drop")
    if json_out:
        _print(data, json_out)
    else:
        info(
            "removed " + data.get("removed", data["path"])
            if data.get("dropped")
            else "there was no search index"
        )
