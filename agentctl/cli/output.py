"""Writing results: JSON or plain text when piped, Rich on a terminal.

stdout carries data only; messages, prompts and progress go to stderr. Text from the
database is always passed through `agentctl.text.inert` (and, on a terminal, put in
Rich Text objects by `agentctl.render`, so markup in it is never interpreted).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from agentctl.text import inert, json_text

if TYPE_CHECKING:
    from rich.console import Console

_state: dict[str, Any] = {"no_color": False, "pager": False}


def set_no_color(flag: bool) -> None:
    _state["no_color"] = flag or bool(os.environ.get("NO_COLOR"))


def set_pager(flag: bool) -> None:
    _state["pager"] = flag


# Environment variables with which Rich decides "terminal" for a pipe (or not for a TTY).
_RICH_TTY_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def stdout_is_tty() -> bool:
    """Whether stdout is a terminal, as Rich decides it (so FORCE_COLOR / TTY_COMPATIBLE
    force the terminal layout when piping). Without those variables it is isatty(), and
    Rich is not imported: piped output (TSV, JSON) does not pay for it."""
    if any(os.environ.get(name) is not None for name in _RICH_TTY_ENV):
        return console().is_terminal
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or closed
        return False


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def console(stderr: bool = False, **kw: Any) -> Console:
    from rich.console import Console

    no_color = _state["no_color"] or bool(os.environ.get("NO_COLOR"))
    if no_color:  # no escapes at all: Rich's no_color alone keeps bold, reverse, underline
        kw.setdefault("color_system", None)
    return Console(
        stderr=stderr, no_color=no_color, highlight=False, markup=False, soft_wrap=False, emoji=False, **kw
    )


def emit_json(value: Any) -> None:
    from agentctl import deep  # here: --help and TSV output do not need json

    # never NaN or Infinity (not JSON): a placeholder, as for other hostile values
    sys.stdout.write(json_text(deep.dumps(value, ensure_ascii=False, indent=2, default=str)))
    sys.stdout.write("\n")


def emit_jsonl(value: Any) -> None:
    from agentctl import deep

    sys.stdout.write(json_text(deep.dumps(value, ensure_ascii=False, default=str)) + "\n")


def say(message: str) -> None:
    """The one-line result of a write command, on stdout."""
    sys.stdout.write(inert(message) + "\n")


def done(summary: str, op_id: int | None, *, undoable: bool = True) -> None:
    """The result line of a write, with how to undo it."""
    if op_id is None:
        say(summary)
    elif undoable:
        say(f"{summary} (op {op_id}; undo: agentctl undo {op_id})")
    else:
        say(f"{summary} (op {op_id})")


def info(message: str) -> None:
    """A progress or status line on stderr."""
    sys.stderr.write(inert(message) + "\n")


def _pager_command() -> list[str] | None:
    """The pager to use, or None: only on a terminal, when --pager or $PAGER asks."""
    if not stdout_is_tty():
        return None
    env = os.environ.get("PAGER")
    if not (_state["pager"] or env):
        return None
    cmd = shlex.split(env) if env else ["less"]
    if not cmd or cmd == ["cat"]:
        return None
    if os.path.basename(cmd[0]) == "less" and len(cmd) == 1:
        cmd += ["-FRX"]  # quit if one screen, keep colours, do not clear the screen
    return cmd


def show(*renderables: Any, soft_wrap: bool | None = None) -> None:
    """Print Rich renderables on stdout (through a pager when asked and the output is
    longer than the screen). Piped, lines are not wrapped unless `soft_wrap` is False."""
    con = console()
    wrap = (not con.is_terminal) if soft_wrap is None else soft_wrap
    pager = _pager_command()
    if pager is None and con.is_terminal:
        for r in renderables:
            con.print(r, soft_wrap=wrap)
        return
    if pager is None:  # piped: the same text without the padding Rich adds to lines
        plain = [_plain_lines(r, con) if wrap else None for r in renderables]
        if all(lines is not None for lines in plain):
            sys.stdout.write("".join(line + "\n" for lines in plain for line in lines))  # type: ignore[union-attr]
            return
        with con.capture() as cap:
            for r in renderables:
                con.print(r, soft_wrap=wrap)
        sys.stdout.write("\n".join(line.rstrip() for line in cap.get().split("\n")))
        return
    with con.capture() as cap:
        for r in renderables:
            con.print(r, soft_wrap=wrap)
    text = cap.get()
    if text.count("\n") < con.size.height - 1:
        sys.stdout.write(text)
        return
    try:
        proc = subprocess.Popen(pager, stdin=subprocess.PIPE)
    except OSError:
        sys.stdout.write(text)
        return
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager early
        pass
    proc.wait()


def _plain_lines(renderable: Any, con: Any) -> list[str] | None:
    """The lines Rich prints for a Text without wrapping (soft wrap, no colours),
    rstripped; None for other renderables (Rich takes 0.3-0.5 ms a line)."""
    from rich.text import Text

    if not isinstance(renderable, Text):
        return None
    plain = renderable.plain
    if "\t" in plain:
        plain = plain.expandtabs(8)
    return [line.rstrip() for line in plain.split("\n")]


def plain_output() -> bool:
    """Piped to a UTF-8 stream: lines laid out by `agentctl.lines` can be written as
    they are, without Rich (which would draw ASCII guides for another encoding)."""
    if stdout_is_tty():
        return False
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return encoding.startswith("utf")


def show_segments(rows: Sequence[Sequence[tuple[str, str]]]) -> None:
    """Lines of (text, style) segments (`agentctl.lines`): Rich Text on a terminal,
    plain text when piped, without importing Rich."""
    if not rows:
        return
    if plain_output():
        sys.stdout.write("".join("".join(t for t, _ in row).rstrip() + "\n" for row in rows))
        return
    from rich.text import Text

    show_lines([Text.assemble(*row) for row in rows])


def show_lines(lines: Sequence[Any]) -> None:
    """Rich Text lines, one per output line, never wrapped."""
    from rich.text import Text

    if not lines:
        return
    show(Text("\n").join(lines), soft_wrap=True)


def compact_json(value: Any) -> str:
    """A JSON value on one line for a plain-text cell; an absent value (diff.MISSING) is ""."""
    import json

    from agentctl.diff import MISSING

    return "" if value is MISSING else json.dumps(value, ensure_ascii=False, default=str)


def plain_cell(value: Any) -> str:
    return inert("" if value is None else str(value), one_line=True)


def tsv(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    out = sys.stdout
    out.write("\t".join(headers) + "\n")
    for row in rows:
        out.write("\t".join(plain_cell(v) for v in row) + "\n")


def show_changes(changes: Sequence[Any], *, head: Any = None) -> None:
    """A structural diff's changes (agentctl.diff.Change): a table under `head` (a Rich
    renderable) on a terminal, tab-separated with full JSON values when piped."""
    if not stdout_is_tty():
        tsv(
            ["SECTION", "PATH", "OP", "OLD", "NEW"],
            [[c.section, c.path, c.op, compact_json(c.old), compact_json(c.new)] for c in changes],
        )
        return
    from agentctl import render

    show(*([head] if head is not None else []), render.diff_table(list(changes), width=console().width))


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    title: str | None = None,
    renderable: Callable[[], Any] | None = None,
) -> None:
    """A Rich table on a terminal (`renderable()` when given); tab-separated text otherwise."""
    if stdout_is_tty():
        if renderable is not None:
            show(renderable())
            return
        from rich.table import Table
        from rich.text import Text

        t = Table(title=title, header_style="bold", show_lines=False, box=None, pad_edge=False)
        for h in headers:
            t.add_column(h, overflow="fold")
        for row in rows:
            t.add_row(*(Text(plain_cell(v)) for v in row))
        show(t)
        return
    tsv(headers, rows)


# ---- progress -----------------------------------------------------------------------


@contextmanager
def progress(
    description: str, total: float | None, *, enabled: bool = True
) -> Iterator[Callable[[float], None]]:
    """A Rich progress bar on stderr when it is a terminal (else nothing); yields
    `advance(n)`."""
    if not (enabled and stderr_is_tty()):

        def nothing(n: float = 1) -> None:
            return None

        yield nothing
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        console=console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(inert(description, one_line=True), total=total)

        def advance(n: float = 1) -> None:
            bar.advance(task, n)

        yield advance


# ---- confirmation -----------------------------------------------------------------------


def show_plan(renderable: Any, *, to_stdout: bool) -> None:
    """What a write will do: on stdout for --dry-run (it is the result), else stderr."""
    if to_stdout:
        show(renderable)
        return
    con = console(stderr=True)
    con.print(renderable, soft_wrap=not con.is_terminal)


def confirm(action: str, *, yes: bool) -> None:
    """Go ahead with a destructive `action` only if --yes, or a person on a terminal
    says so. Off a terminal without --yes: exit 2, nothing written."""
    from agentctl.errors import AgentctlError, UsageError

    if yes:
        return
    if not stdin_is_tty():
        raise UsageError(f"refusing to {action} without --yes (stdin is not a terminal); nothing was written")
    import typer

    if not typer.confirm(f"{action}?", default=False, err=True):
        raise AgentctlError("aborted; nothing was written")
