"""agentctl: a time-travel debugger for AI agent checkpoint databases, and a drop-in
checkpoint library for the agents that write them.

    from agentctl import SQLiteCheckpointer, CheckpointEngine
    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

Names are imported lazily, so `import agentctl` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Checkpoint": "agentctl.model",
    "CheckpointMetadata": "agentctl.model",
    "ThreadSummary": "agentctl.model",
    "CheckpointBackend": "agentctl.backends.base",
    "SQLiteCheckpointer": "agentctl.backends.sqlite",
    "PostgresCheckpointer": "agentctl.backends.postgres",
    "create_checkpointer": "agentctl.backends",
    "open_backend": "agentctl.backends",
    "CheckpointEngine": "agentctl.engine",
    "SnapshotConfig": "agentctl.engine",
    "SnapshotTrigger": "agentctl.engine",
    "CheckpointGC": "agentctl.engine",
    "TimeTravelResult": "agentctl.engine",
    "AgentctlError": "agentctl.errors",
    "ExitCode": "agentctl.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentctl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
