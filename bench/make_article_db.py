#!/usr/bin/env python3
"""Generate a large database in the article's agent session store format (the seed
`article_sqlite_agent_storage.txt`: users, sessions, messages, tasks, tool_logs, and the
external-content FTS5 table messages_fts), written directly with SQL.

    python bench/make_article_db.py PATH [--sessions 20000] [--messages 1000000] [--seed 1]

Rows are written the way the article's `AgentStorage` fills the tables over ~60 days:
messages of all sessions interleaved in time order (save_message bumps the session's
message_count, total_tokens, updated_at), assistant tool calls in tool_calls_json with a
tool message and a tool_logs row each (some failed), tasks in every status, and
messages_fts built at the end ('rebuild'), so it is in step. One session is long (5,000
messages). Deterministic for a given seed and size; does not import agentctl.

stdout: a JSON object with the ids a benchmark needs (also PATH.meta.json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import time
from datetime import datetime, timedelta, timezone

# The article's init_database() DDL (its five tables and indexes), and its FTS5 table.
DDL = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT, api_key_hash TEXT,
    quota_total INTEGER DEFAULT 100000, quota_used INTEGER DEFAULT 0,
    preferences_json TEXT DEFAULT '{}',
    created_at TEXT NOT NULL DEFAULT (datetime('now')),
    updated_at TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT DEFAULT '新对话',
    status TEXT DEFAULT 'active' CHECK(status IN ('active','paused','completed','cancelled')),
    model TEXT DEFAULT 'gpt-4o-mini', total_tokens INTEGER DEFAULT 0, total_cost REAL DEFAULT 0.0,
    message_count INTEGER DEFAULT 0, metadata_json TEXT DEFAULT '{}',
    created_at TEXT NOT NULL DEFAULT (datetime('now')),
    updated_at TEXT NOT NULL DEFAULT (datetime('now')),
    FOREIGN KEY (user_id) REFERENCES users(id)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK(role IN ('system','user','assistant','tool')),
    content TEXT NOT NULL DEFAULT '', tool_calls_json TEXT, tool_call_id TEXT,
    token_count INTEGER DEFAULT 0, created_at TEXT NOT NULL DEFAULT (datetime('now')),
    FOREIGN KEY (session_id) REFERENCES sessions(id)
);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL,
    payload_json TEXT NOT NULL DEFAULT '{}',
    status TEXT DEFAULT 'pending' CHECK(status IN ('pending','running','paused','completed','failed','cancelled')),
    result_json TEXT, priority INTEGER DEFAULT 0, max_retries INTEGER DEFAULT 3,
    retry_count INTEGER DEFAULT 0, created_at TEXT NOT NULL DEFAULT (datetime('now')),
    started_at TEXT, completed_at TEXT,
    FOREIGN KEY (session_id) REFERENCES sessions(id)
);
CREATE TABLE IF NOT EXISTS tool_logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_id INTEGER,
    tool_name TEXT NOT NULL, input_json TEXT NOT NULL, output_json TEXT, elapsed_ms REAL,
    success INTEGER DEFAULT 1, error_message TEXT,
    created_at TEXT NOT NULL DEFAULT (datetime('now')),
    FOREIGN KEY (session_id) REFERENCES sessions(id),
    FOREIGN KEY (message_id) REFERENCES messages(id)
);
CREATE INDEX IF NOT EXISTS idx_sessions_user ON sessions(user_id);
CREATE INDEX IF NOT EXISTS idx_sessions_updated ON sessions(updated_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_messages_role ON messages(session_id, role);
CREATE INDEX IF NOT EXISTS idx_tasks_status ON tasks(status, priority DESC);
CREATE INDEX IF NOT EXISTS idx_tool_logs_session ON tool_logs(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_tool_logs_name ON tool_logs(tool_name, created_at);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, content='messages', content_rowid='id');
"""

