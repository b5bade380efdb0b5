"""Reading checkpoints: `log`, `show`, `diff`, `tree`."""

import gc
import heapq
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentctl.cli.complete import complete_ref
from agentctl.cli.context import run, state
from agentctl.cli.options import JsonOpt, OffsetOpt, RefArg, ThreadArg
from agentctl.cli.output import (
    compact_json,
    emit_json,
    info,
    plain_output,
    show,
    show_segments,
    stdout_is_tty,
    tsv,
)
from agentctl.model import Checkpoint, CheckpointMetadata

if TYPE_CHECKING:
    from agentctl.storage.contract import Store

MAX_GRAPH_THREADS = 64


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while thousands of rows become objects and lines: none of them is
    garbage yet, and the collector would walk them again and again (and every object
    of the start-up with them)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def register(app: typer.Typer) -> None:
    app.command("log")(log)
    app.command("show")(show_checkpoint)
    app.command("diff")(diff)
    app.command("tree")(tree)


async def _family(store: "Store", thread: str) -> list[str]:
    """The thread and the threads branched from it, recursively (breadth first), at
    most MAX_GRAPH_THREADS."""
    from agentctl.tree import branch_family

    return (await branch_family(store, thread, MAX_GRAPH_THREADS)).threads


AllKeysOpt = Annotated[
    bool,
    typer.Option(
        "--all-keys",
        help="Also the keys a format adds to the state of its own (LangGraph's "
        "__metadata__, __internal__), left out by default.",
    ),
]


def _newest_first(per_thread: list[list[CheckpointMetadata]]) -> list[CheckpointMetadata]:
    """Interleave threads by time, keeping each thread's own order (children first); at
    equal times a branch's rows first (a branch is listed after the thread it parts
    from, and its rows came after the checkpoint it parts at: the SDK's times are whole
    seconds)."""
    return list(heapq.merge(*reversed(per_thread), key=lambda m: str(m.created_at), reverse=True))


