"""The shape of a SQLite prune that keeps it near the floor of an undoable prune (issue 16):
the rows move into the trash a chunk at a time in row-id order, so each chunk's copy
reuses the pages the chunk before it freed and the file grows by about one chunk, not
by everything the prune moves (copying every row first and deleting after writes ~0.35
GB more for 100,000 checkpoints; see bench/README.md, `prune-floor-min`)."""

from __future__ import annotations

import sqlite3

from agentctl.backends import make_backend
from tests.engine.test_prune_bulk import write
from tests.support.engine_helpers import make_engine
from tests.support.helpers import make_cp

ROWS = 4000  # eight of the trash's 500-row chunks
PAD = 4000  # bytes of state per row: every row has an overflow page


def pages(path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("PRAGMA page_count").fetchone()[0],
            conn.execute("PRAGMA page_size").fetchone()[0],
        )
    finally:
        conn.close()


async def test_prune_moves_rows_in_row_id_order_and_reuses_the_pages_it_frees(tmp_path):
    path = tmp_path / "big.db"
    backend = make_backend(str(path), readonly=False, create=True)
    await backend.connect()
    try:
        await write(
            backend,
            [make_cp("t", step, state={"step": step, "pad": "p" * PAD}) for step in range(1, ROWS + 1)],
        )
        await backend.close()
        before, size = pages(path)
        await backend.connect()
        engine = make_engine(backend)
        result = await engine.prune("t", "keep_last_n", 1)
        assert len(result.deleted) == ROWS - 1
        # the trash was filled in row-id order (the order of the table's pages)
        ids = [
            r["id"]
            for r in await backend.query(
                "SELECT id FROM agentctl_trash_checkpoints WHERE agentctl_op_id = ? AND agentctl_image = 'before' "
                "AND checkpoint_id NOT IN (SELECT checkpoint_id FROM agentctl_trash_checkpoints "
                "WHERE agentctl_op_id = ? AND agentctl_image = 'after') ORDER BY rowid",
                result.op_id,
                result.op_id,
            )
        ]
        assert ids == sorted(ids) and len(ids) == ROWS - 1
        moved = (
            await backend.query(
                "SELECT SUM(length(state_blob)) AS n FROM agentctl_trash_checkpoints WHERE agentctl_op_id = ?",
                result.op_id,
            )
        )[0]["n"]
    finally:
        await backend.close()
    after, _ = pages(path)
    grown = (after - before) * size
    assert moved > ROWS * PAD * 0.9
    # copy-everything-then-delete would grow the file by about `moved`
    assert grown < moved * 0.5, (grown, moved)
