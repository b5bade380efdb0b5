"""NaN and Infinity in an AgentOS row (issue 33 item 1: the issue's own example, written
by another program with Python's json, which writes them): `show --json` and `export`
print JSON as RFC 8259 has it, a placeholder in their place; `doctor` names the row
(exit 5). The other formats: tests/reliability/test_reliability_hostile.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from tests.support.rig import REPO, SAMPLE_DB


def strict(text: str) -> object:
    return json.loads(text, parse_constant=lambda word: pytest.fail(f"{word} in {text[-300:]}"))


def test_nan_and_infinity_in_an_agentos_row(tmp_path):
    db = tmp_path / "c.db"
    shutil.copyfile(SAMPLE_DB, db)
    with sqlite3.connect(db) as conn:
        (cid,) = conn.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'support-1042' "
            "ORDER BY step DESC LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE checkpoints SET state_blob = ? WHERE checkpoint_id = ?",
            ('{"stage": NaN, "tickets": [Infinity, -Infinity]}', cid),
        )

    def agentctl(*args: str, code: int = 0) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "agentctl", "--db", str(db), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
        assert r.returncode == code, r.stderr
        return r.stdout

    state = strict(agentctl("show", cid, "--json"))["state"]
    assert state == {
        "stage": "… NaN (not a JSON number)",
        "tickets": ["… Infinity (not a JSON number)", "… -Infinity (not a JSON number)"],
    }
    exported = [strict(line) for line in agentctl("export", "support-1042").splitlines()]
    assert [cp["state"] for cp in exported if cp["metadata"]["checkpoint_id"] == cid] == [state]
    doctor = agentctl("doctor", code=5)
    assert f"invalid-json\t{cid}\tstate_blob: invalid JSON" in doctor.splitlines(), doctor
