#!/usr/bin/env python3
"""Write a large LangGraph SQLite checkpoint database, in the exact format of
`langgraph-checkpoint-sqlite` 3.1 (`SqliteSaver`) and `langgraph-checkpoint` 4.x
(`JsonPlusSerializer`: msgpack payloads, LangChain messages as Pydantic v2 extension
values), straight with SQL and ormsgpack. Neither agentctl nor LangGraph is imported,
so the data does not depend on the code being measured.

    python bench/make_langgraph_db.py bench/data/lg.db                 # 1,000,000 / 10,000
    python bench/make_langgraph_db.py bench/data/lg-small.db --threads 50 --checkpoints 5000

Each thread is an agent loop as LangGraph's StateGraph writes it: an `input` checkpoint
(step -1, the input on `__start__`), then `loop` checkpoints alternating the `agent`
node (an AI message with a tool call, or the final answer) and the `tools` node (a tool
message); channels `messages`, `turns`, `branch:to:agent` / `branch:to:tools`, with
LangGraph's channel versions, versions_seen and updated_channels; ids are UUIDv6 with
the step as clock sequence, as LangGraph makes them; every checkpoint but a thread's head
has the pending writes of the task that ran from it (`writes`, task_path as LangGraph's).
One difference from a real run, to keep the file to a few GB: the `messages` channel
holds the last `--window` messages (as a graph that trims its history would), not the
whole conversation.

With a `postgresql://` DSN instead of a file, the same data goes into the layout of
`langgraph-checkpoint-postgres` 3.2 (`PostgresSaver`: its migrations, primitive channel
values inline in the checkpoint JSONB, the others in `checkpoint_blobs` by version,
`checkpoint_writes`), with COPY through asyncpg; `--meta FILE` is then required.

With `--js` (SQLite only), the same threads in the layout LangGraph.js 1.x's SqliteSaver
(`@langchain/langgraph-checkpoint-sqlite` 1.0) writes: `type` 'json' (UTF-8 JSON),
LangChain.js messages as `{"lc": 1, "type": "constructor", "id": [...], "kwargs": {...}}`,
integer channel versions, a `branch:to:NODE` channel holding the node's name, no
`task_path` column; `tests/formats/test_langgraphjs_rig.py` checks LangGraph.js reads it.

Rows are inserted in time order across threads, as a live server would. Deterministic
for a given seed and size. Prints the ids a benchmark needs as JSON on stdout (and in
PATH.meta.json); one summary line on stderr.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import sqlite3
import sys
import time
import uuid

import ormsgpack

SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
"""

UUID_EPOCH = 0x01B21DD213814000
START_UNIX = 1_745_000_000  # 2025-04-18
SPAN_SECONDS = 60 * 86400
EXT_PYDANTIC_V2 = 5
WORDS = (
    "order refund invoice shipping customer account password reset delay warehouse "
    "payment card address update ticket escalate policy discount coupon tracking "
    "label return window damaged replacement subscription cancel renew plan upgrade "
    "billing cycle statement export report latency error timeout retry cache index"
).split()
TOOLS = ("lookup_order", "search_docs", "create_ticket", "refund", "get_weather", "run_sql")


def uuid6(ticks: int, clock_seq: int, node: int) -> str:
    """LangGraph's uuid6 (langgraph.checkpoint.base.id) for a given 100 ns tick count."""
    value = ((ticks >> 12) & 0xFFFFFFFFFFFF) << 80
    value |= (0x6000 | (ticks & 0x0FFF)) << 64
    value |= ((clock_seq & 0x3FFF) | 0x8000) << 48
    value |= node & 0xFFFFFFFFFFFF
    return str(uuid.UUID(int=value))


