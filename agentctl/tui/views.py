"""The detail pane's tabs' renderables (Messages, State, Tools, Diff) of a checkpoint,
from agentctl.render (the layer the CLI uses too). The app makes them on a thread (a big
checkpoint takes a while) and caps what they show: rendering 5 MB of JSON would freeze
the screen for half a minute. Imported when the first checkpoint is shown.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.highlighter import JSONHighlighter
from rich.text import Text

from agentctl import render
from agentctl.diff import own_state
from agentctl.model import Checkpoint
from agentctl.text import inert

# What a tab shows at most; the CLI (`agentctl show REF --json`) prints everything.
MAX_JSON_CHARS = 60_000
MAX_MESSAGES = 200
MAX_MESSAGE_CHARS = 60_000
MAX_CHANGES = 300

_CLI_HINT = "agentctl show REF --json prints all of it"


def _note(text: str) -> Text:
    return Text(text, style="italic yellow")


def json_preview(value: Any) -> RenderableType:
    """render.json_view, or for a value whose JSON is longer than MAX_JSON_CHARS its
    first MAX_JSON_CHARS characters, highlighted the same way, and a note.

    (render.json_view has no size limit; this could move there as a `limit` argument.)
    """
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) <= MAX_JSON_CHARS:
        return render.json_view(value)
    cut = text[:MAX_JSON_CHARS]
    cut = cut[: cut.rfind("\n") + 1] or cut
    shown = JSONHighlighter()(Text(inert(cut)))
    return Group(
        _note(f"{len(text):,} characters of JSON; the first {len(cut):,} shown ({_CLI_HINT})"),
        shown,
        _note("… (cut)"),
    )


def transcript_preview(messages: Any) -> RenderableType:
    """render.transcript of the last messages that fit in MAX_MESSAGES and
    MAX_MESSAGE_CHARS (a long run's later messages matter most), with a note.

    (The message numbers restart at [0] for the messages shown; the note says where
    they start.)
    """
    if not isinstance(messages, list) or not messages:
        return render.transcript(messages)
    start, size = len(messages), 0
    while start > 0 and len(messages) - start < MAX_MESSAGES:
        add = len(json.dumps(messages[start - 1], ensure_ascii=False, default=str))
        if size + add > MAX_MESSAGE_CHARS:
            break
        size += add
        start -= 1
    if start == 0:
        return render.transcript(messages)
    if start == len(messages):  # one message larger than the limit: its JSON, cut
        return Group(
            _note(f"{len(messages)} messages; the last is too large for this view ({_CLI_HINT})"),
            json_preview(messages[-1]),
        )
    return Group(
        _note(
            f"{len(messages)} messages; the last {len(messages) - start} shown, "
            f"[0] below is message {start} ({_CLI_HINT})"
        ),
        render.transcript(messages[start:]),
    )


def build_views(
    cp: Checkpoint, base: Checkpoint | None, base_kind: str, changes: list[Any], error: str = ""
) -> dict[str, RenderableType]:
    """The renderables of the four tabs (pure: safe to run on a thread)."""
    shown = changes[:MAX_CHANGES]
    diff: RenderableType = diff_heading(cp, base, base_kind, changes, error)
    if shown:
        parts: list[RenderableType] = [diff, Text(""), render.diff_table(shown, fit=True)]
        if len(changes) > len(shown):
            parts.append(_note(f"… and {len(changes) - len(shown)} more changes (agentctl diff lists all)"))
        diff = Group(*parts)
    return {
        "messages": transcript_preview(cp.messages) if cp.messages else Text("no messages", style="italic"),
        "state": json_preview(own_state(cp.state)),
        "tools": json_preview(cp.tools_result)
        if cp.tools_result
        else Text("no tool results", style="italic"),
        "diff": diff,
    }


def diff_heading(
    cp: Checkpoint, base: Checkpoint | None, base_kind: str, changes: list[Any], error: str
) -> Text:
    text = Text()
    if base is None:
        text.append(error or "no parent to compare with (a root checkpoint)", style="italic")
        text.append("\nmark a checkpoint with m to diff against it, in any thread", style="dim")
        return text
    b = base.metadata
    text.append(
        "marked " if base_kind == "mark" else "parent ",
        style="bold yellow" if base_kind == "mark" else "bold",
    )
    text.append(f"{inert(b.thread_id, one_line=True)}@{b.step} ({inert(b.checkpoint_id, one_line=True)})")
    text.append("  →  ", style="dim")
    text.append(f"{inert(cp.metadata.thread_id, one_line=True)}@{cp.metadata.step}")
    n = len(changes)
    text.append(
        f"\n{n} change{'s' if n != 1 else ''}" if n else "\nno differences", style="bold" if n else "italic"
    )
    if n:
        counts: dict[str, int] = {}
        for c in changes:
            counts[c.section] = counts.get(c.section, 0) + 1
        text.append("  " + ", ".join(f"{s}: {k}" for s, k in counts.items()), style="dim")
    return text
