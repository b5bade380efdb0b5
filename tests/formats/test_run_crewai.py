"""`agentctl run` on CrewAI's files: the child (agentctl/runners/crewai_child.py) runs the
rig's flows in the CrewAI rig's interpreter (tests/support/crewairig.py), and what it
writes equals what CrewAI's own resume / kickoff (tests/crewai/crewai_check.py) writes on
a copy of the same file; the run is one op, which undo takes back row for row."""

from __future__ import annotations

import json
import shutil
import sqlite3

from tests.formats.test_crewai_writes import dump as rows
from tests.support import crewairig
from tests.support.crewairig import CREWAI_DIR
from tests.support.sampledb import cli, cli_json

crewai_python, crewai_files, crewai_copy, crewai_check = (
    crewairig.crewai_python,
    crewairig.crewai_files,
    crewairig.crewai_copy,
    crewairig.crewai_check,
)
FLOWS = CREWAI_DIR / "crewai_rig_flows.py"
ENV = {"CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false"}


def run(db: str, python: str, tmp_path, *args: str):
    """`agentctl run ... --json` with `python`; (exit code, the JSON lines, stderr)."""
    env = {**ENV, "CREWAI_STORAGE_DIR": str(tmp_path / "storage")}
    r = cli(db, "run", *args, "--python", python, "--json", "--yes", env=env)
    return r.exit_code, [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")], r.stderr


def checkpoint_shape(new: list[list], ref: str) -> list:
    """The rows a resume added, as CrewAI means them: branch, parent (REF, or an earlier new
    row), and each entity's kind, completed methods and outputs, and the last row's state
    (ids, times, paths and event records are each run's own; an earlier row's state is
    dumped by CrewAI's listener thread while the next method changes it: a race)."""
    ids = [r[1] for r in new]

    def state(e: dict) -> dict:  # (the empty flow Flow.from_checkpoint makes has a new uuid of its own)
        st = e.get("checkpoint_state") or {}
        return st if e.get("checkpoint_completed_methods") else {k: v for k, v in st.items() if k != "id"}

    out = []
    for n, (_, _cid, _, parent, branch, data) in enumerate(new, 1):
        # (a later row's parent is an earlier new row, but which one is CrewAI's race too: its
        # listener reads state._parent_id before the previous write has chained it, so two
        # rows can share a parent, as one CI run showed)
        at = "REF" if parent == ref else "earlier" if parent in ids[: n - 1] else parent
        out.append(
            [
                branch,
                at,
                data["branch"],
                data["parent_id"] == parent,
                [
                    [
                        e.get("entity_type"),
                        state(e) if n == len(new) else None,
                        sorted(e.get("checkpoint_completed_methods") or []),
                        e.get("checkpoint_method_outputs"),
                    ]
                    for e in data["entities"]
                ],
            ]
        )
    return out


def same_as_crewai(check, tmp_path, copy: str, ref: str, had: int, new: list[list]) -> None:
    """CrewAI's own resume of REF (Flow.from_checkpoint + kickoff) on `copy` (the file
    before agentctl's run) writes the rows agentctl's run wrote."""
    crewai = check(copy, "resume", ref, cwd=tmp_path)
    theirs = rows(copy, "checkpoints")[had:]
    assert [r[1:] for r in crewai["written"]] == [[r[4], r[3]] for r in theirs]
    assert checkpoint_shape(new, ref) == checkpoint_shape(theirs, ref)


def test_run_resumes_a_checkpoint_as_crewai_does_and_undo_takes_it_back(
    crewai_check, crewai_copy, crewai_files, crewai_python, tmp_path
):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    mine = str(tmp_path / "reference.db")
    shutil.copyfile(db, mine)
    before = rows(db, "checkpoints")
    ref = w["paris"][1]
    code, lines, err = run(db, crewai_python, tmp_path, ref, "--agent", f"{FLOWS}:TripFlow")
    assert code == 0, err
    *saved, outcome = lines
    assert outcome["event"] == "done" and outcome["output"] == "report Paris zephyrine"
    new = rows(db, "checkpoints")[len(before) :]
    # (said as CrewAI's listener threads finish: in their order, not always the rows')
    had = len([r for r in before if r[4] == "main"])
    assert sorted(e["id"] for e in saved) == sorted(r[1] for r in new)
    assert sorted(e["step"] for e in saved) == list(range(had + 1, had + 1 + len(new)))
    same_as_crewai(crewai_check, tmp_path, mine, ref, len(before), new)
    assert new[0][4] == "main" and new[0][3] == ref
    op = cli_json(db, "oplog")[0]
    assert op["kind"] == "run" and op["threads"] == ["main"]
    assert cli(db, "undo").exit_code == 0
    assert rows(db, "checkpoints") == before
    assert cli(db, "redo").exit_code == 0
    assert [r[1:] for r in rows(db, "checkpoints")[len(before) :]] == [r[1:] for r in new]


def test_run_a_branch_resumes_its_newest_checkpoint_on_it(
    crewai_check, crewai_copy, crewai_files, crewai_python, tmp_path
):
    _, w = crewai_files
    db = crewai_copy("checkpoints.db")
    mine = str(tmp_path / "reference.db")
    shutil.copyfile(db, mine)
    before = rows(db, "checkpoints")
    code, lines, err = run(db, crewai_python, tmp_path, w["fork_branch"], "--agent", f"{FLOWS}:TripFlow")
    assert code == 0, err
    new = rows(db, "checkpoints")[len(before) :]
    assert (
        new and {r[4] for r in new} == {w["fork_branch"]} and new[0][3] == w["fork"][-1]
    )  # on it, from its head
    # (the fork's row holds two flows, the first empty, which CrewAI restores: it starts over)
    same_as_crewai(crewai_check, tmp_path, mine, w["fork"][-1], len(before), new)


def test_run_kicks_a_persisted_flow_off_as_crewai_does(
    crewai_check, crewai_copy, crewai_files, crewai_python, tmp_path
):
    _, w = crewai_files
    db = crewai_copy("flow_states.db")
    mine = str(tmp_path / "reference.db")
    shutil.copyfile(db, mine)
    oslo = w["flows"][0]
    before = rows(db, "flow_states")
    code, lines, err = run(
        db, crewai_python, tmp_path, oslo, "--agent", f"{FLOWS}:PersistedTrip", "--input", '{"note": "again"}'
    )
    assert code == 0, err
    new = rows(db, "flow_states")[len(before) :]
    had = len([r for r in before if r[2] == oslo])
    assert [(e["ref"], e["nodes"]) for e in lines[:-1]] == [
        (f"{oslo}@{n}", [r[3]]) for n, r in enumerate(new, had + 1)
    ]
    assert lines[1]["keys"] == ["steps"] and lines[-1]["output"] == "booked Oslo"
    crewai_check(mine, "continue", oslo, cwd=tmp_path)
    theirs = rows(mine, "flow_states")[len(before) :]

    def shape(rs: list[list]) -> list:
        return [[r[2], r[3], {k: v for k, v in json.loads(r[5]).items() if k != "note"}] for r in rs]

    assert shape(new) == shape(theirs) and [json.loads(r[5])["note"] for r in new] == ["again", "again"]
    assert cli(db, "undo").exit_code == 0
    assert rows(db, "flow_states") == before


def test_run_bad_input_exit_2_one_line_nothing_written(
    crewai_copy, crewai_files, crewai_python, tmp_path, bare_python
):
    _, w = crewai_files
    db, flows, crew = (
        crewai_copy("checkpoints.db"),
        crewai_copy("flow_states.db"),
        crewai_copy("crew_checkpoints.db"),
    )
    replay = crewai_copy("latest_kickoff_task_outputs.db")
    agent = f"{FLOWS}:TripFlow"
    old = sqlite3.sqlite_version_info < (3, 45, 0)
    cases = [
        (db, [w["paris"][0], "--agent", agent, "--input", "x"], "takes no --input"),
        (db, [w["paris"][0], "--agent", agent, "--resume", "1"], "--resume is LangGraph's"),
        (db, [w["paris"][0], "--agent", f"{FLOWS}:make_crew"], "not a crewai Flow class"),
        (
            db,
            [w["paris"][0], "--agent", f"{FLOWS}:TripFlow"],
            "need SQLite >= 3.45" if old else "cannot import CrewAI",
        ),
        (flows, [w["flows"][0], "--agent", f"{FLOWS}:PersistedTrip", "--input", "[1]"], "a JSON object"),
        (flows, [w["flows"][0], "--agent", f"{FLOWS}:PersistedTrip", "--from", "x"], "--from and --resume"),
        (crew, [w["crew"][0], "--agent", f"{FLOWS}:make_crew"], "cannot rebuild from its name"),
        (replay, ["latest_kickoff", "--agent", agent], "the crewai-replay format"),
    ]
    for n, (path, args, said) in enumerate(cases):
        before = rows(
            path,
            "latest_kickoff_task_outputs"
            if path == replay
            else "flow_states"
            if path == flows
            else "checkpoints",
        )
        code, _, err = run(path, bare_python if n == 3 else crewai_python, tmp_path, *args)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, (args, code, err)
        assert (
            rows(
                path,
                "latest_kickoff_task_outputs"
                if path == replay
                else "flow_states"
                if path == flows
                else "checkpoints",
            )
            == before
        )
    assert cli(db, "run", "nope", "--agent", agent).exit_code == 3
