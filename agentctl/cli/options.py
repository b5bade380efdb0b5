"""Options and arguments shared by the commands, as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

import typer

from agentctl.cli.complete import complete_checkpoint, complete_ref, complete_thread

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="How many rows at most.")]
OffsetOpt = Annotated[int, typer.Option("--offset", min=0, help="Skip this many rows (paging).")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking (needed off a terminal).")]
#: --yes on the write commands that never ask (undoable, nothing deleted): accepted so
#: that a script can pass --yes to every write
AcceptYesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Accepted for scripts; this command does not ask (it is undoable)."),
]
NodeOpt = Annotated[
    str | None,
    typer.Option(
        "--node",
        metavar="PATH",
        help="The node that runs a LangGraph.js graph (default: $AGENTCTL_NODE, else node on PATH).",
    ),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        metavar="JSON",
        help="LangGraph: the graph's Runtime context (context=; built into its "
        'context_schema), e.g. \'{"model": "m"}\'.',
    ),
]
ConfigurableOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--configurable",
        metavar="KEY=JSON",
        help='LangGraph: a value of config["configurable"], e.g. user_id=\'"u1"\'. Repeatable.',
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would be done; write nothing.")]
NoBackupOpt = Annotated[
    bool,
    typer.Option(
        "--no-backup",
        help="SQLite: do not copy the database file aside first (taken before rewind --hard, prune, threads delete and purge).",
    ),
]

VacuumOpt = Annotated[
    bool,
    typer.Option(
        "--vacuum",
        help="Afterwards run VACUUM (SQLite: the file shrinks; Postgres: of the format's tables) and report the size before and after.",
    ),
]

ThreadArg = Annotated[
    str,
    typer.Argument(
        metavar="THREAD", help="A thread id (or a unique prefix of one).", autocompletion=complete_thread
    ),
]
RefArg = Annotated[
    str,
    typer.Argument(
        metavar="REF",
        help="A checkpoint: id, unique id prefix, THREAD (its head), THREAD~N or THREAD@STEP.",
        autocompletion=complete_ref,
    ),
]
CheckpointIdArg = Annotated[str, typer.Argument(metavar="CHECKPOINT", autocompletion=complete_checkpoint)]
