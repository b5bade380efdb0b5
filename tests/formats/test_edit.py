"""`agentctl edit` on LangGraph: LangGraph itself writes the update in the user's
interpreter (update_state at REF), with exactly the values given (a reducer channel gets
Overwrite, not an append); the result equals LangGraph's own update_state with
Overwrite on a copy of the database; undo restores every row; bad input exits 2."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langgraph")

import tests.formats.test_langgraph_writes as lgw  # noqa: E402
from tests.formats.test_langgraph_writes import cfg, dump, strip_ids  # noqa: E402
from tests.formats.test_run import GRAPH, _agentctl, _user_graph, assert_exit_2_one_line, lg_db_with_a_run  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.dbcopy import langgraph_saver  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

lg = lgw.lg  # the fixture: an empty LangGraph database on SQLite and on Postgres
db_copy = dbcopy.db_copy  # the fixture: copy(url) -> a copy's URL (the framework's reference run)

MESSAGES = """

from langgraph.graph import MessagesState


def chat(s):
    return {"messages": [{"role": "assistant", "content": "reply to " + s["messages"][-1].content}]}


chat_graph = StateGraph(MessagesState)
chat_graph.add_node("chat", chat)
chat_graph.add_edge(START, "chat")
chat_graph.add_edge("chat", END)
"""


@pytest.fixture
def agent(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "graph.py").write_text(GRAPH + MESSAGES)
    return d


def test_edit_writes_exactly_the_values_like_update_state_with_overwrite(lg, agent, db_copy):
    url, saver = lg
    graph = _user_graph(agent).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": [], "fixed": True}, cfg("t"))
    x = [s for s in graph.get_state_history(cfg("t")) if s.metadata["step"] == 3][0]
    ref_id = x.config["configurable"]["checkpoint_id"]
    before_rows = dump(url, saver)
    count = len(list(graph.get_state_history(cfg("t"))))

    plan = cli_json(url, "edit", ref_id, "--set", "log=[7]", "--set", "n=1", "--dry-run")
    assert {(c["path"], c["op"]) for c in plan["changes"]} >= {("/n", "changed"), ("/log/0", "changed")}
    assert dump(url, saver) == before_rows  # a plan writes nothing

    r = _agentctl(
        url,
        "edit",
        ref_id,
        "--set",
        "log=[7]",
        "--set",
        "n=1",
        "--agent",
        f"{agent / 'graph.py'}:graph",
        "--yes",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("edited t: new checkpoint ") and "at step 4" in r.stdout
    new_id = r.stdout.split("new checkpoint ")[1].split()[0]
    new = graph.get_state({"configurable": {"thread_id": "t", "checkpoint_id": new_id}})
    assert new.values == {"n": 1, "log": [7], "fixed": True}  # [7], not [0, 1, 2] + [7]
    assert new.metadata["source"] == "update" and new.metadata["step"] == 4
    assert new.parent_config["configurable"]["checkpoint_id"] == ref_id  # a fork of REF
    assert len(list(graph.get_state_history(cfg("t")))) == count + 1

    # the same update by LangGraph's own API on a copy made before: undo, copy, redo the
    # edit through agentctl again
    from langgraph.types import Overwrite

    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == before_rows
    with langgraph_saver(db_copy(url)) as ref_saver:
        ref_graph = _user_graph(agent).compile(checkpointer=ref_saver)
        at = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ref_id}}
        made = ref_graph.update_state(at, {"log": Overwrite([7]), "n": 1})
        theirs = ref_graph.get_state(made)
        their_count = len(list(ref_graph.get_state_history(cfg("t"))))
    r = _agentctl(
        url,
        "edit",
        ref_id,
        "--set",
        "log=[7]",
        "--set",
        "n=1",
        "--agent",
        f"{agent / 'graph.py'}:graph",
        "--yes",
    )
    assert r.returncode == 0, r.stderr
    ours = graph.get_state(cfg("t"))
    assert strip_ids(ours.values) == strip_ids(theirs.values) and ours.next == theirs.next
    assert ours.metadata["step"] == theirs.metadata["step"]
    assert len(list(graph.get_state_history(cfg("t")))) == their_count == count + 1

    ops = cli_json(url, "oplog")
    assert ops[0]["kind"] == "edit" and "set log, set n" in ops[0]["summary"]
    assert cli(url, "undo").exit_code == 0
    assert dump(url, saver) == before_rows


def test_edit_of_messages_overwrites_with_messages(lg, agent):
    url, saver = lg
    graph = _user_graph(agent, "chat_graph").compile(checkpointer=saver)
    graph.invoke({"messages": [{"role": "user", "content": "hi"}]}, cfg("c"))
    new_messages = [{"role": "user", "content": "hello again"}]
    r = _agentctl(
        url,
        "edit",
        "c",
        "--set",
        "messages=" + json.dumps(new_messages),
        "--agent",
        f"{agent / 'graph.py'}:chat_graph",
        "--yes",
    )
    assert r.returncode == 0, r.stderr
    msgs = graph.get_state(cfg("c")).values["messages"]
    assert [(m.type, m.content) for m in msgs] == [("human", "hello again")]
    # and a nested edit keeps the message objects
    r = _agentctl(
        url,
        "edit",
        "c",
        "--set",
        'messages.0.content="edited"',
        "--agent",
        f"{agent / 'graph.py'}:chat_graph",
        "--yes",
    )
    assert r.returncode == 0, r.stderr
    msgs = graph.get_state(cfg("c")).values["messages"]
    assert [(m.type, m.content) for m in msgs] == [("human", "edited")]


def test_bad_edits_exit_2_and_write_nothing(tmp_path, agent):
    url = lg_db_with_a_run(tmp_path, agent)
    before = dump(url, None)
    a = f"{agent / 'graph.py'}:graph"
    cases = [
        (["--set", "n={bad"], "--set n: the value is not JSON"),
        (["--set", "n"], "use KEY=JSON"),
        (["--set", "nothere=1"], "the state has no key 'nothere' (its keys: fixed, log, n)"),
        (["--unset", "n.x"], "holds a int"),
        ([], "nothing to edit"),
    ]
    assert_exit_2_one_line(url, "edit", cases, "--agent", a, "--yes")
    # what only LangGraph can refuse: after the plan, one error line, nothing written
    r = _agentctl(url, "edit", "t", "--set", "n=1", "--as-node", "nosuchnode", "--agent", a, "--yes")
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        "agentctl: LangGraph refused the update: InvalidUpdateError: Node nosuchnode does not exist"
    )
    assert dump(url, None) == before
