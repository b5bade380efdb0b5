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
WORDS = ("order refund invoice shipping customer account password reset delay warehouse "
         "payment card address update ticket escalate policy discount coupon tracking "
         "label return window damaged replacement subscription cancel renew plan upgrade "
         "billing cycle statement export report latency error timeout retry cache index").split()
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


def message(kind: str, content: str, mid: str, **extra: object) -> ormsgpack.Ext:
    """A LangChain message as JsonPlusSerializer writes it (its model_dump's keys)."""
    if kind == "human":
        module, cls = "langchain_core.messages.human", "HumanMessage"
        dump = {"content": content, "additional_kwargs": {}, "response_metadata": {},
                "type": "human", "name": None, "id": mid}
    elif kind == "ai":
        module, cls = "langchain_core.messages.ai", "AIMessage"
        dump = {"content": content, "additional_kwargs": {}, "response_metadata": {},
                "type": "ai", "name": None, "id": mid, "tool_calls": extra.get("tool_calls", []),
                "invalid_tool_calls": [], "usage_metadata": None}
    else:
        module, cls = "langchain_core.messages.tool", "ToolMessage"
        dump = {"content": content, "additional_kwargs": {}, "response_metadata": {},
                "type": "tool", "name": extra["name"], "id": mid,
                "tool_call_id": extra["tool_call_id"], "artifact": None, "status": "success"}
    return ormsgpack.Ext(EXT_PYDANTIC_V2, ormsgpack.packb((module, cls, dump, "model_validate_json")))


