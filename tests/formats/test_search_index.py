"""The side search index of a SQLite database (`agentctl index`, agentctl/storage/textindex.py):
the same hits as the scan, caught up with another program's writes, never trusted when
damaged, and the user's database never written."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import sqlite3
import stat
import subprocess

import pytest

from agentctl.errors import ExitCode
from agentctl.storage.agentos.base import SQLITE_SCHEMA
from tests.support.sampledb import cli, cli_json

WORDS = [
    "Paris",
    "paris",
    "PARIS",
    "backoff",
    "Café",
    "CAFÉ",
    "naïve",
    "Straße",
    "STRASSE",
    "你好世界",
    "Ünïcödé",
    'quote"d',
    "back\\slash",
    "tab\there",
    "line\nbreak",
    "weather",
    "refund",
    "ORDER-1234",
    "order-12345",
    "ΣΊΣΥΦΟΣ",
    "σίσυφος",
    "emoji 🙂 ok",
    "İstanbul",
    "the",
    "retry",
]
ROLES = ["user", "assistant", "tool", "system"]

QUERIES = [
    ["paris"],
    ["PARIS"],
    ["café"],
    ["CAFÉ", "--in", "messages"],
    ["straße"],
    ["strasse"],
    ["你好"],
    ["好世界"],
    ["ünïc"],
    ['quote"d'],
    ["back\\slash"],
    ["tab\there"],
    ["line\nbreak"],
    ["weather", "-n", "500"],
    ["refund", "--role", "tool"],
    ["order-123", "-n", "500"],
    ["σίσυφος"],
    ["ΣΊΣ"],
    ["🙂 ok"],
    ["istanbul"],
    ["the", "-n", "1000"],
    ["retry", "--in", "tools,state", "-n", "500"],
    ["city", "--in", "state"],
    ['"city": "pa', "-n", "500"],
    ["back", "--in", "tools"],
    ["nowhere-to-be-found"],
    ["pa"],
    ["é"],
    ["weather", "--thread", "t3", "-n", "500"],
    ["paris", "--role", "assistant", "-n", "500"],
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))


def _row(rng: random.Random, i: int, thread: str) -> tuple:
    msgs = [{"role": rng.choice(ROLES), "content": _text(rng)} for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.2:
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": _text(rng)}]})
    tools = {f"call_{i}": {"result": _text(rng), "ok": rng.random() < 0.5}} if rng.random() < 0.5 else {}
    state = {"city": _text(rng), "n": i, "nested": {"note": _text(rng)}}
    if rng.random() < 0.05:
        state = {"__agentctl_delta__": {"base": "x"}, "patch": _text(rng)}
    ascii_only = rng.random() < 0.4  # writers differ: \\u escapes or raw text
    created = f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.{rng.randint(0, 3):06d}+00:00"
    return (
        thread,
        f"ckpt-{thread}-{i}",
        None,
        i,
        created,
        "[]",
        "",
        json.dumps(msgs, ensure_ascii=ascii_only),
        json.dumps(state, ensure_ascii=ascii_only),
        json.dumps(tools, ensure_ascii=ascii_only),
        "",
    )


INSERT = (
    "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, created_at, tags, summary, "
    "messages_blob, state_blob, tools_blob, next_node) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def make_db(path: str, n: int = 400, seed: int = 7) -> None:
    """An AgentOS database written by plain sqlite3 (another program)."""
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(SQLITE_SCHEMA)
    con.executemany(INSERT, [_row(rng, i, f"t{i % 7}") for i in range(n)])
    con.commit()
    con.close()


def fingerprint(path: str) -> tuple[str, int]:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns


def hits(db: str, *args: str) -> list[tuple]:
    return [
        (h["thread_id"], h["checkpoint_id"], h["where"], h["role"], h["path"], h["snippet"])
        for h in cli_json(db, "search", *args)
    ]


def route(db: str, text: str, **kw) -> str:
    """Which way the library's search went: "index", "fts" or "scan"."""
    import asyncio

    from agentctl.backends import open_backend

    async def go():
        async with open_backend(db, readonly=True) as b:
            await b.search(text, **kw)
            return b.last_search_path

    return asyncio.run(go())


def assert_same_as_scan(db: str) -> None:
    for args in QUERIES:
        assert hits(db, *args) == hits(db, *args, "--scan"), args


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "agent.db")
    make_db(path)
    return path


def test_without_the_index_the_temporary_fts_gives_the_scans_hits(db):
    """No side index: the search's temporary FTS5 (fts.py) and the scan agree, snippets
    of non-text message content (lists of parts) included."""
    assert route(db, "paris") == "fts"
    assert_same_as_scan(db)


