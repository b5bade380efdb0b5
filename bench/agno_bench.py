"""Benchmark of the Agno format (issue 36): an agno 3 SqliteDb file of 1,000,000 runs
(20,000 agent sessions of 50 runs). agno itself creates the tables (one scripted run);
the rows are then written straight with SQL, deterministically for a seed, as agno lays
them out (run_data JSON with the run's messages and session_state, run_index from 0,
epoch seconds). Each figure is the median (min–max) of --runs whole processes, against
the sqlite3 CLI running the SQL a person would type.

    python bench/agno_bench.py                  # makes bench/data/agno.db if missing, then measures
    python bench/agno_bench.py --runs 7 --remake

With PYTHONDONTWRITEBYTECODE set, run `python -m compileall -q agentctl` first: else every
process compiles agentctl's sources (some 0.4 s), which is no part of the figures.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT, options, timed  # noqa: E402 - beside this script

DATA = ROOT / "bench" / "data"
DB = DATA / "agno.db"
SESSIONS, RUNS = 20_000, 50


def make(path: Path, seed: int) -> None:
    sys.path.insert(0, str(ROOT))
    from agno.agent import Agent
    from agno.db.sqlite import SqliteDb

    from tests.scripts.agno_model import Scripted

    Agent(model=Scripted(script=["hi"]), id="init", db=SqliteDb(db_file=str(path))).run(
        "hello", session_id="init"
    )
    rnd = random.Random(seed)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM agno_runs")
    conn.execute("DELETE FROM agno_sessions")
    t0 = 1_700_000_000
    for s in range(SESSIONS):
        sid = f"session-{s:05d}"
        runs, created = [], t0 + s
        for k in range(RUNS):
            rid = str(uuid.UUID(int=rnd.getrandbits(128), version=4))
            at = created + k * SESSIONS
            data = {
                "run_id": rid,
                "agent_id": "bench",
                "session_id": sid,
                "content": f"answer {k}",
                "status": "COMPLETED",
                "session_state": {"turn": k},
                "input": {"input_content": f"question {k} about topic {rnd.randint(0, 999)}"},
                "messages": [
                    {"role": "user", "content": f"question {k}", "created_at": at},
                    {"role": "assistant", "content": f"answer {k}", "created_at": at},
                ],
                "created_at": at,
            }
            runs.append(
                (rid, sid, "agent", "bench", None, None, "u1", None, "COMPLETED", k, json.dumps(data), at, at)
            )
        conn.executemany(
            "INSERT INTO agno_runs (run_id, session_id, run_type, agent_id, team_id, workflow_id, "
            "user_id, parent_run_id, status, run_index, run_data, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            runs,
        )
        conn.execute(
            "INSERT INTO agno_sessions (session_id, session_type, agent_id, user_id, session_data, "
            "agent_data, metadata, summary, created_at, updated_at) VALUES (?, 'agent', 'bench', 'u1', ?, "
            "'null', 'null', 'null', ?, ?)",
            (
                sid,
                json.dumps({"session_state": {"turn": RUNS - 1}}),
                created,
                created + (RUNS - 1) * SESSIONS,
            ),
        )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def main() -> None:
    args = options()
    DATA.mkdir(parents=True, exist_ok=True)
    if args.remake and DB.exists():
        DB.unlink()
    if not DB.exists():
        t = time.perf_counter()
        make(DB, args.seed)
        print(f"made {DB} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    agentctl = [sys.executable, "-m", "agentctl", "--no-color", "--db", str(DB)]
    figures = [
        (
            "agno `threads list` (50 newest)",
            agentctl + ["threads", "list"],
            [
                "sqlite3",
                str(DB),
                "SELECT session_id, COUNT(*), MAX(run_index), MAX(created_at) FROM agno_runs "
                "WHERE parent_run_id IS NULL GROUP BY session_id ORDER BY MAX(created_at) DESC, session_id LIMIT 50",
            ],
            "≤ 1.5×",
        ),
        (
            "agno `show SESSION@50` (the last run: the conversation of 50 runs)",
            agentctl + ["show", "session-00042@50"],
            [
                "sqlite3",
                str(DB),
                "SELECT run_data FROM agno_runs WHERE session_id = 'session-00042' ORDER BY run_index",
            ],
            "< 0.3 s",
        ),
        (
            "agno `log SESSION`",
            agentctl + ["log", "session-00042"],
            [
                "sqlite3",
                str(DB),
                "SELECT run_id, run_data FROM agno_runs WHERE session_id = 'session-00042' "
                "ORDER BY run_index DESC",
            ],
            "< 0.3 s",
        ),
    ]
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    floor = timed([sys.executable, "-m", "agentctl", "--version"], args.runs)
    print(f"agentctl --version: {floor[0]:.3f} s wall, {floor[3]:.3f} s CPU")
    print(
        "| figure | agentctl: median (min–max), CPU | sqlite3 CLI: median (min–max), CPU | ratio | target |"
    )
    print("|---|---|---|---|---|")
    for name, cmd, base, target in figures:
        a = timed(cmd, args.runs)
        b = timed(base, args.runs)
        print(
            f"| {name} | {a[0]:.3f} s ({a[1]:.3f}–{a[2]:.3f}), {a[3]:.3f} s | {b[0]:.3f} s "
            f"({b[1]:.3f}–{b[2]:.3f}), {b[3]:.3f} s | {a[0] / b[0]:.2f}× | {target} |"
        )


if __name__ == "__main__":
    main()
