"""The bundled LangGraph sample (sample_db/make_langgraph_sample.py, written by the real
LangGraph) reads through the LangGraph format without LangGraph installed."""

from __future__ import annotations

from agentctl.storage import detect, open_store
from tests.support.rig import REPO

SAMPLE = REPO / "agentctl" / "sample" / "langgraph.db"


async def test_the_langgraph_sample_reads():
    assert (await detect(str(SAMPLE))).name == "langgraph"
    async with open_store(str(SAMPLE)) as store:
        threads = await store.all_thread_ids()  # LangGraph's threads; the namespace is research's
        assert threads == [
            "deploy-approval",
            "deploy-approved",
            "flaky-tool",
            "research",
            "support-refund",
            "support-refund-replay",
        ]
        addresses = await store.all_addresses()
        assert addresses[4].startswith("research|researcher:") and len(addresses) == 7
        assert await store.count() == 43
        pending = await store.get_latest("deploy-approval")
        assert pending.next_node == "ask"
        assert pending.tools_result["__interrupt__"][0]["value"][0]["value"]["risk"] == "medium"
        failed = await store.get_latest("flaky-tool")
        assert "timed out" in failed.tools_result["__error__"][0]["value"]
        support = await store.get_latest("support-refund")
        assert support.metadata.tags == ["update"] and support.state["refund_cents"] == 12999
        roles = [m["role"] for m in support.messages]
        assert roles[:3] == ["user", "assistant", "tool"] and roles.count("tool") == 3
        _, forks = await store.read_thread_forks("support-refund-replay", limit=100)
        assert len(forks) == 2
        assert [h.thread_id for h in await store.search("R-77", thread_id="support-refund", limit=1)] == [
            "support-refund"
        ]
        assert await store.doctor() == []


def test_the_cli_doctor_on_the_langgraph_sample(tmp_path):
    """The CLI passes the contract's `limit` to doctor (LangGraphStore.doctor took none:
    a TypeError traceback)."""
    import shutil

    from tests.support.sampledb import cli

    path = tmp_path / "lg.db"
    shutil.copyfile(SAMPLE, path)
    r = cli(str(path), "doctor")
    assert r.exit_code == 0 and "Traceback" not in r.stderr


async def test_doctor_takes_the_contracts_limit():
    async with open_store(str(SAMPLE)) as store:
        assert await store.doctor(limit=1) == []


async def test_search_takes_the_contracts_scan_and_says_it_scanned(tmp_path):
    """`agentctl search` passes scan= (LangGraphStore.search took none: every CLI search
    of a LangGraph database was a TypeError traceback); last_search_path says "scan"."""
    import shutil

    from tests.support.sampledb import cli

    async with open_store(str(SAMPLE)) as store:
        for scan in (False, True):
            store.last_search_path = ""
            hits = await store.search("R-77", scan=scan)
            assert "support-refund" in {h.thread_id for h in hits} and store.last_search_path == "scan"
    path = tmp_path / "lg.db"
    shutil.copyfile(SAMPLE, path)
    for extra in ((), ("--scan",)):
        r = cli(str(path), "--no-color", "search", "R-77", *extra)
        assert r.exit_code == 0 and "support-refund" in r.stdout, r.stderr


def test_thread_rows_summarise_the_last_message_and_rows_do_not_repeat_the_source():
    """A LangGraph thread's summary is its head's last message (the source where the
    graph has no messages); a checkpoint's row shows the source once, as its tag (it read
    `[loop] loop`, the TUI `loop  loop`)."""
    import json

    from tests.support.sampledb import cli

    rows = {t["thread_id"]: t for t in json.loads(cli(str(SAMPLE), "threads", "list", "--json").stdout)}
    assert rows["support-refund"]["head_summary"] == "[user] (operator) customer confirmed by phone"
    assert rows["support-refund-replay"]["head_summary"].startswith("[tool] ")
    assert rows["flaky-tool"]["head_summary"] == "loop"  # no messages channel: the source
    log = cli(str(SAMPLE), "log", "flaky-tool").stdout.splitlines()
    assert log and all(not line.endswith("[loop] loop") for line in log), log
    assert log[0].endswith("#1 [loop] prepare")  # the node that wrote it (no message)


