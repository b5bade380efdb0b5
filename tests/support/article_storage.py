"""The article's storage code (seed `article_sqlite_agent_storage.txt`, chapter 14),
rebuilt faithfully with the standard library's sqlite3: `get_db`, `init_database` and
`AgentStorage` with the article's SQL, except that the database path is a parameter
(the article's module-level DB_PATH) and `init_database(..., fts=True)` also creates
the FTS5 table the article shows in 14.5.

Tests use it as the article's own code path: what agentctl writes must still read
back through it (`get_conversation_history`, `list_user_sessions`, `get_usage_stats`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from contextlib import contextmanager

SCHEMA = """
        -- ===== 用户表 =====
        CREATE TABLE IF NOT EXISTS users (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            email TEXT,
            api_key_hash TEXT,
            quota_total INTEGER DEFAULT 100000,
            quota_used INTEGER DEFAULT 0,
            preferences_json TEXT DEFAULT '{}',
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now'))
        );
        -- ===== 会话表 =====
        CREATE TABLE IF NOT EXISTS sessions (
            id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            title TEXT DEFAULT '新对话',
            status TEXT DEFAULT 'active'
                CHECK(status IN ('active','paused','completed','cancelled')),
            model TEXT DEFAULT 'gpt-4o-mini',
            total_tokens INTEGER DEFAULT 0,
            total_cost REAL DEFAULT 0.0,
            message_count INTEGER DEFAULT 0,
            metadata_json TEXT DEFAULT '{}',
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            FOREIGN KEY (user_id) REFERENCES users(id)
        );
        -- ===== 消息表(核心!)=====
        CREATE TABLE IF NOT EXISTS messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            role TEXT NOT NULL CHECK(role IN ('system','user','assistant','tool')),
            content TEXT NOT NULL DEFAULT '',
            tool_calls_json TEXT,
            tool_call_id TEXT,
            token_count INTEGER DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            FOREIGN KEY (session_id) REFERENCES sessions(id)
        );
        -- ===== 任务表(异步任务管理)=====
        CREATE TABLE IF NOT EXISTS tasks (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            type TEXT NOT NULL,
            payload_json TEXT NOT NULL DEFAULT '{}',
            status TEXT DEFAULT 'pending'
                CHECK(status IN ('pending','running','paused','completed','failed','cancelled')),
            result_json TEXT,
            priority INTEGER DEFAULT 0,
            max_retries INTEGER DEFAULT 3,
            retry_count INTEGER DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            started_at TEXT,
            completed_at TEXT,
            FOREIGN KEY (session_id) REFERENCES sessions(id)
        );
        -- ===== 工具调用日志表(审计 + 分析)=====
        CREATE TABLE IF NOT EXISTS tool_logs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            message_id INTEGER,
            tool_name TEXT NOT NULL,
            input_json TEXT NOT NULL,
            output_json TEXT,
            elapsed_ms REAL,
            success INTEGER DEFAULT 1,
            error_message TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            FOREIGN KEY (session_id) REFERENCES sessions(id),
            FOREIGN KEY (message_id) REFERENCES messages(id)
        );
        -- ===== 索引(查询性能关键!)=====
        CREATE INDEX IF NOT EXISTS idx_sessions_user
            ON sessions(user_id);
        CREATE INDEX IF NOT EXISTS idx_sessions_updated
            ON sessions(updated_at DESC);
        CREATE INDEX IF NOT EXISTS idx_messages_session
            ON messages(session_id, created_at);
        CREATE INDEX IF NOT EXISTS idx_messages_role
            ON messages(session_id, role);
        CREATE INDEX IF NOT EXISTS idx_tasks_status
            ON tasks(status, priority DESC);
        CREATE INDEX IF NOT EXISTS idx_tool_logs_session
            ON tool_logs(session_id, created_at);
        CREATE INDEX IF NOT EXISTS idx_tool_logs_name
            ON tool_logs(tool_name, created_at);
