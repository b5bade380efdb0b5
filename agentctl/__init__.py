"""agentctl: a time-travel debugger for AI agent checkpoint databases, and a drop-in
checkpoint library for the agents that write them.

    from agentctl import SQLiteCheckpointer, CheckpointEngine
    engine = CheckpointEngine(SQLiteCheckpointer("checkpoints.db"))

Names are imported lazily, so `import agentctl` stays cheap for the CLI.
"""

from __future__ import annotations

from agentctl.lazy import loader

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
