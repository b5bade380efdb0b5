"""Rich renderables shared by the CLI and the TUI.

Everything that comes from a database is passed through `agentctl.text.inert` and put
into `rich.text.Text` objects, never parsed as markup: an escape sequence, a carriage
return or `[bold red]` in a message shows up as the characters it is made of.

This module imports rich (never textual). Renderables are built from the model's
dataclasses and the writes' plain results (storage/results.py; duck-typed by their documented fields).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from rich.console import Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from agentctl import deep, lines
from agentctl.lines import DIM, ID_STYLE, LABEL_STYLES, Segment, graph_lines, merge_parents
from agentctl.storage.results import policy_text
from agentctl.text import inert, shorten

__all__ = [
    "safe",
    "value_text",
    "transcript",
    "json_view",
    "metadata_table",
    "diff_table",
    "records",
    "conflicts_table",
    "tree_view",
    "threads_table",
    "log_lines",
    "graph_lines",
    "merge_parents",
    "LABEL_STYLES",
    "ID_STYLE",
    "op_table",
    "plan_text",
    "ROLE_STYLES",
    "OP_STYLES",
]

ROLE_STYLES = {
    "system": "bold magenta",
    "user": "bold green",
    "assistant": "bold cyan",
    "tool": "bold yellow",
    "function": "bold yellow",
}
OP_STYLES = {"added": "green", "removed": "red", "changed": "yellow"}
# How many of the checkpoints a prune deletes its plan lists (`plan_prune(preview=)`).
PRUNE_LISTED = 10

_json_highlighter = JSONHighlighter()


# ---- text helpers -------------------------------------------------------------------


def safe(value: Any, style: str = "", *, one_line: bool = False) -> Text:
    """A Text of `value` shown literally: control characters escaped, no markup."""
    s = "" if value is None else (value if isinstance(value, str) else str(value))
    return Text(inert(s, one_line=one_line), style=style)


def _dumps(value: Any, indent: int | None = None) -> str:
    return json.dumps(
        value, ensure_ascii=False, indent=indent, default=str, separators=None if indent else (", ", ": ")
    )


def _is_missing(value: Any) -> bool:
    from agentctl.diff import MISSING

    return value is MISSING


def value_text(value: Any, width: int | None = 120) -> Text:
    """A JSON value on one line (shortened to `width`), highlighted; `MISSING` as a dim
    dash. Strings show as JSON strings so `"1"` and `1` differ."""
    if _is_missing(value):
        return Text("—", style=DIM)
    s = _dumps(value)
    s = shorten(s, width) if width else inert(s, one_line=True)
    return _json_highlighter(Text(s))


def json_view(value: Any) -> RenderableType:
    """Indented, highlighted JSON. json.dumps escapes C0 controls itself; `inert`
    catches the rest (C1 controls, bidi overrides) that ensure_ascii=False keeps."""
    text = Text(inert(_dumps(value, indent=2)), no_wrap=False)
    return _json_highlighter(text)


# ---- a checkpoint ---------------------------------------------------------------------


def _content_text(content: Any) -> Text:
    if isinstance(content, str):
        return safe(content)
    if isinstance(content, list):
        # multi-part content: [{"type": "text", "text": ...}, {"type": "image_url", ...}]
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(safe(part["text"]))
            else:
                parts.append(value_text(part, width=None))
        return Text("\n").join(parts)
    return value_text(content, width=None)


def transcript(messages: Any, first_index: int = 0) -> RenderableType:
    """A chat transcript: each message's role (and tool name), its content, and the
    tool calls it makes. `first_index`: the index of the first message given (when they
    are the tail of a longer transcript)."""
    if not isinstance(messages, list):
        return Group(Text("(messages are not a list)", style="red"), json_view(messages))
    if not messages:
        return Text("(no messages)", style=DIM)
    items: list[RenderableType] = []
    for i, msg in enumerate(messages, first_index):
        if not isinstance(msg, Mapping):
            items.append(
                Text.assemble((f"[{i}] ", DIM), ("(not an object) ", "red"), value_text(msg, width=None))
            )
            continue
        role = msg.get("role")
        role_s = role if isinstance(role, str) else "?"
        header = Text.assemble((f"[{i}] ", DIM), safe(role_s, ROLE_STYLES.get(role_s, "bold"), one_line=True))
        if msg.get("name"):
            header.append(" ")
            header.append_text(safe(msg["name"], "yellow", one_line=True))
        if msg.get("tool_call_id"):
            header.append(" ")
            header.append_text(safe(f"({msg['tool_call_id']})", DIM, one_line=True))
        items.append(header)
        content = msg.get("content", "")
        if content not in ("", None):
            items.append(_indent(_content_text(content)))
        calls = msg.get("tool_calls") or []
        if isinstance(calls, list):
            for call in calls:
                items.append(_indent(_tool_call_text(call)))
        else:  # text that is not JSON (or one object): shown once, as it is
            note = " (not JSON)" if isinstance(calls, str) else ""
            items.append(
                _indent(
                    Text.assemble(
                        ("→ ", "yellow"),
                        (f"tool calls{note}: ", "red" if note else DIM),
                        value_text(calls, width=None),
                    )
                )
            )
        extra = {
            k: v
            for k, v in msg.items()
            if k not in ("role", "content", "name", "tool_calls", "tool_call_id", "tool_calls_error")
        }
        if extra:
            items.append(_indent(Text.assemble(("extra ", DIM), value_text(extra, width=None))))
    return Group(*items)


def _indent(text: Text, n: int = 4) -> Text:
    pad = " " * n
    lines = text.split("\n", allow_blank=True)
    out = Text()
    for j, line in enumerate(lines):
        if j:
            out.append("\n")
        out.append(pad)
        out.append_text(line)
    return out


def _tool_call_text(call: Any) -> Text:
    if not isinstance(call, Mapping):
        return Text.assemble(("→ ", "yellow"), value_text(call, width=None))
    fn = call.get("function") if isinstance(call.get("function"), Mapping) else None
    name = call.get("name") or (fn or {}).get("name") or "?"
    args = call.get("arguments", (fn or {}).get("arguments", {}))
    if isinstance(args, str):  # OpenAI style: arguments as a JSON string
        try:
            args = deep.loads(args)
        except ValueError:
            pass
    out = Text.assemble(("→ ", "yellow"), safe(name, "bold yellow", one_line=True), "(")
    out.append_text(value_text(args, width=None) if not isinstance(args, str) else safe(args, one_line=True))
    out.append(")")
    if call.get("id"):
        out.append_text(safe(f" [{call['id']}]", DIM, one_line=True))
    return out


def metadata_table(meta: Any, next_node: str = "") -> RenderableType:
    """The fields of a CheckpointMetadata as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("checkpoint", safe(meta.checkpoint_id, ID_STYLE, one_line=True))
    grid.add_row("thread", safe(meta.thread_id, one_line=True))
    grid.add_row("step", Text(str(meta.step)))
    grid.add_row(
        "parent",
        safe(meta.parent_checkpoint_id, one_line=True) if meta.parent_checkpoint_id else Text("—", style=DIM),
    )
    grid.add_row("created", safe(meta.created_at, one_line=True))
    grid.add_row("tags", _tags_text(meta.tags) if meta.tags else Text("—", style=DIM))
    grid.add_row("summary", safe(meta.summary))
    if next_node:
        grid.add_row("next node", safe(next_node, one_line=True))
    return grid


