"""The layout of log lines and checkpoint trees as styled segments, without Rich.

`agentctl.render` turns the segments into Rich Text for a terminal; piped output joins
their text as it is, without importing or running Rich (10,000 log lines take about
0.4 s as Rich Text, 0.03 s as strings). One layout for both, so they cannot drift.
Every text from the database is passed through `agentctl.text.inert` here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from agentctl.text import inert, inert_all, shorten, shorten_all

Segment = tuple[str, str]  # (text, Rich style)

ID_STYLE = "yellow"
DIM = "dim"
LABEL_STYLES = {
    "head": "bold green",
    "root": "dim",
    "branch-point": "magenta",
    "merge": "bold magenta",
    "abandoned": "red",
    "orphan": "bold red",
}
# Rich's tree guides (unicode, not bold): space, continue, fork, end.
TREE_GUIDES = ("    ", "│   ", "├── ", "└── ")


def seg(value: Any, style: str = "") -> Segment:
    """A segment of `value` shown literally, on one line."""
    s = "" if value is None else (value if isinstance(value, str) else str(value))
    return inert(s, one_line=True), style


def plain(segments: Sequence[Segment]) -> str:
    return "".join(text for text, _ in segments)


# ---- log lines ------------------------------------------------------------------------


def merge_parents(meta: Any) -> list[str]:
    """The checkpoints a merge checkpoint merged in, from its `merged:<id>` tags."""
    return [
        t[len("merged:") :]
        for t in (meta.tags or [])
        if isinstance(t, str) and t.startswith("merged:") and len(t) > len("merged:")
    ]


def tag_segments(tags: Sequence[Any]) -> list[Segment]:
    out: list[Segment] = []
    for i, t in enumerate(tags):
        if i:
            out.append((", ", ""))
        out.append(seg(t, "cyan"))
    return out


def log_line(meta: Any, decorations: Sequence[str], summary_width: int | None) -> list[Segment]:
    """id (decorations) #step [tags] summary."""
    return _log_rows([meta], {meta.checkpoint_id: decorations} if decorations else {}, summary_width)[0]


def _shown(values: list[Any]) -> list[str]:
    """[seg(v)[0] for v in values], in one scan when they are all str."""
    try:
        return inert_all(values, one_line=True)
    except TypeError:  # a value that is not a str (None, a number)
        return [seg(v)[0] for v in values]


def _per_distinct(make: Any) -> Any:
    """`make(values)` (a list of segments for a list of tags or labels) computed once
    per distinct list: thousands of lines share a handful of them."""
    made: dict[tuple[Any, ...], list[Segment]] = {}

    def get(values: Sequence[Any]) -> list[Segment]:
        try:
            key = tuple(values)
            out = made.get(key)
            if out is None:
                out = made[key] = make(values)
            return out
        except TypeError:  # a value that cannot be a key
            return make(values)

    return get


def _log_rows(
    metas: Sequence[Any], heads: Mapping[str, Sequence[str]], summary_width: int | None
) -> list[list[Segment]]:
    """The log line of each checkpoint, with what the lines share worked out once: the
    ids and summaries escaped in one pass, the segments of each distinct list of tags.
    The same segments as laying out each line on its own."""
    ids = _shown([m.checkpoint_id for m in metas])
    if summary_width:
        summaries = [shorten(s, summary_width) if s else None for s in [m.summary or "" for m in metas]]
    else:
        summaries = [s or None for s in _shown([m.summary or "" for m in metas])]

    @_per_distinct
    def tags_tail(all_tags: Sequence[Any]) -> list[Segment]:
        tags = [t for t in all_tags if not str(t).startswith(("merged:", "branch:"))]
        return [(" [", ""), *tag_segments(tags), ("]", "")] if tags else []

    rows = []
    for meta, cid, summary in zip(metas, ids, summaries, strict=False):
        out = [(cid, ID_STYLE)]
        decorations = heads.get(meta.checkpoint_id) if heads else None
        if decorations:
            out.append((" (", ""))
            for i, d in enumerate(decorations):
                if i:
                    out.append((", ", ""))
                out.append(seg(d, "bold green"))
            out.append((")", ""))
        step = meta.step
        out.append((f" #{step}", "cyan") if type(step) is int else seg(f" #{step}", "cyan"))
        all_tags = meta.tags
        if all_tags:
            out += tags_tail(all_tags)
        if summary is not None:
            out.append((" " + summary, ""))
        rows.append(out)
    return rows


