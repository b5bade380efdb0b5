"""The side search index serves the OpenAI Agents SDK's sessions too (the same mechanism
as AgentOS, agentctl/storage/textindex.py): written by the SDK itself, the index's hits
are the scan's, also after the SDK appends and removes items."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from tests.support.sampledb import cli, cli_json

pytest.importorskip("agents")

TEXTS = [
    "Weather in PARIS tomorrow?",
    "paris is sunny",
    "Café crème à Paris",
    "CAFÉ NOIR",
    "Straße nach Köln",
    "你好世界",
    'quote "inside" here',
    "back\\slash path",
    "ΣΊΣΥΦΟΣ and σίσυφος",
    "nothing here",
]
QUERIES = [
    ["paris"],
    ["PARIS", "--role", "user"],
    ["café"],
    ["straße"],
    ["你好"],
    ['"inside"'],
    ["back\\slash"],
    ["σίσυφος"],
    ["get_weather"],
    ["sunny", "--in", "tools"],
    ["paris", "--in", "messages"],
    ["paris", "--thread", "s1"],
    ["zzz-not-there"],
    ["pa"],
]


async def _write(path: str, sessions: dict[str, list]) -> None:
    from agents import SQLiteSession

    for sid, items in sessions.items():
        s = SQLiteSession(sid, path)
        try:
            await s.add_items(items)
        finally:
            s.close()


def _items(n: int) -> list:
    out: list = []
    for i in range(n):
        t = TEXTS[i % len(TEXTS)]
        out.append({"role": "user", "content": t})
        out.append(
            {
                "type": "function_call",
                "call_id": f"c{i}",
                "name": "get_weather",
                "arguments": json.dumps({"city": t}, ensure_ascii=i % 2 == 0),
            }
        )
        out.append({"type": "function_call_output", "call_id": f"c{i}", "output": f"sunny in {t}"})
        out.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t.upper()}]}
        )
    return out


def _hits(db: str, *args: str) -> list:
    return [
        (h["thread_id"], h["checkpoint_id"], h["step"], h["where"], h["role"], h["snippet"])
        for h in cli_json(db, "search", *args, "-n", "500")
    ]


def _same(db: str) -> None:
    for q in QUERIES:
        assert _hits(db, *q) == _hits(db, *q, "--scan"), q


def test_openai_sessions_side_index(tmp_path):
    db = str(tmp_path / "sdk.db")
    asyncio.run(_write(db, {"s1": _items(12), "s2": _items(7), "s3": _items(3)}))
    assert cli(db, "index", "build").exit_code == 0
    assert os.path.exists(db + ".agentctl-search")
    assert cli_json(db, "index", "status")["state"] == "current"
    _same(db)
    assert _hits(db, "paris")

    async def change() -> None:  # the SDK again: items added, the newest items popped
        from agents import SQLiteSession

        await _write(db, {"s2": [{"role": "user", "content": "new: PARIS again, café"}]})
        s = SQLiteSession("s1", db)
        try:
            await s.pop_item()
            await s.pop_item()
        finally:
            s.close()

    asyncio.run(change())
    assert cli_json(db, "index", "status")["state"] == "behind"
    _same(db)
    assert cli_json(db, "index", "status")["state"] == "current"
    with open(db + ".agentctl-search", "r+b") as f:
        f.truncate(1000)
    r = cli(db, "search", "paris", "--json")
    assert r.exit_code == 0 and "fell back to the scan" in r.stderr


def test_a_scan_over_several_pages_finds_each_hit_once_newest_first(tmp_path):
    """A scan reads the messages a page (500 rows) at a time, newest first, each page
    below the last id the one before read: over two and three pages of candidate rows
    (some dropped by a role), every hit once and in the index's order."""
    db = str(tmp_path / "sdk.db")
    asyncio.run(_write(db, {"s1": _items(400), "s2": _items(300)}))
    assert cli(db, "index", "build").exit_code == 0
    for q in (["sunny"], ["sunny", "--role", "user"], ["in"], ["in", "--thread", "s1"]):
        scanned = [
            (h["thread_id"], h["checkpoint_id"], h["where"])
            for h in cli_json(db, "search", *q, "-n", "5000", "--scan")
        ]
        assert scanned == [
            (h["thread_id"], h["checkpoint_id"], h["where"]) for h in cli_json(db, "search", *q, "-n", "5000")
        ], q
        assert len(set(scanned)) == len(scanned) > 0, q
    assert len(cli_json(db, "search", "in", "-n", "5000", "--scan")) > 1000  # more than two pages
