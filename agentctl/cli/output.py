"""Writing results: JSON or plain text when piped, a Rich table on a terminal.

stdout carries data only; messages go to stderr. Text from the database is always
passed through `agentctl.text.inert` (and markup-escaped by Rich's Text objects).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence

from agentctl.text import inert

_state = {"no_color": False}


def set_no_color(flag: bool) -> None:
    _state["no_color"] = flag or bool(os.environ.get("NO_COLOR"))


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def console(stderr: bool = False):
    from rich.console import Console

    no_color = _state["no_color"] or bool(os.environ.get("NO_COLOR"))
    return Console(stderr=stderr, no_color=no_color, highlight=False, markup=False,
                   soft_wrap=False, emoji=False)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=str))
    sys.stdout.write("\n")


def info(message: str) -> None:
    """A progress or status line on stderr."""
    sys.stderr.write(inert(message) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    """A Rich table on a terminal; tab-separated plain text otherwise."""
    if stdout_is_tty():
        from rich.table import Table
        from rich.text import Text

        t = Table(title=title, header_style="bold", show_lines=False, box=None, pad_edge=False)
        for h in headers:
            t.add_column(h, overflow="fold")
        for row in rows:
            t.add_row(*(Text(inert("" if v is None else str(v), one_line=True)) for v in row))
        console().print(t)
        return
    out = sys.stdout
    out.write("\t".join(headers) + "\n")
    for row in rows:
        out.write("\t".join(inert("" if v is None else str(v), one_line=True) for v in row) + "\n")
