"""Write commands through the engine, on SQLite and Postgres: plans, confirmation,
results, undo."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentctl.backends import open_backend
from agentctl.errors import ExitCode
from tests.support.helpers import make_cp
from tests.support.rig import REPO, SAMPLE_DB, SCRIPTS
from tests.support.sampledb import cli, cli_json, sample_url  # noqa: F401  (fixture)

MAIN = "coder-fix-flaky-test"
BRANCH = "coder-fix-flaky-test-branch-retry-backoff-70e7"
LOOP = "loop-research-7"


def steps(db: str, thread: str) -> list[int]:
    return [m["step"] for m in cli_json(db, "log", thread, "--all")]


def backups(db: str) -> list[Path]:
    p = Path(db)
    return sorted(p.parent.glob(p.name + ".*.bak")) if p.exists() else []


def test_rewind_soft_then_undo(sample_url):  # noqa: F811
    plan = cli_json(sample_url, "rewind", MAIN + "@6", "--dry-run")["plan"]
    assert plan["target"]["checkpoint_id"] == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    assert [m["step"] for m in plan["moved"]] == list(range(7, 14))
    assert plan["hard"] is False and plan["archive_thread"].startswith(MAIN + "-branch-rewind-")
    assert steps(sample_url, MAIN) == list(range(13, 0, -1))  # the dry run wrote nothing
    r = cli(sample_url, "rewind", MAIN + "@6", "--dry-run")
    assert r.exit_code == 0 and "move 7 checkpoints after it to" in r.stdout

    r = cli(sample_url, "rewind", MAIN + "@6")  # off a terminal, without --yes
    assert r.exit_code == ExitCode.USAGE and r.stdout == ""
    assert "without --yes" in r.stderr and "nothing was written" in r.stderr
    assert steps(sample_url, MAIN) == list(range(13, 0, -1))

    res = cli_json(sample_url, "rewind", MAIN + "@6", "--yes")
    assert res["checkpoint_id"] == "ckpt-coder-fix-flaky-test-6-4b9fe6" and res["rewind_depth"] == 7
    archive = res["archive_thread"]
    assert steps(sample_url, MAIN) == list(range(6, 0, -1))
    assert steps(sample_url, archive) == list(range(13, 6, -1))
    tree = cli_json(sample_url, "tree", MAIN)
    tips = [n for n in tree["nodes"] if "abandoned" in n["labels"]]
    assert [n["id"] for n in tips] == ["ckpt-coder-fix-flaky-test-13-7fe041"]
    assert backups(sample_url) == []  # a soft rewind deletes nothing: no backup

    ops = cli_json(sample_url, "oplog")
    assert ops[0]["op_id"] == res["op_id"] and ops[0]["kind"] == "rewind" and not ops[0]["undone"]
    r = cli(sample_url, "undo")
    assert r.exit_code == 0 and f"undid operation {res['op_id']}" in r.stdout
    assert steps(sample_url, MAIN) == list(range(13, 0, -1))
    assert cli_json(sample_url, "oplog")[1]["undone"] is True
    r = cli(sample_url, "undo", str(res["op_id"]))
    assert r.exit_code == ExitCode.ERROR and "already undone" in r.stderr
    r = cli(sample_url, "undo", "999")
    assert r.exit_code == ExitCode.NOT_FOUND


def test_rewind_hard_takes_a_backup_on_sqlite(sample_url):  # noqa: F811
    r = cli(sample_url, "rewind", MAIN + "~2", "--hard", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "2 checkpoint(s) deleted" in r.stdout
    assert steps(sample_url, MAIN) == list(range(11, 0, -1))
    if sample_url.startswith("postgres"):
        assert "backup" not in r.stderr
    else:
        made = backups(sample_url)
        assert len(made) == 1 and f"backup of {sample_url} written to {made[0]}" in r.stderr
        # the backup is the database as it was before the delete
        assert steps(str(made[0]), MAIN) == list(range(13, 0, -1))
        r = cli(sample_url, "rewind", MAIN + "~1", "--hard", "--yes", "--no-backup")
        assert r.exit_code == 0 and backups(sample_url) == made
    assert cli(sample_url, "undo").exit_code == 0


def test_rewind_to_head_does_nothing(sample_url):  # noqa: F811
    r = cli(sample_url, "rewind", MAIN)
    assert r.exit_code == 0 and "nothing after it" in r.stderr
    assert cli_json(sample_url, "oplog") == []


def test_branch(sample_url):  # noqa: F811
    r = cli(sample_url, "branch", MAIN + "@6", "try-mocks")
    assert r.exit_code == 0, r.stderr
    thread = r.stdout.strip()
    assert thread.startswith(MAIN + "-branch-try-mocks-") and "undo: agentctl undo" in r.stderr
    rows = cli_json(sample_url, "log", thread)
    assert len(rows) == 1 and rows[0]["parent_checkpoint_id"] == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    assert rows[0]["tags"] == ["branch", "try-mocks"]
    assert cli_json(sample_url, "threads", "show", thread)["branch_of"] == MAIN
    d = cli_json(sample_url, "branch", thread, "second")
    assert d["from_checkpoint_id"] == rows[0]["checkpoint_id"] and d["op_id"]
    for bad in ("has space", "a@b", "x~1", "", "../../etc", "a/b", "a\\b", "x..y", "tab\tx"):
        r = cli(sample_url, "branch", MAIN, bad)
        assert r.exit_code == ExitCode.USAGE, bad
        assert "bad branch name" in r.stderr, bad
    assert cli(sample_url, "branch", "nope@1", "x").exit_code == ExitCode.NOT_FOUND


async def _diverge(url: str, theirs_value: object) -> str:
    """A branch off MAIN's head whose state changes `retry.attempts`, while MAIN also
    changes it: a conflict (unless both agree)."""
    r = cli(url, "branch", MAIN, "conflict")
    assert r.exit_code == 0, r.stderr
    thread = r.stdout.strip()
    async with open_backend(url, readonly=False) as b:
        head = await b.get_latest(MAIN)
        state = dict(head.state, retry={"strategy": "exponential", "attempts": 5})
        await b.put(
            make_cp(
                MAIN,
                14,
                cid="main-14",
                parent=head.metadata.checkpoint_id,
                created_at="2026-11-02T10:00:00+00:00",
                messages=head.messages,
                state=state,
            )
        )
        first = await b.get_latest(thread)
        state = dict(first.state, retry={"strategy": "exponential", "attempts": theirs_value})
        await b.put(
            make_cp(
                thread,
                1,
                cid="branch-1",
                parent=first.metadata.checkpoint_id,
                created_at="2026-11-02T10:00:01+00:00",
                messages=first.messages + [{"role": "assistant", "content": "tried it"}],
                state=state,
            )
        )
    return thread


async def test_merge_conflict_writes_nothing(sample_url):  # noqa: F811
    thread = await _diverge(sample_url, 9)
    before = steps(sample_url, MAIN)
    r = cli(sample_url, "merge", thread)
    assert r.exit_code == ExitCode.CONFLICT
    lines = r.stdout.splitlines()
    assert lines[0] == "PATH\tBASE\tOURS\tTHEIRS"
    assert lines[1] == "/state/retry/attempts\t3\t5\t9"
    assert "1 conflict(s); nothing was written" in r.stderr
    d = cli_json(sample_url, "merge", thread, "--dry-run", code=ExitCode.CONFLICT)
    assert d["conflicts"] == [
        {
            "path": "/state/retry/attempts",
            "base": 3,
            "ours": 5,
            "theirs": 9,
            "base_missing": False,
            "ours_missing": False,
            "theirs_missing": False,
        }
    ]
    assert steps(sample_url, MAIN) == before
    # a strategy settles it
    plan = cli_json(sample_url, "merge", thread, "--strategy", "theirs", "--dry-run")["plan"]
    assert plan["merged"]["state"]["retry"]["attempts"] == 9
    assert steps(sample_url, MAIN) == before
    res = cli_json(sample_url, "merge", thread, "--strategy", "theirs")
    head = cli_json(sample_url, "show", MAIN)
    assert (
        head["metadata"]["checkpoint_id"] == res["checkpoint_id"] and head["state"]["retry"]["attempts"] == 9
    )
    assert head["messages"][-1] == {"role": "assistant", "content": "tried it"}
    r = cli(sample_url, "merge", thread, "--into", MAIN)
    assert r.exit_code == 0 and "already contains" in r.stdout


async def test_merge_clean_and_usage(sample_url):  # noqa: F811
    thread = await _diverge(sample_url, 5)  # both sides agree: no conflict
    r = cli(sample_url, "merge", thread, "--into", MAIN)
    assert r.exit_code == 0, r.stderr
    cid = r.stdout.strip()
    assert cli_json(sample_url, "show", MAIN)["metadata"]["checkpoint_id"] == cid
    r = cli(sample_url, "merge", MAIN)  # not a branch
    assert r.exit_code == ExitCode.USAGE and "--into" in r.stderr
    r = cli(sample_url, "merge", thread, "--strategy", "mine")
    assert r.exit_code == ExitCode.USAGE
    r = cli(sample_url, "merge", BRANCH)  # the sample's branch was merged already
    assert r.exit_code == 0 and "already contains" in r.stdout


def test_prune(sample_url):  # noqa: F811
    out = cli_json(sample_url, "prune", LOOP, "--keep-last", "20", "--dry-run")
    # one object whether it plans or writes (issue 38.2): the plans, the results, VACUUM's report
    assert out["dry_run"] is True and out["results"] == [] and out["vacuum"] is None
    plans = out["plans"]
    assert len(plans) == 1 and len(plans[0]["delete"]) == 220 and plans[0]["keep_count"] == 20
    r = cli(sample_url, "prune", LOOP, "--keep-last", "20")
    assert r.exit_code == ExitCode.USAGE and "without --yes" in r.stderr
    assert len(steps(sample_url, LOOP)) == 240
    out = cli_json(sample_url, "prune", LOOP, "--keep-last", "20", "--yes")
    assert out["dry_run"] is False and out["plans"] == [] and out["vacuum"] is None
    res = out["results"]
    assert len(res) == 1 and len(res[0]["deleted"]) == 220
    assert steps(sample_url, LOOP) == list(range(240, 220, -1))
    assert cli(sample_url, "undo").exit_code == 0
    assert len(steps(sample_url, LOOP)) == 240
    allp = cli_json(sample_url, "prune", "--all", "--milestones", "3", "--dry-run")["plans"]
    assert {p["thread_id"] for p in allp} >= {LOOP, MAIN, "support-1042"}
    assert all(p["keep_count"] <= 3 + p["forks_kept"] or not p["delete"] for p in allp)
    old = cli_json(sample_url, "prune", "--all", "--older-than", "1d", "--dry-run")["plans"]
    # all but the head and the fork points
    assert all(p["keep_count"] == 1 + p["forks_kept"] for p in old if p["delete"])
    for args in (
        [LOOP],
        [LOOP, "--keep-last", "2", "--milestones", "3"],
        [LOOP, "--all", "--keep-last", "2"],
        [LOOP, "--older-than", "7 days"],
    ):
        r = cli(sample_url, "prune", *args, "--dry-run")
        assert r.exit_code == ExitCode.USAGE, args


def test_threads_delete(sample_url):  # noqa: F811
    r = cli(sample_url, "threads", "delete", "support-1042", "--dry-run")
    assert r.exit_code == 0 and "delete thread support-1042: 5 checkpoints" in r.stdout
    r = cli(sample_url, "threads", "delete", "support-1042")
    assert r.exit_code == ExitCode.USAGE
    d = cli_json(sample_url, "threads", "delete", "support-1042", "--yes")
    assert d["kind"] == "delete_thread" and len(d["deleted"]) == 5
    assert cli(sample_url, "log", "support-1042").exit_code == ExitCode.NOT_FOUND
    assert cli(sample_url, "undo").exit_code == 0
    assert steps(sample_url, "support-1042") == [5, 4, 3, 2, 1]


def test_purge(sample_url):  # noqa: F811
    assert cli_json(sample_url, "purge", "--dry-run")["rows"] == 0
    cli(sample_url, "threads", "delete", "support-1042", "--yes", "--no-backup")
    d = cli_json(sample_url, "purge", "--dry-run")
    assert d["rows"] == 5 and len(d["ops"]) == 1
    r = cli(sample_url, "purge")
    assert r.exit_code == ExitCode.USAGE
    r = cli(sample_url, "purge", "--yes")
    assert r.exit_code == 0 and "purged 5 row(s) of 1 operation(s)" in r.stdout
    if not sample_url.startswith("postgres"):
        assert len(backups(sample_url)) == 1
    r = cli(sample_url, "undo", str(d["ops"][0]))
    assert r.exit_code == ExitCode.ERROR and "purged" in r.stderr


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "args",
    [
        ["rewind", MAIN + "@3"],
        ["rewind", MAIN + "@3", "--hard"],
        ["prune", LOOP, "--keep-last", "1"],
        ["prune", "--all", "--milestones", "2"],
        ["threads", "delete", MAIN],
        ["purge"],
    ],
)
def test_destructive_without_yes_off_a_terminal_writes_nothing(tmp_path, args):
    db = tmp_path / "c.db"
    db.write_bytes(SAMPLE_DB.read_bytes())
    if args == ["purge"]:  # give purge something to purge
        assert cli(str(db), "threads", "delete", "support-1044", "--yes").exit_code == 0
    before = digest(str(db))
    listing = sorted(p.name for p in tmp_path.iterdir())
    r = cli(str(db), *args)
    assert r.exit_code == ExitCode.USAGE, r.stderr
    assert "without --yes" in r.stderr and "nothing was written" in r.stderr
    assert digest(str(db)) == before and sorted(p.name for p in tmp_path.iterdir()) == listing
    r = cli(str(db), *args, "--dry-run")  # and --dry-run writes nothing either
    assert r.exit_code == 0 and digest(str(db)) == before


def test_export_import_roundtrip_sqlite_postgres_sqlite(tmp_path, pg_dsn):
    first = tmp_path / "a.jsonl"
    r = cli(str(SAMPLE_DB), "export", "-o", str(first))
    assert r.exit_code == 0 and "exported 281 checkpoints" in r.stderr
    r = cli(pg_dsn, "import", str(first))  # no table yet
    assert r.exit_code == ExitCode.DATABASE and "--create" in r.stderr
    d = cli_json(pg_dsn, "import", "--create", str(first))
    assert len(d["created"]) == 281
    second = tmp_path / "b.jsonl"
    assert cli(pg_dsn, "export", "-o", str(second)).exit_code == 0
    back = tmp_path / "back.db"
    r = cli(str(back), "import", str(second))
    assert r.exit_code == ExitCode.NOT_FOUND and not back.exists()
    assert cli(str(back), "import", "--create", str(second)).exit_code == 0
    third = tmp_path / "c.jsonl"
    assert cli(str(back), "export", "-o", str(third)).exit_code == 0
    original = [json.loads(line) for line in first.read_text().splitlines()]
    assert [json.loads(line) for line in second.read_text().splitlines()] == original
    assert [json.loads(line) for line in third.read_text().splitlines()] == original
    # and the same reads on all three
    for cmd in (["threads", "list"], ["log", MAIN, "--graph"], ["show", MAIN]):
        assert cli_json(pg_dsn, *cmd) == cli_json(str(back), *cmd) == cli_json(str(SAMPLE_DB), *cmd)
    # importing again skips what exists
    r = cli(str(back), "import", str(first))
    assert r.exit_code == 0 and "nothing to import" in r.stdout


def test_export_threads_stdout_and_refusals(sample_url, tmp_path):  # noqa: F811
    r = cli(sample_url, "export", "support-1042", "support-1043")
    assert r.exit_code == 0
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(d["metadata"]["thread_id"], d["metadata"]["step"]) for d in rows] == [
        ("support-1042", i) for i in range(1, 6)
    ] + [("support-1043", i) for i in range(1, 6)]
    assert rows[0] == cli_json(sample_url, "show", "support-1042@1")
    out = tmp_path / "x.jsonl"
    out.write_text("keep me")
    r = cli(sample_url, "export", "-o", str(out))
    assert r.exit_code == ExitCode.USAGE and out.read_text() == "keep me"
    assert cli(sample_url, "export", "-o", str(out), "--force").exit_code == 0
    assert len(out.read_text().splitlines()) == 281
    assert cli(sample_url, "export", "nope").exit_code == ExitCode.NOT_FOUND


def test_import_bad_input_writes_nothing(sample_url, tmp_path):  # noqa: F811
    good = json.dumps(cli_json(sample_url, "show", "support-1042@1") | {})
    new = json.loads(good)
    new["metadata"]["checkpoint_id"] = "imported-1"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(new) + "\n" + '{"metadata": {"thread_id": "x"}}\n')
    r = cli(sample_url, "import", str(bad))
    assert r.exit_code == ExitCode.USAGE and "bad.jsonl:2: not a checkpoint" in r.stderr
    assert cli(sample_url, "show", "imported-1").exit_code == ExitCode.NOT_FOUND
    bad.write_text("not json\n")
    assert cli(sample_url, "import", str(bad)).exit_code == ExitCode.USAGE
    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps(new) + "\n" + good + "\n")
    r = cli(sample_url, "import", str(clash), "--on-conflict", "error")
    assert r.exit_code == ExitCode.ERROR and "nothing was written" in r.stderr
    assert cli(sample_url, "show", "imported-1").exit_code == ExitCode.NOT_FOUND
    d = cli_json(sample_url, "import", str(clash))  # skip: only the new one
    assert d["created"] == ["imported-1"]
    assert cli(sample_url, "import", str(tmp_path / "missing.jsonl")).exit_code == ExitCode.NOT_FOUND
    assert cli(sample_url, "import", str(clash), "--on-conflict", "merge").exit_code == ExitCode.USAGE


def test_backup(sample_url, tmp_path):  # noqa: F811
    dest = tmp_path / "copy.db"
    r = cli(sample_url, "backup", str(dest))
    if sample_url.startswith("postgres"):
        assert r.exit_code == ExitCode.USAGE and "pg_dump" in r.stderr and not dest.exists()
        return
    assert r.exit_code == 0 and dest.exists()
    assert cli_json(str(dest), "threads", "list") == cli_json(sample_url, "threads", "list")
    before = digest(str(dest))
    r = cli(sample_url, "backup", str(dest))
    assert r.exit_code == ExitCode.USAGE and "--force" in r.stderr and digest(str(dest)) == before
    assert cli(sample_url, "backup", str(dest), "--force").exit_code == 0
    assert cli(sample_url, "backup", sample_url, "--force").exit_code == ExitCode.USAGE
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".agentctl")) == []


def test_write_commands_on_a_missing_database(tmp_path):
    db = tmp_path / "typo.db"
    for args in (
        ["rewind", "x", "--yes"],
        ["branch", "x", "y"],
        ["prune", "--all", "--keep-last", "1", "--yes"],
        ["threads", "delete", "x", "--yes"],
        ["undo"],
        ["purge", "--yes"],
    ):
        r = cli(str(db), *args)
        assert r.exit_code == ExitCode.NOT_FOUND, args
    assert list(tmp_path.iterdir()) == []


def test_import_from_stdin(tmp_path):
    lines = cli(str(SAMPLE_DB), "export", "support-1044").stdout
    db = tmp_path / "new.db"
    r = cli(str(db), "import", "--create", "-", input=lines)
    assert r.exit_code == 0, r.stderr
    assert cli_json(str(db), "log", "support-1044") == cli_json(str(SAMPLE_DB), "log", "support-1044")


def test_prune_all_is_one_operation_undone_at_once(sample_url):  # noqa: F811
    """issue 14: `prune --all` is ONE operation: one op in the log, one undo restores
    every thread."""
    before = {t: steps(sample_url, t) for t in (MAIN, LOOP, "support-1042")}
    keep = {
        p["thread_id"]: p["keep_count"]
        for p in cli_json(sample_url, "prune", "--all", "--keep-last", "1", "--dry-run")["plans"]
    }
    res = cli_json(sample_url, "prune", "--all", "--keep-last", "1", "--yes", "--no-backup")["results"]
    assert len(res) == 1 and res[0]["op_id"] is not None
    # the head, and MAIN's fork point (the parent of its branch)
    assert (
        {t: len(steps(sample_url, t)) for t in before}
        == {t: keep[t] for t in before}
        == {MAIN: 2, LOOP: 1, "support-1042": 1}
    )
    assert [o["kind"] for o in cli_json(sample_url, "oplog")] == ["prune"]
    assert cli(sample_url, "undo").exit_code == 0
    assert {t: steps(sample_url, t) for t in before} == before


def test_prune_all_interrupted_changes_nothing_and_says_so(sample_url, tmp_path):  # noqa: F811
    """Ctrl-C in the middle of `prune --all` (after the first thread's rows were moved):
    exit 130, one line on stderr saying nothing was changed, every thread as before."""
    import os
    import signal
    import subprocess
    import sys
    import time

    before = {t: steps(sample_url, t) for t in (MAIN, LOOP, "support-1042")}
    ready, resume = tmp_path / "ready", tmp_path / "resume"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTS / "paused_agentctl.py"),
            str(ready),
            "first-change",
            "--",
            "--db",
            sample_url,
            "prune",
            "--all",
            "--keep-last",
            "1",
            "--yes",
            "--no-backup",
        ],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "AGENTCTL_TEST_RESUME_FILE": str(resume)},
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        resume.write_text("go\n")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    # the plan, then one line
    assert (
        err.strip().splitlines()[-1]
        == "agentctl: interrupted; the prune was rolled back, nothing was changed"
    ), err
    assert "Traceback" not in err
    assert {t: steps(sample_url, t) for t in before} == before
    assert cli_json(sample_url, "oplog") == []


@pytest.mark.parametrize(
    "args",
    [
        ["prune", LOOP, "--keep-last", "20"],
        ["prune", "--all", "--milestones", "2"],
        ["threads", "delete", "support-1042"],
    ],
)
def test_prune_and_threads_delete_copy_the_database_aside_first(sample_url, args):  # noqa: F811
    """The README: `prune` and `threads delete` copy a SQLite file aside first (as
    `rewind --hard` and `purge` do) unless --no-backup, which they accept."""
    thread = "support-1042" if args[0] == "threads" else LOOP
    before = steps(sample_url, thread)
    r = cli(sample_url, *args, "--yes")
    assert r.exit_code == 0, r.stderr
    if sample_url.startswith("postgres"):
        assert "backup" not in r.stderr
    else:
        made = backups(sample_url)
        assert len(made) == 1 and f"backup of {sample_url} written to {made[0]}" in r.stderr
        assert steps(str(made[0]), thread) == before  # the database before the write
    assert cli(sample_url, "undo").exit_code == 0
    r = cli(sample_url, *args, "--yes", "--no-backup")
    assert r.exit_code == 0, r.stderr
    assert "backup" not in r.stderr and len(backups(sample_url)) == (
        0 if sample_url.startswith("postgres") else 1
    )


def test_merge_dry_run_announces_the_id_the_merge_uses_and_no_change_is_nothing(sample_url):  # noqa: F811
    """issue 14: `merge --dry-run` shows the checkpoint id the merge then writes; a
    branch without changes: "nothing to merge", nothing written."""
    thread = cli_json(sample_url, "branch", "support-1042", "idle")["thread_id"]
    ops = cli_json(sample_url, "oplog")
    r = cli(sample_url, "merge", thread)
    assert r.exit_code == 0 and "nothing to merge" in r.stdout
    assert cli_json(sample_url, "oplog") == ops and steps(sample_url, "support-1042") == [5, 4, 3, 2, 1]
    other = cli_json(sample_url, "branch", "support-1043", "changes")["thread_id"]

    async def change():
        async with open_backend(sample_url, readonly=False) as b:
            head = await b.get_latest(other)
            await b.put(
                make_cp(other, 1, cid="changed-1", parent=head.metadata.checkpoint_id, state={"new": "value"})
            )

    from tests.support.rig import run_sync

    run_sync(change)
    plan = cli_json(sample_url, "merge", other, "--dry-run")["plan"]
    announced = plan["merged"]["metadata"]["checkpoint_id"]
    assert announced in cli(sample_url, "merge", other, "--dry-run").stdout
    res = cli_json(sample_url, "merge", other)
    assert res["checkpoint_id"] == announced


def parents(db: str, thread: str) -> dict[str, str | None]:
    return {m["checkpoint_id"]: m["parent_checkpoint_id"] for m in cli_json(db, "log", thread, "--all")}


def test_prune_keeps_fork_points_and_leaves_no_orphan(sample_url):  # noqa: F811
    """issue 23 item 4: the README's prunes leave a database `doctor` calls sound; the
    fork point of a branch stays; a kept checkpoint whose parent goes gets its nearest
    kept ancestor as parent (the oldest: none), as the plan says; undo puts every
    parent back."""
    fork = "ckpt-coder-fix-flaky-test-6-4b9fe6"
    before = parents(sample_url, MAIN)
    (plan,) = cli_json(sample_url, "prune", MAIN, "--keep-last", "3", "--dry-run")["plans"]
    assert fork not in [m["checkpoint_id"] for m in plan["delete"]]
    assert (plan["delete_count"], plan["keep_count"], plan["forks_kept"]) == (9, 4, 1)
    assert {r["checkpoint_id"]: r["new_parent_id"] for r in plan["reparent"]} == {
        fork: None,
        "ckpt-coder-fix-flaky-test-11-6a967a": fork,
    }  # the nearest ancestor kept
    assert (
        f"parent of {fork} becomes none"
        in cli(sample_url, "prune", MAIN, "--keep-last", "3", "--dry-run").stdout
    )
    cli_json(sample_url, "prune", MAIN, "--keep-last", "3", "--yes", "--no-backup")
    assert cli(sample_url, "doctor").exit_code == 0
    assert fork in parents(sample_url, MAIN)
    assert parents(sample_url, BRANCH)[BRANCH_ROOT] == fork
    assert cli(sample_url, "undo").exit_code == 0
    assert parents(sample_url, MAIN) == before
    cli_json(sample_url, "prune", LOOP, "--keep-last", "20", "--yes", "--no-backup")
    r = cli(sample_url, "doctor")
    assert r.exit_code == 0, r.stdout
    assert parents(sample_url, LOOP)["ckpt-loop-research-7-000221"] is None
    # a branch whose first checkpoints go stays a branch: its head now forks from the fork point
    cli_json(sample_url, "prune", BRANCH, "--keep-last", "1", "--yes", "--no-backup")
    assert parents(sample_url, BRANCH) == {
        "ckpt-coder-fix-flaky-test-branch-retry-backoff-70e7-3-31c2c2": fork
    }
    assert cli(sample_url, "doctor").exit_code == 0


BRANCH_ROOT = "ckpt-coder-fix-flaky-test-branch-retry-backoff-70e7-0"


def test_prune_without_thread_selects_every_thread(sample_url):  # noqa: F811
    """issue 23 item 10: a policy with no THREAD means every thread it selects (as
    --all), with the same plan and the same confirmation."""
    for policy in (["--keep-last", "20"], ["--older-than", "30d"], ["--milestones", "3"]):
        assert cli_json(sample_url, "prune", *policy, "--dry-run") == cli_json(
            sample_url, "prune", "--all", *policy, "--dry-run"
        )
    r = cli(sample_url, "prune", "--keep-last", "20")
    assert r.exit_code == ExitCode.USAGE and "without --yes" in r.stderr
    assert len(steps(sample_url, LOOP)) == 240
    r = cli(sample_url, "prune", LOOP, "--all", "--keep-last", "2")
    assert r.exit_code == ExitCode.USAGE and "not both" in r.stderr


def test_article_prune_across_sessions_and_keep_last_of_one_session(tmp_path):
    """issue 23 item 10 on the article store: --status with no SESSION selects across
    sessions; SESSION --keep-last N (N counts a user's sessions there) says why it
    cannot, exit 2, one line, nothing written; a SESSION the filter does not select
    says there is nothing to prune."""
    import shutil

    db = tmp_path / "sessions.db"
    shutil.copyfile(SAMPLE_DB.parent / "sessions.db", db)
    url = str(db)
    plans = cli_json(url, "prune", "--status", "completed", "--dry-run")["plans"]
    assert plans and plans == cli_json(url, "prune", "--all", "--status", "completed", "--dry-run")["plans"]
    data = db.read_bytes()
    r = cli(url, "prune", "s-weather-paris", "--keep-last", "3", "--yes")
    assert r.exit_code == ExitCode.USAGE and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "whole sessions" in r.stderr
    r = cli(url, "prune", "s-weather-paris", "--status", "cancelled", "--dry-run")
    assert r.exit_code == 0 and "nothing to prune" in r.stdout
    assert db.read_bytes() == data and not backups(url)


# the write commands: every one takes --yes (a script may pass it to each)
WRITE_COMMANDS = (
    ["rewind"],
    ["branch"],
    ["merge"],
    ["prune"],
    ["edit"],
    ["run"],
    ["undo"],
    ["purge"],
    ["import"],
    ["threads", "delete"],
    ["index", "build"],
    ["index", "drop"],
)


@pytest.mark.parametrize("command", WRITE_COMMANDS, ids=" ".join)
def test_every_write_command_accepts_yes(command):
    r = cli(None, *command, "--help")
    assert r.exit_code == 0 and "--yes" in r.stdout


def test_yes_on_commands_that_do_not_ask(sample_url):  # noqa: F811
    """branch, merge, undo and import never ask; --yes is accepted and changes nothing."""
    new = cli_json(sample_url, "branch", MAIN + "@6", "try", "--yes")["thread_id"]
    assert cli_json(sample_url, "merge", BRANCH, "--dry-run", "--yes", "--strategy", "ours")["into"] == MAIN
    assert cli_json(sample_url, "undo", "--yes")["kind"] == "undo"
    assert new not in [t["thread_id"] for t in cli_json(sample_url, "threads", "list")]


def test_prune_older_than_reads_as_a_duration(sample_url):  # noqa: F811
    """The plan and the op summary show --older-than as given (30d, 1h), not seconds
    in exponent notation (keep_age 2.592e+06)."""
    r = cli(sample_url, "prune", LOOP, "--older-than", "30d", "--dry-run")
    assert r.exit_code == 0 and f"prune {LOOP} (keep_age 30d)" in r.stdout, r.stdout
    r = cli(sample_url, "prune", LOOP, "--older-than", "1d12h", "--yes", "--no-backup")
    assert r.exit_code == 0 and "(keep_age 1d12h): deleted" in r.stdout, r.stdout
    assert "(keep_age 1d12h)" in cli_json(sample_url, "oplog")[0]["summary"]
