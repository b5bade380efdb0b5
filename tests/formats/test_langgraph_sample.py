"""The bundled LangGraph sample (sample_db/make_langgraph_sample.py, written by the real
LangGraph) reads through the LangGraph format without LangGraph installed."""

from __future__ import annotations


from agentctl.storage import detect, open_store

from tests.support.rig import REPO

SAMPLE = REPO / "agentctl" / "sample" / "langgraph.db"


async def test_the_langgraph_sample_reads():
    assert (await detect(str(SAMPLE))).name == "langgraph"
    async with open_store(str(SAMPLE)) as store:
        threads = await store.all_thread_ids()
        assert threads[:4] == ["deploy-approval", "deploy-approved", "flaky-tool", "research"]
        assert threads[4].startswith("research|researcher:")
        assert threads[5:] == ["support-refund", "support-refund-replay"]
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
            "support-refund"]
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
    assert log[0].endswith("#1 [loop]")


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

    S = TypedDict("S", {"messages": Annotated[list, add_messages]})  # not a string annotation

    graph = StateGraph(S)
    graph.add_node("bot", lambda s: {"messages": [("assistant", "ok")]})
    graph.add_edge(START, "bot")
    graph.add_edge("bot", END)
    db = tmp_path / "lg.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    app.invoke({"messages": [("user", "small")]}, {"configurable": {"thread_id": "small"}})
    app.invoke({"messages": [("user", "x" * (HEAD_SUMMARY_MAX_BYTES + 10))]}, {"configurable": {"thread_id": "huge"}})
    conn.close()
    rows = {t["thread_id"]: t["head_summary"] for t in json.loads(cli(str(db), "threads", "list", "--json").stdout)}
    assert rows == {"small": "[assistant] ok", "huge": "loop"}
    assert asyncio.run(_summary_of(str(db), "small")) == "[assistant] ok"


async def _summary_of(url: str, thread: str) -> str:
    async with open_store(url) as store:
        return (await store.thread_summary(thread)).head_summary
