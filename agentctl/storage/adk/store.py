"""Reads of Google ADK's DatabaseSessionService tables (see the package's docstring for
the mapping, `events.py` for the transcript and the state fold)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, NamedTuple

from agentctl.errors import CorruptRowError, SchemaError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.adk import FORMAT, layout
from agentctl.storage.adk.events import (
    APP,
    USER,
    StateFold,
    apply_rewinds,
    decode_json,
    first_of,
    rewind_target,
    searchable_text,
    state_delta,
    summary_of,
    tags_of,
    to_message,
    tools_of,
)
from agentctl.storage.adk.legacy import OPLOG
from agentctl.storage.contract import SEARCH_PLACES, Store, local_file_of, skip_copies
from agentctl.storage.journal.ops import LOG
from agentctl.storage.search import message_hit_path, snippet_around
from agentctl.storage.sqlconn import SteppedStore, check_sort, connection, like_escape, prefix_range
from agentctl.storage.sqlutil import marks
from agentctl.storage.timefmt import iso_utc

#: a thread id's parts are joined by this
SEP = "/"
_V0_COLUMNS = (
    "author",
    "content",
    "error_code",
    "error_message",
    "branch",
    "partial",
    "turn_complete",
    "interrupted",
)
OPAQUE = "(pickled in the v0 layout; agentctl never unpickles it)"


#: a scan's order, newest first: the event's time, then its key (unique together)
_SCAN_KEY = ("timestamp", "id", "app_name", "user_id", "session_id")


def _order_key(value: Any) -> tuple[int, Any]:
    """A value as SQLite's ORDER BY compares it (NULL, numbers, text in code point
    order as BINARY compares UTF-8, blobs)."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))


class Rewinds(NamedTuple):
    """A session's rewinds (`ADKStore._rewinds`)."""

    dropped: frozenset[str]  # the events a later rewind drops
    parents: dict[str, str | None]  # a rewind event -> the event it rewound to


NO_REWINDS = Rewinds(frozenset(), {})


def thread_id_of(app: str, user: str, session: str) -> str:
    return f"{app}{SEP}{user}{SEP}{session}"


