"""`agentctl stats` and `agentctl doctor`."""


from typing import Annotated, Any

import typer

from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt
from agentctl.cli.output import emit_json, info, show, stdout_is_tty, tsv

EXPECTED_INDEXES = ("idx_thread_step", "idx_checkpoint_id", "idx_parent")


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
) -> None:
    """Threads, checkpoints, bytes (per thread, largest first) and the tag histogram.

    Example: agentctl --db sample_db/checkpoints.db stats
    """

    async def go():
        async with state(ctx).open() as backend:
            return await backend.stats()

    data = run(go())
    if json_out:
        emit_json(data)
        return
    per = data["per_thread"][:top]
    tags = sorted(data["tags"].items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    if not stdout_is_tty():
        tsv(["KIND", "NAME", "CHECKPOINTS", "BYTES"],
            [["total", "", data["checkpoints"], data["bytes"]],
             ["threads", "", data["threads"], ""]]
            + [["thread", p["thread_id"], p["checkpoints"], p["bytes"]] for p in per]
            + [["tag", t, n, ""] for t, n in tags])
        return
    from rich.table import Table
    from rich.text import Text

    from agentctl import render

    head = Text(f"{data['threads']} threads, {data['checkpoints']} checkpoints, "
                f"{human_bytes(data['bytes'])} of JSON", style="bold")
    threads = Table(header_style="bold", box=None, pad_edge=False, title_justify="left")
    for name, justify in (("THREAD", "left"), ("CKPTS", "right"), ("BYTES", "right"), ("AVG", "right")):
        threads.add_column(name, justify=justify, overflow="fold")
    for p in per:
        avg = p["bytes"] / p["checkpoints"] if p["checkpoints"] else 0
        threads.add_row(render.safe(p["thread_id"], one_line=True), str(p["checkpoints"]),
                        human_bytes(p["bytes"]), human_bytes(avg))
    hist = Table(header_style="bold", box=None, pad_edge=False)
    hist.add_column("TAG")
    hist.add_column("COUNT", justify="right")
    hist.add_column("")
    most = max((n for _, n in tags), default=1)
    for tag, n in tags:
        hist.add_row(render.safe(tag, "cyan", one_line=True), str(n),
                     Text("█" * max(1, round(30 * n / most)), style="cyan"))
    show(head, Text(""), threads, Text(""), hist)


async def find_cycles(backend: Any, limit: int = 20, page: int = 50_000) -> list[list[str]]:
    """Parent chains that loop back on themselves (each cycle once), as checkpoint ids.

    The parent links are read as pairs of row ids (a join on the checkpoint_id index,
    paged by row id), so memory holds integers, not every id string."""
    parent: dict[int, int] = {}
    last = -1
    while True:
        rows = await backend._fetch(
            "SELECT c.id AS child, p.id AS parent FROM checkpoints c "
            "JOIN checkpoints p ON p.checkpoint_id = c.parent_id "
            "WHERE c.id > ? ORDER BY c.id LIMIT ?", last, page)
        for r in rows:
            parent[r["child"]] = r["parent"]
        if len(rows) < page:
            break
        last = rows[-1]["child"]
    done: dict[int, int] = {}  # 1 = on the path being walked, 2 = finished
    cycles: list[list[int]] = []
    for start in parent:
        if start in done:
            continue
        path: list[int] = []
        node: int | None = start
        while node is not None and node not in done:
            done[node] = 1
            path.append(node)
            node = parent.get(node)
        if node is not None and done[node] == 1:  # came back onto this path
            cycles.append(path[path.index(node):])
        for n in path:
            done[n] = 2
        if len(cycles) >= limit:
            break
    if not cycles:
        return []
    wanted = sorted({n for c in cycles for n in c})
    names: dict[int, str] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        for r in await backend._fetch(
                f"SELECT id, checkpoint_id FROM checkpoints WHERE id IN ({', '.join('?' for _ in chunk)})", *chunk):
            names[r["id"]] = r["checkpoint_id"]
    return [[names[n] for n in c] for c in cycles]


async def index_names(backend: Any) -> set[str]:
    if backend.kind == "sqlite":
        rows = await backend._fetch(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'checkpoints'")
    else:
        rows = await backend._fetch(
            "SELECT indexname AS name FROM pg_indexes WHERE tablename = 'checkpoints' "
            "AND schemaname = current_schema()")
    return {r["name"] for r in rows}


async def schema_notes(backend: Any) -> list[str]:
    """What differs from the format's schema and only slows things down (missing indexes)."""
    have = await index_names(backend)
    return [f"index {name} is missing (reads are slower)" for name in EXPECTED_INDEXES if name not in have]


def index_ddl() -> dict[str, str]:
    """The indexes --fix-indexes creates, by name: the format's, and idx_created_at, which
    the format's Postgres variant has and which on SQLite lets `threads list` walk the
    newest rows instead of every thread's head (bench/README.md)."""
    from agentctl.backends.base import POSTGRES_SCHEMA

    out = {}
    for statement in POSTGRES_SCHEMA.split(";"):
        words = statement.split()
        if words[:2] == ["CREATE", "INDEX"]:
            out[words[5]] = " ".join(words)  # CREATE INDEX IF NOT EXISTS <name> ON ...
    return out


async def fix_indexes(backend: Any) -> list[str]:
    """Create the missing indexes of index_ddl() in one transaction; their names."""
    have = await index_names(backend)
    missing = {name: ddl for name, ddl in index_ddl().items() if name not in have}
    if missing:
        async with backend.transaction() as tx:
            for ddl in missing.values():
                await tx.execute(ddl)
    return list(missing)


def doctor(
    ctx: typer.Context,
    json_out: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many findings of each kind at most.")] = 100,
    fix_indexes_: Annotated[bool, typer.Option(
        "--fix-indexes", help="First create the format's missing indexes and idx_created_at "
        "(faster `threads list` on SQLite). A write: it holds the write lock while the "
        "indexes build (seconds for a million rows).")] = False,
) -> None:
    """Check the database: schema, duplicate steps in a thread, parents that do not
    exist, JSON that does not parse, parent cycles. Exits 5 when it finds problems.
    Nothing is written unless --fix-indexes is given.

    Example: agentctl --db sample_db/checkpoints.db doctor
    """
    from agentctl.errors import ExitCode

    async def go():
        async with state(ctx).open(write=fix_indexes_) as backend:
            if fix_indexes_:
                for name in await fix_indexes(backend):
                    info(f"created index {name}")
            return {
                "duplicate_steps": await backend.duplicate_steps(limit),
                "orphan_parents": await backend.orphan_parents(limit),
                "invalid_json": await backend.invalid_json(limit),
                "cycles": await find_cycles(backend, limit),
            }, await schema_notes(backend)

    problems, notes = run(go())
    ok = not any(problems.values())
    report = {"ok": ok, "problems": problems, "warnings": notes,
              "counts": {k: len(v) for k, v in problems.items()}}
    if json_out:
        emit_json(report)
    else:
        _print_report(problems, notes)
    if not ok:
        raise typer.Exit(int(ExitCode.PROBLEMS))


def _print_report(problems: dict[str, list[Any]], notes: list[str]) -> None:
    rows: list[list[Any]] = []
    for d in problems["duplicate_steps"]:
        rows.append(["duplicate-step", d["thread_id"], f"step {d['step']} occurs {d['count']} times"])
    for d in problems["orphan_parents"]:
        rows.append(["orphan-parent", d["thread_id"], f"{d['checkpoint_id']}: parent {d['parent_id']} does not exist"])
    for d in problems["invalid_json"]:
        rows.append(["invalid-json", d["checkpoint_id"], f"{d['column']}: {d['reason']}"])
    for cycle in problems["cycles"]:
        rows.append(["cycle", cycle[0], " -> ".join(cycle + [cycle[0]]) + " (each the parent of the one before)"])
    for note in notes:
        rows.append(["warning", "", note])
    if not stdout_is_tty():
        tsv(["PROBLEM", "WHERE", "DETAIL"], rows)
        if not any(problems.values()):
            info("no problems found")
        return
    from rich.table import Table
    from rich.text import Text

    from agentctl import render

    if not any(problems.values()):
        show(Text("no problems found", style="bold green"), *[Text("warning: " + n, style="yellow") for n in notes])
        return
    t = Table(header_style="bold", box=None, pad_edge=False)
    for name in ("PROBLEM", "WHERE", "DETAIL"):
        t.add_column(name, overflow="fold")
    for kind, where, detail in rows:
        t.add_row(Text(kind, style="yellow" if kind == "warning" else "red"),
                  render.safe(where, one_line=True), render.safe(detail, one_line=True))
    show(t)
