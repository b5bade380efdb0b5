"""Read commands on the sample, on SQLite and Postgres: exit codes and JSON payloads."""

from __future__ import annotations

import json

from agentctl.errors import ExitCode
from tests.support.rig import SAMPLE_DB
from tests.support.sampledb import cli, cli_json, sample_ro, sample_url  # noqa: F401  (fixtures)

MAIN = "coder-fix-flaky-test"
BRANCH = "coder-fix-flaky-test-branch-retry-backoff-70e7"
HEAD = "ckpt-coder-fix-flaky-test-13-7fe041"


def test_show_json_is_to_dict_exactly(sample_ro):  # noqa: F811
    d = cli_json(sample_ro, "show", MAIN + "@6")
    assert set(d) == {"metadata", "messages", "state", "tools_result", "next_node"}
    assert d["metadata"]["checkpoint_id"] == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    assert d["metadata"]["parent_checkpoint_id"] == "ckpt-coder-fix-flaky-test-5-554abe"
    assert d["next_node"] == "agent"
    # the same on both backends, and the same as the library gives
    assert d == cli_json(str(SAMPLE_DB), "show", "ckpt-coder-fix-flaky-test-6-4b9fe6")


def test_show_text(sample_ro):  # noqa: F811
    r = cli(sample_ro, "show", "support-1043")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "checkpoint  ckpt-support-1043-5-9d9fdb" in out
    assert "messages (6)" in out and "[1] user" in out and "你好" in out
    assert "→ lookup_order(" in out and '"customer": "李雷"' in out


def test_show_errors(sample_ro):  # noqa: F811
    r = cli(sample_ro, "show", "ckpt-coder-fix-flaky-test-6-4b9fe7")
    assert r.exit_code == ExitCode.NOT_FOUND and r.stdout == ""
    assert "closest: ckpt-coder-fix-flaky-test-6-4b9fe6" in r.stderr
    r = cli(sample_ro, "show", "ckpt-coder-fix-flaky-test-1")
    assert r.exit_code == ExitCode.USAGE and "ambiguous" in r.stderr
    assert "ckpt-coder-fix-flaky-test-13-7fe041" in r.stderr


def test_log(sample_ro):  # noqa: F811
    rows = cli_json(sample_ro, "log", MAIN)
    assert [m["step"] for m in rows] == list(range(13, 0, -1))
    assert rows[0]["checkpoint_id"] == HEAD
    assert [m["step"] for m in cli_json(sample_ro, "log", MAIN, "-n", "3", "--offset", "2")] == [11, 10, 9]
    assert len(cli_json(sample_ro, "log", "loop-research-7")) == 100
    assert len(cli_json(sample_ro, "log", "loop-research-7", "--all")) == 240
    r = cli(sample_ro, "log", MAIN, "-n", "2")
    assert r.exit_code == 0
    assert r.stdout.splitlines() == [
        f"{HEAD} ({MAIN}) #13 [merge] Merge {BRANCH} into {MAIN}",
        "ckpt-coder-fix-flaky-test-12-a716b2 #12 [llm_call] [assistant] Step 12: reviewing the failures "
        "and planning the next edit.",
    ]
    r = cli(sample_ro, "log", MAIN, "--offset", "7", "-n", "1")
    assert f"(fork: {BRANCH})" in r.stdout  # step 6 is where the branch starts
    r = cli(sample_ro, "log", "no-such-thread")
    assert r.exit_code == ExitCode.NOT_FOUND and "thread 'no-such-thread' not found" in r.stderr


def test_log_graph(sample_ro):  # noqa: F811
    rows = cli_json(sample_ro, "log", MAIN, "--graph")
    assert {m["thread_id"] for m in rows} == {MAIN, BRANCH} and len(rows) == 17
    lines = cli(sample_ro, "log", MAIN, "--graph").stdout.splitlines()
    assert lines[0].startswith(f"* {HEAD} ({MAIN})")
    assert lines[1] == "├─┐"  # the merge brings in the branch's head
    assert lines[2].startswith(f"│ * ckpt-{BRANCH}-3-31c2c2 ({BRANCH})")
    fork = lines.index("├─┘")  # the branch joins its branch point
    assert lines[fork - 1].startswith("* │ ckpt-coder-fix-flaky-test-7-ccdd3d")
    assert lines[fork + 1].startswith("* ckpt-coder-fix-flaky-test-6-4b9fe6")


