"""`log --all` and `tree` of thousands of rows: the batch paths (rows read as tuples,
ids and summaries escaped in one pass, a thread read by step alone) give what laying
out each row on its own gives, on a generated database with odd rows."""

from __future__ import annotations

import io
import json
import random
import sqlite3

import pytest
from rich.console import Console

from agentctl.storage.agentos.base import SQLITE_SCHEMA
from agentctl.text import inert, inert_all, shorten, shorten_all
from tests.support.helpers import make_cp, ts
from tests.support.sampledb import cli

MAIN = "main-thread"
ODD = [
    "plain",
    "new\nline",
    "tab\there",
    "\x1b[31mred\x1b[0m",
    "bidi \u202e evil",
    "sep \uffff x",
    "  spaced   out  ",
    "汉字 summary",
    "c1 \x85 \x9b",
    "line\u2028sep",
    "",
    "x" * 150,
]


def _rows(n: int, seed: int = 7) -> list[tuple]:
    """Rows of MAIN (n steps, some steps repeated), two branches forking off it, one of
    them merged back, with summaries and tags that need escaping."""
    rnd = random.Random(seed)
    rows = []
    parent = None
    for i in range(n):
        step = i - 1 if i % 97 == 5 else i  # a repeated step now and then
        cid = f"ckpt-{MAIN}-{i}" + ("\x1b" if i == 11 else "")
        tags = rnd.choice(
            [
                ["llm_call"],
                ["tool_call"],
                ["manual", "x\ny"],
                [],
                ["merge", "merged:ckpt-b1-3"],
                ["branch:foo", "state_change"],
            ]
        )
        created = (
            ts(i % 3600, day=1 + i // 3600) if i % 97 != 5 else ts((i - 1) % 3600, day=1 + (i - 1) // 3600)
        )
        rows.append((MAIN, cid, parent, step, created, json.dumps(tags), rnd.choice(ODD) + f" {i}" * (i % 2)))
        parent = cid
    for b, at, length in (("b1", 20, 4), ("b2", n // 2, 2)):
        thread, parent = f"{MAIN}-branch-{b}", f"ckpt-{MAIN}-{at}"
        for s in range(length):
            cid = f"ckpt-{b}-{s}"
            rows.append(
                (
                    thread,
                    cid,
                    parent,
                    s,
                    ts(s, day=28),
                    json.dumps(["branch", b] if s == 0 else []),
                    rnd.choice(ODD),
                )
            )
            parent = cid
    return rows


@pytest.fixture(scope="module")
def bulk_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("bulk") / "bulk.db"
    conn = sqlite3.connect(path)
    conn.executescript(SQLITE_SCHEMA)
    conn.executemany(
        "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, tags, "
        "summary) VALUES (?, ?, ?, ?, ?, ?, ?)",
        _rows(3000),
    )
    conn.commit()
    conn.close()
    return str(path)


def _full_order(db: str, thread: str, descending: bool = True) -> list[tuple]:
    order = "DESC" if descending else "ASC"
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT checkpoint_id, parent_id, step, created_at, tags, summary FROM checkpoints "
            f"WHERE thread_id = ? ORDER BY step {order}, created_at {order}, id {order}",
            (thread,),
        ).fetchall()


def _expected_log(db: str) -> str:
    """log --all laid out line by line here, from the rows in SQL's full order."""
    rows = _full_order(db, MAIN)
    with sqlite3.connect(db) as conn:
        forks = conn.execute(
            "SELECT parent_id, thread_id FROM checkpoints WHERE thread_id <> ? AND parent_id IN "
            "(SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?) ORDER BY thread_id, step",
            (MAIN, MAIN),
        ).fetchall()
    decorations: dict[str, list[str]] = {rows[0][0]: [MAIN]}
    for parent, thread in forks:
        decorations.setdefault(parent, []).append(f"fork: {thread}")
    out = []
    for cid, _parent, step, _created, tags, summary in rows:
        line = inert(cid, one_line=True)
        if cid in decorations:
            line += " (" + ", ".join(inert(d, one_line=True) for d in decorations[cid]) + ")"
        line += f" #{step}"
        shown = [t for t in json.loads(tags) if not t.startswith(("merged:", "branch:"))]
        if shown:
            line += " [" + ", ".join(inert(t, one_line=True) for t in shown) + "]"
        if summary:
            line += " " + inert(summary, one_line=True)
        out.append(line.rstrip() + "\n")
    return "".join(out)


def test_log_all_of_thousands_of_rows(bulk_db):
    r = cli(bulk_db, "log", MAIN, "--all")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == _expected_log(bulk_db)
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout
    # a page, and the JSON (the rows in the full order, repeated steps included)
    assert r.stdout.splitlines()[:7] == cli(bulk_db, "log", MAIN, "-n", "7").stdout.splitlines()
    ids = [m["checkpoint_id"] for m in json.loads(cli(bulk_db, "log", MAIN, "--all", "--json").stdout)]
    assert ids == [row[0] for row in _full_order(bulk_db, MAIN)]


async def test_read_thread_order_with_repeated_steps(bulk_db):
    from agentctl.backends import open_backend

    async with open_backend(bulk_db) as backend:
        for descending in (True, False):
            want = [row[0] for row in _full_order(bulk_db, MAIN, descending)]
            for limit in (2**62, 3000, 6, 7, 8, 100):  # limits ending on a repeated step too
                got = await backend.read_thread(MAIN, limit, 0, descending=descending)
                assert [m.checkpoint_id for m in got] == want[:limit], (descending, limit)
            got = await backend.read_thread(MAIN, 2**62, 5, descending=descending)
            assert [m.checkpoint_id for m in got] == want[5:]
        page, forked = await backend.read_thread_forks(MAIN, 2**62, 0, descending=True)
        assert sorted(forked) == sorted([f"ckpt-{MAIN}-20", f"ckpt-{MAIN}-1500"])
        assert page == await backend.read_thread(MAIN, 2**62, 0, descending=True)


def test_tree_of_thousands_of_rows_is_what_rich_draws(bulk_db):
    from agentctl import render

    r = cli(bulk_db, "tree", MAIN)
    assert r.exit_code == 0, r.stderr
    tree = json.loads(cli(bulk_db, "tree", MAIN, "--json").stdout)
    buf = io.StringIO()
    Console(file=buf, width=400, force_terminal=False, color_system=None).print(render.tree_view(tree))
    assert r.stdout == "".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines())
    assert len(r.stdout.splitlines()) == 1 + 3 + 3006  # the title, 3 threads, every row


async def test_forks_found_with_the_rows(db_url):
    """read_thread_forks on both backends: the checkpoints with children in other threads."""
    from agentctl.backends import make_backend

    async with make_backend(db_url, readonly=False, create=True) as backend:
        for s in range(6):
            await backend.put(make_cp("t", s, parent=f"ckpt-t-{s - 1}" if s else None))
        await backend.put(make_cp("u", 0, parent="ckpt-t-2"))
        await backend.put(make_cp("v", 0, parent="ckpt-t-4"))
        await backend.put(make_cp("v", 1, parent="ckpt-v-0"))
        page, forked = await backend.read_thread_forks("t", 100, 0, descending=True)
        assert [m.step for m in page] == [5, 4, 3, 2, 1, 0] and sorted(forked) == ["ckpt-t-2", "ckpt-t-4"]
        assert page == await backend.read_thread("t", 100, 0, descending=True)
        page, forked = await backend.read_thread_forks("t", 2, 1, descending=True)
        assert [m.step for m in page] == [4, 3] and forked == ["ckpt-t-4"]


def test_inert_all_and_shorten_all_are_one_at_a_time():
    texts = ODD + ["\uffff", "a\uffffb\x00", "\udcff lone", "\u200b zero width"]
    for one_line in (True, False):
        assert inert_all(list(texts), one_line=one_line) == [inert(t, one_line=one_line) for t in texts]
    for width in (0, 1, 5, 60):
        assert shorten_all(list(texts), width) == [shorten(t, width) for t in texts]
    assert shorten_all([3, None], 10) == [shorten(3, 10), shorten(None, 10)]  # type: ignore[list-item]
    assert inert_all([]) == []
