"""Issue 38 item 2: one JSON shape per write command. `--dry-run --json` and the write's
`--json` print one object with the same keys (`dry_run` true or false; rewind, merge and
threads delete: the History's `plan` in a dry run, null in the write, then the write's
keys, null in a dry run where only the write knows them), also when the plan finds
nothing to do (the write's keys, no op). On the bundled AgentOS and LangGraph samples;
edit through the graph on the story's LangGraph graph (tests/cli/test_cli_edit.py, the
native edit here)."""

from __future__ import annotations

import shutil

import pytest

from tests.support.rig import REPO
from tests.support.sampledb import cli_json

AGENTOS = {
    "rewind": ["rewind", "coder-add-cli-flag@5"],
    "rewind --hard": ["rewind", "coder-add-cli-flag@3", "--hard"],
    "rewind (nothing)": ["rewind", "support-1042"],
    "merge": ["merge", "coder-fix-flaky-test-branch-retry-backoff-70e7", "--strategy", "theirs"],
    "merge (nothing)": ["merge", "coder-fix-flaky-test-branch-retry-backoff-70e7"],
    "prune": ["prune", "loop-research-7", "--keep-last", "20"],
    "prune --vacuum": ["prune", "loop-research-7", "--keep-last", "10", "--vacuum"],
    "prune (nothing)": ["prune", "support-1042", "--keep-last", "20"],
    "edit": ["edit", "support-1042@2", "--set", 'stage="closed"'],
    "threads delete": ["threads", "delete", "support-1044"],
    "threads delete --vacuum": ["threads", "delete", "support-1043", "--vacuum"],
    "undo": ["undo"],
    "redo": ["redo"],
    "purge": ["purge"],
    "purge (nothing)": ["purge"],
}
LANGGRAPH = {
    "rewind": ["rewind", "support-refund@1"],
    "rewind --hard": ["rewind", "research@1", "--hard"],
    "prune": ["prune", "support-refund-replay", "--keep-last", "3"],
    "prune --vacuum": ["prune", "support-refund", "--keep-last", "5", "--vacuum"],
    "edit": ["edit", "deploy-approved@1", "--set", 'status="held"'],
    "threads delete": ["threads", "delete", "flaky-tool"],
    "undo": ["undo"],
    "redo": ["redo"],
    "purge": ["purge"],
}
#: the commands whose dry run carries the History's plan under `plan`
PLANNED = ("rewind", "merge", "threads delete")


@pytest.mark.parametrize(
    "db, commands", [("checkpoints.db", AGENTOS), ("langgraph.db", LANGGRAPH)], ids=["agentos", "langgraph"]
)
def test_a_dry_run_and_its_write_print_one_json_shape(tmp_path, db, commands):
    url = str(tmp_path / db)
    shutil.copyfile(REPO / "sample_db" / db, url)
    seen = {}
    for name, args in commands.items():
        dry = cli_json(url, *args, "--dry-run")
        ask = ["--yes"] + (["--no-backup"] if args[0] in ("rewind", "prune", "threads", "purge") else [])
        done = cli_json(url, *args, *ask)
        assert set(dry) == set(done), (name, sorted(dry), sorted(done))
        assert dry["dry_run"] is True and done["dry_run"] is False, name
        if name.startswith(PLANNED):
            assert isinstance(dry["plan"], dict) and done["plan"] is None, name
        seen[name] = done
    if db == "checkpoints.db":  # the plans that found nothing to do wrote nothing, and say so
        assert seen["rewind (nothing)"]["op_id"] is None and seen["merge (nothing)"]["up_to_date"] is True
        assert seen["prune (nothing)"]["results"] == [] and seen["purge (nothing)"]["rows"] == 0
        assert seen["threads delete --vacuum"]["vacuum"]


def test_branch_says_dry_run_false_as_every_write_does(tmp_path):
    url = str(tmp_path / "checkpoints.db")
    shutil.copyfile(REPO / "sample_db" / "checkpoints.db", url)
    out = cli_json(url, "branch", "support-1042@2", "shapes")
    assert set(out) == {"dry_run", "thread_id", "from_checkpoint_id", "op_id"} and out["dry_run"] is False


def test_edit_through_the_graph_prints_the_plans_keys(tmp_path):
    """edit's other form (LangGraph's update_state in the user's interpreter: the story's
    graph) prints the keys of its dry run, and of the native edit."""
    from tests.support.sampledb import story_db

    db, config = story_db(tmp_path)
    args = ["edit", "trip@1", "--set", 'plan.next_city="Paris"', "--config", config]
    dry, done = cli_json(db, *args, "--dry-run"), cli_json(db, *args, "--yes")
    assert (
        set(dry)
        == set(done)
        == set(
            cli_json(
                str(REPO / "sample_db" / "checkpoints.db"),
                "edit",
                "support-1042@2",
                "--set",
                'stage="closed"',
                "--dry-run",
            )
        )
    )
    assert done["dry_run"] is False and done["new_step"] is not None and done["op_id"] is not None
