"""The OpenAI Agents SDK's session store (`openai-agents`): `SQLiteSession`,
`AdvancedSQLiteSession` and `SQLAlchemySession` (SQLite or Postgres).

Tables (names are the SDK's constructor arguments, so they are recognised by their
columns): sessions `(session_id, created_at, updated_at)` and messages `(id,
session_id, message_data, created_at)`, `message_data` being one Responses input item
as JSON. `AdvancedSQLiteSession` adds `message_structure` (branch, turn numbers, tool
name per message) and `turn_usage` (tokens per user turn and branch).

Mapping (see `store.py`):
- a session is a thread (its `session_id` is the thread id); one without items is not;
- an item is a step: step N is the session's N-th row of the messages table in `id`
  order (what `SQLiteSession.get_items` returns, in that order), from 1;
- the checkpoint id of a step is `item-<messages.id>` (stable while the row lives);
- a row whose `message_data` is not JSON (which `get_items` skips) is still a step: its
  checkpoint reads as a CorruptRowError, later ones show it as an "invalid" message;
- `threads list` orders sessions by their newest (or, sorted by creation, first) row id:
  the SDK writes ids in time order, and the (session_id, id) index alone answers it;
- checkpoint N shows the transcript of items 1..N; the tags name the branches an
  AdvancedSQLiteSession's item belongs to (`branch:<id>`) and its turn (`turn:<n>`),
  its `turn_usage` rows of the turns so far are in the state;
- an AdvancedSQLiteSession's session (one with `message_structure` rows) is one thread
  per branch: `SESSION` its main branch, `SESSION#BRANCH` each other, whose steps are
  the branch's items in `sequence_number` order (its `get_items()`). An item keeps one
  checkpoint id; it belongs to the branch it was added to (its oldest structure row),
  and the branches that share it list it under that id: the first item a branch holds
  of its own has the last shared one as its parent (where tree and log --graph show it
  parting). Items on no branch (which the SDK never reads) are not steps.

Writes (`history.py`): `rewind` (later items to an archive session, or the trash; on
an AdvancedSQLiteSession's branch its later structure rows to an archive branch, or
deleted); `branch` (a new session with copies of the items, or on an
`AdvancedSQLiteSession` a branch the SDK's `switch_to_branch` sees); undoable.

When a database holds several pairs of such tables, the pair is chosen with
`AGENTCTL_OPENAI_TABLES=SESSIONS_TABLE,MESSAGES_TABLE` (or the store's
`sessions_table=`/`messages_table=` options); without one agentctl refuses and lists
the pairs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentctl.errors import SchemaError
from agentctl.storage.contract import Capability, FormatSpec

SESSION_COLUMNS = ("session_id", "created_at", "updated_at")
MESSAGE_COLUMNS = ("id", "session_id", "message_data", "created_at")
STRUCTURE_COLUMNS = (
    "session_id",
    "message_id",
    "branch_id",
    "message_type",
    "sequence_number",
    "user_turn_number",
    "branch_turn_number",
    "tool_name",
)
USAGE_COLUMNS = (
    "session_id",
    "branch_id",
    "user_turn_number",
    "requests",
    "input_tokens",
    "output_tokens",
    "total_tokens",
)


def candidate_pairs(tables: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(sessions table, messages table) pairs of the database, sorted (not agentctl's
    own tables: the journal's trash copies the SDK's columns)."""
    mine = {t: cols for t, cols in tables.items() if not t.startswith("agentctl_")}
    sessions = sorted(
        t
        for t, cols in mine.items()
        if all(c in cols for c in SESSION_COLUMNS) and "message_data" not in cols
    )
    messages = sorted(t for t, cols in mine.items() if all(c in cols for c in MESSAGE_COLUMNS))
    return [(s, m) for s in sessions for m in messages]


def choose_pair(
    tables: Mapping[str, set[str]], sessions_table: str | None = None, messages_table: str | None = None
) -> tuple[str, str]:
    """The pair to read: the one asked for (options, then AGENTCTL_OPENAI_TABLES), or the
    only one there is; SchemaError otherwise."""
    if not (sessions_table and messages_table):
        env = os.environ.get("AGENTCTL_OPENAI_TABLES", "").strip()
        if env:
            parts = [p.strip() for p in env.split(",")]
            if len(parts) != 2 or not all(parts):
                raise SchemaError("AGENTCTL_OPENAI_TABLES must be SESSIONS_TABLE,MESSAGES_TABLE")
            sessions_table, messages_table = parts
    pairs = candidate_pairs(tables)
    if sessions_table and messages_table:
        if (sessions_table, messages_table) not in pairs:
            raise SchemaError(
                f"no OpenAI Agents session tables {sessions_table!r}/{messages_table!r} here "
                f"(found: {', '.join('/'.join(p) for p in pairs) or 'none'})"
            )
        return sessions_table, messages_table
    if not pairs:
        raise SchemaError(
            "no OpenAI Agents session tables here (want a table with columns "
            + ", ".join(SESSION_COLUMNS)
            + " and one with "
            + ", ".join(MESSAGE_COLUMNS)
            + ")"
        )
    if len(pairs) > 1:
        raise SchemaError(
            "several OpenAI Agents session table pairs here: "
            + ", ".join("/".join(p) for p in pairs)
            + "; choose one with AGENTCTL_OPENAI_TABLES=SESSIONS_TABLE,MESSAGES_TABLE"
        )
    return pairs[0]


def _matches(tables: Mapping[str, set[str]]) -> bool:
    return bool(candidate_pairs(tables))


FORMAT = FormatSpec(
    name="openai-agents",
    title="OpenAI Agents SDK sessions",
    description="SQLiteSession / AdvancedSQLiteSession / SQLAlchemySession tables: a session "
    "is a thread, each stored item a step",
    capabilities=frozenset(
        {
            Capability.READ,
            Capability.SEARCH,
            Capability.FOLLOW,
            Capability.REWIND,
            Capability.BRANCH,
            Capability.UNDO,
            Capability.DOCTOR,
            Capability.BACKUP,
            Capability.EDIT,
            Capability.RUN,
            Capability.REDO,
            Capability.COMPARE,
        }
    ),
    # doctor: the side search index's state (`agentctl index`), which only SQLite has;
    # backup: SQLite's online backup API
    dialects={Capability.DOCTOR.value: ("sqlite",), Capability.BACKUP.value: ("sqlite",)},
    matches=_matches,
    store="agentctl.storage.openai_agents.store:opener",
    history="agentctl.storage.openai_agents.history:OpenAIHistory",
    tables=("agent_sessions", "agent_messages"),
)