"""

# 14.5: FTS5 全文搜索 (an external-content table: nothing keeps it in step by itself)
FTS_SCHEMA = """
CREATE VIRTUAL TABLE messages_fts USING fts5(content,
  content='messages',        -- 外部内容表
  content_rowid='id'          -- 外部表的行ID
);
"""


@contextmanager
def get_db(db_path: str):
    """获取数据库连接(上下文管理器,自动提交/回滚)。"""
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row  # 结果以字典形式返回
    conn.execute("PRAGMA journal_mode=WAL")  # 启用 WAL 模式
    conn.execute("PRAGMA foreign_keys=ON")  # 启用外键约束
    try:
        yield conn
        conn.commit()
    except Exception:
        conn.rollback()
        raise
    finally:
        conn.close()


def init_database(db_path: str, fts: bool = False) -> None:
    """初始化数据库 —— 创建所有表 (and, with fts=True, 14.5's messages_fts)."""
    with get_db(db_path) as conn:
        conn.executescript(SCHEMA)
        if fts:
            conn.executescript(FTS_SCHEMA)


class AgentStorage:
    """Agent 持久化存储 —— 封装所有数据库操作 (the article's class; db path per instance)."""

    def __init__(self, db_path: str):
        self.db_path = db_path

    def _db(self):
        return get_db(self.db_path)

    # ==================== 用户管理 ====================
    def create_user(self, name: str, email: str = "", quota_total: int = 100000) -> dict:
        user_id = hashlib.md5(f"{name}-{time.time()}".encode()).hexdigest()[:16]
        with self._db() as conn:
            conn.execute(
                "INSERT INTO users (id, name, email, quota_total) VALUES (?,?,?,?)",
                (user_id, name, email, quota_total),
            )
        return {"id": user_id, "name": name, "quota_total": quota_total}

    def get_user(self, user_id: str) -> dict | None:
        with self._db() as conn:
            row = conn.execute("SELECT * FROM users WHERE id=?", (user_id,)).fetchone()
        return dict(row) if row else None

    def check_quota(self, user_id: str, required_tokens: int = 0) -> bool:
        with self._db() as conn:
            row = conn.execute(
                "SELECT quota_total - quota_used AS remaining FROM users WHERE id=?",
                (user_id,),
            ).fetchone()
        if row is None:
            return False
        return row["remaining"] >= required_tokens

    def consume_quota(self, user_id: str, tokens: int):
        with self._db() as conn:
            conn.execute(
                "UPDATE users SET quota_used=quota_used+?, updated_at=datetime('now') WHERE id=?",
                (tokens, user_id),
            )

    # ==================== 会话管理 ====================
    def create_session(self, user_id: str, title: str = "新对话", model: str = "gpt-4o-mini") -> dict:
        session_id = hashlib.md5(f"{user_id}-{time.time()}-{os.urandom(4).hex()}".encode()).hexdigest()[:16]
        with self._db() as conn:
            conn.execute(
                """INSERT INTO sessions (id, user_id, title, model)
                   VALUES (?,?,?,?)""",
                (session_id, user_id, title, model),
            )
        return {"id": session_id, "user_id": user_id, "title": title, "model": model}

    def get_session(self, session_id: str) -> dict | None:
        with self._db() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE id=?", (session_id,)).fetchone()
        return dict(row) if row else None

    def list_user_sessions(self, user_id: str, limit: int = 20) -> list[dict]:
        with self._db() as conn:
            rows = conn.execute(
                """SELECT id, title, status, model, message_count,
                          total_tokens, updated_at
                   FROM sessions WHERE user_id=?
                   ORDER BY updated_at DESC LIMIT ?""",
                (user_id, limit),
            ).fetchall()
        return [dict(r) for r in rows]

    def pause_session(self, session_id: str):
        with self._db() as conn:
            conn.execute(
                "UPDATE sessions SET status='paused', updated_at=datetime('now') WHERE id=?",
                (session_id,),
            )

    def resume_session(self, session_id: str):
        with self._db() as conn:
            conn.execute(
                "UPDATE sessions SET status='active', updated_at=datetime('now') WHERE id=?",
                (session_id,),
            )

    # ==================== 消息管理(核心!)====================
    def save_message(
        self,
        session_id: str,
        role: str,
        content: str,
        tool_calls: list | None = None,
        tool_call_id: str | None = None,
        token_count: int = 0,
    ):
        tool_calls_json = json.dumps(tool_calls, ensure_ascii=False) if tool_calls else None
        with self._db() as conn:
            conn.execute(
                """INSERT INTO messages (session_id, role, content,
                   tool_calls_json, tool_call_id, token_count)
                   VALUES (?,?,?,?,?,?)""",
                (session_id, role, content, tool_calls_json, tool_call_id, token_count),
            )
            # 同步更新会话统计
            conn.execute(
                """UPDATE sessions SET
                   message_count = message_count + 1,
                   total_tokens = total_tokens + ?,
                   updated_at = datetime('now')
                   WHERE id=?""",
                (token_count, session_id),
            )

    def get_conversation_history(self, session_id: str, max_messages: int = 50) -> list[dict]:
        with self._db() as conn:
            rows = conn.execute(
                """SELECT * FROM (
                       SELECT role, content, tool_calls_json, tool_call_id,
                              token_count, created_at
                       FROM messages WHERE session_id=?
                       ORDER BY created_at DESC LIMIT ?
                   ) ORDER BY created_at ASC""",
                (session_id, max_messages),
            ).fetchall()
        return [dict(r) for r in rows]

    # ==================== 工具调用日志 ====================
    def log_tool_call(
        self,
        session_id: str,
        tool_name: str,
        input_data: dict,
        output_data: dict,
        elapsed_ms: float,
        success: bool = True,
        error_message: str = None,
        message_id: int = None,
    ):
        with self._db() as conn:
            conn.execute(
                """INSERT INTO tool_logs (session_id, message_id, tool_name,
                   input_json, output_json, elapsed_ms, success, error_message)
                   VALUES (?,?,?,?,?,?,?,?)""",
                (
                    session_id,
                    message_id,
                    tool_name,
                    json.dumps(input_data, ensure_ascii=False),
                    json.dumps(output_data, ensure_ascii=False),
                    elapsed_ms,
                    int(success),
                    error_message,
                ),
            )

    # ==================== 任务管理 ====================
    def create_task(self, session_id: str, task_type: str, payload: dict, priority: int = 0) -> dict:
        task_id = hashlib.md5(f"{session_id}-{task_type}-{time.time()}".encode()).hexdigest()[:16]
        with self._db() as conn:
            conn.execute(
                """INSERT INTO tasks (id, session_id, type, payload_json, priority)
                   VALUES (?,?,?,?,?)""",
                (task_id, session_id, task_type, json.dumps(payload, ensure_ascii=False), priority),
            )
        return {"id": task_id, "type": task_type, "status": "pending"}

    def update_task_status(self, task_id: str, status: str, result: dict | None = None):
        updates = ["status=?"]
        params = [status]
        if status == "running":
            updates.append("started_at=datetime('now')")
        elif status in ("completed", "failed", "cancelled"):
            updates.append("completed_at=datetime('now')")
        if result is not None:
            updates.append("result_json=?")
            params.append(json.dumps(result, ensure_ascii=False))
        params.append(task_id)
        with self._db() as conn:
            conn.execute(f"UPDATE tasks SET {', '.join(updates)} WHERE id=?", params)

    # ==================== 分析查询 ====================
    def get_usage_stats(self, user_id: str, days: int = 7) -> dict:
        with self._db() as conn:
            total = conn.execute(
                """SELECT COUNT(*) as session_count,
                          SUM(total_tokens) as total_tokens,
                          SUM(message_count) as total_messages
                   FROM sessions
                   WHERE user_id=? AND updated_at > datetime('now', ?)""",
                (user_id, f"-{days} days"),
            ).fetchone()
            tools = conn.execute(
                """SELECT tool_name, COUNT(*) as call_count,
                          AVG(elapsed_ms) as avg_latency,
                          SUM(CASE WHEN success=0 THEN 1 ELSE 0 END) as failures
                   FROM tool_logs
                   WHERE session_id IN (
                       SELECT id FROM sessions WHERE user_id=?
                   ) AND created_at > datetime('now', ?)
                   GROUP BY tool_name ORDER BY call_count DESC""",
                (user_id, f"-{days} days"),
            ).fetchall()
        return {
            "period_days": days,
            "session_count": total["session_count"],
            "total_tokens": total["total_tokens"] or 0,
            "total_messages": total["total_messages"] or 0,
            "tool_usage": [dict(r) for r in tools],
        }


#: the usual FTS5 triggers an app adds to keep messages_fts in step (agentctl then leaves it to them)
FTS_TRIGGERS = """
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content); END;
CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN
  INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
  INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
"""
