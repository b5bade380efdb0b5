"""The read side of the LangGraph format: `LangGraphStore`, on SQLite
(`langgraph-checkpoint-sqlite`) and Postgres (`langgraph-checkpoint-postgres`).

The mapping is the package docstring's. Besides: a subgraph's namespace `ns` of thread
`T` is addressed `T|ns` (LangGraph's own separator of nested namespaces is also "|", so
`T|outer:1|inner:2` reads as a path); summary = the user's own metadata keys; a thread's
summary is its head's last message, else its source (not the metadata keys: LangGraph
copies a run's configurable values, `user_id=...`, into every checkpoint's metadata).

Every SQL statement is written with `?` placeholders (the Postgres connection rewrites
them); nothing here writes (the writes are `history.py`'s).
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from itertools import takewhile
from typing import Any

from agentctl import deep
from agentctl.errors import CorruptRowError, UsageError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.contract import (
    SEARCH_PLACES,
    Capability,
    Problem,
    Store,
    Unsupported,
    check_search_places,
    local_file_of,
)
from agentctl.storage.journal.ops import LOG
from agentctl.storage.journal.trash import trash_name
from agentctl.storage.langgraph import serde
from agentctl.storage.search import dumps, hit_path, json_hit_tokens, search_messages, snippet_around
from agentctl.storage.sqlconn import ConnectedStore, connection, one_line
from agentctl.storage.sqlutil import marks

NS_SEP = "|"
SORTS = ("updated", "thread", "checkpoints", "step", "created")
#: `search` decodes at most this many checkpoints (newest first) per call
SEARCH_SCAN_MAX = 20_000
#: the side index's search locates up to this many candidates at once (more: thread by thread)
LAZY_CANDIDATES = 5_000
#: how many checkpoint ids' places a store remembers
WHERE_CACHE_MAX = 200_000
#: the previous release's op log in a LangGraph database and its trash (`legacy.py` moves
#: them into the journal at the first write)
OPLOG = "agentctl_langgraph_oplog"
TRASH_CP = "agentctl_langgraph_trash_checkpoints"
TRASH_W = "agentctl_langgraph_trash_writes"
TRASH_B = "agentctl_langgraph_trash_blobs"
#: the special channels of pending writes (LangGraph's WRITES_IDX_MAP)
SPECIAL_WRITES = ("__error__", "__scheduled__", "__interrupt__", "__resume__")
#: metadata keys LangGraph itself writes (the others are the user's)
LG_METADATA = (
    "source",
    "step",
    "parents",
    "run_id",
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "langgraph_step",
    "writes",
)

_ALIASED = re.compile(r"\{cp\}(?= [cfm] )")
UUID_EPOCH = 0x01B21DD213814000  # 100 ns ticks from 1582-10-15 to 1970-01-01
_TOP = "\U0010ffff"


def address(thread_id: str, ns: str) -> str:
    """The thread id agentctl shows for a LangGraph (thread_id, checkpoint_ns)."""
    return thread_id if not ns else f"{thread_id}{NS_SEP}{ns}"


def split_address(addr: str) -> tuple[str, str]:
    """(thread_id, checkpoint_ns) of an address (split at the first "|")."""
    if NS_SEP in addr:
        tid, ns = addr.split(NS_SEP, 1)
        return tid, ns
    return addr, ""


def uuid_ticks(checkpoint_id: str, versions: str = "61") -> int | None:
    """The time of a UUIDv6 (or v1) id in 100 ns ticks since 1582-10-15; None for another id."""
    h = checkpoint_id.replace("-", "")
    if len(h) != 32 or h[12] not in versions:
        return None
    try:
        if h[12] == "6":
            return (int(h[0:8], 16) << 28) | (int(h[8:12], 16) << 12) | int(h[13:16], 16)
        return (int(h[13:16], 16) << 48) | (int(h[8:12], 16) << 32) | int(h[0:8], 16)
    except ValueError:
        return None


def id_time(checkpoint_id: str) -> str:
    """The creation time of a UUIDv6 (or v1) checkpoint id as ISO-8601, '' if none."""
    ticks = uuid_ticks(checkpoint_id)
    if ticks is None:
        return ""
    try:
        return datetime.fromtimestamp((ticks - UUID_EPOCH) // 10 / 1e6, tz=timezone.utc).isoformat()
    except (ValueError, OverflowError, OSError):
        return ""


#: what a DeltaChannel's value shows as in a checkpoint that holds no snapshot of it
DELTA_MARKER = {
    serde.TYPE_KEY: "langgraph.channels.delta.DeltaChannel",
    serde.OPAQUE_KEY: True,
    "note": "DeltaChannel (beta): LangGraph rebuilds this value by replaying the writes since "
    "the channel's last snapshot through the graph's reducer; agentctl runs no "
    "reducer, see the nearest ancestor checkpoint holding a snapshot",
}


def _unwrap_snapshot(value: Any) -> Any:
    """A DeltaChannel snapshot is the channel's whole value: show it as such."""
    if isinstance(value, dict) and value.get(serde.TYPE_KEY) == serde.DELTA_SNAPSHOT:
        return value.get("value")
    return value


def _parent_ns(ns: str) -> str:
    """The namespace a subgraph's namespace runs in ('' for a top-level subgraph)."""
    return ns.rsplit(NS_SEP, 1)[0] if NS_SEP in ns else ""


def is_internal_channel(name: str) -> bool:
    return name.startswith("__") or ":" in name


def _meta_dict(text: Any) -> dict[str, Any]:
    if text is None:
        return {}
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    if isinstance(text, dict):
        return text
    try:
        value = deep.loads(text)
    except ValueError:
        return {"__invalid__": str(text)[:200]}
    return value if isinstance(value, dict) else {"__value__": value}


def _step(meta: dict[str, Any]) -> int:
    step: Any = meta.get("step")  # anything: what int() refuses is caught
    try:
        return int(step)
    except (TypeError, ValueError):
        return 0


def _summary(meta: dict[str, Any]) -> str:
    """A checkpoint's summary: the user's own metadata keys (the source is its tag: a
    summary repeating it read "[loop] loop")."""
    text = " ".join(
        f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
        for k, v in meta.items()
        if k not in LG_METADATA
    )
    return text if len(text) <= 120 else text[:119] + "…"


#: a head checkpoint larger than this is not decoded for its thread's summary (the
#: source is shown instead): a thread list stays fast on hostile 50 MB values
HEAD_SUMMARY_MAX_BYTES = 1 << 20
#: `describe` decodes at most this many checkpoints per call (`log --all` of a long thread)
DESCRIBE_MAX = 2000


def _message_summary(messages: list[dict[str, Any]]) -> str:
    """A thread row's summary: its head's last message, "[role] content" as AgentOS's;
    a message without text names its tool calls."""
    if not messages:
        return ""
    last = messages[-1]
    content = last.get("content")
    if not content and isinstance(last.get("tool_calls"), list):
        content = "→ " + ", ".join(str(c.get("name")) for c in last["tool_calls"] if isinstance(c, dict))
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    return one_line(f"[{last.get('role') or last.get('type') or '?'}] {content}", 120)


def _version_newer(current: Any, seen: Any) -> bool:
    if seen is None:
        return current is not None
    if type(current) is type(seen):
        try:
            return current > seen
        except TypeError:
            return current != seen
    return str(current) > str(seen)


def next_nodes(checkpoint: dict[str, Any]) -> list[str]:
    """The nodes LangGraph would run next from this checkpoint: those whose trigger
    channel (`branch:to:NODE`, or `__start__`) holds a value (is in channel_values) at
    a version the node has not seen."""
    versions = checkpoint.get("channel_versions") or {}
    values = checkpoint.get("channel_values")
    values = values if isinstance(values, dict) else {}
    seen = checkpoint.get("versions_seen") or {}
    out: list[str] = []
    if not isinstance(versions, dict) or not isinstance(seen, dict):
        return out
    for channel, version in versions.items():
        if (
            isinstance(channel, str)
            and channel in values
            and (channel == "__start__" or channel.startswith("branch:to:"))
        ):
            node = channel.removeprefix("branch:to:")
            node_seen = got if isinstance(got := seen.get(node), dict) else {}
            if _version_newer(version, node_seen.get(channel)):
                out.append(node)
    return sorted(out)


