"""agentctl: a time-travel debugger for AI agent checkpoint databases, and a drop-in
checkpoint library for the agents that write them.

    from agentctl import SQLiteCheckpointer, CheckpointEngine
    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

Names are imported lazily, so `import agentctl` stays cheap for the CLI.
"""

from __future__ import annotations

import sys as _sys


def _interrupted_at_start(signum: int, frame: object) -> None:
    """Ctrl-C while the `agentctl` program starts, before `agentctl.cli.main` takes
    over: one line and exit 130, not the traceback of an import."""
    import os

    os.write(2, b"agentctl: interrupted; nothing was changed\n")
    os._exit(130)


# First thing when this package is imported as the `agentctl` program (the console
# script, or `python -m agentctl`, whose runpy imports the package first): main()
# gives SIGINT back to Python's handler once its own handling is in place. Imported
# as a library, nothing changes.
_argv = getattr(_sys, "orig_argv", [])
if (_sys.argv and _sys.argv[0].rsplit("/", 1)[-1] == "agentctl") or any(
    a == "-m" and b == "agentctl" for a, b in zip(_argv, _argv[1:], strict=False)
):
    import signal as _signal

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_at_start)

from agentctl.lazy import loader  # noqa: E402

__version__ = "0.1.0"

_EXPORTS = {
    "Checkpoint": "agentctl.model",
    "CheckpointMetadata": "agentctl.model",
    "ThreadSummary": "agentctl.model",
    "CheckpointBackend": "agentctl.storage.agentos.base",
    "SQLiteCheckpointer": "agentctl.storage.agentos.sqlite",
    "PostgresCheckpointer": "agentctl.storage.agentos.postgres",
    "create_checkpointer": "agentctl.storage.agentos.connect",
    "open_backend": "agentctl.storage.agentos.connect",
    "CheckpointEngine": "agentctl.engine",
    "SnapshotConfig": "agentctl.engine",
    "SnapshotTrigger": "agentctl.engine",
    "CheckpointGC": "agentctl.engine",
    "TimeTravelResult": "agentctl.engine",
    "AgentctlError": "agentctl.errors",
    "ExitCode": "agentctl.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


__getattr__ = loader(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__
