"""The LangGraph format against the real LangGraph (no model): graphs of plain Python
nodes write with SqliteSaver and PostgresSaver; agentctl reads them through the Store
contract and must see what LangGraph itself sees.
"""

from __future__ import annotations

import json
import operator
import os
import shutil
import sqlite3
import subprocess
import sys
from typing import Annotated, Any, TypedDict

import ormsgpack
import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import add_messages  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from agentctl.storage import detect, open_store  # noqa: E402
from agentctl.storage.langgraph.store import address, is_internal_channel  # noqa: E402
from tests.support.contract_formats import psycopg_dsn  # the rig's DSN as libpq takes it
from tests.support.rig import REPO

# ---- graphs ----------------------------------------------------------------------------


class AgentState(TypedDict):
    messages: Annotated[list, add_messages]
    count: int


def agent_graph():
    def agent(s):
        tools_done = sum(isinstance(m, ToolMessage) for m in s["messages"])
        n = s.get("count", 0) + 1
        if tools_done < 2:
            call = {"name": "add", "args": {"a": tools_done, "b": 2}, "id": f"call{tools_done}"}
            return {"messages": [AIMessage(content=f"thinking {n}", tool_calls=[call])], "count": n}
        return {"messages": [AIMessage(content="the answer is 42")], "count": n}

    def tools(s):
        out = []
        for tc in s["messages"][-1].tool_calls:
            out.append(
                ToolMessage(
                    content=str(tc["args"]["a"] + tc["args"]["b"]), tool_call_id=tc["id"], name=tc["name"]
                )
            )
        return {"messages": out}

    def route(s):
        return "tools" if getattr(s["messages"][-1], "tool_calls", None) else END

    g = StateGraph(AgentState)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["tools", END])
    g.add_edge("tools", "agent")
    return g


class HitlState(TypedDict):
    request: str
    approved: str


def hitl_graph():
    def ask(s):
        answer = interrupt({"question": f"approve {s['request']}?"})
        return {"approved": answer}

    def done(s):
        return {"request": s["request"] + " (done)"}

    g = StateGraph(HitlState)
    g.add_node("ask", ask)
    g.add_node("done", done)
    g.add_edge(START, "ask")
    g.add_edge("ask", "done")
    g.add_edge("done", END)
    return g


class ParState(TypedDict):
    items: Annotated[list, operator.add]
    note: str


def subgraph_parallel_graph():
    class ChildState(TypedDict):
        items: Annotated[list, operator.add]
        note: str

    grandchild = StateGraph(ChildState)
    grandchild.add_node("g1", lambda s: {"items": ["g1"]})
    grandchild.add_edge(START, "g1")
    grandchild.add_edge("g1", END)

    child = StateGraph(ChildState)
    child.add_node("c1", lambda s: {"items": ["c1"], "note": "child ran"})
    child.add_node("c2", grandchild.compile())
    child.add_edge(START, "c1")
    child.add_edge("c1", "c2")
    child.add_edge("c2", END)

    g = StateGraph(ParState)
    g.add_node("left", lambda s: {"items": ["left"]})
    g.add_node("right", lambda s: {"items": ["right"]})
    g.add_node("child", child.compile())
    g.add_edge(START, "left")
    g.add_edge(START, "right")
    g.add_edge("left", "child")
    g.add_edge("right", "child")
    g.add_edge("child", END)
    return g


def supervisor_graph(ask: bool = False):
    """langgraph-supervisor's shape, no model: a supervisor node routing by Command to
    agents that are compiled subgraphs (their checkpoints in namespaces `AGENT:<task>`),
    each handing back with Command(graph=Command.PARENT); four handoffs, then the
    answer. `ask`: the second agent's first run asks the user (an interrupt() inside
    the subgraph)."""
    from langgraph.graph import MessagesState

    def agent(name: str):
        def work(s):
            if ask and name == "math":
                quarter = interrupt({"question": "Which quarter?\nQ1 or Q2", "agent": name})
                return {"messages": [AIMessage(content=f"{name}: {quarter} done", name=name)]}
            return {"messages": [AIMessage(content=f"{name}: done", name=name)]}

        def handoff(s):
            return Command(
                graph=Command.PARENT,
                goto="supervisor",
                update={
                    "messages": [s["messages"][-1], AIMessage(content=f"handoff from {name}", name=name)]
                },
            )

        g = StateGraph(MessagesState)
        g.add_node("work", work)
        g.add_node("handoff", handoff)
        g.add_edge(START, "work")
        g.add_edge("work", "handoff")
        return g.compile(name=name)

    def supervisor(s):
        n = sum(1 for m in s["messages"] if str(m.content).startswith("handoff"))
        if n >= 4:
            return Command(
                goto=END, update={"messages": [AIMessage(content="final answer", name="supervisor")]}
            )
        return Command(goto="research" if n % 2 == 0 else "math")

    g = StateGraph(MessagesState)
    g.add_node("supervisor", supervisor, destinations=("research", "math", END))
    g.add_node("research", agent("research"))
    g.add_node("math", agent("math"))
    g.add_edge(START, "supervisor")
    return g