def test_index_gives_the_scans_hits(db):
    before = fingerprint(db)
    r = cli(db, "index", "build")
    assert r.exit_code == 0, r.stderr
    assert os.path.exists(db + ".agentctl-search")
    st = cli_json(db, "index", "status")
    assert st["state"] == "current" and st["rows"] == 400
    assert route(db, "paris") == "index"
    assert route(db, "pa") == "scan"  # under 3 characters: not through the trigram index
    assert_same_as_scan(db)
    assert any(hits(db, *q) for q in QUERIES[:5])
    assert fingerprint(db) == before  # the user's database: not a byte, not its mtime


def test_catch_up_with_another_programs_writes(db):
    assert cli(db, "index", "build").exit_code == 0
    rng = random.Random(99)
    con = sqlite3.connect(db)
    # appended rows, deleted rows, rows rewritten (to have and to lose the text)
    con.executemany(INSERT, [_row(rng, i, "t-new") for i in range(400, 460)])
    con.execute("DELETE FROM checkpoints WHERE id % 11 = 0")
    con.execute(
        "UPDATE checkpoints SET messages_blob = ? WHERE id % 13 = 0",
        (json.dumps([{"role": "user", "content": "now about zanzibar and PARIS"}]),),
    )
    con.execute(
        "UPDATE checkpoints SET messages_blob = '[]', state_blob = '{}', tools_blob = '{}' WHERE id % 17 = 0"
    )
    con.execute("UPDATE checkpoints SET created_at = '2027-01-01T00:00:00+00:00' WHERE id = 5")
    con.commit()
    con.close()
    assert cli_json(db, "index", "status")["state"] == "behind"
    assert hits(db, "zanzibar", "-n", "500") == hits(db, "zanzibar", "-n", "500", "--scan")
    assert len(hits(db, "zanzibar", "-n", "500")) > 20
    st = cli_json(db, "index", "status")
    assert st["state"] == "current" and st["dead_documents"] > 0
    assert route(db, "paris") == "index"
    assert_same_as_scan(db)
    # a second program deletes everything: no hit is ever returned stale
    con = sqlite3.connect(db)
    con.execute("DELETE FROM checkpoints")
    con.commit()
    con.close()
    assert hits(db, "paris") == [] and route(db, "paris") == "index"


def test_hits_are_checked_against_the_real_row(db, tmp_path):
    """Even an index wrongly believed current never returns a row that no longer matches."""
    assert cli(db, "index", "build").exit_code == 0
    from agentctl.storage.textindex import file_identity

    w = sqlite3.connect(db)
    w.execute("UPDATE checkpoints SET messages_blob = '[]', state_blob = '{}', tools_blob = '{}'")
    w.commit()
    w.close()
    con = sqlite3.connect(db + ".agentctl-search")  # pretend the writes were seen
    con.execute("UPDATE meta SET value = ? WHERE key = 'identity'", (json.dumps(file_identity(db)),))
    con.commit()
    con.close()
    assert route(db, "paris") == "index"
    assert hits(db, "paris", "-n", "500") == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "version", "pages"])
def test_a_damaged_index_is_not_trusted(db, damage):
    assert cli(db, "index", "build").exit_code == 0
    side = db + ".agentctl-search"
    if damage == "garbage":
        with open(side, "wb") as f:
            f.write(b"not a database at all" * 100)
    elif damage == "pages":  # the header and the meta table intact, the index's pages not
        size = os.path.getsize(side)
        with open(side, "r+b") as f:
            f.seek(3 * 4096)
            f.write(b"\xff" * (size - 3 * 4096))
    elif damage == "truncated":
        with open(side, "r+b") as f:
            f.truncate(4096)
    else:
        con = sqlite3.connect(side)
        con.execute("UPDATE meta SET value = '999' WHERE key = 'version'")
        con.commit()
        con.close()
    r = cli(db, "search", "paris", "--json")
    assert r.exit_code == 0
    assert "search index" in r.stderr and "fell back to the scan" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert [(h["checkpoint_id"], h["path"]) for h in json.loads(r.stdout)] == [
        (h[1], h[4]) for h in hits(db, "paris", "--scan")
    ]
    assert cli_json(db, "index", "status")["state"] == "corrupt"
    d = cli(db, "doctor", "--json")
    assert d.exit_code == ExitCode.PROBLEMS
    assert len(json.loads(d.stdout)["problems"]["search_index"]) == 1
    # a rebuild replaces it
    assert cli(db, "index", "build").exit_code == 0
    assert route(db, "paris") == "index"
    assert cli(db, "search", "paris").stderr == ""


