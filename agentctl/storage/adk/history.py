"""Writes on Google ADK's DatabaseSessionService tables (schema v1): `rewind`, `branch`
and their `undo`.

- `rewind APP/USER/SESSION@N` does what ADK's `Runner.rewind_async` does, at the step
  asked for: it appends an event (author "user") whose `actions.rewind_before_invocation_id`
  names the invocation of step N+1 and whose `state_delta` brings the session-scoped
  state back to step N's, so ADK's own reads (`_apply_rewinds`) drop the later events,
  which stay in the table. Step N+1 must start an invocation (ADK rewinds whole
  invocations). Unlike ADK's rewind (adk-python#4933), keys that `create_session` set
  and that no event changed are kept; a key that some event after step N set first is
  removed (set to None, as ADK does) — the database cannot tell whether
  `create_session` had set it before. `app:` and `user:` keys are shared with other
  sessions and are not rewound (as in ADK); artifacts are not rewound (agentctl has no
  artifact service).
- `--hard` moves the later events to agentctl's trash instead and writes step N's
  session state into the session row.
- `branch` makes a new session `SESSION-branch-NAME-XXXX` of the same app and user with
  copies of events 1..N and step N's session state.

Each write sets the session's `update_time` (ADK's optimistic-lock marker) to a new
value, so an ADK service holding the session from before gets ADK's stale-session error
on its next `append_event` instead of overwriting the change. Every write is one
transaction, recorded in `agentctl_adk_oplog` (the trash is `agentctl_adk_trash`) and
undoable: undo restores every row, and refuses when ADK wrote to the session since.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Sequence

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.model import utc_now_iso
from agentctl.storage.adk.events import StateFold, decode_json
from agentctl.storage.contract import History, Unsupported, whole_undo_only
from agentctl.storage.sidelog import RewindAndBranchOnly, SideLog, purge_trash
from agentctl.storage.adk.store import OPLOG, TRASH
from agentctl.storage.sqlutil import marks
from agentctl.storage.timefmt import naive_utc

if TYPE_CHECKING:
    from agentctl.storage.agentos.base import Transaction
    from agentctl.storage.adk.store import ADKStore

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class ADKHistory(RewindAndBranchOnly, History):
    def __init__(self, store: ADKStore, *, now: Any = None, hex4: Any = None) -> None:
        self.store = store
        self._now = now or utc_now_iso
        self._hex = hex4 or (lambda: secrets.token_hex(2))
        self.log = SideLog(OPLOG, store.kind)
        pg = store.kind == "postgres"
        self._json = "CAST(? AS JSONB)" if pg else "?"

    # ---- helpers ---------------------------------------------------------------------

    def _ts(self, dt: datetime) -> Any:
        """A naive UTC datetime as the parameter of a timestamp column."""
        if self.store.kind == "postgres":
            return dt
        return dt.strftime("%Y-%m-%d %H:%M:%S.%f")

    @staticmethod
    def _ts_text(value: Any) -> str:
        return naive_utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")

    async def _ensure_tables(self, tx: Transaction) -> None:
        await self.log.ensure(tx)
        data = "JSONB" if self.store.kind == "postgres" else "TEXT"
        await tx.execute(
            f"CREATE TABLE IF NOT EXISTS {TRASH} (op_id INTEGER NOT NULL, id VARCHAR(128) NOT NULL, "
            "app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL, session_id VARCHAR(128) NOT NULL, "
            f"invocation_id VARCHAR(256) NOT NULL, timestamp TIMESTAMP NOT NULL, event_data {data})")

    async def _record(self, tx: Transaction, kind: str, summary: str, threads: list[str],
                      details: dict[str, Any], undo_of: int | None = None) -> int:
        op_id = await self.log.record(tx, self._now(), kind, summary, threads, details, undo_of)
        self.last_op_id = op_id
        return op_id

    async def _target(self, checkpoint_id: str) -> tuple[Any, tuple[str, str, str]]:
        if self.store.layout != "v1":
            raise Unsupported("adk (v0 layout, read-only)", "writes")
        meta = await self.store.get_metadata(checkpoint_id)
        if meta is None:
            raise CheckpointNotFound(checkpoint_id)
        key = await self.store._key(meta.thread_id)
        assert key is not None
        return meta, key

    async def _session_row(self, tx: Transaction, key: tuple[str, str, str]) -> dict[str, Any]:
        sel = "SELECT state, create_time, update_time FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?"
        if self.store.kind == "postgres":
            sel += " FOR UPDATE"
        rows = await tx.fetch(sel, *key)
        if not rows:
            raise OperationError(f"session {'/'.join(key)} is gone")
        row = rows[0]
        state, _err = decode_json(row["state"])
        row["state"] = state if isinstance(state, dict) else {}
        return row

    async def _events(self, tx: Transaction, key: tuple[str, str, str]) -> list[dict[str, Any]]:
        rows = await tx.fetch(
            "SELECT id, invocation_id, timestamp, event_data FROM events WHERE app_name = ? AND user_id = ? "
            "AND session_id = ? ORDER BY timestamp, id", *key)
        for i, r in enumerate(rows, 1):
            r["step"] = i
            data, _err = decode_json(r["event_data"])
            r["event"] = data if isinstance(data, dict) else {}
        return rows

    @staticmethod
    def _session_state_at(session_state: dict[str, Any], events: list[dict[str, Any]], step: int
                          ) -> tuple[dict[str, Any], list[str]]:
        """The session-scoped state as of `step` and the keys of the current state whose
        value there is unknown (first set by an event after `step`)."""
        fold = StateFold(session_state, {}, {}, [r["event"] for r in events])
        for r in events[:step]:
            fold.apply(r["event"])
        at = dict(fold.session)
        unknown = [k for k in session_state if k not in at]
        return at, unknown

    def _new_marker(self, old: Any, *others: Any) -> datetime:
        """A new update_time: now, and after the old marker and the given times."""
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        latest = max([naive_utc(old)] + [naive_utc(o) for o in others])
        return max(now, latest + timedelta(microseconds=1))

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> Any:
        from agentctl.storage.results import RewindPlan

        meta, key = await self._target(checkpoint_id)
        later = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        if later and not hard:
            self._check_boundary(meta.step, await self._invocations(key))
        archive = None if hard or not later else \
            f"(kept in {meta.thread_id}, marked rewound by a new event)"
        return RewindPlan(target=meta, thread_id=meta.thread_id, moved=later, archive_thread=archive, hard=hard)

    async def _invocations(self, key: tuple[str, str, str]) -> list[str]:
        rows = await self.store._q("SELECT invocation_id FROM events WHERE app_name = ? AND user_id = ? "
                                   "AND session_id = ? ORDER BY timestamp, id", *key)
        return [r["invocation_id"] for r in rows]

    @staticmethod
    def _check_boundary(step: int, invocations: list[str]) -> str:
        """The invocation that step `step`+1 starts (invocations: of every step, in
        order); UsageError when that invocation started at an earlier step."""
        inv = invocations[step]
        first = invocations.index(inv) + 1
        if first != step + 1:
            last = len(invocations) - invocations[::-1].index(inv)
            raise UsageError(
                f"step {step} is inside invocation {inv!r} (steps {first}..{last}); ADK rewinds whole "
                f"invocations: rewind to step {first - 1} or {last}, or use --hard")
        return inv

    async def rewind(self, checkpoint_id: str, hard: bool = False, *,
                     archive_thread: str | None = None) -> Any:
        from agentctl.storage.results import TimeTravelResult

        meta, key = await self._target(checkpoint_id)
        tid = meta.thread_id
        op_id = None
        moved: list[str] = []
        before = 0
        async with self.store._db.transaction([tid]) as tx:
            row = await self._session_row(tx, key)
            events = await self._events(tx, key)
            before = len(events)
            ids = [r["id"] for r in events]
            if meta.checkpoint_id not in ids:
                raise CheckpointNotFound(checkpoint_id)
            step = ids.index(meta.checkpoint_id) + 1
            later = events[step:]
            moved = [r["id"] for r in later]
            if later:
                await self._ensure_tables(tx)
                at, unknown = self._session_state_at(row["state"], events, step)
                details: dict[str, Any] = {
                    "key": list(key), "target": meta.checkpoint_id, "step": step, "hard": hard,
                    "moved": moved, "state_before": row["state"],
                    "update_time_before": self._ts_text(row["update_time"]), "removed_keys": unknown}
                if hard:
                    marker = self._new_marker(row["update_time"])
                    op_id = await self._record(tx, "rewind", f"rewind {tid} to step {step}; "
                                               f"{len(later)} event(s) to the trash", [tid], details)
                    await tx.execute(
                        f"INSERT INTO {TRASH} (op_id, id, app_name, user_id, session_id, invocation_id, "
                        "timestamp, event_data) SELECT CAST(? AS INTEGER), id, app_name, user_id, session_id, "
                        "invocation_id, timestamp, event_data FROM events WHERE app_name = ? AND user_id = ? "
                        f"AND session_id = ? AND id IN ({marks(len(moved))})",
                        op_id, *key, *moved)
                    await tx.execute(
                        "DELETE FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
                        f"AND id IN ({marks(len(moved))})", *key, *moved)
                    new_state = at
                else:
                    inv = self._check_boundary(step, [r["invocation_id"] for r in events])
                    delta = {k: v for k, v in at.items() if k not in row["state"] or row["state"][k] != v}
                    delta.update({k: None for k, v in row["state"].items() if k not in at and v is not None})
                    marker = self._new_marker(row["update_time"], events[-1]["timestamp"])
                    stamp = marker.replace(tzinfo=timezone.utc).timestamp()
                    event_id = str(uuid.uuid4())
                    event = {"invocation_id": f"e-{uuid.uuid4()}", "author": "user",
                             "actions": {"state_delta": delta, "artifact_delta": {},
                                         "requested_auth_configs": {}, "requested_tool_confirmations": {},
                                         "rewind_before_invocation_id": inv},
                             "node_info": {"path": ""}, "id": event_id, "timestamp": stamp,
                             "custom_metadata": {"agentctl": f"rewind to step {step}"}}
                    details.update(event_id=event_id, rewind_before_invocation_id=inv)
                    op_id = await self._record(tx, "rewind", f"rewind {tid} to step {step}; "
                                               f"{len(later)} event(s) marked rewound", [tid], details)
                    await tx.execute(
                        "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
                        f"event_data) VALUES (?, ?, ?, ?, ?, ?, {self._json})", event_id, *key,
                        event["invocation_id"], self._ts(marker), json.dumps(event))
                    new_state = {**row["state"], **delta}
                details["update_time_after"] = self._ts_text(marker)
                await self.log.set_details(tx, op_id, details)
                await tx.execute(
                    f"UPDATE sessions SET state = {self._json}, update_time = ? WHERE app_name = ? "
                    "AND user_id = ? AND id = ?", json.dumps(new_state), self._ts(marker), *key)
        cp = await self.store.get_latest(tid)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(checkpoint_id)
        return TimeTravelResult(checkpoint=cp, thread_id=tid, rewind_depth=len(moved),
                                snapshot_count_before=before, op_id=op_id,
                                archive_thread=None if hard or not moved else archive_thread,
                                moved=[] if hard else moved, deleted=moved if hard else [])

    # ---- branch ----------------------------------------------------------------------

    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-')")
        meta, key = await self._target(from_checkpoint_id)
        async with self.store._db.transaction([meta.thread_id]) as tx:
            row = await self._session_row(tx, key)
            events = await self._events(tx, key)
            step = [r["id"] for r in events].index(meta.checkpoint_id) + 1
            at, unknown = self._session_state_at(row["state"], events, step)
            for _ in range(20):
                new_id = f"{key[2]}-branch-{name}-{self._hex()}"
                if not await tx.fetch("SELECT 1 AS x FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
                                      key[0], key[1], new_id):
                    break
            else:
                raise OperationError("no free session id for the branch; retry")
            new_key = (key[0], key[1], new_id)
            tid = "/".join(new_key)
            now = datetime.now(timezone.utc).replace(tzinfo=None)
            await self._ensure_tables(tx)
            op_id = await self._record(
                tx, "branch", f"branch {tid} from {meta.thread_id} step {step}", [tid, meta.thread_id],
                {"key": list(new_key), "from": meta.checkpoint_id, "from_thread": meta.thread_id,
                 "events": step, "update_time": self._ts_text(now), "removed_keys": unknown})
            await tx.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
                f"VALUES (?, ?, ?, {self._json}, ?, ?)", *new_key, json.dumps(at), self._ts(now), self._ts(now))
            # copies with ids of their own (a checkpoint id names one event), same invocations
            copies = []
            for r in events[:step]:
                event = dict(r["event"])
                event["id"] = str(uuid.uuid4())
                copies.append((event["id"], *new_key, r["invocation_id"], self._ts(naive_utc(r["timestamp"])),
                               json.dumps(event)))
            await tx.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data) "
                f"VALUES (?, ?, ?, ?, ?, ?, {self._json})", copies)
        self.last_op_id = op_id
        self.store._origin_map = None  # the store reads the log again
        return tid

    # ---- the log ---------------------------------------------------------------------

    def _op(self, row: dict[str, Any]) -> Any:
        d = json.loads(row["details"])
        purgeable = len(d.get("moved", [])) if d.get("hard") and not row["undone"] and not row["purged"] else 0
        return SideLog.record_of(row, purgeable)

    async def oplog(self, limit: int = 50) -> list[Any]:
        return [self._op(r) for r in await self.log.rows(self.store, limit)]

    async def undo(self, op_id: int | None = None, threads: Sequence[str] | None = None) -> Any:
        whole_undo_only("adk", threads)
        from agentctl.storage.results import OpResult

        op = await self.log.pick(self.store, op_id, ("rewind", "branch", "fix-state", "edit", "run"))
        d = op.details
        key = tuple(d["key"])
        tid = "/".join(key)
        async with self.store._db.transaction([tid]) as tx:
            row = await self._session_row(tx, key)
            expected = d["update_time"] if op.kind == "branch" else d["update_time_after"]
            if self._ts_text(row["update_time"]) != expected:
                raise OperationError(
                    f"session {tid} changed since operation {op.op_id} (ADK wrote to it); undoing it would "
                    "lose that write")
            result: tuple[list[str], list[str]]
            if op.kind == "run":
                result = ([], await self._unrun(tx, op.op_id, d, key))
            elif op.kind == "branch":
                await tx.execute("DELETE FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?", *key)
                await tx.execute("DELETE FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?", *key)
                result = ([], [tid])
            else:
                if op.kind == "fix-state":
                    result = ([], [])
                elif d.get("hard"):
                    n = await tx.fetch(f"SELECT COUNT(*) AS n FROM {TRASH} WHERE op_id = ?", op.op_id)
                    if int(n[0]["n"]) != len(d["moved"]):
                        raise OperationError(f"the trash of operation {op.op_id} is incomplete")
                    await tx.execute(
                        "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
                        f"event_data) SELECT id, app_name, user_id, session_id, invocation_id, timestamp, "
                        f"event_data FROM {TRASH} WHERE op_id = ?", op.op_id)
                    await tx.execute(f"DELETE FROM {TRASH} WHERE op_id = ?", op.op_id)
                    result = (d["moved"], [])
                else:
                    await tx.execute("DELETE FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? "
                                     "AND id = ?", *key, d["event_id"])
                    result = ([], [d["event_id"]])
                for table, before in (d.get("shared_before") or {}).items():  # an edit's app:/user: rows
                    owner = key[:1] if table == "app_states" else key[:2]
                    where = "app_name = ?" + (" AND user_id = ?" if table == "user_states" else "")
                    stamp = before["update_time"] if self.store.kind == "sqlite" else \
                        self._ts(naive_utc(before["update_time"]))
                    await tx.execute(f"UPDATE {table} SET state = {self._json}, update_time = ? WHERE {where}",
                                     before["state"], stamp, *owner)
                await tx.execute(
                    f"UPDATE sessions SET state = {self._json}, update_time = ? WHERE app_name = ? "
                    "AND user_id = ? AND id = ?", json.dumps(d["state_before"]),
                    self._ts(naive_utc(d["update_time_before"])), *key)
            new_id = await self._record(tx, "undo", f"undid operation {op.op_id} ({op.summary})", op.threads,
                                        {"undo_of": op.op_id}, undo_of=op.op_id)
            await self.log.mark_undone(tx, op.op_id, new_id)
        self.store._origin_map = None
        return OpResult(op_id=new_id, kind="undo", summary=f"undid operation {op.op_id} ({op.summary})",
                        created=result[0], deleted=result[1])

    # ---- doctor --fix -----------------------------------------------------------------

    async def fix_state(self) -> list[tuple[int, str, list[str]]]:
        """Set the state of every session whose row disagrees with its events' fold
        (`doctor.py`) to that fold, in one transaction; one undoable op per session
        (kind "fix-state"). [(op id, session, keys changed)]."""
        from agentctl.storage.adk.doctor import differing_keys, folded_state, inconsistent_sessions

        if self.store.layout != "v1":
            raise Unsupported("adk (v0 layout, read-only)", "doctor --fix")
        found = await inconsistent_sessions(self.store)
        if not found:
            return []
        tids = ["/".join(f["key"]) for f in found]
        done: list[tuple[int, str, list[str]]] = []
        async with self.store._db.transaction(tids) as tx:
            await self._ensure_tables(tx)
            for tid, f in zip(tids, found):
                key = f["key"]
                row = await self._session_row(tx, key)  # again, inside the transaction
                events = [r["event"] for r in await self._events(tx, key)]
                folded = folded_state(row["state"], events)
                keys = differing_keys(row["state"], folded)
                if not keys:
                    continue
                marker = self._new_marker(row["update_time"])
                details = {"key": list(key), "keys": keys, "state_before": row["state"],
                           "update_time_before": self._ts_text(row["update_time"]),
                           "update_time_after": self._ts_text(marker)}
                op_id = await self._record(tx, "fix-state", f"doctor --fix: state of {tid} set to its "
                                           f"events' fold ({len(keys)} key(s))", [tid], details)
                await tx.execute(
                    f"UPDATE sessions SET state = {self._json}, update_time = ? WHERE app_name = ? "
                    "AND user_id = ? AND id = ?", json.dumps(folded), self._ts(marker), *key)
                done.append((op_id, tid, keys))
        return done

    # ---- run: what ADK's Runner wrote, recorded after the fact ----------------------

    async def _images(self, fetch: Any, key: tuple[str, str, str]) -> dict[str, Any]:
        """The session's, app's and user's state rows as they are ([state text, update_time
        text], None: no row) and the session's event ids."""
        out: dict[str, Any] = {}
        for table, where, args in (("sessions", "app_name = ? AND user_id = ? AND id = ?", key),
                                   ("app_states", "app_name = ?", key[:1]),
                                   ("user_states", "app_name = ? AND user_id = ?", key[:2])):
            if table != "sessions" and not await self.store._db.table_exists(table):
                continue
            rows = await fetch(f"SELECT CAST(state AS TEXT) AS state, update_time, CAST(update_time AS TEXT) AS "
                               f"update_text FROM {table} WHERE {where}", *args)
            out[table] = None if not rows else [rows[0]["state"], rows[0]["update_text"] if self.store.kind ==
                                                "sqlite" else self._ts_text(rows[0]["update_time"])]
        out["events"] = [r["id"] for r in await fetch(
            "SELECT id FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?", *key)]
        return out

    async def _run_key(self, thread_id: str) -> tuple[str, str, str]:
        key = await self.store._key(thread_id)
        if key is None:
            parts = thread_id.split("/", 2)
            if len(parts) != 3 or not all(parts):
                raise UsageError(f"an ADK session is APP/USER/SESSION, not {thread_id!r}")
            key = (parts[0], parts[1], parts[2])
        return key

    async def run_keys(self, thread_id: str) -> dict[str, Any]:
        """The rows a run may change, as they are (read before it)."""
        await self.store.connect()
        return await self._images(self.store._q, await self._run_key(thread_id))

    async def record_run(self, thread_id: str, before: dict[str, Any], summary: str, details: dict[str, Any],
                         kind: str = "run") -> int | None:
        """One op for what ADK's Runner wrote: the events it appended (undo moves them to
        the trash) and the session, app and user rows' before-images (undo puts them back,
        deleting those the run created). None: the run wrote nothing."""
        key = await self._run_key(thread_id)
        async with self.store._db.transaction([thread_id]) as tx:
            now = await self._images(tx.fetch, key)
            if now == before:
                return None
            await self._ensure_tables(tx)
            inserted = [e for e in now["events"] if e not in set(before["events"])]
            after = await self._session_row(tx, key)
            details = dict(details, key=list(key), inserted=inserted,
                           images={t: v for t, v in before.items() if t != "events"},
                           update_time_after=self._ts_text(after["update_time"]))
            return await self._record(tx, kind, summary, ["/".join(key)], details)

    async def _unrun(self, tx: Transaction, op_id: int, d: dict[str, Any], key: tuple[str, ...]) -> list[str]:
        """Undo of a run: its events to the trash, the state rows as before it."""
        ids = list(d["inserted"])
        if ids:
            await tx.execute(
                f"INSERT INTO {TRASH} (op_id, id, app_name, user_id, session_id, invocation_id, timestamp, "
                "event_data) SELECT CAST(? AS INTEGER), id, app_name, user_id, session_id, invocation_id, timestamp, "
                f"event_data FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? AND id IN "
                f"({marks(len(ids))})", op_id, *key, *ids)
            await tx.execute(f"DELETE FROM events WHERE app_name = ? AND user_id = ? AND session_id = ? AND id IN "
                             f"({marks(len(ids))})", *key, *ids)
        for table, where, args in (("sessions", "app_name = ? AND user_id = ? AND id = ?", key),
                                   ("app_states", "app_name = ?", key[:1]),
                                   ("user_states", "app_name = ? AND user_id = ?", key[:2])):
            if table not in d["images"]:
                continue
            image = d["images"][table]
            if image is None:  # the run created it
                await tx.execute(f"DELETE FROM {table} WHERE {where}", *args)
                continue
            stamp = image[1] if self.store.kind == "sqlite" else self._ts(naive_utc(image[1]))
            await tx.execute(f"UPDATE {table} SET state = {self._json}, update_time = ? WHERE {where}",
                             image[0], stamp, *args)
        return ids

    # ---- edit: an event with a state_delta, as ADK changes state outside a turn --------

    async def _shared_row(self, tx: Transaction, table: str, key: tuple[str, ...]) -> dict[str, Any] | None:
        """The app_states (key: app) or user_states (app, user) row: its state (text) and update_time."""
        where = "app_name = ?" + (" AND user_id = ?" if table == "user_states" else "")
        rows = await tx.fetch(f"SELECT CAST(state AS TEXT) AS state, update_time, CAST(update_time AS TEXT) AS "
                              f"update_text FROM {table} WHERE {where}"
                              + (" FOR UPDATE" if self.store.kind == "postgres" else ""), *key)
        return rows[0] if rows else None

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "append an event to {thread} whose state_delta holds these values"

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> Any:
        """`agentctl edit`: an event (author "user") appended to REF's session whose
        `actions.state_delta` holds the keys whose values `state` changes from REF's
        (a removed key: None); `app:` and `user:` keys land in app_states / user_states,
        the others in the session's state, as ADK's append_event puts them. The session's
        update_time moves on (a service holding the session gets ADK's stale-session
        error). One op; undo deletes the event and puts every row back (as a rewind's)."""
        from agentctl.storage.results import OpResult

        meta, key = await self._target(checkpoint_id)
        ref = await self.store.get(checkpoint_id)
        if ref is None:
            raise CheckpointNotFound(checkpoint_id)
        old = {k: v for k, v in (ref.state or {}).items() if not (k.startswith("__") and k.endswith("__"))}
        delta = {k: v for k, v in state.items() if k not in old or old[k] != v}
        delta.update({k: None for k in old if k not in state})
        if any(k.startswith("temp:") for k in delta):
            raise UsageError("temp: keys live only during an invocation (ADK does not store them)")
        if not delta:
            raise UsageError("the edit changes nothing")
        parts: dict[str, dict[str, Any]] = {"session": {}, "app_states": {}, "user_states": {}}
        for k, v in delta.items():
            if k.startswith("app:"):
                parts["app_states"][k[len("app:"):]] = v
            elif k.startswith("user:"):
                parts["user_states"][k[len("user:"):]] = v
            else:
                parts["session"][k] = v
        tid = meta.thread_id
        async with self.store._db.transaction([tid]) as tx:
            row = await self._session_row(tx, key)
            events = await self._events(tx, key)
            marker = self._new_marker(row["update_time"], *[r["timestamp"] for r in events[-1:]])
            event_id = str(uuid.uuid4())
            event = {"invocation_id": f"e-{uuid.uuid4()}", "author": "user",
                     "actions": {"state_delta": delta, "artifact_delta": {}, "requested_auth_configs": {},
                                 "requested_tool_confirmations": {}},
                     "node_info": {"path": ""}, "id": event_id,
                     "timestamp": marker.replace(tzinfo=timezone.utc).timestamp(),
                     "custom_metadata": {"agentctl": f"edit: {what}"}}
            shared: dict[str, Any] = {}
            sqlite = self.store.kind == "sqlite"
            for table, owner in (("app_states", key[:1]), ("user_states", key[:2])):
                if parts[table]:
                    before = await self._shared_row(tx, table, owner)
                    if before is None:
                        raise OperationError(f"no {table} row for {'/'.join(owner)} (ADK's create_session makes it)")
                    shared[table] = {"state": before["state"], "update_time": before["update_text"] if sqlite
                                     else self._ts_text(before["update_time"])}  # SQLite: its text as it was
            await self._ensure_tables(tx)
            details = {"key": list(key), "ref": checkpoint_id, "event_id": event_id, "delta": delta,
                       "state_before": row["state"], "update_time_before": self._ts_text(row["update_time"]),
                       "update_time_after": self._ts_text(marker), "shared_before": shared}
            op_id = await self._record(tx, "edit", f"edit {tid} at step {meta.step} ({checkpoint_id}): {what}",
                                       [tid], details)
            await tx.execute(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
                f"event_data) VALUES (?, ?, ?, ?, ?, ?, {self._json})", event_id, *key,
                event["invocation_id"], self._ts(marker), json.dumps(event))
            for table, owner in (("app_states", key[:1]), ("user_states", key[:2])):
                if parts[table]:
                    merged = {**json.loads(shared[table]["state"] or "{}"), **parts[table]}
                    where = "app_name = ?" + (" AND user_id = ?" if table == "user_states" else "")
                    await tx.execute(f"UPDATE {table} SET state = {self._json}, update_time = ? WHERE {where}",
                                     json.dumps(merged), self._ts(marker), *owner)
            await tx.execute(
                f"UPDATE sessions SET state = {self._json}, update_time = ? WHERE app_name = ? "
                "AND user_id = ? AND id = ?", json.dumps({**row["state"], **parts["session"]}), self._ts(marker),
                *key)
        return OpResult(op_id, "edit", f"edited {tid}: new event {event_id} (state_delta: "
                        f"{', '.join(sorted(delta))})", created=[event_id])

    async def purge(self, dry_run: bool = False) -> Any:
        return await purge_trash(self.store, TRASH, OPLOG, dry_run)