def test_threads_show(sample_ro):  # noqa: F811
    d = cli_json(sample_ro, "threads", "show", MAIN)
    assert d["thread_id"] == MAIN and d["checkpoints"] == 13 and d["head_checkpoint_id"] == HEAD
    assert d["branches"] == [
        {
            "thread_id": BRANCH,
            "branch_point": "ckpt-coder-fix-flaky-test-6-4b9fe6",
            "first_checkpoint_id": f"ckpt-{BRANCH}-0",
        }
    ]
    assert len(d["latest"]) == 10
    b = cli_json(sample_ro, "threads", "show", BRANCH)
    assert b["branch_of"] == MAIN and b["branches"] == []
    r = cli(sample_ro, "threads", "show", "support")
    assert r.exit_code == ExitCode.USAGE and "support-1042, support-1043, support-1044" in r.stderr
    r = cli(sample_ro, "threads", "show", MAIN)
    assert r.exit_code == 0 and f"branch       {BRANCH} from" in r.stdout


def test_threads_list_same_on_both(sample_ro):  # noqa: F811
    assert cli_json(sample_ro, "threads", "list") == cli_json(str(SAMPLE_DB), "threads", "list")


def test_diff_json_and_patch(sample_ro):  # noqa: F811
    changes = cli_json(sample_ro, "diff", MAIN)  # the merge checkpoint against its parent
    by_path = {(c["section"], c["path"]): c for c in changes}
    assert by_path[("state", "/retry")] == {
        "section": "state",
        "path": "/retry",
        "op": "added",
        "old": None,
        "new": {"strategy": "exponential", "attempts": 3},
    }
    assert by_path[("metadata", "/step")]["old"] == 12 and by_path[("metadata", "/step")]["new"] == 13
    assert ("messages", "/18") in by_path and by_path[("messages", "/18")]["op"] == "added"
    # explicit B; A..B and B..A mirror each other
    ab = cli_json(sample_ro, "diff", MAIN + "~1", MAIN)
    assert ab == changes
    ba = cli_json(sample_ro, "diff", MAIN, MAIN + "~1")
    assert {(c["path"], c["op"]) for c in ba if c["section"] == "state"} == {("/retry", "removed")}
    r = cli(sample_ro, "diff", MAIN, "--patch")
    assert r.exit_code == 0
    patch = json.loads(r.stdout)
    assert {"op": "add", "path": "/retry", "value": {"strategy": "exponential", "attempts": 3}} in patch[
        "state"
    ]
    # across threads: the branch head against the branch point
    cross = cli_json(sample_ro, "diff", MAIN + "@6", BRANCH)
    assert any(c["section"] == "state" for c in cross)
    # a root checkpoint: everything in it is added
    root = cli_json(sample_ro, "diff", "support-1042@1")
    assert {c["op"] for c in root if c["section"] != "metadata"} == {"added"}
    assert cli_json(sample_ro, "diff", MAIN, MAIN) == []
    r = cli(sample_ro, "diff", MAIN, "--json", "--patch")
    assert r.exit_code == ExitCode.USAGE


def test_diff_text(sample_ro):  # noqa: F811
    r = cli(sample_ro, "diff", MAIN)
    lines = r.stdout.splitlines()
    assert lines[0] == "SECTION\tPATH\tOP\tOLD\tNEW"
    retry = [line.split("\t") for line in lines if line.startswith("state\t/retry\t")]
    assert len(retry) == 1 and retry[0][2:4] == ["added", ""]
    assert json.loads(retry[0][4]) == {"strategy": "exponential", "attempts": 3}  # JSONB reorders keys


