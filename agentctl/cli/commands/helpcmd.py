"""`agentctl help [COMMAND]...`: the help of agentctl or of a command, as `--help` shows it."""

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("help")(help_command)


def help_command(
    ctx: typer.Context,
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[COMMAND]...",
            help="A command (and sub-command), e.g. `threads delete`.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show the help of agentctl, or of a command: `agentctl help threads delete` is
    `agentctl threads delete --help`.

    Example: agentctl help prune
    """
    from agentctl.errors import UsageError

    root = ctx.find_root()
    cmd, cmd_ctx = root.command, root
    for i, name in enumerate(command or []):
        get = getattr(cmd, "get_command", None)
        sub = get(cmd_ctx, name) if get is not None else None
        if sub is None:
            asked = " ".join((command or [])[: i + 1])
            raise UsageError(f"no such command: {asked!r} (see `agentctl help`)")
        cmd_ctx = sub.make_context(name, ["--help"], parent=cmd_ctx, resilient_parsing=True)
        cmd = sub
    typer.echo(cmd.get_help(cmd_ctx), nl=False)
    typer.echo()
