"""`agentctl redo` re-applies an undone op on every format (all are on the journal);
what it cannot redo (an op the previous release undid) exits 1 with one line and
writes nothing."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from tests.support.contract_formats import dump
from tests.support.sampledb import cli, cli_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "journal"


def test_redo_on_agentos(tmp_path: Path) -> None:
    """AgentOS (on the journal): the previous release's undone op cannot be redone (one
    line, exit 1, nothing written); an op of the old log undone now (the log migrated by
    that undo) is redone, the tables as after it again."""
    db = tmp_path / "agentos.db"
    shutil.copyfile(FIXTURES / "agentos.db", db)
    before = db.read_bytes()
    r = cli(str(db), "redo")
    assert (
        r.exit_code == 1 and r.stdout == "" and r.stderr.strip().splitlines() == ["agentctl: nothing to redo"]
    )
    r = cli(str(db), "redo", "--dry-run")  # a read: the old log is not migrated by it
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1 and "older layout" in r.stderr
    r = cli(str(db), "redo", "3")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "agentctl: operation 3 was undone by an agentctl release before the journal, which kept no copy "
        "of what it wrote; it cannot be redone"
    ]
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]
    written = asyncio.run(dump(str(db), side_tables=False))
    cli_json(str(db), "undo", "6")  # the prune (its deleted row and the row it re-parented)
    assert asyncio.run(dump(str(db), side_tables=False)) != written
    assert cli(str(db), "redo", "--dry-run").stdout.startswith("redo operation 6 (prune agent-main")
    r = cli(str(db), "redo")
    assert r.exit_code == 0 and r.stdout.startswith("redid operation 6 (prune agent-main"), (
        r.stdout,
        r.stderr,
    )
    assert asyncio.run(dump(str(db), side_tables=False)) == written
    assert [(o["kind"], o["undo_of"]) for o in cli_json(str(db), "oplog")[:2]] == [("redo", 6), ("undo", 6)]


def test_redo_on_the_journal(tmp_path: Path) -> None:
    """openai-agents: an op of the previous release's log (migrated by the first write)
    undone then redone gives the tables as before the undo; one the old log had undone
    cannot be redone (exit 1, one line, nothing written)."""
    db = tmp_path / "openai_agents.db"
    shutil.copyfile(FIXTURES / "openai_agents.db", db)
    before = asyncio.run(dump(str(db), side_tables=False))
    assert cli(str(db), "undo", "1").exit_code == 0
    assert asyncio.run(dump(str(db), side_tables=False)) != before
    assert cli(str(db), "redo", "--dry-run").stdout.startswith("redo operation 1 ")
    r = cli(str(db), "redo")
    assert r.exit_code == 0 and "redid operation 1 (rewind oa-main to step 2" in r.stdout, (
        r.stdout,
        r.stderr,
    )
    assert asyncio.run(dump(str(db), side_tables=False)) == before
    assert [(o["op_id"], o["kind"]) for o in cli_json(str(db), "oplog")][:2] == [(6, "redo"), (5, "undo")]
    state = db.read_bytes()
    r = cli(str(db), "redo", "3")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "agentctl: operation 3 was undone by an agentctl release before the "
        "journal, which kept no copy of what it wrote; it cannot be redone"
    ]
    assert db.read_bytes() == state


async def test_redo_on_adk(tmp_path: Path) -> None:
    """ADK (on the journal): the previous release's undone op cannot be redone (one line,
    nothing written); an op undone now is redone, the tables as after it again."""
    db = tmp_path / "adk.db"
    shutil.copyfile(FIXTURES / "adk.db", db)
    before = db.read_bytes()
    r = cli(str(db), "redo")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "agentctl: operation 3 was undone by an agentctl release before the journal, which kept no copy of "
        "what it wrote; it cannot be redone"
    ]
    assert db.read_bytes() == before
    written = await dump(str(db), side_tables=False)
    cli_json(str(db), "undo", "2")
    assert await dump(str(db), side_tables=False) != written
    r = cli(str(db), "redo")
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert r.stdout.startswith("redid operation 2 (branch app/u1/side-branch-fixture-8a8b")
    assert await dump(str(db), side_tables=False) == written
    assert [(o["kind"], o["undo_of"]) for o in cli_json(str(db), "oplog")[:2]] == [("redo", 2), ("undo", 2)]


def test_redo_on_the_article_store(tmp_path: Path) -> None:
    """The previous release's database: a rewind undone then redone by the CLI gives the
    tables as after the rewind; redo --dry-run writes nothing; a second redo exits 1."""
    import asyncio

    from tests.support.contract_formats import dump
    from tests.support.sampledb import cli_json

    db = tmp_path / "article.db"
    shutil.copyfile(FIXTURES / "article.db", db)
    thread = "15678ff42f7968c0-rewound-at-2"
    before = asyncio.run(dump(str(db), side_tables=False))
    rewound = cli_json(str(db), "rewind", f"{thread}@1", "--yes", "--no-backup")
    after = asyncio.run(dump(str(db), side_tables=False))
    assert after != before
    cli_json(str(db), "undo")
    assert asyncio.run(dump(str(db), side_tables=False)) == before
    state = db.read_bytes()
    r = cli(str(db), "redo", "--dry-run")
    assert r.exit_code == 0 and r.stdout.startswith(f"redo operation {rewound['op_id']} ("), (
        r.stdout,
        r.stderr,
    )
    assert db.read_bytes() == state
    r = cli(str(db), "redo")
    assert r.exit_code == 0 and r.stdout.startswith(f"redid operation {rewound['op_id']} ("), (
        r.stdout,
        r.stderr,
    )
    assert asyncio.run(dump(str(db), side_tables=False)) == after
    assert [op["kind"] for op in cli_json(str(db), "oplog")][:3] == ["redo", "undo", "rewind"]
    r = cli(str(db), "redo")
    assert r.exit_code == 1 and r.stderr.strip() == "agentctl: nothing to redo"


def _dry_run_then_the_move(db: Path, verb: str, done_verb: str, op_id: int) -> None:
    """`VERB --dry-run` writes nothing, says "VERB operation N (...)" and names the
    checkpoints the move then names."""
    state = db.read_bytes()
    planned = cli_json(str(db), verb, "--dry-run")
    assert db.read_bytes() == state
    assert planned["op_id"] is None and planned["summary"].startswith(f"{verb} operation {op_id} (")
    done = cli_json(str(db), verb)
    assert done["summary"].startswith(f"{done_verb} operation {op_id} (")
    assert planned["created"] or planned["deleted"] or planned["moved"]
    assert {k: sorted(planned[k]) for k in ("created", "deleted", "moved")} == {
        k: sorted(done[k]) for k in ("created", "deleted", "moved")
    }


def test_redo_dry_run_names_the_checkpoints_on_agentos(tmp_path: Path) -> None:
    """AgentOS's `redo --dry-run` names the checkpoint ids the redo would bring back,
    remove and move (as the other formats' dry runs do), the same the redo then names;
    its summary says what it would do ("redo operation N"), not "redid"."""
    db = tmp_path / "s.db"
    shutil.copyfile(Path(__file__).resolve().parents[2] / "sample_db" / "checkpoints.db", db)
    rewound = cli_json(str(db), "rewind", "coder-add-cli-flag@6", "--yes")
    assert rewound["moved"] or rewound["deleted"], rewound
    cli_json(str(db), "undo")
    _dry_run_then_the_move(db, "redo", "redid", rewound["op_id"])


def test_undo_dry_run_names_the_checkpoints_on_agentos(tmp_path: Path) -> None:
    """`undo --dry-run` (issue 33, item 17): what the undo would do, the checkpoint ids it
    would bring back, remove and move, the same the undo then names; nothing written;
    refused as the undo would be."""
    db = tmp_path / "s.db"
    shutil.copyfile(Path(__file__).resolve().parents[2] / "sample_db" / "checkpoints.db", db)
    rewound = cli_json(str(db), "rewind", "coder-add-cli-flag@6", "--yes")
    _dry_run_then_the_move(db, "undo", "undid", rewound["op_id"])
    r = cli(str(db), "undo", str(rewound["op_id"]), "--dry-run")  # undone already: refused, in one line
    assert r.exit_code != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