def test_a_huge_head_is_not_decoded_for_its_thread_row(tmp_path):
    """A head checkpoint over HEAD_SUMMARY_MAX_BYTES is not read for the thread's summary
    (the source is shown): the thread list stays fast on hostile values."""
    import asyncio
    import json
    import sqlite3
    from typing import Annotated, TypedDict

    import pytest

    pytest.importorskip("langgraph.checkpoint.sqlite")
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    from agentctl.storage.langgraph.store import HEAD_SUMMARY_MAX_BYTES
    from tests.support.sampledb import cli

    S = TypedDict("S", {"messages": Annotated[list, add_messages]})  # noqa: UP013 (not a string annotation)

    graph = StateGraph(S)
    graph.add_node("bot", lambda s: {"messages": [("assistant", "ok")]})
    graph.add_edge(START, "bot")
    graph.add_edge("bot", END)
    db = tmp_path / "lg.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    app.invoke({"messages": [("user", "small")]}, {"configurable": {"thread_id": "small"}})
    app.invoke(
        {"messages": [("user", "x" * (HEAD_SUMMARY_MAX_BYTES + 10))]}, {"configurable": {"thread_id": "huge"}}
    )
    conn.close()
    rows = {
        t["thread_id"]: t["head_summary"]
        for t in json.loads(cli(str(db), "threads", "list", "--json").stdout)
    }
    assert rows == {"small": "[assistant] ok", "huge": "loop"}
    assert asyncio.run(_summary_of(str(db), "small")) == "[assistant] ok"


async def _summary_of(url: str, thread: str) -> str:
    async with open_store(url) as store:
        return (await store.thread_summary(thread)).head_summary