def run_all(saver) -> dict[str, Any]:
    """Write every test thread with this saver; the compiled graphs by thread."""
    agent = agent_graph().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "agent-1"}}
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg)
    agent.update_state(cfg, {"count": 100, "messages": [HumanMessage(content="thanks, edited")]})

    hitl = hitl_graph().compile(checkpointer=saver)
    hcfg = {"configurable": {"thread_id": "hitl-1"}}
    hitl.invoke({"request": "deploy", "approved": ""}, hcfg)  # stops at interrupt
    hitl2 = {"configurable": {"thread_id": "hitl-2"}}
    hitl.invoke({"request": "rollback", "approved": ""}, hitl2)
    hitl.invoke(Command(resume="yes"), hitl2)  # resumed

    par = subgraph_parallel_graph().compile(checkpointer=saver)
    pcfg = {"configurable": {"thread_id": "par-1"}}
    par.invoke({"items": [], "note": ""}, pcfg)

    # time travel the LangGraph way: replay from an old checkpoint (a fork in the
    # thread), and a copy of one (update_state as_node="__copy__")
    fcfg = {"configurable": {"thread_id": "fork-1"}}
    agent.invoke({"messages": [HumanMessage(content="fork me")]}, fcfg)
    old = [s for s in agent.get_state_history(fcfg) if s.metadata["step"] == 1][0]
    agent.invoke(None, old.config)
    agent.update_state(old.config, None, as_node="__copy__")

    # a node that fails: LangGraph keeps the error as a pending write
    err = failing_graph().compile(checkpointer=saver)
    try:
        err.invoke({"request": "boom", "approved": ""}, {"configurable": {"thread_id": "err-1"}})
    except RuntimeError:
        pass
    return {"agent-1": agent, "hitl-1": hitl, "hitl-2": hitl, "par-1": par, "fork-1": agent, "err-1": err}


def failing_graph():
    def ok(s):
        return {"approved": "maybe"}

    def fail(s):
        raise RuntimeError("tool exploded: disk full")

    g = StateGraph(HitlState)
    g.add_node("ok", ok)
    g.add_node("fail", fail)
    g.add_edge(START, "ok")
    g.add_edge("ok", "fail")
    g.add_edge("fail", END)
    return g


