"""Search of AgentOS checkpoints on SQLite through a temporary FTS5 trigram index.

The matching runs in an FTS5 trigram index built for one search in an in-memory
database: the user's file is attached read-only and never written, its tables untouched.
Rows are first narrowed by the backend's cheap substring test on the raw JSON, so only
candidate rows are indexed. Where this SQLite build has no FTS5 trigram tokenizer, or
the text is shorter than 3 characters, `fts_search` returns None and the caller scans.
Both give the same hits: case-insensitive substring matches, newest first, one per
checkpoint and place.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from agentctl.model import CheckpointMetadata, SearchHit
from agentctl.storage.agentos.queries import match_rows
from agentctl.storage.agentos.rows import (
    DELTA_MARKER,
    META_COLUMNS,
    dumps,
    hit_path,
    loads,
    search_json,
    snippet_around,
)
from agentctl.storage.sqlutil import map_sqlite_error, marks
from agentctl.storage.textindex import Source, open_for_search

_INDEX_DDL = (
    "CREATE VIRTUAL TABLE temp.hits USING fts5(rid UNINDEXED, place UNINDEXED, role UNINDEXED, "
    "isjson UNINDEXED, body, tokenize = 'trigram')"
)
# One indexed text per message (its content, decoded), and per leaf of the tool results.
_INDEX_MESSAGES = """
INSERT INTO temp.hits (rid, place, role, isjson, body)
SELECT c.id, CAST(m.key AS INTEGER), json_extract(m.value, '$.role'),
       json_type(m.value, '$.content') <> 'text', json_extract(m.value, '$.content')
FROM src.checkpoints c, json_each(c.messages_blob) m
WHERE c.id IN (SELECT id FROM temp.candidates) AND json_valid(c.messages_blob)
  AND json_type(c.messages_blob) = 'array' AND m.type = 'object'
  AND json_type(m.value, '$.content') NOT IN ('null') {role}
"""
# The tool results (place -1) and the state (place -2): a row per checkpoint whose column
# holds an object, matched in Python as the scan matches it (a leaf, a key, or the
# object's JSON text: SQLite's JSON keeps the writer's escapes and spacing, so no FTS5
# text of it can decide). A delta row's state (patches) is not searched, as the scan
# does not search it.
_INDEX_OBJECT = """
INSERT INTO temp.hits (rid, place, role, isjson, body)
SELECT c.id, {place}, NULL, 1, ''
FROM src.checkpoints c
WHERE c.id IN (SELECT id FROM temp.candidates) AND json_valid(c.{column})
  AND json_type(c.{column}) = 'object' {extra}
