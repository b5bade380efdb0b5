"""`agentctl.backends`: the public names of the AgentOS checkpointers, a thin facade.

    async with open_backend("checkpoints.db") as backend:          # read-only
        heads = await backend.thread_summaries()

The code is the AgentOS format's store, in agentctl/storage/agentos/ (connect.py: URLs
and openers; base.py, sqlite.py, postgres.py: the checkpointers). Names are loaded on
first use, so importing this package imports no driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentctl.lazy import loader

_EXPORTS = {
    "CheckpointBackend": "agentctl.storage.agentos.base",
    "Transaction": "agentctl.storage.agentos.base",
    "SQLiteCheckpointer": "agentctl.storage.agentos.sqlite",
    "PostgresCheckpointer": "agentctl.storage.agentos.postgres",
    "open_backend": "agentctl.storage.agentos.connect",
    "make_backend": "agentctl.storage.agentos.connect",
    "create_checkpointer": "agentctl.storage.agentos.connect",
    "parse_url": "agentctl.storage.agentos.connect",
    "DEFAULT_DB": "agentctl.storage.agentos.connect",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import CheckpointBackend, Transaction  # noqa: F401
    from agentctl.storage.agentos.connect import (  # noqa: F401
        DEFAULT_DB,
        create_checkpointer,
        make_backend,
        open_backend,
        parse_url,
    )
    from agentctl.storage.agentos.postgres import PostgresCheckpointer  # noqa: F401
    from agentctl.storage.agentos.sqlite import SQLiteCheckpointer  # noqa: F401


__getattr__ = loader(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return __all__
