"""`threads list` on the bundled sample, on SQLite and Postgres."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentctl.backends import open_backend
from agentctl.cli import app
from tests.support.rig import SAMPLE_DB

runner = CliRunner()


def test_threads_list_sample_json():
    r = runner.invoke(app, ["--db", str(SAMPLE_DB), "threads", "list", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    by = {d["thread_id"]: d for d in data}
    assert {"support-1042", "support-1043", "coder-fix-flaky-test", "loop-research-7"} <= set(by)
    for d in data:
        assert {"thread_id", "checkpoints", "head_step", "head_checkpoint_id", "updated_at"} <= set(d)
    assert by["loop-research-7"]["checkpoints"] == 240
    assert by["loop-research-7"]["head_checkpoint_id"] == "ckpt-loop-research-7-000240"
    branch = [d for d in data if d["branch_of"] == "coder-fix-flaky-test"]
    assert len(branch) == 1
    updated = [d["updated_at"] for d in data]
    assert updated == sorted(updated, reverse=True)


def test_threads_list_plain_text():
    r = runner.invoke(app, ["--db", str(SAMPLE_DB), "threads", "list", "--limit", "2"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["THREAD", "CKPTS", "HEAD"]
    assert len(lines) == 3 and lines[1].startswith("loop-research-7\t240\t240")


async def test_threads_list_postgres(pg_dsn):
    # copy the sample into Postgres through the library, then list it
    async with open_backend(str(SAMPLE_DB)) as src, open_backend(pg_dsn, readonly=False, create=True) as dst:
        async for cp in src.iter_checkpoints():
            await dst.put(cp)
    r = runner.invoke(app, ["--db", pg_dsn, "threads", "list", "--json"])
    assert r.exit_code == 0, r.output
    pg = json.loads(r.stdout)
    lite = json.loads(runner.invoke(app, ["--db", str(SAMPLE_DB), "threads", "list", "--json"]).stdout)
    assert pg == lite
