"""`agentctl compare A B`: where two runs parted, on runs written by the real LangGraph
(no model, SQLite and Postgres) and on the AgentOS sample.

A deterministic replay from a checkpoint does not part from the original; an
`update_state` at X then a run parts at X's step + 1 (the update's checkpoint)."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("langgraph")

import tests.formats.test_langgraph_writes as lgw  # noqa: E402
from tests.formats.test_langgraph_writes import cfg, loop_graph  # noqa: E402
from tests.support.rig import SAMPLE_DB  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

lg = lgw.lg  # the fixture: an empty LangGraph database on SQLite and on Postgres


def _ran(saver, thread: str = "t", limit: int = 6):
    graph = loop_graph(limit).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": []}, cfg(thread))
    return graph


def _at(graph, thread: str, step: int) -> str:
    """The checkpoint id of the thread's original run at a step (the oldest one)."""
    found = [s for s in graph.get_state_history(cfg(thread)) if s.metadata["step"] == step]
    return min(found, key=lambda s: s.config["configurable"]["checkpoint_id"]).config["configurable"][
        "checkpoint_id"
    ]


def _head(graph, thread: str) -> str:
    return graph.get_state(cfg(thread)).config["configurable"]["checkpoint_id"]


def test_a_replay_from_a_checkpoint_does_not_part_from_the_original(lg):
    url, saver = lg
    graph = _ran(saver)
    original = _head(graph, "t")
    x = _at(graph, "t", 2)
    graph.invoke(None, cfg("t", x))  # LangGraph's own replay: a fork from x
    replay = _head(graph, "t")
    assert replay != original
    out = cli_json(url, "compare", original, replay)
    assert out["first_divergent_step"] is None
    assert out["a"] is None and out["b"] is None and out["changes"] == []
    assert out["a_steps"] == out["b_steps"] == 0
    r = cli(url, "compare", original, replay)
    assert r.exit_code == 0 and "do not part" in r.stdout


def test_an_update_at_x_then_a_run_parts_at_the_updates_step(lg):
    url, saver = lg
    graph = _ran(saver)
    original = _head(graph, "t")
    x = _at(graph, "t", 2)
    step_x = 2
    at_x = cfg("t", x)
    at_x["configurable"]["checkpoint_ns"] = ""
    forked = graph.update_state(at_x, {"n": 4})
    graph.invoke(None, forked)
    edited = _head(graph, "t")
    out = cli_json(url, "compare", original, edited)
    assert out["first_divergent_step"] == step_x + 1
    assert out["b"] == forked["configurable"]["checkpoint_id"]
    paths = {(c["section"], c["path"], c["op"]) for c in out["changes"]}
    assert ("state", "/n", "changed") in paths
    old_new = [c for c in out["changes"] if c["path"] == "/n"][0]
    assert (old_new["old"], old_new["new"]) == (3, 4)
    # the original ran on to n == 6: steps 4, 5, 6 after the divergence; the edited run
    # (n == 4 at step 3) reaches 6 in two
    assert (out["a_steps"], out["b_steps"]) == (3, 2)
    # compare is symmetric in where it parts
    back = cli_json(url, "compare", edited, original)
    assert back["first_divergent_step"] == step_x + 1
    assert (back["a_steps"], back["b_steps"]) == (2, 3)


def test_a_checkpoint_and_its_ancestor_do_not_part(lg):
    url, saver = lg
    graph = _ran(saver)
    head = _head(graph, "t")
    out = cli_json(url, "compare", "t~3", "t")
    assert out["first_divergent_step"] is None
    assert (out["a_steps"], out["b_steps"]) == (0, 3)
    assert cli_json(url, "compare", head, "t")["b_steps"] == 0


def test_two_threads_with_different_inputs_part_where_their_states_first_differ(lg):
    url, saver = lg
    graph = loop_graph(4).compile(checkpointer=saver)
    graph.invoke({"n": 0, "log": []}, cfg("x"))
    graph.invoke({"n": 1, "log": []}, cfg("y"))
    out = cli_json(url, "compare", "x", "y")
    # the input checkpoints hold the same state (the input waits in __start__): step 0 differs
    assert out["first_divergent_step"] == 0
    assert out["fork_point"] is None


def test_compare_on_the_agentos_sample_and_bad_refs(tmp_path):
    db = str(tmp_path / "s.db")
    shutil.copyfile(SAMPLE_DB, db)
    # a branch and its source thread part after the fork point
    out = cli_json(db, "compare", "coder-fix-flaky-test-branch-retry-backoff-70e7", "coder-fix-flaky-test~1")
    assert out["fork_point"] is not None
    assert out["first_divergent_step"] is not None and out["changes"]
    r = cli(db, "compare", "coder-fix-flaky-test", "no-such-thread")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1, (r.exit_code, r.stderr)
    # plain (piped) output: the step line then the diff as TSV
    r = cli(db, "compare", "coder-fix-flaky-test-branch-retry-backoff-70e7", "coder-fix-flaky-test~1")
    assert r.exit_code == 0
    assert r.stdout.startswith("parted at step ")
    assert "SECTION\tPATH\tOP\tOLD\tNEW" in r.stdout
    assert (
        json.loads(cli(db, "compare", "coder-fix-flaky-test", "coder-fix-flaky-test", "--json").stdout)[
            "first_divergent_step"
        ]
        is None
    )


def test_a_fork_copy_both_runs_go_through_is_not_a_common_step(lg):
    """Two replays: the second from the first's step 8 (n == 7). Both go through the
    first replay's fork copy (step 5, n == 4 again): it is not a step, so the runs have
    12 steps alike (the input, n = 0..10), not 13."""
    url, saver = lg
    graph = _ran(saver, limit=10)
    first = [s for s in graph.get_state_history(cfg("t")) if s.metadata["step"] == 4][0]
    graph.invoke(None, first.config)
    replay = _head(graph, "t")
    forks = [s for s in graph.get_state_history(cfg("t")) if s.metadata["source"] == "fork"]
    assert [(s.metadata["step"], s.values["n"]) for s in forks] == [(5, 4)]
    again = [s for s in graph.get_state_history(cfg("t")) if s.metadata["step"] == 8][0]  # the replay's
    assert again.values["n"] == 7
    graph.invoke(None, again.config)
    second = _head(graph, "t")
    values, at = [], cfg("t", second)
    while at is not None:  # the second replay's line, along LangGraph's parent configs
        snap = graph.get_state(at)
        values.append(snap.values.get("n"))
        at = snap.parent_config
    assert len(values) == 14 and len(set(map(str, values))) == 12  # the input, 0..10, two copies
    out = cli_json(url, "compare", replay, second)
    assert out["first_divergent_step"] is None and out["common_steps"] == 12, out
    assert (out["a_steps"], out["b_steps"]) == (0, 0)
