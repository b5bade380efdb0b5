"""A full-text index of a SQLite database's searchable text, kept in a side file.

Where it lives: `DB.agentctl-search`, next to the database file. The user's database is
only ever read (attached `mode=ro`); the side file can be dropped at any time, works for
a read-only database file (the directory must be writable to build it), and is made only
by an explicit command (`agentctl index build`).

What it holds: an FTS5 table (trigram tokenizer, contentless, `detail=none`: small and
quick to build) of the lower-cased texts a format's search matches, one document per
row (its places joined), and a table `rows` of the indexed source rows: their key (the
rowid: new rows have larger ones), their sort key (newest first) and a fingerprint (the
lengths of the searched columns). An FTS rowid is `gen * 4` (room for a kind), where `gen` names one
indexed version of a row: a row deleted or rewritten loses its `rows` entry, so its old
documents match nothing any more (they stay in the FTS table until the next build).

How search uses it (`Session.candidates`): the trigrams of the lower-cased needle (AND)
give the candidate rows, newest first; the caller reads each candidate from the real
database and matches it exactly as the scan does, so the index only has to hold a
superset, and a hit is never stale. Queries shorter than 3 characters scan.

Staying current: the source's file identity (size, mtime, inode of the file and of its
WAL) is recorded after each catch-up; while it is unchanged the index is current. When it
changed, the next search catches up first: new rows by key, and a pass over every row's
fingerprint finds rows deleted or rewritten (then re-indexed). A side file that cannot
be read, or was made by another version, is never trusted (`Unusable`): the caller
scans and says so.

Formats describe their rows with a `Source`; AgentOS's is in agentctl.storage.agentos.fts, the
OpenAI Agents SDK's, Google ADK's and LangGraph's are their stores' `text_source()`.
`doctor` reports the side index's state through `search_index_problems`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentctl.storage.contract import Problem

SUFFIX = ".agentctl-search"
VERSION = 2
_BATCH = 2000
_BUILD_CHUNK = 50_000


class Unusable(Exception):
    """The side index cannot be used for this search (the reason is the message)."""


@dataclass(frozen=True)
class Source:
    """How a format's rows become index documents.

    `table` is read through the attached source (`src.`); `key` is a monotonic integer
    key (the rowid); `sort` the SQL of the newest-first order (DESC, then the key DESC);
    `fingerprint` an integer SQL expression that changes when the searched text does;
    `columns` the columns `docs` gets; `docs(values)` returns [(kind, text)] with the
    text already lower-cased (str.lower, as the scan compares); `kinds` names the kinds
    (kind = position, at most 4)."""

    format: str
    table: str
    key: str
    sort: str
    fingerprint: str
    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    docs: Callable[[Sequence[Any]], list[tuple[int, str]]]


@dataclass
class Status:
    """What `index status` and `doctor` report."""

    state: str  # absent, current, behind, corrupt
    path: str
    detail: str = ""
    rows: int = 0
    dead: int = 0
    size: int = 0
    built_at: str = ""
    new_rows: int = 0
    changed_rows: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "path": self.path,
            "detail": self.detail,
            "rows": self.rows,
            "dead_documents": self.dead,
            "bytes": self.size,
            "built_at": self.built_at,
            "new_rows": self.new_rows,
            "changed_rows": self.changed_rows,
        }


def side_path(db_path: str) -> str:
    return os.path.abspath(db_path) + SUFFIX


def file_identity(db_path: str) -> list[Any]:
    """What changes when anyone commits to the database: the file's and its WAL's size,
    mtime and inode (a rollback-journal commit rewrites the file; a WAL commit appends to
    the WAL, a checkpoint rewrites the file)."""
    out: list[Any] = []
    real = os.path.realpath(db_path)  # SQLite keeps the WAL next to the file a symlink names
    for p in (real, real + "-wal"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append([st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def _ro_uri(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri() + "?mode=ro"


def trigram_query(needle: str) -> str:
    """The FTS5 query for a lower-cased needle of 3 or more characters: all its
    trigrams (a detail=none index has no positions, so no phrases; the caller checks
    each candidate)."""
    grams = sorted({needle[i : i + 3] for i in range(len(needle) - 2)})
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE rows (gen INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE, sort, fp INTEGER, docs INTEGER)",
    "CREATE VIRTUAL TABLE fts USING fts5(body, content='', detail=none, tokenize='trigram case_sensitive 1')",
)


class Stopped(Exception):
    """A build asked to stop (Ctrl-C): nothing of it is kept."""


class Session:
    """An open side index, with the source attached read-only as `src`."""

    #: a build's: set (Ctrl-C) to stop it at its next batch of rows
    stop: threading.Event | None = None

    def __init__(self, db_path: str, source: Source, write: bool) -> None:
        self.db_path = os.path.abspath(db_path)
        self.path = side_path(db_path)
        self.source = source
        self.write = write
        if not os.path.exists(self.path):
            raise Unusable("there is none")
        try:
            uri = Path(self.path).as_uri() + ("" if write else "?mode=ro")
            self.con = sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=10, check_same_thread=False
            )  # (used in worker threads, one at a time)
        except sqlite3.Error as exc:
            raise Unusable(f"cannot open it ({exc})") from None
        try:
            self.meta = self._read_meta()
            self.con.execute("ATTACH DATABASE ? AS src", (_ro_uri(self.db_path),))
            self.con.execute("PRAGMA src.busy_timeout = 5000")
        except sqlite3.Error as exc:
            self.con.close()
            raise Unusable(f"it is unreadable ({exc})") from None
        except Unusable:
            self.con.close()
            raise

    def _read_meta(self) -> dict[str, Any]:
        try:
            meta = {k: json.loads(v) for k, v in self.con.execute("SELECT key, value FROM meta")}
            self.con.execute("SELECT gen, id, sort, fp FROM rows LIMIT 0").fetchall()
            self.con.execute("SELECT rowid FROM fts LIMIT 0").fetchall()
        except (sqlite3.Error, ValueError) as exc:
            raise Unusable(f"it is unreadable ({exc})") from None
        if meta.get("version") != VERSION or meta.get("format") != self.source.format:
            raise Unusable(
                f"it was made by another version or for another format "
                f"({meta.get('format')!r} v{meta.get('version')})"
            )
        return meta

    def close(self) -> None:
        self.con.close()

    # ---- keeping it current ------------------------------------------------------

    def is_current(self) -> bool:
        return self.meta.get("identity") == file_identity(self.db_path)

    def catch_up(self) -> tuple[int, int]:
        """Index the rows added, deleted or rewritten since the last catch-up; returns
        (new rows, changed or deleted rows)."""
        if not self.write:
            raise Unusable("it is behind the database and cannot be updated here")
        identity = file_identity(self.db_path)  # before reading: a later commit shows next time
        try:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                self.meta = self._read_meta()  # another process may have caught up meanwhile
                if self.meta.get("identity") == identity:
                    self.con.execute("ROLLBACK")
                    return 0, 0
                changed = self._changed_keys()
                new = self._index_after(int(self.meta["max_key"]))
                self._reindex(changed)
                self._save_meta(identity)
                self.con.execute("COMMIT")
            except BaseException:
                if self.con.in_transaction:
                    self.con.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            raise Unusable(f"it could not be updated ({exc})") from None
        return new, len(changed)

    def _changed_keys(self, limit: int | None = None) -> list[int]:
        s = self.source
        # (the source's expressions in a subquery of its own: its column names may be ours)
        sql = (
            f"SELECT r.id FROM rows r LEFT JOIN (SELECT {s.key} AS k, {s.fingerprint} AS f, {s.sort} AS s "
            f"FROM src.{s.table}) c ON c.k = r.id "
            "WHERE c.k IS NULL OR r.fp IS NOT c.f OR r.sort IS NOT c.s"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [r[0] for r in self.con.execute(sql)]

    def count_new(self) -> int:
        s = self.source
        return self.con.execute(
            f"SELECT count(*) FROM src.{s.table} WHERE {s.key} > ?", (int(self.meta["max_key"]),)
        ).fetchone()[0]

    def _rows_sql(self, where: str) -> str:
        s = self.source
        return (
            f"SELECT {s.key}, {s.sort}, {s.fingerprint}, {', '.join(s.columns)} FROM src.{s.table} "
            f"WHERE {where} ORDER BY {s.key}"
        )

    def _insert(self, rows: Iterator[Sequence[Any]]) -> int:
        """Index rows (key, sort, fp, *columns); returns how many."""
        gen = int(self.meta.get("next_gen", 1))
        docs = self.source.docs
        n = 0
        fts: list[tuple[int, str]] = []
        index: list[tuple[Any, ...]] = []
        for row in rows:
            # One document per row, its places joined: an FTS5 document per place would
            # repeat every trigram they share (a larger, slower index); the caller's exact
            # test on each candidate applies the places asked for.
            texts = docs(row[3:])
            if texts:
                fts.append((gen * 4, "\n".join(text for _, text in texts)))
            index.append((gen, row[0], row[1], row[2], 1 if texts else 0))
            gen += 1
            n += 1
            if len(index) >= _BATCH:
                self._flush(fts, index)
        self._flush(fts, index)
        self.meta["next_gen"] = gen
        return n

    def _flush(self, fts: list[tuple[int, str]], index: list[tuple[Any, ...]]) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped()
        self.con.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", fts)
        self.con.executemany("INSERT INTO rows (gen, id, sort, fp, docs) VALUES (?, ?, ?, ?, ?)", index)
        fts.clear()
        index.clear()

    def _index_after(self, key: int) -> int:
        cur = self.con.cursor()
        cur.execute(self._rows_sql(f"{self.source.key} > ?"), (key,))
        n = self._insert(iter(cur))
        top = self.con.execute("SELECT max(id) FROM rows").fetchone()[0]
        self.meta["max_key"] = max(key, top or 0)
        return n

    def _reindex(self, keys: list[int]) -> None:
        from agentctl.storage.sqlutil import in_chunks

        for marks, chunk in in_chunks(keys):
            dead = self.con.execute(
                f"SELECT coalesce(sum(docs), 0) FROM rows WHERE id IN ({marks})", chunk
            ).fetchone()[0]
            self.meta["dead"] = int(self.meta.get("dead", 0)) + int(dead)
            self.con.execute(f"DELETE FROM rows WHERE id IN ({marks})", chunk)
            cur = self.con.cursor()
            cur.execute(self._rows_sql(f"{self.source.key} IN ({marks})"), chunk)
            self._insert(iter(cur))

    def _save_meta(self, identity: list[Any]) -> None:
        self.meta["identity"] = identity
        self.meta["rows"] = self.con.execute("SELECT count(*) FROM rows").fetchone()[0]
        self.con.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [(k, json.dumps(v)) for k, v in self.meta.items()],
        )

    # ---- searching -----------------------------------------------------------------

    def candidates(self, needle: str, kinds: Sequence[int] = ()) -> Iterator[int]:
        """The keys of the rows whose text may contain `needle` (folded as the
        documents are, 3 characters or more), newest first. (`kinds`: the places asked
        for; one document holds all of a row's, so the caller's test applies them.)"""
        cur = self.con.execute(
            "SELECT r.id FROM (SELECT rowid >> 2 AS g FROM fts WHERE fts MATCH ?) m "
            "JOIN rows r ON r.gen = m.g ORDER BY r.sort DESC, r.id DESC",
            (trigram_query(needle),),
        )
        for (key,) in cur:
            yield key


def open_for_search(db_path: str, source: Source) -> Session:
    """The side index, current (caught up first when the database changed). Raises
    Unusable when there is none or it cannot be trusted or updated."""
    path = side_path(db_path)
    if not os.path.exists(path):
        raise Unusable("there is none")
    session = Session(db_path, source, write=False)
    if session.is_current():
        return session
    session.close()
    if not os.access(path, os.W_OK) or not os.access(os.path.dirname(path), os.W_OK):
        raise Unusable("it is behind the database and its directory is not writable")
    session = Session(db_path, source, write=True)
    try:
        session.catch_up()
    except BaseException:
        session.close()
        raise
    return session


def build(db_path: str, source: Source, stop: threading.Event | None = None) -> Status:
    """(Re)build the side index of a database from scratch: written to a temporary file
    next to it, then renamed over the old one (a search meanwhile uses the old one).
    `stop` set (from another thread: Ctrl-C) stops it within a batch of rows (Stopped):
    the temporary file removed, the old index (or none) left as it was."""
    path = side_path(db_path)
    directory = os.path.dirname(path)
    if not os.access(directory, os.W_OK):
        raise PermissionError(f"{directory} is not writable: the search index lives next to the database")
    tmp = f"{path}.tmp{os.getpid()}"
    for p in (tmp, tmp + "-journal"):
        if os.path.exists(p):
            os.remove(p)
    identity = file_identity(db_path)
    con = sqlite3.connect(tmp, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute("PRAGMA cache_size = -32000")
        for ddl in _SCHEMA:
            con.execute(ddl)
        con.execute(
            "INSERT INTO meta (key, value) VALUES ('version', ?), ('format', ?)",
            (json.dumps(VERSION), json.dumps(source.format)),
        )
        con.close()
        session = Session.__new__(Session)
        session.db_path = os.path.abspath(db_path)
        session.path = tmp
        session.source = source
        session.write = True
        session.stop = stop
        session.con = sqlite3.connect(tmp, isolation_level=None)
        try:
            session.con.execute("PRAGMA journal_mode = OFF")
            session.con.execute("PRAGMA synchronous = OFF")
            session.con.execute("PRAGMA cache_size = -32000")
            session.con.execute("ATTACH DATABASE ? AS src", (_ro_uri(db_path),))
            session.con.execute("PRAGMA src.busy_timeout = 5000")
            session.meta = {
                "version": VERSION,
                "format": source.format,
                "next_gen": 1,
                "dead": 0,
                "source": os.path.abspath(db_path),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            # In chunks of rows, each its own transaction: a read of the database holds
            # off its writers (rollback-journal mode) for seconds, not for the whole build.
            # What they write meanwhile changes the identity recorded first: the next
            # search catches up.
            last = -(1 << 62)
            while True:
                session.con.execute("BEGIN")
                cur = session.con.cursor()
                cur.execute(session._rows_sql(f"{source.key} > ?") + f" LIMIT {_BUILD_CHUNK}", (last,))
                n = session._insert(iter(cur))
                top = session.con.execute("SELECT max(id) FROM rows").fetchone()[0]
                session.con.execute("COMMIT")
                if n < _BUILD_CHUNK or top is None:
                    break
                last = top
            session.meta["max_key"] = max(last, top or 0)
            session.con.execute("BEGIN")
            session._save_meta(identity)
            session.con.execute("COMMIT")
        finally:
            session.con.close()
        if stop is not None and stop.is_set():
            raise Stopped()
        os.replace(tmp, path)
    except BaseException:
        for p in (tmp, tmp + "-journal"):
            if os.path.exists(p):
                os.remove(p)
        raise
    return status(db_path, source, check=False)


def drop(db_path: str) -> bool:
    path = side_path(db_path)
    if not os.path.exists(path):
        return False
    os.remove(path)
    return True


def status(db_path: str, source: Source, check: bool = True) -> Status:
    """The side index's state, read-only: absent, current, behind (with how many rows
    new and changed when `check`) or corrupt."""
    path = side_path(db_path)
    if not os.path.exists(path):
        return Status("absent", path, "no search index (build one with `agentctl index build`)")
    size = os.path.getsize(path)
    try:
        session = Session(db_path, source, write=False)
    except Unusable as exc:
        return Status("corrupt", path, f"the search index cannot be used: {exc}", size=size)
    try:
        meta = session.meta
        st = Status(
            "current",
            path,
            "",
            rows=int(meta.get("rows", 0)),
            dead=int(meta.get("dead", 0)),
            size=size,
            built_at=str(meta.get("built_at", "")),
        )
        if not session.is_current():
            st.state = "behind"
            if check:
                st.new_rows = session.count_new()
                st.changed_rows = len(session._changed_keys())
                if not st.new_rows and not st.changed_rows:
                    st.detail = "the database file changed, no searched row did (the next search records it)"
                else:
                    st.detail = (
                        f"{st.new_rows} new and {st.changed_rows} deleted or rewritten rows "
                        "not indexed yet (the next search catches up)"
                    )
            else:
                st.detail = "the database changed since (the next search catches up)"
    except sqlite3.Error as exc:
        return Status("corrupt", path, f"the search index cannot be used: {exc}", size=size)
    finally:
        session.close()
    return st


async def search_index_problems(store: Any) -> list[Problem]:
    """`doctor`'s finding about a store's side search index (SQLite, `agentctl index
    build`), when there is one: a warning when it is behind the database (the next
    search catches up), an error when it cannot be used (search then scans). `store`
    is any Store (or AgentOS backend) with `search_index("status")`; none where it has
    no such index (Unsupported)."""
    from agentctl.storage.contract import Problem, Unsupported

    try:
        st = await store.search_index("status")
    except Unsupported:
        return []
    if st["state"] == "behind":
        detail = "search index: " + st["detail"]
        return [Problem("warning", "search_index", st["path"], detail, "warning", detail)]
    if st["state"] == "corrupt":
        return [
            Problem(
                "error",
                "search_index",
                st["path"],
                st["detail"] + "; search scans instead (`agentctl index build` rebuilds it, "
                "`agentctl index drop` removes it)",
                "search-index",
                st,
            )
        ]
    return []


async def build_in_thread(db_path: str, source: Source) -> Status:
    """`build` on a thread of its own; cancelled (Ctrl-C), the thread stops too, within a
    batch of rows, not after the last one (asyncio.run waits for it)."""
    import asyncio

    stop = threading.Event()
    try:
        return await asyncio.to_thread(build, db_path, source, stop)
    except BaseException:
        stop.set()
        raise


async def index_action(path: str, source: Source, action: str, table: str) -> dict[str, Any]:
    """`agentctl index build|status|drop` on a format's SQLite file: the side file is
    written, the database only read. Returns the index's status (with "dropped" for
    drop); OperationError when it cannot be built, removed or read."""
    import asyncio

    from agentctl.errors import OperationError

    try:
        if action == "build":
            try:
                return (await build_in_thread(path, source)).to_dict()
            except PermissionError as exc:
                raise OperationError(f"cannot build the search index: {exc}") from None
        if action == "drop":
            try:
                dropped = drop(path)
            except OSError as exc:
                raise OperationError(f"cannot remove the search index: {exc}") from None
            return {**status(path, source).to_dict(), "dropped": dropped}
        return (await asyncio.to_thread(status, path, source)).to_dict()
    except sqlite3.OperationalError as exc:  # e.g. a table WITHOUT ROWID
        raise OperationError(f"cannot index the {table} table: {exc}") from None


def fallback_note(side: str, why: str) -> str:
    """The one stderr line of a search that could not use the side index `side`."""
    return f"search index {side}: {why}; fell back to the scan (`agentctl index build` rebuilds it)"


async def open_side(path: str, source: Source) -> tuple[Session | None, str | None]:
    """The side index of `path`, opened (and caught up) for a search: (session, None);
    (None, None) when there is none; (None, note) when it cannot be used: the caller
    scans and says the note on stderr."""
    import asyncio

    side = side_path(path)
    if not os.path.exists(side):
        return None, None
    try:
        return await asyncio.to_thread(open_for_search, path, source), None
    except (Unusable, sqlite3.DatabaseError) as exc:
        return None, fallback_note(side, str(exc))
