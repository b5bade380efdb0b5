"""A CrewAI flow with a @router and listeners on or_ and and_ (crewai_rig_flows.RoutedTrip,
checkpoints the real crewai wrote: tests/crewai/crewai_write.py's routes.db): agentctl's
reads, and its rewind, branch and edit proven by CrewAI continuing from what they wrote
(tests/crewai/crewai_check.py: RoutedTrip.from_checkpoint + kickoff).

What CrewAI 1.15 does on a resume, seen here: from the row after the start method it goes
on through the router, the route's or_ listener, both listeners of that and the and_ one;
from a row after the router (or later) it runs nothing more (the router's route and the
listeners' triggers are not restored), so the writes are proven from the first row."""

from __future__ import annotations

from tests.formats.test_crewai_writes import dump, ok, undo_redo
from tests.support import crewairig
from tests.support.sampledb import cli, cli_json

crewai_python, crewai_files, crewai_copy, crewai_check = (
    crewairig.crewai_python,
    crewairig.crewai_files,
    crewairig.crewai_copy,
    crewairig.crewai_check,
)
ROUTE = ["plan", "choose", "book-cheap", "hotel", "train", "report"]


def resume(check, tmp_path, db, ref):
    return check(db, "resume", ref, "RoutedTrip", cwd=tmp_path)


def test_routed_flow_reads(crewai_copy, crewai_files):
    _, w = crewai_files
    db = crewai_copy("routes.db")
    ids = w["routes"]
    log = cli_json(db, "log", "main")
    assert sorted(m["checkpoint_id"] for m in log) == sorted(ids) and len(ids) == 6
    # a line of parents, from the kickoff's root (CrewAI's listener may leave one NULL)
    assert cli_json(db, "show", ids[0])["metadata"]["parent_checkpoint_id"] is None
    router = cli_json(db, "show", ids[1])
    assert {"name": "choose", "content": "cheap"}.items() <= router["messages"][-1].items()
    assert router["metadata"]["summary"] == "choose: cheap"
    last = cli_json(db, "show", "main")
    flow = last["state"]["entities"][0]
    assert sorted(flow["checkpoint_completed_methods"]) == sorted(
        ["plan", "choose", "book", "hotel", "train", "report"]
    )
    assert flow["checkpoint_state"]["path"] == ROUTE
    assert last["messages"][-1]["content"] == "report 100 " + "/".join(ROUTE)
    tree = cli(db, "tree", "main")
    assert tree.exit_code == 0 and all(i in tree.stdout for i in ids)


def test_routed_flow_edit_takes_the_other_route(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("routes.db")
    before = dump(db, "checkpoints")
    first = w["routes"][0]
    ok(
        db,
        "edit",
        first,
        "--set",
        "entities.0.checkpoint_state.budget=900",
        "--set",
        'entities.0.checkpoint_state.path=["plan"]',
        "--yes",
    )
    edited = cli_json(db, "show", "main")["metadata"]
    assert edited["parent_checkpoint_id"] == first
    undo_redo(db, "checkpoints", before)
    went = resume(crewai_check, tmp_path, db, edited["checkpoint_id"])
    assert went["restored"]["state"]["budget"] == 900 and went["restored"]["completed"] == ["plan"]
    assert went["final"]["path"] == ["plan", "choose", "book-fancy", "hotel", "train", "report"]
    assert went["result"] == "report 900 plan/choose/book-fancy/hotel/train/report"
    assert [r[1] for r in went["written"]] == ["main"] * 5 and went["written"][0][2] == edited[
        "checkpoint_id"
    ]


def test_routed_flow_rewind_and_branch_continue(crewai_check, crewai_copy, crewai_files, tmp_path):
    _, w = crewai_files
    db = crewai_copy("routes.db")
    before = dump(db, "checkpoints")
    first = w["routes"][0]
    ok(db, "rewind", first, "--yes")
    copy = cli_json(db, "show", "main")
    assert copy["metadata"]["parent_checkpoint_id"] == first
    assert copy["state"]["entities"] == cli_json(db, "show", first)["state"]["entities"]
    undo_redo(db, "checkpoints", before)
    went = resume(crewai_check, tmp_path, db, copy["metadata"]["checkpoint_id"])
    assert went["result"].startswith("report 100 ") and went["final"]["path"][-4:] == ROUTE[-4:]
    assert {r[1] for r in went["written"]} == {"main"}
    # a branch from it: CrewAI goes on on the branch
    mid = dump(db, "checkpoints")
    ok(db, "branch", first, "try-route", "--yes")
    head = cli_json(db, "show", "try-route")["metadata"]
    undo_redo(db, "checkpoints", mid)
    went = resume(crewai_check, tmp_path, db, head["checkpoint_id"])
    assert {r[1] for r in went["written"]} == {"try-route"} and went["result"].startswith("report 100 ")
