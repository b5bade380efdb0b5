"""CrewAI's three SQLite stores (crewai 1.x), three formats:

- `crewai`: checkpoints (`CheckpointConfig(provider=SqliteProvider(), location=...)`):
  `checkpoints(id, created_at, parent_id, branch, data JSONB)`, a row per checkpoint, its
  `data` SQLite's binary JSON (read and written in Python, `storage/sql/jsonb.py`, whatever
  SQLite Python links). A thread per branch (`main`, `fork/<id>_<6hex>`, ...); a
  checkpoint per row, step N the branch's N-th row in rowid order (CrewAI's "latest" is
  the newest rowid), its parent `data.parent_id` (CrewAI's listing and restore read it
  from `data`; the column when `data` has none): every fresh kickoff on `main` starts a
  root of its own, a resumed run parts from the checkpoint it resumed, a fork's first
  row names the checkpoint it was forked from in another thread.
- `crewai-flows`: `@persist` flow states (`SQLiteFlowPersistence`): `flow_states(id,
  flow_uuid, method_name, timestamp, state_json)`: a thread per `flow_uuid`, a
  checkpoint per row (`state-<id>`), step N its N-th row by id (`load_state` reads the
  newest).
- `crewai-replay`: the replay store (`latest_kickoff_task_outputs`): one thread
  (`latest_kickoff`), a checkpoint per task in `task_index` order; read only (CrewAI
  resets it at every kickoff).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agentctl.storage.contract import Capability, FormatSpec

CHECKPOINT_COLUMNS = ("id", "created_at", "parent_id", "branch", "data")
FLOW_COLUMNS = ("id", "flow_uuid", "method_name", "timestamp", "state_json")
REPLAY_COLUMNS = (
    "task_id",
    "task_key",
    "expected_output",
    "output",
    "task_index",
    "inputs",
    "was_replayed",
    "timestamp",
)


def _has(tables: Mapping[str, set[str]], table: str, columns: tuple[str, ...]) -> bool:
    cols = tables.get(table)
    return cols is not None and all(c in cols for c in columns)


def _checkpoints(tables: Mapping[str, set[str]]) -> bool:
    # AgentOS's and LangGraph's `checkpoints` have a thread_id; CrewAI's has a `data` and a `branch`
    return _has(tables, "checkpoints", CHECKPOINT_COLUMNS) and "thread_id" not in tables["checkpoints"]


def _flows(tables: Mapping[str, set[str]]) -> bool:
    return _has(tables, "flow_states", FLOW_COLUMNS)


def _replay(tables: Mapping[str, set[str]]) -> bool:
    return _has(tables, "latest_kickoff_task_outputs", REPLAY_COLUMNS)


_READS = frozenset(
    {
        Capability.READ,
        Capability.SEARCH,
        Capability.DOCTOR,
        Capability.BACKUP,
        Capability.FOLLOW,
        Capability.COMPARE,
        Capability.STATS,
    }
)
_SQLITE_ONLY = {c.value: ("sqlite",) for c in Capability}  # CrewAI writes SQLite files only


_WRITES = frozenset(
    {
        Capability.REWIND,
        Capability.BRANCH,
        Capability.EDIT,
        Capability.DELETE,
        Capability.UNDO,
        Capability.REDO,
        Capability.RUN,
    }
)


_PRUNE = frozenset({Capability.PRUNE})


def _spec(
    name: str,
    title: str,
    description: str,
    matches: Callable[[Mapping[str, set[str]]], bool],
    opener: str,
    tables: tuple[str, ...],
    history: str = "",
) -> FormatSpec:
    return FormatSpec(
        name=name,
        title=title,
        description=description,
        capabilities=_READS
        | (_WRITES if history else frozenset())
        | (_PRUNE if history == "CheckpointHistory" else frozenset()),
        dialects=_SQLITE_ONLY,
        matches=matches,
        store=f"agentctl.storage.crewai.store:{opener}",
        history=f"agentctl.storage.crewai.history:{history}" if history else "",
        tables=tables,
    )


FORMAT = _spec(
    "crewai",
    "CrewAI checkpoints",
    "CrewAI's SqliteProvider checkpoints (JSONB): a thread per branch, a checkpoint per row",
    _checkpoints,
    "open_checkpoints",
    ("checkpoints",),
    "CheckpointHistory",
)
FLOWS = _spec(
    "crewai-flows",
    "CrewAI flow states",
    "CrewAI's @persist flow states (SQLiteFlowPersistence): a thread per flow_uuid, a checkpoint "
    "per saved state",
    _flows,
    "open_flows",
    ("flow_states", "pending_feedback"),
    "FlowStateHistory",
)
REPLAY = _spec(
    "crewai-replay",
    "CrewAI replay store",
    "CrewAI's latest_kickoff_task_outputs (read only: every kickoff resets it): one thread, a "
    "checkpoint per task",
    _replay,
    "open_replay",
    ("latest_kickoff_task_outputs",),
)
