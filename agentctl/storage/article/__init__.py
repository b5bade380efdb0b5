"""The article's agent session store (seed `article_sqlite_agent_storage.txt`): tables
users, sessions, messages, tasks, tool_logs and the external-content FTS5 table
messages_fts, on SQLite (WAL) or on Postgres (the same five tables).

A session is a thread; its messages in `messages.id` order are its steps (step N is the
N-th message, from 1). See `store.py` (reads) and `history.py` (writes).
"""

from __future__ import annotations

from collections.abc import Mapping

from agentctl.storage.contract import Capability, FormatSpec

#: the tables of the format and the columns detection requires of each
REQUIRED = {
    "sessions": ("id", "user_id", "status", "message_count", "total_tokens", "updated_at"),
    "messages": ("id", "session_id", "role", "content", "tool_calls_json", "tool_call_id"),
}


def _matches(tables: Mapping[str, set[str]]) -> bool:
    return all(t in tables and all(c in tables[t] for c in cols) for t, cols in REQUIRED.items())


FORMAT = FormatSpec(
    name="article",
    title="Agent session store (the article's)",
    description="users, sessions, messages, tasks, tool_logs (+ messages_fts): a session "
    "is a thread, each message a step",
    capabilities=frozenset(
        {
            Capability.READ,
            Capability.SEARCH,
            Capability.STATS,
            Capability.REWIND,
            Capability.BRANCH,
            Capability.MERGE,
            Capability.PRUNE,
            Capability.DELETE,
            Capability.UNDO,
            Capability.FOLLOW,
            Capability.BACKUP,
            Capability.DOCTOR,
            Capability.EDIT,
            Capability.REDO,
            Capability.COMPARE,
        }
    ),
    matches=_matches,
    store="agentctl.storage.article.store:opener",
    history="agentctl.storage.article.history:ArticleHistory",
    tables=("users", "sessions", "messages", "tasks", "tool_logs"),
    dialects={Capability.BACKUP.value: ("sqlite",)},
)
