"""The CrewAI formats against files the real crewai wrote (tests/crewai/crewai_write.py,
run once per session in the CrewAI rig's venv: tests/support/crewairig.py): checkpoints
(two fresh kickoffs, a resumed run, a fork), @persist flow states and the replay store.
agentctl reads them on this Python's SQLite, whatever its version (JSONB decoded in
Python); what it shows is checked against what CrewAI's own SQLite (json(data)) and its
own readers (load_state, KickoffTaskOutputsSQLiteStorage.load) return."""

from __future__ import annotations

import json

import pytest

from agentctl.storage import detect, open_store
from tests.support import crewairig
from tests.support.format_contract import check_store
from tests.support.sampledb import cli, cli_json

# the fixtures: the CrewAI rig's venv, the files it writes once, a copy per test
crewai_python, crewai_files, crewai_copy, crewai_check = (
    crewairig.crewai_python,
    crewairig.crewai_files,
    crewairig.crewai_copy,
    crewairig.crewai_check,
)

CK, FS, RP = "checkpoints.db", "flow_states.db", "latest_kickoff_task_outputs.db"


@pytest.mark.parametrize("name,fmt", [(CK, "crewai"), (FS, "crewai-flows"), (RP, "crewai-replay")])
async def test_detected(crewai_copy, name, fmt):
    assert (await detect(crewai_copy(name))).name == fmt


async def test_checkpoints_threads_roots_and_fork(crewai_copy, crewai_files):
    _, w = crewai_files
    db = crewai_copy(CK)
    async with open_store(db) as store:
        assert store.format.name == "crewai"
        await check_store(store, linear=False)
        assert await store.all_thread_ids() == sorted(["main", w["fork_branch"]])
        main = await store.read_thread("main", 100)
        ids = w["paris"] + w["rome"] + w["resumed"]
        assert [m.checkpoint_id for m in main] == ids  # rowid order: CrewAI's
        assert [m.step for m in main] == list(range(1, len(ids) + 1))
        # each fresh kickoff on main is a root of its own
        roots = [m.checkpoint_id for m in main if m.parent_checkpoint_id is None]
        assert roots == [w["paris"][0], w["rome"][0]]
        # the resumed run parts from the checkpoint it was resumed from
        assert main[len(w["paris"] + w["rome"])].parent_checkpoint_id == w["paris"][0]
        assert "resumed" in main[-1].tags
        # the fork: its own thread, its first row's parent in main
        fork = await store.thread_summary(w["fork_branch"])
        assert fork.branch_of == "main" and fork.branch_point == w["rome"][1]
        assert [b.checkpoint_id for b in await store.branches_of(["main"])] == w["fork"]
        # CrewAI's "latest" is the newest row: the head of main
        assert (await store.get_latest("main")).metadata.checkpoint_id == w["resumed"][-1]
        cp = await store.get(w["paris"][2])
        assert cp.state["entities"][0]["checkpoint_state"]["city"] == "Paris"
        assert [m["name"] for m in cp.messages] == ["plan", "book", "report"]


async def test_checkpoints_decode_as_crewai_reads_them(crewai_check, crewai_copy, tmp_path):
    db = crewai_copy(CK)
    # the rows as CrewAI's SQLite (pysqlite3, >= 3.45: json(data) works) reads them
    rows = crewai_check(db, "query", "SELECT id, json(data) FROM checkpoints ORDER BY rowid", cwd=tmp_path)
    async with open_store(db) as store:
        for cid, text in rows:
            data = json.loads(text)
            cp = await store.get(cid)
            events = data.pop("event_record")
            assert cp.state == {**data, "events": len(events["nodes"])}
            assert cp.metadata.parent_checkpoint_id == data["parent_id"]
            assert cp.metadata.thread_id == data["branch"]