def test_search(sample_ro):  # noqa: F811
    hits = cli_json(sample_ro, "search", "backoff")
    assert len(hits) == 4
    assert {h["thread_id"] for h in hits} == {MAIN, BRANCH}
    assert all(
        h["where"] == "messages" and h["role"] == "assistant" and "backoff" in h["snippet"].lower()
        for h in hits
    )
    assert [h["checkpoint_id"] for h in hits][0] == HEAD  # newest first
    assert len(cli_json(sample_ro, "search", "backoff", "--thread", BRANCH)) == 3
    assert cli_json(sample_ro, "search", "backoff", "--role", "user") == []
    assert len(cli_json(sample_ro, "search", "BACKOFF", "-n", "2")) == 2
    tools = cli_json(sample_ro, "search", "exit_code", "--thread", MAIN)
    assert tools and {h["where"] for h in tools} == {"tools_result"}
    assert len(cli_json(sample_ro, "search", "谢谢")) == 1
    r = cli(sample_ro, "search", "backoff", "-n", "1")
    assert r.stdout.splitlines()[0] == "THREAD\tSTEP\tCHECKPOINT\tWHERE\tROLE\tSNIPPET\tPATH"
    assert r.stdout.splitlines()[1].startswith(f"{MAIN}\t13\t{HEAD}\tmessages\tassistant\t")


def test_search_index_agrees_with_scan(sample_url):  # noqa: F811
    """On SQLite the FTS5 index and the plain scan give the same hits."""
    for args in (
        ["passed"],
        ["flaky", "--role", "user"],
        ["module_1.py", "--role", "tool"],
        ["exit_code"],
        ["PASSED", "--thread", MAIN],
        ["Iteration 2", "-n", "500"],
        ["exponential", "--in", "state"],
        ["retry", "--in", "tools,state"],
        ["strategy", "-n", "500"],
    ):
        fts = cli_json(sample_url, "search", *args)
        scan = cli_json(sample_url, "search", *args, "--scan")
        key = [(h["checkpoint_id"], h["where"], h["role"], h["path"]) for h in fts]
        assert key == [(h["checkpoint_id"], h["where"], h["role"], h["path"]) for h in scan], args
        assert key


def test_stats(sample_ro):  # noqa: F811
    s = cli_json(sample_ro, "stats")
    assert s["threads"] == 7 and s["checkpoints"] == 281
    assert s["per_thread"][0]["thread_id"] == "loop-research-7"
    assert s["tags"]["auto"] == 240 and s["tags"]["merge"] == 1
    r = cli(sample_ro, "stats")
    assert r.exit_code == 0 and "total\t\t281\t" in r.stdout


def test_doctor_clean_sample(sample_ro):  # noqa: F811
    d = cli_json(sample_ro, "doctor")
    assert d["ok"] is True and d["counts"] == {
        "duplicate_steps": 0,
        "orphan_parents": 0,
        "invalid_json": 0,
        "cycles": 0,
    }
    assert d["warnings"] == []


def test_tree(sample_ro):  # noqa: F811
    t = cli_json(sample_ro, "tree", MAIN)
    assert t["thread_id"] == MAIN
    ids = {n["id"]: n for n in t["nodes"]}
    assert HEAD in ids and f"ckpt-{BRANCH}-0" in ids
    assert "head" in ids[HEAD]["labels"] and "merge" in ids[HEAD]["labels"]
    assert {"from": "ckpt-coder-fix-flaky-test-6-4b9fe6", "to": f"ckpt-{BRANCH}-0", "kind": "branch"} in t[
        "edges"
    ]
    r = cli(sample_ro, "tree", MAIN)
    assert r.exit_code == 0 and f"thread {BRANCH}" in r.stdout