class ADKStore(SteppedStore):
    format = FORMAT

    def __init__(self, kind: str, target: str, *, readonly: bool = True, **_: Any) -> None:
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._db = connection(kind, target, self._check, readonly=readonly)
        self.display_name = self._db.display_name
        self.layout = ""
        self._event_cols = ""
        self.has_app_states = self.has_user_states = False
        self._C = ' COLLATE "C"' if kind == "postgres" else ""
        self._TID = "(app_name || '/' || user_id || '/' || session_id)"
        self._slashes: bool | None = None
        self._origin_map: dict[str, tuple[str, str]] | None = None

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        found = layout(tables)
        if found is None:
            raise SchemaError(
                "not a Google ADK session database (want tables sessions and events "
                "with DatabaseSessionService's columns)"
            )
        self.layout = found
        if found == "v1":
            self._event_cols = "id, app_name, user_id, session_id, invocation_id, timestamp, event_data"
        else:  # never the pickled `actions`
            cols = [c for c in _V0_COLUMNS if c in tables["events"]]
            self._event_cols = "id, app_name, user_id, session_id, invocation_id, timestamp" + "".join(
                f", {c}" for c in cols
            )
        self.has_app_states = {"app_name", "state"} <= tables.get("app_states", set())
        self.has_user_states = {"app_name", "user_id", "state"} <= tables.get("user_states", set())

    doctor_checks: tuple[str, ...] = ("search_index", "session_state", "invalid_json")

    def json_places(self) -> list[tuple[str, str, str, Callable[[dict[str, Any]], str]]]:
        places: list[tuple[str, str, str, Callable[[dict[str, Any]], str]]] = [
            (
                "sessions",
                "state",
                "app_name, user_id, id",
                lambda r: thread_id_of(r["app_name"], r["user_id"], r["id"]),
            )
        ]
        if self.layout == "v1":
            places.append(("events", "event_data", "id", lambda r: str(r["id"])))
        if self.has_app_states:
            places.append(("app_states", "state", "app_name", lambda r: f"app {r['app_name']}"))
        if self.has_user_states:
            places.append(
                (
                    "user_states",
                    "state",
                    "app_name, user_id",
                    lambda r: f"user {r['app_name']}/{r['user_id']}",
                )
            )
        return places

    async def doctor(self, limit: int = 100) -> list[Any]:
        """The side search index (SQLite) and sessions whose state is not their events'
        fold (`doctor.py`)."""
        from agentctl.storage.adk.doctor import state_problems

        return await super().doctor(limit) + await state_problems(self, limit)

    async def fix(self) -> list[str]:
        """`doctor --fix`: sessions' state set to their events' fold (undoable)."""
        history: Any = self.history()  # ADKHistory: the spec names it, this module does not import it
        done = await history.fix_state()
        return [
            f"op {op}: set the state of {tid} to its events' fold ({', '.join(map(repr, keys))}); "
            "`agentctl undo` reverts it"
            for op, tid, keys in done
        ]

    async def _origins(self) -> dict[str, tuple[str, str]]:
        """{branch thread: (source thread, source checkpoint)} of agentctl's branches not
        undone (read once per store)."""
        if self._origin_map is None:
            await self.connect()
            found: dict[str, tuple[str, str]] = {}
            for log in (LOG, OPLOG):  # the journal; the previous release's log until it is moved there
                if await self._db.table_exists(log):
                    for r in await self._q(f"SELECT details FROM {log} WHERE kind = 'branch' AND undone = 0"):
                        d = json.loads(r["details"])
                        found["/".join(d["key"])] = (d["from_thread"], d["from"])
            self._origin_map = found
        return self._origin_map

    async def without_copies(self, line: list[CheckpointMetadata]) -> list[CheckpointMetadata]:
        # a branch session holds copies of events 1..N, its first naming the fork point
        forks = {thread: origin[1] for thread, origin in (await self._origins()).items()}
        return skip_copies(line, forks) if forks else line

    async def _first_parent(self, rows: list[dict[str, Any]]) -> str | None:
        """The parent of a page's first row when it is step 1: the branch point of a
        branch made by agentctl, else None."""
        if not rows or rows[0]["step"] != 1:
            return None
        origin = (await self._origins()).get(
            thread_id_of(rows[0]["app_name"], rows[0]["user_id"], rows[0]["session_id"])
        )
        return origin[1] if origin else None

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        return await self._db.query(sql, *params)

    # ---- rows ----------------------------------------------------------------------

    def _event(self, row: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """The event of a row as a dict (v1: its event_data; v0: its plain columns)."""
        if self.layout == "v1":
            data, err = decode_json(row.get("event_data"))
            if data is None and err is None:  # ADK reads a NULL event_data as an empty event
                data = {}
            if err is not None or not isinstance(data, dict):
                return None, err or "event_data is not an object"
            data = dict(data)
            data.setdefault("id", row["id"])
            data["invocation_id"] = row.get("invocation_id") or data.get("invocation_id")
            return data, None
        content, err = decode_json(row.get("content"))
        ev = {k: row.get(k) for k in _V0_COLUMNS if row.get(k) is not None and k != "content"}
        ev.update(
            id=row["id"], invocation_id=row.get("invocation_id"), content=content, actions_opaque=OPAQUE
        )
        return ev, None

    async def _key(self, thread_id: str, fetch: Any = None) -> tuple[str, str, str] | None:
        """(app, user, session) of a thread id (`fetch`: a write's transaction's)."""
        parts = thread_id.split(SEP)
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        if len(parts) < 3:
            return None
        rows = await (fetch or self._q)(
            "SELECT app_name, user_id, id FROM sessions WHERE "
            "app_name || '/' || user_id || '/' || id = ? ORDER BY app_name, user_id, id "
            "LIMIT 1",
            thread_id,
        )
        return (rows[0]["app_name"], rows[0]["user_id"], rows[0]["id"]) if rows else None

    async def _rows(
        self,
        key: tuple[str, str, str],
        first_step: int,
        last_step: int | None,
    ) -> list[dict[str, Any]]:
        """Events of steps first_step..last_step (None: to the end) in ADK's order
        (timestamp, id), with the one before them; each with its `step`."""
        start = max(first_step - 1, 1)
        limit = 2**62 if last_step is None else max(last_step - start + 1, 0)
        if limit == 0:
            return []
        rows = await self._q(
            f"SELECT {self._event_cols} FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
            f"ORDER BY timestamp, id LIMIT ? OFFSET ?",
            *key,
            limit,
            start - 1,
        )
        for i, r in enumerate(rows):
            r["step"] = start + i
        return rows

    def _meta(
        self, row: dict[str, Any], parent: str | None, msg: dict[str, Any], rewinds: Rewinds = NO_REWINDS
    ) -> CheckpointMetadata:
        tags = tags_of(msg)
        if row["id"] in rewinds.dropped:
            tags.append("rewound")
        return CheckpointMetadata(
            thread_id=thread_id_of(row["app_name"], row["user_id"], row["session_id"]),
            checkpoint_id=row["id"],
            step=row["step"],
            parent_checkpoint_id=rewinds.parents.get(row["id"], parent),
            created_at=iso_utc(row["timestamp"]),
            tags=tags,
            summary=summary_of(msg),
        )

    async def _rewinds(self, key: tuple[str, str, str]) -> Rewinds:
        """The session's rewinds, as ADK's `_apply_rewinds` reads them (`apply_rewinds`):
        the ids of the events a later rewind event drops (tagged "rewound"), and the
        parent of each rewind event that drops some: the event before the first one it
        drops (the step it rewound to), so `tree` shows the dropped range as a fork."""
        if self.layout != "v1":
            return NO_REWINDS
        if not await self._q(
            "SELECT 1 AS x FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
            "AND CAST(event_data AS TEXT) LIKE ? LIMIT 1",
            *key,
            "%rewind_before_invocation_id%",
        ):
            return NO_REWINDS
        rows = await self._q(
            "SELECT id, invocation_id, event_data FROM events WHERE app_name = ? AND "
            "user_id = ? AND session_id = ? ORDER BY timestamp, id",
            *key,
        )
        invocations = [r["invocation_id"] for r in rows]
        targets = [rewind_target(self._event(r)[0]) for r in rows]
        _kept, dropped = apply_rewinds(invocations, targets)
        first = first_of(invocations)
        parents: dict[str, str | None] = {}
        for i, target in enumerate(targets):
            start = first.get(target) if target else None
            if start is not None and start < i:
                parents[rows[i]["id"]] = rows[start - 1]["id"] if start else None
        return Rewinds(frozenset(rows[i]["id"] for i in dropped), parents)

    def _metas(
        self,
        rows: list[dict[str, Any]],
        first_step: int,
        rewinds: Rewinds = NO_REWINDS,
        parent: str | None = None,
    ) -> list[CheckpointMetadata]:
        out = []
        prev = parent
        for r in rows:
            if r["step"] >= first_step:
                ev, err = self._event(r)
                msg = to_message(ev) if err is None else {"role": "invalid", "content": err}
                out.append(self._meta(r, prev, msg, rewinds))
            prev = r["id"]
        return out

    async def _states(
        self, key: tuple[str, str, str]
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """The stored (session, app, user) states of a session."""

        def obj(value: Any) -> dict[str, Any]:
            data, _err = decode_json(value)
            return data if isinstance(data, dict) else {}

        out = []  # each table's row by the first n of (app_name, user_id, id)
        for table, n, there in (
            ("sessions", 3, True),
            ("app_states", 1, self.has_app_states),
            ("user_states", 2, self.has_user_states),
        ):
            where = " AND ".join(f"{c} = ?" for c in ("app_name", "user_id", "id")[:n])
            rows = await self._q(f"SELECT state FROM {table} WHERE {where}", *key[:n]) if there else []
            out.append(obj(rows[0]["state"]) if rows else {})
        return out[0], out[1], out[2]

    async def _shared_deltas(self, key: tuple[str, str, str]) -> list[tuple[Any, dict[str, Any]]]:
        """(timestamp, delta) of the other sessions' events that set `app:` keys of this
        session's app or `user:` keys of its user, in ADK's order; each delta keeps only
        those keys."""
        rows = await self._q(
            "SELECT user_id, timestamp, event_data FROM events WHERE app_name = ? "
            "AND NOT (user_id = ? AND session_id = ?) "
            "AND (CAST(event_data AS TEXT) LIKE '%app:%' OR CAST(event_data AS TEXT) LIKE '%user:%') "
            "ORDER BY timestamp, id",
            *key,
        )
        out = []
        for r in rows:
            data, err = decode_json(r["event_data"])
            if err is not None or not isinstance(data, dict):
                continue
            delta = {
                k: v
                for k, v in state_delta(data).items()
                if k.startswith(APP) or (k.startswith(USER) and r["user_id"] == key[1])
            }
            if delta:
                out.append((r["timestamp"], delta))
        return out

    async def _build(
        self, key: tuple[str, str, str], rows: list[dict[str, Any]], upto: int | None = None
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        """Checkpoints of a session's events (rows: all of them, from step 1); only the one
        at step `upto` when given."""
        events = [self._event(r) for r in rows]
        session, app, user = await self._states(key)
        shared = await self._shared_deltas(key) if self.layout == "v1" else []
        fold = (
            StateFold(session, app, user, [e for e, _ in events if e is not None], [d for _, d in shared])
            if self.layout == "v1"
            else None
        )
        next_shared = 0
        rewinds = await self._rewinds(key)
        invocations = [r.get("invocation_id") for r in rows]
        targets = [rewind_target(ev) for ev, _ in events]
        messages: list[dict[str, Any]] = []  # one per event, in order
        live: list[int] = []  # the events ADK's conversation keeps (see `apply_rewinds`)
        tools: dict[str, Any] = {}
        prev = await self._first_parent(rows)
        for i, (r, (ev, err)) in enumerate(zip(rows, events, strict=False)):
            msg = to_message(ev) if err is None else {"role": "invalid", "content": f"(event_data: {err})"}
            messages.append(msg)
            if targets[i]:  # a rewind: the conversation as ADK now builds it
                live = apply_rewinds(invocations[: i + 1], targets[: i + 1])[0]
                tools = {}
                for j in live:
                    tools_of(events[j][0], tools)
            else:
                live.append(i)
                tools_of(ev, tools)
            if fold is not None:
                while next_shared < len(shared) and shared[next_shared][0] <= r["timestamp"]:
                    fold.apply_shared(shared[next_shared][1])
                    next_shared += 1
                if ev is not None:
                    fold.apply(ev)
            if upto is not None and r["step"] != upto:
                prev = r["id"]
                continue
            meta = self._meta(r, prev, msg, rewinds)
            prev = r["id"]
            if err is not None:
                yield CorruptRowError(meta.checkpoint_id, "event_data", err)
                continue
            if fold is not None:
                state = fold.state()
            else:
                state = {
                    "_agentctl": "v0 layout: the events' state deltas are pickled (never "
                    "unpickled), so the state of a step is unknown; the session's "
                    "current state is `current`",
                    "current": {
                        **session,
                        **{"app:" + k: v for k, v in app.items()},
                        **{"user:" + k: v for k, v in user.items()},
                    },
                }
            yield Checkpoint(meta, [messages[j] for j in live], state, {k: dict(v) for k, v in tools.items()})

    # ---- threads -------------------------------------------------------------------

    async def _names_hold_sep(self) -> bool:
        """Whether an app name or user id holds "/" (then a thread id cannot be split)."""
        if self._slashes is None:
            rows = await self._q(
                "SELECT 1 AS x FROM sessions WHERE app_name LIKE ? OR user_id LIKE ? LIMIT 1", "%/%", "%/%"
            )
            self._slashes = bool(rows)
        return self._slashes

    async def _prefix_where(
        self, prefix: str | None, params: list[Any], session_col: str = "session_id", glue: str = " WHERE "
    ) -> str:
        if not prefix:
            return ""
        parts = prefix.split(SEP)
        if len(parts) == 3 and parts[2] and not await self._names_hold_sep():
            # APP/USER/SESS…: the primary key's app_name and user_id, a range of session ids
            params.extend(parts[:2])
            return (
                glue
                + "app_name = ? AND user_id = ? AND "
                + prefix_range(session_col + self._C, parts[2], params)
            )
        params.extend([len(prefix), prefix])
        return glue + f"substr(app_name || '/' || user_id || '/' || {session_col}, 1, ?) = ?"

    #: sessions that have events (a session without any is no thread)
    _HAS_EVENTS = (
        "EXISTS (SELECT 1 FROM events e WHERE e.app_name = s.app_name AND e.user_id = s.user_id "
        "AND e.session_id = s.id)"
    )
    _S_TID = "(s.app_name || '/' || s.user_id || '/' || s.id)"

    async def _summary_of(self, key: tuple[str, str, str], update_time: Any = None) -> ThreadSummary | None:
        rows = await self._q(
            "SELECT COUNT(*) AS n, MIN(timestamp) AS first FROM events WHERE app_name = ? "
            "AND user_id = ? AND session_id = ?",
            *key,
        )
        n = int(rows[0]["n"])
        if not n:
            return None
        if update_time is None:
            found = await self._q(
                "SELECT update_time FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?", *key
            )
            update_time = found[0]["update_time"] if found else None
        head = await self._q(
            f"SELECT {self._event_cols} FROM events WHERE app_name = ? AND user_id = ? AND "
            "session_id = ? ORDER BY timestamp DESC, id DESC LIMIT 1",
            *key,
        )
        for h in head:
            h["step"] = n
        # (a session's last event is never one a rewind dropped: no rewind comes after it)
        head_meta = self._metas(head, n)[-1]
        if update_time is None:  # an event without its session row (no FK enforced)
            update_time = head[0]["timestamp"]
        origin = (await self._origins()).get(thread_id_of(*key))
        return ThreadSummary(
            thread_id=thread_id_of(*key),
            checkpoints=n,
            head_step=n,
            head_checkpoint_id=head_meta.checkpoint_id,
            updated_at=iso_utc(update_time),
            head_summary=head_meta.summary,
            first_created_at=iso_utc(rows[0]["first"]),
            branch_of=origin[0] if origin else None,
            branch_point=origin[1] if origin else None,
        )

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        """ "updated" is the session's `update_time` (ADK sets it to its last event's time;
        agentctl's writes move it), read from the sessions table: no scan of the events.
        "thread" also reads the sessions; the other sorts aggregate the events."""
        d = "DESC" if descending else "ASC"
        params: list[Any] = []
        if check_sort(sort) in ("updated", "thread"):
            where = await self._prefix_where(prefix, params, "s.id", " AND ")
            order = (
                f"s.update_time {d}, {self._S_TID}{self._C} ASC"
                if sort == "updated"
                else f"{self._S_TID}{self._C} {d}"
            )
            rows = await self._q(
                f"SELECT s.app_name, s.user_id, s.id AS session_id, s.update_time FROM sessions s "
                f"WHERE {self._HAS_EVENTS}{where} ORDER BY {order} LIMIT ? OFFSET ?",
                *params,
                int(limit),
                int(offset),
            )
        else:
            key = {"created": "MIN(timestamp)", "checkpoints": "COUNT(*)", "step": "COUNT(*)"}[sort]
            where = await self._prefix_where(prefix, params)
            rows = await self._q(
                f"SELECT app_name, user_id, session_id FROM events{where} GROUP BY app_name, user_id, "
                f"session_id ORDER BY {key} {d}, {self._TID}{self._C} ASC LIMIT ? OFFSET ?",
                *params,
                int(limit),
                int(offset),
            )
        out = []
        for r in rows:
            found = await self._summary_of(
                (r["app_name"], r["user_id"], r["session_id"]), r.get("update_time")
            )
            if found is not None:
                out.append(found)
        return out

    async def count_threads(self, prefix: str | None = None) -> int:
        params: list[Any] = []
        where = await self._prefix_where(prefix, params, "s.id", " AND ")
        rows = await self._q(f"SELECT COUNT(*) AS n FROM sessions s WHERE {self._HAS_EVENTS}{where}", *params)
        return int(rows[0]["n"])

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        key = await self._key(thread_id)
        return None if key is None else await self._summary_of(key)

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        params: list[Any] = []
        where = await self._prefix_where(prefix, params, "s.id", " AND ")
        rows = await self._q(
            f"SELECT {self._S_TID}{self._C} AS tid FROM sessions s WHERE {self._HAS_EVENTS}"
            f"{where} ORDER BY tid LIMIT ?",
            *params,
            int(limit),
        )
        return [r["tid"] for r in rows]

    # ---- checkpoints ---------------------------------------------------------------

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is None:
            rows = await self._q("SELECT COUNT(*) AS n FROM events")
            return int(rows[0]["n"])
        key = await self._key(thread_id)
        if key is None:
            return 0
        rows = await self._q(
            "SELECT COUNT(*) AS n FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?", *key
        )
        return int(rows[0]["n"])

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        limit, offset = max(int(limit), 0), max(int(offset), 0)
        key = await self._key(thread_id)
        if key is None or limit == 0:
            return []
        if descending:
            last = await self.count(thread_id) - offset
            if last < 1:
                return []
            return list(reversed(await self._page(key, max(last - limit + 1, 1), last)))
        return await self._page(key, offset + 1, None if limit >= 2**62 else offset + limit)

    async def _page(
        self, key: tuple[str, str, str], first: int, last: int | None
    ) -> list[CheckpointMetadata]:
        """The metadata of steps first..last (None: to the end) of a session."""
        rows = await self._rows(key, first, last)
        return self._metas(rows, first, await self._rewinds(key), await self._first_parent(rows))

    async def _locate(self, event_id: str) -> tuple[tuple[str, str, str], int] | None:
        """The session of an event and the event's step."""
        rows = await self._q(
            "SELECT app_name, user_id, session_id FROM events WHERE id = ? "
            "ORDER BY app_name, user_id, session_id LIMIT 1",
            event_id,
        )
        if not rows:
            return None
        key = (rows[0]["app_name"], rows[0]["user_id"], rows[0]["session_id"])
        ids = await self._q(
            "SELECT id FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
            "ORDER BY timestamp, id",
            *key,
        )
        for i, r in enumerate(ids, 1):
            if r["id"] == event_id:
                return key, i
        return None

    async def _checkpoint_at(self, key: tuple[str, str, str], step: int) -> Checkpoint | None:
        if step < 1:
            return None
        rows = await self._rows(key, 1, None)
        if len(rows) < step:
            return None
        async for cp in self._build(key, rows, upto=step):
            if isinstance(cp, CorruptRowError):
                raise cp
            return cp
        return None

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        found = await self._locate(checkpoint_id)
        return None if found is None else await self._checkpoint_at(*found)

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        key = await self._key(thread_id)
        if key is None:
            return None
        return await self._checkpoint_at(key, await self.count(thread_id))

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        key = await self._key(thread_id)
        if key is None or step < 1:
            return None
        metas = await self._page(key, step, step)
        return metas[0] if metas and metas[0].step == step else None

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        found = await self._locate(checkpoint_id)
        if found is None:
            return []
        metas = await self._page(found[0], found[1] + 1, found[1] + 1)
        # the next event, unless it is a rewind to an earlier step; the rewinds to this one
        rewinds = [
            r for r, parent in (await self._rewinds(found[0])).parents.items() if parent == checkpoint_id
        ]
        later = [await self.get_metadata(r) for r in rewinds if r not in {m.checkpoint_id for m in metas}]
        return [m for m in metas + later if m is not None and m.parent_checkpoint_id == checkpoint_id]

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        """The first events of the branches agentctl made from these threads."""
        firsts = [
            await self.at_step(b, 1)
            for b, (source, _) in sorted((await self._origins()).items())
            if source in set(thread_ids)
        ]
        return [f for f in firsts if f is not None]

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        rows = await self._q(
            f"SELECT DISTINCT id{self._C} AS id FROM events WHERE id LIKE ? ESCAPE '!' ORDER BY id LIMIT ?",
            like_escape(prefix) + "%",
            int(limit),
        )
        return [r["id"] for r in rows]

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        threads = list(thread_ids) if thread_ids is not None else await self.all_thread_ids()
        for tid in threads:
            key = await self._key(tid)
            if key is None:
                continue
            async for cp in self._build(key, await self._rows(key, 1, None)):
                yield cp

    # ---- search ----------------------------------------------------------------------

    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """A scan of the events: a LIKE prefilter on the stored JSON (ASCII text), then
        each candidate decoded and matched against its message's text."""
        wanted = self.scan_start(places)
        if wanted is None:
            return []
        needle = text.casefold()
        params: list[Any] = []
        where = []
        if thread_id is not None:
            key = await self._key(thread_id)
            if key is None:
                return []
            where.append("app_name = ? AND user_id = ? AND session_id = ?")
            params.extend(key)
        column = "event_data" if self.layout == "v1" else "content"
        self.json_text_filter(f"CAST({column} AS TEXT)", text, where, params)
        steps: dict[tuple[str, str, str], dict[str, int]] = {}
        if not scan and self.kind == "sqlite" and len(needle) >= 3:
            found = await self._index_search(text, needle, role, limit, wanted, where, params, steps)
            if found is not None:
                self.last_search_path = "index"
                return found
        hits: list[SearchHit] = []

        async def take(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if await self._match(r, text, needle, role, wanted, steps, hits) and len(hits) >= limit:
                    break

        # newest first (timestamp, then id), a page at a time below the last row read
        # (its event key breaking the ties: together unique), when the table declares
        # them NOT NULL (ADK's does); else by OFFSET
        after = _SCAN_KEY if await self._not_null(_SCAN_KEY) else ()
        return await self.scan_pages(
            f"SELECT {self._event_cols} FROM events",
            where,
            params,
            ", ".join(f"{c} DESC" for c in after) or "timestamp DESC, id DESC",
            hits,
            limit,
            take,
            after=after,
        )

    async def _not_null(self, columns: Sequence[str]) -> bool:
        """Whether the events table declares each of `columns` NOT NULL."""
        if self.kind == "postgres":
            rows = await self._q(
                "SELECT attname AS c FROM pg_attribute WHERE attrelid = to_regclass('events') "
                "AND attnum > 0 AND attnotnull"
            )
        else:
            rows = await self._q("SELECT name AS c FROM pragma_table_info('events') WHERE \"notnull\"")
        return set(columns) <= {r["c"] for r in rows}

    async def _match(
        self,
        r: Mapping[str, Any],
        text: str,
        needle: str,
        role: str | None,
        wanted: Any,
        steps: dict[tuple[str, str, str], dict[str, int]],
        hits: list[SearchHit],
    ) -> bool:
        """Add the hit of an event row to `hits` when it matches, as the scan matches
        (its message's text, casefolded); whether it did."""
        ev, err = self._event(dict(r))
        if err is not None:
            return False
        msg = to_message(ev)
        if role is not None and msg.get("role") != role:
            return False
        body = searchable_text(msg)
        pos = body.casefold().find(needle)
        if pos < 0 or ("tools" if msg.get("role") == "tool" else "messages") not in wanted:
            return False
        key = (r["app_name"], r["user_id"], r["session_id"])
        if key not in steps:
            ids = await self._q(
                "SELECT id FROM events WHERE app_name = ? AND user_id = ? AND "
                "session_id = ? ORDER BY timestamp, id",
                *key,
            )
            steps[key] = {x["id"]: i for i, x in enumerate(ids, 1)}
        step = steps[key].get(r["id"], 0)
        hits.append(
            SearchHit(
                thread_id=thread_id_of(*key),
                checkpoint_id=r["id"],
                step=step,
                where="tools_result" if msg.get("role") == "tool" else "messages",
                role=msg.get("role"),
                snippet=snippet_around(body, text, 40),
                path=message_hit_path(step) if step else "",
            )
        )  # a tool output is its step's message too
        return True

    # ---- the side search index (agentctl.storage.textindex) ----------------------------

    def text_source(self) -> Any:
        """The side index's view of the events (SQLite): key the table's rowid (ADK's
        events have a text primary key; SQLite gives a new row a rowid above the largest;
        one that reuses a deleted newest row's is re-indexed when its timestamp or lengths
        differ, as a rewrite is), newest first by timestamp (the scan's order; ties are put in the
        scan's order by the search), one document per event: its message's searchable
        text, casefolded as the search compares (kind 0 a message, 1 a tool result)."""
        from agentctl.storage.textindex import Source

        names = tuple(c.strip() for c in self._event_cols.split(","))

        def docs(values: Sequence[Any]) -> list[tuple[int, str]]:
            ev, err = self._event(dict(zip(names, values, strict=False)))
            if err is not None:
                return []
            msg = to_message(ev)
            return [(1 if msg.get("role") == "tool" else 0, searchable_text(msg).casefold())]

        searched = [c for c in names if c not in ("app_name", "user_id", "session_id", "timestamp")]
        fingerprint = " + ".join(
            f"coalesce(length({c}), -1) * {1 + 1000 * i}" for i, c in enumerate(searched)
        )
        return Source(
            format=f"adk:{self.layout}",
            table="events",
            key="rowid",
            sort="timestamp",
            fingerprint=fingerprint,
            columns=names,
            kinds=("messages", "tools"),
            docs=docs,
        )

    async def search_index(self, action: str) -> dict[str, Any]:
        """`agentctl index build|status|drop` on SQLite (a side file; the database is only read)."""

        from agentctl.storage import textindex
        from agentctl.storage.contract import Unsupported

        if self.kind != "sqlite":
            raise Unsupported(self.format.name, "a search index on Postgres (`agentctl index`)")
        await self.connect()
        return await textindex.index_action(self._db.path, self.text_source(), action, "events")

    async def _index_search(
        self,
        text: str,
        needle: str,
        role: str | None,
        limit: int,
        wanted: Any,
        where: list[str],
        params: list[Any],
        steps: dict[tuple[str, str, str], dict[str, int]],
    ) -> list[SearchHit] | None:
        """The hits through the side index when there is one, else None: its candidates
        (newest first by timestamp) read from the database and matched with the scan's
        own test, until no later candidate can be among the first `limit` in the scan's
        order (timestamp, then id, newest first)."""
        import asyncio
        import sqlite3

        from agentctl.storage import textindex

        session = await self.open_side_index()
        if session is None:
            return None
        side = textindex.side_path(self._db.path)
        try:
            candidates = session.candidates(needle)
            cond = "".join(" AND " + w for w in where)
            names = [c.strip() for c in self._event_cols.split(",")]
            found: list[tuple[Any, SearchHit]] = []
            batch = max(limit, 20)

            def next_rows() -> list[dict[str, Any]] | None:
                """The next batch's rows (those the scan's conditions keep), None at the end."""
                keys = [k for _, k in zip(range(batch), candidates, strict=False)]
                if not keys:
                    return None
                got = {
                    r[0]: dict(zip(names, r[1:], strict=False))
                    for r in session.con.execute(
                        f"SELECT rowid, {self._event_cols} FROM src.events "
                        f"WHERE rowid IN ({marks(len(keys))}){cond}",
                        [*keys, *params],
                    )
                }
                return [got[k] for k in keys if k in got]

            while True:
                try:
                    rows = await asyncio.to_thread(next_rows)
                except sqlite3.DatabaseError as exc:  # a side file damaged under our feet
                    self.last_search_note = textindex.fallback_note(side, f"unreadable ({exc})")
                    return None
                if rows is None:
                    break
                batch = min(batch * 2, 2000)
                for r in rows:
                    hits: list[SearchHit] = []
                    if await self._match(r, text, needle, role, wanted, steps, hits):
                        found.append(((_order_key(r["timestamp"]), _order_key(r["id"])), hits[0]))
                if len(found) >= limit and rows:
                    found.sort(key=lambda kh: kh[0], reverse=True)
                    del found[limit:]
                    # the candidates come by timestamp: one older than the last kept hit's
                    # (and all after it) cannot be among the first `limit`
                    if _order_key(rows[-1]["timestamp"]) < found[-1][0][0]:
                        break
            found.sort(key=lambda kh: kh[0], reverse=True)
            return [h for _, h in found[:limit]]
        finally:
            session.close()


def opener(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    """The format's store (its FormatSpec names this opener)."""
    return ADKStore(kind, target, readonly=readonly, **kwargs)
