"""Options shared by the commands, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="How many rows at most.")]
OffsetOpt = Annotated[int, typer.Option("--offset", min=0, help="Skip this many rows (paging).")]
