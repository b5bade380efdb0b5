"""Habits users bring from git, gh, kubectl and sqlite-utils (issue 14)."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE_DB
from sampledb import cli

SESSIONS_DB = SAMPLE_DB.with_name("sessions.db")


# ---- global options after the command's name ------------------------------------------


def test_global_options_after_the_command():
    before = cli(None, "--db", str(SAMPLE_DB), "threads", "list", "-n", "2")
    after = cli(None, "threads", "list", "-n", "2", "--db", str(SAMPLE_DB))
    assert before.exit_code == after.exit_code == 0
    assert after.stdout == before.stdout and "loop-research-7" in after.stdout
    r = cli(None, "show", "coder-fix-flaky-test", f"--db={SAMPLE_DB}", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["metadata"]["thread_id"] == "coder-fix-flaky-test"
    # the later one wins, as when both come first; --format too
    r = cli(None, "--db", "nope.db", "threads", "list", "--db", str(SESSIONS_DB), "--format", "article",
            "--json")
    assert r.exit_code == 0 and any(t["thread_id"].startswith("s-") for t in json.loads(r.stdout))


def test_global_flags_after_the_command(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    plain = cli(str(SAMPLE_DB), "log", "support-1042", "--no-color").stdout
    assert "\x1b[33m" not in plain and "ckpt-support-1042-5" in plain
    r = cli(str(SAMPLE_DB), "log", "support-1042", "--pager")
    assert r.exit_code == 0


def test_global_options_after_the_command_take_the_env_vars(monkeypatch):
    monkeypatch.setenv("AGENTCTL_DB", str(SAMPLE_DB))
    r = cli(None, "threads", "show", "support-1042", "--no-color")
    assert r.exit_code == 0 and "support-1042" in r.stdout


def test_global_option_after_the_command_without_its_value():
    r = cli(None, "threads", "list", "--db")
    assert r.exit_code == 2 and "'--db' requires an argument" in r.stderr


def test_nothing_after_double_dash_moves():
    r = cli(None, "search", "--db", str(SAMPLE_DB), "--", "--db")
    assert r.exit_code == 0  # searched for the text "--db"


# ---- --json with --dry-run; empty results on a terminal ---------------------------------


def test_threads_delete_dry_run_json(tmp_path):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    r = cli(str(db), "threads", "delete", "support-1042", "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["thread_id"] == "support-1042" and data["checkpoints"] == 5 and data["dry_run"] is True
    assert cli(str(db), "threads", "show", "support-1042").exit_code == 0  # nothing deleted


@pytest.mark.parametrize("command", [["threads", "delete", "support-1042"], ["rewind", "support-1042@2"],
                                     ["prune", "support-1042", "--keep-last", "1"], ["purge"]])
def test_every_dry_run_takes_json(tmp_path, command):
    import shutil

    db = tmp_path / "s.db"
    shutil.copyfile(SAMPLE_DB, db)
    r = cli(str(db), *command, "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    json.loads(r.stdout)


@pytest.mark.parametrize("command, message", [
    (["search", "no-such-text-anywhere"], "no matches"),
    (["oplog"], "no operations"),
    (["threads", "list", "--prefix", "no-such-thread"], "no threads"),
])
def test_empty_results_on_a_terminal_say_so(monkeypatch, command, message):
    monkeypatch.setenv("FORCE_COLOR", "1")
    r = cli(str(SAMPLE_DB), *command)
    assert r.exit_code == 0
    assert message in r.stderr and r.stdout.strip() == ""
    monkeypatch.delenv("FORCE_COLOR")  # piped: the header only (a table with no rows)
    r = cli(str(SAMPLE_DB), *command)
    assert r.exit_code == 0 and message not in r.stderr


# ---- piped threads list: whole values ---------------------------------------------------


def test_piped_threads_list_keeps_whole_values():
    r = cli(str(SAMPLE_DB), "threads", "list")
    assert r.exit_code == 0 and "…" not in r.stdout
    rows = {line.split("\t")[0]: line.split("\t") for line in r.stdout.splitlines()[1:]}
    whole = {t["thread_id"]: t for t in json.loads(cli(str(SAMPLE_DB), "threads", "list", "--json").stdout)}
    assert rows.keys() == whole.keys()
    for tid, cells in rows.items():
        assert cells[-1] == whole[tid]["head_summary"] and cells[3] == whole[tid]["updated_at"]
    assert any(len(t["head_summary"]) > 60 for t in whole.values())