def plain_text(rows: Sequence[Sequence[Segment]]) -> str:
    """Lines of segments as the text written when piped: each line rstripped."""
    return "".join(["".join([text for text, _ in row]).rstrip() + "\n" for row in rows])


def graph_lines(metas: Sequence[Any]) -> list[tuple[str, Any | None]]:
    """Lay out checkpoints (newest first) as a commit graph, git-style.

    Returns rows of (graph prefix, meta or None): a row with a meta draws the
    checkpoint ("*" in its lane); rows without one draw lanes forking ("┘") or a merge
    bringing in another parent ("┐"). A lane waits for the parent of the checkpoint
    above it; parents not in `metas` end their lane.
    """
    present = {m.checkpoint_id for m in metas}
    lanes: list[str | None] = []
    rows: list[tuple[str, Any | None]] = []
    drawn: set[str] = set()

    def prefix(marks: dict[int, str], width: int) -> str:
        cells = []
        for i in range(width):
            if i in marks:
                cells.append(marks[i])
            else:
                cells.append("│" if i < len(lanes) and lanes[i] is not None else " ")
        return " ".join(cells).rstrip()

    def connector(low: int, high: int, end: str) -> str:
        # "├─┘" / "├─┐" between two lanes; lanes crossed in between show "┼".
        cells = []
        for i in range(max(len(lanes), high + 1)):
            if i == low:
                cells.append("├")
            elif i == high:
                cells.append(end)
            elif low < i < high:
                cells.append("┼" if i < len(lanes) and lanes[i] is not None else "─")
            else:
                cells.append("│" if i < len(lanes) and lanes[i] is not None else " ")
        out = ""
        for i, cell in enumerate(cells):
            if i:
                out += "─" if low <= i - 1 < high else " "
            out += cell
        return out.rstrip()

    for meta in metas:
        cid = meta.checkpoint_id
        waiting = [i for i, lane in enumerate(lanes) if lane == cid]
        if waiting:
            col = waiting[0]
        else:
            col = lanes.index(None) if None in lanes else len(lanes)
            if col == len(lanes):
                lanes.append(None)
        # Other lanes that waited for this checkpoint join it: they forked off here.
        for j in reversed(waiting[1:]):
            rows.append((connector(col, j, "┘"), None))
            lanes[j] = None
        rows.append((prefix({col: "*"}, len(lanes)), meta))
        drawn.add(cid)
        parent = meta.parent_checkpoint_id
        lanes[col] = parent if parent in present and parent not in drawn else None
        for other in merge_parents(meta):
            if other not in present or other in drawn or other in lanes:
                continue
            slot = next((i for i, lane in enumerate(lanes) if lane is None and i > col), None)
            if slot is None:
                lanes.append(None)
                slot = len(lanes) - 1
            lanes[slot] = other
            rows.append((connector(col, slot, "┐"), None))
        while lanes and lanes[-1] is None:
            lanes.pop()
    return rows


def log_lines(
    metas: Sequence[Any],
    graph: bool = False,
    *,
    heads: Mapping[str, Sequence[str]] | None = None,
    summary_width: int | None = 80,
) -> list[list[Segment]]:
    """One line per checkpoint, newest first as given: id, (decorations), #step, [tags],
    summary. `heads` maps checkpoint ids to names shown as decorations (e.g. the thread
    whose head it is). With `graph`, a lane graph of forks and merges is drawn on the
    left (the checkpoints must be in child-before-parent order)."""
    rows = _log_rows(metas, heads or {}, summary_width)
    if not graph:
        return rows
    row_of = {id(m): row for m, row in zip(metas, rows, strict=False)}
    out = []
    for pre, meta in graph_lines(metas):
        row = [(pre, "magenta")]
        if meta is not None:
            row.append((" ", ""))
            row += row_of[id(meta)]
        out.append(row)
    return out


# ---- the checkpoint tree ----------------------------------------------------------------


