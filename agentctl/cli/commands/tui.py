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
    app.command("serve")(serve)


def _stdout_is_terminal() -> bool:
    import sys

    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False


def _web_driver() -> bool:
    """Whether Textual draws for a browser (textual-serve sets TEXTUAL_DRIVER)."""
    import os

    return "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")


def _tui_run() -> Any:
    from agentctl.errors import AgentctlError, UsageError

    # The UI draws with escape codes and reads keys: into a file or a pipe it would
    # write those and wait for ever. Refuse first, before anything is written. (Under
    # `agentctl serve` stdout is textual-serve's pipe, and Textual's web driver draws.)
    if not _stdout_is_terminal() and not _web_driver():
        raise UsageError(
            "the terminal UI needs a terminal, and stdout is not one "
            "(for output to a file or a pipe, use the other commands)"
        )

    try:
        from agentctl.tui import run as tui_run
    except ImportError as exc:
        raise AgentctlError(f"the terminal UI is not available: {exc}") from None
    return tui_run


AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="NAME|FILE.py:VAR|module:var",
        help="The agent that R runs (and a LangGraph edit writes through), as `run` takes it.",
    ),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config", metavar="PATH", help="The langgraph.json to read (default: the current directory's)."
    ),
]
PythonOpt = Annotated[
    str | None,
    typer.Option(
        "--python", metavar="PATH", help="The interpreter of the agent's environment (as `run` takes it)."
    ),
]


def tui(
    ctx: typer.Context,
    readonly: Annotated[
        bool, typer.Option("--read-only", "--readonly", help="Never write (hide rewind, branch, ...).")
    ] = False,
    agent: AgentOpt = None,
    config: ConfigOpt = None,
    python: PythonOpt = None,
) -> None:
    """Open the terminal UI on the database.

    R runs your agent from the selected checkpoint (as `agentctl run THREAD --from REF`):
    its graph is found as `run` finds it (langgraph.json in the current directory, or
    --agent / --config), in --python's interpreter.

    Example: agentctl --db sample_db/checkpoints.db tui --read-only
    """
    st = state(ctx)
    _tui_run()(st.db, readonly=readonly, format=st.format, agent=agent, config=config, python=python)


def sample_database() -> Any:
    """The bundled sample database (a Traversable inside the installed package)."""
    from importlib.resources import files

    return files("agentctl").joinpath("sample").joinpath("checkpoints.db")  # one part a call: Python 3.10


def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary copy afterwards (its path is printed).")
    ] = False,
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
    # the path only when it will still be there: without --keep it is removed on quitting
    info(
        f"demo database: {dest} (kept after you quit)"
        if keep
        else "demo database: a temporary copy of the sample, removed when you quit (--keep keeps it)"
    )
    try:
        run_tui(str(dest), readonly=False)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def serve(
    ctx: typer.Context,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on (another than localhost "
            "makes the database reachable from other machines).",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8000,
    allow_writes: Annotated[
        bool,
        typer.Option(
            "--allow-writes",
            help="Let the browser rewind, branch, merge, prune, undo, edit and run the agent "
            "(read-only without: nothing is run or written).",
        ),
    ] = False,
    agent: AgentOpt = None,
    config: ConfigOpt = None,
    python: PythonOpt = None,
) -> None:
    """Serve the terminal UI to a web browser (textual-serve: pip install 'agentctl[web]'),
    read-only unless --allow-writes, on localhost unless --host says otherwise. Each
    browser tab runs its own UI on the database. Ctrl+C stops it.

    Example: agentctl --db sample_db/checkpoints.db serve --port 8000
    """
    import os
    import shlex
    import sys

    from agentctl.cli.output import info
    from agentctl.errors import AgentctlError, redact_dsn

    try:
        from textual_serve.server import Server
    except ImportError:
        raise AgentctlError("agentctl serve needs textual-serve: pip install 'agentctl[web]'") from None
    st = state(ctx)

    async def check() -> Any:  # the database opens (and is one agentctl reads) before serving it
        async with st.open():
            return None

    from agentctl.cli.context import run

    run(check())
    if host not in LOCAL_HOSTS:
        info(
            f"agentctl: warning: serving on {host}:{port}, not localhost: whoever can reach it sees "
            "this database"
            + (" and can change it (--allow-writes)" if allow_writes else "")
            + "; there is no login"
        )
    # The database goes to the UI's processes through the environment, not on a command
    # line that `ps` shows (a Postgres URL may hold a password).
    os.environ["AGENTCTL_DB"] = st.db
    if st.format:
        os.environ["AGENTCTL_FORMAT"] = st.format
    else:
        os.environ.pop("AGENTCTL_FORMAT", None)
    command = f"{shlex.quote(sys.executable)} -m agentctl tui" + ("" if allow_writes else " --read-only")
    for option, value in (("--agent", agent), ("--config", config), ("--python", python)):
        if value is not None:
            command += f" {option} {shlex.quote(value)}"
    title = f"agentctl: {redact_dsn(st.db)}" + ("" if allow_writes else " (read-only)")
    info(
        f"agentctl: serving {redact_dsn(st.db)} on http://{host if ':' not in host else f'[{host}]'}:{port}"
        + ("" if allow_writes else " (read-only)")
        + "; Ctrl+C stops it"
    )
    Server(command, host=host, port=port, title=title).serve()