# ---- LangGraph's values as plain data ----------------------------------------------------

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def msg_plain(m: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": _ROLES[m.type], "content": m.content}
    calls = getattr(m, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in calls]
    if getattr(m, "tool_call_id", None) is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    if m.id is not None:
        out["id"] = m.id
    return out


def plain(v: Any) -> Any:
    if isinstance(v, BaseMessage):
        return msg_plain(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "__dataclass_fields__"):  # Interrupt
        return {
            "__type__": f"{type(v).__module__}.{type(v).__name__}",
            **{k: plain(getattr(v, k)) for k in v.__dataclass_fields__},
        }
    return v


def close_in_time(a: str, b: str, seconds: float = 1.0) -> bool:
    """Two ISO times within `seconds` (the id's time and LangGraph's `ts` are taken
    apart, microseconds from each other)."""
    from datetime import datetime

    return abs((datetime.fromisoformat(a) - datetime.fromisoformat(b)).total_seconds()) <= seconds


def channel_view(cp) -> dict[str, Any]:
    """agentctl's checkpoint as LangGraph's channel_values (internal None values dropped)."""
    out = {k: v for k, v in cp.state.items() if k not in ("__metadata__", "__internal__")}
    out.update(cp.state.get("__internal__", {}))
    return out


def lg_channels(tup) -> dict[str, Any]:
    return {
        k: plain(v)
        for k, v in tup.checkpoint["channel_values"].items()
        if not (is_internal_channel(k) and v is None)
    }


def lg_writes(tup) -> list[tuple[str, str, Any]]:
    return sorted(
        ((t, c, json.dumps(plain(v), sort_keys=True, default=str)) for t, c, v in tup.pending_writes),
        key=lambda w: (w[0], w[1], w[2]),
    )


def our_writes(cp) -> list[tuple[str, str, Any]]:
    out = [(w["task_id"], w["channel"], w["value"]) for w in cp.tools_result.get("writes", [])]
    for special in ("__error__", "__interrupt__", "__resume__", "__scheduled__"):
        out += [(w["task_id"], special, w["value"]) for w in cp.tools_result.get(special, [])]
    return sorted(
        ((t, c, json.dumps(v, sort_keys=True, default=str)) for t, c, v in out),
        key=lambda w: (w[0], w[1], w[2]),
    )


# ---- fixtures ----------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def lg_db(request, tmp_path):
    """(url, saver, graphs): a LangGraph database of each kind with the test threads."""
    if request.param == "sqlite":
        path = tmp_path / "lg.db"
        conn = sqlite3.connect(str(path), check_same_thread=False)
        saver = SqliteSaver(conn)
        graphs = run_all(saver)
        yield str(path), saver, graphs
        conn.close()
        return
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    dsn = request.getfixturevalue("pg_dsn")
    with PostgresSaver.from_conn_string(psycopg_dsn(dsn)) as saver:
        saver.setup()
        graphs = run_all(saver)
        yield dsn, saver, graphs


# ---- tests -------------------------------------------------------------------------------


async def test_detected_and_threads_match(lg_db):
    url, saver, _ = lg_db
    assert (await detect(url)).name == "langgraph"
    lg_addresses = {
        address(t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"])
        for t in saver.list(None)
    }
    lg_threads = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    async with open_store(url) as store:
        assert store.format.name == "langgraph"
        # the threads listed are LangGraph's thread ids: a subgraph's namespace is not a
        # thread of its own (issue 23 item 6); it is addressed as THREAD|NS
        summaries = await store.thread_summaries(limit=100, sort="thread", descending=False)
        assert {s.thread_id for s in summaries} == lg_threads
        assert await store.count_threads() == len(lg_threads)
        assert await store.all_thread_ids() == [s.thread_id for s in summaries]
        assert set(await store.all_addresses()) == lg_addresses
        assert await store.count() == sum(1 for _ in saver.list(None))
        # a subgraph's namespace shows under its parent thread, as a branch of it
        subs = [
            s
            for s in await store.thread_summaries(limit=100, sort="thread", descending=False, prefix="par-1|")
        ]
        assert subs and all(s.thread_id.startswith("par-1|child:") for s in subs)
        for s in subs:
            assert await store.thread_summary(s.thread_id) == s
        (child,) = [s for s in subs if s.thread_id.count("|") == 1]
        (grand,) = [s for s in subs if s.thread_id.count("|") == 2]
        assert grand.thread_id.startswith(child.thread_id + "|c2:")
        assert child.branch_of == "par-1" and grand.branch_of == child.thread_id
        for s in subs:
            assert (await store.get_metadata(s.branch_point)).thread_id == s.branch_of
        assert [m.thread_id for m in await store.branches_of(["par-1"])] == [child.thread_id]
        assert [m.thread_id for m in await store.branches_of([child.thread_id])] == [grand.thread_id]
        kids = await store.children(grand.branch_point)
        assert grand.thread_id in [k.thread_id for k in kids]
        # newest first by default; every sort runs in SQL
        newest = await store.thread_summaries(limit=100)
        assert [s.head_checkpoint_id for s in newest] == sorted(
            (s.head_checkpoint_id for s in newest), reverse=True
        )
        for sort in ("thread", "checkpoints", "step", "created", "updated"):
            assert len(await store.thread_summaries(limit=3, sort=sort)) == 3
        assert await store.find_thread_ids("hitl") == ["hitl-1", "hitl-2"]
        assert await store.count_threads(prefix="par-1|") == len(subs)
        one = await store.thread_summary("agent-1")
        assert one.checkpoints == await store.count("agent-1")


async def test_history_and_channel_values_match_langgraph(lg_db):
    url, saver, graphs = lg_db
    async with open_store(url) as store:
        for thread, graph in graphs.items():
            cfg = {"configurable": {"thread_id": thread}}
            history = list(graph.get_state_history(cfg))  # newest first
            ours = await store.read_thread(thread, limit=1000, descending=True)
            assert [m.checkpoint_id for m in ours] == [
                s.config["configurable"]["checkpoint_id"] for s in history
            ]
            for meta, snap in zip(ours, history, strict=False):
                assert meta.step == snap.metadata["step"]
                parent = snap.parent_config["configurable"]["checkpoint_id"] if snap.parent_config else None
                assert meta.parent_checkpoint_id == parent
                assert meta.tags == [snap.metadata["source"]]
                cp = await store.get(meta.checkpoint_id)
                values = {k: v for k, v in cp.state.items() if k not in ("__metadata__", "__internal__")}
                expected = plain(snap.values)
                # A reducer channel that never got a value is not in the checkpoint;
                # LangGraph shows it with its type's empty default (e.g. messages: []).
                for key in set(expected) - set(values):
                    assert expected.pop(key) in ([], {}, None), (thread, meta.step, key)
                assert values == expected, (thread, meta.step)
                assert cp.state["__metadata__"]["source"] == snap.metadata["source"]
                assert cp.next_node == ", ".join(sorted(snap.next))
                if "messages" in snap.values:
                    assert cp.messages == plain(snap.values["messages"])
                assert close_in_time(meta.created_at, snap.created_at)
            head = await store.get_latest(thread)
            assert head.metadata.checkpoint_id == history[0].config["configurable"]["checkpoint_id"]
            # parent edges: every checkpoint's children, forks included
            kids: dict[str, list[str]] = {}
            for snap in history:
                if snap.parent_config:
                    kids.setdefault(snap.parent_config["configurable"]["checkpoint_id"], []).append(
                        snap.config["configurable"]["checkpoint_id"]
                    )
            for meta in ours:
                got = [
                    c.checkpoint_id for c in await store.children(meta.checkpoint_id) if c.thread_id == thread
                ]
                assert got == sorted(kids.get(meta.checkpoint_id, [])), (thread, meta.step)


async def test_every_namespace_and_pending_write_matches_the_saver(lg_db):
    url, saver, _ = lg_db
    async with open_store(url) as store:
        tuples = list(saver.list(None))
        assert tuples
        by_thread: dict[str, list[Any]] = {}
        for tup in tuples:
            c = tup.config["configurable"]
            by_thread.setdefault(address(c["thread_id"], c["checkpoint_ns"]), []).append(tup)
        seen = 0
        for addr, tups in by_thread.items():
            ours = [cp async for cp in store.iter_checkpoints([addr], batch=2)]
            assert [cp.metadata.checkpoint_id for cp in ours] == sorted(
                t.config["configurable"]["checkpoint_id"] for t in tups
            )
            by_id = {t.config["configurable"]["checkpoint_id"]: t for t in tups}
            for cp in ours:
                tup = by_id[cp.metadata.checkpoint_id]
                assert channel_view(cp) == lg_channels(tup), (addr, cp.metadata.step)
                assert our_writes(cp) == lg_writes(tup), (addr, cp.metadata.step)
                seen += 1
        assert seen == len(tuples)
        assert [cp async for cp in store.iter_checkpoints()].__len__() == len(tuples)


async def test_tool_results_interrupts_and_update_state(lg_db):
    url, _, graphs = lg_db
    async with open_store(url) as store:
        # the agent loop: the tools step's checkpoint carries its tool messages
        rows = await store.read_thread("agent-1", limit=100)
        cps = [await store.get(m.checkpoint_id) for m in rows]
        with_tools = [cp for cp in cps if cp.tools_result.get("tool_messages")]
        assert len(with_tools) == 2
        assert with_tools[0].tools_result["tool_messages"] == [
            {
                "role": "tool",
                "content": "2",
                "tool_call_id": "call0",
                "name": "add",
                "id": with_tools[0].tools_result["tool_messages"][0]["id"],
            }
        ]
        calls = [c for m in cps[-1].messages for c in m.get("tool_calls", [])]
        assert calls[0] == {"id": "call0", "name": "add", "arguments": {"a": 0, "b": 2}}
        # update_state: a checkpoint of source "update" on top
        head = cps[-1]
        assert head.metadata.tags == ["update"] and head.state["count"] == 100
        assert head.messages[-1]["content"] == "thanks, edited"
        assert (
            await store.at_step("agent-1", head.metadata.step)
        ).checkpoint_id == head.metadata.checkpoint_id
        # an interrupt pending on the head of hitl-1; hitl-2 was resumed
        h1 = await store.get_latest("hitl-1")
        assert h1.next_node == "ask"
        (intr,) = h1.tools_result["__interrupt__"]
        assert intr["value"][0]["value"] == {"question": "approve deploy?"}
        h2 = [await store.get(m.checkpoint_id) for m in await store.read_thread("hitl-2")]
        resumed = [cp for cp in h2 if "__resume__" in cp.tools_result]
        assert resumed and resumed[0].tools_result["__resume__"][0]["value"] == "yes"
        assert h2[-1].state["approved"] == "yes" and h2[-1].state["request"] == "rollback (done)"
        # children and forks
        first = rows[0].checkpoint_id
        assert [c.checkpoint_id for c in await store.children(first)] == [rows[1].checkpoint_id]
        assert await store.find_checkpoint_ids(first[:20]) == [first]
        # search: messages, tool results and channel values, newest first
        hits = await store.search("answer is 42")
        assert hits and hits[0].thread_id == "fork-1" and hits[0].role == "assistant"
        mine = await store.search("answer is 42", thread_id="agent-1")
        assert mine and {h.thread_id for h in mine} == {"agent-1"}
        assert [h.checkpoint_id for h in hits] == sorted((h.checkpoint_id for h in hits), reverse=True)
        assert await store.search("answer is 42", role="user") == []
        assert any(h.where == "state" for h in await store.search("rollback (done)"))
        assert any(h.where == "tools_result" for h in await store.search("approve deploy"))
        # a needle with a quote is not looked for in the raw bytes (JSON escapes it)
        assert any(h.where == "tools_result" for h in await store.search('"question": "approve'))
        assert await store.doctor() == []
        # forks, as langgraph 1.2 writes them: replaying from REF (invoke with its
        # checkpoint_id) first writes a "fork" checkpoint whose parent is REF; a copy
        # (update_state(REF, None, as_node="__copy__")) is a "fork" checkpoint whose
        # parent is REF's parent. Both at REF's step + 1.
        fork = await store.read_thread("fork-1", limit=100)
        ref = [m for m in fork if m.step == 1 and "loop" in m.tags][0]
        forked = {m.checkpoint_id for m in fork if len(await store.children(m.checkpoint_id)) > 1}
        assert forked == {ref.checkpoint_id, ref.parent_checkpoint_id}
        forks = [m for m in fork if m.tags == ["fork"]]
        assert sorted(m.parent_checkpoint_id for m in forks) == sorted(
            [ref.checkpoint_id, ref.parent_checkpoint_id]
        )
        assert {m.step for m in forks} == {2}
        page, fork_points = await store.read_thread_forks("fork-1", limit=100)
        assert page == fork and set(fork_points) == forked
        page, fork_points = await store.read_thread_forks("par-1", limit=100)
        assert set(fork_points) == {m.parent_checkpoint_id for m in await store.branches_of(["par-1"])}
        # an error kept as a pending write, labelled
        e = await store.get_latest("err-1")
        (error,) = e.tools_result["__error__"]
        assert "tool exploded: disk full" in json.dumps(error["value"])
        assert e.next_node == "fail"


def _read_everything_script(url: str) -> str:
    return f"""
import asyncio, json, sys
before = set(sys.modules)
from agentctl.storage import open_store
async def main():
    async with open_store({url!r}) as store:
        out = []
        async for cp in store.iter_checkpoints():
            out.append(cp.to_dict() if hasattr(cp, 'to_dict') else str(cp))
        await store.search('x')
        return out
out = asyncio.run(main())
bad = sorted(m for m in sys.modules if m.split('.')[0] in
             ('langgraph', 'langchain_core', 'pydantic', 'numpy', 'no_such_module_xyz'))
print(json.dumps({{"bad": bad, "n": len(out), "dump": json.dumps(out, default=str)}}))
"""


def _run(code: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120, env=env
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_reading_imports_nothing_from_langgraph(lg_db):
    url, saver, _ = lg_db
    got = _run(_read_everything_script(url))
    assert got["bad"] == []
    assert got["n"] == sum(1 for _ in saver.list(None))


def test_foreign_classes_and_pickles_are_neither_imported_nor_unpickled(tmp_path):
    """A LangGraph SQLite file whose payloads name a module that does not exist and
    os.system, with a pickled write: it displays, and nothing is imported or run."""
    path = tmp_path / "evil.db"
    marker = tmp_path / "ran"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    SqliteSaver(conn).setup()

    def ext(code, value):
        return ormsgpack.Ext(code, ormsgpack.packb(value))

    payload = ormsgpack.packb(
        {
            "v": 4,
            "id": "1f1e9591-e4a1-6c4a-bfff-d732f94e2aa3",
            "ts": "2026-01-01T00:00:00+00:00",
            "channel_values": {
                "ghost": ext(2, ("no_such_module_xyz.deep", "Ghost", {"a": 1})),
                "model": ext(5, ("no_such_module_xyz", "Model", {"b": 2}, "model_validate_json")),
                "cmd": ext(0, ("os", "system", f"touch {marker}")),
                "meth": ext(3, ("os", "system", f"touch {marker}", "__call__")),
            },
            "channel_versions": {},
            "versions_seen": {},
            "updated_channels": None,
        }
    )

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    import pickle

    conn.execute(
        "INSERT INTO checkpoints VALUES (?, '', ?, NULL, 'msgpack', ?, ?)",
        (
            "evil",
            "1f1e9591-e4a1-6c4a-bfff-d732f94e2aa3",
            payload,
            json.dumps({"source": "input", "step": -1, "parents": {}}).encode(),
        ),
    )
    conn.execute(
        "INSERT INTO writes VALUES ('evil', '', '1f1e9591-e4a1-6c4a-bfff-d732f94e2aa3', "
        "'task', '', 0, 'ghost', 'pickle', ?)",
        (pickle.dumps(Boom()),),
    )
    conn.execute(
        "INSERT INTO writes VALUES ('evil', '', '1f1e9591-e4a1-6c4a-bfff-d732f94e2aa3', "
        "'task', '', 1, 'enc', 'msgpack+aes', ?)",
        (b"\x00" * 48,),
    )
    conn.commit()
    conn.close()
    got = _run(_read_everything_script(str(path)))
    assert got["bad"] == [] and got["n"] == 1
    assert not marker.exists()
    (cp,) = json.loads(got["dump"])
    assert cp["state"]["ghost"] == {"__type__": "no_such_module_xyz.deep.Ghost", "a": 1}
    assert cp["state"]["model"] == {"__type__": "no_such_module_xyz.Model", "b": 2}
    assert cp["state"]["cmd"] == {"__type__": "os.system", "value": f"touch {marker}"}
    (pickled, enc) = cp["tools_result"]["writes"]
    assert pickled["value"]["__opaque__"] and pickled["value"]["__type__"] == "pickle"
    assert enc["value"]["__opaque__"] and enc["value"]["__type__"] == "msgpack+aes"


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_bench_generator_writes_what_langgraph_reads(kind, tmp_path, request):
    """bench/make_langgraph_db.py writes LangGraph's format: SqliteSaver / PostgresSaver
    read it as LangChain messages, and agentctl reads the same channel values and writes."""
    if kind == "sqlite":
        target = str(tmp_path / "gen.db")
    else:
        pytest.importorskip("langgraph.checkpoint.postgres")
        target = request.getfixturevalue("pg_dsn")
    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "make_langgraph_db.py"),
            target,
            "--threads",
            "5",
            "--checkpoints",
            "300",
            "--long-steps",
            "30",
            "--meta",
            str(tmp_path / "meta.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    meta = json.loads(res.stdout)
    if kind == "sqlite":
        conn = sqlite3.connect(target, check_same_thread=False)
        saver = SqliteSaver(conn)
        tuples = list(saver.list(None))
        conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(psycopg_dsn(target)) as saver:
            saver.setup()  # a no-op: the generator recorded every migration
            tuples = list(saver.list(None))
    assert len(tuples) == meta["rows"] == 300
    assert any(
        isinstance(m, ToolMessage) for t in tuples for m in t.checkpoint["channel_values"].get("messages", [])
    )
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in tuples}

    async def check() -> None:
        async with open_store(target) as store:
            assert store.format.name == "langgraph"
            assert await store.count_threads() == 5
            seen = 0
            async for cp in store.iter_checkpoints():
                tup = by_id[cp.metadata.checkpoint_id]
                assert channel_view(cp) == lg_channels(tup)
                assert our_writes(cp) == lg_writes(tup)
                assert cp.metadata.step == tup.metadata["step"]
                assert close_in_time(cp.metadata.created_at, tup.checkpoint["ts"], 0.001)
                seen += 1
            assert seen == 300
            long = await store.read_thread("long-thread", limit=1000)
            assert len(long) == 30 and long[-1].step == 28
            for m in long[-3:]:  # the agent answered (nothing next), or a tool ran (agent next)
                cp = await store.get(m.checkpoint_id)
                last = cp.messages[-1]
                assert cp.next_node == (
                    ""
                    if last["role"] == "assistant" and not last.get("tool_calls")
                    else "tools"
                    if last["role"] == "assistant"
                    else "agent"
                )

    from tests.support.rig import run_sync

    run_sync(check)


async def test_a_thread_id_holding_the_separator(tmp_path):
    path = tmp_path / "sep.db"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    graph = hitl_graph().compile(checkpointer=SqliteSaver(conn))
    graph.invoke({"request": "x", "approved": ""}, {"configurable": {"thread_id": "team|42"}})
    history = list(graph.get_state_history({"configurable": {"thread_id": "team|42"}}))
    async with open_store(str(path)) as store:
        assert await store.all_thread_ids() == ["team|42"]
        ours = await store.read_thread("team|42", descending=True)
        assert [m.checkpoint_id for m in ours] == [s.config["configurable"]["checkpoint_id"] for s in history]
        assert await store.count("team|42") == len(history)
        assert (await store.get_latest("team|42")).next_node == "ask"
        assert await store.find_thread_ids("team|4") == ["team|42"]
        assert (await store.thread_summary("team|42")).checkpoints == len(history)
    conn.close()


async def test_shallow_postgres_saver(pg_dsn):
    """The shallow saver keeps only each thread's latest checkpoint (no checkpoint_id
    column): read-only, one checkpoint per thread, LangGraph's latest state."""
    shallow = pytest.importorskip("langgraph.checkpoint.postgres.shallow")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with shallow.ShallowPostgresSaver.from_conn_string(psycopg_dsn(pg_dsn)) as saver:
            saver.setup()
            graph = agent_graph().compile(checkpointer=saver)
            cfg = {"configurable": {"thread_id": "s-1"}}
            graph.invoke({"messages": [HumanMessage(content="hi")]}, cfg)
            state = graph.get_state(cfg)
    assert (await detect(pg_dsn)).name == "langgraph"
    async with open_store(pg_dsn) as store:
        assert await store.all_thread_ids() == ["s-1"]
        assert await store.count("s-1") == 1
        (summary,) = await store.thread_summaries()
        assert summary.head_checkpoint_id == state.config["configurable"]["checkpoint_id"]
        cp = await store.get_latest("s-1")
        assert cp.messages == plain(state.values["messages"])
        assert cp.state["count"] == state.values["count"]
        assert (await store.get(summary.head_checkpoint_id)).metadata.step == state.metadata["step"]
        assert await store.doctor() == []


async def test_an_undecodable_row_is_reported_not_fatal(tmp_path):
    from agentctl.errors import CorruptRowError

    path = tmp_path / "bad.db"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    graph = hitl_graph().compile(checkpointer=SqliteSaver(conn))
    graph.invoke({"request": "x", "approved": ""}, {"configurable": {"thread_id": "t"}})
    bad = "1f000000-0000-6000-8000-000000000000"  # older than every real one: sorts first
    conn.execute(
        "INSERT INTO checkpoints VALUES ('t', '', ?, NULL, 'msgpack', ?, ?)",
        (bad, b"\xc1\xc1", b'{"source": "input", "step": -5}'),
    )
    conn.execute(
        "INSERT INTO checkpoints VALUES ('u', '', ?, NULL, 'msgpack', ?, ?)",
        (bad, b"\x80", b'{"source": not json'),
    )
    conn.commit()
    async with open_store(str(path)) as store:
        with pytest.raises(CorruptRowError) as err:
            await store.get(bad)
        assert err.value.checkpoint_id == bad
        got = [cp async for cp in store.iter_checkpoints(["t"])]
        assert isinstance(got[0], CorruptRowError) and len(got) == await store.count("t")
        assert all(not isinstance(cp, CorruptRowError) for cp in got[1:])
        assert (await store.get_metadata(bad)).step == -5
        # malformed metadata: listed, its step unknown (0), nothing else fails
        (u,) = [t for t in await store.thread_summaries(sort="step") if t.thread_id == "u"]
        assert u.head_step == 0 and (await store.get_latest("u")).state["__metadata__"]["__invalid__"]
        assert await store.at_step("t", -5) is not None
    conn.close()


async def test_threads_newest_first_by_skip_scan_match_the_plain_aggregate(tmp_path):
    """SQLite's newest-first `threads list` finds (thread, namespace) pairs by a skip
    scan; every page of it equals what one GROUP BY over the table gives."""
    db = tmp_path / "lg.db"
    shutil.copy(REPO / "agentctl" / "sample" / "langgraph.db", db)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT 1 FROM checkpoints WHERE checkpoint_ns <> ''").fetchall()  # namespaces there
    # the threads listed: the root namespace's (a subgraph namespace is not a thread)
    want = conn.execute(
        "SELECT thread_id, checkpoint_ns, COUNT(*), MAX(checkpoint_id), MIN(checkpoint_id) FROM checkpoints "
        "WHERE checkpoint_ns = '' GROUP BY thread_id, checkpoint_ns ORDER BY MAX(checkpoint_id) DESC, "
        "thread_id DESC, checkpoint_ns DESC"
    ).fetchall()
    conn.close()
    async with open_store(str(db)) as store:
        for limit, offset in ((50, 0), (2, 1), (3, len(want) - 2), (5, len(want) + 3)):
            got = await store.thread_summaries(limit=limit, offset=offset)
            rows = want[offset : offset + limit]
            assert [(t.thread_id, t.checkpoints, t.head_checkpoint_id) for t in got] == [
                (t if not ns else f"{t}|{ns}", n, head) for t, ns, n, head, _ in rows
            ]
            assert [t.first_created_at for t in got] == [
                (await store.thread_summary(t.thread_id)).first_created_at for t in got
            ]
        ascending = await store.thread_summaries(limit=50, descending=False)
        assert [t.thread_id for t in ascending] == [
            t.thread_id for t in reversed(await store.thread_summaries(limit=50))
        ]


async def test_an_id_held_by_several_threads_names_the_least_root_thread(lg_db):
    """A checkpoint id in several threads (LangGraph's copies of a thread): REF by id
    names the root namespace's least thread, even where a subgraph namespace of a
    thread that sorts first holds it too (SQLite stops its scan of the key there); an
    id held by subgraph namespaces alone names the least (namespace, thread)."""
    url, saver, _ = lg_db
    conn = saver.conn
    first = next(iter(saver.list(None)))
    cid = first.config["configurable"]["checkpoint_id"]
    cols = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
    copies = [
        ("0-0-sub", "sub:1", cid),
        ("0-aaa-copy", "", cid),
        ("zz-copy", "", cid),
        ("m-sub", "sub:2", "only-sub-id"),
        ("k-sub", "sub:9", "only-sub-id"),
        ("a-sub", "sub:2", "only-sub-id"),
    ]
    ph = "?" if isinstance(conn, sqlite3.Connection) else "%s"
    for thread, ns, new_id in copies:
        conn.execute(
            f"INSERT INTO checkpoints ({cols}) SELECT {ph}, {ph}, {ph}, parent_checkpoint_id, type, "
            f"checkpoint, metadata FROM checkpoints WHERE checkpoint_id = {ph} AND checkpoint_ns = '' LIMIT 1",
            (thread, ns, new_id, cid),
        )
    conn.commit()
    async with open_store(url) as store:
        assert (await store.get_metadata(cid)).thread_id == "0-aaa-copy"
        assert (await store.get_metadata("only-sub-id")).thread_id == address("a-sub", "sub:2")
        assert await store.get_metadata("no-such-id") is None


def test_log_and_tree_name_the_nodes_of_a_step_and_its_last_message(lg_db):
    """`log` and `tree` lines of a LangGraph thread say which node(s) wrote the step
    (LangGraph's versions_seen against the parent's) and the step's last message, as
    `threads list` shows a thread's, not a bare `[loop]`."""
    from tests.support.sampledb import cli

    url, saver, _ = lg_db
    sup = supervisor_graph().compile(checkpointer=saver)
    sup.invoke({"messages": [HumanMessage(content="faang?")]}, {"configurable": {"thread_id": "sup"}})
    steps = {s.metadata["step"]: s for s in sup.get_state_history({"configurable": {"thread_id": "sup"}})}
    r = cli(url, "log", "sup")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(steps)
    by_step = {int(line.split(" #")[1].split()[0]): line for line in lines}
    assert by_step[9].endswith("#9 [loop] supervisor: [assistant] final answer")
    assert by_step[2].endswith("#2 [loop] research: [assistant] handoff from research")
    assert by_step[4].endswith("#4 [loop] math: [assistant] handoff from math")
    assert by_step[0].endswith("#0 [loop] __start__: [user] faang?")
    tree = cli(url, "tree", "sup").stdout
    assert "#2 research: [assistant] handoff from research" in tree
    assert "#1 head work: [assistant] research: done" in tree  # an agent's step, in its namespace
    # --json gives the same summaries
    import json as _json

    assert (
        _json.loads(cli(url, "log", "sup", "--json").stdout)[0]["summary"]
        == "supervisor: [assistant] final answer"
    )