TOPICS_EN = [
    "refund for order",
    "weather in",
    "flight to",
    "reset my password",
    "invoice",
    "shipping delay",
    "python error",
    "database migration",
    "unit tests",
    "deploy",
]
TOPICS_ZH = ["天气", "退款", "航班", "密码重置", "发票", "物流延迟", "数据库迁移", "单元测试"]
CITIES = ["Paris", "Berlin", "Tianjin", "Lagos", "Lima", "Osaka", "Denver", "Cairo"]
TOOLS = ["search", "lookup_order", "get_weather", "run_tests", "send_email"]
STATUSES = ["active", "paused", "completed", "cancelled"]
TASK_STATUSES = ["pending", "running", "paused", "completed", "failed", "cancelled"]


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")  # datetime('now') text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--sessions", type=int, default=20_000)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=300)
    ap.add_argument("--long", type=int, default=5_000, help="messages of the one long session")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if os.path.exists(args.path):
        print(f"{args.path} exists", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(os.path.abspath(args.path)), exist_ok=True)
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    con = sqlite3.connect(args.path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    con.executescript(DDL)
    con.execute("BEGIN")
    start = datetime(2026, 9, 1, tzinfo=timezone.utc)
    span = 60 * 86400
    users = [f"u{i:05d}{rng.getrandbits(32):08x}" for i in range(args.users)]
    con.executemany(
        "INSERT INTO users (id, name, email, quota_total, quota_used, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?)",
        [
            (u, f"user {i}", f"user{i}@example.com", 100000, 0, ts(start), ts(start))
            for i, u in enumerate(users)
        ],
    )
    # sessions: a start time each; message budget: long one + the rest spread
    sessions = []
    rest = args.messages - args.long
    weights = [rng.uniform(0.2, 1.8) for _ in range(args.sessions - 1)]
    scale = rest / sum(weights)
    counts = [args.long] + [max(2, int(w * scale)) for w in weights]
    for i in range(max(0, args.messages - sum(counts))):  # what int() cut off
        counts[1 + i % (len(counts) - 1)] += 1
    for i in range(args.sessions):
        sid = f"s{i:06d}{rng.getrandbits(40):010x}"
        zh = i % 4 == 1
        topic = rng.choice(TOPICS_ZH if zh else TOPICS_EN)
        created = start + timedelta(seconds=rng.uniform(0, span * 0.9))
        sessions.append(
            {
                "id": sid,
                "user": rng.choice(users),
                "zh": zh,
                "topic": topic,
                "created": created,
                "n": counts[i],
                "status": rng.choices(STATUSES, [4, 1, 6, 1])[0],
            }
        )
        con.execute(
            "INSERT INTO sessions (id, user_id, title, status, model, metadata_json, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?)",
            (
                sid,
                sessions[-1]["user"],
                ("关于" + topic if zh else topic.capitalize()),
                sessions[-1]["status"],
                rng.choice(["gpt-4o-mini", "gpt-4o", "claude-3-5-sonnet"]),
                json.dumps({"channel": rng.choice(["web", "api", "slack"])}),
                ts(created),
                ts(created),
            ),
        )
    # message events in time order across sessions
    events = []
    for s in sessions:
        gap = rng.uniform(5, 90)
        t = s["created"]
        for k in range(s["n"]):
            events.append((t, s["id"], k))
            t += timedelta(seconds=gap * rng.uniform(0.5, 1.5))
    events.sort()
    by_id = {s["id"]: s for s in sessions}
    msg_rows = []
    log_rows = []
    totals: dict[str, list] = {s["id"]: [0, 0, None] for s in sessions}
    mid = 0
    pending_call: dict[str, tuple[str, str, dict]] = {}
    for t, sid, k in events:
        s = by_id[sid]
        mid += 1
        city = rng.choice(CITIES)
        calls = None
        call_id = None
        if k == 0:
            role, content = (
                "system",
                ("你是一个乐于助人的助手。" if s["zh"] else "You are a helpful assistant."),
            )
        elif sid in pending_call:
            call_id, tool, inp = pending_call.pop(sid)
            role = "tool"
            ok = rng.random() > 0.05
            content = json.dumps({"result": f"{tool} ok for {city}"} if ok else {"error": "timeout"})
            log_rows.append(
                (
                    sid,
                    mid - 1,
                    tool,
                    json.dumps(inp),
                    content,
                    round(rng.uniform(20, 900), 1),
                    1 if ok else 0,
                    None if ok else "tool timed out",
                    ts(t),
                )
            )
        elif k % 2 == 1:
            role = "user"
            content = (
                f"请帮我看看{s['topic']}，城市是{city}。第{k}条"
                if s["zh"]
                else f"Can you help with {s['topic']} {city}? message {k}"
            )
        else:
            role = "assistant"
            if rng.random() < 0.3:
                tool = rng.choice(TOOLS)
                call_id = f"call_{mid:08x}"
                inp = {"query": f"{s['topic']} {city}"}
                calls = json.dumps([{"id": call_id, "name": tool, "arguments": inp}], ensure_ascii=False)
                pending_call[sid] = (call_id, tool, inp)
                content = f"Let me check {tool}." if not s["zh"] else f"我来查一下{tool}。"
                call_id = None
            else:
                content = (
                    f"关于{s['topic']}：{city}的情况已经处理，编号NW-{mid}。"
                    if s["zh"]
                    else f"Here is what I found about {s['topic']} in {city}: reference NW-{mid}."
                )
        tokens = len(content) // 3 + 5
        msg_rows.append((mid, sid, role, content, calls, call_id, tokens, ts(t)))
        tot = totals[sid]
        tot[0] += 1
        tot[1] += tokens
        tot[2] = t
        if len(msg_rows) >= 50_000:
            con.executemany(
                "INSERT INTO messages (id, session_id, role, content, tool_calls_json, "
                "tool_call_id, token_count, created_at) VALUES (?,?,?,?,?,?,?,?)",
                msg_rows,
            )
            msg_rows.clear()
    con.executemany(
        "INSERT INTO messages (id, session_id, role, content, tool_calls_json, "
        "tool_call_id, token_count, created_at) VALUES (?,?,?,?,?,?,?,?)",
        msg_rows,
    )
    con.executemany(
        "INSERT INTO tool_logs (session_id, message_id, tool_name, input_json, output_json, "
        "elapsed_ms, success, error_message, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
        log_rows,
    )
    con.executemany(
        "UPDATE sessions SET message_count = ?, total_tokens = ?, total_cost = ?, updated_at = ? "
        "WHERE id = ?",
        [(n, tok, round(tok * 0.000002, 6), ts(last), sid) for sid, (n, tok, last) in totals.items()],
    )
    con.executemany(
        "INSERT INTO tasks (id, session_id, type, payload_json, status, priority, created_at) VALUES (?,?,?,?,?,?,?)",
        [
            (
                f"t{i:06d}",
                s["id"],
                rng.choice(["summarize", "export", "review"]),
                "{}",
                TASK_STATUSES[i % len(TASK_STATUSES)],
                rng.randint(0, 3),
                ts(s["created"]),
            )
            for i, s in enumerate(sessions[::2])
        ],
    )
    con.execute("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')")
    con.execute("COMMIT")
    long_s = sessions[0]["id"]
    late = con.execute(
        "SELECT id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 2", (long_s,)
    ).fetchall()
    meta = {
        "long_session": long_s,
        "long_messages": args.long,
        "sample_session": sessions[len(sessions) // 2]["id"],
        "late_message": late[0][0],
        "late_parent": late[1][0],
        "search": "Osaka",
        "sessions": args.sessions,
        "messages": mid,
    }
    con.close()
    with open(args.path + ".meta.json", "w") as fh:
        json.dump(meta, fh)
    print(json.dumps(meta))
    print(
        f"{mid:,} messages in {args.sessions:,} sessions, {len(log_rows):,} tool logs, "
        f"{os.path.getsize(args.path) / 1e6:.0f} MB, {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