def test_checkpoints_cli_reads(crewai_copy, crewai_files):
    _, w = crewai_files
    db = crewai_copy(CK)
    threads = cli_json(db, "threads", "list")
    assert {t["thread_id"]: t["checkpoints"] for t in threads} == {"main": 8, w["fork_branch"]: 1}
    shown = cli_json(db, "show", "main~1")
    assert shown["metadata"]["checkpoint_id"] == w["resumed"][0]
    assert (
        shown["metadata"]["checkpoint_id"]
        == cli_json(db, "show", w["resumed"][0][:-2])["metadata"]["checkpoint_id"]
    )
    log = cli(db, "log", "main")
    assert log.exit_code == 0 and w["paris"][0] in log.stdout and "fork" in log.stdout
    tree = cli(db, "tree", "main")
    assert tree.exit_code == 0 and w["fork_branch"] in tree.stdout
    hits = cli_json(db, "search", "zephyrine")
    assert {h["checkpoint_id"] for h in hits} == {w["paris"][2], w["rome"][2], w["resumed"][-1], w["fork"][0]}
    diff = cli_json(db, "diff", w["paris"][1], w["paris"][2])
    assert diff and any("city" not in json.dumps(d) for d in diff)
    stats = cli_json(db, "stats")
    assert stats["checkpoints"] == 9 and stats["threads"] == 2
    doctor = cli_json(db, "doctor", code=0)
    index = [x for x in doctor["warnings"] if "checkpoints(branch)" in x]
    assert len(index) == 1 and "--fix-indexes" in index[0]
    rows = [x.split(":")[0] for x in doctor["warnings"] if x not in index]
    assert sorted(rows) == sorted(w["resumed"] + w["fork"])
    r = cli(db, "doctor", "--fix-indexes")
    assert r.exit_code == 0 and "agentctl_checkpoints_branch" in r.stdout + r.stderr
    assert not [x for x in cli_json(db, "doctor")["warnings"] if "checkpoints(branch)" in x]
    assert cli_json(db, "threads", "list") == threads  # the same reads through the index
    r = cli(db, "export")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == 0 and len(lines) == 9


async def test_flow_states(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy(FS)
    oslo, lima = w["flows"]
    latest = crewai_check(db, "states", oslo, lima, cwd=tmp_path)  # SQLiteFlowPersistence.load_state
    async with open_store(db) as store:
        assert store.format.name == "crewai-flows"
        await check_store(store, first_step=1)
        assert sorted(await store.all_thread_ids()) == sorted([oslo, lima])
        assert await store.count(oslo) == 4 and await store.count(lima) == 2
        for uid in (oslo, lima):  # the head is what load_state returns
            assert (await store.get_latest(uid)).state == latest[uid]
        assert (await store.get("state-1")).state["steps"] == ["plan"]
    assert cli_json(db, "show", f"{oslo}@2")["state"]["steps"] == ["plan", "book"]
    assert [h["thread_id"] for h in cli_json(db, "search", "Lima")] == [lima, lima]


async def test_replay_store(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy(RP)
    loaded = crewai_check(db, "tasks", cwd=tmp_path)  # KickoffTaskOutputsSQLiteStorage.load
    async with open_store(db) as store:
        assert store.format.name == "crewai-replay"
        await check_store(store, first_step=1)
        metas = await store.read_thread("latest_kickoff")
        assert [m.checkpoint_id for m in metas] == [t["task_id"] for t in loaded] == w["tasks"]
        for meta, task in zip(metas, loaded, strict=False):
            cp = await store.get(meta.checkpoint_id)
            assert cp.messages[-1]["content"] == task["output"]["raw"]
            assert cp.state["inputs"] == task["inputs"] and cp.state["task_index"] == task["task_index"]


@pytest.mark.parametrize(
    "argv",
    [
        ("rewind", "latest_kickoff@1"),
        ("branch", "latest_kickoff@1", "b"),
        ("threads", "delete", "latest_kickoff", "--yes"),
        ("edit", "latest_kickoff@1", "--set", "x=1"),
    ],
)
def test_replay_store_writes_refused(crewai_copy, argv):
    db = crewai_copy(RP)
    before = open(db, "rb").read()
    r = cli(db, *argv)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert "crewai-replay" in r.stderr
    assert open(db, "rb").read() == before
