"""`agentctl edit` on AgentOS (SQLite and Postgres): a new head holding REF's checkpoint
with exactly the values given, a plan first, one undoable op; bad input exits 2 and
writes nothing."""

from __future__ import annotations

from tests.support.sampledb import cli, cli_json, sample_url  # noqa: F401  (fixture)

T = "coder-fix-flaky-test"


def _export(url: str) -> list[str]:
    r = cli(url, "export")
    assert r.exit_code == 0, r.stderr
    return sorted(r.stdout.splitlines())


def test_edit_writes_a_new_head_with_the_values_and_undo_restores(sample_url):  # noqa: F811
    before = _export(sample_url)
    ref = cli_json(sample_url, "show", f"{T}@6")
    plan = cli_json(
        sample_url, "edit", f"{T}@6", "--set", "last_test.failed=0", "--set", 'plan=["done"]', "--dry-run"
    )
    assert {(c["path"], c["op"]) for c in plan["changes"]} == {
        ("/last_test/failed", "changed"),
        ("/plan/0", "changed"),
        ("/plan/1", "removed"),
        ("/plan/2", "removed"),
    }
    assert _export(sample_url) == before  # the plan wrote nothing
    r = cli(sample_url, "edit", f"{T}@6", "--set", "last_test.failed=0", "--set", 'plan=["done"]')
    assert r.exit_code == 2 and "--yes" in r.stderr  # off a terminal it asks for --yes
    out = cli_json(
        sample_url, "edit", f"{T}@6", "--set", "last_test.failed=0", "--set", 'plan=["done"]', "--yes"
    )
    head = cli_json(sample_url, "show", T)
    assert head["metadata"]["checkpoint_id"] == out["created"][0]
    assert head["metadata"]["step"] == 14 and head["metadata"]["tags"] == ["edit"]
    expect = dict(ref["state"], last_test={"passed": 9, "failed": 0}, plan=["done"])
    assert head["state"] == expect
    assert head["messages"] == ref["messages"] and head["tools_result"] == ref["tools_result"]
    assert cli_json(sample_url, "oplog")[0]["kind"] == "edit"
    assert cli(sample_url, "undo").exit_code == 0
    assert _export(sample_url) == before


def test_bad_edits_exit_2_one_line_nothing_written(sample_url):  # noqa: F811
    before = _export(sample_url)
    for args, words in [
        (["--set", "plan={x"], "the value is not JSON"),
        (["--set", "plan"], "use KEY=JSON"),
        (
            ["--set", "nokey=1"],
            "the state has no key 'nokey' (its keys: files, last_test, plan, task, test_runs)",
        ),
        (["--unset", "task.x"], "task.x: 'task' holds a str"),  # not 'x' (issue 33.16)
        (["--set", 'task.sub="x"'], "task.sub: 'task' holds a str, not an object or list"),
        (["--set", 'task.sub.deeper="x"'], "task.sub.deeper: 'task' holds a str"),
        (["--set", "plan.9=1"], "no item '9' in a list of 3"),
        (["--set", "plan=1", "--as-node", "agent"], "--as-node is LangGraph's"),
        # JSON is RFC 8259: Python's json would read these as NaN and Infinity
        (["--set", "plan=NaN"], "NaN: RFC 8259 JSON has no NaN or Infinity"),
        (["--set", "plan.0=-Infinity"], "-Infinity: RFC 8259 JSON has no NaN or Infinity"),
        (["--set", 'plan={"a": [Infinity]}'], "Infinity: RFC 8259 JSON has no NaN or Infinity"),
        (["--set", "plan.0=1e999"], "1e999: too large for a JSON number, it would be Infinity"),
    ]:
        r = cli(sample_url, "edit", f"{T}@6", *args, "--yes")
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert words in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert _export(sample_url) == before
