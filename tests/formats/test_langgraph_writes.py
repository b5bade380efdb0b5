"""LangGraph writes (rewind, branch, prune, threads delete, undo) against the real
LangGraph (no model), on SqliteSaver and PostgresSaver: after each agentctl write
LangGraph itself keeps working (get_state, get_state_history, resuming), and undo
restores every table row for row.
"""

from __future__ import annotations

import operator
import shutil
import sqlite3
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agentctl.errors import OperationError  # noqa: E402
from agentctl.storage import open_store  # noqa: E402
from agentctl.storage.contract import PruneSpec  # noqa: E402
from agentctl.storage.langgraph.history import uuid6_after  # noqa: E402
from tests.formats.test_format_langgraph import agent_graph, hitl_graph, plain, psycopg_dsn, supervisor_graph  # noqa: E402
from tests.support.rig import REPO

# ---- helpers -----------------------------------------------------------------------------


def strip_ids(v: Any) -> Any:
    """Plain data without ids (LangGraph gives new messages and interrupts random ids,
    so two runs of the same graph differ only there)."""
    v = plain(v)
    if isinstance(v, dict):
        return {k: strip_ids(x) for k, x in v.items() if k != "id"}
    if isinstance(v, list):
        return [strip_ids(x) for x in v]
    return v


def cfg(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"thread_id": thread}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def ids_of(graph, thread: str) -> set[str]:
    return {s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(cfg(thread))}


def new_states(graph, thread: str, before: set[str]) -> list[tuple[Any, tuple[str, ...]]]:
    """(values, next) of the checkpoints of a thread not in `before`, oldest first."""
    out = [
        s
        for s in graph.get_state_history(cfg(thread))
        if s.config["configurable"]["checkpoint_id"] not in before
    ]
    out.sort(key=lambda s: s.config["configurable"]["checkpoint_id"])
    return [(strip_ids(s.values), tuple(s.next)) for s in out]


def at_step(graph, thread: str, step: int):
    return [s for s in graph.get_state_history(cfg(thread)) if s.metadata["step"] == step][0]


def dump(url: str, saver) -> dict[str, list[tuple]]:
    """Every row of LangGraph's tables, sorted (side tables left out)."""
    if "://" not in url:
        conn = sqlite3.connect(url)
        try:
            return {
                t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
                for t in ("checkpoints", "writes")
            }
        finally:
            conn.close()
    out = {}
    for t in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        with saver.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {t}")
            out[t] = sorted(
                (tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in cur.fetchall()), key=repr
            )
    return out


class LoopState(TypedDict):
    n: int
    log: Annotated[list, operator.add]


def loop_graph(limit: int = 8):
    """A loop of `limit` steps, each appending to a list (many checkpoints, no model)."""

    def step(s):
        return {"n": s["n"] + 1, "log": [s["n"]]}

    g = StateGraph(LoopState)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < limit else END, ["step", END])
    return g


try:
    from langgraph.channels.delta import DeltaChannel
except ImportError:  # pragma: no cover
    DeltaChannel = None


def concat(state, writes):
    out = list(state or [])
    for w in writes:
        out.extend(w)
    return out


class DState(TypedDict):
    n: int
    log: Annotated[list, DeltaChannel(concat, snapshot_frequency=5)] if DeltaChannel else list


def delta_graph(limit: int):
    g = StateGraph(DState)
    g.add_node("step", lambda s: {"n": s["n"] + 1, "log": [s["n"]]})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < limit else END, ["step", END])
    return g


