"""The root Typer app, whose commands are built on first use.

`agentctl show` imports and builds only `show` (agentctl/cli/commands/inspect.py); the
root help lists every command from the table in agentctl/cli/registry.py (names,
modules, summaries; tests/cli/test_cli_registry.py keeps it in step with the commands). The
command modules register their commands with `register(app)` (a group: its `app`).
"""

import errno
import os
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from agentctl.cli import coercion, registry
from agentctl.cli.context import CliState
from agentctl.cli.output import set_no_color, set_pager
from agentctl.cli.startup import report

coercion.install()  # plain str/int/float options: no pydantic on every command run

EXIT_CODES_HELP = (
    "Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 merge conflict, "
    "5 doctor found problems, 6 database unusable (not SQLite, wrong schema, refused, "
    "locked, read-only), 130 interrupted (Ctrl-C)."
)


#: errors of writing the output (no space, quota, file too large, I/O), said in one line
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        pass


# The root's options a command line may also give after the command's name
# (`agentctl threads list --db x.db`, as git, gh and kubectl allow): those that take a
# value, and flags.
GLOBAL_VALUE_OPTIONS = ("--db", "--format")
GLOBAL_FLAG_OPTIONS = ("--no-color", "--pager")


def hoist_global_options(args: list[str], ctx: Any = None) -> list[str]:
    """`args` with the global options found after the command's name moved before it,
    where the root parses them (a later one wins over an earlier one, as when both come
    first). Nothing after `--` moves."""
    i = 0
    while i < len(args):  # the command's name: the first argument that is not a root option
        arg = args[i]
        if arg == "--":
            return args
        if arg in GLOBAL_VALUE_OPTIONS:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            break
    else:
        return args
    moved: list[str] = []
    kept: list[str] = []
    rest = args[i + 1 :]
    j = 0
    while j < len(rest):
        arg = rest[j]
        if arg == "--":
            kept.extend(rest[j:])
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_VALUE_OPTIONS:
            if "=" in arg:
                moved.append(arg)
                j += 1
            elif j + 1 == len(rest):
                raise usage_error_class()(f"Option {arg!r} requires an argument.", ctx=ctx)
            else:
                moved += rest[j : j + 2]
                j += 2
            continue
        if arg in GLOBAL_FLAG_OPTIONS:
            moved.append(arg)
        else:
            kept.append(arg)
        j += 1
    if not moved:
        return args
    return [*args[:i], *moved, args[i], *kept]


class AgentctlGroup(TyperGroup):
    """The root group: turns AgentctlError into its message and exit code, also when
    the app is invoked in-process (tests, `typer.testing.CliRunner`), and takes the
    global options also after the command's name."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        return super().parse_args(ctx, hoist_global_options(list(args), ctx))

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        from agentctl.cli import startup
        from agentctl.errors import AgentctlError

        startup.STATE["invoked"] = True  # a Ctrl-C escaping from here on may follow a write
        try:
            return super().invoke(ctx)
        except AgentctlError as exc:
            if os.environ.get("AGENTCTL_DEBUG") == "1":
                raise
            report(exc)
            ctx.exit(int(exc.exit_code))
        except typer.BadParameter as exc:  # `-n 0`: one line, as agentctl's own usage errors
            if type(exc).__name__ == "MissingParameter":  # click's usage line shows what is missing
                raise
            report(RuntimeError(_one_line_bad_parameter(exc)))
            ctx.exit(2)
        except BrokenPipeError:  # `agentctl log ... | head`: stop quietly
            _silence_stdout()
            ctx.exit(1)
        except OSError as exc:  # the output cannot be written (`show > /dev/full`: a full disk)
            if exc.errno not in _WRITE_ERRNOS:
                raise
            _silence_stdout()
            report(RuntimeError(f"cannot write the output: {exc.strerror}"))
            ctx.exit(1)
        except (KeyboardInterrupt, typer.Abort):  # Ctrl-C, at a prompt too
            from agentctl.cli.writes import interrupted_line

            name = ctx.invoked_subcommand or "write"
            st = ctx.find_root().obj
            report(
                RuntimeError(
                    interrupted_line(
                        st if isinstance(st, CliState) else None,
                        "threads delete" if name == "threads" else name,
                    )
                )
            )
            ctx.exit(130)


def _one_line_bad_parameter(exc: Any) -> str:
    """click's "Invalid value for '--limit' / '-n': ..." without its usage lines."""
    message = exc.format_message()
    return message[:1].lower() + message[1:]