class Node:
    """A line of the tree (its segments) and the nodes under it."""

    __slots__ = ("label", "children")

    def __init__(self, label: list[Segment]):
        self.label = label
        self.children: list[Node] = []

    def add(self, label: list[Segment]) -> Node:
        node = Node(label)
        self.children.append(node)
        return node

    def lines(self) -> list[str]:
        """The tree as text, drawn as Rich draws a Tree (one-line labels)."""
        out: list[str] = []
        append = out.append
        space, cont, fork, end = TREE_GUIDES
        # (node, guide before its line, guide before its children's)
        stack: list[tuple[Node, str, str]] = [(self, "", "")]
        while stack:
            node, first, inner = stack.pop()
            append((first + "".join([text for text, _ in node.label])).rstrip())
            children = node.children
            if children:  # pushed last first: the first child is drawn next
                stack.append((children[-1], inner + end, inner + space))
                first, inner = inner + fork, inner + cont
                stack.extend([(child, first, inner) for child in children[-2::-1]])
        return out


class Row(NamedTuple):
    """What `fork_lines` needs of a checkpoint."""

    id: str
    parent_id: str | None
    step: Any
    tags: Any


def fork_lines(rows: Sequence[Row]) -> tuple[list[int], dict[int, list[list[int]]]]:
    """The forks inside one thread's rows (oldest first; a LangGraph thread replayed
    from an old checkpoint, rewound, edited at an earlier step): (the rows listed in
    order at the top: the head's line of parents and rows whose parent is not among
    them; {row: the fork lines hanging under it, each the rows of a line in order, whose
    own forks are in the same dict}). The head is the last row. A rewind's target (the
    checkpoint a fork copy copies) stays on the head's line. `tree`, `log --graph` and
    the TUI's list draw this one layout."""
    at = {r.id: i for i, r in enumerate(rows)}
    kids: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r.parent_id in at and r.parent_id != r.id:
            kids.setdefault(r.parent_id, []).append(i)
    top: set[int] = {i for i, r in enumerate(rows) if r.parent_id not in at}
    cur = len(rows) - 1 if rows else None
    while cur is not None and cur not in top:
        top.add(cur)
        pid = rows[cur].parent_id
        copied = _copied(rows, cur, kids.get(pid, []) if pid is not None else [])
        if copied is not None:
            top.add(copied)
        cur = at.get(pid) if pid is not None else None
    done: set[int] = set()
    forks: dict[int, list[list[int]]] = {}

    def place(i: int) -> None:
        done.add(i)
        for k in kids.get(rows[i].id, []):
            if k not in top and k not in done:
                chain = [k]
                while True:  # the fork's line: each row's first child not yet placed
                    nxt = [
                        j
                        for j in kids.get(rows[chain[-1]].id, [])
                        if j not in top and j not in done and j not in chain
                    ]
                    if not nxt:
                        break
                    chain.append(nxt[0])
                forks.setdefault(i, []).append(chain)
                done.update(chain)
                for j in chain:
                    done.discard(j)
                    place(j)

    listed: list[int] = []
    for i in range(len(rows)):
        if i in top and i not in done:
            place(i)
            listed.append(i)
    for i in range(len(rows)):  # rows no parent link reaches (a cycle of parents)
        if i not in done:
            place(i)
            listed.append(i)
    return listed, forks


def _copied(rows: Sequence[Row], i: int, siblings: Sequence[int]) -> int | None:
    """Of a fork copy (LangGraph's `source` "fork" one step after the checkpoint it
    copies and a sibling of it: agentctl's rewind, `update_state(..., as_node="__copy__")`),
    the checkpoint it copies: the newest older sibling one step before it. It stays on
    the head's line (the rewind's target, where the abandoned line forks), not inside
    that fork."""
    r = rows[i]
    if "fork" not in (r.tags or ()) or type(r.step) is not int:
        return None
    older = [k for k in siblings if k != i and rows[k].step == r.step - 1 and str(rows[k].id) < str(r.id)]
    return max(older, key=lambda k: str(rows[k].id)) if older else None


