"""Writes on Google ADK's DatabaseSessionService tables (schema v1): `rewind`, `branch`,
`edit`, `run` (recorded after ADK's Runner wrote), `doctor --fix`, each as row changes
on the journal (agentctl/storage/journal/), which undoes and redoes them.

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
- `--hard` deletes the later events (the journal keeps them) and writes step N's
  session state into the session row.
- `branch` makes a new session `SESSION-branch-NAME-XXXX` of the same app and user with
  copies of events 1..N and step N's session state.

Each write sets the session's `update_time` (ADK's optimistic-lock marker) to a new
value, so an ADK service holding the session from before gets ADK's stale-session error
on its next `append_event` instead of overwriting the change; undo and redo put it back
exactly as the op found or left it. The fingerprint of a session is that marker: undo
and redo refuse once ADK (or anyone moving the marker) wrote to the session since. The
session, app and user rows are put back in place (events reference sessions ON DELETE
CASCADE). The op log of the previous release (`agentctl_adk_oplog` and its trash) is
moved into the journal by the first write (`legacy.py`).
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from agentctl.errors import CheckpointNotFound, OperationError, UsageError
from agentctl.model import utc_now_iso
from agentctl.storage.adk import legacy
from agentctl.storage.adk.doctor import folded_state
from agentctl.storage.adk.events import decode_json
from agentctl.storage.contract import History, RewindAndBranchOnly, Unsupported, retried_write
from agentctl.storage.journal import ops
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.sqlutil import marks
from agentctl.storage.timefmt import naive_utc

if TYPE_CHECKING:
    from agentctl.storage.adk.store import ADKStore
    from agentctl.storage.results import OpResult, RewindPlan, TimeTravelResult
    from agentctl.storage.sql.conn import Transaction

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: the key columns of ADK's tables, and the WHERE of a state row by its key
KEYS = legacy.KEYS
WHERE = legacy.WHERE
_EVENT = "app_name = ? AND user_id = ? AND session_id = ?"


class ADKHistory(RewindAndBranchOnly, JournalHistory, History):
    def __init__(self, store: ADKStore, *, now: Any = None, hex4: Any = None) -> None:
        self.store = store
        self._now = now or utc_now_iso
        self._hex = hex4 or (lambda: secrets.token_hex(2))
        self._json = "CAST(? AS JSONB)" if store.kind == "postgres" else "?"

    # ---- what the journal asks of a format ---------------------------------------------

    async def fingerprint(self, tx: Any, thread: str) -> Any:
        """The session's update_time (ADK's own marker: every append_event moves it), as
        text; None: no such session."""
        key = await self.store._key(thread, tx.fetch)
        if key is None:
            return None
        rows = await tx.fetch(f"SELECT update_time FROM sessions WHERE {WHERE['sessions']}", *key)
        return naive_utc(rows[0]["update_time"]).strftime("%Y-%m-%d %H:%M:%S.%f") if rows else None

    async def lock(self, tx: Any, threads: Sequence[str]) -> None:
        """Postgres: the sessions' rows, then their app's and user's state rows, FOR UPDATE
        (ADK's append_event locks them in that order)."""
        if self.store.kind != "postgres":
            return
        keys = [k for k in [await self.store._key(t, tx.fetch) for t in threads] if k is not None]
        for table, n in (("sessions", 3), ("app_states", 1), ("user_states", 2)):
            for owner in sorted({k[:n] for k in keys}):
                if table == "sessions" or await tx.table_exists(table):
                    await tx.fetch(f"SELECT 1 AS x FROM {table} WHERE {WHERE[table]} FOR UPDATE", *owner)

    old_log = legacy.OLD

    async def migrate(self, tx: Any) -> None:
        await legacy.migrate(self, tx)

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        """Undo brings back what the op deleted and deletes what it made; redo the reverse."""
        d, kind = record["details"], record["kind"]
        made: list[str] = (
            ["/".join(d["key"])]
            if kind == "branch"
            else list(d["inserted"])
            if "inserted" in d
            else [d["event_id"]]
            if d.get("event_id") and not d.get("hard")
            else []
        )
        gone: list[str] = list(d.get("moved") or []) if d.get("hard") else []
        return {"created": gone, "deleted": made} if image == "before" else {"created": made, "deleted": gone}

    async def journal_moved(self) -> None:
        self.store._origin_map = None  # a branch may come or go

    # ---- helpers ---------------------------------------------------------------------

    def _ts(self, dt: datetime) -> Any:
        """A naive UTC datetime as the parameter of a timestamp column."""
        if self.store.kind == "postgres":
            return dt
        return dt.strftime("%Y-%m-%d %H:%M:%S.%f")

    async def _begin(
        self, tx: Any, kind: str, summary: str, threads: list[str], details: dict[str, Any]
    ) -> ops.Op:
        op = await self.journal_begin(tx, kind, summary, threads, details)
        for table in ("sessions", "app_states", "user_states"):
            await op.declare(table, KEYS[table])  # before events, which refer to sessions
        return op

    async def _set_state(
        self, op: ops.Op, table: str, owner: Sequence[str], state: dict[str, Any], marker: datetime
    ) -> None:
        await op.update(
            table,
            KEYS[table],
            WHERE[table],
            tuple(owner),
            f"state = {self._json}, update_time = ?",
            (json.dumps(state), self._ts(marker)),
        )

    async def _add_event(
        self, op: ops.Op, key: Sequence[str], event: dict[str, Any], marker: datetime
    ) -> None:
        await op.tx.execute(
            "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, "
            f"event_data) VALUES (?, ?, ?, ?, ?, ?, {self._json})",
            event["id"],
            *key,
            event["invocation_id"],
            self._ts(marker),
            json.dumps(event),
        )
        await op.inserted("events", KEYS["events"], f"{_EVENT} AND id = ?", (*key, event["id"]))

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
        rows = await tx.fetch(
            f"SELECT state, create_time, update_time FROM sessions WHERE {WHERE['sessions']}", *key
        )
        if not rows:
            raise OperationError(f"session {'/'.join(key)} is gone")
        row = rows[0]
        state, _err = decode_json(row["state"])
        row["state"] = state if isinstance(state, dict) else {}
        return row

    async def _events(self, tx: Transaction, key: tuple[str, str, str]) -> list[dict[str, Any]]:
        rows = await tx.fetch(
            f"SELECT id, invocation_id, timestamp, event_data FROM events WHERE {_EVENT} ORDER BY timestamp, id",
            *key,
        )
        for i, r in enumerate(rows, 1):
            r["step"] = i
            data, _err = decode_json(r["event_data"])
            r["event"] = data if isinstance(data, dict) else {}
        return rows

    @staticmethod
    def _session_state_at(
        session_state: dict[str, Any], events: list[dict[str, Any]], step: int
    ) -> tuple[dict[str, Any], list[str]]:
        """The session-scoped state as of `step` and the keys of the current state whose
        value there is unknown (first set by an event after `step`)."""
        at = folded_state(session_state, [r["event"] for r in events], step)
        return at, [k for k in session_state if k not in at]

    def _new_marker(self, old: Any, *others: Any) -> datetime:
        """A new update_time: now, and after the old marker and the given times."""
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        latest = max([naive_utc(old)] + [naive_utc(o) for o in others])
        return max(now, latest + timedelta(microseconds=1))

    @staticmethod
    def _event(delta: dict[str, Any], note: str, marker: datetime, **actions: Any) -> dict[str, Any]:
        """An event as ADK dumps it (author "user") with this state_delta."""
        return {
            "invocation_id": f"e-{uuid.uuid4()}",
            "author": "user",
            "actions": {
                "state_delta": delta,
                "artifact_delta": {},
                "requested_auth_configs": {},
                "requested_tool_confirmations": {},
                **actions,
            },
            "node_info": {"path": ""},
            "id": str(uuid.uuid4()),
            "timestamp": marker.replace(tzinfo=timezone.utc).timestamp(),
            "custom_metadata": {"agentctl": note},
        }

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        from agentctl.storage.results import RewindPlan

        meta, key = await self._target(checkpoint_id)
        later = await self.store.read_thread(meta.thread_id, 2**62, meta.step)
        if later and not hard:
            rows = await self.store._q(
                f"SELECT invocation_id FROM events WHERE {_EVENT} ORDER BY timestamp, id", *key
            )
            self._check_boundary(meta.step, [r["invocation_id"] for r in rows])
        return RewindPlan(
            target=meta,
            thread_id=meta.thread_id,
            moved=later,
            archive_thread=None,
            hard=hard,
            marked=bool(later) and not hard,
        )

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
                f"invocations: rewind to step {first - 1} or {last}, or use --hard"
            )
        return inv

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        from agentctl.storage.results import TimeTravelResult

        meta, key = await self._target(checkpoint_id)
        tid = meta.thread_id
        op_id = None
        moved: list[str] = []
        before = 0
        async with self.journal_tx([tid]) as tx:
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
                at, unknown = self._session_state_at(row["state"], events, step)
                details: dict[str, Any] = {
                    "key": list(key),
                    "target": meta.checkpoint_id,
                    "step": step,
                    "hard": hard,
                    "moved": moved,
                    "removed_keys": unknown,
                }
                if hard:
                    marker = self._new_marker(row["update_time"])
                    op = await self._begin(
                        tx,
                        "rewind",
                        f"rewind {tid} to step {step}; {len(later)} event(s) to the trash",
                        [tid],
                        details,
                    )
                    await self._set_state(op, "sessions", key, at, marker)
                    await op.delete(
                        "events", KEYS["events"], f"{_EVENT} AND id IN ({marks(len(moved))})", (*key, *moved)
                    )
                else:
                    inv = self._check_boundary(step, [r["invocation_id"] for r in events])
                    delta = {k: v for k, v in at.items() if k not in row["state"] or row["state"][k] != v}
                    delta.update({k: None for k, v in row["state"].items() if k not in at and v is not None})
                    marker = self._new_marker(row["update_time"], events[-1]["timestamp"])
                    event = self._event(
                        delta, f"rewind to step {step}", marker, rewind_before_invocation_id=inv
                    )
                    details.update(event_id=event["id"], rewind_before_invocation_id=inv)
                    op = await self._begin(
                        tx,
                        "rewind",
                        f"rewind {tid} to step {step}; {len(later)} event(s) marked rewound",
                        [tid],
                        details,
                    )
                    await self._set_state(op, "sessions", key, {**row["state"], **delta}, marker)
                    await self._add_event(op, key, event, marker)
                op_id = await self.journal_finish(op)
        cp = await self.store.get_latest(tid)
        if cp is None:  # the target, kept by the rewind
            raise CheckpointNotFound(checkpoint_id)
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=tid,
            rewind_depth=len(moved),
            snapshot_count_before=before,
            op_id=op_id,
            moved=[] if hard else moved,
            deleted=moved if hard else [],
            marked=bool(moved) and not hard,
        )

    # ---- branch ----------------------------------------------------------------------

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-')")
        meta, key = await self._target(from_checkpoint_id)
        async with self.journal_tx([meta.thread_id]) as tx:
            row = await self._session_row(tx, key)
            events = await self._events(tx, key)
            step = [r["id"] for r in events].index(meta.checkpoint_id) + 1
            at, unknown = self._session_state_at(row["state"], events, step)
            for _ in range(20):
                new_id = f"{key[2]}-branch-{name}-{self._hex()}"
                if not await tx.fetch(
                    f"SELECT 1 AS x FROM sessions WHERE {WHERE['sessions']}", key[0], key[1], new_id
                ):
                    break
            else:
                raise OperationError("no free session id for the branch; retry")
            new_key = (key[0], key[1], new_id)
            tid = "/".join(new_key)
            now = datetime.now(timezone.utc).replace(tzinfo=None)
            # the op's thread is the new session alone: ADK writing to the source since does not
            # stop its undo
            op = await self._begin(
                tx,
                "branch",
                f"branch {tid} from {meta.thread_id} step {step}",
                [tid],
                {
                    "key": list(new_key),
                    "from": meta.checkpoint_id,
                    "from_thread": meta.thread_id,
                    "events": step,
                    "removed_keys": unknown,
                },
            )
            await tx.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
                f"VALUES (?, ?, ?, {self._json}, ?, ?)",
                *new_key,
                json.dumps(at),
                self._ts(now),
                self._ts(now),
            )
            await op.inserted("sessions", KEYS["sessions"], WHERE["sessions"], new_key)
            # copies with ids of their own (a checkpoint id names one event), same invocations
            copies = []
            for r in events[:step]:
                event = dict(r["event"])
                event["id"] = str(uuid.uuid4())
                copies.append(
                    (
                        event["id"],
                        *new_key,
                        r["invocation_id"],
                        self._ts(naive_utc(r["timestamp"])),
                        json.dumps(event),
                    )
                )
            await tx.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data) "
                f"VALUES (?, ?, ?, ?, ?, ?, {self._json})",
                copies,
            )
            await op.inserted("events", KEYS["events"], _EVENT, new_key)
            await self.journal_finish(op)
        self.store._origin_map = None  # the store reads the log again
        return tid

    # ---- doctor --fix -----------------------------------------------------------------

    async def fix_state(self) -> list[tuple[int, str, list[str]]]:
        """Set the state of every session whose row disagrees with its events' fold
        (`doctor.py`) to that fold, in one transaction; one undoable op per session
        (kind "fix-state"). [(op id, session, keys changed)]."""
        from agentctl.storage.adk.doctor import differing_keys, inconsistent_sessions

        if self.store.layout != "v1":
            raise Unsupported("adk (v0 layout, read-only)", "doctor --fix")
        found = await inconsistent_sessions(self.store)
        if not found:
            return []
        tids = ["/".join(f["key"]) for f in found]
        done: list[tuple[int, str, list[str]]] = []
        async with self.journal_tx(tids) as tx:
            for tid, f in zip(tids, found, strict=False):
                key = f["key"]
                row = await self._session_row(tx, key)  # again, inside the transaction
                events = [r["event"] for r in await self._events(tx, key)]
                folded = folded_state(row["state"], events)
                keys = differing_keys(row["state"], folded)
                if not keys:
                    continue
                op = await self._begin(
                    tx,
                    "fix-state",
                    f"doctor --fix: state of {tid} set to its events' fold ({len(keys)} key(s))",
                    [tid],
                    {"key": list(key), "keys": keys},
                )
                await self._set_state(op, "sessions", key, folded, self._new_marker(row["update_time"]))
                done.append((await self.journal_finish(op), tid, keys))
        return done

    # ---- run: what ADK's Runner wrote, recorded after the fact ----------------------

    async def _run_key(self, thread_id: str) -> tuple[str, str, str]:
        key = await self.store._key(thread_id)
        if key is None:
            parts = thread_id.split("/", 2)
            if len(parts) != 3 or not all(parts):
                raise UsageError(f"an ADK session is APP/USER/SESSION, not {thread_id!r}")
            key = (parts[0], parts[1], parts[2])
        return key

    async def run_keys(self, thread_id: str) -> dict[str, Any]:
        """The rows a run may change, as they are (read before it): the session's, app's
        and user's state rows (each column as stored; Postgres: as text) and the
        session's event ids."""
        await self.store.connect()
        return await legacy.rows_of(self.store, self.store._q, await self._run_key(thread_id))

    @retried_write
    async def record_run(
        self, thread_id: str, before: dict[str, Any], summary: str, details: dict[str, Any], kind: str = "run"
    ) -> int | None:
        """One op for what ADK's Runner wrote: the events it appended (inserted rows) and
        the session, app and user rows as they were before it (their before-images from
        `before`, their after-images as they are). None: the run wrote nothing."""
        key = await self._run_key(thread_id)
        tid = "/".join(key)
        async with self.journal_tx([tid]) as tx:
            now = await legacy.rows_of(self.store, tx.fetch, key)
            if now == before:
                return None
            inserted = [e for e in now["events"] if e not in set(before["events"])]
            op = await self._begin(tx, kind, summary, [tid], dict(details, key=list(key), inserted=inserted))
            for table, n in (("sessions", 3), ("app_states", 1), ("user_states", 2)):
                if table in now and now[table] != before.get(table):
                    if before.get(table) is not None:
                        await op.was(table, KEYS[table], *await legacy.row_select(tx, table, before[table]))
                    await op.inserted(table, KEYS[table], WHERE[table], key[:n])  # its after-image (if any)
            if inserted:
                await op.inserted(
                    "events",
                    KEYS["events"],
                    f"{_EVENT} AND id IN ({marks(len(inserted))})",
                    (*key, *inserted),
                )
            return await self.journal_finish(op)

    # ---- edit: an event with a state_delta, as ADK changes state outside a turn --------

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "append an event to {thread} whose state_delta holds these values"
    #: ADK's state is a free mapping: `edit --set` may add a key
    EDIT_NEW_KEYS = True
    #: `--unset KEY` is `KEY: None` in the state_delta, and ADK's state keeps `KEY: None`
    #: (append_event's `state.update(delta)`): the plan shows the key with None, as get_session will
    EDIT_UNSET_TO_NONE = True

    async def edit_state(self, checkpoint_id: str, state: dict[str, Any], what: str) -> OpResult:
        """`agentctl edit`: an event (author "user") appended to REF's session whose
        `actions.state_delta` holds the keys whose values `state` changes from REF's
        (a removed key: None); `app:` and `user:` keys land in app_states / user_states,
        the others in the session's state, as ADK's append_event puts them. The session's
        update_time moves on (a service holding the session gets ADK's stale-session
        error). One op; undo deletes the event and puts every row back."""
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
        parts: dict[str, dict[str, Any]] = {"sessions": {}, "app_states": {}, "user_states": {}}
        for k, v in delta.items():
            table = (
                "app_states"
                if k.startswith("app:")
                else "user_states"
                if k.startswith("user:")
                else "sessions"
            )
            parts[table][k.split(":", 1)[1] if table != "sessions" else k] = v
        tid = meta.thread_id
        async with self.journal_tx([tid]) as tx:
            row = await self._session_row(tx, key)
            events = await self._events(tx, key)
            marker = self._new_marker(row["update_time"], *[r["timestamp"] for r in events[-1:]])
            event = self._event(delta, f"edit: {what}", marker)
            shared: dict[str, Any] = {}
            for table, owner in (("app_states", key[:1]), ("user_states", key[:2])):
                if parts[table]:
                    rows = await tx.fetch(f"SELECT state FROM {table} WHERE {WHERE[table]}", *owner)
                    if not rows:
                        raise OperationError(
                            f"no {table} row for {'/'.join(owner)} (ADK's create_session makes it)"
                        )
                    shared[table] = (owner, decode_json(rows[0]["state"])[0] or {})
            op = await self._begin(
                tx,
                "edit",
                f"edit {tid} at step {meta.step} ({checkpoint_id}): {what}",
                [tid],
                {"key": list(key), "ref": checkpoint_id, "event_id": event["id"], "delta": delta},
            )
            await self._set_state(op, "sessions", key, {**row["state"], **parts["sessions"]}, marker)
            for table, (owner, current) in shared.items():
                await self._set_state(op, table, owner, {**current, **parts[table]}, marker)
            await self._add_event(op, key, event, marker)
            op_id = await self.journal_finish(op)
        return OpResult(
            op_id,
            "edit",
            f"edited {tid}: new event {event['id']} (state_delta: {', '.join(sorted(delta))})",
            created=[event["id"]],
        )