# ---- the store -----------------------------------------------------------------------


class LangGraphStore(ConnectedStore):
    """LangGraph checkpoints (SQLite or Postgres), read through the `Store` contract."""

    doctor_checks: tuple[str, ...] = ()

    def __init__(self, kind: str, target: str, *, readonly: bool = True, **kwargs: Any):
        from agentctl.storage.langgraph import FORMAT

        self.format = FORMAT
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._pg = kind == "postgres"
        #: whether the writes table has task_path; whether it is the shallow saver's schema
        self.has_task_path, self.shallow = True, False
        self._db = connection(kind, target, self._check, readonly=readonly, **kwargs)
        self.display_name = self._db.display_name
        self._splits: dict[str, tuple[str, str]] = {}
        #: threads made by agentctl's branch (read from its oplog when first needed)
        self._branch_map: dict[str, tuple[str, str]] | None = None
        #: checkpoint id -> (thread_id, checkpoint_ns) of the rows read so far: the
        #: id alone has no index in LangGraph's schema
        self._where: dict[str, tuple[str, str]] = {}
        # dialect pieces
        self._C = ' COLLATE "C"' if self._pg else ""
        self._writes_table, self._writes_value = (
            ("checkpoint_writes", "blob") if self._pg else ("writes", "value")
        )
        if self._pg:
            self._meta = "c.metadata::text"
            self._step = (
                "CASE WHEN jsonb_typeof(c.metadata->'step') = 'number' "
                "THEN (c.metadata->>'step')::numeric::bigint END"
            )
        else:
            self._meta = "CAST(c.metadata AS BLOB)"  # bytes: a row not in UTF-8 must not fail a query
            # json_valid first: json_extract on one malformed row fails the whole query
            self._step = (
                "CASE WHEN json_valid(CAST(c.metadata AS TEXT)) THEN CAST(json_extract("
                "CAST(c.metadata AS TEXT), '$.step') AS INTEGER) END"
            )

    # ---- lifecycle ----------------------------------------------------------------

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        from agentctl.storage.langgraph import POSTGRES_TABLES, SQLITE_TABLES, check_columns

        if self._pg:
            check_columns(tables, POSTGRES_TABLES, f"{self.display_name}: not a LangGraph Postgres database")
            self.has_task_path = "task_path" in tables["checkpoint_writes"]
            self.shallow = "checkpoint_id" not in tables["checkpoints"]
        else:
            check_columns(tables, SQLITE_TABLES, f"{self.display_name}: not a LangGraph SQLite database")
            self.has_task_path = "task_path" in tables["writes"]

    async def connect(self) -> None:
        await self._db.connect()
        if self._pg and self.shallow:
            # The shallow saver keeps one checkpoint per (thread, namespace) and no
            # checkpoint_id column: read it through a view-like subquery.
            self._cp = (
                "(SELECT thread_id, checkpoint_ns, checkpoint->>'id' AS checkpoint_id, "
                "NULL::text AS parent_checkpoint_id, type, checkpoint, metadata "
                "FROM checkpoints)"
            )
        else:
            self._cp = "checkpoints"

    async def compact(self) -> dict[str, Any]:
        """VACUUM: of the file (SQLite), of LangGraph's tables and agentctl's trash
        tables (Postgres), with the sizes before and after (see `Store.compact`)."""
        await self.connect()
        data = (
            ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
            if self._pg
            else ["checkpoints", "writes"]
        )
        tables = data + [trash_name(t) for t in data]
        before = await self._db.size_bytes(tables)
        await self._db.vacuum(tables)
        if not self._pg:
            await self._db.truncate_wal()
        return {
            "vacuumed": tables if self._pg else "file",
            "before": before,
            "after": await self._db.size_bytes(tables),
        }

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        if self._cp != "checkpoints":  # a subquery: aliased where the SQL gives none
            sql = _ALIASED.sub(self._cp, sql).replace("{cp}", self._cp + " AS cp")
        else:
            sql = sql.replace("{cp}", "checkpoints")
        return await self._db.query(sql, *params)

    fetch = _q  # (a transaction's name: the history's checks read the store as they read a write)

    async def _split(self, addr: str) -> tuple[str, str]:
        """(thread_id, checkpoint_ns) of an address; a root thread whose own id holds
        a "|" is found as such first."""
        if NS_SEP not in addr:
            return addr, ""
        found = self._splits.get(addr)
        if found is None:
            rows = await self._q(
                "SELECT 1 AS x FROM {cp} WHERE thread_id = ? AND checkpoint_ns = '' LIMIT 1", addr
            )
            found = (addr, "") if rows else split_address(addr)
            if len(self._splits) < 10_000:
                self._splits[addr] = found
        return found

    # ---- threads ------------------------------------------------------------------

    def _prefix_where(
        self, prefix: str | None, alias: str = "", *, roots: bool = False
    ) -> tuple[str, list[Any]]:
        """The WHERE of threads whose address starts with `prefix`. `roots`: LangGraph's
        threads only (the root namespace), unless the prefix names a namespace: a
        subgraph's namespace is listed under its thread, not as a thread of its own."""
        a = f"{alias}." if alias else ""
        if not prefix:
            return (f" WHERE {a}checkpoint_ns = ''", []) if roots else ("", [])
        if NS_SEP in prefix:  # a subgraph's namespaces, or a thread id holding "|"
            tid, ns = split_address(prefix)
            return (
                f" WHERE ({a}thread_id = ? AND {a}checkpoint_ns <> '' "
                f"AND {a}checkpoint_ns{self._C} >= ? AND {a}checkpoint_ns{self._C} < ?) "
                f"OR ({a}thread_id{self._C} >= ? AND {a}thread_id{self._C} < ?)",
                [tid, ns, ns + _TOP, prefix, prefix + _TOP],
            )
        root = f" AND {a}checkpoint_ns = ''" if roots else ""
        return f" WHERE {a}thread_id{self._C} >= ? AND {a}thread_id{self._C} < ?{root}", [
            prefix,
            prefix + _TOP,
        ]

    def _order(self, sort: str, descending: bool, g: str = "g.") -> str:
        if sort not in SORTS:
            raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(SORTS)}")
        d = " DESC" if descending else ""
        key = {
            "updated": f"{g}head",
            "created": f"{g}first",
            "checkpoints": f"{g}n",
            "step": "head_step",
            "thread": None,
        }[sort]
        tie = f"{g}thread_id{self._C}{d}, {g}checkpoint_ns{self._C}{d}"
        return f"{key}{d}, {tie}" if key else tie

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        where, params = self._prefix_where(prefix, roots=True)
        order = self._order(sort, descending)
        # The aggregate is one scan of the primary key's index (as `sqlite3` would do
        # it); a thread's first checkpoint is looked up by that index for the page's
        # threads only, unless the order needs it for all of them.
        first = "MIN(checkpoint_id) AS first, " if sort in ("created", "step") else ""
        agg = (
            f"SELECT thread_id, checkpoint_ns, COUNT(*) AS n, {first}MAX(checkpoint_id) AS head "
            f"FROM {{cp}}{where} GROUP BY thread_id, checkpoint_ns"
        )
        if sort == "updated" and not prefix and not self._pg:
            # SQLite, newest first (on Postgres the one aggregate is faster: 0.17 s against
            # 0.23 s for 10,000 threads): the (thread, namespace) pairs by a skip scan of the
            # primary key's index (a seek per pair, not a pass over every checkpoint),
            # each pair's head by a seek, and counts for the page's threads only.
            d = " DESC" if descending else ""
            # the CTE's own columns (Postgres does not take an output alias in an expression)
            page_order = f"head{d}, k.tid{self._C}{d}, k.ns{self._C}{d}"
            nxt_ns = (
                "(SELECT MIN(x.checkpoint_ns) FROM {cp} x WHERE x.thread_id = k.tid "
                "AND x.checkpoint_ns > k.ns)"
            )
            nxt_t = "(SELECT MIN(x.thread_id) FROM {cp} x WHERE x.thread_id > k.tid)"
            pairs = (
                f"WITH RECURSIVE k(tid, ns) AS (SELECT * FROM (SELECT thread_id, checkpoint_ns FROM {{cp}} "
                f"ORDER BY thread_id, checkpoint_ns LIMIT 1) k0 UNION ALL "
                f"SELECT CASE WHEN {nxt_ns} IS NOT NULL THEN k.tid ELSE {nxt_t} END, "
                f"COALESCE({nxt_ns}, (SELECT MIN(y.checkpoint_ns) FROM {{cp}} y WHERE y.thread_id = {nxt_t})) "
                f"FROM k WHERE k.tid IS NOT NULL) "
            )
            page = (
                "SELECT k.tid AS thread_id, k.ns AS checkpoint_ns, "
                "(SELECT MAX(x.checkpoint_id) FROM {cp} x WHERE x.thread_id = k.tid AND x.checkpoint_ns = k.ns) "
                f"AS head FROM k WHERE k.tid IS NOT NULL AND k.ns = '' ORDER BY {page_order} "
                "LIMIT ? OFFSET ?"
            )
            sql = (
                f"{pairs}SELECT g.*, {self._head_cols} FROM (SELECT g.thread_id, g.checkpoint_ns, "
                "(SELECT COUNT(*) FROM {cp} x WHERE x.thread_id = g.thread_id AND x.checkpoint_ns = g.checkpoint_ns) AS n, "
                "g.head, (SELECT MIN(x.checkpoint_id) FROM {cp} x WHERE x.thread_id = g.thread_id "
                f"AND x.checkpoint_ns = g.checkpoint_ns) AS first FROM ({page}) g) g {self._head_joins} ORDER BY {order}"
            )
        elif sort == "step":  # the head's step orders the groups: join them all first
            sql = (
                f"SELECT * FROM (SELECT g.*, {self._head_cols} FROM ({agg}) g {self._head_joins}) g "
                f"ORDER BY {order} LIMIT ? OFFSET ?"
            )
        elif first:
            sql = (
                f"SELECT g.*, {self._head_cols} FROM ({agg} ORDER BY {self._order(sort, descending, '')} "
                f"LIMIT ? OFFSET ?) g {self._head_joins} ORDER BY {order}"
            )
        else:
            sql = (
                f"SELECT g.*, {self._head_cols} FROM (SELECT g.*, (SELECT MIN(m.checkpoint_id) FROM {{cp}} m "
                f"WHERE m.thread_id = g.thread_id AND m.checkpoint_ns = g.checkpoint_ns) AS first "
                f"FROM ({agg} ORDER BY {self._order(sort, descending, '')} LIMIT ? OFFSET ?) g) g "
                f"{self._head_joins} ORDER BY {order}"
            )
        rows = await self._q(sql, *params, int(limit), int(offset))
        await self._load_branches()
        last = await self._head_messages(rows)
        return [self._summary_row(r, last) for r in rows]

    @property
    def _head_cols(self) -> str:
        """A thread row's columns of its head `c` and first checkpoint `f` (see `_head_joins`)."""
        return (
            f"{self._step} AS head_step, {self._meta} AS head_meta, f.parent_checkpoint_id AS first_parent, "
            f"CASE WHEN g.checkpoint_ns <> '' THEN {self._meta.replace('c.', 'f.')} END AS first_meta"
        )

    #: a thread row `g`'s head `c` and first checkpoint `f`
    _head_joins = (
        "JOIN {cp} c ON c.thread_id = g.thread_id AND c.checkpoint_ns = g.checkpoint_ns "
        "AND c.checkpoint_id = g.head "
        "JOIN {cp} f ON f.thread_id = g.thread_id AND f.checkpoint_ns = g.checkpoint_ns "
        "AND f.checkpoint_id = g.first"
    )

    async def _head_messages(self, rows: list[dict[str, Any]]) -> dict[str, str]:
        """{head checkpoint id: its last message's summary} of these thread rows (heads
        with no messages, or too large to decode here, left out)."""
        out: dict[str, str] = {}
        for r in rows:
            tid, ns, head = r["thread_id"], r["checkpoint_ns"], r["head"]
            size = "octet_length(c.checkpoint::text)" if self._pg else "length(c.checkpoint)"
            n = await self._q(
                f"SELECT {size} AS n FROM {{cp}} c WHERE c.thread_id = ? "
                "AND c.checkpoint_ns = ? AND c.checkpoint_id = ?",
                tid,
                ns,
                head,
            )
            if not n or (n[0]["n"] or 0) > HEAD_SUMMARY_MAX_BYTES:  # not read at all
                continue
            full = await self._rows(tid, ns, ids=[head])
            if not full or len(full[0].get("payload") or b"") > HEAD_SUMMARY_MAX_BYTES:
                continue
            blobs = (await self._blobs(tid, ns, [head])).get(head, []) if self._pg else []
            if sum(len(b[2] or b"") for b in blobs) > HEAD_SUMMARY_MAX_BYTES:
                continue
            try:
                text = _message_summary(self._build(full[0], [], blobs).messages)
            except CorruptRowError:
                continue
            if text:
                out[head] = text
        return out

    async def _load_branches(self) -> None:
        """The threads agentctl's `branch` made (not undone), from the journal (or the
        previous release's op log): {thread: (the thread it came from, the checkpoint it
        was branched at)}."""
        if self._branch_map is not None:
            return
        self._branch_map = {}
        rows = []
        for log in (OPLOG, LOG):
            if await self._db.table_exists(log):
                rows += await self._q(f"SELECT details FROM {log} WHERE kind = 'branch' AND undone = 0")
        for r in rows:
            try:
                d = json.loads(r["details"])
                self._branch_map[d["new_thread"]] = (d["thread_id"], d["ref"])
            except (ValueError, KeyError, TypeError):
                continue

    def _summary_row(self, r: dict[str, Any], last: dict[str, str] | None = None) -> ThreadSummary:
        meta = _meta_dict(r["head_meta"])
        ns = r["checkpoint_ns"]
        branch_of, branch_point = (
            (None, None) if ns else (self._branch_map or {}).get(r["thread_id"], (None, None))
        )
        if ns:
            first_meta = _meta_dict(r.get("first_meta"))
            parent_ns, point = self._outer(ns, first_meta)
            if point is not None and not r.get("first_parent"):
                branch_of, branch_point = address(r["thread_id"], parent_ns), point
        step = r.get("head_step")
        return ThreadSummary(
            thread_id=address(r["thread_id"], ns),
            checkpoints=int(r["n"]),
            head_step=int(step) if step is not None else _step(meta),
            head_checkpoint_id=r["head"],
            updated_at=id_time(r["head"]),
            head_summary=(last or {}).get(r["head"]) or str(meta.get("source") or ""),
            first_created_at=id_time(r["first"]),
            branch_of=branch_of,
            branch_point=branch_point,
        )

    @staticmethod
    def _outer(ns: str, meta: dict[str, Any]) -> tuple[str, str | None]:
        """The namespace a subgraph's namespace runs in, and the checkpoint there that
        its first checkpoint started from (metadata.parents), if recorded."""
        parent_ns = _parent_ns(ns)
        parents = meta.get("parents")
        point = parents.get(parent_ns) if isinstance(parents, dict) else None
        return parent_ns, point if isinstance(point, str) else None

    async def count_threads(self, prefix: str | None = None) -> int:
        where, params = self._prefix_where(prefix, roots=True)
        rows = await self._q(
            f"SELECT COUNT(*) AS n FROM (SELECT 1 AS x FROM {{cp}}{where} "
            f"GROUP BY thread_id, checkpoint_ns) g",
            *params,
        )
        return int(rows[0]["n"])

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        tid, ns = await self._split(thread_id)
        rows = await self._q(
            f"SELECT g.*, {self._head_cols} FROM (SELECT thread_id, checkpoint_ns, COUNT(*) AS n, "
            f"MAX(checkpoint_id) AS head, MIN(checkpoint_id) AS first FROM {{cp}} "
            f"WHERE thread_id = ? AND checkpoint_ns = ? GROUP BY thread_id, checkpoint_ns) g {self._head_joins}",
            tid,
            ns,
        )
        await self._load_branches()
        return self._summary_row(rows[0], await self._head_messages(rows[:1])) if rows else None

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        where, params = self._prefix_where(prefix)
        rows = await self._q(
            f"SELECT thread_id, checkpoint_ns FROM {{cp}}{where} "
            f"GROUP BY thread_id, checkpoint_ns ORDER BY thread_id{self._C}, checkpoint_ns{self._C} LIMIT ?",
            *params,
            int(limit),
        )
        return [address(r["thread_id"], r["checkpoint_ns"]) for r in rows]

    async def all_thread_ids(self) -> list[str]:
        """Every thread: LangGraph's thread ids (a subgraph's namespace is not a thread of
        its own; `all_addresses` has them too), in the order of thread_summaries(sort="thread")."""
        rows = await self._q(
            f"SELECT thread_id FROM {{cp}} WHERE checkpoint_ns = '' "
            f"GROUP BY thread_id ORDER BY thread_id{self._C}"
        )
        return [r["thread_id"] for r in rows]

    async def all_addresses(self) -> list[str]:
        """Every thread and every subgraph namespace (THREAD|NS), each namespace right
        after its thread: what export and prune --all go through."""
        rows = await self._q(
            f"SELECT thread_id, checkpoint_ns FROM {{cp}} "
            f"GROUP BY thread_id, checkpoint_ns ORDER BY thread_id{self._C}, checkpoint_ns{self._C}"
        )
        return [address(r["thread_id"], r["checkpoint_ns"]) for r in rows]

    # ---- checkpoints --------------------------------------------------------------

    def _metadata(self, r: dict[str, Any]) -> CheckpointMetadata:
        meta = _meta_dict(r.get("meta"))
        ns = r["checkpoint_ns"]
        if len(self._where) < WHERE_CACHE_MAX:  # where each id seen lives (see _locate)
            self._where.setdefault(r["checkpoint_id"], (r["thread_id"], ns))
        parent = r.get("parent_checkpoint_id")
        if not parent and ns:
            parent = self._outer(ns, meta)[1]
        source = meta.get("source")
        return CheckpointMetadata(
            thread_id=address(r["thread_id"], ns),
            checkpoint_id=r["checkpoint_id"],
            step=_step(meta),
            parent_checkpoint_id=parent or None,
            created_at=id_time(r["checkpoint_id"]),
            tags=[source] if isinstance(source, str) and source else [],
            summary=_summary(meta),
        )

    @property
    def _meta_cols(self) -> str:
        return f"c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, {self._meta} AS meta"

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            rows = await self._q("SELECT COUNT(*) AS n FROM {cp}")
        else:
            tid, ns = await self._split(thread_id)
            rows = await self._q(
                "SELECT COUNT(*) AS n FROM {cp} WHERE thread_id = ? AND checkpoint_ns = ?", tid, ns
            )
        return int(rows[0]["n"])

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        return [
            self._metadata(r)
            for r in await self._page(*await self._split(thread_id), limit, offset, descending)
        ]

    async def _page(
        self, tid: str, ns: str, limit: int, offset: int, descending: bool
    ) -> list[dict[str, Any]]:
        d = " DESC" if descending else ""
        return await self._q(
            f"SELECT {self._meta_cols} FROM {{cp}} c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            f"ORDER BY c.checkpoint_id{self._C}{d} LIMIT ? OFFSET ?",
            tid,
            ns,
            int(limit),
            int(offset),
        )

    async def _locate(self, checkpoint_id: str) -> dict[str, Any] | None:
        """The metadata row of a checkpoint id (the root namespace's first when several
        threads hold the same id, as LangGraph's copies of a thread do). LangGraph has
        no index on checkpoint_id alone: the (thread, namespace) comes from a scan of
        the primary key's index, then the row by its key."""
        known = self._where.get(checkpoint_id)
        if known is not None:
            keys = [{"thread_id": known[0], "checkpoint_ns": known[1]}]
        elif not self._pg:
            keys = await self._keys_in_key_order(checkpoint_id)
        else:
            keys = await self._q(
                "SELECT thread_id, checkpoint_ns FROM {cp} WHERE checkpoint_id = ?", checkpoint_id
            )
        if not keys:
            return None
        key = min(keys, key=lambda k: (k["checkpoint_ns"].encode(), k["thread_id"].encode()))
        rows = await self._q(
            f"SELECT {self._meta_cols} FROM {{cp}} c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            "AND c.checkpoint_id = ?",
            key["thread_id"],
            key["checkpoint_ns"],
            checkpoint_id,
        )
        return rows[0] if rows else None

    async def _keys_in_key_order(self, checkpoint_id: str) -> list[dict[str, Any]]:
        """SQLite: the (thread_id, checkpoint_ns) holding a checkpoint id, in the primary
        key's order up to the first of the root namespace (the least thread of the root
        namespace's, which `_locate` picks): one row at a time from where the last one
        was (LIMIT 1: the scan of the key's index stops at each match, half of it on
        average instead of all of it), the rest in one scan after a few matches in
        subgraph namespaces. An id that no row holds is one scan of the whole index."""
        base = (
            "SELECT thread_id, checkpoint_ns FROM {cp} WHERE checkpoint_id = ?{after} "
            "ORDER BY thread_id, checkpoint_ns"
        )
        keys: list[dict[str, Any]] = []
        while True:
            after = (keys[-1]["thread_id"], keys[-1]["checkpoint_ns"]) if keys else ()
            cond = " AND (thread_id, checkpoint_ns) > (?, ?)" if after else ""
            if len(keys) >= 8:  # many copies in subgraph namespaces: the rest at once
                return keys + await self._q(base.format(cp="{cp}", after=cond), checkpoint_id, *after)
            found = await self._q(base.format(cp="{cp}", after=cond) + " LIMIT 1", checkpoint_id, *after)
            keys += found
            if not found or found[0]["checkpoint_ns"] == "":
                return keys

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        row = await self._locate(checkpoint_id)
        return self._metadata(row) if row else None

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        found = await self.all_at_step(thread_id, step, 1)
        return found[0] if found else None

    async def all_at_step(self, thread_id: str, step: int, limit: int = 11) -> list[CheckpointMetadata]:
        tid, ns = await self._split(thread_id)
        rows = await self._q(
            f"SELECT {self._meta_cols} FROM {{cp}} c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            f"AND {self._step} = ? ORDER BY c.checkpoint_id{self._C} DESC LIMIT ?",
            tid,
            ns,
            int(step),
            int(limit),
        )
        return [self._metadata(r) for r in rows]

    async def failed_checkpoints(self, thread_id: str, checkpoint_ids: Sequence[str]) -> set[str]:
        tid, ns = await self._split(thread_id)
        ids = list(dict.fromkeys(checkpoint_ids))
        out: set[str] = set()
        for i in range(0, len(ids), 400):
            chunk = ids[i : i + 400]
            rows = await self._q(
                f"SELECT DISTINCT checkpoint_id FROM {self._writes_table} WHERE thread_id = ? AND "
                f"checkpoint_ns = ? AND channel = '__error__' AND checkpoint_id IN ({marks(len(chunk))})",
                tid,
                ns,
                *chunk,
            )
            out |= {r["checkpoint_id"] for r in rows}
        return out

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        row = await self._locate(checkpoint_id)
        if row is None:
            return []
        tid, ns = row["thread_id"], row["checkpoint_ns"]
        rows = await self._q(
            f"SELECT {self._meta_cols} FROM {{cp}} c WHERE c.thread_id = ? AND c.checkpoint_ns = ? "
            f"AND c.parent_checkpoint_id = ? ORDER BY c.checkpoint_id{self._C}",
            tid,
            ns,
            checkpoint_id,
        )
        out = [self._metadata(r) for r in rows]
        out += [
            m
            for sub_ns, m in await self._subgraph_starts(tid)
            if m.parent_checkpoint_id == checkpoint_id and _parent_ns(sub_ns) == ns
        ]
        return out

    async def read_thread_forks(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> tuple[list[CheckpointMetadata], list[str]]:
        """read_thread, and the ids of the page's fork points: checkpoints with more
        than one child in the thread (LangGraph's time travel forks in place: a replay
        from a checkpoint, an update_state on an old one) or a subgraph's first
        checkpoint as a child (a subgraph namespace is a thread of its own here)."""
        tid, ns = await self._split(thread_id)
        raw = await self._page(tid, ns, limit, offset, descending)
        rows = [self._metadata(r) for r in raw]
        if not rows:
            return rows, []
        ids = [m.checkpoint_id for m in rows]
        forks: set[str] = set()
        if offset == 0 and len(raw) < limit:
            # The page is the whole thread: its parent edges are all here.
            seen: set[str] = set()
            for r in raw:
                p = r["parent_checkpoint_id"]
                if p:
                    (forks if p in seen else seen).add(p)
        else:
            # One pass over the thread (by the primary key) for its fork points, not
            # one per chunk of the page's ids.
            found = await self._q(
                "SELECT parent_checkpoint_id AS p FROM {cp} WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND parent_checkpoint_id IS NOT NULL GROUP BY parent_checkpoint_id "
                "HAVING COUNT(*) > 1",
                tid,
                ns,
            )
            forks.update(r["p"] for r in found)
        forks.update(
            m.parent_checkpoint_id for m in await self.branches_of([thread_id]) if m.parent_checkpoint_id
        )
        return rows, [cid for cid in ids if cid in forks]

    async def _subgraph_starts(self, tid: str) -> list[tuple[str, CheckpointMetadata]]:
        """(namespace, first checkpoint) of every subgraph namespace of a thread whose
        first checkpoint names the parent graph's checkpoint it started from."""
        rows = await self._q(
            f"SELECT {self._meta_cols} FROM {{cp}} c WHERE c.thread_id = ? AND c.checkpoint_ns <> '' "
            f"AND c.parent_checkpoint_id IS NULL ORDER BY c.checkpoint_ns{self._C}, "
            f"c.checkpoint_id{self._C}",
            tid,
        )
        return [
            (r["checkpoint_ns"], m)
            for r, m in zip(rows, map(self._metadata, rows), strict=False)
            if m.parent_checkpoint_id
        ]

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        wanted = {await self._split(t) for t in thread_ids}
        out: list[CheckpointMetadata] = []
        for tid in dict.fromkeys(t for t, _ in wanted):
            for ns, m in await self._subgraph_starts(tid):
                if (tid, _parent_ns(ns)) in wanted:
                    out.append(m)
        # Threads agentctl's `branch` made: they hold a copy of the chain up to the
        # branch point (LangGraph's ids), so no parent edge leads into them; their
        # first checkpoint is shown as forked from the branch point.
        await self._load_branches()
        for new, (source, point) in (self._branch_map or {}).items():
            if (source, "") in wanted and new not in thread_ids:
                first = await self.read_thread(new, limit=1)
                if first:
                    m = first[0]
                    out.append(
                        CheckpointMetadata(
                            m.thread_id, m.checkpoint_id, m.step, point, m.created_at, list(m.tags), m.summary
                        )
                    )
        return out

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        rows = await self._q(
            f"SELECT checkpoint_id FROM {{cp}} WHERE checkpoint_id{self._C} >= ? "
            f"AND checkpoint_id{self._C} < ? GROUP BY checkpoint_id ORDER BY checkpoint_id{self._C} LIMIT ?",
            prefix,
            prefix + _TOP,
            int(limit),
        )
        return [r["checkpoint_id"] for r in rows]

    # ---- full checkpoints -----------------------------------------------------------

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        row = await self._locate(checkpoint_id)
        return await self._one(row["thread_id"], row["checkpoint_ns"], checkpoint_id) if row else None

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        page = await self.read_thread(thread_id, limit=1, descending=True)
        return await self._one(*await self._split(thread_id), page[0].checkpoint_id) if page else None

    async def _one(self, tid: str, ns: str, checkpoint_id: str) -> Checkpoint | None:
        cps = await self._load(tid, ns, [checkpoint_id])
        cp = cps[0] if cps else None
        if isinstance(cp, CorruptRowError):
            raise cp
        return cp

    async def _rows(
        self,
        tid: str,
        ns: str,
        ids: Sequence[str] | None = None,
        after: str | None = None,
        limit: int | None = None,
        descending: bool = False,
    ) -> list[dict[str, Any]]:
        """Full checkpoint rows of one thread: these ids, or a page after an id."""
        payload = "c.checkpoint::text AS payload" if self._pg else "c.checkpoint AS payload"
        sql = (
            f"SELECT {self._meta_cols}, c.type, {payload} FROM {{cp}} c "
            "WHERE c.thread_id = ? AND c.checkpoint_ns = ?"
        )
        params: list[Any] = [tid, ns]
        if ids is not None:
            sql += f" AND c.checkpoint_id IN ({marks(len(ids))})"
            params += list(ids)
        if after is not None:
            sql += f" AND c.checkpoint_id{self._C} {'<' if descending else '>'} ?"
            params.append(after)
        sql += f" ORDER BY c.checkpoint_id{self._C}{' DESC' if descending else ''}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return await self._q(sql, *params)

    async def _blobs(self, tid: str, ns: str, ids: Sequence[str]) -> dict[str, list[Any]]:
        """Postgres: the checkpoint_blobs rows of these checkpoints' channel_versions."""
        if not ids:
            return {}
        version = "" if self.shallow else "AND bl.version = v.value "
        sql = (
            "SELECT c.checkpoint_id, bl.channel, bl.type, bl.blob FROM {cp} c "
            "CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v "
            "JOIN checkpoint_blobs bl ON bl.thread_id = c.thread_id "
            f"AND bl.checkpoint_ns = c.checkpoint_ns AND bl.channel = v.key {version}"
            "WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id = ANY(?::text[])"
        )
        out: dict[str, list[Any]] = {}
        for r in await self._q(sql, tid, ns, list(ids)):
            out.setdefault(r["checkpoint_id"], []).append((r["channel"], r["type"], r["blob"]))
        return out

    async def _writes(self, tid: str, ns: str, ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        if not ids:
            return {}
        path = "task_path" if self.has_task_path else "'' AS task_path"
        rows = await self._q(
            f"SELECT checkpoint_id, task_id, {path}, idx, channel, type, "
            f"{self._writes_value} AS value FROM {self._writes_table} "
            f"WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN ({marks(len(ids))})",
            tid,
            ns,
            *ids,
        )
        out: dict[str, list[dict[str, Any]]] = {}
        rows.sort(key=lambda r: (r["checkpoint_id"], r["task_path"] or "", r["task_id"], r["idx"]))
        for r in rows:
            out.setdefault(r["checkpoint_id"], []).append(r)
        return out

    async def _load(
        self, tid: str, ns: str, ids: Sequence[str] | None = None, rows: list[dict[str, Any]] | None = None
    ) -> list[Checkpoint | CorruptRowError]:
        if rows is None:
            rows = await self._rows(tid, ns, ids=ids)
        got = [r["checkpoint_id"] for r in rows]
        writes = await self._writes(tid, ns, got)
        blobs = await self._blobs(tid, ns, got) if self._pg else {}
        out: list[Checkpoint | CorruptRowError] = []
        for r in rows:
            try:
                out.append(
                    self._build(r, writes.get(r["checkpoint_id"], []), blobs.get(r["checkpoint_id"], []))
                )
            except CorruptRowError as exc:
                out.append(exc)
        return out

    def _data(self, r: dict[str, Any], blobs: list[Any], deferred: bool = False) -> Any:
        """A checkpoint row's payload decoded (Postgres: with its blobs' channel values);
        `deferred`: see serde.decode_typed."""
        try:
            if self._pg:
                data = deep.loads(r["payload"])
                values = dict(data.get("channel_values") or {})
                for channel, type_, blob in blobs:
                    if type_ == "empty":
                        values.pop(channel, None)
                        continue
                    values[channel] = serde.decode_typed(type_, blob)
                data["channel_values"] = values
                return data
            return serde.decode_typed(r.get("type"), r.get("payload"), deferred=deferred)
        except (serde.DecodeError, ValueError) as exc:
            raise CorruptRowError(r["checkpoint_id"], "checkpoint", str(exc)) from None

    async def describe(self, metas: Sequence[CheckpointMetadata]) -> list[CheckpointMetadata]:
        """The checkpoints with what `log` and the TUI's list show of each: the node(s)
        that wrote its step (those whose `versions_seen` differ from its parent's) and its
        last message, as `threads list` shows a thread's (`research: [assistant] ...`); the
        user's own metadata keys after them. The first DESCRIBE_MAX of them, each payload
        up to HEAD_SUMMARY_MAX_BYTES (the others, and undecodable ones, as they are)."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for m in metas[:DESCRIBE_MAX]:
            wanted.setdefault(await self._split(m.thread_id), set()).update(
                [m.checkpoint_id] + ([m.parent_checkpoint_id] if m.parent_checkpoint_id else [])
            )
        facts: dict[tuple[str, str, str], tuple[dict[str, Any], str]] = {}
        for (tid, ns), ids in wanted.items():
            for chunk in [sorted(ids)[i : i + 500] for i in range(0, len(ids), 500)]:
                rows = [
                    r
                    for r in await self._rows(tid, ns, ids=chunk)
                    if len(r.get("payload") or b"") <= HEAD_SUMMARY_MAX_BYTES
                ]
                blobs = await self._blobs(tid, ns, [r["checkpoint_id"] for r in rows]) if self._pg else {}
                for r in rows:
                    try:  # the whole payload is not decoded: its extension values (messages)
                        # are left packed, and the two values read are decoded and capped
                        # (undefer caps what it gives)
                        data = self._data(r, blobs.get(r["checkpoint_id"], []), deferred=True)
                    except CorruptRowError:
                        continue
                    if not isinstance(data, dict):
                        continue
                    kind = r.get("type")
                    seen = deep.cap(data.get("versions_seen"))
                    values = data.get("channel_values")
                    msgs = values.get("messages") if isinstance(values, dict) else None
                    msgs = _unwrap_snapshot(
                        serde.undefer(msgs, kind) if isinstance(msgs, (serde.Deferred, dict)) else msgs
                    )
                    text = ""
                    for m in reversed(msgs) if isinstance(msgs, list) else ():  # the last message's
                        m = serde.transcript(serde.undefer(m, kind))
                        if isinstance(m, dict):
                            text = _message_summary([m])
                            break
                    facts[(tid, ns, r["checkpoint_id"])] = (seen if isinstance(seen, dict) else {}, text)
        out = []
        for m in metas:
            tid, ns = await self._split(m.thread_id)
            own = facts.get((tid, ns, m.checkpoint_id))
            if own is None:
                out.append(m)
                continue
            parent = facts.get((tid, ns, m.parent_checkpoint_id or ""), ({}, ""))[0]
            nodes = sorted(
                str(n)
                for n, v in own[0].items()
                if n not in ("__input__", "__interrupt__") and parent.get(n) != v
            )
            text = ": ".join(p for p in (", ".join(nodes), own[1]) if p)
            out.append(replace(m, summary=one_line(" ".join(p for p in (text, m.summary) if p), 120)))
        return out

    def _build(self, r: dict[str, Any], writes: list[dict[str, Any]], blobs: list[Any]) -> Checkpoint:
        meta = self._metadata(r)
        md = _meta_dict(r.get("meta"))
        data = self._data(r, blobs)
        if not isinstance(data, dict):
            return Checkpoint(
                metadata=meta,
                messages=[],
                state={"__checkpoint__": data, "__metadata__": md},
                tools_result={},
                next_node="",
            )
        raw_values = data.get("channel_values") or {}
        if isinstance(raw_values, dict):
            values = {k: serde.transcript(_unwrap_snapshot(v)) for k, v in raw_values.items()}
            delta = md.get("counters_since_delta_snapshot")
            for channel in delta if isinstance(delta, dict) else {}:
                if channel not in values and channel in (data.get("channel_versions") or {}):
                    values[channel] = dict(DELTA_MARKER)
        else:
            values = {"__channel_values__": raw_values}
        messages = values.get("messages")
        messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
        state: dict[str, Any] = {
            k: v for k, v in values.items() if not (isinstance(k, str) and is_internal_channel(k))
        }
        internal = {
            k: v for k, v in values.items() if isinstance(k, str) and is_internal_channel(k) and v is not None
        }
        state["__metadata__"] = md
        if internal:
            state["__internal__"] = internal
        tools = self._tools_result(data, messages, writes)
        return Checkpoint(
            metadata=meta,
            messages=messages,
            state=state,
            tools_result=tools,
            next_node=", ".join(next_nodes(data)),
        )

    @staticmethod
    def _tools_result(
        data: dict[str, Any], messages: list[dict[str, Any]], writes: list[dict[str, Any]]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        updated = data.get("updated_channels")
        if messages and (updated is None or "messages" in (updated or [])):
            trailing = list(takewhile(lambda m: m.get("role") == "tool", reversed(messages)))
            if trailing:
                out["tool_messages"] = trailing[::-1]
        pending: list[dict[str, Any]] = []
        for w in writes:
            try:
                value = serde.transcript(serde.decode_typed(w["type"], w["value"]))
            except serde.DecodeError as exc:
                value = serde.opaque(w["type"] or "?", len(w["value"] or b""), f"undecodable: {exc}")
            item = {"task_id": w["task_id"], "channel": w["channel"], "value": value}
            if w.get("task_path"):
                item["task_path"] = w["task_path"]
            if w["channel"] in SPECIAL_WRITES:
                out.setdefault(w["channel"], []).append({k: v for k, v in item.items() if k != "channel"})
            else:
                item["idx"] = w["idx"]
                pending.append(item)
        if pending:
            out["writes"] = pending
        return out

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        addrs = list(thread_ids) if thread_ids is not None else await self.all_addresses()
        batch = max(1, int(batch))
        for addr in addrs:
            tid, ns = await self._split(addr)
            after: str | None = None
            while True:
                rows = await self._rows(tid, ns, after=after, limit=batch)
                if not rows:
                    break
                for cp in await self._load(tid, ns, rows=rows):
                    yield cp
                if len(rows) < batch:
                    break
                after = rows[-1]["checkpoint_id"]

    # ---- search and doctor ----------------------------------------------------------

    async def _threads_by_head(self) -> list[tuple[str, str]]:
        """The (thread, namespace)s, newest head first (the order `search` goes through them)."""
        return [
            (r["thread_id"], r["checkpoint_ns"])
            for r in await self._q(
                f"SELECT thread_id, checkpoint_ns, MAX(checkpoint_id) AS head FROM {{cp}} "
                f"GROUP BY thread_id, checkpoint_ns ORDER BY MAX(checkpoint_id){self._C} DESC"
            )
        ]

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """A scan, newest first, of at most SEARCH_SCAN_MAX checkpoints: their messages,
        tool results and (without `role`) other channel values (`places`),
        case-insensitively."""
        self.last_search_path = "scan"
        self.last_search_note = ""
        wanted = check_search_places(places)
        if not text:
            return []
        needle = text.lower()
        raw_needle = self._raw_needle(needle)
        if not scan and not self._pg and len(needle) >= 3:
            found = await self._index_search(text, needle, raw_needle, thread_id, role, limit, wanted)
            if found is not None:
                self.last_search_path = "index"
                return found
        hits: list[SearchHit] = []
        scanned = 0
        threads = [await self._split(thread_id)] if thread_id is not None else await self._threads_by_head()
        for tid, ns in threads:
            after: str | None = None
            while scanned < SEARCH_SCAN_MAX and len(hits) < limit:
                rows = await self._rows(tid, ns, after=after, limit=200, descending=True)
                if not rows:
                    break
                after = rows[-1]["checkpoint_id"]
                scanned += len(rows)
                await self._match(tid, ns, rows, raw_needle, text, needle, role, wanted, limit, hits)
            if scanned >= SEARCH_SCAN_MAX or len(hits) >= limit:
                break
        hits.sort(key=lambda h: h.checkpoint_id, reverse=True)
        return hits[:limit]

    @staticmethod
    def _raw_needle(needle: str) -> bytes | None:
        """The needle's bytes when a payload without them cannot match: msgpack (and
        JSON) keep plain ASCII text as it is (text JSON escapes, with quotes or
        backslashes, is looked for the slow way)."""
        plain_ascii = needle.isascii() and needle.isprintable() and not any(c in needle for c in '"\\')
        return needle.encode("ascii") if plain_ascii else None

    async def _match(
        self,
        tid: str,
        ns: str,
        rows: list[dict[str, Any]],
        raw_needle: bytes | None,
        text: str,
        needle: str,
        role: str | None,
        wanted: Any,
        limit: int,
        hits: list[SearchHit],
    ) -> None:
        """Add the hits of checkpoint rows of one thread, in their order, until there
        are `limit` (the scan's test, also the side index's on its candidates)."""
        if raw_needle is not None and not self._pg:
            # a row whose checkpoint and writes lack the bytes is not decoded
            ids = [r["checkpoint_id"] for r in rows]
            keep = {r["checkpoint_id"] for r in rows if raw_needle in bytes(r["payload"] or b"").lower()}
            keep |= {
                cid
                for cid, ws in (await self._writes(tid, ns, ids)).items()
                if any(raw_needle in bytes(w["value"] or b"").lower() for w in ws)
            }
            rows = [r for r in rows if r["checkpoint_id"] in keep]
        for cp in await self._load(tid, ns, rows=rows):
            if isinstance(cp, CorruptRowError):
                continue
            hits.extend(self._hits(cp, text, needle, role, wanted))
            if len(hits) >= limit:
                break

    @staticmethod
    def _hits(
        cp: Checkpoint, text: str, needle: str, role: str | None, places: Any = SEARCH_PLACES
    ) -> list[SearchHit]:
        hits = search_messages(cp.metadata, cp.messages, cp.tools_result, text, role, places=places)
        if hits or role is not None or "state" not in places:
            return hits
        rest = {k: v for k, v in cp.state.items() if k not in ("messages", "__metadata__")}
        body = json.dumps(rest, ensure_ascii=False, default=str)
        if needle in body.lower():
            m = cp.metadata
            tokens = json_hit_tokens(json.loads(body), needle)
            hits.append(
                SearchHit(
                    m.thread_id,
                    m.checkpoint_id,
                    m.step,
                    "state",
                    None,
                    snippet_around(body, text),
                    hit_path("state", tokens or []),
                )
            )
        return hits

    # ---- the side search index (agentctl.storage.textindex) ----------------------------

    _SOURCE_COLUMNS = (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "meta",
        "type",
        "payload",
        "writes",
    )

    def text_source(self) -> Any:
        """The side index's view of a SqliteSaver database: one document per checkpoint
        (key: the checkpoints table's rowid; SqliteSaver's `INSERT OR REPLACE` gives a
        rewritten checkpoint a new one), newest first by checkpoint id: the texts the
        scan matches, lower-cased as it compares: its messages' bodies, its tool
        results and its other channel values as the scan serialises them, decoded by
        `serde` (nothing unpickled or imported). Its pending writes (the `writes` rows
        of the checkpoint, written after it) are part of it: their lengths are in the
        fingerprint, so a write added later re-indexes the checkpoint."""
        from agentctl.storage.textindex import Source

        wt = self._writes_table
        same = (
            "w.thread_id = checkpoints.thread_id AND w.checkpoint_ns = checkpoints.checkpoint_ns "
            "AND w.checkpoint_id = checkpoints.checkpoint_id"
        )
        path = "w.task_path" if self.has_task_path else "''"
        writes = (
            f"(SELECT json_group_array(json_array(w.task_id, {path}, w.idx, w.channel, w.type, "
            f"hex(w.value))) FROM src.{wt} w WHERE {same})"
        )
        fingerprint = (
            "coalesce(length(checkpoint), -1) + coalesce(length(metadata), -1) * 1000 + "
            f"(SELECT coalesce(sum(length(w.value)), 0) + count(*) * 7 FROM src.{wt} w "
            f"WHERE {same}) * 1000003"
        )
        columns = (
            "thread_id",
            "checkpoint_ns",
            "checkpoint_id",
            "parent_checkpoint_id",
            "CAST(metadata AS TEXT)",
            "type",
            "checkpoint",
            writes,
        )

        def docs(values: Sequence[Any]) -> list[tuple[int, str]]:
            r = dict(zip(self._SOURCE_COLUMNS, values, strict=False))
            ws = []
            try:
                for task_id, task_path, idx, channel, type_, value in json.loads(r.pop("writes") or "[]"):
                    ws.append(
                        {
                            "task_id": task_id,
                            "task_path": task_path,
                            "idx": idx,
                            "channel": channel,
                            "type": type_,
                            "value": bytes.fromhex(value) if value is not None else None,
                        }
                    )
            except (TypeError, ValueError):
                ws = []
            ws.sort(key=lambda w: (w["task_path"] or "", w["task_id"], w["idx"]))
            try:
                cp = self._build(r, ws, [])
            except CorruptRowError:
                return []
            return self._search_texts(cp)

        return Source(
            format="langgraph",
            table="checkpoints",
            key="rowid",
            sort="checkpoint_id",
            fingerprint=fingerprint,
            columns=columns,
            kinds=("messages", "tools", "state"),
            docs=docs,
        )

    @staticmethod
    def _search_texts(cp: Checkpoint) -> list[tuple[int, str]]:
        """[(kind, text)] of what `_hits` matches in a checkpoint, lower-cased: each
        message's body (0), the tool results serialised, with their keys and strings
        that serialising escapes (1), the other channel values serialised (2)."""
        out: list[tuple[int, str]] = []
        for m in cp.messages:
            content = m.get("content", "")
            out.append((0, (content if isinstance(content, str) else dumps(content)).lower()))
        tools = cp.tools_result
        if isinstance(tools, dict) and tools:
            out.append((1, dumps(tools).lower()))
            stack: list[Any] = [tools]
            while stack:  # (json_hit_tokens also matches a key or string as it is)
                v = stack.pop()
                if isinstance(v, dict):
                    for k, x in v.items():
                        k = str(k)
                        if json.dumps(k, ensure_ascii=False)[1:-1] != k:
                            out.append((1, k.lower()))
                        stack.append(x)
                elif isinstance(v, list):
                    stack.extend(v)
                elif isinstance(v, str) and json.dumps(v, ensure_ascii=False)[1:-1] != v:
                    out.append((1, v.lower()))
        rest = {k: v for k, v in cp.state.items() if k not in ("messages", "__metadata__")}
        out.append((2, json.dumps(rest, ensure_ascii=False, default=str).lower()))
        return out

    async def search_index(self, action: str) -> dict[str, Any]:
        """`agentctl index build|status|drop` on SQLite (a side file; the database is only read)."""
        from agentctl.storage import textindex

        if self._pg:
            raise Unsupported(self.format.name, "a search index on Postgres (`agentctl index`)")
        await self.connect()
        return await textindex.index_action(self._db.path, self.text_source(), action, "checkpoints")

    async def _index_search(
        self,
        text: str,
        needle: str,
        raw_needle: bytes | None,
        thread_id: str | None,
        role: str | None,
        limit: int,
        wanted: Any,
    ) -> list[SearchHit] | None:
        """The hits through the side index when there is one, else None. The scan's
        order: threads by their newest checkpoint, each thread's checkpoints newest
        first, until `limit` hits, sorted by checkpoint id; only the candidates are read
        (and the scan's cap of SEARCH_SCAN_MAX checkpoints does not apply)."""
        from agentctl.storage import textindex

        session = await self.open_side_index()
        if session is None:
            return None
        side = textindex.side_path(self._db.path)
        cond, params = "", []
        if thread_id is not None:
            cond, params = " AND thread_id = ? AND checkpoint_ns = ?", list(await self._split(thread_id))

        def located(keys: list[int]) -> dict[tuple[str, str], list[str]]:
            """{(thread, namespace): [checkpoint id, ...]} of the candidates."""
            out: dict[tuple[str, str], list[str]] = {}
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                for tid, ns, cid in session.con.execute(
                    f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM src.checkpoints "
                    f"WHERE rowid IN ({marks(len(chunk))}){cond}",
                    [*chunk, *params],
                ):
                    out.setdefault((tid, ns), []).append(cid)
            return out

        def in_thread(tid: str, ns: str, keys: set[int]) -> list[str]:
            """The ids of a thread's candidates, newest first (its primary key's index)."""
            return [
                cid
                for rid, cid in session.con.execute(
                    "SELECT rowid, checkpoint_id FROM src.checkpoints WHERE thread_id = ? AND checkpoint_ns = ? "
                    "ORDER BY checkpoint_id DESC",
                    (tid, ns),
                )
                if rid in keys
            ]

        try:
            try:
                keys = await asyncio.to_thread(lambda: list(session.candidates(needle)))
                # Few candidates: each located by its rowid. Many (a common word): the
                # threads in the scan's order, each one's candidates from its rows' ids,
                # until there are enough hits (the scan would stop as early).
                found = await asyncio.to_thread(located, keys) if len(keys) <= LAZY_CANDIDATES else None
            except sqlite3.DatabaseError as exc:  # a side file damaged under our feet
                self.last_search_note = textindex.fallback_note(side, f"unreadable ({exc})")
                return None
            # the scan's order of threads: the newest head first
            if found is None and thread_id is not None:
                order = [(params[0], params[1])]
            elif found is None or len(found) > 50:  # its own query (a pass over the primary key's index)
                order = await self._threads_by_head()
            else:  # a seek per thread (then by thread and namespace)
                heads: list[tuple[str, str, str]] = []
                for tid, ns in found:
                    rows = await self._q(
                        "SELECT MAX(checkpoint_id) AS head FROM {cp} WHERE thread_id = ? "
                        "AND checkpoint_ns = ?",
                        tid,
                        ns,
                    )
                    heads.append((rows[0]["head"] or "", tid, ns))
                heads.sort(key=lambda h: (h[1], h[2]))
                heads.sort(key=lambda h: h[0], reverse=True)
                order = [(tid, ns) for _head, tid, ns in heads]
            keyset = set(keys) if found is None else set()
            hits: list[SearchHit] = []
            for tid, ns in order:
                if found is not None:
                    if (tid, ns) not in found:
                        continue
                    ids = sorted(found[(tid, ns)], reverse=True)
                else:
                    ids = await asyncio.to_thread(in_thread, tid, ns, keyset)
                for i in range(0, len(ids), 200):
                    rows = await self._rows(tid, ns, ids=ids[i : i + 200])
                    rows.sort(key=lambda r: r["checkpoint_id"], reverse=True)
                    await self._match(tid, ns, rows, raw_needle, text, needle, role, wanted, limit, hits)
                    if len(hits) >= limit:
                        break
                if len(hits) >= limit:
                    break
        finally:
            session.close()
        hits.sort(key=lambda h: h.checkpoint_id, reverse=True)
        return hits[:limit]

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        """`stats`: threads, checkpoints and the bytes stored (checkpoints and metadata,
        pending writes, Postgres's blobs), per thread (subgraphs included), largest first."""
        if user is not None or days is not None:
            raise Unsupported("langgraph", "stats --user/--days (checkpoints have no users)")
        size = "OCTET_LENGTH({})" if self._pg else "LENGTH(CAST({} AS BLOB))"
        text = "CAST({} AS TEXT)" if self._pg else "{}"
        cp = f"{size.format(text.format('checkpoint'))} + {size.format(text.format('metadata'))}"
        parts = [
            f"SELECT thread_id, COUNT(*) AS n, SUM({cp}) AS bytes FROM checkpoints GROUP BY thread_id",
            f"SELECT thread_id, 0 AS n, SUM({size.format(self._writes_value)}) AS bytes "
            f"FROM {self._writes_table} GROUP BY thread_id",
        ]
        if self._pg:
            parts.append(
                f"SELECT thread_id, 0 AS n, SUM({size.format('blob')}) AS bytes FROM checkpoint_blobs "
                "GROUP BY thread_id"
            )
        per = await self._q(
            f"SELECT thread_id, SUM(n) AS n, SUM(COALESCE(bytes, 0)) AS bytes FROM "
            f"({' UNION ALL '.join(parts)}) t GROUP BY thread_id HAVING SUM(n) > 0 "
            f"ORDER BY 3 DESC, thread_id{self._C}"
        )
        rows = [
            {"thread_id": r["thread_id"], "checkpoints": int(r["n"]), "bytes": int(r["bytes"])} for r in per
        ]
        return {
            "threads": len(rows),
            "checkpoints": sum(r["checkpoints"] for r in rows),
            "bytes": sum(r["bytes"] for r in rows),
            "bytes_of": "checkpoints, writes and blobs",
            "per_thread": rows,
            "tags": {},
        }

    async def written_by(self) -> list[str]:
        """LangGraph (Python) and/or LangGraph.js, from the rows: LangGraph.js stores
        JSON ('json' rows on SQLite; integer channel versions on Postgres), Python
        msgpack (string versions). Stops at the first row of each."""
        if self._pg:
            has = (
                "SELECT 1 FROM checkpoints c CROSS JOIN LATERAL jsonb_each(c.checkpoint -> 'channel_versions') v "
                "WHERE jsonb_typeof(v.value) = ? LIMIT 1"
            )
            py, js = bool(await self._q(has, "string")), bool(await self._q(has, "number"))
        else:
            js = bool(await self._q("SELECT 1 FROM checkpoints WHERE type = 'json' LIMIT 1"))
            py = bool(await self._q("SELECT 1 FROM checkpoints WHERE type IS NULL OR type <> 'json' LIMIT 1"))
        return [name for name, yes in (("LangGraph (Python)", py), ("LangGraph.js", js)) if yes]

    async def doctor(self, limit: int = 100) -> list[Problem]:
        self.require(Capability.DOCTOR, "doctor")
        problems: list[Problem] = []
        wt = self._writes_table
        for table in ("checkpoints", wt) + (("checkpoint_blobs",) if self._pg else ()):
            for r in await self._q(f"SELECT type, COUNT(*) AS n FROM {table} GROUP BY type"):
                t = r["type"] or ""
                if t == "pickle" or "+" in t:
                    what = "pickled" if t == "pickle" else f"encrypted ({t})"
                    problems.append(
                        Problem(
                            "warning", "opaque-payloads", table, f"{r['n']} {what} payloads: shown as opaque"
                        )
                    )
        if not (self._pg and self.shallow):
            for r in await self._q(
                "SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id "
                "FROM checkpoints c LEFT JOIN checkpoints p ON p.thread_id = c.thread_id "
                "AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_checkpoint_id "
                "WHERE c.parent_checkpoint_id IS NOT NULL AND p.checkpoint_id IS NULL "
                f"LIMIT {int(limit)}"
            ):
                problems.append(
                    Problem(
                        "warning",
                        "missing-parent",
                        address(r["thread_id"], r["checkpoint_ns"]),
                        f"checkpoint {r['checkpoint_id']}'s parent {r['parent_checkpoint_id']} is not "
                        "in the database",
                    )
                )
            for r in await self._q(
                f"SELECT w.thread_id, w.checkpoint_ns, w.checkpoint_id, COUNT(*) AS n FROM {wt} w "
                "LEFT JOIN checkpoints c ON c.thread_id = w.thread_id AND c.checkpoint_ns = "
                "w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id WHERE c.checkpoint_id IS NULL "
                f"GROUP BY w.thread_id, w.checkpoint_ns, w.checkpoint_id LIMIT {int(limit)}"
            ):
                problems.append(
                    Problem(
                        "warning",
                        "orphan-writes",
                        address(r["thread_id"], r["checkpoint_ns"]),
                        f"{r['n']} pending writes of checkpoint {r['checkpoint_id']}, which is not "
                        "in the database",
                    )
                )
        if not self._pg:  # Postgres keeps metadata as jsonb: always valid
            problems.extend(await self._bad_metadata(limit))
        problems.extend(await super().doctor(limit))  # the side search index's
        return problems

    async def _bad_metadata(self, limit: int) -> list[Problem]:
        """SQLite rows whose metadata is not UTF-8 or not JSON SQLite can read (shown
        decoded with replacement characters, or as `__invalid__`)."""
        out: list[Problem] = []
        rows = await self._q(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, CAST(metadata AS BLOB) AS meta, "
            "json_valid(CAST(metadata AS TEXT)) AS ok FROM checkpoints WHERE metadata IS NOT NULL"
        )
        for r in rows:
            raw = bytes(r["meta"])
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                why = f"is not UTF-8 (byte {exc.start}): shown with replacement characters"
            else:
                if r["ok"]:
                    continue
                number = deep.non_json_number(raw)
                why = (
                    f"is not JSON ({number}): shown with a placeholder"
                    if number
                    else "is not JSON SQLite can read (malformed or nested too deep)"
                )
            out.append(
                Problem(
                    "warning",
                    "bad-metadata",
                    address(r["thread_id"], r["checkpoint_ns"]),
                    f"checkpoint {r['checkpoint_id']}'s metadata {why}",
                )
            )
            if len(out) >= limit:
                break
        return out


def opener(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    """The format's store (its FormatSpec names this opener)."""
    return LangGraphStore(kind, target, readonly=readonly, **kwargs)
