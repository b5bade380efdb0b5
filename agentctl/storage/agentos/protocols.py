"""What the AgentOS store's helpers (delta.py, oplog.py, doctor.py) need of their
callers, as Protocols one level below base.py: the backend (`base.CheckpointBackend`)
and its transactions (`base.Transaction`) call these helpers, so the helpers name the
few methods they use here instead of importing base.py back (no import circles, type-only
ones included: tests/structure/test_layers.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from agentctl.model import Checkpoint
from agentctl.storage.agentos.rows import Row


class Rows(Protocol):
    """What reads rows: a backend or an open transaction (`base.RowReads`)."""

    @property
    def kind(self) -> str:
        """The dialect: "sqlite" or "postgres"."""

    async def _fetch(self, sql: str, *params: Any) -> Sequence[Row]: ...

    async def query(self, sql: str, *params: Any) -> list[dict[str, Any]]: ...


class Tx(Rows, Protocol):
    """An open write transaction (`base.Transaction`)."""

    async def execute(self, sql: str, *params: Any) -> int: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]: ...

    async def put(self, checkpoint: Checkpoint, blobs: Sequence[str] | None = None) -> str: ...


class Checked(Rows, Protocol):
    """What `doctor` reads and fixes (`base.CheckpointBackend`)."""

    async def duplicate_steps(self, limit: int = 100) -> list[dict[str, Any]]: ...

    async def orphan_parents(self, limit: int = 100) -> list[dict[str, Any]]: ...

    async def invalid_json(self, limit: int = 100) -> list[dict[str, Any]]: ...

    def transaction(self) -> AbstractAsyncContextManager[Tx]: ...