def test_read_only_database_file(db):
    os.chmod(db, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = fingerprint(db)
    assert cli(db, "index", "build").exit_code == 0
    assert route(db, "café") == "index"
    assert_same_as_scan(db)
    assert fingerprint(db) == before


def test_deletions_are_counted_then_leave_the_index(db):
    """Only deletions (200 of 400 rows): before catch-up, status counts them as changed
    rows; after it, `rows` is the 200 left, the deleted rows' documents are counted dead
    and no deleted row is indexed (or a candidate) any more."""
    assert cli(db, "index", "build").exit_code == 0
    side = sqlite3.connect(db + ".agentctl-search")
    deleted_docs = side.execute("SELECT sum(docs) FROM rows WHERE id % 2 = 0").fetchone()[0]
    side.close()
    assert deleted_docs > 100
    con = sqlite3.connect(db)
    con.execute("DELETE FROM checkpoints WHERE id % 2 = 0")
    con.commit()
    con.close()
    st = cli_json(db, "index", "status")
    assert (st["state"], st["new_rows"], st["changed_rows"], st["rows"]) == ("behind", 0, 200, 400)
    assert hits(db, "paris", "-n", "1000") == hits(db, "paris", "-n", "1000", "--scan")  # catches up
    st = cli_json(db, "index", "status")
    assert (st["state"], st["rows"], st["dead_documents"]) == ("current", 200, deleted_docs)
    side = sqlite3.connect(db + ".agentctl-search")
    assert side.execute("SELECT count(*) FROM rows WHERE id % 2 = 0").fetchone()[0] == 0
    side.close()
    assert_same_as_scan(db)


def test_doctor_reports_an_index_behind(db):
    assert cli(db, "index", "build").exit_code == 0
    d = cli_json(db, "doctor")
    assert d["ok"] is True and d["warnings"] == []
    con = sqlite3.connect(db)
    con.executemany(INSERT, [_row(random.Random(1), i, "t-new") for i in range(400, 403)])
    con.commit()
    con.close()
    d = cli_json(db, "doctor")
    assert d["ok"] is True
    assert any("search index" in w and "3 new" in w for w in d["warnings"]), d["warnings"]


def test_status_and_drop(db):
    st = cli_json(db, "index", "status")
    assert st["state"] == "absent"
    assert route(db, "paris") == "fts"
    assert cli(db, "index", "build").exit_code == 0
    r = cli(db, "index", "status")
    assert r.exit_code == 0 and "state: current" in r.stdout and "rows: 400" in r.stdout
    r = cli(db, "index", "drop")
    assert r.exit_code == 0 and not os.path.exists(db + ".agentctl-search")
    assert route(db, "paris") == "fts"
    assert cli(db, "index", "drop").exit_code == 0


def test_index_is_a_sqlite_file_format_command(tmp_path):
    """The article's store has its own FTS: no side index for it (exit 2, nothing written)."""
    from tests.support.rig import SAMPLE_DB

    sessions = str(SAMPLE_DB.parent / "sessions.db")
    r = cli(sessions, "index", "build")
    assert r.exit_code == ExitCode.USAGE and "does not support" in r.stderr
    assert not os.path.exists(sessions + ".agentctl-search")


@contextlib.contextmanager
def unwritable(directory):
    """`directory` made unwritable, also for root (who ignores permission bits: then the
    directory is made immutable with chattr +i, which binds root too)."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
        undo = ["chattr", "-i", str(directory)]
    else:
        os.chmod(directory, stat.S_IRUSR | stat.S_IXUSR)
        undo = None
    assert not os.access(directory, os.W_OK)
    try:
        yield
    finally:
        if undo:
            subprocess.run(undo, check=True)
        else:
            os.chmod(directory, stat.S_IRWXU)


def test_directory_not_writable(db, tmp_path):
    with unwritable(tmp_path):
        r = cli(db, "index", "build")
        assert r.exit_code == ExitCode.ERROR and "not writable" in r.stderr
        assert hits(db, "paris") == hits(db, "paris", "--scan")
    assert not os.path.exists(db + ".agentctl-search")


def test_build_in_chunks(db, monkeypatch):
    """The build reads the database a chunk of rows per transaction (writers are not held
    off for the whole build): with chunks of 7 rows, the same index."""
    from agentctl.storage import textindex

    monkeypatch.setattr(textindex, "_BUILD_CHUNK", 7)
    assert cli(db, "index", "build").exit_code == 0
    assert cli_json(db, "index", "status")["rows"] == 400
    assert route(db, "paris") == "index"
    assert_same_as_scan(db)


# ---- the SQL prefilter of the search without an index -----------------------------------

# (text, places, role, thread): ASCII, non-ASCII, case variants, what JSON escapes
# (quotes, backslashes, control characters, \u escapes of either hex case), LIKE's
# wildcards and the escape character.
PREFILTER_CORPUS = [
    ("paris", None, None, None),
    ("PARIS", None, None, None),
    ("PaRiS", ("messages", "tools"), None, None),
    ("café", None, None, None),
    ("CAFÉ", ("messages",), None, None),
    ("Café", ("tools",), None, None),
    ("straße", None, None, None),
    ("STRASSE", None, None, None),
    ("你好", None, None, None),
    ("好世界", ("messages", "tools"), None, None),
    ("ünïc", None, None, None),
    ("ÜNÏCÖDÉ", None, None, None),
    ('quote"d', None, None, None),
    ("back\\slash", None, None, None),
    ("tab\there", None, None, None),
    ("line\nbreak", None, None, None),
    ("σίσυφος", None, None, None),
    ("ΣΊΣ", None, None, None),
    ("🙂 ok", None, None, None),
    ("istanbul", None, None, None),
    ("İstanbul", None, None, None),
    ("100%_done!", None, None, None),
    ("%_d", None, None, None),
    ("one!", ("messages", "tools"), None, None),
    ("ée", None, None, None),
    ('"city": "pa', ("state",), None, None),
    ("refund", ("messages",), "tool", None),
    ("weather", None, None, "t3"),
    ("order-123", ("messages", "tools"), None, None),
    ("nowhere-at-all", None, None, None),
]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_prefilter_keeps_every_hit_of_the_full_rule(tmp_path, request, kind):
    """The search without an index (SQLite: its temporary FTS5, and --scan; Postgres:
    ILIKE) narrows rows in SQL first: on 30 queries its hits are exactly the match
    rule's applied to every row with no prefilter, among them rows whose writer
    \\u-escapes with upper-case hex digits."""
    import asyncio

    from agentctl.backends import open_backend
    from agentctl.storage.agentos.base import META_COLUMNS
    from agentctl.storage.agentos.queries import match_rows
    from tests.support.sampledb import load_sample

    path = str(tmp_path / "p.db")
    make_db(path, n=300, seed=3)
    con = sqlite3.connect(path)
    extra = ["100%_done! and one!", "CAFÉ ée", "Ünïcödé", "İstanbul", "tab\there"]
    for i, text in enumerate(extra * 4):
        msgs = json.dumps([{"role": "user", "content": text}], ensure_ascii=i % 2 == 0)
        if i % 4 == 0:  # a writer whose \u escapes use upper-case hex digits
            msgs = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), msgs)
        tools = json.dumps({f"c{i}": {"result": text}}, ensure_ascii=i % 3 == 0)
        con.execute(
            INSERT,
            (
                f"x{i % 3}",
                f"ckpt-x-{i}",
                None,
                i,
                f"2026-04-01T00:00:{i:02d}+00:00",
                "[]",
                "",
                msgs,
                "{}",
                tools,
                "",
            ),
        )
    con.commit()
    con.close()
    url = path
    if kind == "postgres":
        url = request.getfixturevalue("pg_dsn")
        con = sqlite3.connect(path)  # (a copy cannot carry the delta rows: their base is made up)
        con.execute("DELETE FROM checkpoints WHERE json_type(state_blob, '$.__agentctl_delta__') IS NOT NULL")
        con.commit()
        con.close()
        asyncio.run(load_sample(url, source=path))

    def key(h):
        return (h.checkpoint_id, h.where, h.role, h.path, h.snippet)

    async def go():
        async with open_backend(url, readonly=True) as b:
            rows = await b._fetch(
                f"SELECT {META_COLUMNS}, messages_blob, tools_blob, state_blob FROM checkpoints"
            )  # every row: the rule with no prefilter
            for text, places, role, thread in PREFILTER_CORPUS:
                chosen = set(places or ("messages", "tools", "state"))
                if role is not None:
                    chosen &= {"messages"}
                want = sorted(
                    key(h)
                    for h in match_rows(
                        [r for r in rows if thread is None or r["thread_id"] == thread], text, role, chosen
                    )
                )
                for scan in (False, True):
                    got = await b.search(
                        text,
                        thread,
                        role,
                        limit=100_000,
                        scan=scan,
                        places=places or ("messages", "tools", "state"),
                    )
                    assert sorted(key(h) for h in got) == want, (text, places, scan)
                    if kind == "sqlite":
                        assert b.last_search_path == ("scan" if scan or len(text) < 3 else "fts")
            return [
                text
                for text, *_ in PREFILTER_CORPUS
                if match_rows(rows, text, None, {"messages", "tools", "state"})
            ]

    found = asyncio.run(go())
    assert {"100%_done!", "%_d", "one!", "CAFÉ", "ÜNÏCÖDÉ", "İstanbul", "ée", 'quote"d'} <= set(found)
