"""Benchmarks of the two SDK formats (issue 13): a SQLiteSession database of 1,000,000
items over 20,000 sessions and an ADK DatabaseSessionService database of 1,000,000
events (200 sessions of 5,000 events).

The SDKs create their own tables (SQLiteSession, DatabaseSessionService); the rows are
then written straight with SQL, deterministically for a seed, without agentctl. Each
figure is the median (min–max) of --runs whole processes, against the sqlite3 CLI
running the SQL a person would type.

    python bench/sdk_bench.py                  # makes bench/data/sdk_*.db if missing, then measures
    python bench/sdk_bench.py --runs 7 --remake
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import sys
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, options, timed  # noqa: E402 - beside this script

DATA = ROOT / "bench" / "data"
OA = DATA / "sdk_openai.db"
ADK = DATA / "sdk_adk.db"


def make_openai(path: Path, seed: int) -> None:
    from agents import SQLiteSession

    SQLiteSession("init", str(path)).close()
    rnd = random.Random(seed)
    conn = sqlite3.connect(path)
    rows = []
    for i in range(1_000_000):
        sid = f"session-{i % 20000:05d}"
        k = i // 20000
        if k % 2 == 0:
            item = {"role": "user", "content": f"message {k} about topic {rnd.randint(0, 999)}"}
        else:
            item = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"answer {k}"}],
            }
        rows.append((sid, json.dumps(item)))
    conn.executemany("INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)", rows)
    conn.executemany(
        "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)",
        [(f"session-{j:05d}",) for j in range(20000)],
    )
    conn.execute("DELETE FROM agent_sessions WHERE session_id = 'init'")
    conn.commit()
    conn.close()


def make_adk(path: Path, seed: int) -> None:
    from google.adk.sessions import DatabaseSessionService

    async def init() -> None:
        svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
        await svc.create_session(app_name="bench", user_id="init", session_id="init")
        await svc.close()

    asyncio.run(init())
    rnd = random.Random(seed)
    t0 = datetime(2026, 1, 1)
    fmt = "%Y-%m-%d %H:%M:%S.%f"
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM sessions")
    for s in range(200):
        sid, user = f"s{s:04d}", f"u{s % 10}"
        evs = []
        for i in range(5000):
            ts = t0 + timedelta(seconds=s * 10000 + i)
            eid = str(uuid.UUID(int=rnd.getrandbits(128)))
            delta = {"counter": i, f"k{i % 50}": i} if i % 3 == 0 else {}
            ev = {
                "author": "user" if i % 2 == 0 else "agent",
                "invocation_id": f"inv{i // 4}",
                "id": eid,
                "timestamp": ts.timestamp(),
                "content": {
                    "role": "user" if i % 2 == 0 else "model",
                    "parts": [{"text": f"event {i} of {sid}"}],
                },
                "actions": {
                    "state_delta": delta,
                    "artifact_delta": {},
                    "requested_auth_configs": {},
                    "requested_tool_confirmations": {},
                },
            }
            evs.append((eid, "bench", user, sid, f"inv{i // 4}", ts.strftime(fmt), json.dumps(ev)))
        last = t0 + timedelta(seconds=s * 10000 + 4999)
        conn.execute(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
            "VALUES ('bench', ?, ?, ?, ?, ?)",
            (user, sid, json.dumps({"counter": 4998, "init": s}), t0.strftime(fmt), last.strftime(fmt)),
        )
        conn.executemany(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
            "event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
            evs,
        )
    conn.commit()
    conn.close()


def main() -> None:
    args = options()
    DATA.mkdir(parents=True, exist_ok=True)
    for path, make in ((OA, make_openai), (ADK, make_adk)):
        if args.remake and path.exists():
            path.unlink()
        if not path.exists():
            t = time.perf_counter()
            make(path, args.seed)
            print(f"made {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    agentctl = [sys.executable, "-m", "agentctl", "--no-color", "--db"]
    figures = [
        (
            "openai-agents `threads list` (50 newest)",
            agentctl + [str(OA), "threads", "list"],
            [
                "sqlite3",
                str(OA),
                "SELECT m.session_id, COUNT(*), MAX(m.id), MAX(m.created_at) FROM agent_messages m "
                "GROUP BY m.session_id ORDER BY MAX(m.created_at) DESC, m.session_id LIMIT 50",
            ],
            "≤ 1.5×",
        ),
        (
            "openai-agents `show SESSION@50` (the last item)",
            agentctl + [str(OA), "show", "session-00042@50"],
            [
                "sqlite3",
                str(OA),
                "SELECT message_data FROM agent_messages WHERE session_id = 'session-00042' "
                "ORDER BY id LIMIT 50",
            ],
            "< 0.3 s",
        ),
        (
            "adk `threads list` (50 newest)",
            agentctl + [str(ADK), "threads", "list"],
            [
                "sqlite3",
                str(ADK),
                "SELECT app_name, user_id, session_id, COUNT(*), MAX(timestamp) FROM events "
                "GROUP BY app_name, user_id, session_id ORDER BY MAX(timestamp) DESC LIMIT 50",
            ],
            "≤ 1.5×",
        ),
        (
            "adk `show APP/USER/SESSION@4990 --json` (state rebuilt over 4,990 events)",
            agentctl + [str(ADK), "show", "bench/u2/s0042@4990", "--json"],
            [
                "sqlite3",
                str(ADK),
                "SELECT event_data FROM events WHERE app_name = 'bench' AND user_id = 'u2' AND "
                "session_id = 's0042' ORDER BY timestamp, id",
            ],
            "< 0.3 s",
        ),
        (
            "adk `show APP/USER/SESSION@4990` (text: the 4,990-message transcript rendered)",
            agentctl + [str(ADK), "show", "bench/u2/s0042@4990"],
            None,
            "< 0.3 s",
        ),
    ]
    print(
        "| figure | agentctl: median (min–max), CPU | sqlite3 CLI: median (min–max), CPU | ratio | target |"
    )
    print("|---|---|---|---|---|")
    for name, cmd, base, target in figures:
        a = timed(cmd, args.runs)
        b = timed(base, args.runs) if base else None
        ratio = f"{a[0] / b[0]:.2f}×" if b else "—"
        bs = f"{b[0]:.3f} s ({b[1]:.3f}–{b[2]:.3f}), {b[3]:.3f} s" if b else "—"
        print(f"| {name} | {a[0]:.3f} s ({a[1]:.3f}–{a[2]:.3f}), {a[3]:.3f} s | {bs} | {ratio} | {target} |")


if __name__ == "__main__":
    main()
