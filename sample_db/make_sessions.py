"""Write sample_db/sessions.db: the article's session store (chapter 14), deterministic.

    python sample_db/make_sessions.py [OUT]   (default: sample_db/sessions.db)

The tables come from the article's `init_database()` DDL and the FTS5 table of its
14.5 (tests/support/article_storage.py); the rows are written with the SQL of the
article's `AgentStorage` methods (create_user, create_session, save_message,
log_tool_call, create_task, update_task_status), with fixed ids and timestamps instead
of md5(time) and datetime('now'), so the file only changes when this script does.
messages_fts is filled with FTS5's 'rebuild' at the end: it is in step.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.article_storage import FTS_SCHEMA, SCHEMA  # noqa: E402

DEFAULT_OUT = ROOT / "sample_db" / "sessions.db"
T0 = datetime(2026, 11, 2, 9, 0, 0)


class Writer:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.t = T0

    def tick(self, seconds: int = 7) -> str:
        self.t += timedelta(seconds=seconds)
        return self.t.strftime("%Y-%m-%d %H:%M:%S")

    def user(self, uid: str, name: str, email: str, quota: int = 100000, used: int = 0) -> str:
        now = self.tick()
        self.conn.execute(
            "INSERT INTO users (id, name, email, quota_total, quota_used, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?)",
            (uid, name, email, quota, used, now, now),
        )
        return uid

    def session(
        self, sid: str, uid: str, title: str, model: str = "gpt-4o-mini", metadata: dict | None = None
    ) -> str:
        now = self.tick(60)
        self.conn.execute(
            "INSERT INTO sessions (id, user_id, title, model, metadata_json, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?)",
            (sid, uid, title, model, json.dumps(metadata or {}, ensure_ascii=False), now, now),
        )
        return sid

    def message(
        self,
        sid: str,
        role: str,
        content: str,
        tool_calls: list | None = None,
        tool_call_id: str | None = None,
        tokens: int = 0,
    ) -> int:
        now = self.tick()
        tc = json.dumps(tool_calls, ensure_ascii=False) if tool_calls else None
        cur = self.conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls_json, tool_call_id, "
            "token_count, created_at) VALUES (?,?,?,?,?,?,?)",
            (sid, role, content, tc, tool_call_id, tokens, now),
        )
        self.conn.execute(
            "UPDATE sessions SET message_count = message_count + 1, total_tokens = total_tokens + ?, "
            "updated_at = ? WHERE id=?",
            (tokens, now, sid),
        )
        return int(cur.lastrowid)

    def tool_log(
        self,
        sid: str,
        tool: str,
        inp: dict,
        out: dict,
        ms: float,
        ok: bool = True,
        error: str | None = None,
        message_id: int | None = None,
    ) -> None:
        now = self.tick(1)
        self.conn.execute(
            "INSERT INTO tool_logs (session_id, message_id, tool_name, input_json, output_json, "
            "elapsed_ms, success, error_message, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                sid,
                message_id,
                tool,
                json.dumps(inp, ensure_ascii=False),
                json.dumps(out, ensure_ascii=False),
                ms,
                int(ok),
                error,
                now,
            ),
        )

    def task(
        self,
        tid: str,
        sid: str,
        kind: str,
        payload: dict,
        status: str,
        result: dict | None = None,
        priority: int = 0,
    ) -> None:
        now = self.tick(2)
        started = self.tick(3) if status != "pending" else None
        done = self.tick(5) if status in ("completed", "failed", "cancelled") else None
        self.conn.execute(
            "INSERT INTO tasks (id, session_id, type, payload_json, status, result_json, priority, "
            "retry_count, created_at, started_at, completed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                tid,
                sid,
                kind,
                json.dumps(payload, ensure_ascii=False),
                status,
                json.dumps(result, ensure_ascii=False) if result is not None else None,
                priority,
                1 if status == "failed" else 0,
                now,
                started,
                done,
            ),
        )

    def status(self, sid: str, status: str) -> None:
        self.conn.execute("UPDATE sessions SET status=?, updated_at=? WHERE id=?", (status, self.tick(), sid))


def build(conn: sqlite3.Connection) -> None:
    w = Writer(conn)
    alice = w.user("u-alice", "Alice", "alice@example.com", 100000, 1830)
    bob = w.user("u-bob", "Bob", "bob@example.com", 50000, 920)
    wang = w.user("u-wang", "王伟", "wang@example.cn", 200000, 2410)

    # 1. The article's demo conversation (Chinese), with a search tool call.
    s1 = w.session("s-agent-basics", alice, "学习 AI Agent")
    w.message(s1, "system", "你是一个乐于助人的 AI 助手。", tokens=12)
    w.message(s1, "user", "什么是 AI Agent?", tokens=50)
    w.message(s1, "assistant", "AI Agent 是一种能自主感知、决策、执行的智能系统...", tokens=120)
    w.message(s1, "user", "它由哪些组件组成?", tokens=40)
    m = w.message(
        s1,
        "assistant",
        "主要由 LLM、规划器、记忆系统和工具调用四部分组成。",
        [{"id": "call_c0ffee01", "name": "search", "arguments": {"query": "Agent components"}}],
        tokens=80,
    )
    w.message(
        s1, "tool", "搜索结果:LLM/规划器/记忆/工具是Agent的核心组件", tool_call_id="call_c0ffee01", tokens=30
    )
    w.tool_log(
        s1,
        "search",
        {"query": "Agent components"},
        {"results": ["LLM", "规划器", "记忆", "工具"]},
        350.5,
        message_id=m,
    )
    w.message(s1, "assistant", "总结:Agent = LLM + 规划 + 记忆 + 工具。", tokens=45)
    w.task(
        "t-summarize-1",
        s1,
        "summarize",
        {"max_length": 200},
        "completed",
        {"summary": "本次对话讨论了 AI Agent 的基本概念和组成..."},
        priority=1,
    )

    # 2. An English weather session: two tool calls, one failing and retried.
    s2 = w.session("s-weather-paris", alice, "Weather in Paris", "gpt-4o")
    w.message(s2, "user", "What's the weather like in Paris tomorrow?", tokens=14)
    m = w.message(
        s2,
        "assistant",
        "Let me check the forecast.",
        [{"id": "call_w1", "name": "get_weather", "arguments": {"city": "Paris", "day": "tomorrow"}}],
        tokens=22,
    )
    w.tool_log(
        s2,
        "get_weather",
        {"city": "Paris", "day": "tomorrow"},
        {"error": "upstream timeout"},
        5003.0,
        ok=False,
        error="TimeoutError: weather API did not answer in 5s",
        message_id=m,
    )
    w.message(s2, "tool", '{"error": "upstream timeout"}', tool_call_id="call_w1", tokens=8)
    m = w.message(
        s2,
        "assistant",
        "The weather service timed out; trying again.",
        [{"id": "call_w2", "name": "get_weather", "arguments": {"city": "Paris", "day": "tomorrow"}}],
        tokens=20,
    )
    w.tool_log(
        s2,
        "get_weather",
        {"city": "Paris", "day": "tomorrow"},
        {"forecast": "light rain", "high_c": 14, "low_c": 8},
        812.25,
        message_id=m,
    )
    w.message(
        s2, "tool", '{"forecast": "light rain", "high_c": 14, "low_c": 8}', tool_call_id="call_w2", tokens=18
    )
    w.message(
        s2, "assistant", "Tomorrow in Paris: light rain, between 8 and 14 °C. Take an umbrella.", tokens=25
    )
    # logged without a message id, right after the last message (the article's demo does this)
    w.tool_log(s2, "unit_convert", {"celsius": 14}, {"fahrenheit": 57.2}, 3.5)
    w.task("t-weather-alert", s2, "weather_alert", {"city": "Paris", "threshold_mm": 5}, "running")
    w.status(s2, "completed")

    # 3. Bob: a coding session with a code-runner, a failed task and a cancelled one.
    s3 = w.session("s-bob-regex", bob, "Regex for ISO dates", "gpt-4o")
    w.message(s3, "system", "You are a senior Python engineer.", tokens=9)
    w.message(s3, "user", "Write a regex that matches ISO-8601 dates like 2026-11-02.", tokens=19)
    m = w.message(
        s3,
        "assistant",
        "Here is a pattern; let me test it.",
        [
            {
                "id": "call_py1",
                "name": "run_python",
                "arguments": {
                    "code": "import re; print(bool(re.fullmatch(r'\\d{4}-\\d{2}-\\d{2}', '2026-11-02')))"
                },
            }
        ],
        tokens=41,
    )
    w.tool_log(s3, "run_python", {"code": "re.fullmatch(...)"}, {"stdout": "True\n"}, 120.0, message_id=m)
    w.message(s3, "tool", "True", tool_call_id="call_py1", tokens=2)
    w.message(
        s3, "assistant", r"Use r'\d{4}-\d{2}-\d{2}'; add month/day ranges if you need validation.", tokens=30
    )
    w.task("t-lint", s3, "lint", {"path": "dates.py"}, "failed", {"error": "flake8 not installed"})
    w.task("t-benchmark", s3, "benchmark", {"runs": 1000}, "cancelled")
    w.status(s3, "cancelled")

    # 4. Bob: an old, paused session; a pending and a paused task.
    s4 = w.session("s-bob-trip", bob, "Trip planning")
    w.message(s4, "user", "Plan a 3-day trip to Kyoto in April.", tokens=12)
    w.message(s4, "assistant", "Day 1: Fushimi Inari and Gion. Day 2: Arashiyama. Day 3: Nara.", tokens=33)
    w.task("t-book-hotel", s4, "book_hotel", {"city": "Kyoto", "nights": 3}, "pending", priority=2)
    w.task("t-flight-watch", s4, "flight_watch", {"route": "CDG-KIX"}, "paused")
    w.status(s4, "paused")

    # 5. 王伟: a long Chinese session (a branch-worthy middle), with a translation tool.
    s5 = w.session(
        "s-wang-report", wang, "季度报告写作", "gpt-4o", {"department": "销售部", "quarter": "2026Q3"}
    )
    w.message(s5, "system", "你是一名专业的商务写作助手。", tokens=14)
    w.message(s5, "user", "帮我写一份第三季度销售报告的大纲。", tokens=20)
    w.message(
        s5,
        "assistant",
        "大纲:一、业绩概览 二、区域分析 三、产品线表现 四、问题与对策 五、第四季度计划",
        tokens=60,
    )
    w.message(s5, "user", "第二部分请详细展开,并翻译成英文。", tokens=18)
    m = w.message(
        s5,
        "assistant",
        "好的,我先翻译标题。",
        [{"id": "call_tr1", "name": "translate", "arguments": {"text": "区域分析", "to": "en"}}],
        tokens=16,
    )
    w.tool_log(
        s5, "translate", {"text": "区域分析", "to": "en"}, {"text": "Regional analysis"}, 95.0, message_id=m
    )
    w.message(s5, "tool", "Regional analysis", tool_call_id="call_tr1", tokens=3)
    w.message(
        s5, "assistant", "二、区域分析(Regional analysis):华东增长 12%,华南持平,华北下降 3%。", tokens=48
    )
    w.message(s5, "user", "华北下降的原因是什么?", tokens=12)
    m = w.message(
        s5,
        "assistant",
        "我查一下数据库。",
        [
            {
                "id": "call_db1",
                "name": "sql_query",
                "arguments": {"sql": "SELECT region, churn FROM q3 WHERE region='华北'"},
            }
        ],
        tokens=25,
    )
    w.tool_log(
        s5,
        "sql_query",
        {"sql": "SELECT region, churn FROM q3 WHERE region='华北'"},
        {},
        30000.0,
        ok=False,
        error="permission denied for table q3",
        message_id=m,
    )
    w.message(s5, "tool", "permission denied for table q3", tool_call_id="call_db1", tokens=6)
    w.message(s5, "assistant", "没有权限访问数据;可能原因:渠道调整和季节因素。", tokens=30)
    w.task("t-export-pdf", s5, "export_pdf", {"format": "A4"}, "completed", {"file": "q3_report.pdf"})

    # 6. Alice: a fresh, empty session (no messages yet).
    w.session("s-alice-empty", alice, "新对话")

    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')")


def main(out: Path) -> None:
    if out.exists():
        out.unlink()
    for suffix in ("-wal", "-shm"):
        extra = Path(str(out) + suffix)
        if extra.exists():
            extra.unlink()
    conn = sqlite3.connect(out)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(SCHEMA)
    conn.executescript(FTS_SCHEMA)
    with conn:
        build(conn)
    conn.execute("PRAGMA journal_mode=WAL")  # the article's mode; checkpointed on close
    conn.execute("VACUUM")
    conn.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
