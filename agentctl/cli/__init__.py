"""The `agentctl` command line (Typer).

Errors are caught in one place (`main`): an AgentctlError prints one line on stderr
and exits with its code; a traceback only with AGENTCTL_DEBUG=1.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from agentctl.cli import coercion, threads
from agentctl.cli.context import CliState
from agentctl.cli.output import set_no_color

coercion.install()  # plain str/int/float options: no pydantic on every command run

EXIT_CODES_HELP = (
    "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 merge conflict, "
    "5 doctor found problems, 6 database unusable (not SQLite, wrong schema, refused, "
    "locked, read-only)."
)

app = typer.Typer(
    name="agentctl",
    help="Time-travel debugger for AI agent checkpoint databases (SQLite or Postgres).",
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option("--db", envvar="AGENTCTL_DB", show_envvar=True,
                     help="SQLite file, sqlite:///path, or postgresql://user@host/db."),
    ] = "./checkpoints.db",
    no_color: Annotated[bool, typer.Option("--no-color", help="No colours (also NO_COLOR).")] = False,
) -> None:
    set_no_color(no_color)
    ctx.obj = CliState(db=db)


app.add_typer(threads.app, name="threads")


def main() -> None:
    from agentctl.errors import AgentctlError, redact_dsn
    from agentctl.text import inert

    try:
        # Standalone mode: click reports its own usage errors (exit 2) and Ctrl-C.
        app()
    except AgentctlError as exc:
        if os.environ.get("AGENTCTL_DEBUG") == "1":
            raise
        sys.stderr.write("agentctl: " + inert(redact_dsn(str(exc)), one_line=True) + "\n")
        sys.exit(int(exc.exit_code))
