"""The README's debugging story (sample_db/story/story.sh) runs end to end: the graph
fails at a node, edit fixes the value, run passes, compare shows where the runs parted
(at the edit's step), and two undos put the database back as after the failed run."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess

import pytest

from tests.support.rig import REPO

pytest.importorskip("langgraph")


def _rows(db: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return sorted(
            conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
                "type, checkpoint, metadata FROM checkpoints"
            ).fetchall()
        ) + sorted(conn.execute("SELECT * FROM writes").fetchall())
    finally:
        conn.close()


def test_the_debugging_story_runs_end_to_end(tmp_path):
    story = tmp_path / "story"
    shutil.copytree(REPO / "sample_db" / "story", story, ignore=shutil.ignore_patterns("story.db*"))
    # stop the script after the failed run to take the database as it was then
    script = (story / "story.sh").read_text()
    first, rest = script.split("say agentctl --db story.db log trip\n", 1)
    (story / "part1.sh").write_text(first)
    (story / "part2.sh").write_text(
        'set -e\ncd "$(dirname "$0")"\nsay() { printf \'\\n$ %s\\n\' "$*"; "$@"; }\n'
        "say agentctl --db story.db log trip\n" + rest
    )
    r = subprocess.run(["sh", str(story / "part1.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "your agent raised LookupError in node 'book': no flights to Atlantis" in r.stderr
    assert "created LangGraph's checkpoint tables in story.db" in r.stderr  # no setup() by hand first
    after_failure = _rows(str(story / "story.db"))
    r = subprocess.run(["sh", str(story / "part2.sh")], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout, r.stderr)
    out = r.stdout
    assert "edited trip: new checkpoint" in out and "at step 2" in out
    assert "ran trip: 2 new checkpoint(s)" in out
    assert "parted at step 2:" in out and 'state\t/plan/next_city\tchanged\t"Atlantis"\t"Paris"' in out
    assert out.count("undid operation") == 2
    assert _rows(str(story / "story.db")) == after_failure