class Thread:
    """One simulated agent loop, producing its checkpoints (and writes) in order."""

    def __init__(self, thread_id: str, length: int, start: float, rng: random.Random, window: int):
        self.id = thread_id
        self.length = length
        self.rng = random.Random(rng.getrandbits(64))
        self.node = self.rng.getrandbits(48)
        self.t = start
        self.window = window
        self.step = -1
        self.messages: list[ormsgpack.Ext] = []
        self.versions: dict[str, str] = {}
        self.seen: dict[str, dict[str, str]] = {"__input__": {}}
        self.parent: str | None = None
        self.turns = 0
        self.pending_call: tuple[str, str] | None = None
        self.done = 0

    def _bump(self, *channels: str) -> None:
        """One new version for the channels a step updates (LangGraph: the next after
        the greatest version in the checkpoint)."""
        top = max((int(v.split(".")[0]) for v in self.versions.values()), default=0) + 1
        version = f"{top:032}.{self.rng.random():016}"
        for ch in channels:
            self.versions[ch] = version

    def _mid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def next_row(self) -> tuple[tuple, list[tuple]]:
        """(the checkpoint row, the writes of the task that runs from the previous one)."""
        rng = self.rng
        step = self.step
        ticks = int(self.t * 10_000_000) + UUID_EPOCH
        cid = uuid6(ticks, step, self.node)
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.t)) + f".{int(self.t * 1e6) % 1_000_000:06d}+00:00"
        values: dict[str, object] = {}
        writes: list[tuple[str, object]] = []  # (channel, value) written by the task
        task_node = ""
        if step == -1:
            human = message("human", text(rng, 5, 25), self._mid())
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
                msg = message("ai", text(rng, 10, 60), self._mid())
                writes = [("messages", [msg]), ("turns", self.turns)]
                self._bump("messages", "turns", "branch:to:agent")
                updated = ["messages", "turns"]
            else:
                call_id = "call_" + format(rng.getrandbits(64), "016x")
                name = rng.choice(TOOLS)
                call = {"name": name, "args": {"query": text(rng, 1, 4), "limit": rng.randint(1, 20)},
                        "id": call_id, "type": "tool_call"}
                msg = message("ai", text(rng, 0, 12), self._mid(), tool_calls=[call])
                writes = [("messages", [msg]), ("turns", self.turns), ("branch:to:tools", None)]
                self._bump("messages", "turns", "branch:to:agent", "branch:to:tools")
                updated = ["branch:to:tools", "messages", "turns"]
                self.pending_call = (call_id, name)
            self.messages = (self.messages + [msg])[-self.window:]
            source = "loop"
        else:  # the tools node ran
            task_node = "tools"
            self.seen["tools"] = {"branch:to:tools": self.versions["branch:to:tools"]}
            call_id, name = self.pending_call
            msg = message("tool", text(rng, 5, 80), self._mid(), name=name, tool_call_id=call_id)
            writes = [("messages", [msg]), ("branch:to:agent", None)]
            self._bump("messages", "branch:to:agent", "branch:to:tools")
            updated = ["branch:to:agent", "messages"]
            self.messages = (self.messages + [msg])[-self.window:]
            self.pending_call = None
            source = "loop"
        if step >= 0:
            values["messages"] = list(self.messages)
            if self.turns:
                values["turns"] = self.turns
            if self.pending_call is not None:
                values["branch:to:tools"] = None
            elif "branch:to:agent" in updated:
                values["branch:to:agent"] = None
        checkpoint = {"v": 4, "ts": ts, "id": cid, "channel_values": values,
                      "channel_versions": dict(self.versions),
                      "versions_seen": {k: dict(v) for k, v in self.seen.items()},
                      "updated_channels": updated}
        meta = json.dumps({"source": source, "step": step, "parents": {}}, ensure_ascii=False)
        row = (self.id, "", cid, self.parent, "msgpack", ormsgpack.packb(checkpoint),
               meta.encode("utf-8"))
        write_rows = []
        if self.parent is not None and writes:
            task_id = str(uuid.UUID(int=rng.getrandbits(128)))
            for idx, (channel, value) in enumerate(writes):
                typ, data = ("null", b"") if value is None else ("msgpack", ormsgpack.packb(value))
                write_rows.append((self.id, "", self.parent, task_id, f"~__pregel_pull, {task_node}",
                                   idx, channel, typ, data))
        self.parent = cid
        self.step += 1
        self.done += 1
        self.t += rng.uniform(0.5, 30.0)
        return row, write_rows


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--threads", type=int, default=10_000)
    ap.add_argument("--checkpoints", type=int, default=1_000_000)
    ap.add_argument("--long-steps", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=8, help="messages kept in the messages channel")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-writes", action="store_true", help="leave the writes table empty")
    ap.add_argument("--replace", action="store_true")
    ap.add_argument("--meta")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.checkpoints < 2 * args.threads:
        ap.error("need at least one thread and two checkpoints per thread")
    if os.path.exists(args.path):
        if not args.replace:
            print(f"make_langgraph_db: {args.path} exists (use --replace)", file=sys.stderr)
            return 2
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(args.path + suffix):
                os.remove(args.path + suffix)
    os.makedirs(os.path.dirname(os.path.abspath(args.path)), exist_ok=True)
    began = time.time()
    rng = random.Random(args.seed)
    sizes = lengths(rng, args.threads, args.checkpoints, args.long_steps)
    threads = []
    for i, n in enumerate(sizes):
        name = "long-thread" if i == 0 else f"{rng.choice(('support', 'support', 'coder'))}-{i:06d}"
        start = START_UNIX + rng.uniform(0, SPAN_SECONDS * 0.9)
        threads.append(Thread(name, n, start, rng, args.window))
    conn = sqlite3.connect(args.path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")  # as SqliteSaver.setup()
    conn.execute("PRAGMA synchronous = OFF")
    conn.executescript(SCHEMA)
    heap = [(t.t, i) for i, t in enumerate(threads)]
    heapq.heapify(heap)
    cps: list[tuple] = []
    ws: list[tuple] = []
    rows = writes = 0
    sample: dict[str, str] = {}

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)", cps)
        if ws:
            conn.executemany("INSERT INTO writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", ws)
        conn.execute("COMMIT")
        cps.clear()
        ws.clear()

    while heap:
        _, i = heapq.heappop(heap)
        t = threads[i]
        row, wrows = t.next_row()
        cps.append(row)
        rows += 1
        if not args.no_writes:
            ws.extend(wrows)
            writes += len(wrows)
        if i == 1 and t.done == t.length // 2:
            sample = {"sample_thread": t.id, "sample_checkpoint": row[2]}
        if t.done < t.length:
            heapq.heappush(heap, (t.t, i))
        if len(cps) >= 5000:
            flush()
            if args.verbose and rows % 100_000 == 0:
                print(f"  {rows} rows, {time.time() - began:.1f} s", file=sys.stderr)
    flush()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    meta = {"long_thread": "long-thread", **sample, "rows": rows, "threads": len(threads),
            "writes": writes, "seed": args.seed, "format": "langgraph"}
    text_out = json.dumps(meta)
    print(text_out)
    with open(args.meta or args.path + ".meta.json", "w") as fh:
        fh.write(text_out + "\n")
    print(f"make_langgraph_db: sqlite rows={rows} writes={writes} threads={len(threads)} "
          f"bytes={os.path.getsize(args.path)} seconds={time.time() - began:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
