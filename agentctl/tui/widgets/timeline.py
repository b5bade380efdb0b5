"""The checkpoint tree of a thread: its timeline, a page at a time, with its branches
as expandable nodes under the checkpoints they fork from (loaded when opened)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from agentctl.lines import Row, fork_lines
from agentctl.model import CheckpointMetadata
from agentctl.text import inert, shorten


@dataclass
class CheckpointItem:
    meta: CheckpointMetadata
    labels: tuple[str, ...] = ()


@dataclass
class BranchItem:
    """A branch thread forked at a checkpoint; its rows load when it is expanded."""

    thread_id: str
    first: CheckpointMetadata
    loaded: bool = False


@dataclass
class ForkItem:
    """A line of checkpoints forking from the one it hangs under, not on the head's
    line (a LangGraph replay or edit from an old checkpoint, a rewind's abandoned run)."""

    count: int


@dataclass
class OlderItem:
    """Stands for the checkpoints before the loaded ones; selecting it loads a page."""

    thread_id: str
    offset: int  # how many rows (from the head) are loaded already
    remaining: int


@dataclass
class ThreadState:
    """What a container node (the root, or a branch) shows of its thread."""

    thread_id: str
    total: int = 0
    loaded: int = 0
    ids: set[str] = field(default_factory=set)
    metas: list[CheckpointMetadata] = field(default_factory=list)  # loaded, oldest first


#: a branch (a branch point, a thread branched off another): a glyph the usual monospace
#: fonts have (DejaVu Sans Mono, Menlo, ...), since a browser under `agentctl serve`
#: falls back to them (textual-serve's Roboto Mono has none of these); "⑂" was tofu there
BRANCH_GLYPH = "↳"

# Tags worth a label of their own; the rest show as plain tags.
_GLYPHS = {
    "head": ("◉", "bold green"),
    "merge": ("◆", "bold cyan"),
    "branch-point": (BRANCH_GLYPH, "bold magenta"),
    "root": ("○", "dim"),
}


def checkpoint_label(meta: CheckpointMetadata, labels: tuple[str, ...] = (), marked: bool = False) -> Text:
    """One line for a checkpoint in the tree: step, marker, summary, tags, labels.

    (A one-line tree label; render.log_lines makes multi-column log lines.)
    """
    glyph, style = "●", "blue"
    for label in ("head", "merge", "branch-point", "root"):
        if label in labels:
            glyph, style = _GLYPHS[label]
            break
    text = Text()
    text.append(f"{meta.step:>4} ", style="bold")
    text.append(glyph + " ", style=style)
    if marked:
        text.append("★ ", style="bold yellow")
    tags = [t for t in meta.tags if not t.startswith(("branch:", "merged:"))]
    if meta.summary:
        text.append(shorten(meta.summary, 60))
        if tags:
            text.append("  " + shorten(",".join(tags), 30), style="dim")
    else:  # the tags say what it is (LangGraph's source: loop, input), else its id
        text.append(shorten(",".join(tags), 30) if tags else shorten(meta.checkpoint_id, 60))
    for label in labels:
        if label in ("head", "branch-point", "merge"):
            text.append(f" [{label}]", style=_GLYPHS[label][1])
    return text


def branch_label(item: BranchItem) -> Text:
    text = Text()
    text.append(f"{BRANCH_GLYPH} ", style="bold magenta")
    text.append(inert(item.thread_id, one_line=True), style="magenta")
    return text


def fork_label(item: ForkItem) -> Text:
    return Text(
        f"fork ({item.count} checkpoint{'s' if item.count != 1 else ''}, not on the head's line)", style="dim"
    )


def older_label(item: OlderItem) -> Text:
    return Text(
        f"▲ {item.remaining} earlier checkpoint{'s' if item.remaining != 1 else ''} (enter to load)",
        style="italic dim",
    )


class CheckpointTree(Tree[object]):
    """A thread's checkpoints in step order; the newest page first loaded."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(Text("no thread selected", style="italic"), **kwargs)
        self.show_root = True
        self.guide_depth = 3
        self.thread_id: str | None = None
        self.origin: CheckpointMetadata | None = None
        self.states: dict[int, ThreadState] = {}
        self.branches: dict[str, list[CheckpointMetadata]] = {}
        self.marked: str | None = None
        # Bumped whenever the tree is rebuilt: a page loaded for an older tree is dropped.
        self.generation = 0
        self._by_id: dict[str, TreeNode[object]] = {}

    # ---- filling --------------------------------------------------------------------

    def set_message(self, text: str) -> None:
        self.generation += 1
        self.clear()
        self.thread_id = None
        self.states.clear()
        self._by_id.clear()
        self.root.set_label(Text(text, style="italic"))

    def show_thread(
        self,
        thread_id: str,
        metas: list[CheckpointMetadata],
        total: int,
        origin: CheckpointMetadata | None = None,
    ) -> None:
        """Replace the tree with the newest page of a thread."""
        self.generation += 1
        self.clear()
        self._by_id.clear()
        self.states.clear()
        self.branches = {}
        self.thread_id = thread_id
        self.origin = origin
        self.root.set_label(self._root_label(thread_id, total, origin))
        self.root.data = None
        self.states[self.root.id] = ThreadState(thread_id, total)
        self.add_page(self.root, metas, offset=0, total=total)
        self.root.expand()

    @staticmethod
    def _root_label(thread_id: str, total: int, origin: CheckpointMetadata | None) -> Text:
        label = Text(inert(thread_id, one_line=True), style="bold")
        label.append(f"  {total} checkpoint{'s' if total != 1 else ''}", style="dim")
        if origin is not None:
            label.append(
                f"  {BRANCH_GLYPH} from {inert(origin.thread_id, one_line=True)}@{origin.step}",
                style="magenta",
            )
        return label

    def add_page(
        self, node: TreeNode[object], metas: list[CheckpointMetadata], offset: int, total: int
    ) -> None:
        """Put a page (oldest first, counted `offset` rows back from the head) into a
        container node, above what it already shows."""
        state = self.states.setdefault(node.id, ThreadState(metas[0].thread_id if metas else "", total))
        state.total = total
        new = [m for m in metas if m.checkpoint_id not in state.ids]
        state.metas = new + state.metas
        state.ids.update(m.checkpoint_id for m in new)
        state.loaded = offset + len(metas)
        self._lay_out(node, state)

    def _lay_out(self, node: TreeNode[object], state: ThreadState) -> None:
        """(Re)draw a container's loaded checkpoints as `tree` draws a thread: the head's
        line in order, each fork hanging under the checkpoint it forks from
        (lines.fork_lines), its branches under their branch points; the "earlier" node
        on top while rows remain."""
        for c in list(node.children):
            for n, cid in self._checkpoints_under(c):
                if self._by_id.get(cid) is n:
                    del self._by_id[cid]
            c.remove()
        metas = state.metas
        listed, forks = fork_lines(
            [Row(m.checkpoint_id, m.parent_checkpoint_id, m.step, m.tags) for m in metas]
        )
        remaining = state.total - state.loaded
        if remaining > 0:
            item = OlderItem(state.thread_id, state.loaded, remaining)
            node.add(older_label(item), item, allow_expand=False)
        head = len(metas) - 1  # the first page loaded is the newest: its last row is the head

        def add(under: TreeNode[object], k: int) -> None:
            meta = metas[k]
            labels = self._labels(meta, is_head=(k == head), forks=bool(forks.get(k)))
            child = under.add(
                checkpoint_label(meta, labels, meta.checkpoint_id == self.marked),
                CheckpointItem(meta, labels),
                allow_expand=False,
            )
            self._by_id.setdefault(meta.checkpoint_id, child)
            self._attach_branches(child)
            for chain in forks.get(k, []):
                fork = ForkItem(len(chain))
                child.allow_expand = True
                inner = child.add(fork_label(fork), fork, allow_expand=True, expand=True)
                for j in chain:
                    add(inner, j)
            if forks.get(k):
                child.expand()

        for k in listed:
            add(node, k)

    @staticmethod
    def _checkpoints_under(node: TreeNode[object]) -> list[tuple[TreeNode[object], str]]:
        """The checkpoint nodes of a subtree (itself included), with their ids."""
        out: list[tuple[TreeNode[object], str]] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n.data, CheckpointItem):
                out.append((n, n.data.meta.checkpoint_id))
            stack.extend(n.children)
        return out

    def head_id(self) -> str | None:
        for child in reversed(self.root.children):
            if isinstance(child.data, CheckpointItem):
                return child.data.meta.checkpoint_id
        return None

    def append_new(self, metas: list[CheckpointMetadata], total: int) -> bool:
        """Add the checkpoints written after the shown head (follow mode) at the bottom,
        given the newest page. False when that is not possible (the head is not in the
        page, or rows went away): the caller reloads the thread."""
        state = self.states.get(self.root.id)
        head = self.head_id()
        ids = [m.checkpoint_id for m in metas]
        if state is None or head is None or head not in ids:
            return False
        metas = metas[ids.index(head) + 1 :]
        if total != state.total + len(metas):
            return False
        if not metas:
            return True
        prev = head
        for meta in metas:  # a fork (an edit or run from an earlier checkpoint): drawn again
            if meta.parent_checkpoint_id != prev:
                return False
            prev = meta.checkpoint_id
        for child in self.root.children:
            item = child.data
            if isinstance(item, CheckpointItem) and "head" in item.labels:
                labels = tuple(x for x in item.labels if x != "head")
                child.data = CheckpointItem(item.meta, labels)
                child.set_label(checkpoint_label(item.meta, labels, item.meta.checkpoint_id == self.marked))
        for meta in metas:
            if meta.checkpoint_id in state.ids:
                continue
            labels = self._labels(meta, is_head=meta is metas[-1])
            child = self.root.add(
                checkpoint_label(meta, labels, meta.checkpoint_id == self.marked),
                CheckpointItem(meta, labels),
                allow_expand=False,
            )
            state.ids.add(meta.checkpoint_id)
            state.metas.append(meta)
            state.loaded += 1
            self._by_id.setdefault(meta.checkpoint_id, child)
        state.total = total
        self.root.set_label(self._root_label(state.thread_id, total, self.origin))
        return True

    def set_branches(self, branches: dict[str, list[CheckpointMetadata]]) -> None:
        """Mark the branch points of a shown thread and hang their branches on them."""
        self.branches.update(branches)
        for cid in branches:
            node = self._by_id.get(cid)
            if node is not None:
                self._attach_branches(node)

    def _labels(self, meta: CheckpointMetadata, is_head: bool, forks: bool = False) -> tuple[str, ...]:
        labels = []
        if is_head:
            labels.append("head")
        if not meta.parent_checkpoint_id:
            labels.append("root")
        if meta.checkpoint_id in self.branches or forks:
            labels.append("branch-point")
        if "merge" in meta.tags:
            labels.append("merge")
        return tuple(labels)

    def _attach_branches(self, node: TreeNode[object]) -> None:
        item = node.data
        if not isinstance(item, CheckpointItem):
            return
        firsts = self.branches.get(item.meta.checkpoint_id, [])
        if not firsts:
            return
        have = {c.data.thread_id for c in node.children if isinstance(c.data, BranchItem)}
        for first in firsts:
            if first.thread_id in have:
                continue
            branch = BranchItem(first.thread_id, first)
            node.add(branch_label(branch), branch, allow_expand=True)
        node.allow_expand = True
        if "branch-point" not in item.labels:
            item.labels = item.labels + ("branch-point",)
            node.set_label(checkpoint_label(item.meta, item.labels, item.meta.checkpoint_id == self.marked))

    # ---- queries --------------------------------------------------------------------

    def holds(self, node: TreeNode[object], generation: int) -> bool:
        """Whether `node` is still part of this tree as it was in `generation`."""
        if generation != self.generation:
            return False
        while node.parent is not None:
            if node not in node.parent.children:
                return False
            node = node.parent
        return node is self.root

    def node_for(self, checkpoint_id: str) -> TreeNode[object] | None:
        return self._by_id.get(checkpoint_id)

    def select_checkpoint(self, checkpoint_id: str) -> bool:
        node = self._by_id.get(checkpoint_id)
        if node is None:
            return False
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        self.move_to_node(node)
        return True

    def move_to_node(self, node: TreeNode[object]) -> None:
        # Node line numbers are computed lazily; reading last_line computes them so the
        # cursor lands on a node added in this same message.
        _ = self.last_line
        self.move_cursor(node, animate=False)

    def select_head(self) -> None:
        for child in reversed(self.root.children):
            if isinstance(child.data, CheckpointItem):
                self.move_to_node(child)
                return

    def is_at_head(self) -> bool:
        node = self.cursor_node
        return (
            node is not None
            and isinstance(node.data, CheckpointItem)
            and "head" in node.data.labels
            and node.parent is self.root
        )

    def set_marked(self, checkpoint_id: str | None) -> None:
        """Show the ★ on the marked checkpoint (and take it off the previous one)."""
        for cid in {self.marked, checkpoint_id} - {None}:
            node = self._by_id.get(cid)  # type: ignore[arg-type]
            if node is not None and isinstance(node.data, CheckpointItem):
                node.set_label(checkpoint_label(node.data.meta, node.data.labels, cid == checkpoint_id))
        self.marked = checkpoint_id
