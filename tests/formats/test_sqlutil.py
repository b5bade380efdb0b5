"""The storage layer's small shared helpers: placeholders and chunked IN lists
(agentctl/storage/sqlutil.py), times (agentctl/storage/timefmt.py), and the AgentOS
table's DDL as data (agentctl/storage/agentos/base.py), on real SQLite files."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from agentctl.errors import UsageError
from agentctl.storage.agentos import base
from agentctl.storage.agentos import doctor as agentos_doctor
from agentctl.storage.sqlutil import CHUNK, chunks, in_chunks, marks
from agentctl.storage.timefmt import iso, iso_utc, naive_utc, to_datetime

# ---- placeholders and chunks -----------------------------------------------------------


def test_marks():
    assert marks(0) == ""
    assert marks(1) == "?"
    assert marks(3) == "?, ?, ?"


@pytest.mark.parametrize(
    "n_items, size", [(0, 500), (1, 500), (499, 500), (500, 500), (501, 500), (1001, 400), (7, 3)]
)
def test_chunks_cover_the_items_in_order(n_items, size):
    items = list(range(n_items))
    got = list(chunks(items, size))
    assert [x for c in got for x in c] == items
    assert all(1 <= len(c) <= size for c in got)
    assert len(got) == -(-n_items // size)
    assert all(isinstance(c, list) for c in got)


def test_chunks_take_any_iterable_and_default_to_chunk():
    assert CHUNK == 500
    assert [len(c) for c in chunks(range(1200))] == [500, 500, 200]
    assert [len(c) for c in chunks(x for x in range(3))] == [3]
    assert sorted(x for c in chunks({3, 1, 2}, 2) for x in c) == [1, 2, 3]
    assert list(chunks((), 5)) == []


def test_in_chunks_pairs_placeholders_with_their_chunk():
    got = list(in_chunks(["a", "b", "c", "d", "e"], 2))
    assert got == [("?, ?", ["a", "b"]), ("?, ?", ["c", "d"]), ("?", ["e"])]
    assert list(in_chunks([])) == []


def test_in_chunks_query_past_sqlites_parameter_limit(tmp_path):
    """2,500 ids in 500-row IN lists: every row found once, on a real SQLite file (one
    statement with 2,500 parameters would pass SQLITE_MAX_VARIABLE_NUMBER on old builds)."""
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"v{i}") for i in range(3000)])
    wanted = list(range(0, 5000, 2))  # half of them do not exist
    found = {}
    for ph, chunk in in_chunks(wanted):
        assert ph.count("?") == len(chunk) <= CHUNK
        found.update(conn.execute(f"SELECT id, v FROM t WHERE id IN ({ph})", chunk).fetchall())
    conn.close()
    assert found == {i: f"v{i}" for i in range(0, 3000, 2)}


# ---- times -------------------------------------------------------------------------------


def test_iso():
    aware = datetime(2025, 1, 2, 3, 4, 5, 678900, tzinfo=timezone.utc)
    assert iso(aware) == "2025-01-02T03:04:05.678900+00:00"
    assert iso(datetime(2025, 1, 2, 3, 4, 5)) == "2025-01-02T03:04:05"  # naive stays naive
    assert iso(None) == ""
    assert iso("2025-01-02 03:04:05") == "2025-01-02 03:04:05"  # text as it is
    assert iso(5) == "5"


def test_iso_utc():
    assert iso_utc("2025-01-02 03:04:05") == "2025-01-02T03:04:05+00:00"  # CURRENT_TIMESTAMP
    assert iso_utc("2025-01-02 03:04:05.123456") == "2025-01-02T03:04:05.123456+00:00"
    assert iso_utc("2025-01-02T03:04:05+02:00") == "2025-01-02T03:04:05+02:00"
    assert iso_utc("2025-01-02 03:04:05+02:00") == "2025-01-02 03:04:05+02:00"
    assert iso_utc("2025-01-02 03:04:05Z") == "2025-01-02 03:04:05Z"
    assert iso_utc(datetime(2025, 1, 2, 3, 4, 5)) == "2025-01-02T03:04:05+00:00"  # naive = UTC
    plus2 = timezone(timedelta(hours=2))
    assert iso_utc(datetime(2025, 1, 2, 3, 4, 5, tzinfo=plus2)) == "2025-01-02T03:04:05+02:00"
    assert iso_utc(None) == ""
    assert iso_utc("yesterday") == "yesterday"


def test_to_datetime():
    utc = timezone.utc
    assert to_datetime("2025-01-02T03:04:05Z") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=utc)
    assert to_datetime(" 2025-01-02T03:04:05z ") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=utc)
    assert to_datetime("2025-01-02 03:04:05") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=utc)
    got = to_datetime("2025-01-02T03:04:05+02:00")
    assert got.utcoffset() == timedelta(hours=2) and got == datetime(2025, 1, 2, 1, 4, 5, tzinfo=utc)
    assert to_datetime(datetime(2025, 1, 2)) == datetime(2025, 1, 2, tzinfo=utc)
    aware = datetime(2025, 1, 2, tzinfo=timezone(timedelta(hours=-5)))
    assert to_datetime(aware) is aware
    with pytest.raises(UsageError, match=r"^created_at 'soon' is not an ISO-8601 timestamp$"):
        to_datetime("soon")
    with pytest.raises(UsageError, match=r"^created_at 5 is not a timestamp$"):
        to_datetime(5)
    with pytest.raises(UsageError, match=r"^update_time None is not a timestamp$"):
        to_datetime(None, "update_time")


def test_naive_utc():
    want = datetime(2025, 1, 2, 3, 4, 5, 600000)
    for value in (
        "2025-01-02 03:04:05.600000",
        "2025-01-02T03:04:05.600000+00:00",
        "2025-01-02T05:04:05.600000+02:00",
        "2025-01-02T03:04:05.600000Z",
        want,
        want.replace(tzinfo=timezone.utc),
    ):
        got = naive_utc(value)
        assert got == want and got.tzinfo is None, value
    with pytest.raises(UsageError, match="timestamp 'x' is not an ISO-8601 timestamp"):
        naive_utc("x")


def test_sqlite_backend_stores_created_at_as_given():
    """The SQLite writer's converter: a datetime as its ISO text, text as it is, NULL refused
    by the column (not turned into "")."""
    from agentctl.storage.agentos.sqlite import iso_text

    assert iso_text(datetime(2025, 1, 2, tzinfo=timezone.utc)) == "2025-01-02T00:00:00+00:00"
    assert iso_text("2025-01-02") == "2025-01-02"
    assert iso_text(None) is None


# ---- the AgentOS table's DDL as data -------------------------------------------------------


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_schema_is_made_from_the_data(dialect):
    sql = base.schema_sql(dialect)
    assert sql == {"sqlite": base.SQLITE_SCHEMA, "postgres": base.POSTGRES_SCHEMA}[dialect]
    types = base.DIALECTS[dialect]
    assert f"    id {types['id']},\n" in sql
    for name, ddl in base.COLUMN_DEFS:
        assert f"    {name} {ddl.format(**types)}" in sql
    for name, cols in base.DIALECT_INDEXES[dialect]:
        assert f"CREATE INDEX IF NOT EXISTS {name} ON checkpoints({cols});\n" in sql
    assert sql.count("CREATE INDEX") == len(base.DIALECT_INDEXES[dialect])
    assert "{" not in sql.replace("'{}'", "")  # every placeholder filled


def test_sqlite_schema_makes_the_formats_table(tmp_path):
    conn = sqlite3.connect(tmp_path / "c.db")
    conn.executescript(base.SQLITE_SCHEMA)
    info = conn.execute("PRAGMA table_info(checkpoints)").fetchall()
    assert tuple(r[1] for r in info) == ("id",) + base.COLUMNS == base.REQUIRED_COLUMNS
    by_name = {r[1]: r for r in info}
    assert by_name["id"][5] == 1  # the primary key
    assert by_name["created_at"][2] == "TEXT" and by_name["tags"][2] == "TEXT"
    assert by_name["state_blob"][4] == "'{}'" and by_name["messages_blob"][4] == "'[]'"
    assert {r[1] for r in info if r[3]} == set(base.COLUMNS) - {"parent_id"}  # NOT NULL
    indexes = {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
    }
    assert indexes == {name for name, _ in base.INDEXES}
    conn.executescript(base.SQLITE_SCHEMA)  # IF NOT EXISTS: runs again
    conn.close()


def test_doctor_indexes_are_the_formats():
    assert agentos_doctor.EXPECTED_INDEXES == ("idx_thread_step", "idx_checkpoint_id", "idx_parent")
    assert agentos_doctor.index_ddl() == {
        "idx_thread_step": "CREATE INDEX IF NOT EXISTS idx_thread_step ON checkpoints(thread_id, step DESC)",
        "idx_checkpoint_id": "CREATE INDEX IF NOT EXISTS idx_checkpoint_id ON checkpoints(checkpoint_id)",
        "idx_parent": "CREATE INDEX IF NOT EXISTS idx_parent ON checkpoints(parent_id)",
        "idx_created_at": "CREATE INDEX IF NOT EXISTS idx_created_at ON checkpoints(created_at DESC)",
    }