def log(
    ctx: typer.Context,
    thread: ThreadArg,
    graph: Annotated[
        bool, typer.Option("--graph", help="Also show the thread's branches, with forks and merges drawn.")
    ] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many checkpoints at most.")] = 100,
    offset: OffsetOpt = 0,
    all_rows: Annotated[bool, typer.Option("--all", help="No limit.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """The checkpoints of a thread, newest first, one per line (like git log --oneline).

    THREAD may also be a checkpoint reference (its thread is shown).

    Example: agentctl --db sample_db/checkpoints.db log coder-fix-flaky-test --graph
    """
    from agentctl.refs import resolve_thread

    n = 2**62 if all_rows else limit

    async def go() -> Any:
        async with state(ctx).open() as store:
            tid = await resolve_thread(store, thread)
            total = await store.count(tid)
            threads = await _family(store, tid) if graph else [tid]
            forked: list[str] = []
            if graph:
                seen: set[str] = set()
                pages = []
                for t in threads:  # a checkpoint a branch shares with its source: drawn once
                    page = await store.read_thread(t, n, offset if t == tid else 0, descending=True)
                    pages.append([m for m in page if m.checkpoint_id not in seen])
                    seen.update(m.checkpoint_id for m in page)
            else:
                # Which checkpoints shown have children in other threads, found while
                # the page is read (an idx_parent probe per row), not by a second pass.
                page, forked = await store.read_thread_forks(tid, n, offset, descending=True)
                pages = [page]
            heads: dict[str, Any] = {}
            for t, page in zip(threads, pages, strict=False):
                head = page[0] if page and (offset == 0 or t != tid) else None
                if head is not None:
                    heads.setdefault(head.checkpoint_id, []).append(t)
            for t, page in zip(threads, pages, strict=False):  # where a run failed (show has its __error__)
                for cid in sorted(await store.failed_checkpoints(t, [m.checkpoint_id for m in page])):
                    heads.setdefault(cid, []).append("run failed")
            # Forks off the checkpoints shown: their children in other threads.
            for thread_id, parent_id in await store.fork_children(sorted(set(forked)), tid):
                heads.setdefault(parent_id, []).append(f"fork: {thread_id}")
            metas = pages[0] if len(pages) == 1 else _newest_first(pages)[:n]
            return tid, total, await store.describe(metas), heads

    with _gc_paused():
        tid, total, metas, heads = run(go())
        shown = len([m for m in metas if m.thread_id == tid])
        if json_out:
            emit_json([m.to_dict() for m in metas])
            return
        from agentctl import lines

        rows = lines.log_lines(metas, graph=graph, heads=heads, summary_width=80 if stdout_is_tty() else None)
        if rows and plain_output():  # piped: written in one go (show_segments' text)
            sys.stdout.write(lines.plain_text(rows))
        else:
            show_segments(rows)
        del metas, rows  # freed while the collector is paused: it would walk them once more
    if offset + shown < total:  # also piped: a script's output stops at the limit
        info(f"(showing {shown} of {total}; use -n N, --offset or --all)")


def show_checkpoint(
    ctx: typer.Context,
    ref: RefArg,
    json_out: JsonOpt = False,
    messages: Annotated[
        str,
        typer.Option(
            "--messages",
            "-m",
            metavar="N|all",
            help="How many of the last messages the transcript shows (default 50; all).",
        ),
    ] = "50",
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="Show long texts whole (default: the first 20,000 characters and their size)."
        ),
    ] = False,
    all_keys: AllKeysOpt = False,
) -> None:
    """One checkpoint: metadata, the messages as a chat transcript (the last 50 unless
    --messages), the state and tool results as JSON. A text longer than 20,000 characters
    is cut, with its size (--full shows it whole). --json prints the checkpoint's
    to_dict() form exactly.

    Example: agentctl --db sample_db/checkpoints.db show coder-fix-flaky-test@6
    """
    from agentctl.errors import CheckpointNotFound, CorruptRowError, UsageError
    from agentctl.refs import resolve

    if messages.strip().lower() == "all":
        last = None
    elif messages.strip().isdigit():
        last = int(messages)
    else:
        raise UsageError(f"--messages takes a number or 'all', not {messages!r}")

    async def go() -> Any:
        async with state(ctx).open() as store:
            meta = await resolve(store, ref)
            try:
                cp = await store.get(meta.checkpoint_id)
            except CorruptRowError as exc:  # the row's metadata, a placeholder for the rest
                return meta, exc
            if cp is None:  # deleted between the two reads
                raise CheckpointNotFound(meta.checkpoint_id)
            return cp, None

    cp, bad = run(go())
    if bad is not None:
        _show_unusable(cp, bad, json_out)
        return
    if json_out:
        emit_json(cp.to_dict())
        return
    from rich.rule import Rule
    from rich.text import Text

    from agentctl import deep, render
    from agentctl.diff import own_state

    if not full:  # cut before rendering: a 50 MB text would cost Rich ~10 times its size
        for part in (cp.messages, cp.state, cp.tools_result):
            deep.clip(part, hint="; --full shows it")

    def rule(title: str) -> Rule:
        return Rule(Text(title, style="bold"), align="left", style="dim")

    msgs = cp.messages
    skipped = len(msgs) - last if isinstance(msgs, list) and last is not None and len(msgs) > last else 0
    title = (
        f"messages ({len(msgs)}" + (f", the last {last}" if skipped else "") + ")"
        if isinstance(msgs, list)
        else "messages"
    )
    head: list[Any] = (
        [Text(f"… {skipped} earlier message(s) (--messages all shows them)", style="dim")] if skipped else []
    )
    show(
        render.metadata_table(cp.metadata, cp.next_node),
        rule(title),
        *head,
        render.transcript(msgs[skipped:] if skipped else msgs, first_index=skipped),
        rule("state"),
        render.json_view(cp.state if all_keys else own_state(cp.state)),
        rule("tool results"),
        render.json_view(cp.tools_result),
    )


def _show_unusable(meta: CheckpointMetadata, exc: Any, json_out: bool) -> None:
    """`show` of a row that cannot be decoded: its metadata, and in place of its
    contents what is wrong with it (as a transcript shows an undecodable item), exit 0;
    --json: the checkpoint's keys, its contents null and `unusable` saying why."""
    unusable = {"column": exc.column, "reason": exc.reason}
    if json_out:
        emit_json(
            {
                "metadata": meta.to_dict(),
                "messages": None,
                "state": None,
                "tools_result": None,
                "next_node": None,
                "unusable": unusable,
            }
        )
        return
    from agentctl import render

    show(
        render.metadata_table(meta, ""),
        render.safe(
            f"(this checkpoint's row cannot be decoded: {exc.column} is not usable: {exc.reason}; "
            "its messages, state and tool results are not shown)",
            "yellow",
        ),
    )


def _empty_like(meta: CheckpointMetadata) -> Checkpoint:
    return Checkpoint(
        CheckpointMetadata(
            thread_id=meta.thread_id, checkpoint_id="", step=0, created_at="", tags=[], summary=""
        ),
        [],
        {},
        {},
    )


def diff(
    ctx: typer.Context,
    a: RefArg,
    b: Annotated[
        str | None,
        typer.Argument(
            metavar="[B]",
            help="The checkpoint to compare A with; default: A's parent (then the diff shows what A changed).",
            autocompletion=complete_ref,
        ),
    ] = None,
    json_out: JsonOpt = False,
    patch: Annotated[bool, typer.Option("--patch", help="Print RFC 6902 JSON Patch per section.")] = False,
    all_keys: AllKeysOpt = False,
) -> None:
    """Structural diff of two checkpoints: metadata, messages, state and tool results
    by JSON path (added / removed / changed, with old and new values). With one
    checkpoint, what it changed from its parent. Works across threads and branches.

    --json prints [{section, path, op, old, new}]; --patch prints {section: JSON Patch}.

    Example: agentctl --db sample_db/checkpoints.db diff coder-fix-flaky-test~1 coder-fix-flaky-test
    """
    from agentctl.diff import diff_checkpoints
    from agentctl.errors import CheckpointNotFound, UsageError
    from agentctl.refs import resolve

    if json_out and patch:
        raise UsageError("use one of --json and --patch")

    async def go() -> Any:
        async with state(ctx).open() as store:
            meta_a = await resolve(store, a)
            cp_a = await store.get(meta_a.checkpoint_id)
            if b is not None:
                meta_b = await resolve(store, b)
                return cp_a, await store.get(meta_b.checkpoint_id)
            parent_id = meta_a.parent_checkpoint_id
            if not parent_id:
                return _empty_like(meta_a), cp_a  # a root: everything in it was added
            parent = await store.get(parent_id)
            if parent is None:
                raise CheckpointNotFound(
                    parent_id, [f"the parent of {meta_a.checkpoint_id} no longer exists; name B explicitly"]
                )
            return parent, cp_a

    # No cyclic GC from the read to the end: the parsed states are hundreds of thousands
    # of containers (7% of a diff of two 5 MB states went to collections walking them),
    # and they are freed (by reference counts) before the collector runs again.
    with _gc_paused():
        old, new = run(go())
        if old is None or new is None:
            raise CheckpointNotFound(a if old is None else str(b))
        changes = diff_checkpoints(old, new, format_keys=all_keys)
        _show_diff(old, new, changes, json_out, patch)
        del old, new, changes


def _show_diff(old: Checkpoint, new: Checkpoint, changes: list[Any], json_out: bool, patch: bool) -> None:
    from agentctl.diff import patch_by_section

    if json_out:
        emit_json([c.to_dict() for c in changes])
        return
    if patch:
        emit_json(patch_by_section(changes))
        return
    if not stdout_is_tty():
        tsv(
            ["SECTION", "PATH", "OP", "OLD", "NEW"],
            [[c.section, c.path, c.op, compact_json(c.old), compact_json(c.new)] for c in changes],
        )
        return
    from rich.text import Text

    from agentctl import render

    head = Text.assemble(
        ("--- ", "red"),
        render.safe(old.metadata.checkpoint_id or "(nothing)", one_line=True),
        "\n",
        ("+++ ", "green"),
        render.safe(new.metadata.checkpoint_id, one_line=True),
    )
    from agentctl.cli.output import console

    show(head, render.diff_table(changes, width=console().width))


def tree(ctx: typer.Context, thread: ThreadArg, json_out: JsonOpt = False) -> None:
    """The checkpoint DAG of a thread and its branches: heads, branch points, merges and
    abandoned tips (what a rewind set aside) are labelled. --json gives nodes and edges.

    Example: agentctl --db sample_db/checkpoints.db tree coder-fix-flaky-test
    """
    from agentctl.refs import resolve_thread

    async def go() -> Any:
        from agentctl.tree import checkpoint_tree

        async with state(ctx).open() as store:
            tid = await resolve_thread(store, thread)
            return await checkpoint_tree(store, tid)

    with _gc_paused():
        result = run(go())
        if json_out:
            emit_json(result)
            return
        if plain_output():  # piped: the same text, without building and drawing Rich objects
            from agentctl import lines

            sys.stdout.write("".join([line + "\n" for line in lines.tree_nodes(result).lines()]))
            del result  # freed while the collector is paused: it would walk it once more
            return
    from agentctl import render

    show(render.tree_view(result))
