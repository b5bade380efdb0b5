"""The `agentctl` command line (Typer), a thin layer over the library.

- agentctl/cli/commands/: one module per command group (`register(app)`, or a group's
  `app`); they reach data only through `agentctl.storage` (tests/structure/test_layers.py).
- root.py: the Typer app and its lazy root group; registry.py: the table of commands
  (name -> module, summary) the group lists and loads from; startup.py: the start-up
  tricks (collector paused, fast exit; AGENTCTL_NO_FAST_EXIT=1 turns the latter off);
  context.py, output.py, options.py, coercion.py, complete.py: what commands share.

Errors are handled in one place (`AgentctlGroup.invoke`, and `main` as a backstop): an
AgentctlError prints one line on stderr, `agentctl: <message>`, and exits with its code;
a traceback only with AGENTCTL_DEBUG=1.

This module imports no Typer: the app (`agentctl.cli.app`) is loaded on first use.
"""

import os
import sys
from typing import Any

from agentctl.cli.startup import report

_LAZY = ("app", "AgentctlGroup", "EXIT_CODES_HELP")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agentctl.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'agentctl.cli' has no attribute {name!r}")


def main() -> None:
    import signal

    from agentctl.cli import startup

    startup.pause_gc()
    try:  # Ctrl-C raises KeyboardInterrupt again (agentctl's start-up handler: agentctl/__init__.py)
        if signal.getsignal(signal.SIGINT) is getattr(sys.modules["agentctl"], "_interrupted_at_start", None):
            signal.signal(signal.SIGINT, signal.default_int_handler)
        from agentctl.cli.root import app
    except KeyboardInterrupt:  # Ctrl-C while agentctl starts: before any command ran
        sys.stderr.write("agentctl: interrupted; nothing was changed\n")
        startup.leave(130)
    from agentctl.errors import AgentctlError

    try:
        app()
    except AgentctlError as exc:  # raised outside a command (e.g. during completion)
        if os.environ.get("AGENTCTL_DEBUG") == "1":
            raise
        report(exc)
        startup.leave(int(exc.exit_code))
    except SystemExit as exc:  # how Typer ends every run
        startup.leave(exc.code)
    except KeyboardInterrupt:  # Ctrl-C while the command line is read (the command's own
        # handler says what is true once it runs; a second Ctrl-C inside that handler lands here)
        sys.stderr.write(
            "agentctl: interrupted; "
            + (
                "see `agentctl oplog` for whether anything was written\n"
                if startup.STATE.get("invoked")
                else "nothing was changed\n"
            )
        )
        startup.leave(130)
    startup.leave(0)