"""
_INDEX_TOOLS = _INDEX_OBJECT.format(place=-1, column="tools_blob", extra="")
_INDEX_STATE = _INDEX_OBJECT.format(
    place=-2, column="state_blob", extra="AND json_type(c.state_blob, '$.__agentctl_delta__') IS NULL"
)
#: the search places (agentctl.storage.contract.SEARCH_PLACES) and their columns
PLACE_COLUMNS = (("messages", "messages_blob"), ("tools", "tools_blob"), ("state", "state_blob"))
_OBJECT_PLACES = {-1: "tools_result", -2: "state"}


def _fts_available(con: sqlite3.Connection) -> bool:
    try:
        con.execute(_INDEX_DDL)
    except sqlite3.OperationalError:  # no FTS5 or no trigram tokenizer in this build
        return False
    return True


def fts_search(
    path: str,
    condition: tuple[str, list[Any]],
    text: str,
    thread: str | None,
    role: str | None,
    limit: int,
    places: Any = ("messages", "tools", "state"),
) -> list[SearchHit] | None:
    """The hits, or None when this SQLite build cannot do it (then scan instead).

    Candidate rows are taken newest first in growing batches (keyset paging on
    created_at, id), each batch indexed and queried, until `limit` hits are found: a
    search for a common word stops early, like the scan does."""
    if len(text) < 3:  # a trigram index cannot match shorter strings
        return None
    con = sqlite3.connect(":memory:", uri=True)
    hits: list[SearchHit] = []
    try:
        if not _fts_available(con):
            return None
        uri = Path(os.path.abspath(path)).as_uri() + "?mode=ro"
        con.execute("ATTACH DATABASE ? AS src", (uri,))
        con.execute("PRAGMA src.busy_timeout = 5000")
        con.execute("CREATE TEMP TABLE candidates (id INTEGER PRIMARY KEY)")
        cond, params = condition
        where = cond + (" AND thread_id = ?" if thread is not None else "")
        params = list(params) + ([thread] if thread is not None else [])
        index_messages = _INDEX_MESSAGES.format(
            role="AND json_extract(m.value, '$.role') = ?" if role else ""
        )
        phrase = '"' + text.replace('"', '""') + '"'
        seen: set[tuple[str, str]] = set()
        cursor: tuple[str, int] | None = None
        batch = 200
        while len(hits) < limit:
            after = " AND (created_at < ? OR (created_at = ? AND id < ?))" if cursor else ""
            page = con.execute(
                f"SELECT id, created_at FROM src.checkpoints WHERE {where}{after} "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                params + ([cursor[0], cursor[0], cursor[1]] if cursor else []) + [batch],
            ).fetchall()
            if not page:
                break
            cursor = (page[-1][1], page[-1][0])
            batch = min(batch * 2, 5000)
            con.execute("DELETE FROM temp.candidates")
            con.execute("DELETE FROM temp.hits")
            con.executemany("INSERT INTO temp.candidates (id) VALUES (?)", [(r[0],) for r in page])
            if "messages" in places:
                con.execute(index_messages, [role] if role else [])
            if role is None and "tools" in places:
                con.execute(_INDEX_TOOLS)
            if role is None and "state" in places:
                con.execute(_INDEX_STATE)
            rows = con.execute(
                "SELECT c.thread_id, c.checkpoint_id, c.step, h.place, h.role, h.isjson, h.body, "
                "CASE h.place WHEN -1 THEN c.tools_blob WHEN -2 THEN c.state_blob END "
                "FROM (SELECT rowid AS r FROM temp.hits WHERE body MATCH ? "
                # non-text content is matched in Python, on its decoded JSON as the scan
                # does (SQLite's JSON text keeps the writer's \\u escapes and spacing)
                "UNION SELECT rowid FROM temp.hits WHERE isjson = 1) m "
                "JOIN temp.hits h ON h.rowid = m.r JOIN src.checkpoints c ON c.id = h.rid "
                "ORDER BY c.created_at DESC, c.id DESC, h.place >= 0 DESC, h.place DESC",
                (phrase,),
            ).fetchall()
            for thread_id, cid, step, place, msg_role, isjson, body, doc in rows:
                kind = "messages" if place >= 0 else _OBJECT_PLACES[place]
                if (cid, kind) in seen:
                    continue
                if place >= 0:
                    body = str(body)
                    if isjson:  # not text: matched and shown as the scan does, on its decoded JSON
                        body = dumps(json.loads(body))
                    # the scan's rule decides (FTS5 folds case its own way: final sigma, İ)
                    if text.lower() not in body.lower():
                        continue
                    hit = SearchHit(
                        thread_id,
                        cid,
                        step,
                        kind,
                        msg_role if isinstance(msg_role, str) else None,
                        snippet_around(body, text),
                        hit_path("messages", [place, "content"]),
                    )
                else:  # as the scan finds it in the decoded object (or not at all)
                    meta = CheckpointMetadata(thread_id, cid, step)
                    found = search_json(meta, kind, json.loads(doc), text)
                    if found is None:
                        continue
                    hit = found
                seen.add((cid, kind))
                hits.append(hit)
                if len(hits) >= limit:
                    break
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, path) from None
    finally:
        con.close()
    return hits


# ---- the side index (agentctl.storage.textindex) of AgentOS checkpoints -----------------

_ESCAPED = frozenset('"\\') | frozenset(chr(i) for i in range(32))


def _object_text(value: Any) -> str:
    """The lower-cased text the scan matches in a tool-results or state object: its
    serialisation (a match across a key and its value), plus every key and string leaf
    whose raw text differs from its serialised form (escapes)."""
    whole = dumps(value)
    if "\\" not in whole:  # no string needed an escape: every key and leaf is in it as is
        return whole.lower()
    extra: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if not _ESCAPED.isdisjoint(str(k)):
                    extra.append(str(k))
                stack.append(x)
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str) and not _ESCAPED.isdisjoint(v):
            extra.append(v)
    return "\n".join([whole, *extra]).lower()


def agentos_docs(values: Any) -> list[tuple[int, str]]:
    """The index documents of one checkpoint row (messages_blob, tools_blob, state_blob):
    kind 0 every message's content (as the scan reads it), 1 the tool results, 2 the
    state (not a delta row's patches)."""
    out: list[tuple[int, str]] = []
    decoded = []
    for raw in values:
        try:
            decoded.append(loads(raw))
        except (ValueError, RecursionError):
            decoded.append(None)
    messages, tools, state = decoded
    if isinstance(messages, list):
        bodies = []
        for msg in messages:
            if isinstance(msg, dict):
                content = msg.get("content", "")
                bodies.append(content if isinstance(content, str) else dumps(content))
        if bodies:
            out.append((0, "\n".join(bodies).lower()))
    if isinstance(tools, dict) and tools:
        out.append((1, _object_text(tools)))
    if isinstance(state, dict) and state and DELTA_MARKER not in state:
        out.append((2, _object_text(state)))
    return out


def agentos_source() -> Any:
    return Source(
        format="agentos",
        table="checkpoints",
        key="id",
        sort="created_at",
        fingerprint="length(messages_blob) * 1000000007 + length(tools_blob) * 1000003 + length(state_blob)",
        columns=("messages_blob", "tools_blob", "state_blob"),
        kinds=("messages", "tools", "state"),
        docs=agentos_docs,
    )


def side_index_search(
    path: str,
    condition: tuple[str, list[Any]],
    text: str,
    thread: str | None,
    role: str | None,
    limit: int,
    places: Any = ("messages", "tools", "state"),
) -> list[SearchHit]:
    """The hits through the side index (agentctl.storage.textindex), caught up first
    when the database changed: its candidates, newest first, each read from the database
    and matched as the scan matches it (the backend's `condition`, then the same Python
    test), so the hits are the scan's and never stale. Raises Unusable when the index
    cannot be trusted or updated; the caller scans."""
    session = open_for_search(path, agentos_source())
    try:
        kinds = [i for i, (place, _) in enumerate(PLACE_COLUMNS) if place in places]
        candidates: Any = session.candidates(text.lower(), kinds)
        if thread is not None:  # the thread's rows (its index), not every thread's candidates
            mine = {
                r[0]
                for r in session.con.execute("SELECT id FROM src.checkpoints WHERE thread_id = ?", (thread,))
            }
            candidates = (k for k in candidates if k in mine)
        reader = session.con.cursor()
        reader.row_factory = sqlite3.Row
        chosen = frozenset(places)
        hits: list[SearchHit] = []
        batch = max(limit, 20)  # most candidates are hits: the first batch is often the last
        while len(hits) < limit:
            keys = [k for _, k in zip(range(batch), candidates, strict=False)]
            if not keys:
                break
            batch = min(batch * 2, 2000)
            sql = (
                f"SELECT {META_COLUMNS}, messages_blob, tools_blob, state_blob FROM src.checkpoints "
                f"WHERE id IN ({marks(len(keys))}) AND {condition[0]}"
            )
            params: list[Any] = list(keys) + list(condition[1])
            if thread is not None:
                sql += " AND thread_id = ?"
                params.append(thread)
            found = {r["id"]: r for r in reader.execute(sql, params).fetchall()}
            hits.extend(match_rows([found[k] for k in keys if k in found], text, role, chosen))
        return hits[:limit]
    finally:
        session.close()