class LazyGroup(AgentctlGroup):
    """AgentctlGroup whose commands are imported and built when first looked up, from
    the table in agentctl/cli/registry.py (name -> module, summary)."""

    listing = False  # True while the root help lists the commands

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        return list(registry.COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        cmd = self.commands.get(cmd_name)
        if cmd is not None or cmd_name not in registry.COMMANDS:
            return cmd
        if self.listing:  # what click's get_short_help_str reads, nothing more
            return TyperCommand(cmd_name, help=registry.COMMANDS[cmd_name][1])
        cmd = self.commands[cmd_name] = build_command(cmd_name, registry.module_of(cmd_name))
        return cmd

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        """Typer's, with "Did you mean" drawn from every command, not only those built."""
        from difflib import get_close_matches

        UsageError = usage_error_class()  # noqa: N806
        suggest, self.suggest_commands = self.suggest_commands, False
        try:
            return super().resolve_command(ctx, args)
        except UsageError as e:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if suggest and args else []
            if matches:
                suggestions = ", ".join(f"{m!r}" for m in matches)
                e.message = f"{e.message.rstrip('.')}. Did you mean {suggestions}?"
            raise
        finally:
            self.suggest_commands = suggest

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]  # Typer passes its typer.Context; click's base Context is private to Typer
        """Typer's listing, from the registry's summaries instead of building every command."""
        self.listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.listing = False


def usage_error_class() -> type[Any]:
    """click's UsageError, from Typer's public API: `typer.BadParameter` is a subclass
    of it both where Typer carries its own click (0.26 and later) and where it uses
    click itself (no private module of either is imported; hence no static type)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def build_command(name: str, module_name: str) -> Any:
    """Typer's click command for one command of `module_name`, as typer.main.get_group
    builds it for the root app."""
    from typer.main import get_command_from_info, get_command_name, get_group_from_info

    scratch = typer.Typer()
    registry.register_module(scratch, module_name)
    short, rich_markup_mode = app.pretty_exceptions_short, app.rich_markup_mode
    for info in scratch.registered_commands:
        if (info.name or get_command_name(info.callback.__name__)) == name:  # type: ignore[union-attr]
            return get_command_from_info(
                info, pretty_exceptions_short=short, rich_markup_mode=rich_markup_mode
            )
    for group in scratch.registered_groups:
        if group.name == name:
            return get_group_from_info(
                group,
                pretty_exceptions_short=short,
                rich_markup_mode=rich_markup_mode,
                suggest_commands=app.suggest_commands,
            )
    return None


def make_app(cls: type[AgentctlGroup]) -> typer.Typer:
    new = typer.Typer(
        name="agentctl",
        cls=cls,
        # the formats by hand (the help imports no format); tests/cli/test_cli_help.py
        # checks the list against agentctl.storage.formats()
        help="Time-travel debugger for AI agent databases (SQLite or Postgres): AgentOS "
        "checkpoints (agentos), the article's session store (article), LangGraph "
        "checkpoints (langgraph), OpenAI Agents SDK sessions (openai-agents), Google "
        "ADK sessions (adk), Agno sessions (agno), CrewAI checkpoints (crewai), CrewAI flow "
        "states (crewai-flows) and the CrewAI replay store (crewai-replay); `agentctl formats` "
        "says what each can do.\n\n"
        "--db, --format, --no-color and --pager may also follow the command: "
        "agentctl threads list --db x.db.\n\n"
        "\b\nExample: agentctl --db sample_db/checkpoints.db log coder-fix-flaky-test --graph",
        epilog=EXIT_CODES_HELP,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    new.callback()(_root)
    return new


def version_line() -> str:
    from agentctl import __version__

    return f"agentctl {__version__}"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option(
            "--db",
            envvar="AGENTCTL_DB",
            show_envvar=True,
            help="SQLite file, sqlite:///path, or postgresql://user@host/db.",
        ),
    ] = "./checkpoints.db",
    format_: Annotated[
        str | None,
        typer.Option(
            "--format",
            envvar="AGENTCTL_FORMAT",
            show_envvar=True,
            metavar="NAME",
            help="The database's format (agentos, article, ...); detected from "
            "its schema when not given. See `agentctl formats`.",
        ),
    ] = None,
    no_color: Annotated[bool, typer.Option("--no-color", help="No colours (also NO_COLOR).")] = False,
    pager: Annotated[
        bool, typer.Option("--pager", help="Page long output on a terminal (also when $PAGER is set).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    set_no_color(no_color)
    set_pager(pager)
    ctx.obj = CliState(db=db, format=format_ or None)
    from agentctl.cli import startup

    startup.end_start_up()  # the command's module is imported by now


def eager_app() -> typer.Typer:
    """The same app with every command registered up front, as before lazy loading:
    what the tests compare the lazy app and the registry with."""
    full = make_app(AgentctlGroup)
    for module_name in registry.modules():
        registry.register_module(full, module_name)
    return full


app = make_app(LazyGroup)
