"""Writes on CrewAI's checkpoints and flow states, as CrewAI reads them afterwards, each
one transaction recorded by the journal (agentctl/storage/journal/): undo, redo, oplog
and purge are the journal's. The replay store is read only (its format has no writes).

Checkpoints (CrewAI keeps no head pointer: its restore and its "latest" read the newest
row; its listing and restore read `branch` and `parent_id` from `data`, so a write sets
both, in `data` and in the columns):
- `rewind REF` appends a copy of REF as the newest row of its branch (a new id, its
  parent REF): `Flow.from_checkpoint` of it, or of the branch's newest row, restores REF's
  state; the rows after REF stay (`--hard`: they are deleted instead, REF is the newest);
- `branch REF NAME`: a new branch NAME (as `Flow.fork(config, branch=NAME)` names it)
  whose first row holds REF's state, its parent REF;
- `edit REF --set KEY=JSON`: a new row of REF's branch, a copy of REF with the values
  (KEY a path in `data`, e.g. `entities.0.checkpoint_state.city`), its parent REF;
- `prune --keep-last N` / `--older-than AGE`: each branch's older rows (never its newest,
  nor a row another branch was forked from);
- `threads delete BRANCH`: its rows to the trash. (An undo puts rows back with new
  rowids: in their order within the branch, but after the rows other branches got
  meanwhile; `rewind --hard`, whose undo would move a branch's rows behind another's, is
  not offered.)
New ids are CrewAI's: `YYYYmmddTHHMMSS_<8 hex>`, `created_at` the same time.

Flow states (`@persist`; `load_state(uuid)` reads a flow's newest row):
- `rewind UUID@N`: the rows after N move to an archive flow `UUID-rewind-XXXX` (or, hard,
  to the trash): `load_state(UUID)` returns row N and `kickoff(inputs={"id": UUID})`
  continues from it;
- `branch UUID@N NAME`: a new flow (a new uuid) holding copies of rows 1..N, its state's
  `id` the new uuid;
- `edit`: a new row of the flow with the changed state (REF's method name);
- `threads delete UUID`.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid as uuidlib
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.storage.contract import History, RewindAndBranchOnly, retried_write
from agentctl.storage.crewai.store import CheckpointStore, FlowStateStore, load_json
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.sql import jsonb

if TYPE_CHECKING:
    from agentctl.storage.results import DeletePlan, OpResult, PrunePlan, RewindPlan, TimeTravelResult

_NAME = re.compile(r"^[A-Za-z0-9._/-]{1,128}$")


class _Base(JournalHistory, RewindAndBranchOnly, History):
    """What the two stores' histories share: the clock, the journal's fingerprint (a
    thread's rows: count, last, sizes), the target's lookup, delete_thread."""

    store: Any

    def __init__(
        self, store: Any, *, now: Callable[[], datetime] | None = None, hex8: Callable[[], str] | None = None
    ) -> None:
        self.store = store
        self._clock = now or (lambda: datetime.now(timezone.utc))
        self._hex = hex8 or (lambda: secrets.token_hex(4))
        self._now = lambda: self._clock().isoformat()

    @property
    def _T(self) -> str:
        return str(self.store.TABLE)

    async def fingerprint(self, tx: Any, thread: str) -> list[Any]:
        s = self.store
        size = " + ".join(f"COALESCE(LENGTH(CAST({c} AS BLOB)), 0)" for c in s.COLUMNS)
        # (by key, not rowid: an undo of checkpoints puts their rowids back after its move)
        r = (
            await tx.fetch(
                f"SELECT COUNT(*) AS n, MAX({s.KEY}) AS m, COALESCE(SUM({size}), 0) AS b "
                f"FROM {s.TABLE} WHERE {s.THREAD} = ?",
                thread,
            )
        )[0]
        return [int(r["n"]), r["m"], int(r["b"])]

    async def _target(self, checkpoint_id: str) -> Any:
        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        return meta

    async def _row(self, tx: Any, checkpoint_id: str) -> dict[str, Any]:
        s = self.store
        rows = await tx.fetch(f"{s._SELECT} WHERE {s.KEY} = ?", s.key_of(checkpoint_id))
        if not rows:
            raise CheckpointNotFound(checkpoint_id)
        return rows[0]

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        from agentctl.storage.results import DeletePlan

        n = await self.store.count(thread_id)
        if not n:
            raise UsageError(f"thread {thread_id!r} not found")
        branches = await self.store.branches_of([thread_id])
        return DeletePlan(thread_id, n, [], list(dict.fromkeys(b.thread_id for b in branches)))

    @retried_write
    async def delete_thread(self, thread_id: str) -> OpResult:
        from agentctl.storage.results import OpResult

        s = self.store
        async with self.journal_tx([thread_id]) as tx:
            keys = await tx.fetch(
                f"SELECT {s.KEY} AS k FROM {s.TABLE} WHERE {s.THREAD} = ? ORDER BY {s.ORDER}", thread_id
            )
            if not keys:
                raise UsageError(f"thread {thread_id!r} not found")
            deleted = [s.cid(k) for k in keys]
            summary = f"delete thread {thread_id} ({len(keys)} checkpoint(s))"
            op = await self.journal_begin(
                tx,
                "delete_thread",
                summary,
                [thread_id],
                {"deleted": deleted, **await self._rowids(tx, thread_id)},
            )
            await op.delete(s.TABLE, (s.KEY,), f"{s.THREAD} = ?", (thread_id,))
            op_id = await self.journal_finish(op)
        return OpResult(op_id, "delete_thread", summary, deleted=deleted)

    async def _rowids(self, tx: Any, thread_id: str, ids: Sequence[str] | None = None) -> dict[str, Any]:
        """What an undo needs to put deleted rows back in their place (checkpoints: their
        rowids, CrewAI's order); nothing for flow states (their id is their order)."""
        return {}

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        d, undo = record["details"], image == "before"
        made, gone = d.get("created", []), d.get("deleted", [])
        moved = d.get("moved", [])
        out: dict[str, list[str]] = {"created": gone if undo else made, "deleted": made if undo else gone}
        if moved:
            out["moved"] = moved
        return out

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        raise NotImplementedError

    # ---- run: what CrewAI wrote in `agentctl run` (crewai_child.py), one op ------------

    async def run_keys(self, thread_id: str) -> dict[str, Any]:
        """The table's newest row (rowid) before a run: CrewAI's writes come after it."""
        rows = await self.store._q(f"SELECT COALESCE(MAX(rowid), 0) AS m FROM {self._T}")
        return {"last": int(rows[0]["m"])}

    @retried_write
    async def record_run(
        self, thread_id: str, before: dict[str, Any], summary: str, details: dict[str, Any], kind: str = "run"
    ) -> int | None:
        """One op of the rows CrewAI added since `before` (after its newest row then), of
        whatever thread (CrewAI writes to the one it resumed or kicked off); None: none."""
        s, last = self.store, int(before.get("last", 0))
        rows = await s._q(f"SELECT DISTINCT {s.THREAD} AS t FROM {s.TABLE} WHERE rowid > ?", last)
        threads = sorted({thread_id, *(r["t"] for r in rows)})
        async with self.journal_tx(threads) as tx:
            keys = await tx.fetch(f"SELECT {s.KEY} AS k FROM {s.TABLE} WHERE rowid > ? ORDER BY rowid", last)
            if not keys:
                return None
            created = [s.cid(k) for k in keys]
            op = await self.journal_begin(tx, kind, summary, threads, dict(details, created=created))
            await op.inserted(s.TABLE, (s.KEY,), "rowid > ?", (last,))
            return await self.journal_finish(op)

    #: `edit`'s confirmation ({ref}, {thread})
    EDIT_CONFIRM = "write a new row of {thread}: a copy of {ref} with these values"
    EDIT_NEW_KEYS = True


class CheckpointHistory(_Base):
    """Writes on CrewAI's checkpoints (see the module)."""

    store: CheckpointStore

    def _new_id(self) -> tuple[str, str]:
        ts = self._clock().astimezone(timezone.utc).strftime("%Y%m%dT%H%M%S")
        return f"{ts}_{self._hex()[:8]}", ts

    async def _fresh_id(self, tx: Any) -> tuple[str, str]:
        """A new checkpoint id no row has, and its time (`created_at`)."""
        for _ in range(20):
            cid, ts = self._new_id()
            if not await tx.fetch(f"SELECT 1 AS x FROM {self.store.TABLE} WHERE id = ?", cid):
                return cid, ts
        raise OperationError("no free checkpoint id; retry")

    async def _insert_copy(
        self, tx: Any, op: Any, data: dict[str, Any], parent: str, branch: str, new: tuple[str, str]
    ) -> str:
        """A new row `new` (id, time) holding `data` (event_record and all), its parent
        and branch set in `data` and in the columns; its id."""
        cid, ts = new
        row = {**data, "parent_id": parent, "branch": branch}
        await tx.execute(
            f"INSERT INTO {self.store.TABLE} (id, created_at, parent_id, branch, data) "
            "VALUES (?, ?, ?, ?, ?)",
            cid,
            ts,
            parent,
            branch,
            jsonb.encode(row),
        )
        await op.inserted(self.store.TABLE, ("id",), "id = ?", (cid,))
        return cid

    async def _data(self, tx: Any, checkpoint_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        row = await self._row(tx, checkpoint_id)
        data = load_json(row["data"])
        if not isinstance(data, dict):
            raise UsageError(f"{checkpoint_id}: its data is not a JSON object")
        return row, data

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        from agentctl.storage.results import RewindPlan

        _no_hard(hard)
        meta = await self._target(checkpoint_id)
        later = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        # a copy of the target becomes the newest row of the same branch
        return RewindPlan(
            target=meta, thread_id=meta.thread_id, moved=later, archive_thread=meta.thread_id, hard=False
        )

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        from agentctl.storage.results import TimeTravelResult

        _no_hard(hard)
        meta = await self._target(checkpoint_id)
        branch = meta.thread_id
        before = await self.store.count(branch)
        later = [m.checkpoint_id for m in await self.store.read_thread(branch, 2**62, meta.step)]
        if not later:
            cp = await self.store.get(meta.checkpoint_id)
            assert cp is not None
            return TimeTravelResult(
                checkpoint=cp, thread_id=branch, rewind_depth=0, snapshot_count_before=before
            )
        async with self.journal_tx([branch]) as tx:
            _, data = await self._data(tx, meta.checkpoint_id)
            new = await self._fresh_id(tx)
            summary = (
                f"rewind {branch} to {meta.checkpoint_id}: a copy of it, {new[0]}, is the branch's newest row"
            )
            op = await self.journal_begin(
                tx, "rewind", summary, [branch], {"target": meta.checkpoint_id, "created": [new[0]]}
            )
            head = await self._insert_copy(tx, op, data, meta.checkpoint_id, branch, new)
            op_id = await self.journal_finish(op)
        cp = await self.store.get(head)
        assert cp is not None
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=branch,
            rewind_depth=len(later),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=branch,
            moved=later,
        )

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-', '/')")
        meta = await self._target(from_checkpoint_id)
        if await self.store.count(name):
            raise UsageError(f"branch {name!r} exists already")
        async with self.journal_tx([name, meta.thread_id]) as tx:
            if await tx.fetch(f"SELECT 1 AS x FROM {self.store.TABLE} WHERE branch = ? LIMIT 1", name):
                raise OperationError(f"branch {name!r} appeared meanwhile; retry")
            _, data = await self._data(tx, meta.checkpoint_id)
            new = await self._fresh_id(tx)
            op = await self.journal_begin(
                tx,
                "branch",
                f"branch {name} from {meta.checkpoint_id}",
                [name, meta.thread_id],
                {"target": meta.checkpoint_id, "branch": name, "created": [new[0]]},
            )
            await self._insert_copy(tx, op, data, meta.checkpoint_id, name, new)
            await self.journal_finish(op)
        return name

    async def run_options(self, thread_id: str, from_id: str | None = None) -> dict[str, Any]:
        """What the child restores (crewai_child.py): the flow, or the crew, of the
        checkpoint `from_id`, CrewAI's checkpointing as that entity's own config had it
        (its `on_events`), pointed at this file. UsageError for a crew whose agents'
        models CrewAI cannot rebuild from their names (a BaseLLM subclass of the user's:
        `Crew.from_checkpoint` would make a model of CrewAI's own of that name instead)."""
        row = await self.store._row(str(from_id))
        data = load_json(row["data"]) if row is not None else None
        entities = (
            [e for e in (data or {}).get("entities") or [] if isinstance(e, dict)]
            if isinstance(data, dict)
            else []
        )
        kinds = [e.get("entity_type") for e in entities]
        # the root is the first entity (a crew's own rows hold a flow of its agents' after it)
        kind = kinds[0] if kinds and kinds[0] in ("flow", "crew") else None
        if kind is None:
            raise UsageError(
                f"{from_id} holds no flow or crew (it holds: {', '.join(map(str, kinds)) or 'nothing'}); "
                "run resumes CrewAI flows and crews"
            )
        if kind == "crew":
            for e in entities:
                for agent in (e.get("agents") or []) if e.get("entity_type") == "crew" else []:
                    llm = agent.get("llm") if isinstance(agent, dict) else None
                    if isinstance(llm, dict) and llm.get("llm_type") == "base":
                        raise UsageError(
                            f"{from_id}: the crew's agent {agent.get('role')!r} has a model of its own class (a "
                            f"BaseLLM subclass, model {llm.get('model')!r}), which CrewAI's Crew.from_checkpoint "
                            "cannot rebuild from its name (it would call a model of that name instead): nothing run"
                        )
        config = next(
            (
                e.get("checkpoint")
                for e in entities
                if e.get("entity_type") == kind and isinstance(e.get("checkpoint"), dict)
            ),
            None,
        )
        events = config.get("on_events") if isinstance(config, dict) else None
        return {
            "mode": "resume",
            "entity": kind,
            "steps": await self.store.count(thread_id),
            "on_events": [str(x) for x in events] if isinstance(events, list) else None,
        }

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        """What `edit` changes: the checkpoint's `data` (its event_record aside)."""
        return {k: v for k, v in (cp.state or {}).items() if k != "events"}

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        from agentctl.storage.results import OpResult

        meta = await self._target(checkpoint_id)
        branch = meta.thread_id
        async with self.journal_tx([branch]) as tx:
            _, data = await self._data(tx, meta.checkpoint_id)
            new = {**state, "event_record": data.get("event_record")}
            fresh = await self._fresh_id(tx)
            op = await self.journal_begin(
                tx,
                "edit",
                f"edit {branch} at {meta.checkpoint_id}: {what}",
                [branch],
                {"target": meta.checkpoint_id, "created": [fresh[0]]},
            )
            cid = await self._insert_copy(tx, op, new, meta.checkpoint_id, branch, fresh)
            op_id = await self.journal_finish(op)
        return OpResult(
            op_id,
            "edit",
            f"edited {branch}: {cid}, a copy of {meta.checkpoint_id} with {what}, is its newest row",
            created=[cid],
        )

    async def _rowids(self, tx: Any, thread_id: str, ids: Sequence[str] | None = None) -> dict[str, Any]:
        rows = await tx.fetch("SELECT id, rowid AS o FROM checkpoints WHERE branch = ?", thread_id)
        want = None if ids is None else set(ids)
        return {"rowids": {r["id"]: int(r["o"]) for r in rows if want is None or r["id"] in want}}

    async def journal_move(
        self, tx: Any, record: dict[str, Any], image: str, threads: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The journal's move, then (an undo) the rows it put back at their rowids again:
        CrewAI orders a branch (and finds its latest row) by rowid, and the journal's
        insert gives them new ones, after every row. A rowid another row took meanwhile
        is left as the insert made it."""
        moved = await super().journal_move(tx, record, image, threads)
        if image == "before":
            for cid, rowid in sorted((record["details"].get("rowids") or {}).items(), key=lambda kv: kv[1]):
                if not await tx.fetch("SELECT 1 AS x FROM checkpoints WHERE rowid = ?", rowid):
                    await tx.execute("UPDATE checkpoints SET rowid = ? WHERE id = ?", rowid, cid)
        return moved

    # ---- prune ----------------------------------------------------------------------

    prune_policies = ("keep_last_n", "keep_age")

    @staticmethod
    def _policy(spec: Any) -> tuple[Any, float]:
        from agentctl.storage.contract import Unsupported
        from agentctl.storage.results import CheckpointGC

        if spec.milestones is not None or spec.statuses is not None:
            raise Unsupported("crewai", "prune --milestones/--status")
        if spec.keep_last is not None:
            return CheckpointGC.KEEP_LAST_N, float(spec.keep_last)
        if spec.older_than is not None:
            return CheckpointGC.KEEP_AGE, float(spec.older_than)
        raise UsageError("give a policy: --keep-last N or --older-than AGE")

    async def _prune_rows(
        self, fetch: Any, spec: Any, now: datetime
    ) -> list[tuple[str, list[Any], int, list[str]]]:
        """(branch, the rows to delete, how many stay, the fork points kept) of each branch
        asked for: the older rows beyond the newest N (or older than the age), never the
        branch's newest row (what CrewAI restores) nor a row another branch was forked from."""
        from agentctl.storage.crewai.store import ts_iso
        from agentctl.storage.timefmt import to_datetime

        policy, param = self._policy(spec)
        branches = (
            spec.threads
            if spec.threads is not None
            else [r["b"] for r in await fetch("SELECT DISTINCT branch AS b FROM checkpoints ORDER BY b")]
        )
        out = []
        for branch in branches:
            rows = await fetch(
                "SELECT id, created_at, rowid AS o FROM checkpoints WHERE branch = ? ORDER BY rowid", branch
            )
            if not rows:
                raise UsageError(f"thread {branch!r} not found")
            forks = {
                r["p"]
                for r in await fetch(
                    "SELECT DISTINCT parent_id AS p FROM checkpoints WHERE branch <> ? "
                    "AND parent_id IS NOT NULL",
                    branch,
                )
            }
            if policy.value == "keep_last_n":
                old = rows[: max(len(rows) - int(param), 0)]
            else:
                cut = now.timestamp() - param
                old = [r for r in rows[:-1] if to_datetime(ts_iso(r["created_at"])).timestamp() < cut]
            old = [r for r in old if r["o"] != rows[-1]["o"]]
            kept = [r["id"] for r in old if r["id"] in forks]
            gone = [r for r in old if r["id"] not in forks]
            out.append((branch, gone, len(rows) - len(gone), kept))
        return out

    async def plan_prune_spec(self, spec: Any, preview: int | None = None) -> list[PrunePlan]:
        from agentctl.model import CheckpointMetadata
        from agentctl.storage.crewai.store import ts_iso
        from agentctl.storage.results import PrunePlan

        policy, param = self._policy(spec)
        await self.store.connect()
        out = []
        for branch, gone, keep, forks in await self._prune_rows(self.store._q, spec, self._clock()):
            steps = {
                r["o"]: i + 1
                for i, r in enumerate(
                    await self.store._q(
                        "SELECT rowid AS o FROM checkpoints WHERE branch = ? ORDER BY rowid", branch
                    )
                )
            }
            shown = gone if preview is None else gone[:preview]
            metas = [
                CheckpointMetadata(branch, r["id"], steps[r["o"]], None, ts_iso(r["created_at"]))
                for r in shown
            ]
            out.append(
                PrunePlan(
                    branch, policy, param, metas, keep, len(gone), forks_kept=len(forks), fork_points=forks
                )
            )
        return out

    @retried_write
    async def prune_spec(self, spec: Any, *, progress: Any = None, plans: Any = None) -> list[OpResult]:
        from agentctl.storage.results import OpResult
        from agentctl.storage.sqlutil import in_chunks

        async with self.journal_tx(list(spec.threads or [])) as tx:
            found = [p for p in await self._prune_rows(tx.fetch, spec, self._clock()) if p[1]]
            if not found:
                return [OpResult(None, "prune", "nothing to prune")]
            deleted = [r["id"] for _, gone, _, _ in found for r in gone]
            branches = [b for b, *_ in found]
            summary = f"prune {len(deleted)} checkpoint(s) of {len(branches)} branch(es)"
            rowids = {r["id"]: int(r["o"]) for _, gone, _, _ in found for r in gone}
            op = await self.journal_begin(
                tx,
                "prune",
                summary,
                branches,
                {"threads": {b: len(g) for b, g, _, _ in found}, "deleted": deleted, "rowids": rowids},
            )
            for ph, chunk in in_chunks(deleted):
                await op.delete(self.store.TABLE, ("id",), f"id IN ({ph})", chunk)
            if progress is not None:
                progress(len(found))
            op_id = await self.journal_finish(op)
        return [OpResult(op_id, "prune", summary, deleted=deleted)]


class FlowStateHistory(_Base):
    """Writes on `@persist` flow states (see the module)."""

    store: FlowStateStore

    async def _archive(self, flow: str, checkpoint_id: str) -> str:
        from agentctl.storage.results import hashed_names

        names = hashed_names(f"{flow}-rewind-", f"{flow}\0{checkpoint_id}")
        for _ in range(20):
            name = names()
            if not await self.store.count(name):
                return name
        raise OperationError(f"no free archive name for {flow!r}; retry")

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        from agentctl.storage.results import RewindPlan

        meta = await self._target(checkpoint_id)
        later = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        archive = None if hard or not later else await self._archive(meta.thread_id, meta.checkpoint_id)
        return RewindPlan(
            target=meta, thread_id=meta.thread_id, moved=later, archive_thread=archive, hard=hard
        )

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        from agentctl.storage.results import TimeTravelResult

        meta = await self._target(checkpoint_id)
        flow = meta.thread_id
        before = await self.store.count(flow)
        row_id = self.store.key_of(meta.checkpoint_id)
        archive = None if hard else (archive_thread or await self._archive(flow, meta.checkpoint_id))
        threads = [flow] + ([archive] if archive else [])
        op_id = None
        async with self.journal_tx(threads) as tx:
            later = [
                self.store.cid(r)
                for r in await tx.fetch(
                    "SELECT id AS k FROM flow_states WHERE flow_uuid = ? AND id > ? ORDER BY id", flow, row_id
                )
            ]
            if later:
                where = "deleted" if hard else f"moved to {archive}"
                op = await self.journal_begin(
                    tx,
                    "rewind",
                    f"rewind {flow} to step {meta.step}; {len(later)} row(s) {where}",
                    threads,
                    {
                        "target": meta.checkpoint_id,
                        "hard": hard,
                        "archive": archive,
                        **({"deleted": later} if hard else {"moved": later}),
                    },
                )
                if hard:
                    await op.delete("flow_states", ("id",), "flow_uuid = ? AND id > ?", (flow, row_id))
                else:
                    if await tx.fetch("SELECT 1 AS x FROM flow_states WHERE flow_uuid = ? LIMIT 1", archive):
                        raise OperationError(f"archive flow {archive!r} appeared meanwhile; retry")
                    # (the rows before and after: the archive holds no row but these)
                    await op.update(
                        "flow_states",
                        ("id",),
                        "flow_uuid IN (?, ?) AND id > ?",
                        (flow, archive, row_id),
                        "flow_uuid = ?",
                        (archive,),
                    )
                op_id = await self.journal_finish(op)
        cp = await self.store.get(meta.checkpoint_id)
        assert cp is not None
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=flow,
            rewind_depth=len(later),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=archive if later else None,
            moved=[] if hard else later,
            deleted=later if hard else [],
        )

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """A new flow (a new uuid) with copies of rows 1..N; its uuid (the name is kept in
        the op's details: a flow's id is a uuid)."""
        meta = await self._target(from_checkpoint_id)
        new = str(uuidlib.uuid4())
        row_id = self.store.key_of(meta.checkpoint_id)
        async with self.journal_tx([new, meta.thread_id]) as tx:
            rows = await tx.fetch(
                "SELECT id, method_name, timestamp, state_json FROM flow_states "
                "WHERE flow_uuid = ? AND id <= ? ORDER BY id",
                meta.thread_id,
                row_id,
            )
            op = await self.journal_begin(
                tx,
                "branch",
                f"branch {new} ({branch_name}) from {meta.thread_id} step {meta.step}",
                [new, meta.thread_id],
                {"target": meta.checkpoint_id, "name": str(branch_name), "flow": new},
            )
            for r in rows:
                await tx.execute(
                    "INSERT INTO flow_states (flow_uuid, method_name, timestamp, state_json) "
                    "VALUES (?, ?, ?, ?)",
                    new,
                    r["method_name"],
                    r["timestamp"],
                    _with_id(r["state_json"], meta.thread_id, new),
                )
            await op.inserted("flow_states", ("id",), "flow_uuid = ?", (new,))
            await self.journal_finish(op)
        return new

    @staticmethod
    def edit_view(cp: Any) -> dict[str, Any]:
        return dict(cp.state or {})

    async def run_options(self, thread_id: str, from_id: str | None = None) -> dict[str, Any]:
        """The child kicks the flow off with its id (crewai_child.py); its rows and newest
        state (what the run's steps count on from, and its first changes are against)."""
        head = await self.store.get_latest(thread_id)
        return {
            "mode": "kickoff",
            "steps": await self.store.count(thread_id),
            "state": head.state if head is not None else None,
        }

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        from agentctl.storage.results import OpResult

        meta = await self._target(checkpoint_id)
        flow = meta.thread_id
        async with self.journal_tx([flow]) as tx:
            row = await self._row(tx, meta.checkpoint_id)
            op = await self.journal_begin(
                tx, "edit", f"edit {flow} at step {meta.step}: {what}", [flow], {"target": meta.checkpoint_id}
            )
            await tx.execute(
                "INSERT INTO flow_states (flow_uuid, method_name, timestamp, state_json) VALUES (?, ?, ?, ?)",
                flow,
                row["method_name"],
                self._now(),
                json.dumps(state),
            )
            new = await tx.fetch("SELECT MAX(id) AS k FROM flow_states WHERE flow_uuid = ?", flow)
            cid = self.store.cid(new[0])
            await op.inserted("flow_states", ("id",), "id = ?", (new[0]["k"],))
            op_id = await self.journal_finish(op)
        return OpResult(
            op_id,
            "edit",
            f"edited {flow}: {cid}, {meta.checkpoint_id}'s state with {what}, is its "
            "newest row (load_state returns it)",
            created=[cid],
        )


def _no_hard(hard: bool) -> None:
    if hard:  # rows deleted and put back by an undo would come back with new rowids, after
        # other branches' newer rows: CrewAI's "latest" (the newest rowid) would change
        raise UsageError(
            "rewind --hard is not offered on CrewAI checkpoints: a rewind appends a copy of the "
            "checkpoint as its branch's newest row (which CrewAI restores); the later rows stay"
        )


def _with_id(state_json: Any, old: str, new: str) -> Any:
    """A flow's state text with its `id` the new flow's (as CrewAI's load_state/kickoff expect)."""
    try:
        state = json.loads(state_json)
    except (TypeError, ValueError):
        return state_json
    if isinstance(state, dict) and state.get("id") == old:
        state["id"] = new
        return json.dumps(state)
    return state_json


__all__: Sequence[str] = ("CheckpointHistory", "FlowStateHistory")