def tree_nodes(tree: Mapping[str, Any], summary_width: int = 60) -> Node:
    """The DAG of `get_checkpoint_tree` as a tree: each thread's checkpoints in order, a
    branch nested under its branch point, merges and labels marked."""
    nodes = list(tree.get("nodes") or [])
    edges = list(tree.get("edges") or [])
    root = Node(
        [
            ("tree of ", DIM),
            seg(tree.get("thread_id", ""), "bold"),
            (f"  ({tree.get('total_checkpoints', len(nodes))} checkpoints)", DIM),
        ]
    )
    by_id = {n["id"]: n for n in nodes}
    by_thread: dict[str, list[int]] = {}  # the nodes of each thread, by index
    for i, n in enumerate(nodes):
        by_thread.setdefault(n["thread_id"], []).append(i)
    # Branch edges: the first node of a thread hangs under a node of another thread.
    branch_children: dict[str, list[str]] = {}
    merged_from: dict[str, list[str]] = {}
    child_threads: set[str] = set()
    for e in edges:
        if e.get("kind") == "branch" and e.get("to") in by_id and e.get("from") in by_id:
            thread = by_id[e["to"]]["thread_id"]
            if thread not in child_threads and by_id[e["from"]]["thread_id"] != thread:
                branch_children.setdefault(e["from"], []).append(thread)
                child_threads.add(thread)
        elif e.get("kind") == "merge":
            merged_from.setdefault(e.get("to"), []).append(e.get("from"))

    # What the node lines share, worked out once: the ids and summaries escaped in one
    # pass, the segments of each distinct list of labels.
    ids = _shown([n["id"] for n in nodes])
    summaries = shorten_all([n.get("summary") or "" for n in nodes], summary_width)

    @_per_distinct
    def labels_tail(labels: Sequence[Any]) -> list[Segment]:
        out: list[Segment] = []
        for label in labels:
            out.append((" ", ""))
            out.append(seg(label, LABEL_STYLES.get(label, "bold")))
        return out

    def node_label(i: int, n: Mapping[str, Any]) -> list[Segment]:
        step = n.get("step")
        line = [(ids[i], ID_STYLE), (f" #{step}", "cyan") if type(step) is int else seg(f" #{step}", "cyan")]
        labels = n.get("labels")
        if labels:
            line += labels_tail(labels)
        if n.get("summary"):
            line.append((" " + summaries[i], ""))
        if merged_from:
            for src in merged_from.get(n["id"], []):
                line.append(("  ← merged ", "magenta"))
                line.append(seg(src, ID_STYLE))
        return line

    seen: set[str] = set()

    def add_thread(parent: Node, thread: str) -> None:
        if thread in seen:
            return
        seen.add(thread)
        branch = parent.add([("thread ", DIM), seg(thread, "bold")])
        rows = by_thread.get(thread, [])
        # Forks inside the thread: the head's line of parents (and rows whose parent is
        # outside the thread) are listed in order; any other row hangs, with the line
        # that continues it, under the checkpoint it forks from.
        listed, forks = fork_lines(
            [
                Row(nodes[i]["id"], nodes[i].get("parent_id"), nodes[i].get("step"), nodes[i].get("tags"))
                for i in rows
            ]
        )

        def add_row(under: Node, k: int) -> None:
            i = rows[k]
            n = nodes[i]
            leaf = under.add(node_label(i, n))
            for child in branch_children.get(n["id"], []):
                add_thread(leaf, child)
            for chain in forks.get(k, []):
                fork = leaf.add(
                    [
                        ("fork ", DIM),
                        (f"({len(chain)} checkpoint{'s' * (len(chain) != 1)}, not on the head's line)", DIM),
                    ]
                )
                for j in chain:
                    add_row(fork, j)

        for k in listed:
            add_row(branch, k)

    # "threads" lists ids or {thread_id, parent_thread, ...} records
    listed = [t if isinstance(t, str) else t.get("thread_id") for t in (tree.get("threads") or [])]
    ordered = [t for t in listed if t in by_thread]
    ordered += [t for t in by_thread if t not in ordered]
    main = tree.get("thread_id")
    for thread in ([main] if main in by_thread else []) + ordered:
        if thread not in child_threads or thread == main:
            add_thread(root, thread)
    for thread in ordered:  # branches whose branch point is not shown
        add_thread(root, thread)
    return root