def _tags_text(tags: Iterable[Any]) -> Text:
    return _text(lines.tag_segments(list(tags)))


def _text(segments: Sequence[Segment]) -> Text:
    return Text.assemble(*segments)


# ---- diffs and conflicts --------------------------------------------------------------


def _format_path(pointer: str) -> str:
    from agentctl.diff import format_path

    return format_path(pointer)


#: below this many columns a table of several text columns is shown as records (one
#: `NAME  value` line per column, a blank line between rows, as psql's expanded display)
#: rather than columns of a few letters each
NARROW_WIDTH = 60


def is_narrow(width: int | None) -> bool:
    return width is not None and width < NARROW_WIDTH


def records(headers: Sequence[str], rows: Sequence[Sequence[RenderableType]]) -> RenderableType:
    """Rows as blocks of `HEADER  value` lines, values folded to the width left: a
    table for a narrow terminal."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for i, row in enumerate(rows):
        if i:
            grid.add_row("", "")
        for name, value in zip(headers, row, strict=False):
            grid.add_row(name, value)
    return grid


class ByWidth:
    """`wide`, or `narrow` below NARROW_WIDTH columns, chosen when drawn: for a pane
    whose width is known only then (the TUI's detail pane, made off the event loop)."""

    def __init__(self, wide: RenderableType, narrow: RenderableType):
        self.wide, self.narrow = wide, narrow

    def _pick(self, width: int) -> RenderableType:
        return self.narrow if is_narrow(width) else self.wide

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield self._pick(options.max_width)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement.get(console, options, self._pick(options.max_width))


def diff_table(
    changes: Sequence[Any], value_width: int = 60, width: int | None = None, fit: bool = False
) -> RenderableType:
    """SECTION, PATH (human form), OP, OLD, NEW for each Change (as records when
    `width` is narrow; with `fit`, as records when drawn narrower: ByWidth)."""
    if not changes:
        return Text("no differences", style=DIM)
    headers = ("SECTION", "PATH", "OP", "OLD", "NEW")
    rows = [
        [
            safe(c.section, one_line=True),
            safe(_format_path(c.path), one_line=True),
            Text(c.op, style=OP_STYLES.get(c.op, "")),
            value_text(c.old, value_width),
            value_text(c.new, value_width),
        ]
        for c in changes
    ]
    if is_narrow(width):
        return records(headers, rows)
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    for name in headers:
        t.add_column(name, overflow="fold", no_wrap=name in ("SECTION", "OP"))
    for row in rows:
        t.add_row(*row)
    return ByWidth(t, records(headers, rows)) if fit else t


def comparison_head(result: Any) -> Text:
    """What `compare` found (agentctl.compare.Comparison), above its changes: the step
    where the runs parted and A's and B's checkpoints there, with the steps each has after
    it; or that they do not part."""
    if result.first_divergent_step is None:
        return Text(
            f"the runs do not part: {result.common_steps} step(s) alike; "
            f"then A has {result.a_steps} more step(s), B {result.b_steps}"
        )
    return Text.assemble(
        ("parted at step ", "bold"),
        (str(result.first_divergent_step), "bold"),
        "\n",
        ("--- A ", "red"),
        safe(result.a_at or "", one_line=True),
        f" (step {result.a_step})  ({result.a_steps} step(s) after it)\n",
        ("+++ B ", "green"),
        safe(result.b_at or "", one_line=True),
        f" (step {result.b_step})  ({result.b_steps} step(s) after it)",
    )


def comparison_view(result: Any, width: int | None = None, fit: bool = False) -> RenderableType:
    """`comparison_head` and the changes where the runs parted (`diff_table`)."""
    head = comparison_head(result)
    if result.first_divergent_step is None:
        return head
    return Group(head, diff_table(list(result.changes), width=width, fit=fit))


def conflicts_table(
    conflicts: Sequence[Any], value_width: int = 50, width: int | None = None
) -> RenderableType:
    """PATH, BASE, OURS, THEIRS for each merge Conflict (as records when `width` is
    narrow)."""
    headers = ("PATH", "BASE", "OURS", "THEIRS")
    rows = [
        [
            safe(_format_path(c.path), "bold", one_line=True),
            value_text(c.base, value_width),
            value_text(c.ours, value_width),
            value_text(c.theirs, value_width),
        ]
        for c in conflicts
    ]
    if is_narrow(width):
        return records(headers, rows)
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    for name in headers:
        t.add_column(name, overflow="fold")
    for row in rows:
        t.add_row(*row)
    return t


# ---- threads, log, tree ----------------------------------------------------------------


def threads_table(
    summaries: Sequence[Any], summary_width: int = 60, width: int | None = None
) -> RenderableType:
    """The `threads list` table. A format's own columns (a session's user, title, ...)
    come after HEAD, as many as fit in `width` (in their order), kept short; a column
    empty in every row is left out."""
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    extra = [name for name, _ in summaries[0].extra_columns()] if summaries else []
    if extra and width is not None:
        thread_w = min(30, max(len(s.thread_id) for s in summaries))
        room = width - (thread_w + 2) - 7 - 6 - 21 - 32  # THREAD CKPTS HEAD UPDATED SUMMARY
        fits = []
        for i, name in enumerate(extra):
            w = min(24, max(len(name), *(len(str(s.extra_columns()[i][1])) for s in summaries))) + 2
            if w <= room:
                fits.append(name)
                room -= w
        extra = fits
    rows = []
    for s in summaries:
        rows.append(
            [
                safe(s.thread_id, "bold", one_line=True),
                Text(str(s.checkpoints)),
                Text(str(s.head_step)),
                *(safe(str(v), one_line=True) for n, v in s.extra_columns() if n in extra),
                safe(str(s.updated_at)[:19], DIM, one_line=True),
                safe(s.branch_of or "", "magenta", one_line=True),
                safe(shorten(s.head_summary or "", summary_width, at_word=True)),
            ]
        )
    names = ["THREAD", "CKPTS", "HEAD", *extra, "UPDATED", "BRANCH-OF", "SUMMARY"]
    if is_narrow(width):  # records, every column that has a value
        keep = [i for i, name in enumerate(names) if any(r[i].plain for r in rows)]
        return records([names[i] for i in keep], [[r[i] for i in keep] for r in rows])
    narrow = width is not None and width < 72  # then no time, no branch column: one word a line is no table
    keep = [
        i
        for i, name in enumerate(names)
        if not (narrow and name in ("UPDATED", "BRANCH-OF"))
        and (name in ("THREAD", "CKPTS", "HEAD", "UPDATED", "SUMMARY") or any(r[i].plain for r in rows))
    ]
    widths = _thread_column_widths(
        [names[i] for i in keep], [[r[i] for i in keep] for r in rows], extra, 12 if narrow else 20, width
    )
    for i in keep:
        name = names[i]
        if name in extra:
            t.add_column(
                name,
                no_wrap=True,
                overflow="ellipsis",
                max_width=24,
                justify="right" if name in ("TOKENS", "COST") else "left",
            )
        else:
            t.add_column(
                name,
                justify="right" if name in ("CKPTS", "HEAD") else "left",
                overflow="fold",
                no_wrap=name in ("CKPTS", "HEAD", "UPDATED"),
                width=widths.get(name),
                min_width=None if widths else {"SUMMARY": 20, "THREAD": 12}.get(name),
            )
    for r in rows:
        t.add_row(*(r[i] for i in keep))
    return t


def _thread_column_widths(
    names: list[str], rows: list[list[Text]], extra: Sequence[str], summary_min: int, width: int | None
) -> dict[str, int]:
    """`threads list`'s widths of THREAD, BRANCH-OF and SUMMARY in `width`: the ids
    whole on one line and the summary the rest where that leaves it `summary_min`;
    else the summary that (or a third of the room) and the ids folded over lines.
    Never wider than the terminal: Rich would cut every line's end, characters gone
    without a mark. Without a width: {} (Rich's own layout)."""
    if width is None:
        return {}
    widest = {name: max([len(name), *(r[i].cell_len for r in rows)]) for i, name in enumerate(names)}
    ids = sorted((widest[n], n) for n in ("THREAD", "BRANCH-OF") if n in widest)
    fixed = sum(
        min(widest[n], 24) if n in extra else widest[n]
        for n in names
        if n not in ("THREAD", "BRANCH-OF", "SUMMARY")
    )
    room = width - fixed - 2 * (len(names) - 1)
    whole = sum(w for w, _ in ids)
    out = {
        "SUMMARY": max(summary_min, room - whole)
        if room - whole >= summary_min
        else min(summary_min, max(8, room // 3))
    }
    left = room - out["SUMMARY"]
    for k, (w, n) in enumerate(ids):  # the narrower first: what it leaves goes to the other
        out[n] = max(4, min(w, left // (len(ids) - k)))
        left -= out[n]
    out["SUMMARY"] = max(4, min(widest["SUMMARY"], out["SUMMARY"] + left))
    return out


def log_lines(
    metas: Sequence[Any],
    graph: bool = False,
    *,
    heads: Mapping[str, Sequence[str]] | None = None,
    summary_width: int | None = 80,
) -> list[Text]:
    """One line per checkpoint, newest first as given: id, (decorations), #step, [tags],
    summary (the layout of `agentctl.lines.log_lines`). `heads` maps checkpoint ids to
    names shown as decorations (e.g. the thread whose head it is). With `graph`, a lane
    graph of forks and merges is drawn on the left (the checkpoints must be in
    child-before-parent order)."""
    return [_text(line) for line in lines.log_lines(metas, graph, heads=heads, summary_width=summary_width)]


def tree_view(tree: Mapping[str, Any], summary_width: int = 60) -> RenderableType:
    """The DAG of `get_checkpoint_tree` as a Rich tree (the layout of
    `agentctl.lines.tree_nodes`): each thread's checkpoints in order, a branch nested
    under its branch point, merges and labels marked."""
    top = lines.tree_nodes(tree, summary_width)
    root = Tree(_text(top.label))
    stack = [(top, root)]
    while stack:
        node, branch = stack.pop()
        for child in node.children:
            stack.append((child, branch.add(_text(child.label))))
    return root


# ---- the operation log and plans ------------------------------------------------------


def op_table(ops: Sequence[Any], width: int | None = None) -> RenderableType:
    """The operation log (as records when `width` is narrow)."""
    headers = ("OP", "WHEN", "KIND", "SUMMARY", "THREADS", "STATUS")
    rows = []
    for op in ops:
        if op.undone:
            status = Text("undone", style=DIM)
        elif getattr(op, "undo_of", None):
            status = Text(f"undo of {op.undo_of}", style="cyan")
        elif (getattr(op, "details", None) or {}).get("restored"):
            status = Text(f"partly undone ({len(op.details['restored'])} thread(s))", style="yellow")
        else:
            status = Text("done", style="green")
        rows.append(
            [
                Text(str(op.op_id)),
                safe(str(op.created_at)[:19], DIM, one_line=True),
                safe(op.kind, "bold", one_line=True),
                safe(op.summary, one_line=True),
                safe(", ".join(op.threads or []), one_line=True),
                status,
            ]
        )
    if is_narrow(width):
        return records(headers, rows)
    t = Table(header_style="bold", box=None, pad_edge=False, show_edge=False)
    for name in headers:
        t.add_column(name, justify="right" if name == "OP" else "left", overflow="fold")
    for row in rows:
        t.add_row(*row)
    return t


def _meta_line(meta: Any, style: str = "", thread: str | None = None) -> Text:
    """A checkpoint's line; its thread in parentheses when it is not `thread` (a
    LangGraph subgraph namespace's checkpoint in its thread's prune)."""
    other = thread is not None and meta.thread_id != thread
    return Text.assemble(
        "  ",
        safe(meta.checkpoint_id, ID_STYLE, one_line=True),
        Text.assemble(" (", safe(meta.thread_id, one_line=True), ")") if other else "",
        (f" #{meta.step} ", "cyan"),
        safe(shorten(meta.summary or "", 60), style),
    )


def _listing(
    title: Text,
    metas: Sequence[Any],
    style: str = "",
    limit: int = 20,
    total: int | None = None,
    thread: str | None = None,
) -> list[RenderableType]:
    """title, the first `limit` of metas, and how many more there are (of `total`, when
    metas holds only the first ones)."""
    total = len(metas) if total is None else total
    out: list[RenderableType] = [title]
    for m in islice(metas, limit):
        out.append(_meta_line(m, style, thread))
    if total > limit:
        out.append(Text(f"  … and {total - limit} more", style=DIM))
    return out


def plan_text(plan: Any) -> RenderableType:
    """What a write will do, for a confirmation prompt or `--dry-run`.

    Knows the History's RewindPlan, MergePlan and PrunePlan (by their fields)."""
    fields = set(getattr(plan, "__dataclass_fields__", {}) or vars(plan))
    parts: list[RenderableType] = []
    if {"target", "moved"} <= fields:  # RewindPlan
        target = plan.target
        parts.append(
            Text.assemble(
                ("rewind ", "bold"),
                safe(plan.thread_id, "bold", one_line=True),
                " to ",
                safe(target.checkpoint_id, ID_STYLE, one_line=True),
                (f" (step {target.step})", "cyan"),
            )
        )
        n = len(plan.moved)
        if not n:
            parts.append(Text("  nothing after it: nothing to do", style=DIM))
        elif plan.hard:
            parts.extend(
                _listing(
                    Text(
                        f"DELETE {n} checkpoint{'s' if n != 1 else ''} after it (undoable until purge):",
                        style="bold red",
                    ),
                    plan.moved,
                    "red",
                )
            )
        elif getattr(plan, "marked", False):  # ADK: a rewind event marks them; they stay
            parts.extend(
                _listing(
                    Text.assemble(
                        f"append a rewind event (as ADK's rewind_async) marking the {n} checkpoint"
                        f"{'s' if n != 1 else ''} after it rewound: they stay in ",
                        safe(plan.thread_id, "bold", one_line=True),
                        ", out of the conversation:",
                    ),
                    plan.moved,
                )
            )
        elif plan.archive_thread == plan.thread_id:  # LangGraph: a fork copy becomes the head
            parts.extend(
                _listing(
                    Text(
                        f"write a fork checkpoint copying it as the new head; the {n} "
                        f"checkpoint{'s' if n != 1 else ''} after it stay as a branch:"
                    ),
                    plan.moved,
                )
            )
        else:
            parts.extend(
                _listing(
                    Text.assemble(
                        f"move {n} checkpoint{'s' if n != 1 else ''} after it to ",
                        safe(plan.archive_thread or "?", "bold", one_line=True),
                        ":",
                    ),
                    plan.moved,
                )
            )
    elif {"ours", "theirs", "merged"} <= fields:  # MergePlan
        theirs, ours = plan.theirs.metadata, plan.ours.metadata
        parts.append(
            Text.assemble(
                ("merge ", "bold"),
                safe(theirs.thread_id, "bold", one_line=True),
                " into ",
                safe(ours.thread_id, "bold", one_line=True),
                (f" (strategy {plan.strategy})", DIM),
            )
        )
        base = plan.base
        parts.append(
            Text.assemble(
                "  base:   ",
                safe(base.checkpoint_id, ID_STYLE, one_line=True)
                if base
                else Text("none (no common ancestor)", style="red"),
            )
        )
        parts.append(Text.assemble("  ours:   ", safe(ours.checkpoint_id, ID_STYLE, one_line=True)))
        parts.append(Text.assemble("  theirs: ", safe(theirs.checkpoint_id, ID_STYLE, one_line=True)))
        merged = plan.merged.metadata
        made_later = getattr(plan, "id_at_write", "")
        parts.append(
            Text.assemble(
                "  writes: ",
                Text(f"a new checkpoint ({made_later})")
                if made_later
                else safe(merged.checkpoint_id, ID_STYLE, one_line=True),
                (f" #{merged.step}", "cyan"),
            )
        )
        resolved = getattr(plan, "resolved", None) or []
        if resolved:
            parts.append(
                Text(f"{len(resolved)} conflict(s) settled by strategy {plan.strategy}:", style="yellow")
            )
            parts.append(conflicts_table(resolved))
        if plan.conflicts:
            parts.append(Text(f"{len(plan.conflicts)} conflict(s):", style="bold red"))
            parts.append(conflicts_table(plan.conflicts))
    elif {"delete", "keep_count"} <= fields:  # PrunePlan
        preview = getattr(plan, "delete_count", None)  # the History's preview holds the first rows only
        n = len(plan.delete) if preview is None else preview
        why = getattr(plan, "reason", "") or policy_text(plan.policy, plan.param)
        head = Text.assemble(
            ("prune ", "bold"), safe(plan.thread_id, "bold", one_line=True), (f" ({why}): ", DIM)
        )
        if n:
            head.append(f"delete {n}, keep {plan.keep_count}", style="bold red")
            parts.extend(
                _listing(head, plan.delete, "red", limit=PRUNE_LISTED, total=n, thread=plan.thread_id)
            )
            forks = getattr(plan, "forks_kept", 0)
            if forks:
                parts.append(
                    Text(
                        f"  kept: {forks} fork point{'s' if forks != 1 else ''} "
                        "(the parent of a branch, or of several checkpoints)",
                        style=DIM,
                    )
                )
            moved = getattr(plan, "reparent", None) or []
            for cid, _, new in moved[:5]:
                parts.append(
                    Text.assemble(
                        "  parent of ",
                        safe(cid, ID_STYLE, one_line=True),
                        " becomes ",
                        safe(new, ID_STYLE, one_line=True)
                        if new
                        else Text("none (a root: no ancestor of it stays)", style=DIM),
                    )
                )
            if len(moved) > 5:
                parts.append(Text(f"  … and {len(moved) - 5} more parents", style=DIM))
        else:
            head.append(f"nothing to delete, keep {plan.keep_count}", style=DIM)
            parts.append(head)
    else:
        parts.append(safe(repr(plan)))
    return Group(*parts)