def text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def js_message(kind: str, content: str, mid: str, **extra: object) -> dict:
    """A LangChain.js message as LangGraph.js's JSON serializer writes it."""
    kwargs: dict[str, object] = {"content": content}
    if kind == "ai":
        kwargs.update(tool_calls=extra.get("tool_calls", []), invalid_tool_calls=[])
    elif kind == "tool":
        kwargs.update(tool_call_id=extra["tool_call_id"], name=extra["name"])
    kwargs.update(additional_kwargs={}, response_metadata={}, id=mid)
    cls = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}[kind]
    return {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", cls], "kwargs": kwargs}


def message(kind: str, content: str, mid: str, js: bool = False, **extra: object) -> object:
    """A LangChain message as JsonPlusSerializer writes it (its model_dump's keys), or
    (`js`) as LangGraph.js does."""
    if js:
        return js_message(kind, content, mid, **extra)
    if kind == "human":
        module, cls = "langchain_core.messages.human", "HumanMessage"
        dump = {
            "content": content,
            "additional_kwargs": {},
            "response_metadata": {},
            "type": "human",
            "name": None,
            "id": mid,
        }
    elif kind == "ai":
        module, cls = "langchain_core.messages.ai", "AIMessage"
        dump = {
            "content": content,
            "additional_kwargs": {},
            "response_metadata": {},
            "type": "ai",
            "name": None,
            "id": mid,
            "tool_calls": extra.get("tool_calls", []),
            "invalid_tool_calls": [],
            "usage_metadata": None,
        }
    else:
        module, cls = "langchain_core.messages.tool", "ToolMessage"
        dump = {
            "content": content,
            "additional_kwargs": {},
            "response_metadata": {},
            "type": "tool",
            "name": extra["name"],
            "id": mid,
            "tool_call_id": extra["tool_call_id"],
            "artifact": None,
            "status": "success",
        }
    return ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb((module, cls, dump, "model_validate_json")))


class Thread:
    """One simulated agent loop, producing its checkpoints (and writes) in order."""

    def __init__(
        self, thread_id: str, length: int, start: float, rng: random.Random, window: int, js: bool = False
    ):
        self.js = js
        self.id = thread_id
        self.length = length
        self.rng = random.Random(rng.getrandbits(64))
        self.node = self.rng.getrandbits(48)
        self.t = start
        self.window = window
        self.step = -1
        self.messages: list[object] = []
        self.versions: dict[str, object] = {}
        self.seen: dict[str, dict[str, object]] = {"__input__": {}}
        self.parent: str | None = None
        self.turns = 0
        self.pending_call: tuple[str, str] | None = None
        self.done = 0
        self._before: dict[str, object] = {}

    def _bump(self, *channels: str) -> None:
        """One new version for the channels a step updates (LangGraph: the next after
        the greatest version in the checkpoint)."""
        top = max((int(str(v).split(".")[0]) for v in self.versions.values()), default=0) + 1
        version: object = top if self.js else f"{top:032}.{self.rng.random():016}"
        for ch in channels:
            self.versions[ch] = version

    def _mid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def next_row(self) -> tuple[str, str | None, dict, dict, list[str], list[tuple]]:
        """(checkpoint id, parent id, checkpoint, metadata, the channels given a new
        version, the writes (task_id, task_path, idx, channel, type, bytes) of the task
        that ran from the parent)."""
        rng = self.rng
        step = self.step
        ticks = int(self.t * 10_000_000) + UUID_EPOCH
        cid = uuid6(ticks, step, self.node)
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.t)) + (
            f".{int(self.t * 1e3) % 1000:03d}Z" if self.js else f".{int(self.t * 1e6) % 1_000_000:06d}+00:00"
        )
        values: dict[str, object] = {}
        writes: list[tuple[str, object]] = []  # (channel, value) written by the task
        task_node = ""
        if step == -1:
            human = message("human", text(rng, 5, 25), self._mid(), self.js)
            self._bump("__start__")
            values["__start__"] = {"messages": [human]}
            updated = ["__start__"]
            self._pending_input = human
            source = "input"
        elif step == 0:  # __start__ ran: the input lands on messages
            task_node = "__start__"
            self.messages = [self._pending_input]
            writes = [("messages", [self._pending_input]), ("branch:to:agent", None)]
            self.seen["__start__"] = {"__start__": self.versions["__start__"]}
            self._bump("__start__", "messages", "branch:to:agent")
            updated = ["branch:to:agent", "messages"]
            source = "loop"
        elif self.pending_call is None:  # the agent ran
            task_node = "agent"
            self.seen["agent"] = {"branch:to:agent": self.versions["branch:to:agent"]}
            self.turns += 1
            if self.done == self.length - 1:  # the thread's last checkpoint: the answer
                msg = message("ai", text(rng, 10, 60), self._mid(), self.js)
                writes = [("messages", [msg]), ("turns", self.turns)]
                self._bump("messages", "turns", "branch:to:agent")
                updated = ["messages", "turns"]
            else:
                call_id = "call_" + format(rng.getrandbits(64), "016x")
                name = rng.choice(TOOLS)
                call = {
                    "name": name,
                    "args": {"query": text(rng, 1, 4), "limit": rng.randint(1, 20)},
                    "id": call_id,
                    "type": "tool_call",
                }
                msg = message("ai", text(rng, 0, 12), self._mid(), self.js, tool_calls=[call])
                writes = [("messages", [msg]), ("turns", self.turns), ("branch:to:tools", None)]
                self._bump("messages", "turns", "branch:to:agent", "branch:to:tools")
                updated = ["branch:to:tools", "messages", "turns"]
                self.pending_call = (call_id, name)
            self.messages = (self.messages + [msg])[-self.window :]
            source = "loop"
        else:  # the tools node ran
            task_node = "tools"
            self.seen["tools"] = {"branch:to:tools": self.versions["branch:to:tools"]}
            call_id, name = self.pending_call
            msg = message("tool", text(rng, 5, 80), self._mid(), self.js, name=name, tool_call_id=call_id)
            writes = [("messages", [msg]), ("branch:to:agent", None)]
            self._bump("messages", "branch:to:agent", "branch:to:tools")
            updated = ["branch:to:agent", "messages"]
            self.messages = (self.messages + [msg])[-self.window :]
            self.pending_call = None
            source = "loop"
        if step >= 0:
            values["messages"] = list(self.messages)
            if self.turns:
                values["turns"] = self.turns
            if self.pending_call is not None:  # LangGraph.js: the name of the node that wrote it
                values["branch:to:tools"] = "agent" if self.js else None
            elif "branch:to:agent" in updated:
                values["branch:to:agent"] = task_node if self.js else None
        checkpoint = {
            "v": 4,
            "ts": ts,
            "id": cid,
            "channel_values": values,
            "channel_versions": dict(self.versions),
            "versions_seen": {k: dict(v) for k, v in self.seen.items()},
        }
        if not self.js:
            checkpoint["updated_channels"] = updated
        meta = {"source": source, "step": step, "parents": {}}
        write_rows = []
        if self.parent is not None and writes:
            task_id = str(uuid.UUID(int=rng.getrandbits(128)))
            for idx, (channel, value) in enumerate(writes):
                if self.js:  # the branch's write: the node's name
                    typ, data = (
                        "json",
                        json.dumps(
                            task_node if value is None and channel.startswith("branch:") else value,
                            ensure_ascii=False,
                        ).encode("utf-8"),
                    )
                else:
                    typ, data = ("null", b"") if value is None else ("msgpack", ormsgpack.packb(value))
                write_rows.append((task_id, f"~__pregel_pull, {task_node}", idx, channel, typ, data))
        parent = self.parent
        new_versions = [ch for ch, v in checkpoint["channel_versions"].items() if self._before.get(ch) != v]
        self._before = dict(checkpoint["channel_versions"])
        self.parent = cid
        self.step += 1
        self.done += 1
        self.t += rng.uniform(0.5, 30.0)
        return cid, parent, checkpoint, meta, new_versions, write_rows


