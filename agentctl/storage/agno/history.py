"""Writes on Agno's session and run tables, as row changes recorded by the journal
(agentctl/storage/journal/): undo, redo, oplog and purge are the journal's.

`rewind SESSION@N` keeps the session's runs up to run N (its member runs, saved before
it, too); the later runs move, with their ids, to an archive session
`SESSION-rewind-XXXX` (a new row of the sessions table copying the session's, its
session_state the last moved run's), or with `hard=True` are deleted (kept in the
journal's trash until `purge`). The session's `session_data.session_state` becomes run
N's, its `updated_at` the time of the rewind; `run_index` is renumbered 0.. in Agno's
order in both sessions, so that the next run Agno appends (at the index of its place
among the loaded runs) comes after run N. Where the sessions table keeps the legacy
`runs` array (v2, migrated), the moved runs leave it (and go into the archive's), so
that Agno's merge of the array and the table brings none back. JSON is written as it
was stored (encoded twice on an Agno 2 SQLite file).

`threads delete SESSION`: the session's runs and its row. A session's fingerprint
(what undo and redo compare) is its runs' count, sizes and greatest run_index and its
row's updated_at and sizes: any Agno write changes one of them.

On Postgres every write locks the sessions' rows first.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentctl.errors import CheckpointNotFound, OperationError, ThreadNotFound, UsageError
from agentctl.model import utc_now_iso
from agentctl.storage.agno.runs import Run, encode, legacy_runs, obj, top_level
from agentctl.storage.contract import History, RewindAndBranchOnly, retried_write
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.sqlutil import marks

if TYPE_CHECKING:
    from agentctl.storage.agno.store import AgnoStore
    from agentctl.storage.results import DeletePlan, OpResult, PrunePlan, RewindPlan, TimeTravelResult

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
SESSION_KEY = ("session_id",)
RUN_KEY = ("run_id",)


class AgnoHistory(JournalHistory, RewindAndBranchOnly, History):
    def __init__(self, store: AgnoStore, *, now: Any = None, clock: Any = None, hex4: Any = None) -> None:
        self.store = store
        self._hex = hex4 or (lambda: secrets.token_hex(2))
        self._now = now or utc_now_iso
        self._clock = clock or time.time

    # ---- the journal's hooks ---------------------------------------------------------

    async def lock(self, tx: Any, threads: Sequence[str]) -> None:
        if self.store.kind == "postgres" and threads:
            names = sorted(set(threads))
            await tx.fetch(
                f"SELECT session_id FROM {self.store._S} WHERE session_id IN ({marks(len(names))}) "
                "ORDER BY session_id FOR UPDATE",
                *names,
            )

    async def fingerprint(self, tx: Any, thread: str) -> list[Any]:
        """[session row exists, updated_at, session_data's size, the legacy array's size,
        runs, their sizes, the greatest run_index]."""
        st = self.store
        legacy = ", COALESCE(length(CAST(runs AS TEXT)), -1) AS l" if st.has_legacy else ", 0 AS l"
        row = await tx.fetch(
            f"SELECT CAST(updated_at AS TEXT) AS u, COALESCE(length(CAST(session_data AS TEXT)), -1) "
            f"AS d{legacy} FROM {st._S} WHERE session_id = ?",
            thread,
        )
        out: list[Any] = [bool(row)] + (
            [row[0]["u"], int(row[0]["d"]), int(row[0]["l"])] if row else [None, 0, 0]
        )
        if st.has_table:
            r = (
                await tx.fetch(
                    f"SELECT COUNT(*) AS n, COALESCE(SUM(length(CAST(run_data AS TEXT))), 0) AS b, "
                    f"COALESCE(MAX(run_index), -1) AS m FROM {st._R} WHERE session_id = ?",
                    thread,
                )
            )[0]
            out += [int(r["n"]), int(r["b"]), int(r["m"])]
        return out

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        d, undo = record["details"], image == "before"
        if record["kind"] == "rewind":
            ids = list(d.get("moved", []))
            if not d.get("hard"):
                return {"moved": ids}
            return {"created": ids} if undo else {"deleted": ids}
        if record["kind"] in ("branch", "run"):
            ids = list(d.get("created", []))
            return {"deleted": ids} if undo else {"created": ids}
        ids = list(d.get("deleted", []))
        return {"created": ids} if undo else {"deleted": ids}

    async def journal_moved(self) -> None:
        self.store._origin_map = None  # the store reads the log again

    # ---- helpers ---------------------------------------------------------------------

    def _json(self) -> str:
        """A `?` holding JSON text, as the column's type wants it."""
        return "CAST(? AS JSONB)" if self.store.kind == "postgres" else "?"

    def _int(self) -> str:
        return "CAST(? AS BIGINT)" if self.store.kind == "postgres" else "?"

    async def _target(self, checkpoint_id: str) -> Any:
        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        return meta

    async def _fresh_archive(self, session: str, checkpoint_id: str) -> str:
        from agentctl.storage.results import hashed_names

        # from a hash of the session and the target: a --dry-run names the session the write uses
        names = hashed_names(f"{session}-rewind-", f"{session}\0{checkpoint_id}")
        for _ in range(20):
            name = names()
            if not await self.store._q(f"SELECT 1 AS x FROM {self.store._S} WHERE session_id = ?", name):
                return name
        raise OperationError(f"no free archive session name for {session!r}; retry")

    async def _session_at(self, tx: Any, sid: str, run_id: str) -> tuple[dict[str, Any], list[Run], int]:
        """In a write's transaction: the session's row (session_data, and runs where the
        table keeps the legacy array), its runs in Agno's order, and the place of the
        top-level run `run_id` among them."""
        st = self.store
        cols = "session_data" + (", runs" if st.has_legacy else "")
        row = (await tx.fetch(f"SELECT {cols} FROM {st._S} WHERE session_id = ?", sid) or [None])[0]
        if row is None:
            raise ThreadNotFound(sid)
        order = await st._order(sid, row.get("runs"), tx.fetch)
        at = next((i for i, r in enumerate(order) if r.run_id == run_id and not r.parent), None)
        if at is None:
            raise CheckpointNotFound(run_id)
        return row, order, at

    async def _renumber(self, op: Any, runs: Sequence[Run], session: str | None = None) -> None:
        """Set the table's runs' run_index to their places (0..) in `runs`, those whose
        index differs (and, `session` given, their session_id to it)."""
        st = self.store
        rows = [
            (r.run_id, i)
            for i, r in enumerate(runs)
            if r.source != "legacy" and (session is not None or r.index != i)
        ]
        if not rows:
            return
        case = "CASE run_id " + " ".join(f"WHEN ? THEN {self._int()}" for _ in rows) + " END"
        values: list[Any] = [v for pair in rows for v in pair]
        assign = f"run_index = {case}"
        if session is not None:
            assign += ", session_id = ?"
            values.append(session)
        ids = [rid for rid, _ in rows]
        await op.update(st.runs_table, RUN_KEY, f"run_id IN ({marks(len(ids))})", ids, assign, values)

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        from agentctl.storage.results import RewindPlan

        meta = await self._target(checkpoint_id)
        moved = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        archive = None if hard or not moved else await self._fresh_archive(meta.thread_id, meta.checkpoint_id)
        return RewindPlan(
            target=meta, thread_id=meta.thread_id, moved=moved, archive_thread=archive, hard=hard
        )

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        from agentctl.storage.results import TimeTravelResult

        st = self.store
        meta = await self._target(checkpoint_id)
        sid = meta.thread_id
        before = await st.count(sid)
        archive = None if hard else (archive_thread or await self._fresh_archive(sid, meta.checkpoint_id))
        threads = [sid] + ([archive] if archive else [])
        op_id, moved_tops = None, []
        async with self.journal_tx(threads) as tx:
            row, order, at = await self._session_at(tx, sid, meta.checkpoint_id)
            kept, later = order[: at + 1], order[at + 1 :]
            moved_tops = [r.run_id for r in top_level(later)]
            if later:
                await st._fill([order[at]] + top_level(later)[-1:], tx.fetch)
                where = "to the trash" if hard else f"to {archive}"
                summary = f"rewind {sid} to step {meta.step}; {len(moved_tops)} run(s) {where}"
                if archive and await tx.fetch(f"SELECT 1 AS x FROM {st._S} WHERE session_id = ?", archive):
                    raise OperationError(f"archive session {archive!r} appeared meanwhile; retry")
                op = await self.journal_begin(
                    tx,
                    "rewind",
                    summary,
                    threads,
                    {
                        "session": sid,
                        "target": meta.checkpoint_id,
                        "step": meta.step,
                        "moved": moved_tops,
                        "runs": [r.run_id for r in later],
                        "hard": hard,
                        "archive": archive,
                    },
                )
                await op.declare(st.sessions_table, SESSION_KEY)
                now = int(self._clock())
                data = obj(row["session_data"])
                state = (order[at].data or {}).get("session_state")
                assign = f"updated_at = {self._int()}"
                values: list[Any] = [now]
                if isinstance(state, dict):
                    assign += f", session_data = {self._json()}"
                    values.append(encode(dict(data, session_state=state), row["session_data"]))
                gone = {r.run_id for r in later}
                entries = legacy_runs(row.get("runs")) if st.has_legacy else []
                if any(e["run_id"] in gone for e in entries):
                    assign += f", runs = {self._json()}"
                    values.append(
                        encode([e for e in entries if e["run_id"] not in gone], decode_raw(row["runs"]))
                    )
                if archive:
                    await self._archive_row(
                        tx,
                        op,
                        sid,
                        archive,
                        data,
                        top_level(later)[-1],
                        [e for e in entries if e["run_id"] in gone],
                        row,
                        now,
                    )
                await op.update(st.sessions_table, SESSION_KEY, "session_id = ?", (sid,), assign, values)
                in_table = [r.run_id for r in later if r.source != "legacy"]
                if hard and in_table:
                    await op.delete(st.runs_table, RUN_KEY, f"run_id IN ({marks(len(in_table))})", in_table)
                elif archive:
                    await self._renumber(op, later, archive)
                if st.has_table:
                    await self._renumber(op, kept)
                op_id = await self.journal_finish(op)
        cp = await st.get(meta.checkpoint_id)
        if cp is None:
            raise CheckpointNotFound(meta.checkpoint_id)
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=sid,
            rewind_depth=len(moved_tops),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=archive if moved_tops else None,
            moved=[] if hard else moved_tops,
            deleted=moved_tops if hard else [],
        )

    async def _archive_row(
        self,
        tx: Any,
        op: Any,
        sid: str,
        archive: str,
        data: dict[str, Any],
        last: Run,
        entries: list[dict[str, Any]],
        row: dict[str, Any],
        now: int,
    ) -> None:
        """The archive session: a copy of the session's row, its session_state the last
        moved run's, its legacy array the moved runs' entries."""
        st = self.store
        state = (last.data or {}).get("session_state")
        new_data = dict(data, session_state=state) if isinstance(state, dict) else data
        await self._session_copy(tx, sid, archive, new_data, row, entries, now, stamped=("updated_at",))
        await op.inserted(st.sessions_table, SESSION_KEY, "session_id = ?", (archive,))

    # ---- edit ------------------------------------------------------------------------

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "change {ref} of {thread} in place (session_state keys: the session's)"
    #: the session_state is a free mapping: `edit --set` may add a key
    EDIT_NEW_KEYS = True
    #: the run's own keys an edit names (the others are session_state keys)
    RUN_KEYS = ("content", "messages")

    @classmethod
    def edit_view(cls, cp: Any) -> dict[str, Any]:
        """What `agentctl edit` changes: the session_state keys (the run's), and the run's
        `content` and own `messages`."""
        run = (cp.tools_result or {}).get("run") or {}
        return {**(cp.state or {}), **{k: run.get(k) for k in cls.RUN_KEYS}}

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        """`agentctl edit`: session_state keys set in the session's session_data as Agno's
        `update_session_state` writes them (the head only: the session's state is its
        latest), `content` / `messages.I.content` in the run's run_data in place (and in
        its legacy array's copy). One op; undo puts the rows back byte for byte."""
        from agentctl.storage.results import OpResult

        st = self.store
        meta = await self._target(checkpoint_id)
        cp = await st.get(checkpoint_id)
        if cp is None:
            raise CheckpointNotFound(checkpoint_id)
        old = self.edit_view(cp)
        new_state = {k: v for k, v in state.items() if k not in self.RUN_KEYS}
        old_state = {k: v for k, v in old.items() if k not in self.RUN_KEYS}
        run_changes = {k: state.get(k) for k in self.RUN_KEYS if state.get(k) != old.get(k)}
        state_changed = new_state != old_state
        sid = meta.thread_id
        if state_changed and meta.step != await st.count(sid):
            raise UsageError(
                f"session_state keys are the session's (its latest): edit {sid} (its head), "
                f"not step {meta.step}"
            )
        async with self.journal_tx([sid]) as tx:
            row, order, at = await self._session_at(tx, sid, meta.checkpoint_id)
            run = order[at]
            await st._fill([run], tx.fetch)
            op = await self.journal_begin(
                tx,
                "edit",
                f"edit {sid} at step {meta.step} ({checkpoint_id}): {what}",
                [sid],
                {"session": sid, "run": checkpoint_id},
            )
            await op.declare(st.sessions_table, SESSION_KEY)
            assign, values = [], []
            if state_changed:  # the keys the edit changed, on the session's current state
                data = obj(row["session_data"])
                current = dict(data.get("session_state") or {})
                current.update({k: v for k, v in new_state.items() if old_state.get(k, current) != v})
                for k in old_state.keys() - new_state.keys():
                    current.pop(k, None)
                assign.append(f"session_data = {self._json()}")
                values.append(encode(dict(data, session_state=current), row["session_data"]))
            entries = legacy_runs(row.get("runs")) if st.has_legacy else []
            if run_changes and any(e["run_id"] == run.run_id for e in entries):
                changed = [dict(e, **run_changes) if e["run_id"] == run.run_id else e for e in entries]
                assign.append(f"runs = {self._json()}")
                values.append(encode(changed, decode_raw(row["runs"])))
            if assign:
                await op.update(
                    st.sessions_table, SESSION_KEY, "session_id = ?", (sid,), ", ".join(assign), values
                )
            if run_changes and run.source != "legacy":
                text = json.dumps(dict(run.data or {}, **run_changes), ensure_ascii=False)
                await op.update(
                    st.runs_table, RUN_KEY, "run_id = ?", (run.run_id,), f"run_data = {self._json()}", [text]
                )
            op_id = await self.journal_finish(op)
        return OpResult(op_id, "edit", f"edited {checkpoint_id} of {sid} in place: {what}")

    # ---- prune ---------------------------------------------------------------------------

    #: a prune of one session: keep its last N runs, or delete it when it is older than an age
    prune_policies = ("keep_last_n", "keep_age")

    @staticmethod
    def _prune_check(spec: Any) -> None:
        from agentctl.storage.contract import Unsupported

        if spec.milestones is not None:
            raise Unsupported("agno", "prune --milestones")
        if spec.statuses:
            raise Unsupported("agno", "prune --status")
        if spec.keep_last is None and spec.older_than is None:
            raise UsageError(
                "give --keep-last N (the runs each session keeps) or --older-than AGE (sessions not "
                "updated for that long are deleted)"
            )
        if spec.keep_last is not None and int(spec.keep_last) < 1:
            raise UsageError(
                "--keep-last must be >= 1 on Agno (a session without runs is no thread; "
                "threads delete or --older-than delete sessions)"
            )
        if spec.older_than is not None and float(spec.older_than) < 0:
            raise UsageError("--older-than must be >= 0")

    async def _prune_targets(self, spec: Any, fetch: Any) -> list[tuple[str, bool]]:
        """(session, whole) of the sessions with runs the prune looks at, by session id:
        `whole` when not updated for --older-than (deleted with its runs), else --keep-last
        applies to it."""
        st = self.store
        params: list[Any] = []
        where = st._where(None, None, params)
        if spec.threads is not None:
            if not spec.threads:
                return []
            where += f" AND s.session_id IN ({marks(len(spec.threads))})"
            params += list(spec.threads)
        rows = await fetch(
            f"SELECT s.session_id, s.created_at, s.updated_at FROM {st._S} s{where} "
            f"ORDER BY s.session_id{st._C}",
            *params,
        )
        missing = sorted(set(spec.threads or ()) - {r["session_id"] for r in rows})
        if missing:
            raise ThreadNotFound(missing[0])
        cutoff = None if spec.older_than is None else self._clock() - float(spec.older_than)
        out = []
        for r in rows:
            when = r["updated_at"] if r["updated_at"] is not None else r["created_at"]
            whole = cutoff is not None and when is not None and float(when) < cutoff
            if whole or spec.keep_last is not None:
                out.append((r["session_id"], whole))
        return out

    def _pruned(self, spec: Any, tops: Sequence[Run], whole: bool) -> list[Run]:
        """The top-level runs a prune deletes of a session's."""
        return list(tops) if whole else list(tops[: max(len(tops) - int(spec.keep_last), 0)])

    async def plan_prune_spec(self, spec: Any, preview: int | None = None) -> list[PrunePlan]:
        """A plan per session the prune changes: its older runs (--keep-last N: all but
        its last N), or all of them (the whole session, --older-than)."""
        from agentctl.storage.results import CheckpointGC, PrunePlan, duration_text

        self._prune_check(spec)
        st = self.store
        await st.connect()
        out = []
        for sid, whole in await self._prune_targets(spec, st._q):
            tops = await st._tops(sid)
            gone = len(self._pruned(spec, tops, whole))
            if not gone:
                continue
            metas = await st.read_thread(sid, gone if preview is None else min(gone, max(0, int(preview))), 0)
            if whole:
                out.append(
                    PrunePlan(
                        sid,
                        CheckpointGC.KEEP_AGE,
                        float(spec.older_than),
                        metas,
                        0,
                        gone,
                        reason=f"the whole session: not updated for {duration_text(spec.older_than)}",
                    )
                )
            else:
                out.append(
                    PrunePlan(
                        sid, CheckpointGC.KEEP_LAST_N, float(spec.keep_last), metas, len(tops) - gone, gone
                    )
                )
        return out

    @retried_write
    async def prune_spec(
        self, spec: Any, *, progress: Any = None, plans: Sequence[Any] | None = None
    ) -> list[OpResult]:
        """One op: of each session the older runs deleted with their member runs (the
        legacy array's entries too; the kept runs' run_index renumbered 0.., so that the
        next run agno appends comes after them), or the whole session; undo puts every row
        back."""
        from agentctl.storage.results import OpResult
        from agentctl.storage.sqlutil import in_chunks

        self._prune_check(spec)
        st = self.store
        await st.connect()
        targets = await self._prune_targets(spec, st._q)
        async with self.journal_tx([sid for sid, _ in targets]) as tx:
            work = []
            for sid, whole in targets:
                cols = "session_data" + (", runs" if st.has_legacy else "")
                row = (await tx.fetch(f"SELECT {cols} FROM {st._S} WHERE session_id = ?", sid) or [None])[0]
                if row is None:
                    continue
                order = await st._order(sid, row.get("runs"), tx.fetch)
                gone_tops = self._pruned(spec, top_level(order), whole)
                if gone_tops:
                    work.append((sid, whole, row, order, gone_tops))
            if not work:
                return [OpResult(None, "prune", "nothing to prune: no session has runs to delete")]
            deleted = [r.run_id for *_, gone_tops in work for r in gone_tops]
            sessions = [w[0] for w in work]
            summary = (
                f"prune {len(sessions)} session(s) ({', '.join(sessions[:5])}{', …' if len(sessions) > 5 else ''})"
                f": deleted {len(deleted)} run(s)"
            )
            op = await self.journal_begin(
                tx,
                "prune",
                summary,
                sessions,
                {
                    "sessions": sessions,
                    "keep_last": spec.keep_last,
                    "older_than": spec.older_than,
                    "whole": [w[0] for w in work if w[1]],
                    "deleted": deleted,
                },
            )
            await op.declare(st.sessions_table, SESSION_KEY)
            for sid, whole, row, order, gone_tops in work:
                if whole:
                    if st.has_table:
                        await op.delete(st.runs_table, RUN_KEY, "session_id = ?", (sid,))
                    await op.delete(st.sessions_table, SESSION_KEY, "session_id = ?", (sid,))
                    continue
                tops_gone = {r.run_id for r in gone_tops}
                gone = {r.run_id for r in order if r.run_id in tops_gone or r.parent in tops_gone}
                for ph, chunk in in_chunks(
                    [r.run_id for r in order if r.run_id in gone and r.source != "legacy"]
                ):
                    await op.delete(st.runs_table, RUN_KEY, f"run_id IN ({ph})", chunk)
                entries = legacy_runs(row.get("runs")) if st.has_legacy else []
                if any(e["run_id"] in gone for e in entries):
                    await op.update(
                        st.sessions_table,
                        SESSION_KEY,
                        "session_id = ?",
                        (sid,),
                        f"runs = {self._json()}",
                        [encode([e for e in entries if e["run_id"] not in gone], decode_raw(row["runs"]))],
                    )
                if st.has_table:
                    await self._renumber(op, [r for r in order if r.run_id not in gone])
            op_id = await self.journal_finish(op)
        if progress is not None:
            progress(len(deleted))
        return [OpResult(op_id, "prune", summary, deleted=deleted)]

    # ---- run: what Agno's run wrote, recorded after the fact --------------------------

    async def run_options(self, thread_id: str, from_id: str | None = None) -> dict[str, Any]:
        """What the run's child needs besides the database: the tables agentctl reads (agno
        is pointed at them), and on Postgres the schema they are in."""
        st = self.store
        schema = None
        if st.kind == "postgres":
            schema = (await st._q("SELECT current_schema() AS s"))[0]["s"]
        return {"tables": [st.sessions_table, st.runs_table], "schema": schema}

    async def _run_rows(self, fetch: Any, exists: Any, sid: str) -> dict[str, Any]:
        """The session's row as values (each column as stored; Postgres: as text) and the
        ids of its runs in the runs table (where there is one: agno 3 makes it on an agno 2
        file)."""
        st = self.store
        cols = ", ".join(
            f"CAST({c} AS TEXT) AS {c}" if st.kind == "postgres" else c for c in st.session_columns
        )
        rows = await fetch(f"SELECT {cols} FROM {st._S} WHERE session_id = ?", sid)
        runs = []
        if await exists(st.runs_table):
            runs = sorted(
                r["run_id"] for r in await fetch(f"SELECT run_id FROM {st._R} WHERE session_id = ?", sid)
            )
        return {"session": dict(rows[0]) if rows else None, "runs": runs}

    async def run_keys(self, thread_id: str) -> dict[str, Any]:
        """The rows a run may change, as they are (read before it)."""
        await self.store.connect()
        return await self._run_rows(self.store._q, self.store.connection.table_exists, thread_id)

    @retried_write
    async def record_run(
        self, thread_id: str, before: dict[str, Any], summary: str, details: dict[str, Any], kind: str = "run"
    ) -> int | None:
        """One op for what Agno's run wrote: the runs it added (inserted rows; its members'
        too) and the session's row (its before-image from `before`, its after-image as it
        is; inserted when the run made the session). None: the run wrote nothing."""
        from agentctl.storage.journal.trash import row_select
        from agentctl.storage.sqlutil import in_chunks

        st, sid = self.store, thread_id
        async with self.journal_tx([sid]) as tx:
            now = await self._run_rows(tx.fetch, tx.table_exists, sid)
            if now == before:
                return None
            if not st.has_table and await tx.table_exists(st.runs_table):
                # agno 3 made the runs table on an agno 2 file: the layout is mixed now (the
                # fingerprints, as the next process reads the file, count its runs)
                from agentctl.storage.agno import layout
                from agentctl.storage.journal.trash import columns

                tables = {
                    st.sessions_table: set(st.session_columns),
                    st.runs_table: set(await columns(tx, st.runs_table)),
                }
                st.layout, st.run_columns = layout(tables, st.sessions_table), sorted(tables[st.runs_table])
            added = [r for r in now["runs"] if r not in set(before["runs"])]
            tops = [
                r.run_id for r in top_level(await st._order(sid, None, tx.fetch)) if r.run_id in set(added)
            ]
            op = await self.journal_begin(tx, kind, summary, [sid], dict(details, session=sid, created=tops))
            await op.declare(st.sessions_table, SESSION_KEY)
            if now["session"] != before["session"]:
                if before["session"] is not None:
                    await op.was(
                        st.sessions_table,
                        SESSION_KEY,
                        *await row_select(tx, st.sessions_table, before["session"]),
                    )
                await op.inserted(st.sessions_table, SESSION_KEY, "session_id = ?", (sid,))
            for ph, chunk in in_chunks(added):
                await op.inserted(st.runs_table, RUN_KEY, f"run_id IN ({ph})", chunk)
            op_id = await self.journal_finish(op)
        self.store._origin_map = None
        return op_id

    # ---- threads delete ----------------------------------------------------------------

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        from agentctl.storage.results import DeletePlan

        if await self.store.thread_summary(thread_id) is None:
            raise ThreadNotFound(thread_id)
        return DeletePlan(thread_id, await self.store.count(thread_id))

    @retried_write
    async def delete_thread(self, thread_id: str) -> OpResult:
        from agentctl.storage.results import OpResult

        st = self.store
        async with self.journal_tx([thread_id]) as tx:
            if not await tx.fetch(f"SELECT 1 AS x FROM {st._S} WHERE session_id = ?", thread_id):
                raise ThreadNotFound(thread_id)
            deleted = [r.run_id for r in top_level(await st._order(thread_id, None, tx.fetch))]
            summary = f"delete session {thread_id} ({len(deleted)} run(s))"
            op = await self.journal_begin(
                tx, "delete_thread", summary, [thread_id], {"thread": thread_id, "deleted": deleted}
            )
            await op.declare(st.sessions_table, SESSION_KEY)
            if st.has_table:
                await op.delete(st.runs_table, RUN_KEY, "session_id = ?", (thread_id,))
            await op.delete(st.sessions_table, SESSION_KEY, "session_id = ?", (thread_id,))
            op_id = await self.journal_finish(op)
        return OpResult(op_id, "delete_thread", summary, deleted=deleted)

    # ---- branch ----------------------------------------------------------------------

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """A new session `SESSION-branch-NAME-XXXX` with copies of the session's runs up to
        the checkpoint's (members too) under new run ids, as Agno's `fork_session` writes
        them (`forked_from_session_id` on the session and, where empty, on each run; the
        member runs' `parent_run_id` and the forks' references mapped to the copies), its
        session_state the run's; its id."""
        import uuid

        st = self.store
        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-')")
        meta = await self._target(from_checkpoint_id)
        sid = meta.thread_id
        new = ""
        for _ in range(20):
            new = f"{sid}-branch-{name}-{self._hex()}"
            if not await st._q(f"SELECT 1 AS x FROM {st._S} WHERE session_id = ?", new):
                break
        else:
            raise OperationError(f"no free session name for a branch of {sid!r}; retry")
        async with self.journal_tx([sid, new]) as tx:
            row, order, at = await self._session_at(tx, sid, meta.checkpoint_id)
            copied = order[: at + 1]
            await st._fill(copied, tx.fetch)
            ids = {r.run_id: str(uuid.uuid4()) for r in copied}
            summary = f"branch {new} from {sid} at step {meta.step} ({len(top_level(copied))} run(s))"
            op = await self.journal_begin(
                tx,
                "branch",
                summary,
                [sid, new],
                {
                    "session": sid,
                    "from": meta.checkpoint_id,
                    "step": meta.step,
                    "branch_session": new,
                    "created": [ids[r.run_id] for r in top_level(copied)],
                },
            )
            await op.declare(st.sessions_table, SESSION_KEY)
            now = int(self._clock())
            data = obj(row["session_data"])
            state = (copied[-1].data or {}).get("session_state")
            new_data = dict(data, forked_from_session_id=sid)
            if isinstance(state, dict):
                new_data["session_state"] = state
            copies = [self._copy(r, ids, sid, new) for r in copied]
            entries = [] if st.has_table else copies
            await self._session_copy(tx, sid, new, new_data, row, entries, now)
            await op.inserted(st.sessions_table, SESSION_KEY, "session_id = ?", (new,))
            if st.has_table:
                for i, (r, data_copy) in enumerate(zip(copied, copies, strict=False)):
                    await self._insert_run(tx, r, data_copy, new, i)
                await op.inserted(st.runs_table, RUN_KEY, "session_id = ?", (new,))
            await self.journal_finish(op)
        self.store._origin_map = None
        return new

    @staticmethod
    def _copy(run: Run, ids: dict[str, str], sid: str, new: str) -> dict[str, Any]:
        import copy

        data = copy.deepcopy(run.data or {})
        data["run_id"] = ids[run.run_id]
        data["session_id"] = new
        if not data.get("forked_from_session_id"):
            data["forked_from_session_id"] = sid
        for key in ("parent_run_id", "forked_from_run_id", "regenerated_from"):
            if data.get(key) in ids:
                data[key] = ids[data[key]]
        return data

    async def _session_copy(
        self,
        tx: Any,
        sid: str,
        new: str,
        data: dict[str, Any],
        row: dict[str, Any],
        entries: list[dict[str, Any]],
        now: int,
        stamped: tuple[str, ...] = ("created_at", "updated_at"),
    ) -> None:
        """A new session row copying the session's, with this session_data (and legacy
        array, where the sessions table keeps one), `stamped` columns set to `now` (an
        archive keeps the session's created_at)."""
        st = self.store
        copied = [c for c in st.session_columns if c not in ("session_id", "session_data", "runs", *stamped)]
        names = ["session_id", "session_data", *stamped] + copied
        exprs = ["?", self._json(), *(self._int() for _ in stamped)] + copied
        values: list[Any] = [new, encode(data, row["session_data"]), *(now for _ in stamped)]
        if st.has_legacy:
            names.append("runs")
            exprs.append(self._json() if entries else "NULL")
            if entries:
                values.append(encode(entries, decode_raw(row["runs"])))
        await tx.execute(
            f"INSERT INTO {st._S} ({', '.join(names)}) SELECT {', '.join(exprs)} FROM {st._S} "
            "WHERE session_id = ?",
            *values,
            sid,
        )

    async def _insert_run(self, tx: Any, run: Run, data: dict[str, Any], new: str, index: int) -> None:
        """A copy of a run as a row of the runs table (of the table's row where there is
        one: its columns kept but the ids, the index and the run_data)."""
        st = self.store
        own = {
            "run_id": data["run_id"],
            "session_id": new,
            "parent_run_id": data.get("parent_run_id"),
            "run_index": index,
            "run_data": json.dumps(data, ensure_ascii=False),
        }
        typed = {"run_index": self._int(), "run_data": self._json()}
        if run.source != "legacy":
            rest = [c for c in st.run_columns if c not in own]
            names = list(own) + rest
            exprs = [typed.get(k, "?") for k in own] + rest
            await tx.execute(
                f"INSERT INTO {st._R} ({', '.join(names)}) SELECT {', '.join(exprs)} FROM {st._R} "
                "WHERE run_id = ?",
                *own.values(),
                run.run_id,
            )
            return
        status = data.get("status")
        more = {
            "run_type": run.run_type,
            "agent_id": data.get("agent_id"),
            "team_id": data.get("team_id"),
            "workflow_id": data.get("workflow_id"),
            "user_id": data.get("user_id"),
            "status": str(status) if status is not None else None,
            "created_at": int(data.get("created_at") or self._clock()),
            "updated_at": None,
        }
        typed.update(created_at=self._int(), updated_at=self._int())
        values = {**own, **{k: v for k, v in more.items() if k in st.run_columns}}
        await tx.execute(
            f"INSERT INTO {st._R} ({', '.join(values)}) VALUES "
            f"({', '.join(typed.get(k, '?') for k in values)})",
            *values.values(),
        )


def decode_raw(value: Any) -> Any:
    """A column's stored text as `encode` compares it (bytes as text)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return value
