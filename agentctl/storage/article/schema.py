"""The article's five tables on Postgres (`POSTGRES_DDL`), and agentctl's side tables.

Postgres: the tables, names and columns of the article's own SQLite `init_database()`;
TEXT ids for users/sessions/tasks, BIGSERIAL ids for messages and tool_logs, TEXT times
in the article's `YYYY-MM-DD HH:MM:SS` form (the reader also copes with TIMESTAMPTZ: it
casts times to text) and TEXT JSON columns (the reader casts, so JSONB works too).
Postgres has no messages_fts.

Side table (never read by the article's code), created by the first write that needs
it: `agentctl_article_branches`, the sessions made by `branch` (and rewind archives):
the source session and message (the fork point), and for merges the last merged
message. Its rows are written through the journal like the article's own
(agentctl/storage/journal/). The previous release's op log: legacy.py.
"""

from __future__ import annotations

_NOW_TEXT = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"

POSTGRES_DDL = f"""
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT,
    api_key_hash TEXT,
    quota_total INTEGER DEFAULT 100000,
    quota_used INTEGER DEFAULT 0,
    preferences_json TEXT DEFAULT '{{}}',
    created_at TEXT NOT NULL DEFAULT {_NOW_TEXT},
    updated_at TEXT NOT NULL DEFAULT {_NOW_TEXT}
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id),
    title TEXT DEFAULT '新对话',
    status TEXT DEFAULT 'active'
        CHECK(status IN ('active','paused','completed','cancelled')),
    model TEXT DEFAULT 'gpt-4o-mini',
    total_tokens INTEGER DEFAULT 0,
    total_cost DOUBLE PRECISION DEFAULT 0.0,
    message_count INTEGER DEFAULT 0,
    metadata_json TEXT DEFAULT '{{}}',
    created_at TEXT NOT NULL DEFAULT {_NOW_TEXT},
    updated_at TEXT NOT NULL DEFAULT {_NOW_TEXT}
);
CREATE TABLE IF NOT EXISTS messages (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL CHECK(role IN ('system','user','assistant','tool')),
    content TEXT NOT NULL DEFAULT '',
    tool_calls_json TEXT,
    tool_call_id TEXT,
    token_count INTEGER DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT {_NOW_TEXT}
);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    type TEXT NOT NULL,
    payload_json TEXT NOT NULL DEFAULT '{{}}',
    status TEXT DEFAULT 'pending'
        CHECK(status IN ('pending','running','paused','completed','failed','cancelled')),
    result_json TEXT,
    priority INTEGER DEFAULT 0,
    max_retries INTEGER DEFAULT 3,
    retry_count INTEGER DEFAULT 0,
    created_at TEXT NOT NULL DEFAULT {_NOW_TEXT},
    started_at TEXT,
    completed_at TEXT
);
CREATE TABLE IF NOT EXISTS tool_logs (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    message_id BIGINT REFERENCES messages(id),
    tool_name TEXT NOT NULL,
    input_json TEXT NOT NULL,
    output_json TEXT,
    elapsed_ms DOUBLE PRECISION,
    success INTEGER DEFAULT 1,
    error_message TEXT,
    created_at TEXT NOT NULL DEFAULT {_NOW_TEXT}
);
CREATE INDEX IF NOT EXISTS idx_sessions_user ON sessions(user_id);
CREATE INDEX IF NOT EXISTS idx_sessions_updated ON sessions(updated_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_messages_role ON messages(session_id, role);
CREATE INDEX IF NOT EXISTS idx_tasks_status ON tasks(status, priority DESC);
CREATE INDEX IF NOT EXISTS idx_tool_logs_session ON tool_logs(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_tool_logs_name ON tool_logs(tool_name, created_at);
"""

PREFIX = "agentctl_article_"
BRANCHES = PREFIX + "branches"
DATA_TABLES = ("sessions", "messages", "tasks", "tool_logs")
#: the tables a write changes, parents first (the journal puts rows back in this order
#: and removes them in the reverse one), and their keys
KEYS = {"sessions": "id", "messages": "id", "tool_logs": "id", "tasks": "id", BRANCHES: "session_id"}


def branches_ddl(kind: str) -> list[str]:
    big = "BIGINT" if kind == "postgres" else "INTEGER"
    return [
        f"""CREATE TABLE IF NOT EXISTS {BRANCHES} (
            session_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            name TEXT,
            source_session_id TEXT NOT NULL,
            source_message_id {big} NOT NULL,
            base_step {big} NOT NULL,
            merged_message_id {big},
            into_head {big},
            created_at TEXT NOT NULL)""",
        f"CREATE INDEX IF NOT EXISTS idx_{BRANCHES}_source ON {BRANCHES}(source_session_id)",
    ]
