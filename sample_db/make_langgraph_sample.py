"""Write the bundled LangGraph sample database with the real LangGraph (no model).

    python sample_db/make_langgraph_sample.py [OUT]   (default: agentctl/sample/langgraph.db)

Needs the test extras (langgraph, langgraph-checkpoint-sqlite). Graphs of plain Python
nodes write through LangGraph's own `SqliteSaver`:

- `support-refund`: a support agent loop (agent -> tools -> agent ...) with tool calls
  and tool messages, then an operator's `update_state` edit;
- `support-refund-replay`: the same loop, then replayed from an older checkpoint (a
  fork in the thread, LangGraph's time travel) and a `__copy__` of one;
- `deploy-approval`: waits at an `interrupt` for a human's approval (pending);
- `deploy-approved`: the same, resumed with `Command(resume=...)`;
- `research`: two parallel branches, then a subgraph (its namespace is the thread
  `research|researcher:<task id>` in agentctl);
- `flaky-tool`: a node that failed (its error kept as a pending write).

Deterministic: LangGraph's clock (checkpoint ids and `ts`) is a fixed fake one, the
random module is seeded and every message has an id, so the file changes only when
this script or LangGraph's format does (the rows are copied in key order into the final
file, since parallel nodes write in any order). The file is in rollback-journal mode
(not WAL) so that a read-only copy in site-packages opens without a -shm file.
"""

import operator
import random
import sqlite3
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, TypedDict

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "agentctl" / "sample" / "langgraph.db"
T0 = datetime(2026, 11, 2, 9, 0, 0, tzinfo=timezone.utc)


class FakeClock:
    """LangGraph's time: each reading is 1.25 s after the previous one."""

    def __init__(self) -> None:
        self.now = T0

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1.25)
        return self.now

    def time_ns(self) -> int:
        return int(self.tick().timestamp() * 1_000_000) * 1000