async def test_doctor_finds_problems(db_url):
    from agentctl.backends import open_backend
    from tests.support.helpers import make_cp

    async with open_backend(db_url, readonly=False, create=True) as b:
        async with b.transaction() as tx:
            await tx.put(make_cp("dup", 1, cid="d1"))
            await tx.put(make_cp("dup", 1, cid="d1b", parent="d1"))
            await tx.put(make_cp("orph", 2, cid="o2", parent="gone-by-gc"))
            await tx.put(make_cp("loop", 1, cid="c1", parent="c3"))
            await tx.put(make_cp("loop", 2, cid="c2", parent="c1"))
            await tx.put(make_cp("loop", 3, cid="c3", parent="c2"))
            await tx.put(make_cp("self", 1, cid="s1", parent="s1"))
            await tx.put(make_cp("bad", 1, cid="b1"))
            # a messages column holding an object (JSONB and TEXT alike)
            await tx.execute(
                "UPDATE checkpoints SET messages_blob = ? WHERE checkpoint_id = ?", '{"not": "a list"}', "b1"
            )
    d = cli_json(db_url, "doctor", code=ExitCode.PROBLEMS)
    assert d["ok"] is False
    p = d["problems"]
    assert p["duplicate_steps"] == [{"thread_id": "dup", "step": 1, "count": 2}]
    assert p["orphan_parents"] == [{"thread_id": "orph", "checkpoint_id": "o2", "parent_id": "gone-by-gc"}]
    assert p["invalid_json"] == [
        {"checkpoint_id": "b1", "column": "messages_blob", "reason": "JSON object where an array is expected"}
    ]
    assert sorted(sorted(c) for c in p["cycles"]) == [["c1", "c2", "c3"], ["s1"]]
    r = cli(db_url, "doctor")
    assert r.exit_code == ExitCode.PROBLEMS
    kinds = [line.split("\t")[0] for line in r.stdout.splitlines()[1:]]
    assert kinds == ["duplicate-step", "orphan-parent", "invalid-json", "cycle", "cycle"]
    # the other commands still read around the broken row
    assert cli(db_url, "log", "bad").exit_code == 0
    r = cli(db_url, "show", "b1")  # the row's metadata and a placeholder, not exit 6 (issue 33.16)
    assert r.exit_code == 0 and "messages_blob is not usable" in r.stdout, r.stderr


def test_doctor_warns_about_missing_indexes(sample_copy):
    import sqlite3

    conn = sqlite3.connect(sample_copy)
    conn.execute("DROP INDEX idx_parent")
    conn.commit()
    conn.close()
    d = cli_json(str(sample_copy), "doctor")  # a warning is not a problem: exit 0
    assert d["ok"] is True and d["warnings"] == ["index idx_parent is missing (reads are slower)"]


def test_search_snippet_comes_from_the_hits_own_message(sample_url):  # noqa: F811
    """issue 14: each checkpoint of the branch added one "attempt N" message; the hit of
    step N shows that message (the newest match), not the earliest, on both paths."""
    for extra in ([], ["--scan"]):
        hits = cli_json(sample_url, "search", "backoff", "--thread", BRANCH, *extra)
        assert [(h["step"], h["snippet"]) for h in hits] == [
            (3, "Trying exponential backoff, attempt 3."),
            (2, "Trying exponential backoff, attempt 2."),
            (1, "Trying exponential backoff, attempt 1."),
        ], extra


def test_search_snippet_keeps_the_match_on_a_narrow_terminal(sample_ro, monkeypatch):  # noqa: F811
    import re

    monkeypatch.setenv("FORCE_COLOR", "1")
    for columns in ("90", "70"):
        monkeypatch.setenv("COLUMNS", columns)
        out = re.sub(r"\x1b\[[0-9;]*m", "", cli(sample_ro, "search", "backoff").stdout)
        rows = [line for line in out.splitlines() if "messages" in line]
        assert len(rows) == 4 and all("backoff" in line for line in rows), (columns, out)
        assert all(len(line.rstrip()) <= int(columns) for line in out.splitlines())


def test_centre_on():
    from agentctl.text import centre_on

    text = "a" * 50 + " needle " + "b" * 50
    for width in (9, 20, 41):
        cut = centre_on(text, "NEEDLE", width)
        assert "needle" in cut and len(cut) <= width, (width, cut)
        left, right = cut.split("needle")
        assert abs(len(left) - len(right)) <= 1 and cut.startswith("…") and cut.endswith("…")
    assert centre_on("short needle", "needle", 40) == "short needle"
    assert centre_on("needle" + "x" * 50, "needle", 20) == "needle" + "x" * 13 + "…"
    assert centre_on("x" * 50 + "needle", "needle", 20) == "…" + "x" * 13 + "needle"
    assert centre_on("x" * 50, "nope", 10) == "x" * 9 + "…"


def test_piped_log_that_stops_at_the_limit_says_so(sample_ro):  # noqa: F811
    """Piped (stdout and stderr not terminals), log stops at 100 checkpoints and says so
    on stderr; stdout holds only the rows."""
    r = cli(sample_ro, "log", "loop-research-7")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 100
    assert "(showing 100 of 240; use -n N, --offset or --all)" in r.stderr
    r = cli(sample_ro, "log", "loop-research-7", "--all")
    assert len(r.stdout.splitlines()) == 240 and "showing" not in r.stderr
