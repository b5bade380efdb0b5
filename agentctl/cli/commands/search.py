"""`agentctl search TEXT`: find text in messages, tool results and state, through the
store of the database's format (`Store.search`: an index where the format has one, else
a scan; `--scan` forces the scan)."""

from typing import Annotated, Any

import typer

from agentctl.cli.complete import complete_thread
from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt
from agentctl.model import SearchHit

#: the message roles of the formats agentctl reads (what `--role` can pick)
ROLES = ("system", "developer", "user", "assistant", "tool", "function", "reasoning")


def check_role(role: str) -> None:
    """An unknown role is a UsageError naming the roles (and the closest one), not a
    search that silently finds nothing."""
    from difflib import get_close_matches

    from agentctl.errors import UsageError
    from agentctl.text import inert

    if role in ROLES:
        return
    close = get_close_matches(role.lower(), ROLES, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UsageError(f"unknown role {inert(role, one_line=True)!r}; {hint}use one of {', '.join(ROLES)}")


def register(app: typer.Typer) -> None:
    app.command("search")(search)


def search(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="Text to find (case-insensitive substring).")],
    thread: Annotated[
        str | None, typer.Option("--thread", "-t", help="Only this thread.", autocompletion=complete_thread)
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            "-r",
            help="Only messages of this role (system, developer, user, assistant, tool, function, reasoning); skips tool results and state.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many hits at most.")] = 50,
    places: Annotated[
        str,
        typer.Option(
            "--in",
            metavar="PLACES",
            help="Where to look, comma-separated: messages, tools (tool results), state.",
        ),
    ] = "messages,tools,state",
    scan: Annotated[
        bool, typer.Option("--scan", help="Use the plain scan, not an FTS5 index (SQLite).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Find text in messages, tool results and state; newest first, one hit per
    checkpoint and place, with the thread, step, where (the JSON path) and a snippet.

    Example: agentctl --db sample_db/checkpoints.db search backoff --role assistant
    """
    from agentctl.errors import UsageError
    from agentctl.refs import resolve_thread
    from agentctl.storage.contract import check_search_places

    if not text:
        raise UsageError("search text is empty")
    if role is not None:
        check_role(role)
    chosen = [p.strip() for p in places.split(",") if p.strip()]
    if not chosen:
        raise UsageError("--in is empty; use messages, tools, state (comma-separated)")
    check_search_places(chosen)
    if role is not None and "messages" not in chosen:
        raise UsageError("--role picks messages; it cannot be used with --in " + ",".join(chosen))

    async def go() -> Any:
        async with state(ctx).open() as store:
            tid = await resolve_thread(store, thread) if thread is not None else None
            found = await store.search(text, tid, role, limit, scan=scan, places=chosen)
            return found, getattr(store, "last_search_note", "")

    hits, note = run(go())
    if note:  # a search index was found but not trusted: the scan ran instead
        from agentctl.cli.output import info

        info("agentctl: " + note)
    if json_out:
        from agentctl.cli.output import emit_json

        emit_json([h.to_dict() for h in hits])
        return
    from agentctl.cli.output import info, stdout_is_tty, table

    if not hits and stdout_is_tty():
        info("no matches")
        return
    table(
        ["THREAD", "STEP", "CHECKPOINT", "WHERE", "ROLE", "SNIPPET", "PATH"],
        [[h.thread_id, h.step, h.checkpoint_id, h.where, h.role or "", h.snippet, h.path] for h in hits],
        renderable=lambda: _hits_table(hits, text),
    )


def _hits_table(hits: list[SearchHit], text: str) -> Any:
    import re

    from rich.table import Table

    from agentctl import render
    from agentctl.cli.output import console
    from agentctl.text import centre_on, inert

    # The snippet keeps one line of a width it is given, cut around the match (centred):
    # folded or cut by the table, a narrow column lost the match.
    longest = max((len(inert(h.snippet, one_line=True)) for h in hits), default=0)
    wheres = [_where_label(h) for h in hits]
    term_width = console().width
    narrow = render.is_narrow(term_width)
    if narrow:  # records: the snippet gets the line less its label (SNIPPET and a gap)
        width = max(10, min(longest, term_width - 12))
    else:
        # STEP, WHERE (not folded) and the gaps take their columns; of the rest the
        # snippet gets three fifths, THREAD and CHECKPOINT (folded) the others.
        fixed = 14 + max((len(w) for w in wheres), default=5)
        width = max(20, min(longest, (term_width - fixed) * 3 // 5))
    needle = re.compile(re.escape(inert(text, one_line=True)), re.IGNORECASE)
    rows = []
    for h, where in zip(hits, wheres, strict=False):
        snippet = render.safe(
            centre_on(inert(h.snippet, one_line=True), inert(text, one_line=True), width), one_line=True
        )
        snippet.highlight_regex(needle, "bold reverse")
        rows.append(
            [
                render.safe(h.thread_id, "bold", one_line=True),
                render.safe(str(h.step)),
                render.safe(h.checkpoint_id, render.ID_STYLE, one_line=True),
                render.safe(where, one_line=True),
                snippet,
            ]
        )  # a role is database text
    headers = ("THREAD", "STEP", "CHECKPOINT", "WHERE", "SNIPPET")
    if narrow:
        return render.records(headers, rows)
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    for name in headers[:-1]:
        t.add_column(name, overflow="fold", no_wrap=name in ("STEP", "WHERE"))
    t.add_column("SNIPPET", no_wrap=True, overflow="ellipsis", min_width=width)
    for row in rows:
        t.add_row(*row)
    return t


def _where_label(hit: SearchHit) -> str:
    """Where the hit is, for the table: its path (a message's without `.content`), and
    a message's role."""
    from agentctl.text import inert

    where = inert(hit.path or hit.where, one_line=True)
    if hit.where == "messages":
        where = where.removesuffix(".content") + f" ({inert(hit.role or '?', one_line=True)})"
    return where
