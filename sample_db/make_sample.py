"""Write the bundled sample database through agentctl's own library.

    python sample_db/make_sample.py [OUT]   (default: agentctl/sample/checkpoints.db)

Deterministic: fixed clock and seed, so the file only changes when this script does.
It holds a support agent's and a coding agent's threads with tool and LLM calls, a
branch off a middle step and its later merge (made with `engine.branch` and
`engine.merge_branch`; the op log they write is dropped, the sample holds only the
format's `checkpoints` table), a 240-step agent loop, Chinese text, and a state that grows.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentctl.engine import CheckpointEngine, CheckpointGC, SnapshotConfig  # noqa: E402
from agentctl.model import Checkpoint, CheckpointMetadata  # noqa: E402
from agentctl.storage.agentos.oplog import SIDE_TABLES  # noqa: E402
from agentctl.storage.agentos.sqlite import SQLiteCheckpointer  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "agentctl" / "sample" / "checkpoints.db"
T0 = datetime(2026, 11, 2, 9, 0, 0, tzinfo=timezone.utc)


class Writer:
    def __init__(self, cp: SQLiteCheckpointer, rng: random.Random):
        self.cp = cp
        self.rng = rng
        self.clock = T0

    def tick(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.isoformat()

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    async def put(
        self,
        thread,
        step,
        messages,
        state,
        tools,
        tags,
        parent,
        next_node="",
        cid=None,
        summary=None,
        seconds=7.0,
    ):
        cid = cid or f"ckpt-{thread}-{step}-{self.hex(6)}"
        if summary is None:
            last = messages[-1] if messages else {}
            summary = (
                f"[{last.get('role', 'unknown')}] {str(last.get('content', ''))[:100]}"
                if messages
                else f"State: {len(state)} keys"
            )
        cp = Checkpoint(
            CheckpointMetadata(thread, cid, step, parent, self.tick(seconds), list(tags), summary),
            [dict(m) for m in messages],
            dict(state),
            dict(tools),
            next_node,
        )
        await self.cp.put(cp)
        return cid


async def support_thread(
    w: Writer, thread: str, customer: str, order: str, issue: str, chinese: bool = False
) -> str:
    msgs = [{"role": "system", "content": "You are a helpful support agent for Acme Store."}]
    state = {"customer": customer, "order_id": order, "stage": "triage", "tickets": []}
    parent = None
    step = 0
    script = [
        ("user", issue, "llm_call", "classify"),
        ("assistant", None, "tool_call", "lookup_order"),
        ("tool", None, "tool_call", "respond"),
        (
            "assistant",
            "退款已提交，3-5 个工作日内到账。"
            if chinese
            else f"I've found order {order}. A refund has been issued; it takes 3-5 business days.",
            "llm_call",
            "confirm",
        ),
        ("user", "谢谢！" if chinese else "Thanks, that's all.", "state_change", "end"),
    ]
    for role, content, trigger, node in script:
        step += 1
        tools = {}
        if role == "assistant" and content is None:
            msgs.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"id": f"call_{w.hex(8)}", "name": "lookup_order", "arguments": {"order_id": order}}
                    ],
                }
            )
        elif role == "tool":
            tools = {
                "lookup_order": {
                    "order_id": order,
                    "status": "delivered",
                    "total": 59.9,
                    "items": [{"sku": "A-100", "qty": 1}],
                }
            }
            msgs.append({"role": "tool", "name": "lookup_order", "content": str(tools["lookup_order"])})
            state["stage"] = "refund"
            state["tickets"] = state["tickets"] + [f"T-{w.hex(4)}"]
        else:
            msgs.append({"role": role, "content": content})
        if node == "end":
            state["stage"] = "closed"
        parent = await w.put(thread, step, msgs, state, tools, [trigger], parent, node)
    return parent


async def coder_thread(w: Writer, thread: str, task: str, steps: int) -> list[str]:
    msgs = [
        {"role": "system", "content": "You are a coding agent. Use tools to edit and test."},
        {"role": "user", "content": task},
    ]
    state = {"task": task, "files": {}, "test_runs": 0, "plan": ["read", "edit", "test"]}
    ids: list[str] = []
    parent = None
    for step in range(1, steps + 1):
        kind = ("llm_call", "tool_call", "state_change")[step % 3]
        tools = {}
        if kind == "tool_call":
            path = f"src/module_{step % 4}.py"
            state["files"] = {**state["files"], path: {"lines": 40 + step * 3, "edited": step}}
            tools = {"write_file": {"path": path, "bytes": 1200 + step * 37}}
            msgs = msgs + [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": "write_file", "arguments": {"path": path}}],
                },
                {"role": "tool", "name": "write_file", "content": f"wrote {path}"},
            ]
        elif kind == "state_change":
            state["test_runs"] += 1
            passed = step > steps // 2
            state["last_test"] = {"passed": 12 if passed else 9, "failed": 0 if passed else 3}
            tools = {
                "run_tests": {
                    "exit_code": 0 if passed else 1,
                    "output": "12 passed" if passed else "9 passed, 3 failed",
                }
            }
            msgs = msgs + [{"role": "tool", "name": "run_tests", "content": tools["run_tests"]["output"]}]
        else:
            msgs = msgs + [
                {
                    "role": "assistant",
                    "content": f"Step {step}: reviewing the failures and planning the next edit.",
                }
            ]
        parent = await w.put(
            thread, step, msgs, state, tools, [kind], parent, ("agent", "tools", "tests")[step % 3]
        )
        ids.append(parent)
    return ids


async def build(out: Path) -> None:
    if out.exists():
        out.unlink()
    for suffix in ("-wal", "-shm"):
        p = Path(str(out) + suffix)
        if p.exists():
            p.unlink()
    rng = random.Random(20261102)
    cp = SQLiteCheckpointer(str(out))
    w = Writer(cp, rng)
    await support_thread(
        w,
        "support-1042",
        "Dana Whitfield",
        "A-77812",
        "My order A-77812 arrived damaged, can I get a refund?",
    )
    await support_thread(
        w, "support-1043", "李雷", "A-77950", "你好，我的订单 A-77950 还没有到，可以退款吗？", chinese=True
    )
    await support_thread(w, "support-1044", "Sam Ortiz", "A-78001", "I was charged twice for order A-78001.")

    # A coding thread, a branch off a middle step that tries another fix, and its merge,
    # made by the engine (its ids and clock drawn from the same seeded stream).
    engine = CheckpointEngine(
        cp, SnapshotConfig(gc_policy=CheckpointGC.KEEP_ALL), rng=rng, clock=lambda: w.tick(7.0)
    )
    main = await coder_thread(w, "coder-fix-flaky-test", "Fix the flaky test in tests/test_io.py", 12)
    base_id = main[5]
    base = await cp.get(base_id)
    branch = await engine.branch(base_id, "retry-backoff")
    parent = f"ckpt-{branch}-0"
    bstate = dict(base.state)
    bmsgs = list(base.messages)
    for step in range(1, 4):
        bmsgs = bmsgs + [{"role": "assistant", "content": f"Trying exponential backoff, attempt {step}."}]
        bstate = {**bstate, "retry": {"strategy": "exponential", "attempts": step}}
        parent = await w.put(
            branch, step, bmsgs, bstate, {"run_tests": {"exit_code": 0}}, ["tool_call"], parent, "tests"
        )
    await engine.merge_branch(branch, "coder-fix-flaky-test")

    await coder_thread(w, "coder-add-cli-flag", "Add a --verbose flag to the CLI", 9)

    # A long agent loop in the style of the original writer's agent loop.
    session = "loop-research-7"
    parent = None
    notes: list[str] = []
    for i in range(1, 241):
        if i % 10 == 0:
            notes = notes + [f"finding {i // 10}: source {w.hex(5)} looks relevant"]
        state = {"iteration": i, "notes": notes, "budget_left": 1000 - i * 3}
        msgs = [
            {"role": "user", "content": "Research the history of the transistor."},
            {"role": "assistant", "content": f"Iteration {i}: reading source {i % 17}."},
        ]
        parent = await w.put(
            session,
            i,
            msgs,
            state,
            {"fetch": {"url": f"https://example.org/{i}"}},
            ["auto", f"iter_{i}"],
            parent,
            "loop",
            cid=f"ckpt-{session}-{i:06d}",
            seconds=3.0,
        )
    await cp.close()
    # The library made the file in WAL mode; the shipped copy is one self-contained file
    # in rollback mode, so it reads even from a read-only install directory.
    import sqlite3

    conn = sqlite3.connect(out)
    for table in SIDE_TABLES:  # the sample holds only the format's table
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("VACUUM")
    conn.close()


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    os.makedirs(out.parent, exist_ok=True)
    asyncio.run(build(out))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
