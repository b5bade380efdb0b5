"""Reads of Agno's session and run tables (see the package's docstring for the mapping,
`runs.py` for the runs as data)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
from agentctl.storage.agno import FORMAT, choose, runs_table_of
from agentctl.storage.agno.runs import (
    Run,
    chat_messages,
    decode,
    legacy_runs,
    merge,
    obj,
    run_view,
    searchable,
    summary_of,
    tags_of,
    tools_by_call,
    top_level,
)
from agentctl.storage.contract import SEARCH_PLACES, Store, local_file_of, skip_copies
from agentctl.storage.search import snippet_around
from agentctl.storage.sqlconn import SteppedStore, check_sort, connection, like_escape, prefix_range
from agentctl.storage.sqlutil import in_chunks
from agentctl.storage.timefmt import iso_utc


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def epoch_iso(value: Any) -> str:
    """Agno's epoch seconds as ISO-8601 UTC text ("" for none)."""
    from datetime import datetime, timezone

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), timezone.utc).isoformat()
        except (OverflowError, OSError, ValueError):
            return str(value)
    return iso_utc(value)


@dataclass
class AgnoSummary(ThreadSummary):
    """A thread summary with the session's Agno fields."""

    session_type: str | None = None
    component: str | None = None
    user_id: str | None = None

    def extra_columns(self) -> list[tuple[str, Any]]:
        return [("TYPE", self.session_type or ""), ("ID", self.component or ""), ("USER", self.user_id or "")]

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.update(session_type=self.session_type, component=self.component, user_id=self.user_id)
        return d