def lengths(rng: random.Random, threads: int, total: int, long_steps: int) -> list[int]:
    if threads == 1:
        return [total]
    long_steps = max(2, min(long_steps, total // 10 or 2))
    rest = total - long_steps
    raw = [rng.lognormvariate(0, 1) for _ in range(threads - 1)]
    scale = rest / sum(raw)
    out = [max(2, int(r * scale)) for r in raw]
    diff = rest - sum(out)
    i = 0
    while diff != 0:  # spread the rounding
        j = i % len(out)
        if diff > 0:
            out[j] += 1
            diff -= 1
        elif out[j] > 2:
            out[j] -= 1
            diff += 1
        i += 1
    return [long_steps] + out


PG_MIGRATIONS = [  # langgraph-checkpoint-postgres 3.2's MIGRATIONS, in order (v = index)
    "CREATE TABLE IF NOT EXISTS checkpoint_migrations (v INTEGER PRIMARY KEY);",
    """CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT, type TEXT, checkpoint JSONB NOT NULL,
    metadata JSONB NOT NULL DEFAULT '{}', PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));""",
    """CREATE TABLE IF NOT EXISTS checkpoint_blobs (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', channel TEXT NOT NULL,
    version TEXT NOT NULL, type TEXT NOT NULL, blob BYTEA,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version));""",
    """CREATE TABLE IF NOT EXISTS checkpoint_writes (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT,
    blob BYTEA NOT NULL, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));""",
    "ALTER TABLE checkpoint_blobs ALTER COLUMN blob DROP not null;",
    "SELECT 1;",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoints_thread_id_idx ON checkpoints(thread_id);",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_blobs_thread_id_idx ON checkpoint_blobs(thread_id);",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS checkpoint_writes_thread_id_idx ON checkpoint_writes(thread_id);",
    "ALTER TABLE checkpoint_writes ADD COLUMN IF NOT EXISTS task_path TEXT NOT NULL DEFAULT '';",
]


class SQLiteWriter:
    """SqliteSaver's layout: the whole checkpoint as one msgpack payload (`js`:
    LangGraph.js's, one JSON payload, no task_path)."""

    def __init__(self, path: str, replace: bool, js: bool = False):
        self.js = js
        if os.path.exists(path):
            if not replace:
                raise SystemExit(f"make_langgraph_db: {path} exists (use --replace)")
            for suffix in ("", "-wal", "-shm", "-journal"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")  # as SqliteSaver.setup()
        self.conn.execute("PRAGMA synchronous = OFF")
        self.conn.executescript(
            SCHEMA.replace("    task_path TEXT NOT NULL DEFAULT '',\n", "") if js else SCHEMA
        )
        self.cps: list[tuple] = []
        self.ws: list[tuple] = []

    def add(
        self,
        tid: str,
        cid: str,
        parent: str | None,
        checkpoint: dict,
        meta: dict,
        new_versions: list[str],
        writes: list[tuple],
    ) -> None:
        if self.js:
            self.cps.append(
                (
                    tid,
                    "",
                    cid,
                    parent,
                    "json",
                    json.dumps(checkpoint, ensure_ascii=False).encode("utf-8"),
                    json.dumps(meta, ensure_ascii=False).encode("utf-8"),
                )
            )
            self.ws.extend((tid, "", parent, w[0], w[2], w[3], w[4], w[5]) for w in writes)
            return
        self.cps.append(
            (
                tid,
                "",
                cid,
                parent,
                "msgpack",
                ormsgpack.packb(checkpoint),
                json.dumps(meta, ensure_ascii=False).encode("utf-8"),
            )
        )
        self.ws.extend((tid, "", parent, *w) for w in writes)

    def flush(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", self.cps)
        if self.js:
            self.conn.executemany(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
                "idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self.ws,
            )
        else:
            self.conn.executemany(
                "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
                "task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self.ws,
            )
        self.conn.execute("COMMIT")
        self.cps.clear()
        self.ws.clear()

    def close(self) -> int:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()
        return os.path.getsize(self.path)


class PostgresWriter:
    """PostgresSaver's layout: primitive channel values inline in the checkpoint JSONB,
    the others in checkpoint_blobs under the version that wrote them."""

    def __init__(self, dsn: str, replace: bool):
        import asyncio

        import asyncpg

        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(dsn))
        run = self.loop.run_until_complete
        existing = run(self.conn.fetchval("SELECT to_regclass('checkpoints') IS NOT NULL"))
        if existing:
            if not replace and run(self.conn.fetchval("SELECT EXISTS (SELECT 1 FROM checkpoints)")):
                raise SystemExit("make_langgraph_db: the checkpoints table is not empty (use --replace)")
            run(
                self.conn.execute(
                    "DROP TABLE IF EXISTS checkpoints, checkpoint_blobs, "
                    "checkpoint_writes, checkpoint_migrations"
                )
            )
        for sql in PG_MIGRATIONS:
            run(self.conn.execute(sql))
        run(
            self.conn.executemany(
                "INSERT INTO checkpoint_migrations (v) VALUES ($1)", [(v,) for v in range(len(PG_MIGRATIONS))]
            )
        )
        self.cps: list[tuple] = []
        self.blobs: list[tuple] = []
        self.ws: list[tuple] = []

    def add(
        self,
        tid: str,
        cid: str,
        parent: str | None,
        checkpoint: dict,
        meta: dict,
        new_versions: list[str],
        writes: list[tuple],
    ) -> None:
        inline = dict(checkpoint)
        values = {}
        for k, v in checkpoint["channel_values"].items():
            if v is None or isinstance(v, (str, int, float, bool)):
                values[k] = v
            elif k in new_versions:
                self.blobs.append(
                    (tid, "", k, checkpoint["channel_versions"][k], "msgpack", ormsgpack.packb(v))
                )
        inline["channel_values"] = values
        self.cps.append((tid, "", cid, parent, None, json.dumps(inline), json.dumps(meta)))
        self.ws.extend((tid, "", parent, w[0], w[2], w[3], w[4], w[5], w[1]) for w in writes)

    def flush(self) -> None:
        async def go() -> None:
            async with self.conn.transaction():
                await self.conn.copy_records_to_table(
                    "checkpoints",
                    records=self.cps,
                    columns=[
                        "thread_id",
                        "checkpoint_ns",
                        "checkpoint_id",
                        "parent_checkpoint_id",
                        "type",
                        "checkpoint",
                        "metadata",
                    ],
                )
                await self.conn.copy_records_to_table(
                    "checkpoint_blobs",
                    records=self.blobs,
                    columns=["thread_id", "checkpoint_ns", "channel", "version", "type", "blob"],
                )
                await self.conn.copy_records_to_table(
                    "checkpoint_writes",
                    records=self.ws,
                    columns=[
                        "thread_id",
                        "checkpoint_ns",
                        "checkpoint_id",
                        "task_id",
                        "idx",
                        "channel",
                        "type",
                        "blob",
                        "task_path",
                    ],
                )

        self.loop.run_until_complete(go())
        self.cps.clear()
        self.blobs.clear()
        self.ws.clear()

    def close(self) -> int:
        size = self.loop.run_until_complete(
            self.conn.fetchval(
                "SELECT pg_total_relation_size('checkpoints') + pg_total_relation_size('checkpoint_blobs')"
                " + pg_total_relation_size('checkpoint_writes')"
            )
        )
        self.loop.run_until_complete(self.conn.execute("ANALYZE"))
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()
        return int(size)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", help="a SQLite file, or a postgresql:// DSN (its current schema)")
    ap.add_argument("--threads", type=int, default=10_000)
    ap.add_argument("--checkpoints", type=int, default=1_000_000)
    ap.add_argument("--long-steps", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=8, help="messages kept in the messages channel")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-writes", action="store_true", help="leave the writes table empty")
    ap.add_argument("--replace", action="store_true")
    ap.add_argument("--js", action="store_true", help="LangGraph.js's SqliteSaver layout (JSON rows)")
    ap.add_argument("--meta")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.checkpoints < 2 * args.threads:
        ap.error("need at least one thread and two checkpoints per thread")
    pg = args.target.lower().startswith(("postgres://", "postgresql://"))
    if pg and args.js:
        ap.error("--js writes a SQLite file (LangGraph.js's SqliteSaver)")
    if pg and not args.meta:
        ap.error("--meta FILE is needed with a Postgres target")
    if args.meta:  # made before the load: a missing folder must not fail it at the end
        os.makedirs(os.path.dirname(os.path.abspath(args.meta)), exist_ok=True)
    began = time.time()
    rng = random.Random(args.seed)
    sizes = lengths(rng, args.threads, args.checkpoints, args.long_steps)
    threads = []
    for i, n in enumerate(sizes):
        name = "long-thread" if i == 0 else f"{rng.choice(('support', 'support', 'coder'))}-{i:06d}"
        start = START_UNIX + rng.uniform(0, SPAN_SECONDS * 0.9)
        threads.append(Thread(name, n, start, rng, args.window, args.js))
    writer = (
        PostgresWriter(args.target, args.replace) if pg else SQLiteWriter(args.target, args.replace, args.js)
    )
    heap = [(t.t, i) for i, t in enumerate(threads)]
    heapq.heapify(heap)
    rows = writes = pending = 0
    sample: dict[str, str] = {}
    while heap:
        _, i = heapq.heappop(heap)
        t = threads[i]
        cid, parent, checkpoint, meta, new_versions, wrows = t.next_row()
        if args.no_writes:
            wrows = []
        writer.add(t.id, cid, parent, checkpoint, meta, new_versions, wrows)
        rows += 1
        pending += 1
        writes += len(wrows)
        if i == 1 and t.done == t.length // 2:
            sample = {"sample_thread": t.id, "sample_checkpoint": cid}
        if t.done < t.length:
            heapq.heappush(heap, (t.t, i))
        if pending >= 5000:
            writer.flush()
            pending = 0
            if args.verbose and rows % 100_000 == 0:
                print(f"  {rows} rows, {time.time() - began:.1f} s", file=sys.stderr)
    writer.flush()
    size = writer.close()
    meta_out = {
        "long_thread": "long-thread",
        **sample,
        "rows": rows,
        "threads": len(threads),
        "writes": writes,
        "seed": args.seed,
        "format": "langgraph",
        "written_by": "LangGraph.js" if args.js else "LangGraph",
    }
    text_out = json.dumps(meta_out)
    print(text_out)
    with open(args.meta or args.target + ".meta.json", "w") as fh:
        fh.write(text_out + "\n")
    print(
        f"make_langgraph_db: {'postgres' if pg else 'sqlite'} rows={rows} writes={writes} "
        f"threads={len(threads)} bytes={size} seconds={time.time() - began:.1f}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
