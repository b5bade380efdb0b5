"""The `agentctl` command line (Typer).

Errors are handled in one place (`AgentctlGroup.invoke`, and `main` as a backstop): an
AgentctlError prints one line on stderr, `agentctl: <message>`, and exits with its code;
a traceback only with AGENTCTL_DEBUG=1.
"""


import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from agentctl.cli import coercion, health, history, inspect, ops, search, threads, transfer, tui
from agentctl.cli.context import CliState
from agentctl.cli.output import set_no_color, set_pager

coercion.install()  # plain str/int/float options: no pydantic on every command run

EXIT_CODES_HELP = (
    "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 merge conflict, "
    "5 doctor found problems, 6 database unusable (not SQLite, wrong schema, refused, "
    "locked, read-only)."
)


def report(exc: BaseException) -> None:
    from agentctl.errors import redact_dsn
    from agentctl.text import inert

    sys.stderr.write("agentctl: " + inert(redact_dsn(str(exc)), one_line=True) + "\n")


class AgentctlGroup(TyperGroup):
    """The root group: turns AgentctlError into its message and exit code, also when
    the app is invoked in-process (tests, `typer.testing.CliRunner`)."""

    def invoke(self, ctx: typer.Context) -> Any:
        from agentctl.errors import AgentctlError

        try:
            return super().invoke(ctx)
        except AgentctlError as exc:
            if os.environ.get("AGENTCTL_DEBUG") == "1":
                raise
            report(exc)
            ctx.exit(int(exc.exit_code))
        except BrokenPipeError:  # `agentctl log ... | head`: stop quietly
            _silence_stdout()
            ctx.exit(1)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        pass


app = typer.Typer(
    name="agentctl",
    cls=AgentctlGroup,
    help="Time-travel debugger for AI agent checkpoint databases (SQLite or Postgres).\n\n"
         "Example: agentctl --db sample_db/checkpoints.db log coder-fix-flaky-test --graph",
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
    pager: Annotated[bool, typer.Option(
        "--pager", help="Page long output on a terminal (also when $PAGER is set).")] = False,
) -> None:
    set_no_color(no_color)
    set_pager(pager)
    ctx.obj = CliState(db=db)


app.add_typer(threads.app, name="threads")
for module in (inspect, search, history, ops, health, transfer, tui):
    module.register(app)


def main() -> None:
    from agentctl.errors import AgentctlError

    try:
        app()
    except AgentctlError as exc:  # raised outside a command (e.g. during completion)
        if os.environ.get("AGENTCTL_DEBUG") == "1":
            raise
        report(exc)
        sys.exit(int(exc.exit_code))