def test_a_step_shared_by_forks_is_ambiguous_unless_the_heads_line_decides(tmp_path):
    """support-refund-replay was replayed twice from old checkpoints: three checkpoints
    at step 3, two at step 4. `@3` names the head (a step-3 fork); `@4` is on no line of
    the head's parents: exit 2 listing both candidates (id, step, source, parent), and a
    rewind to it plans nothing; `~N` follows the head's parents, not the thread's order."""
    import json
    import shutil

    from tests.support.sampledb import cli

    db = tmp_path / "lg.db"
    shutil.copyfile(SAMPLE, db)
    t = "support-refund-replay"
    head = json.loads(cli(str(db), "show", t, "--json").stdout)["metadata"]
    r = cli(str(db), "show", f"{t}@3", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["metadata"] == head
    for args in (("show", f"{t}@4"), ("rewind", f"{t}@4", "--dry-run")):
        r = cli(str(db), *args)
        assert r.exit_code == 2 and "ambiguous" in r.stderr and not r.stdout, (args, r.stderr)
        assert "1f1d69be-aeef-65c0-8004-6fb2885f1272 (step 4, source loop, parent 1f1d69be-9717" in r.stderr
        assert "1f1d69be-37b9-6c80-8004-b894a101eb88 (step 4, source loop, parent 1f1d69be-1fe2" in r.stderr
    parent = json.loads(cli(str(db), "show", f"{t}~1", "--json").stdout)["metadata"]
    assert parent["checkpoint_id"] == head["parent_checkpoint_id"] and parent["step"] == 1
    assert json.loads(cli(str(db), "show", f"{t}@1", "--json").stdout)["metadata"] == parent
    r = cli(str(db), "show", f"{t}~4")
    assert r.exit_code == 3 and f"{t}~3" in r.stderr


def test_tree_shows_the_forks_inside_a_langgraph_thread():
    """`tree support-refund-replay` (replayed twice from old checkpoints) nests each fork
    under the checkpoint it forks from, labelled branch-point; the head's line stays at
    the top level (it was one flat list)."""
    import json

    from tests.support.sampledb import cli

    r = cli(str(SAMPLE), "--no-color", "tree", "support-refund-replay")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "└── thread support-refund-replay"
    at = {line.strip("│├└─ ").split(" ")[0]: line for line in lines[2:]}
    assert at["1f1d69bd-f033-63c0-8001-fda5fa3080ed"].startswith("    ├── ")  # on the head's line
    assert "branch-point" in at["1f1d69bd-f033-63c0-8001-fda5fa3080ed"]
    assert at["1f1d69bf-2624-6f00-8002-05e7e305e96b"].startswith("    └── ")  # the head, last
    # the rewind's target (the head copies it) on the head's line, both forks under it
    assert at["1f1d69be-080a-6c00-8002-5bfd74c0f638"].startswith("    ├── ")
    assert "branch-point" in at["1f1d69be-080a-6c00-8002-5bfd74c0f638"]
    assert at["1f1d69be-9717-6d80-8003-e28e4b3b2156"].startswith("    │       ├── ")  # in a fork
    assert sum("fork (6 checkpoints" in line for line in lines) == 1
    assert sum("fork (5 checkpoints" in line for line in lines) == 1
    tree = json.loads(cli(str(SAMPLE), "tree", "support-refund-replay", "--json").stdout)
    points = {n["id"] for n in tree["nodes"] if "branch-point" in n["labels"]}
    assert points == {"1f1d69bd-f033-63c0-8001-fda5fa3080ed", "1f1d69be-080a-6c00-8002-5bfd74c0f638"}


def test_a_subgraph_namespace_shows_under_its_thread_not_as_a_thread():
    """issue 23 item 6: `threads list` lists LangGraph's thread ids only; `tree` and
    `log --graph` show the namespace's checkpoints under the thread (and plain `log`
    names the fork); THREAD|NS still addresses them."""
    import json

    from tests.support.sampledb import cli

    listed = [t["thread_id"] for t in json.loads(cli(str(SAMPLE), "threads", "list", "--json").stdout)]
    assert "research" in listed and not [t for t in listed if "|" in t]
    ns = [
        t["thread_id"]
        for t in json.loads(cli(str(SAMPLE), "threads", "list", "--prefix", "research|", "--json").stdout)
    ]
    assert len(ns) == 1 and ns[0].startswith("research|researcher:")
    sub_ids = [m["checkpoint_id"] for m in json.loads(cli(str(SAMPLE), "log", ns[0], "--json").stdout)]
    assert len(sub_ids) == 4
    tree = cli(str(SAMPLE), "tree", "research").stdout
    assert f"thread {ns[0]}" in tree and all(i in tree for i in sub_ids)
    graph = cli(str(SAMPLE), "log", "research", "--graph").stdout
    assert all(i in graph for i in sub_ids)
    assert f"(fork: {ns[0]})" in cli(str(SAMPLE), "log", "research").stdout
    assert (
        json.loads(cli(str(SAMPLE), "show", ns[0], "--json").stdout)["metadata"]["checkpoint_id"]
        == sub_ids[0]
    )


def test_tree_keeps_a_rewinds_target_on_the_heads_line():
    """`support-refund-replay` was rewound to @2 (agentctl's fork copy: parent @1, step
    3): `tree` draws the target @2 on the head's line, the abandoned line forking from
    it, not the target inside that fork."""
    from tests.support.sampledb import cli

    out = cli(str(SAMPLE), "tree", "support-refund-replay").stdout.splitlines()
    top = [line for line in out if line.startswith(("    ├── ", "    └── "))]
    assert [line.split()[2] for line in top] == ["#-1", "#0", "#1", "#2", "#3"], out
    assert "branch-point" in top[3] and top[-1].split()[3] == "head"
    forks = [line for line in out if "fork (" in line]
    assert len(forks) == 2 and all(line.startswith("    │   ") for line in forks)


def test_state_and_diff_leave_out_langgraphs_own_keys_unless_asked():
    """`show` and `diff` leave LangGraph's `__metadata__` and `__internal__` out of the
    state (the metadata is shown above it; the internal channels are LangGraph's);
    `--all-keys` shows them. `show --json` is the checkpoint whole."""
    import json

    from tests.support.sampledb import cli

    shown = cli(str(SAMPLE), "show", "support-refund@3").stdout
    assert "__metadata__" not in shown and "__internal__" not in shown and '"messages"' in shown
    everything = cli(str(SAMPLE), "show", "support-refund@3", "--all-keys").stdout
    assert "__metadata__" in everything
    assert (
        "__metadata__" in json.loads(cli(str(SAMPLE), "show", "support-refund@3", "--json").stdout)["state"]
    )
    diff = cli(str(SAMPLE), "diff", "support-refund", "--json").stdout
    paths = [c["path"] for c in json.loads(diff) if c["section"] == "state"]
    assert paths == ["/messages/8"], paths
    paths = [
        c["path"]
        for c in json.loads(cli(str(SAMPLE), "diff", "support-refund", "--json", "--all-keys").stdout)
        if c["section"] == "state"
    ]
    assert "/__metadata__/step" in paths