@pytest.fixture(params=["sqlite", "postgres"])
def lg(request, tmp_path):
    """(url, saver) of an empty LangGraph database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "lg.db"
        conn = sqlite3.connect(str(path), check_same_thread=False)
        yield str(path), SqliteSaver(conn)
        conn.close()
        return
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    dsn = request.getfixturevalue("pg_dsn")
    with PostgresSaver.from_conn_string(psycopg_dsn(dsn)) as saver:
        saver.setup()
        yield dsn, saver


async def history(url: str):
    store_cm = open_store(url, readonly=False)
    store = await store_cm.__aenter__()
    return store_cm, store, store.history()


# ---- rewind ------------------------------------------------------------------------------


async def test_rewind_resumes_like_langgraphs_own_replay(lg):
    url, saver = lg
    agent = agent_graph().compile(checkpointer=saver)
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg("t"))
    ref = at_step(agent, "t", 2)
    ref_id = ref.config["configurable"]["checkpoint_id"]
    ref_values = strip_ids(ref.values)
    head_before = agent.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    n_before = len(ids_of(agent, "t"))

    cm, store, h = await history(url)
    try:
        plan = await h.plan_rewind(ref_id)
        assert plan.moved and plan.target.checkpoint_id == ref_id and not plan.hard
        res = await h.rewind(ref_id)
        assert res.op_id and res.archive_thread == "t" and res.rewind_depth == len(plan.moved)
        fork_id = res.checkpoint.metadata.checkpoint_id
        assert fork_id > head_before
    finally:
        await cm.__aexit__(None, None, None)

    # LangGraph sees the fork as the head: REF's values, REF's next, source fork
    head = agent.get_state(cfg("t"))
    assert head.config["configurable"]["checkpoint_id"] == fork_id
    assert strip_ids(head.values) == ref_values and head.next == ref.next
    assert head.metadata["source"] == "fork" and head.metadata["step"] == ref.metadata["step"] + 1
    # parent: REF's parent, as update_state(..., as_node="__copy__") gives (see history.py)
    assert (
        head.parent_config["configurable"]["checkpoint_id"]
        == ref.parent_config["configurable"]["checkpoint_id"]
    )
    assert len(ids_of(agent, "t")) == n_before + 1  # nothing deleted

    # resuming the thread == LangGraph's own replay from REF
    before = ids_of(agent, "t")
    ours = agent.invoke(None, cfg("t"))
    ours_states = new_states(agent, "t", before)
    before = ids_of(agent, "t")
    theirs = agent.invoke(None, cfg("t", ref_id))
    theirs_states = new_states(agent, "t", before)
    assert strip_ids(ours) == strip_ids(theirs)
    # theirs starts with LangGraph's own fork checkpoint, ours was written by agentctl
    assert [(strip_ids(ref.values), tuple(ref.next))] + ours_states == theirs_states


async def test_rewind_to_an_interrupt_interrupts_again_as_langgraph_does(lg):
    url, saver = lg
    hitl = hitl_graph().compile(checkpointer=saver)
    hitl.invoke({"request": "deploy", "approved": ""}, cfg("h"))
    hitl.invoke(Command(resume="yes"), cfg("h"))
    ref = [s for s in hitl.get_state_history(cfg("h")) if s.next == ("ask",)][0]
    ref_id = ref.config["configurable"]["checkpoint_id"]
    cm, store, h = await history(url)
    try:
        await h.rewind(ref_id)
    finally:
        await cm.__aexit__(None, None, None)
    ours = hitl.invoke(None, cfg("h"))
    theirs = hitl.invoke(None, cfg("h", ref_id))
    assert strip_ids(ours) == strip_ids(theirs)
    assert "__interrupt__" in ours
    # and the interrupt can be answered on the rewound thread
    assert hitl.invoke(Command(resume="no"), cfg("h")) == {"request": "deploy (done)", "approved": "no"}


async def test_rewind_hard_and_undo_restore_every_row(lg):
    url, saver = lg
    agent = agent_graph().compile(checkpointer=saver)
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg("t"))
    ref = at_step(agent, "t", 1)
    ref_id = ref.config["configurable"]["checkpoint_id"]
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        plan = await h.plan_rewind(ref_id, hard=True)
        assert plan.hard and plan.archive_thread is None
        res = await h.rewind(ref_id, hard=True)
        assert res.deleted == [m.checkpoint_id for m in plan.moved]
        hist = [s.config["configurable"]["checkpoint_id"] for s in agent.get_state_history(cfg("t"))]
        assert hist[0] == res.checkpoint.metadata.checkpoint_id and hist[1] == ref_id
        assert all(cid <= ref_id for cid in hist[1:])
        assert strip_ids(agent.get_state(cfg("t")).values) == strip_ids(ref.values)
        ops = await h.oplog()
        assert ops[0].kind == "rewind" and ops[0].purgeable_rows > 0
        rewound = dump(url, saver)
        await h.undo()
        assert dump(url, saver) == rows
        # redo: the fork is the head again, LangGraph reads and resumes it as after the rewind
        await h.redo()
        assert dump(url, saver) == rewound
        assert agent.get_state(cfg("t")).config["configurable"]["checkpoint_id"] == hist[0]
        assert strip_ids(agent.get_state(cfg("t")).values) == strip_ids(ref.values)
        await h.undo()
        assert dump(url, saver) == rows
        # soft rewind, then LangGraph writes: undo refuses, nothing changed
        await h.rewind(ref_id)
        agent.invoke(None, cfg("t"))
        changed = dump(url, saver)
        with pytest.raises(OperationError, match="changed"):
            await h.undo()
        assert dump(url, saver) == changed
    finally:
        await cm.__aexit__(None, None, None)


# ---- branch ------------------------------------------------------------------------------


async def test_branch_holds_the_chain_and_langgraph_runs_it(lg):
    url, saver = lg
    agent = agent_graph().compile(checkpointer=saver)
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg("t"))
    ref = at_step(agent, "t", 2)
    ref_id = ref.config["configurable"]["checkpoint_id"]
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        new = await h.branch(ref_id, "try")
        assert new.startswith("t-branch-try-")
        got = agent.get_state(cfg(new))
        assert plain(got.values) == plain(ref.values) and got.next == ref.next
        assert got.config["configurable"]["checkpoint_id"] == ref_id
        chain = [s.config["configurable"]["checkpoint_id"] for s in agent.get_state_history(cfg(new))]
        assert len(chain) == ref.metadata["step"] + 2  # steps -1 .. REF's
        if "://" in url:  # each blob once
            with saver.conn.cursor() as cur:
                cur.execute(
                    "SELECT COUNT(*) AS n, COUNT(DISTINCT (channel, version)) AS d FROM checkpoint_blobs "
                    "WHERE thread_id = %s",
                    (new,),
                )
                r = cur.fetchone()
                n, d = (r["n"], r["d"]) if isinstance(r, dict) else r
                assert n == d > 0
        # LangGraph continues the branch from REF; the original thread is untouched
        out = agent.invoke(None, cfg(new))
        assert out["messages"][-1].content == "the answer is 42"
        with pytest.raises(OperationError, match="changed"):
            await h.undo()
        # a fresh branch is undone row for row
        rows2 = dump(url, saver)
        await h.branch(ref_id, "again")
        await h.undo()
        assert dump(url, saver) == rows2
        assert {k: v for k, v in rows.items()} != rows2
    finally:
        await cm.__aexit__(None, None, None)


# ---- prune -------------------------------------------------------------------------------


async def test_prune_reuses_its_plan_only_while_the_thread_is_as_planned(lg):
    """The prune given its plan deletes what the plan found without reading every row
    again while the thread's fingerprint holds; after LangGraph wrote to the thread
    since the plan, it plans again (the new head stays, the old one goes)."""
    url, saver = lg
    loop = loop_graph(6).compile(checkpointer=saver)
    loop.invoke({"n": 0, "log": []}, cfg("t"))
    spec = PruneSpec(threads=["t"], keep_last=1)
    cm, store, h = await history(url)
    try:
        before = sorted(ids_of(loop, "t"))  # LangGraph's ids grow with time: the head is last
        plans = await h.plan_prune_spec(spec, preview=2)
        assert plans[0].stamp is not None and len(plans[0].delete) == 2
        [res] = await h.prune_spec(spec, plans=plans)
        assert res.deleted == plans[0].delete_ids and sorted(res.deleted) == before[:-1]
        assert ids_of(loop, "t") == {before[-1]}
        await h.undo()
        plans = await h.plan_prune_spec(spec, preview=2)
        loop.update_state(cfg("t"), {"n": 99})  # after the plan
        [res] = await h.prune_spec(spec, plans=plans)
        assert len(res.deleted) == len(before) and len(ids_of(loop, "t")) == 1
        assert loop.get_state(cfg("t")).values["n"] == 99
    finally:
        await cm.__aexit__(None, None, None)


async def test_prune_keep_last_keeps_langgraph_working_and_undo_restores(lg):
    url, saver = lg
    loop = loop_graph(8).compile(checkpointer=saver)
    loop.invoke({"n": 0, "log": []}, cfg("loop"))
    hitl = hitl_graph().compile(checkpointer=saver)
    for t in ("h1", "h2"):  # h2 is the twin, never pruned
        hitl.invoke({"request": "deploy", "approved": ""}, cfg(t))
    agent = agent_graph().compile(checkpointer=saver)
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg("a"))
    agent.update_state(cfg("a"), {"count": 100})
    old = at_step(agent, "a", 1)
    agent.invoke(None, old.config)  # a fork point at step 1
    fork_id = old.config["configurable"]["checkpoint_id"]
    values = {
        t: strip_ids(g.get_state(cfg(t)).values) for t, g in (("loop", loop), ("a", agent), ("h1", hitl))
    }
    rows = dump(url, saver)

    cm, store, h = await history(url)
    try:
        plans = await h.plan_prune_spec(PruneSpec(threads=["loop", "a", "h1"], keep_last=2))
        by = {p.thread_id: p for p in plans}
        assert by["loop"].delete_count == len(ids_of(loop, "loop")) - 2
        assert "bytes" in by["loop"].reason and "frees" in by["loop"].reason
        assert fork_id not in {m.checkpoint_id for m in by["a"].delete}
        assert "fork point" in by["a"].reason
        assert dump(url, saver) == rows  # a plan writes nothing
        res = await h.prune_spec(PruneSpec(threads=["loop", "a", "h1"], keep_last=2))
        assert res[0].op_id and len(res[0].deleted) == sum(p.delete_count for p in plans)
        # LangGraph still works on every pruned thread
        for t, g in (("loop", loop), ("a", agent), ("h1", hitl)):
            assert strip_ids(g.get_state(cfg(t)).values) == values[t]
            assert list(g.get_state_history(cfg(t)))
        assert len(ids_of(loop, "loop")) == 2
        assert fork_id in ids_of(agent, "a")
        assert loop.invoke(None, cfg("loop"))["log"] == list(range(8))
        pruned_rows = dump(url, saver)
        await h.undo()
        assert dump(url, saver) == rows
        # resuming the pruned interrupted thread gives what the twin gives
        await h.prune_spec(PruneSpec(threads=["h1"], keep_last=1))
        assert hitl.invoke(Command(resume="ok"), cfg("h1")) == hitl.invoke(Command(resume="ok"), cfg("h2"))
        assert pruned_rows
    finally:
        await cm.__aexit__(None, None, None)


class SharedState(TypedDict):
    docs: list  # set by the input only: every checkpoint names the input's version of it
    n: int


def shared_blob_graph(limit: int = 6):
    """A loop of `limit` steps that never writes `docs` (a list: a blob on Postgres)."""
    g = StateGraph(SharedState)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < limit else END, ["step", END])
    return g


def test_prune_keeps_the_blobs_kept_checkpoints_still_name(pg_dsn):
    """Postgres: a blob version written by an old checkpoint and named by every later one
    (a channel only the input sets) stays after `prune --keep-last 2` deletes that
    checkpoint; LangGraph's state is unchanged, and every (channel, version) a remaining
    checkpoint names (and does not hold inline) still has its checkpoint_blobs row."""
    pytest.importorskip("langgraph.checkpoint.postgres")
    from langgraph.checkpoint.postgres import PostgresSaver

    from tests.support.sampledb import cli

    with PostgresSaver.from_conn_string(psycopg_dsn(pg_dsn)) as saver:
        saver.setup()
        graph = shared_blob_graph(6).compile(checkpointer=saver)
        graph.invoke({"docs": ["spec.md", {"k": [1, 2]}], "n": 0}, cfg("shared"))
        graph.invoke({"docs": ["other"], "n": 0}, cfg("twin"))  # another thread: not pruned
        before = {t: plain(graph.get_state(cfg(t)).values) for t in ("shared", "twin")}
        assert before["shared"] == {"docs": ["spec.md", {"k": [1, 2]}], "n": 6}
        assert len(ids_of(graph, "shared")) > 2

        def named_without_blob() -> list[tuple]:
            with saver.conn.cursor() as cur:
                cur.execute(
                    "SELECT c.thread_id, c.checkpoint_id, v.key, v.value FROM checkpoints c "
                    "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v "
                    "WHERE NOT (c.checkpoint -> 'channel_values') ? v.key "  # (primitives are inline)
                    "AND NOT EXISTS (SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id "
                    "AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND b.version = v.value)"
                )
                return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in cur.fetchall()]

        # (LangGraph itself leaves some versions without a row: consumed channels such as
        # __start__; those are no loss. Prune must add none, and `docs` has its row.)
        missing = named_without_blob()
        assert not [m for m in missing if m[2] == "docs"]
        r = cli(pg_dsn, "prune", "shared", "--keep-last", "2", "--yes", "--no-backup")
        assert r.exit_code == 0, r.stdout
        kept = ids_of(graph, "shared")
        assert len(kept) == 2
        assert {t: plain(graph.get_state(cfg(t)).values) for t in ("shared", "twin")} == before
        assert sorted(named_without_blob()) == sorted(m for m in missing if m[0] == "twin" or m[1] in kept)


async def test_prune_keeps_delta_channel_ancestors(lg):
    if DeltaChannel is None:  # pragma: no cover
        pytest.skip("no DeltaChannel in this LangGraph")
    url, saver = lg
    graph = delta_graph(12).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": []}, cfg("d"))
    want = graph.get_state(cfg("d")).values
    assert want["log"] == list(range(12))
    total = len(ids_of(graph, "d"))
    cm, store, h = await history(url)
    try:
        (plan,) = await h.plan_prune_spec(PruneSpec(threads=["d"], keep_last=1))
        assert 0 < plan.delete_count < total - 1 and "DeltaChannel" in plan.reason
        await h.prune_spec(PruneSpec(threads=["d"], keep_last=1))
    finally:
        await cm.__aexit__(None, None, None)
    assert graph.get_state(cfg("d")).values == want
    assert len(ids_of(graph, "d")) == total - plan.delete_count


async def test_threads_delete_and_undo(lg):
    url, saver = lg
    hitl = hitl_graph().compile(checkpointer=saver)
    hitl.invoke({"request": "deploy", "approved": ""}, cfg("h1"))
    hitl.invoke({"request": "keep", "approved": ""}, cfg("h2"))
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        res = await h.delete_thread("h1")
        assert res.op_id and res.deleted
        assert not list(hitl.get_state_history(cfg("h1")))
        assert list(hitl.get_state_history(cfg("h2")))
        assert (await h.purge(dry_run=True)).rows > 0
        await h.undo()
        assert dump(url, saver) == rows
        await h.delete_thread("h1")
        done = await h.purge()
        assert done.rows > 0 and not done.dry_run
        with pytest.raises(OperationError):
            await h.undo(res.op_id)
    finally:
        await cm.__aexit__(None, None, None)


# ---- ids and the CLI ---------------------------------------------------------------------


def test_new_ids_sort_after_every_id_even_with_a_clock_behind():
    ahead = uuid6_after(None, now_ns=4_000_000_000 * 10**9)  # a checkpoint from the future
    now = uuid6_after(ahead)
    assert now > ahead and now[14] == "6"
    assert uuid6_after(now) > now
    plain_now = uuid6_after(None)
    assert uuid6_after(plain_now) > plain_now


def test_cli_rewind_branch_prune_undo_on_the_sample(tmp_path):
    from typer.testing import CliRunner

    from agentctl.cli import app

    db = tmp_path / "lg.db"
    shutil.copy(REPO / "agentctl" / "sample" / "langgraph.db", db)

    def run(*args: str) -> str:
        r = CliRunner().invoke(app, ["--db", str(db), *args])
        assert r.exit_code == 0, r.output
        return r.output

    conn = sqlite3.connect(db)
    before = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in ("checkpoints", "writes")}
    conn.close()
    out = run("rewind", "support-refund@3", "--dry-run")
    assert "support-refund" in out
    out = run("rewind", "support-refund@3", "--yes", "--no-backup")
    assert "fork" in out or "branch" in out
    branch = run("branch", "support-refund@5", "try").splitlines()[0]
    assert "nothing to merge" in run("merge", branch)  # into the thread it came from
    run("prune", "--all", "--keep-last", "2", "--yes", "--no-backup")
    run("threads", "delete", "research", "--yes", "--no-backup")
    log = run("oplog")
    for kind in ("rewind", "branch", "prune", "delete_thread"):
        assert kind in log
    for _ in range(4):
        run("undo")
    conn = sqlite3.connect(db)
    after = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in ("checkpoints", "writes")}
    conn.close()
    assert after == before


# ---- more: subgraphs, older-than, refusals -------------------------------------------------


async def test_rewind_and_branch_of_a_graph_with_subgraphs(lg):
    from tests.formats.test_format_langgraph import subgraph_parallel_graph

    url, saver = lg
    par = subgraph_parallel_graph().compile(checkpointer=saver)
    par.invoke({"items": [], "note": ""}, cfg("p"))
    ref = at_step(par, "p", 1)  # after left/right, before the child subgraph
    ref_id = ref.config["configurable"]["checkpoint_id"]
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        new = await h.branch(ref_id, "sub")
        assert plain(par.get_state(cfg(new)).values) == plain(ref.values)
        await h.undo()
        assert dump(url, saver) == rows
        new = await h.branch(ref_id, "sub2")
        assert par.invoke(None, cfg(new)) == par.get_state(cfg("p")).values
        from agentctl.errors import UsageError

        sub = next(t for t in await store.all_addresses() if t.startswith("p|"))
        sub_head = (await store.get_latest(sub)).metadata.checkpoint_id
        for call in (h.plan_rewind(sub_head), h.branch(sub_head, "x")):
            with pytest.raises(UsageError, match="subgraph"):
                await call
        res = await h.rewind(ref_id, hard=True)
        assert res.deleted
        # the subgraph runs after REF went with it (their namespaces are empty now)
        with_ns = [t for t in await store.all_addresses() if t.startswith("p|")]
        assert not with_ns
        assert all(
            s.config["configurable"]["checkpoint_id"] <= ref_id
            for s in list(par.get_state_history(cfg("p")))[1:]
        )
        out = par.invoke(None, cfg("p"))
        assert out == par.invoke(None, cfg("p", ref_id))  # LangGraph's own replay from REF
        assert {"c1", "g1"} <= set(out["items"])
    finally:
        await cm.__aexit__(None, None, None)


async def test_prune_older_than_and_nothing_to_do(lg):
    url, saver = lg
    loop = loop_graph(4).compile(checkpointer=saver)
    loop.invoke({"n": 0, "log": []}, cfg("l"))
    cm, store, h = await history(url)
    try:
        (plan,) = await h.plan_prune_spec(PruneSpec(threads=["l"], older_than=3600))
        assert plan.delete_count == 0  # nothing is an hour old
        res = await h.prune_spec(PruneSpec(threads=["l"], older_than=3600))
        assert res[0].op_id is None
        (plan,) = await h.plan_prune_spec(PruneSpec(threads=["l"], older_than=0))
        assert plan.delete_count == len(ids_of(loop, "l")) - 1  # all but the head
    finally:
        await cm.__aexit__(None, None, None)


def by_ns(saver, thread: str) -> dict[str, list[str]]:
    """LangGraph's own listing of a thread's checkpoints, every namespace: {ns: ids}."""
    out: dict[str, list[str]] = {}
    for tup in saver.list(cfg(thread)):
        c = tup.config["configurable"]
        out.setdefault(c["checkpoint_ns"], []).append(c["checkpoint_id"])
    return {ns: sorted(ids) for ns, ids in out.items()}


def ran_from(saver, thread: str, ns: str) -> str:
    return next(iter(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ns}}))).metadata[
        "parents"
    ][""]


async def test_prune_a_supervisor_thread_with_its_subgraph_namespaces(lg):
    """langgraph-supervisor's shape (agents are compiled subgraphs handing back with
    Command.PARENT): a subgraph's run is no fork of its thread, so `prune T --keep-last
    2` keeps the thread's last 2 checkpoints (LangGraph's get_state_history), and the
    namespaces run from checkpoints that go go whole; with --keep-last 6 the namespaces
    run from kept checkpoints stay and LangGraph replays from them as from the twin's.
    Undo puts every row back."""
    url, saver = lg
    sup = supervisor_graph().compile(checkpointer=saver)
    for t in ("faang-1", "faang-2"):
        sup.invoke({"messages": [HumanMessage(content="faang?")]}, cfg(t))
    rows = dump(url, saver)
    hist = [s.config["configurable"]["checkpoint_id"] for s in sup.get_state_history(cfg("faang-1"))]
    before = by_ns(saver, "faang-1")
    rows_ran_from = {ns: ran_from(saver, "faang-1", ns) for ns in before if ns}
    assert len(hist) == 11 and len(before) == 5  # the thread and its 4 agent runs
    values = strip_ids(sup.get_state(cfg("faang-1")).values)
    cm, store, h = await history(url)
    try:
        [plan] = await h.plan_prune_spec(PruneSpec(threads=["faang-1"], keep_last=2))
        assert plan.delete_count == sum(map(len, before.values())) - 2 and plan.keep_count == 2
        assert "fork point" not in plan.reason
        await h.prune_spec(PruneSpec(threads=["faang-1"], keep_last=2))
        assert [
            s.config["configurable"]["checkpoint_id"] for s in sup.get_state_history(cfg("faang-1"))
        ] == hist[:2]
        assert by_ns(saver, "faang-1") == {"": sorted(hist[:2])}
        assert strip_ids(sup.get_state(cfg("faang-1")).values) == values
        assert len(by_ns(saver, "faang-2")) == 5  # the other thread untouched
        await h.undo()
        assert dump(url, saver) == rows

        await h.prune_spec(PruneSpec(threads=["faang-1"], keep_last=6))
        kept = [s.config["configurable"]["checkpoint_id"] for s in sup.get_state_history(cfg("faang-1"))]
        assert kept == hist[:6]
        stay = {ns: ids for ns, ids in before.items() if ns and rows_ran_from[ns] in kept}
        assert len(stay) == 2 and by_ns(saver, "faang-1") == {"": sorted(kept), **stay}
        await h.undo()
        assert dump(url, saver) == rows
        await h.prune_spec(PruneSpec(threads=["faang-1"], keep_last=6))
        # a kept agent run: LangGraph replays from the checkpoint it ran from as on the twin
        step = {
            s.config["configurable"]["checkpoint_id"]: s.metadata["step"]
            for s in sup.get_state_history(cfg("faang-1"))
        }
        sub_from = next(rows_ran_from[ns] for ns in stay if ns)
        assert strip_ids(sup.invoke(None, cfg("faang-1", sub_from))) == strip_ids(
            sup.invoke(None, at_step(sup, "faang-2", step[sub_from]).config)
        )
    finally:
        await cm.__aexit__(None, None, None)


async def test_prune_keeps_an_interrupted_agent_run_and_it_resumes_as_its_twin(lg):
    """An agent subgraph waiting on interrupt(): `prune T --keep-last 1` (and `--all`)
    keeps the head, which holds the pending interrupt, and the agent's namespace run
    from it (its head: where LangGraph resumes the subgraph); undone row for row; then
    resuming gives what the unpruned twin gives."""
    url, saver = lg
    sup = supervisor_graph(ask=True).compile(checkpointer=saver)
    for t in ("q1", "q2"):
        sup.invoke({"messages": [HumanMessage(content="faang?")]}, cfg(t))
    state = sup.get_state(cfg("q1"), subgraphs=True)
    assert state.interrupts and state.tasks[0].state.next == ("work",)
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        for spec in (PruneSpec(threads=["q1"], keep_last=1), PruneSpec(keep_last=1)):
            await h.prune_spec(spec)
            left = by_ns(saver, "q1")
            [ns] = [n for n in left if n]
            assert ns.startswith("math:") and len(left[""]) == 1 and len(left[ns]) == 1
            assert ran_from(saver, "q1", ns) == left[""][0]
            twin = sup.get_state(cfg("q2"), subgraphs=True)
            got = sup.get_state(cfg("q1"), subgraphs=True)
            assert strip_ids(got.tasks[0].state.values) == strip_ids(twin.tasks[0].state.values)
            assert [i.value for i in got.interrupts] == [i.value for i in twin.interrupts]
            await h.undo()
            assert dump(url, saver) == rows
        await h.prune_spec(PruneSpec(threads=["q1"], keep_last=1))
        outs = {}
        for t in ("q1", "q2"):
            out = sup.invoke(Command(resume="Q1"), cfg(t))
            while "__interrupt__" in out:
                out = sup.invoke(Command(resume="Q2"), cfg(t))
            outs[t] = strip_ids(out)
        assert outs["q1"] == outs["q2"] and outs["q1"]["messages"][-1]["content"] == "final answer"
    finally:
        await cm.__aexit__(None, None, None)


class MState(TypedDict):
    notes: dict
    n: int


def notes_graph():
    g = StateGraph(MState)
    g.add_node("step", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g


async def test_merge_three_way_of_channel_values_and_its_undo(lg):
    from agentctl.errors import MergeConflictError

    url, saver = lg
    g = notes_graph().compile(checkpointer=saver)
    g.invoke({"notes": {"a": 1}, "n": 0}, cfg("m"))
    head = g.get_state(cfg("m")).config["configurable"]["checkpoint_id"]
    cm, store, h = await history(url)
    try:
        b = await h.branch(head, "notes")
        summary = await store.thread_summary(b)  # where it came from: the merge's default target
        assert (summary.branch_of, summary.branch_point) == ("m", head)
        g.update_state(cfg(b), {"notes": {"a": 1, "b": 2}})  # theirs: notes
        g.update_state(cfg("m"), {"n": 10})  # ours: n
        g.update_state(cfg("m"), {"notes": {"a": 1, "c": 3}})  # and notes, another key
        rows = dump(url, saver)
        plan = await h.plan_merge(b, "m")
        assert not plan.conflicts and not plan.up_to_date and plan.base.checkpoint_id == head
        cid = await h.merge_branch(b, "m", checkpoint_id=plan.merged.metadata.checkpoint_id)
        assert cid == plan.merged.metadata.checkpoint_id
        st = g.get_state(cfg("m"))
        assert st.values == {"notes": {"a": 1, "c": 3, "b": 2}, "n": 10}
        assert st.metadata["source"] == "update" and st.config["configurable"]["checkpoint_id"] == cid
        assert list(g.get_state_history(cfg("m")))
        await h.undo()
        assert dump(url, saver) == rows
        # both sides change n: a conflict at /n, nothing written; --strategy theirs takes theirs
        g.update_state(cfg(b), {"n": 99})
        rows = dump(url, saver)
        with pytest.raises(MergeConflictError) as exc:
            await h.merge_branch(b, "m")
        assert [c.path for c in exc.value.conflicts] == ["/n"]
        assert dump(url, saver) == rows
        await h.merge_branch(b, "m", strategy="theirs")
        assert g.get_state(cfg("m")).values == {"notes": {"a": 1, "c": 3, "b": 2}, "n": 99}
    finally:
        await cm.__aexit__(None, None, None)


async def test_merge_of_messages_appends_the_branchs_new_messages(lg):
    url, saver = lg
    agent = agent_graph().compile(checkpointer=saver)
    agent.invoke({"messages": [HumanMessage(content="what is 0+2 and 1+2?")]}, cfg("t"))
    head = agent.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    cm, store, h = await history(url)
    try:
        b = await h.branch(head, "msgs")
        agent.update_state(cfg(b), {"messages": [HumanMessage(content="from the branch")]})
        agent.update_state(cfg("t"), {"messages": [HumanMessage(content="from main")]})
        before = [m.content for m in agent.get_state(cfg("t")).values["messages"]]
        await h.merge_branch(b, "t")
        after = [m.content for m in agent.get_state(cfg("t")).values["messages"]]
        assert after == before + ["from the branch"]
        # and LangGraph goes on from the merged checkpoint
        agent.update_state(cfg("t"), {"count": 7})
        assert agent.get_state(cfg("t")).values["count"] == 7
        assert [m.content for m in agent.get_state(cfg("t")).values["messages"]] == after
    finally:
        await cm.__aexit__(None, None, None)


async def test_rewind_with_a_delta_channel_resumes_like_langgraphs_replay(lg):
    if DeltaChannel is None:  # pragma: no cover
        pytest.skip("no DeltaChannel in this LangGraph")
    url, saver = lg
    graph = delta_graph(12).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": []}, cfg("d"))
    ref = at_step(graph, "d", 7)  # between two snapshots (every 5 updates)
    ref_id = ref.config["configurable"]["checkpoint_id"]
    assert ref.values["log"] == list(range(7))
    cm, store, h = await history(url)
    try:
        await h.rewind(ref_id)
    finally:
        await cm.__aexit__(None, None, None)
    assert graph.get_state(cfg("d")).values == ref.values
    ours = graph.invoke(None, cfg("d"))
    theirs = graph.invoke(None, cfg("d", ref_id))
    assert ours == theirs and ours["log"] == list(range(12))


async def test_a_saver_migration_after_the_trash_was_made(lg):
    """A column LangGraph's saver adds later goes into the trash tables too."""
    url, saver = lg
    hitl = hitl_graph().compile(checkpointer=saver)
    for t in ("h1", "h2"):
        hitl.invoke({"request": "deploy", "approved": ""}, cfg(t))
    cm, store, h = await history(url)
    try:
        await h.delete_thread("h1")
        table = "writes" if "://" not in url else "checkpoint_writes"
        if "://" not in url:
            conn = sqlite3.connect(url)
            conn.execute(f"ALTER TABLE {table} ADD COLUMN extra TEXT")
            conn.commit()
            conn.close()
        else:
            with saver.conn.cursor() as cur:
                cur.execute(f"ALTER TABLE {table} ADD COLUMN extra TEXT")
        await h.undo()  # an op written before the migration: its trash gets the column first
        rows = dump(url, saver)
        assert any(r[0] == "h1" for r in rows[table])
        await h.delete_thread("h2")
        await h.undo()
        assert dump(url, saver) == rows
    finally:
        await cm.__aexit__(None, None, None)


async def test_the_shallow_savers_tables_are_not_written(pg_dsn):
    shallow = pytest.importorskip("langgraph.checkpoint.postgres.shallow")
    import warnings

    from agentctl.storage.contract import Unsupported

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with shallow.ShallowPostgresSaver.from_conn_string(psycopg_dsn(pg_dsn)) as saver:
            saver.setup()
            loop_graph(3).compile(checkpointer=saver).invoke({"n": 0, "log": []}, cfg("s"))
    cm, store, h = await history(pg_dsn)
    try:
        head = (await store.get_latest("s")).metadata.checkpoint_id
        for call in (
            h.plan_rewind(head),
            h.branch(head, "x"),
            h.delete_thread("s"),
            h.prune_spec(PruneSpec(keep_last=1)),
        ):
            with pytest.raises(Unsupported, match="shallow"):
                await call
    finally:
        await cm.__aexit__(None, None, None)


async def test_prune_around_a_fork_in_the_middle_of_a_long_thread(lg):
    url, saver = lg
    loop = loop_graph(40).compile(checkpointer=saver)
    loop.invoke({"n": 0, "log": []}, cfg("l"))
    mid = at_step(loop, "l", 20)
    loop.update_state(mid.config, {"n": 38})  # a second child of step 20: a fork point
    loop.invoke(None, cfg("l"))
    fork_id = mid.config["configurable"]["checkpoint_id"]
    values = loop.get_state(cfg("l")).values
    n = len(ids_of(loop, "l"))
    rows = dump(url, saver)
    cm, store, h = await history(url)
    try:
        (plan,) = await h.plan_prune_spec(PruneSpec(threads=["l"], keep_last=3))
        assert plan.delete_count == n - 4 and "1 fork point" in plan.reason
        await h.prune_spec(PruneSpec(threads=["l"], keep_last=3))
        left = ids_of(loop, "l")
        assert len(left) == 4 and fork_id in left
        assert loop.get_state(cfg("l")).values == values
        await h.undo()
        assert dump(url, saver) == rows
    finally:
        await cm.__aexit__(None, None, None)


def test_cli_prune_and_threads_delete_with_vacuum_report_the_sizes(tmp_path):
    import json

    from typer.testing import CliRunner

    from agentctl.cli import app

    db = tmp_path / "lg.db"
    shutil.copy(REPO / "agentctl" / "sample" / "langgraph.db", db)
    conn = sqlite3.connect(db)
    before = {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in ("checkpoints", "writes")}
    conn.close()

    def run(*args: str) -> Any:
        r = CliRunner().invoke(app, ["--db", str(db), *args])
        assert r.exit_code == 0, r.output
        return r

    r = run("prune", "--all", "--keep-last", "1", "--yes", "--no-backup", "--vacuum", "--json")
    out = json.loads(r.stdout)
    assert out["results"] and out["vacuum"]["vacuumed"] == "file"
    assert out["vacuum"]["after"] == db.stat().st_size and out["vacuum"]["before"] > 0
    assert "vacuum: file size" in r.stderr
    r = run("threads", "delete", "research", "--yes", "--no-backup", "--vacuum")
    assert "vacuum: file size" in r.stderr and "before" in r.stderr
    run("purge", "--yes", "--no-backup")
    r = run("threads", "list", "--json")
    assert "research" not in r.stdout
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    left = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    conn.close()
    assert 0 < left < len(before["checkpoints"])


async def test_compact_vacuums_and_reports_sizes(lg):
    url, saver = lg
    g = loop_graph(12).compile(checkpointer=saver)
    g.invoke({"n": 0, "log": []}, cfg("v"))
    cm, store, h = await history(url)
    try:
        await h.prune_spec(PruneSpec(threads=["v"], keep_last=1))
        await h.purge()
        report = await store.compact()
        assert report["before"] > 0 and report["after"] > 0
        if url.endswith(".db"):
            assert report["vacuumed"] == "file" and report["after"] <= report["before"]
        else:
            assert "checkpoints" in report["vacuumed"]
        assert list(g.get_state_history(cfg("v")))
    finally:
        await cm.__aexit__(None, None, None)


def test_vacuum_is_refused_before_anything_is_written_where_a_format_has_none(tmp_path):
    from agentctl.cli.writes import require_compact
    from agentctl.storage.contract import Store, Unsupported

    class NoVacuum:
        format = type("F", (), {"name": "x"})()
        compact = Store.compact

    with pytest.raises(Unsupported):
        require_compact(NoVacuum())


def test_cli_vacuum_on_agentos_and_refused_on_a_format_without_one(tmp_path):
    import json

    from typer.testing import CliRunner

    from agentctl.cli import app

    db = tmp_path / "a.db"
    shutil.copy(REPO / "sample_db" / "checkpoints.db", db)
    r = CliRunner().invoke(
        app,
        ["--db", str(db), "prune", "--all", "--keep-last", "1", "--yes", "--no-backup", "--vacuum", "--json"],
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)["vacuum"]
    assert report["vacuumed"] == "file" and report["after"] == db.stat().st_size
    adk = tmp_path / "adk.db"
    shutil.copy(REPO / "sample_db" / "adk.db", adk)
    r = CliRunner().invoke(
        app, ["--db", str(adk), "prune", "--all", "--keep-last", "1", "--yes", "--no-backup", "--vacuum"]
    )
    assert r.exit_code == 2, r.output
    assert "does not support" in r.output