class AgnoStore(SteppedStore):
    format = FORMAT
    thread_filters = ("user",)

    def __init__(
        self, kind: str, target: str, *, readonly: bool = True, session_table: str | None = None, **_: Any
    ) -> None:
        self.kind = kind
        self.local_file = local_file_of(kind, target)
        self._asked = session_table
        self._db = connection(kind, target, self._check, readonly=readonly)
        self.display_name = self._db.display_name
        self.sessions_table = self.runs_table = self.layout = ""
        self.session_columns: list[str] = []
        self._origin_map: dict[str, tuple[str, str]] | None = None
        self.run_columns: list[str] = []
        self._S = self._R = ""
        self._C = ' COLLATE "C"' if kind == "postgres" else ""

    def _check(self, tables: Mapping[str, set[str]]) -> None:
        self.sessions_table, self.layout = choose(tables, self._asked)
        self.runs_table = runs_table_of(self.sessions_table)
        self.session_columns = sorted(tables[self.sessions_table])
        self.run_columns = sorted(tables.get(self.runs_table, ()))
        self._S, self._R = quote(self.sessions_table), quote(self.runs_table)

    @property
    def has_table(self) -> bool:
        return self.layout != "v2"

    @property
    def has_legacy(self) -> bool:
        return self.layout != "v3"

    async def _q(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        await self.connect()
        return await self._db.query(sql, *params)

    def json_places(self) -> list[tuple[str, str, str, Callable[[dict[str, Any]], str]]]:
        places: list[tuple[str, str, str, Callable[[dict[str, Any]], str]]] = [
            (self._S, "session_data", "session_id", lambda r: str(r["session_id"]))
        ]
        if self.has_table:
            places.append((self._R, "run_data", "run_id", lambda r: str(r["run_id"])))
        return places

    # ---- a session's runs ------------------------------------------------------------

    async def _session_row(self, sid: str) -> dict[str, Any] | None:
        cols = (
            "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, "
            "created_at, updated_at" + (", runs" if self.has_legacy else "")
        )
        rows = await self._q(f"SELECT {cols} FROM {self._S} WHERE session_id = ?", sid)
        return rows[0] if rows else None

    async def _order(self, sid: str, legacy: Any = None, fetch: Any = None) -> list[Run]:
        """Every run of a session (members too) in Agno's order, the table's without their
        run_data (`_fill` reads it), the legacy array's with theirs. `fetch`: a write's
        transaction's."""
        q = fetch or self._q
        table: list[Run] = []
        if self.has_table:
            for r in await q(
                f"SELECT run_id, parent_run_id, status, run_index, created_at, run_type FROM {self._R} "
                "WHERE session_id = ? ORDER BY run_index, created_at, run_id",
                sid,
            ):
                table.append(
                    Run(
                        run_id=r["run_id"],
                        parent=r["parent_run_id"],
                        status=r["status"],
                        index=r["run_index"],
                        created=r["created_at"],
                        run_type=r["run_type"] or "",
                    )
                )
        if not self.has_legacy:
            return table
        if legacy is None:
            rows = await q(f"SELECT runs FROM {self._S} WHERE session_id = ?", sid)
            legacy = rows[0]["runs"] if rows else None
        return merge(table, legacy_runs(legacy))

    async def _fill(self, runs: Sequence[Run], fetch: Any = None) -> None:
        """Read the run_data of these runs (the table's) where not read yet."""
        want = [r for r in runs if r.data is None and r.error is None]
        if not want:
            return
        by_id = {r.run_id: r for r in want}
        for ph, chunk in in_chunks(list(by_id)):
            for row in await (fetch or self._q)(
                f"SELECT run_id, CAST(run_data AS TEXT) AS d FROM {self._R} WHERE run_id IN ({ph})", *chunk
            ):
                run = by_id[row["run_id"]]
                run.raw_size = len(row["d"] or "")
                data, err = decode(row["d"])
                if err is None and not isinstance(data, dict):
                    err = "run_data is not an object"
                run.data, run.error = (data, None) if err is None else (None, err)

    async def _origins(self) -> dict[str, tuple[str, str]]:
        """{branch session: (its source session, the run it was branched at)} of the
        branches agentctl made, not undone (from the journal; read once per store)."""
        if self._origin_map is None:
            from agentctl.storage.journal.ops import LOG

            await self.connect()
            found: dict[str, tuple[str, str]] = {}
            if await self._db.table_exists(LOG):
                for r in await self._q(f"SELECT details FROM {LOG} WHERE kind = 'branch' AND undone = 0"):
                    d = json.loads(r["details"])
                    if d.get("branch_session"):
                        found[d["branch_session"]] = (d["session"], d["from"])
            self._origin_map = found
        return self._origin_map

    async def without_copies(self, line: list[CheckpointMetadata]) -> list[CheckpointMetadata]:
        # a branch session holds copies of runs 1..N, its first naming the fork point
        forks = {session: origin[1] for session, origin in (await self._origins()).items()}
        return skip_copies(line, forks) if forks else line

    def _metas(
        self, sid: str, tops: Sequence[Run], first: int, last: int, origin: str | None = None
    ) -> list[CheckpointMetadata]:
        """The metadata of steps first..last (1-based) of a session whose top-level runs
        are `tops` (those of the page read: `_fill`); `origin`: the parent of step 1 (the
        run a branch was made at)."""
        pos = {r.run_id: i for i, r in enumerate(tops)}
        out = []
        for i in range(max(first, 1) - 1, min(last, len(tops))):
            run = tops[i]
            parent = tops[i - 1].run_id if i else origin
            source = (run.data or {}).get("forked_from_run_id")
            if source in pos and pos[source] < i:  # a fork or a regeneration: beside its source
                j = pos[source]
                parent = tops[j - 1].run_id if j else None
            out.append(
                CheckpointMetadata(
                    thread_id=sid,
                    checkpoint_id=run.run_id,
                    step=i + 1,
                    parent_checkpoint_id=parent,
                    created_at=epoch_iso(
                        run.created if run.created is not None else (run.data or {}).get("created_at")
                    ),
                    tags=tags_of(run, self.layout == "migrated"),
                    summary=summary_of(run.data, run.error),
                )
            )
        return out

    async def _tops(self, sid: str) -> list[Run]:
        return top_level(await self._order(sid))

    async def _page(self, sid: str, first: int, last: int) -> list[CheckpointMetadata]:
        tops = await self._tops(sid)
        page = tops[max(first, 1) - 1 : last]
        forks = [r for r in page]
        await self._fill(forks)
        # a fork's source may be outside the page: only its place is needed
        return self._metas(sid, tops, first, last, await self._origin(sid))

    async def _origin(self, sid: str) -> str | None:
        found = (await self._origins()).get(sid)
        return found[1] if found else None

    async def _build(self, sid: str, tops: Sequence[Run], members: Sequence[Run], step: int) -> Checkpoint:
        """The checkpoint of step `step` (its runs read: `_fill` of tops[:step] and the
        members of tops[step - 1])."""
        meta = self._metas(sid, tops, step, step, await self._origin(sid))[0]
        run = tops[step - 1]
        if run.data is None:
            raise CorruptRowError(run.run_id, "run_data", run.error or "missing")
        messages: list[dict[str, Any]] = []
        for r in tops[:step]:
            if r.data is not None:
                messages.extend(chat_messages(r.data))
        tools: dict[str, Any] = {}
        tools_by_call(run.data, tools)
        member_views = []
        for m in members:
            if m.data is not None:
                tools_by_call(m.data, tools, m.data.get("agent_id") or m.data.get("team_id"))
                member_views.append(run_view(m.data))
        view: dict[str, Any] = {"run": run_view(run.data)}
        if member_views:
            view["member_runs"] = member_views
        steps = [run_view(s) for s in run.data.get("step_executor_runs") or [] if isinstance(s, dict)]
        if steps:
            view["step_runs"] = steps
        if tools:
            view["tools"] = tools
        state = run.data.get("session_state")
        return Checkpoint(meta, messages, dict(state) if isinstance(state, dict) else {}, view)

    async def _checkpoint(self, sid: str, step: int, order: list[Run] | None = None) -> Checkpoint | None:
        order = order if order is not None else await self._order(sid)
        tops = top_level(order)
        if not 1 <= step <= len(tops):
            return None
        members = [r for r in order if r.parent == tops[step - 1].run_id]
        await self._fill(list(tops[:step]) + members)
        return await self._build(sid, tops, members, step)

    # ---- threads -------------------------------------------------------------------

    def _has_runs(self, alias: str = "s") -> str:
        conds = []
        if self.has_table:
            conds.append(
                f"EXISTS (SELECT 1 FROM {self._R} r WHERE r.session_id = {alias}.session_id "
                "AND r.parent_run_id IS NULL)"
            )
        if self.has_legacy:
            conds.append(
                f"({alias}.runs IS NOT NULL AND CAST({alias}.runs AS TEXT) LIKE '%run!_id%' ESCAPE '!')"
            )
        return "(" + " OR ".join(conds) + ")"

    def _where(self, prefix: str | None, user: str | None, params: list[Any]) -> str:
        conds = [self._has_runs()]
        if prefix:
            conds.append(prefix_range(f"s.session_id{self._C}", prefix, params))
        if user is not None:
            conds.append("s.user_id = ?")
            params.append(user)
        return " WHERE " + " AND ".join(conds)

    async def _summary(self, row: dict[str, Any]) -> AgnoSummary | None:
        sid = row["session_id"]
        if not self.has_legacy:
            n = (
                await self._q(
                    f"SELECT COUNT(*) AS n FROM {self._R} WHERE session_id = ? AND parent_run_id IS NULL", sid
                )
            )[0]["n"]
            heads = await self._q(
                f"SELECT run_id, parent_run_id, status, run_index, created_at, run_type FROM {self._R} "
                "WHERE session_id = ? AND parent_run_id IS NULL "
                "ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT 1",
                sid,
            )
            firsts = await self._q(
                f"SELECT created_at FROM {self._R} WHERE session_id = ? AND parent_run_id IS NULL "
                "ORDER BY run_index, created_at, run_id LIMIT 1",
                sid,
            )
            if not heads:
                return None
            h = heads[0]
            head = Run(
                run_id=h["run_id"],
                parent=None,
                status=h["status"],
                index=h["run_index"],
                created=h["created_at"],
                run_type=h["run_type"] or "",
            )
            first_created = firsts[0]["created_at"]
        else:
            tops = top_level(await self._order(sid, row.get("runs")))
            if not tops:
                return None
            n, head, first_created = len(tops), tops[-1], tops[0].created
        await self._fill([head])
        session_data = obj(row.get("session_data"))
        origin = (await self._origins()).get(sid)
        kind = row.get("session_type")
        return AgnoSummary(
            thread_id=sid,
            checkpoints=int(n),
            head_step=int(n),
            head_checkpoint_id=head.run_id,
            updated_at=epoch_iso(row.get("updated_at") or row.get("created_at")),
            head_summary=summary_of(head.data, head.error),
            first_created_at=epoch_iso(first_created),
            branch_of=origin[0] if origin else session_data.get("forked_from_session_id"),
            branch_point=origin[1] if origin else None,
            session_type=kind,
            user_id=row.get("user_id"),
            component=row.get("team_id")
            if kind == "team"
            else row.get("workflow_id")
            if kind == "workflow"
            else row.get("agent_id"),
        )

    _SUMMARY_COLS = (
        "s.session_id, s.session_type, s.agent_id, s.team_id, s.workflow_id, s.user_id, "
        "s.session_data, s.created_at, s.updated_at"
    )

    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
        *,
        user: str | None = None,
    ) -> list[ThreadSummary]:
        """ "updated" is the session's `updated_at` (Agno sets it at every save), "created"
        its `created_at`, read from the sessions table; "checkpoints"/"step" count the
        top-level runs."""
        d = "DESC" if descending else "ASC"
        params: list[Any] = []
        where = self._where(prefix, user, params)
        sort = check_sort(sort)
        cols = self._SUMMARY_COLS + (", s.runs" if self.has_legacy else "")
        if sort in ("checkpoints", "step") and self.has_legacy:
            rows = await self._q(f"SELECT {cols} FROM {self._S} s{where}", *params)
            every = [x for x in [await self._summary(r) for r in rows] if x is not None]
            every.sort(key=lambda t: t.thread_id)
            every.sort(key=lambda t: t.checkpoints, reverse=descending)
            return list(every[offset : offset + limit])
        key = {
            "updated": "s.updated_at",
            "created": "s.created_at",
            "thread": f"s.session_id{self._C}",
            "checkpoints": f"(SELECT COUNT(*) FROM {self._R} r WHERE r.session_id = s.session_id "
            "AND r.parent_run_id IS NULL)",
        }.get(sort)
        if key is None:  # step
            key = f"(SELECT COUNT(*) FROM {self._R} r WHERE r.session_id = s.session_id AND r.parent_run_id IS NULL)"
        order = f"{key} {d}" + ("" if sort == "thread" else f", s.session_id{self._C} ASC")
        rows = await self._q(
            f"SELECT {cols} FROM {self._S} s{where} ORDER BY {order} LIMIT ? OFFSET ?",
            *params,
            int(limit),
            int(offset),
        )
        out: list[ThreadSummary] = []
        for r in rows:
            found = await self._summary(r)
            if found is not None:
                out.append(found)
        return out

    async def count_threads(self, prefix: str | None = None, *, user: str | None = None) -> int:
        params: list[Any] = []
        where = self._where(prefix, user, params)
        rows = await self._q(f"SELECT COUNT(*) AS n FROM {self._S} s{where}", *params)
        return int(rows[0]["n"])

    async def filter_values(self, name: str) -> list[str]:
        if name != "user":
            return []
        rows = await self._q(
            f"SELECT DISTINCT user_id{self._C} AS u FROM {self._S} WHERE user_id IS NOT NULL ORDER BY u"
        )
        return [r["u"] for r in rows]

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        cols = self._SUMMARY_COLS + (", s.runs" if self.has_legacy else "")
        rows = await self._q(f"SELECT {cols} FROM {self._S} s WHERE s.session_id = ?", thread_id)
        return await self._summary(rows[0]) if rows else None

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        params: list[Any] = []
        where = self._where(prefix, None, params)
        rows = await self._q(
            f"SELECT s.session_id{self._C} AS tid FROM {self._S} s{where} ORDER BY tid LIMIT ?",
            *params,
            int(limit),
        )
        return [r["tid"] for r in rows]

    # ---- checkpoints ---------------------------------------------------------------

    async def count(self, thread_id: str | None = None) -> int:
        if thread_id is not None:
            return len(await self._tops(thread_id))
        if not self.has_legacy:
            return int(
                (await self._q(f"SELECT COUNT(*) AS n FROM {self._R} WHERE parent_run_id IS NULL"))[0]["n"]
            )
        total = 0
        for r in await self._q(f"SELECT session_id, runs FROM {self._S}"):
            total += len(top_level(await self._order(r["session_id"], r["runs"])))
        return total

    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        limit, offset = max(int(limit), 0), max(int(offset), 0)
        if limit == 0:
            return []
        tops = await self._tops(thread_id)
        n = len(tops)
        if descending:
            last = n - offset
            first = max(last - limit + 1, 1)
        else:
            first, last = offset + 1, min(offset + limit, n)
        if last < first:
            return []
        await self._fill(tops[first - 1 : last])
        metas = self._metas(thread_id, tops, first, last, await self._origin(thread_id))
        return list(reversed(metas)) if descending else metas

    async def _locate(self, run_id: str) -> tuple[str, int] | None:
        """(session, step) of a top-level run."""
        sid = None
        if self.has_table:
            rows = await self._q(f"SELECT session_id FROM {self._R} WHERE run_id = ?", run_id)
            sid = rows[0]["session_id"] if rows else None
        if sid is None and self.has_legacy:
            rows = await self._q(
                f"SELECT session_id FROM {self._S} WHERE CAST(runs AS TEXT) LIKE ? ESCAPE '!' "
                "ORDER BY session_id",
                "%" + like_escape(run_id) + "%",
            )
            for r in rows:
                if any(t.run_id == run_id for t in await self._tops(r["session_id"])):
                    sid = r["session_id"]
                    break
        if sid is None:
            return None
        for i, t in enumerate(await self._tops(sid), 1):
            if t.run_id == run_id:
                return sid, i
        return None

    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        found = await self._locate(checkpoint_id)
        return None if found is None else await self._checkpoint(*found)

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        order = await self._order(thread_id)
        return await self._checkpoint(thread_id, len(top_level(order)), order)

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        if step < 1:
            return None
        metas = await self._page(thread_id, step, step)
        return metas[0] if metas else None

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        found = await self._locate(checkpoint_id)
        if found is None:
            return []
        sid, step = found
        tops = await self._tops(sid)
        await self._fill(tops[step:])
        out = [
            m for m in self._metas(sid, tops, step + 1, len(tops)) if m.parent_checkpoint_id == checkpoint_id
        ]
        for branch, (source, point) in sorted((await self._origins()).items()):
            if source == sid and point == checkpoint_id:
                first = await self.at_step(branch, 1)
                if first is not None:
                    out.append(first)
        return out

    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        """The first runs of the sessions forked from these (`fork_session`, agentctl's
        branches: `forked_from_session_id` in their session_data)."""
        out = []
        wanted = set(thread_ids)
        rows = await self._q(
            f"SELECT session_id, session_data FROM {self._S} WHERE "
            "CAST(session_data AS TEXT) LIKE '%forked!_from!_session!_id%' ESCAPE '!' "
            "ORDER BY session_id"
        )
        for r in rows:
            if obj(r["session_data"]).get("forked_from_session_id") in wanted:
                first = await self.at_step(r["session_id"], 1)
                if first is not None:
                    out.append(first)
        return out

    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        out: list[str] = []
        if self.has_table:
            params: list[Any] = []
            cond = prefix_range(f"run_id{self._C}", prefix, params) + " AND " if prefix else ""
            rows = await self._q(
                f"SELECT run_id{self._C} AS rid FROM {self._R} WHERE {cond}"
                "parent_run_id IS NULL ORDER BY rid LIMIT ?",
                *params,
                int(limit),
            )
            out = [r["rid"] for r in rows]
        if self.has_legacy and len(out) < limit:
            rows = await self._q(
                f"SELECT session_id, runs FROM {self._S} WHERE CAST(runs AS TEXT) LIKE ? ESCAPE '!'",
                "%" + like_escape(prefix) + "%",
            )
            for r in rows:
                for t in top_level(await self._order(r["session_id"], r["runs"])):
                    if t.run_id.startswith(prefix) and t.run_id not in out:
                        out.append(t.run_id)
            out.sort()
        return out[:limit]

    async def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        threads = list(thread_ids) if thread_ids is not None else await self.all_thread_ids()
        for sid in threads:
            order = await self._order(sid)
            await self._fill(order)
            tops = top_level(order)
            for step in range(1, len(tops) + 1):
                members = [r for r in order if r.parent == tops[step - 1].run_id]
                try:
                    yield await self._build(sid, tops, members, step)
                except CorruptRowError as exc:
                    yield exc

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
        """A scan of the sessions' runs, newest session first: a LIKE prefilter on the
        stored JSON (ASCII text), then each run decoded and matched against its
        messages' text (a tool message's as a tool result)."""
        wanted = self.scan_start(places)
        if wanted is None:
            return []
        needle = text.casefold()
        hits: list[SearchHit] = []
        params: list[Any] = []
        where: list[str] = []
        if thread_id is not None:
            where.append("s.session_id = ?")
            params.append(thread_id)
        conds = []
        if self.has_table:
            sub: list[str] = []
            sub_params: list[Any] = []
            self.json_text_filter("CAST(r.run_data AS TEXT)", text, sub, sub_params)
            conds.append(
                f"EXISTS (SELECT 1 FROM {self._R} r WHERE r.session_id = s.session_id"
                + "".join(" AND " + c for c in sub)
                + ")"
            )
            params.extend(sub_params)
        if self.has_legacy:
            sub = []
            sub_params = []
            self.json_text_filter("CAST(s.runs AS TEXT)", text, sub, sub_params)
            conds.append("(s.runs IS NOT NULL" + "".join(" AND " + c for c in sub) + ")")
            params.extend(sub_params)
        where.append("(" + " OR ".join(conds) + ")")

        async def take(rows: list[dict[str, Any]]) -> None:
            for r in rows:
                if len(hits) >= limit:
                    return
                await self._match(r["session_id"], text, needle, role, wanted, hits, limit)

        return await self.scan_pages(
            f"SELECT s.session_id, s.updated_at FROM {self._S} s",
            where,
            params,
            f"s.updated_at DESC, s.session_id{self._C} DESC",
            hits,
            limit,
            take,
        )

    async def _match(
        self,
        sid: str,
        text: str,
        needle: str,
        role: str | None,
        wanted: Any,
        hits: list[SearchHit],
        limit: int,
    ) -> None:
        """The hits of one session's runs, newest run first."""
        order = await self._order(sid)
        await self._fill(order)
        tops = top_level(order)
        step_of = {t.run_id: i for i, t in enumerate(tops, 1)}
        for run in reversed(order):
            if run.data is None or len(hits) >= limit:
                continue
            owner = run.run_id if run.run_id in step_of else run.parent
            step = step_of.get(owner or "")
            if step is None:
                continue
            for msg in reversed(run.data.get("messages") or []):
                if not isinstance(msg, dict) or (role is not None and msg.get("role") != role):
                    continue
                place = "tools" if msg.get("role") == "tool" else "messages"
                body = searchable(msg)
                if place not in wanted or needle not in body.casefold():
                    continue
                hits.append(
                    SearchHit(
                        thread_id=sid,
                        checkpoint_id=str(owner),
                        step=step,
                        where="tools_result" if place == "tools" else "messages",
                        role=msg.get("role"),
                        snippet=snippet_around(body, text, 40),
                        path="",
                    )
                )
                break

    # ---- doctor, stats ------------------------------------------------------------------

    doctor_checks: tuple[str, ...] = ("invalid_json", "run_index")

    async def doctor(self, limit: int = 100) -> list[Any]:
        from agentctl.storage.agno.doctor import problems

        return await super().doctor(limit) + await problems(self, limit)

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        from agentctl.storage.agno.doctor import stats

        return await stats(self, user, days)

    def text_source(self) -> Any:
        raise NotImplementedError

    async def search_index(self, action: str) -> dict[str, Any]:
        from agentctl.storage.contract import Unsupported

        raise Unsupported(self.format.name, "a search index (`agentctl index`)")


def opener(kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any) -> Store:
    """The format's store (its FormatSpec names this opener)."""
    return AgnoStore(kind, target, readonly=readonly, **kwargs)
