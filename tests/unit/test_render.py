"""The shared render layer: database text is shown inert, structures render readably."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from agentctl import render
from agentctl.model import CheckpointMetadata

EVIL = "\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example\x07click\x1b]8;;\x07 [bold red]loud[/bold red] [link=http://x.example]L[/link] over\rwrite \u202eevil"


def to_text(renderable: Any, *, terminal: bool = True) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=200,
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        legacy_windows=False,
    )
    console.print(renderable)
    return buf.getvalue()


def assert_inert(out: str) -> None:
    assert "\x1b[31mRED" not in out  # the data's own SGR sequence did not reach the terminal
    assert "\x1b]8;;http://evil" not in out and "\x07" not in out  # no OSC 8 hyperlink
    assert "\r" not in out and "\u202e" not in out
    assert "\x1b]8;" not in out  # and Rich made no link from [link=...]
    assert "\\e[31mRED\\e[0m" in out
    assert "[bold red]loud[/bold red]" in out and "[link=http://x.example]L[/link]" in out
    assert "over\\rwrite" in out and "\\u202eevil" in out


def meta(
    cid: str, step: int, parent: str | None = None, thread: str = "t", tags=None, summary=""
) -> CheckpointMetadata:
    return CheckpointMetadata(
        thread,
        cid,
        step,
        parent,
        f"2026-03-01T10:00:{step:02d}+00:00",
        tags or ["manual"],
        summary or f"step {step}",
    )


def test_transcript_and_metadata_are_inert():
    messages = [
        {"role": "user", "content": EVIL},
        {"role": "assistant", "content": "", "tool_calls": [{"name": EVIL, "arguments": {"q": EVIL}}]},
        {"role": EVIL, "name": EVIL, "content": [{"type": "text", "text": EVIL}]},
        "not a dict " + EVIL,
    ]
    for terminal in (True, False):
        out = to_text(render.transcript(messages), terminal=terminal)
        assert_inert(out)
    m = meta(EVIL, 3, parent=EVIL, thread=EVIL, tags=[EVIL], summary=EVIL)
    assert_inert(to_text(render.metadata_table(m, next_node=EVIL)))


def test_json_view_and_values_inert():
    value = {"k": EVIL, EVIL: [1, "\x85c1"]}
    out = to_text(render.json_view(value))
    assert "\x1b[31mRED" not in out and "\x1b]8;" not in out and "\u202e" not in out
    assert "\\u001b[31mRED" in out  # json.dumps escaped ESC itself
    assert "[bold red]loud[/bold red]" in out
    assert "\\x85c1" in out
    assert render.value_text("1").plain == '"1"' and render.value_text(1).plain == "1"


@dataclass
class Change:
    section: str
    path: str
    op: str
    old: Any
    new: Any


@dataclass
class Conflict:
    path: str
    base: Any
    ours: Any
    theirs: Any


def test_diff_and_conflict_tables():
    changes = [
        Change("state", "/files/a", "changed", 1, EVIL),
        Change("messages", "/3", "added", None, {"c": EVIL}),
    ]
    assert "\x1b[31mRED" not in to_text(render.diff_table(changes))
    out = to_text(render.diff_table(changes, value_width=200), terminal=False)
    assert "SECTION" in out and "changed" in out and "added" in out
    assert "files.a" in out and "[bold red]loud" in out and "\x1b" not in out
    assert "no differences" in to_text(render.diff_table([]))
    out = to_text(render.conflicts_table([Conflict("/x", 1, 2, EVIL)]), terminal=False)
    assert out.split()[:4] == ["PATH", "BASE", "OURS", "THEIRS"] and "\x1b[31m" not in out


def test_log_lines_graph_fork_and_merge():
    # main: m1 <- m2 <- m3(merge of b2); branch: b1 (parent m1) <- b2
    metas = [
        meta("m3", 3, "m2", tags=["merge", "merged:b2"]),
        meta("b2", 2, "b1", thread="b"),
        meta("b1", 1, "m1", thread="b"),
        meta("m2", 2, "m1"),
        meta("m1", 1),
    ]
    lines = [t.plain for t in render.log_lines(metas, graph=True, heads={"m3": ["t"]})]
    assert lines[0].startswith("* m3 (t) #3 [merge]")
    assert lines[1] == "├─┐"
    assert lines[2].startswith("│ * b2")
    assert lines[3].startswith("│ * b1")
    assert lines[4].startswith("* │ m2")
    assert lines[5] == "├─┘"
    assert lines[6].startswith("* m1")
    plain = [t.plain for t in render.log_lines(metas)]
    assert plain[0] == "m3 #3 [merge] step 3"  # merged:<id> tags are not repeated
    evil = render.log_lines([meta(EVIL, 1, summary=EVIL)], graph=True)
    out = to_text(evil[0])
    assert "\x1b[31mRED" not in out and "\\e[31m" in out


def test_graph_parent_listed_before_child_does_not_dangle():
    metas = [meta("a", 1), meta("b", 2, "a")]  # out of order: the lane must not stay open
    rows = render.graph_lines(metas)
    assert [p for p, _ in rows] == ["*", "*"]


TREE = {
    "thread_id": "t",
    "total_checkpoints": 4,
    "threads": [{"thread_id": "t", "parent_thread": None}, {"thread_id": "b", "parent_thread": "t"}],
    "nodes": [
        {
            "id": "m1",
            "thread_id": "t",
            "step": 1,
            "tags": [],
            "summary": "one",
            "created_at": "",
            "parent_id": None,
            "labels": ["root"],
        },
        {
            "id": "m2",
            "thread_id": "t",
            "step": 2,
            "tags": [],
            "summary": EVIL,
            "created_at": "",
            "parent_id": "m1",
            "labels": ["head", "merge"],
        },
        {
            "id": "b1",
            "thread_id": "b",
            "step": 0,
            "tags": [],
            "summary": "br",
            "created_at": "",
            "parent_id": "m1",
            "labels": [],
        },
        {
            "id": "b2",
            "thread_id": "b",
            "step": 1,
            "tags": [],
            "summary": "br2",
            "created_at": "",
            "parent_id": "b1",
            "labels": ["head"],
        },
    ],
    "edges": [
        {"from": "m1", "to": "m2", "kind": "parent"},
        {"from": "m1", "to": "b1", "kind": "branch"},
        {"from": "b1", "to": "b2", "kind": "parent"},
        {"from": "b2", "to": "m2", "kind": "merge"},
    ],
}


def test_tree_view_nests_branches_and_labels():
    tree = TREE
    out = to_text(render.tree_view(tree), terminal=False)
    lines = out.splitlines()
    i_m1 = next(i for i, line in enumerate(lines) if "m1 #1" in line)
    i_b = next(i for i, line in enumerate(lines) if "thread b" in line)
    i_m2 = next(i for i, line in enumerate(lines) if "m2 #2" in line)
    assert i_m1 < i_b < i_m2
    assert lines[i_b].index("thread b") > lines[i_m1].index("m1")  # nested under its branch point
    assert "← merged b2" in lines[i_m2] and "head" in lines[i_m2]
    assert "\x1b" not in out and "\\e[31m" in out


@dataclass
class RewindPlan:
    target: Any
    thread_id: str
    moved: list
    archive_thread: str | None
    hard: bool


@dataclass
class PrunePlan:
    thread_id: str
    policy: str
    param: Any
    delete: list = field(default_factory=list)
    keep_count: int = 0


def test_plan_text():
    moved = [meta(f"c{i}", i) for i in range(4, 30)]
    out = to_text(
        render.plan_text(RewindPlan(meta("c3", 3), "t", moved, "t-rewound-1", False)), terminal=False
    )
    assert "rewind t to c3 (step 3)" in out and "move 26 checkpoints after it to t-rewound-1" in out
    assert "… and 6 more" in out
    out = to_text(render.plan_text(RewindPlan(meta("c3", 3), "t", moved[:1], None, True)), terminal=False)
    assert "DELETE 1 checkpoint after it" in out
    out = to_text(render.plan_text(PrunePlan("t", "keep_last_n", 2, moved[:3], 2)), terminal=False)
    assert "delete 3, keep 2" in out


@dataclass
class Op:
    op_id: int
    created_at: str
    kind: str
    summary: str
    threads: list
    undone: bool
    undo_of: int | None = None
    purgeable_rows: int = 0


def test_op_and_threads_tables():
    out = to_text(
        render.op_table(
            [
                Op(2, "2026-01-01T00:00:00", "rewind", EVIL, ["t"], False),
                Op(1, "2026-01-01T00:00:00", "branch", "b", ["t"], True),
            ]
        ),
        terminal=False,
    )
    assert "undone" in out and "done" in out and "\x1b" not in out

    @dataclass
    class S:
        thread_id: str
        checkpoints: int = 3
        head_step: int = 2
        updated_at: str = "2026-01-01T00:00:00+00:00"
        branch_of: str | None = None
        head_summary: str = EVIL

        def extra_columns(self):
            return [("TITLE", EVIL)]

    out = to_text(render.threads_table([S(EVIL)]))
    assert "\x1b[31mRED" not in out and "\\e[31m" in out


def test_piped_lines_are_what_rich_prints():
    """agentctl.lines gives piped output the text Rich draws for the same log and tree."""
    from agentctl import lines

    metas = [
        meta("m3", 3, "m2", tags=["merge", "merged:b2"]),
        meta("b2", 2, "b1", thread="b"),
        meta("b1", 1, "m1", thread="b"),
        meta("m2", 2, "m1", summary=EVIL),
        meta("m1", 1),
    ]
    for graph in (False, True):
        rows = lines.log_lines(metas, graph=graph, heads={"m3": ["t", EVIL]}, summary_width=None)
        assert [lines.plain(r) for r in rows] == [
            t.plain
            for t in render.log_lines(metas, graph=graph, heads={"m3": ["t", EVIL]}, summary_width=None)
        ]
    drawn = to_text(render.tree_view(TREE), terminal=False).splitlines()
    assert lines.tree_nodes(TREE).lines() == [line.rstrip() for line in drawn]
    assert "\x1b" not in "".join(lines.tree_nodes(TREE).lines())
