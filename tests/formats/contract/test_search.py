"""Search: through the index and by a scan, beyond ASCII, its filters, the SDK formats' paged
scans.

Part of the storage contract suite (tests/formats/contract/: every format x {SQLite, Postgres}).
"""

from __future__ import annotations

import pytest

from agentctl.storage import open_store
from tests.support.contract_formats import NEEDLE, WIDE
from tests.support.contract_suite import PAIRS


async def test_search(built):
    _, b = built
    async with open_store(b.url) as store:
        store.last_search_path = ""
        hits = await store.search(NEEDLE)
        assert hits and b.main in {h.thread_id for h in hits}
        assert store.last_search_path in ("fts", "scan")
        assert {h.thread_id for h in await store.search(NEEDLE.upper())} == {h.thread_id for h in hits}
        assert {h.thread_id for h in await store.search(NEEDLE, thread_id=b.main)} == {b.main}
        scanned = await store.search(NEEDLE, scan=True)
        assert store.last_search_path == "scan"
        assert {(h.thread_id, h.checkpoint_id) for h in scanned} == {
            (h.thread_id, h.checkpoint_id) for h in hits
        }
        assert await store.search("no such text anywhere 0xdeadbeef") == []


PAGED = [(n, k) for n, k in PAIRS if n in ("adk", "openai-agents")]


def _hits(found) -> list:
    return [(h.thread_id, h.checkpoint_id, h.where, h.snippet) for h in found]


async def _scan_a_row_a_page(store, monkeypatch) -> tuple[list, list[str]]:
    """The hits of a scan for "e" reading one row per first page, and its pages' SQL."""
    sql: list[str] = []
    real = store._q

    async def seen(query, *params):
        sql.append(query)
        return await real(query, *params)

    monkeypatch.setattr(store, "_q", seen)
    monkeypatch.setattr(store, "scan_page", 1)
    found = _hits(await store.search("e", scan=True, limit=1000))
    pages = [q for q in sql if " LIMIT ?" in q]
    assert len(pages) >= 2
    return found, pages


@pytest.mark.parametrize("built", PAGED, ids=[f"{n}-{k}" for n, k in PAGED], indirect=True)
async def test_a_scan_from_a_row_a_page_finds_what_one_page_finds(built, monkeypatch):
    """The SDK formats' scan reads its rows a page at a time, each page going on below
    the last row the one before read (no OFFSET): from a row a page, the hits of one
    page, in the same order."""
    _, b = built
    async with open_store(b.url) as store:
        whole = _hits(await store.search("e", scan=True, limit=1000))
        assert len(whole) >= 3
        found, pages = await _scan_a_row_a_page(store, monkeypatch)
        assert found == whole and not any("OFFSET" in q for q in pages)


@pytest.mark.parametrize("built", [("adk", "sqlite")], ids=["adk-sqlite"], indirect=True)
async def test_an_adk_scan_pages_by_offset_when_its_key_may_be_null(built, monkeypatch):
    """An events table that does not declare the scan's key NOT NULL (made by another
    writer): the scan pages by OFFSET instead of below the last row, and finds the same."""
    import sqlite3

    _, b = built
    async with open_store(b.url) as store:
        whole = _hits(await store.search("e", scan=True, limit=1000))
        assert len(whole) >= 3
    con = sqlite3.connect(b.url)
    con.executescript(
        "CREATE TABLE loose AS SELECT * FROM events; DROP TABLE events; ALTER TABLE loose RENAME TO events"
    )
    con.close()
    async with open_store(b.url) as store:
        found, pages = await _scan_a_row_a_page(store, monkeypatch)
        assert found == whole and all(q.endswith("OFFSET ?") for q in pages)


async def test_search_beyond_ascii(built):
    """Case-insensitive for any letter, through the index and by a scan alike."""
    _, b = built
    async with open_store(b.url) as store:
        want = {(h.thread_id, h.checkpoint_id) for h in await store.search(WIDE, scan=True)}
        assert b.main in {t for t, _ in want}
        for text in (WIDE, WIDE.lower(), WIDE.upper()):
            for scan in (False, True):
                got = {(h.thread_id, h.checkpoint_id) for h in await store.search(text, scan=scan)}
                assert got == want, (text, scan, store.last_search_path)


async def test_search_filters(built):
    _, b = built
    async with open_store(b.url) as store:
        hits = await store.search(NEEDLE)
        assert len(await store.search(NEEDLE, limit=1)) == 1
        for role in {h.role for h in hits if h.role}:
            assert {h.role for h in await store.search(NEEDLE, role=role)} == {role}
        for h in hits:  # a hit names a checkpoint of its thread
            meta = await store.get_metadata(h.checkpoint_id)
            assert meta is not None and meta.thread_id == h.thread_id and meta.step == h.step
