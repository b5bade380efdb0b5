"""`agentctl stats` and `agentctl doctor`."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt
from agentctl.cli.output import console, emit_json, info, show, stdout_is_tty, tsv

if TYPE_CHECKING:
    from rich.console import JustifyMethod


def register(app: typer.Typer) -> None:
    app.command("stats")(stats)
    app.command("doctor")(doctor)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def stats(
    ctx: typer.Context,
    json_out: JsonOpt = False,
    top: Annotated[int, typer.Option("--top", min=1, help="How many threads and tags to list.")] = 20,
    user: Annotated[
        str | None, typer.Option("--user", help="Session stores: only this user's sessions.")
    ] = None,
    days: Annotated[
        float | None, typer.Option("--days", min=0, help="Session stores: only the last N days.")
    ] = None,
) -> None:
    """Usage statistics. AgentOS: threads, checkpoints, bytes (per thread, largest
    first) and the tag histogram. Session stores: sessions, tokens and messages per
    user, and per tool its calls, mean latency and failures (--user, --days).

    Example: agentctl --db sample_db/checkpoints.db stats
    """

    async def go() -> Any:
        async with state(ctx).open() as store:
            return await store.usage_stats(user, days)

    data = run(go())
    if json_out:
        emit_json(data)
        return
    if "per_thread" not in data:
        _print_usage(data, top)
        return
    per = data["per_thread"][:top]
    tags = sorted(data["tags"].items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    if not stdout_is_tty():
        tsv(
            ["KIND", "NAME", "CHECKPOINTS", "BYTES"],
            [["total", "", data["checkpoints"], data["bytes"]], ["threads", "", data["threads"], ""]]
            + [["thread", p["thread_id"], p["checkpoints"], p["bytes"]] for p in per]
            + [["tag", t, n, ""] for t, n in tags],
        )
        return
    from rich.table import Table
    from rich.text import Text

    from agentctl import render

    head = Text(
        f"{data['threads']} threads, {data['checkpoints']} checkpoints, "
        f"{human_bytes(data['bytes'])} of {data.get('bytes_of', 'JSON')}",
        style="bold",
    )
    width = console().width
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("THREAD", "left"),
        ("CKPTS", "right"),
        ("BYTES", "right"),
        ("AVG", "right"),
    )
    rows = [
        [
            render.safe(p["thread_id"], one_line=True),
            Text(str(p["checkpoints"])),
            Text(human_bytes(p["bytes"])),
            Text(human_bytes(p["bytes"] / p["checkpoints"] if p["checkpoints"] else 0)),
        ]
        for p in per
    ]
    threads: Any
    if render.is_narrow(width):  # records, as search and diff
        threads = render.records([name for name, _ in columns], rows)
    else:
        threads = Table(header_style="bold", box=None, pad_edge=False, title_justify="left")
        for name, justify in columns:
            threads.add_column(name, justify=justify, overflow="fold")
        for row in rows:
            threads.add_row(*row)
    if not tags:  # (LangGraph: no tags)
        show(head, Text(""), threads)
        return
    hist = Table(header_style="bold", box=None, pad_edge=False)
    hist.add_column("TAG")
    hist.add_column("COUNT", justify="right")
    hist.add_column("")
    most = max((n for _, n in tags), default=1)
    for tag, n in tags:
        hist.add_row(
            render.safe(tag, "cyan", one_line=True),
            str(n),
            Text("█" * max(1, round(30 * n / most)), style="cyan"),
        )
    show(head, Text(""), threads, Text(""), hist)


def _print_usage(data: dict[str, Any], top: int) -> None:
    """A format's usage statistics: its scalar figures, then each list of records as a
    table (piped: tab-separated, one table after the other)."""
    scalars = [[k, v] for k, v in data.items() if not isinstance(v, (list, dict))]
    tables = [
        (k, v[:top])
        for k, v in data.items()
        if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)
    ]
    if not stdout_is_tty():
        tsv(["FIGURE", "VALUE"], scalars)
        for name, rows in tables:
            cols = list(rows[0])
            tsv(
                [name.upper() + ":" + cols[0].upper()] + [c.upper() for c in cols[1:]],
                [[r.get(c, "") for c in cols] for r in rows],
            )
        return
    from rich.table import Table
    from rich.text import Text

    from agentctl import render

    parts: list[Any] = []
    head = Table(box=None, show_header=False, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    for k, v in scalars:
        head.add_row(k.replace("_", " "), render.safe(_fmt(v), one_line=True))
    parts.append(head)
    narrow = render.is_narrow(console().width)
    for name, rows in tables:
        cols = list(rows[0])
        cells = [[render.safe(_fmt(r.get(c)), one_line=True) for c in cols] for r in rows]
        if narrow:  # records under a title, as search and diff
            parts.extend(
                [
                    Text(""),
                    Text(name.replace("_", " "), style="bold"),
                    render.records([c.upper() for c in cols], cells),
                ]
            )
            continue
        t = Table(
            header_style="bold",
            box=None,
            pad_edge=False,
            title=name.replace("_", " "),
            title_justify="left",
            title_style="bold",
        )
        for c in cols:
            t.add_column(c.upper(), overflow="fold")
        for row in cells:
            t.add_row(*row)
        parts.extend([Text(""), t])
    show(*parts)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def doctor(
    ctx: typer.Context,
    json_out: JsonOpt = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many findings of each kind at most.")
    ] = 100,
    fix_indexes_: Annotated[
        bool,
        typer.Option(
            "--fix-indexes",
            help="First create the format's missing indexes and idx_created_at "
            "(faster `threads list` on SQLite). A write: it holds the write lock while the "
            "indexes build (seconds for a million rows).",
        ),
    ] = False,
    fix_: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="First repair what the format can repair (ADK: a session whose state is "
            "not its events' fold), in one transaction, recorded so `agentctl undo` reverts it.",
        ),
    ] = False,
) -> None:
    """Check the database: schema, duplicate steps in a thread, parents that do not
    exist, JSON that does not parse, parent cycles. Exits 5 when it finds problems.
    ADK: sessions whose state is not the fold of their events' state deltas.
    Nothing is written unless --fix-indexes or --fix is given.

    Example: agentctl --db sample_db/checkpoints.db doctor
    """
    from agentctl.errors import ExitCode

    async def go() -> Any:
        async with state(ctx).open(write=fix_indexes_ or fix_) as store:
            if fix_indexes_:
                for name in await store.fix_indexes():
                    info(f"created index {name}")
            if fix_:
                for line in await store.fix():
                    info(line)
            found = await store.doctor(limit)
            return found, store.doctor_checks

    found, checks = run(go())
    errors = [p for p in found if p.kind != "warning"]
    notes = [p.detail for p in found if p.kind == "warning"]
    problems: dict[str, list[Any]] = {name: [] for name in checks}
    for p in errors:
        problems.setdefault(p.check, []).append(p.json_value())
    ok = not errors
    report = {
        "ok": ok,
        "problems": problems,
        "warnings": notes,
        "counts": {k: len(v) for k, v in problems.items()},
    }
    if json_out:
        emit_json(report)
    else:
        _print_report(found)
    if not ok:
        raise typer.Exit(int(ExitCode.PROBLEMS))


def _print_report(found: list[Any]) -> None:
    rows: list[list[Any]] = [[p.label or p.check, p.subject, p.detail] for p in found]
    notes = [p.detail for p in found if p.kind == "warning"]
    clean = all(p.kind == "warning" for p in found)
    if not stdout_is_tty():
        tsv(["PROBLEM", "WHERE", "DETAIL"], rows)
        if clean:
            info("no problems found")
        return
    from rich.table import Table
    from rich.text import Text

    from agentctl import render

    if clean:
        show(
            Text("no problems found", style="bold green"),
            *[Text("warning: " + n, style="yellow") for n in notes],
        )
        return
    t = Table(header_style="bold", box=None, pad_edge=False)
    for name in ("PROBLEM", "WHERE", "DETAIL"):
        t.add_column(name, overflow="fold")
    for kind, where, detail in rows:
        t.add_row(
            Text(kind, style="yellow" if kind == "warning" else "red"),
            render.safe(where, one_line=True),
            render.safe(detail, one_line=True),
        )
    show(t)
