"""A checkpoint writer that behaves like the seeds' (AgentOS) writers, for the
reliability tests. Written independently of agentctl: raw sqlite3 / asyncpg, the
format's DDL, nothing imported from the package.

Like the seeds' SQLite writer it opens its own connection for every write with the
driver's defaults (sqlite3's 5 s timeout, the journal mode the file already has: a new
file gets SQLite's default rollback journal, no WAL), and writes with
`INSERT OR REPLACE`. The Postgres writer also connects once per write (the seeds' pool
has the same effect under load: a connection per concurrent write) and upserts with
`ON CONFLICT ... DO UPDATE`; unlike the seeds it passes created_at as a datetime
(the seeds' ISO string is rejected by asyncpg: FORMAT.md defect 1).

As a script (the tests run it as a separate process, an agent next to agentctl):

    python tests/support/seed_writer.py URL --log committed.txt --stop stop-file \
        [--threads live-a,live-b] [--max-seconds 60] [--max-rows N]

writes snapshots round-robin over the threads as fast as it can until the stop file
exists (or a bound is reached), appending each checkpoint id to the log right after
its commit returned, one per line. Any error: a traceback on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import time
import uuid
from datetime import datetime, timezone
from typing import Any

SQLITE_DDL = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '',
    messages_blob TEXT NOT NULL DEFAULT '[]',
    state_blob TEXT NOT NULL DEFAULT '{}',
    tools_blob TEXT NOT NULL DEFAULT '{}',
    next_node TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_thread_step ON checkpoints(thread_id, step DESC);
CREATE INDEX IF NOT EXISTS idx_checkpoint_id ON checkpoints(checkpoint_id);
CREATE INDEX IF NOT EXISTS idx_parent ON checkpoints(parent_id);
"""

POSTGRES_DDL = """
CREATE TABLE IF NOT EXISTS checkpoints (
    id BIGSERIAL PRIMARY KEY,
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    step INTEGER NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    tags JSONB NOT NULL DEFAULT '[]',
    summary TEXT NOT NULL DEFAULT '',
    messages_blob JSONB NOT NULL DEFAULT '[]',
    state_blob JSONB NOT NULL DEFAULT '{}',
    tools_blob JSONB NOT NULL DEFAULT '{}',
    next_node TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_thread_step ON checkpoints(thread_id, step DESC);
CREATE INDEX IF NOT EXISTS idx_checkpoint_id ON checkpoints(checkpoint_id);
CREATE INDEX IF NOT EXISTS idx_parent ON checkpoints(parent_id);
CREATE INDEX IF NOT EXISTS idx_created_at ON checkpoints(created_at DESC);
"""

_SQLITE_INSERT = """INSERT OR REPLACE INTO checkpoints
    (thread_id, checkpoint_id, parent_id, step, created_at, tags, summary,
     messages_blob, state_blob, tools_blob, next_node)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_POSTGRES_INSERT = """INSERT INTO checkpoints
    (thread_id, checkpoint_id, parent_id, step, created_at, tags, summary,
     messages_blob, state_blob, tools_blob, next_node)
    VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb, $9::jsonb, $10::jsonb, $11)
    ON CONFLICT (checkpoint_id) DO UPDATE SET
    step = $4, messages_blob = $8::jsonb, state_blob = $9::jsonb, tools_blob = $10::jsonb,
    next_node = $11"""

NEEDLE = "livewriter-needle"


def is_postgres(url: str) -> bool:
    return url.lower().startswith(("postgres://", "postgresql://"))


def snapshot(thread: str, step: int, parent: str | None) -> dict[str, Any]:
    """The checkpoint an agent loop writes at `step` (deterministic content, so a test
    can check every row it finds against what was written)."""
    return {
        "thread_id": thread,
        "checkpoint_id": f"ckpt-{thread}-{step}-{uuid.uuid4().hex[:6]}",
        "parent_id": parent,
        "step": step,
        "created_at": datetime.now(timezone.utc).isoformat(),
        "tags": ["auto", f"iter_{step}"],
        "summary": f"[assistant] iteration {step}",
        "messages": expected_messages(thread, step),
        "state": expected_state(thread, step),
        "tools": {"search": {"query": NEEDLE, "hits": step % 7}},
        "next_node": "agent",
    }


def expected_messages(thread: str, step: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"task for {thread}"},
        {"role": "assistant", "content": f"iteration {step}: looking for {NEEDLE}"},
    ]


def expected_state(thread: str, step: int) -> dict[str, Any]:
    return {"thread": thread, "iteration": step, "notes": ["x" * 20] * (step % 5)}


def write_sqlite(path: str, cp: dict[str, Any]) -> None:
    conn = sqlite3.connect(path)  # the driver's defaults: timeout 5 s, deferred BEGIN
    try:
        with conn:
            conn.execute(
                _SQLITE_INSERT,
                (
                    cp["thread_id"],
                    cp["checkpoint_id"],
                    cp["parent_id"],
                    cp["step"],
                    cp["created_at"],
                    json.dumps(cp["tags"]),
                    cp["summary"],
                    json.dumps(cp["messages"], ensure_ascii=False),
                    json.dumps(cp["state"], ensure_ascii=False),
                    json.dumps(cp["tools"], ensure_ascii=False),
                    cp["next_node"],
                ),
            )
    finally:
        conn.close()


async def write_postgres(dsn: str, cp: dict[str, Any]) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            _POSTGRES_INSERT,
            cp["thread_id"],
            cp["checkpoint_id"],
            cp["parent_id"],
            cp["step"],
            datetime.fromisoformat(cp["created_at"]),
            json.dumps(cp["tags"]),
            cp["summary"],
            json.dumps(cp["messages"], ensure_ascii=False),
            json.dumps(cp["state"], ensure_ascii=False),
            json.dumps(cp["tools"], ensure_ascii=False),
            cp["next_node"],
        )
    finally:
        await conn.close()


def init_sqlite(path: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SQLITE_DDL)
        conn.commit()
    finally:
        conn.close()


async def init_postgres(dsn: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(POSTGRES_DDL)
    finally:
        await conn.close()


async def main_async(args: argparse.Namespace) -> int:
    pg = is_postgres(args.url)
    if pg:
        await init_postgres(args.url)
    else:
        init_sqlite(args.url)
    threads = [t for t in args.threads.split(",") if t]
    steps = {t: 0 for t in threads}
    parents: dict[str, str | None] = {t: None for t in threads}
    deadline = time.monotonic() + args.max_seconds
    written = 0
    with open(args.log, "a", encoding="utf-8") as log:
        while not os.path.exists(args.stop) and time.monotonic() < deadline:
            if args.max_rows and written >= args.max_rows:
                break
            thread = threads[written % len(threads)]
            steps[thread] += 1  # the seeds' in-memory step counter
            cp = snapshot(thread, steps[thread], parents[thread])
            if pg:
                await write_postgres(args.url, cp)
            else:
                write_sqlite(args.url, cp)
            # committed: log it (a test counts only what is in the log)
            log.write(cp["checkpoint_id"] + "\n")
            log.flush()
            parents[thread] = cp["checkpoint_id"]
            written += 1
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="SQLite file path or postgresql:// DSN")
    p.add_argument("--log", required=True, help="append each committed checkpoint id here")
    p.add_argument("--stop", required=True, help="stop when this file exists")
    p.add_argument("--threads", default="live-a,live-b")
    p.add_argument("--max-seconds", type=float, default=120.0)
    p.add_argument("--max-rows", type=int, default=0)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main_async(parse_args(sys.argv[1:]))))
