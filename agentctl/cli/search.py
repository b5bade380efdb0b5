"""`agentctl search TEXT`: find text in messages and tool results, through the store
of the database's format (`Store.search`: an index where the format has one, else a
scan; `--scan` forces the scan)."""


from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_thread
from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt
from agentctl.model import SearchHit


def register(app: typer.Typer) -> None:
    app.command("search")(search)


def search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="Text to find (case-insensitive substring).")],
    thread: Annotated[str | None, typer.Option("--thread", "-t", help="Only this thread.",
                                               autocompletion=complete_thread)] = None,
    role: Annotated[str | None, typer.Option("--role", "-r", help="Only messages of this role (user, assistant, tool, ...); skips tool results.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many hits at most.")] = 50,
    scan: Annotated[bool, typer.Option("--scan", help="Use the plain scan, not an FTS5 index (SQLite).")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Find text in messages and tool results; newest first, one hit per checkpoint and
    place, with the thread, step and a snippet.

    Example: agentctl --db sample_db/checkpoints.db search backoff --role assistant
    """
    from agentctl.errors import UsageError
    from agentctl.refs import resolve_thread

    if not text:
        raise UsageError("search text is empty")

    async def go():
        async with state(ctx).open() as backend:
            tid = await resolve_thread(backend, thread) if thread is not None else None
            return await backend.search(text, tid, role, limit, scan=scan)

    hits = run(go())
    if json_out:
        from agentctl.cli.output import emit_json

        emit_json([h.to_dict() for h in hits])
        return
    from agentctl.cli.output import info, stdout_is_tty, table

    if not hits and stdout_is_tty():
        info("no matches")
        return
    table(["THREAD", "STEP", "CHECKPOINT", "WHERE", "ROLE", "SNIPPET"],
          [[h.thread_id, h.step, h.checkpoint_id, h.where, h.role or "", h.snippet] for h in hits],
          renderable=lambda: _hits_table(hits, text))


def _hits_table(hits: list[SearchHit], text: str) -> Any:
    import re

    from rich.table import Table

    from agentctl import render
    from agentctl.text import inert

    from agentctl.cli.output import console
    from agentctl.text import centre_on

    # The snippet keeps one line of a width it is given, cut around the match (centred):
    # folded or cut by the table, a narrow column lost the match.
    longest = max((len(inert(h.snippet, one_line=True)) for h in hits), default=0)
    # STEP and WHERE (not folded) and the gaps take about 32 columns; of the rest the
    # snippet gets three fifths, THREAD and CHECKPOINT (folded) the others.
    width = max(20, min(longest, (console().width - 32) * 3 // 5))
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    for name in ("THREAD", "STEP", "CHECKPOINT", "WHERE"):
        t.add_column(name, overflow="fold", no_wrap=name in ("STEP", "WHERE"))
    t.add_column("SNIPPET", no_wrap=True, overflow="ellipsis", min_width=width)
    needle = re.compile(re.escape(inert(text, one_line=True)), re.IGNORECASE)
    for h in hits:
        snippet = render.safe(centre_on(inert(h.snippet, one_line=True), inert(text, one_line=True), width),
                              one_line=True)
        snippet.highlight_regex(needle, "bold reverse")
        where = h.where if h.where != "messages" else f"messages ({h.role or '?'})"
        t.add_row(render.safe(h.thread_id, "bold", one_line=True), str(h.step),
                  render.safe(h.checkpoint_id, render.ID_STYLE, one_line=True),
                  render.safe(where, one_line=True), snippet)  # a role is database text
    return t