def install_clock(clock: FakeClock) -> None:
    import langgraph.checkpoint.base as base
    import langgraph.pregel._checkpoint as pregel_cp

    class FakeDatetime(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ANN001 - datetime's signature
            return clock.tick().astimezone(tz) if tz else clock.tick()

    time.time_ns = clock.time_ns  # langgraph.checkpoint.base.id.uuid6 reads time.time_ns()
    base.datetime = FakeDatetime
    pregel_cp.datetime = FakeDatetime


def build(out: Path) -> None:
    random.seed(20261102)
    install_clock(FakeClock())

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import Command, interrupt

    ids = iter(range(1, 1_000_000))

    def mid(prefix: str) -> str:
        return f"{prefix}-{next(ids):04d}"

    # ---- a support agent with tools ------------------------------------------------
    class Support(TypedDict):
        messages: Annotated[list, add_messages]
        order_id: str
        refund_cents: int

    tool_plan = [
        ("lookup_order", {"order_id": "A-1042"}, '{"status": "delivered", "total_cents": 12999}'),
        ("check_policy", {"days_since_delivery": 12}, '{"refundable": true, "window_days": 30}'),
        ("issue_refund", {"order_id": "A-1042", "cents": 12999}, '{"refund_id": "R-77", "ok": true}'),
    ]

    def agent(s):
        done = sum(isinstance(m, ToolMessage) for m in s["messages"])
        if done < len(tool_plan):
            name, args, _ = tool_plan[done]
            call = {"name": name, "args": args, "id": f"call_{name}"}
            return {
                "messages": [
                    AIMessage(content=f"Let me {name.replace('_', ' ')}.", tool_calls=[call], id=mid("ai"))
                ],
                "order_id": "A-1042",
            }
        return {
            "messages": [AIMessage(content="Your refund R-77 of $129.99 is on its way.", id=mid("ai"))],
            "refund_cents": 12999,
        }

    def tools(s):
        out = []
        for tc in s["messages"][-1].tool_calls:
            result = next(r for n, _, r in tool_plan if n == tc["name"])
            out.append(ToolMessage(content=result, tool_call_id=tc["id"], name=tc["name"], id=mid("tool")))
        return {"messages": out}

    def route(s):
        return "tools" if getattr(s["messages"][-1], "tool_calls", None) else END

    g = StateGraph(Support)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")

    # ---- human approval ------------------------------------------------------------
    class Deploy(TypedDict):
        service: str
        approved_by: str
        status: str

    def ask(s):
        who = interrupt({"question": f"Deploy {s['service']} to production?", "risk": "medium"})
        return {"approved_by": who}

    def ship(s):
        return {"status": f"deployed by {s['approved_by']}"}

    d = StateGraph(Deploy)
    d.add_node("ask", ask)
    d.add_node("ship", ship)
    d.add_edge(START, "ask")
    d.add_edge("ask", "ship")
    d.add_edge("ship", END)

    # ---- parallel branches and a subgraph ------------------------------------------
    class Research(TypedDict):
        notes: Annotated[list, operator.add]
        summary: str

    sub = StateGraph(Research)
    sub.add_node("read", lambda s: {"notes": ["read 3 papers on checkpoint pruning"]})
    sub.add_node("write", lambda s: {"summary": f"{len(s['notes'])} notes summarised"})
    sub.add_edge(START, "read")
    sub.add_edge("read", "write")
    sub.add_edge("write", END)

    r = StateGraph(Research)
    r.add_node("search_web", lambda s: {"notes": ["web: LangGraph savers keep every step"]})
    r.add_node("search_docs", lambda s: {"notes": ["docs: prune with keep_latest"]})
    r.add_node("researcher", sub.compile())
    r.add_edge(START, "search_web")
    r.add_edge(START, "search_docs")
    r.add_edge("search_web", "researcher")
    r.add_edge("search_docs", "researcher")
    r.add_edge("researcher", END)

    # ---- a failing tool -------------------------------------------------------------
    def fetch(s):
        raise TimeoutError("inventory service timed out after 30 s")

    f = StateGraph(Deploy)
    f.add_node("prepare", lambda s: {"status": "preparing"})
    f.add_node("fetch_inventory", fetch)
    f.add_edge(START, "prepare")
    f.add_edge("prepare", "fetch_inventory")
    f.add_edge("fetch_inventory", END)

    for suffix in ("", "-journal", "-wal", "-shm", ".sorted"):
        Path(str(out) + suffix).unlink(missing_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(out), check_same_thread=False)
    saver = SqliteSaver(conn)

    support = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "support-refund"}}
    support.invoke(
        {
            "messages": [
                HumanMessage(content="My order A-1042 arrived broken, refund please.", id=mid("human"))
            ]
        },
        cfg,
    )
    support.update_state(
        cfg, {"messages": [HumanMessage(content="(operator) customer confirmed by phone", id=mid("human"))]}
    )

    rcfg = {"configurable": {"thread_id": "support-refund-replay"}}
    support.invoke({"messages": [HumanMessage(content="Refund order A-1042?", id=mid("human"))]}, rcfg)
    old = [s for s in support.get_state_history(rcfg) if s.metadata["step"] == 2][0]
    support.invoke(None, old.config)  # replay: a fork in place
    support.update_state(old.config, None, as_node="__copy__")  # a copy of an old one

    deploy = d.compile(checkpointer=saver)
    deploy.invoke(
        {"service": "billing-api", "approved_by": "", "status": "pending"},
        {"configurable": {"thread_id": "deploy-approval"}},
    )
    acfg = {"configurable": {"thread_id": "deploy-approved"}}
    deploy.invoke({"service": "search-api", "approved_by": "", "status": "pending"}, acfg)
    deploy.invoke(Command(resume="alice"), acfg)

    research = r.compile(checkpointer=saver)
    research.invoke({"notes": [], "summary": ""}, {"configurable": {"thread_id": "research"}})

    flaky = f.compile(checkpointer=saver)
    try:
        flaky.invoke(
            {"service": "shop", "approved_by": "", "status": ""},
            {"configurable": {"thread_id": "flaky-tool"}},
        )
    except TimeoutError:
        pass

    conn.commit()
    conn.close()
    # Parallel nodes write from threads in any order: copy the rows in key order into
    # the final file, so that it is the same bytes every time.
    final = sqlite3.connect(str(out) + ".sorted", isolation_level=None)
    final.execute("ATTACH DATABASE ? AS src", (str(out),))
    for (sql,) in final.execute("SELECT sql FROM src.sqlite_master WHERE type = 'table'").fetchall():
        final.execute(sql)
    final.execute(
        "INSERT INTO checkpoints SELECT * FROM src.checkpoints "
        "ORDER BY thread_id, checkpoint_ns, checkpoint_id"
    )
    final.execute(
        "INSERT INTO writes SELECT * FROM src.writes "
        "ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_id, idx"
    )
    final.execute("DETACH DATABASE src")
    final.execute("VACUUM")
    final.close()
    for suffix in ("", "-journal", "-wal", "-shm"):
        Path(str(out) + suffix).unlink(missing_ok=True)
    Path(str(out) + ".sorted").rename(out)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    build(out)
    conn = sqlite3.connect(str(out))
    n = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    w = conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0]
    conn.close()
    print(f"{out}: {n} checkpoints, {w} writes, {out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
