"""`agentctl tui` and `agentctl demo`. Textual is imported only here, when they run."""


import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from agentctl.cli.context import state


def register(app: typer.Typer) -> None:
    app.command("tui")(tui)
    app.command("demo")(demo)


def _stdout_is_terminal() -> bool:
    import sys

    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False


def _tui_run() -> Any:
    from agentctl.errors import AgentctlError, UsageError

    # The UI draws with escape codes and reads keys: into a file or a pipe it would
    # write those and wait for ever. Refuse first, before anything is written.
    if not _stdout_is_terminal():
        raise UsageError("the terminal UI needs a terminal, and stdout is not one "
                         "(for output to a file or a pipe, use the other commands)")

    try:
        from agentctl.tui import run as tui_run
    except ImportError as exc:
        raise AgentctlError(f"the terminal UI is not available: {exc}") from None
    return tui_run


def tui(
    ctx: typer.Context,
    readonly: Annotated[bool, typer.Option("--read-only", "--readonly", help="Never write (hide rewind, branch, ...).")] = False,
) -> None:
    """Open the terminal UI on the database.

    Example: agentctl --db sample_db/checkpoints.db tui --read-only
    """
    st = state(ctx)
    _tui_run()(st.db, readonly=readonly, format=st.format)


def sample_database() -> Any:
    """The bundled sample database (a Traversable inside the installed package)."""
    from importlib.resources import files

    return files("agentctl").joinpath("sample", "checkpoints.db")


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary copy afterwards (its path is printed).")] = False,
) -> None:
    """Open the terminal UI on a temporary copy of the bundled sample database; your
    own databases are not touched.

    Example: agentctl demo
    """
    from importlib.resources import as_file

    from agentctl.cli.output import info

    run_tui = _tui_run()
    tmp = Path(tempfile.mkdtemp(prefix="agentctl-demo-"))
    dest = tmp / "checkpoints.db"
    with as_file(sample_database()) as src:
        shutil.copyfile(src, dest)
    info(f"demo database: {dest}")
    try:
        run_tui(str(dest), readonly=False)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
