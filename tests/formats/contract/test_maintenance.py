"""Stats, backup, doctor (and after a prune), doctor --fix-indexes and import: each as the
format declares it.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import json

import pytest

from agentctl.storage import Capability, Problem, Unsupported, detect, open_store
from tests.support.contract_suite import _ok, data_rows
from tests.support.sampledb import cli, cli_json


async def test_stats_and_backup_as_declared(built, tmp_path):
    case, b = built
    async with open_store(b.url) as store:
        if store.can(Capability.STATS):
            json.dumps(await store.usage_stats())
        else:
            with pytest.raises(Unsupported):
                await store.usage_stats()
        if store.can(Capability.BACKUP):
            dest = str(tmp_path / "copy.db")
            await store.backup(dest)
            assert (await detect(dest)).name == case.name
            async with open_store(dest) as copy:
                assert await copy.all_thread_ids() == await store.all_thread_ids()
        else:
            with pytest.raises(Unsupported):
                await store.backup(str(tmp_path / "copy.db"))


async def test_backup_listed_where_the_command_works(built, tmp_path):
    """`formats` lists backup exactly where `agentctl backup` copies the database (every
    format on SQLite, none on Postgres)."""
    case, b = built
    r = cli(b.url, "backup", str(tmp_path / "cli-copy.db"))
    async with open_store(b.url) as store:
        assert (r.exit_code == 0) == store.can(Capability.BACKUP), r.stderr
    if r.exit_code == 0:
        listed = {
            f["name"]: f["capabilities"]
            for f in json.loads(cli(b.url, "formats", "--json").stdout)["formats"]
        }
        assert "backup" in listed[case.name]


async def test_doctor(built):
    _, b = built
    async with open_store(b.url) as store:
        if store.can(Capability.DOCTOR):
            problems = await store.doctor()
            assert isinstance(problems, list) and all(isinstance(p, Problem) for p in problems)
            assert all(p.kind in ("error", "warning") for p in problems)
            assert not [p for p in problems if p.kind == "error"], problems
        else:
            with pytest.raises(Unsupported):
                await store.doctor()


async def test_doctor_agrees_after_prune(built):
    """issue 23 item 4: after a prune (and after its undo) `doctor` finds nothing wrong
    on every format that prunes: no parent left pointing at a deleted checkpoint."""
    case, b = built
    async with open_store(b.url) as store:
        prunes = store.can(Capability.PRUNE) and store.can(Capability.DOCTOR)
    if not prunes:  # a format that does not prune refuses it: exit 2, nothing written
        r = cli(b.url, "prune", "--all", "--keep-last", "1", "--yes", "--no-backup")
        assert r.exit_code == 2 and "does not support" in r.stderr, (r.exit_code, r.stderr)
        return
    _ok(cli(b.url, "doctor"))
    for args in ([*[b.main if a == "THREAD" else a for a in case.prune_cli]], ["--all", "--keep-last", "1"]):
        results = cli_json(b.url, "prune", *args, "--yes", "--no-backup")["results"]
        assert any(r["deleted"] for r in results), args
        r = cli(b.url, "doctor")
        assert r.exit_code == 0, (args, r.stdout)
        _ok(cli(b.url, "undo"))
        _ok(cli(b.url, "doctor"))


async def test_cli_fix_indexes_and_import(built, tmp_path):
    """doctor --fix-indexes and import (IMPORT) exit 0 where the format offers them,
    else 2 with "does not support"; neither changes a row of the format's tables."""
    case, b = built
    async with open_store(b.url) as store:
        can_import = store.can(Capability.IMPORT)
    before = await data_rows(case, b.url)
    r = cli(b.url, "doctor", "--fix-indexes")
    assert r.exit_code in (0, 2) and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code == 0 or "does not support" in r.stderr
    exported = tmp_path / "main.jsonl"
    _ok(cli(b.url, "export", b.main, "-o", str(exported)))
    r = cli(b.url, "import", str(exported), "--on-conflict", "skip")
    if can_import:
        _ok(r)
    else:
        assert r.exit_code == 2 and "does not support" in r.stderr, r.stderr
        # the refusal is of import alone: export (which just worked) is not said to fail
        assert "does not support import (export works" in r.stderr and "import/export" not in r.stderr
    assert await data_rows(case, b.url) == before
