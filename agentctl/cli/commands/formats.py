"""`agentctl formats`: the formats agentctl reads and what each can do; with `--db`
(or AGENTCTL_DB), which one the database is."""

import os
from typing import Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt
from agentctl.cli.output import emit_json, info, table


def register(app: typer.Typer) -> None:
    app.command("formats")(formats_command)


def _db_given(ctx: typer.Context) -> bool:
    source = ctx.find_root().get_parameter_source("db")
    return (source is not None and source.name != "DEFAULT") or bool(os.environ.get("AGENTCTL_DB"))


def formats_command(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The formats agentctl reads and writes, and what each can do; with --db, which
    format that database is (detected from its schema, or as --format forces it).

    Example: agentctl --db sample_db/sessions.db formats
    """
    from agentctl.errors import AgentctlError
    from agentctl.storage import Capability, detect, formats, get_format

    st = state(ctx)
    detected = None
    if _db_given(ctx):

        async def go() -> Any:
            from agentctl.storage import parse_url

            spec = get_format(st.format) if st.format else await detect(st.db)
            writers = None
            try:
                async with st.open() as store:
                    writers = await store.written_by()
            except AgentctlError:  # a --format the database is not in: it says what is forced
                pass
            return spec, parse_url(st.db)[0], writers

        detected = run(go())
    specs = formats()
    if json_out:
        out: dict[str, Any] = {"formats": [f.to_dict() for f in specs]}
        if detected is not None:
            out["database"] = {"format": detected[0].name, "kind": detected[1]}
            if detected[2] is not None:
                out["database"]["written_by"] = detected[2]
        emit_json(out)
        return
    caps = [c for c in Capability]
    table(
        ["FORMAT", "TITLE", "CAN"],
        [
            [
                f.name + (" *" if detected and detected[0].name == f.name else ""),
                f.title,
                ", ".join(c.value for c in caps if f.can(c, detected[1] if detected else None)),
            ]
            for f in specs
        ],
    )
    if detected is not None:
        info(f"the database is in the {detected[0].name} format ({detected[0].title}, {detected[1]})")
        if detected[2] is not None:
            info("written by: " + (" and ".join(detected[2]) or "nobody yet (no checkpoint)"))
