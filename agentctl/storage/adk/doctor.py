"""`doctor` on ADK's tables: a session whose stored `state` is not the fold of its
events' `actions.state_delta` (issue 22 item 6), and `doctor --fix`'s repair.

How ADK keeps the session row (`DatabaseSessionService.append_event`): it reads the
row, checks it is not stale, applies the event's session-scoped delta (no `app:`,
`user:` or `temp:` keys) to the state it read and writes the row. Every stored event's
delta is applied, rewound or not (a rewind is itself an event whose delta restores the
state). So the row's value of every key some event's delta sets is that key's value in
the last such delta (in ADK's event order: timestamp, then id); keys no delta sets are
the initial state and cannot be checked. On SQLite, a write that lands between ADK's
stale check and its write (agentctl's rewind, another writer) is overwritten by ADK
with the state it read: the row then disagrees with its events.

`app:`/`user:` keys live in `app_states`/`user_states`, shared by every session of the
app/user; they are not checked here (their fold spans sessions).
"""

from __future__ import annotations

from typing import Any

from agentctl.storage.adk.events import StateFold, decode_json
from agentctl.storage.contract import Problem

CHECK = "session_state"


def folded_state(
    state: dict[str, Any], events: list[dict[str, Any]], upto: int | None = None
) -> dict[str, Any]:
    """The session-scoped state ADK's writes should have left in the row: the row's
    keys no delta sets, then every event's delta in order (`upto`: of the first events)."""
    fold = StateFold(state, {}, {}, events)
    for ev in events[:upto]:
        fold.apply(ev)
    return fold.session


def differing_keys(state: dict[str, Any], folded: dict[str, Any]) -> list[str]:
    return sorted(
        k for k in set(state) | set(folded) if k not in state or k not in folded or state[k] != folded[k]
    )


async def inconsistent_sessions(store: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """[{key, state, folded, keys, update_time}] of sessions whose row state is not the
    fold of their events (reads only; at most `limit`)."""
    await store.connect()
    out: list[dict[str, Any]] = []
    sessions = await store._q(
        "SELECT app_name, user_id, id, state, update_time FROM sessions ORDER BY app_name, user_id, id"
    )
    for s in sessions:
        key = (s["app_name"], s["user_id"], s["id"])
        found = await _check_session(store, key, s)
        if found:
            out.append(found)
            if limit is not None and len(out) >= limit:
                break
    return out


async def _check_session(store: Any, key: tuple[str, str, str], s: dict[str, Any]) -> dict[str, Any] | None:
    """The finding of one session, or None. The row and its events are two reads: a
    session ADK wrote in between (its update_time moved) is read again, so a live
    writer is not reported."""
    where = "app_name = ? AND user_id = ? AND "
    for _ in range(5):
        state, err = decode_json(s["state"])
        if err or not isinstance(state, dict):
            return None
        rows = await store._q(
            f"SELECT event_data FROM events WHERE {where}session_id = ? ORDER BY timestamp, id", *key
        )
        events = []
        for r in rows:
            ev, _err = decode_json(r["event_data"])
            events.append(ev if isinstance(ev, dict) else {})
        folded = folded_state(state, events)
        keys = differing_keys(state, folded)
        if not keys:
            return None
        again = await store._q(f"SELECT state, update_time FROM sessions WHERE {where}id = ?", *key)
        if not again:
            return None
        if again[0]["update_time"] == s["update_time"]:
            return {
                "key": key,
                "state": state,
                "folded": folded,
                "keys": keys,
                "update_time": s["update_time"],
            }
        s = again[0]
    return None


async def state_problems(store: Any, limit: int) -> list[Problem]:
    if store.layout != "v1":
        return []
    found = await inconsistent_sessions(store, limit)
    return [
        Problem(
            "error",
            CHECK,
            "/".join(f["key"]),
            f"the session's state is not what its events set ({', '.join(map(repr, f['keys']))}): "
            "a write landed inside ADK's read-then-write window; `agentctl doctor --fix` sets it "
            "to the events' fold (undoable)",
            "session-state",
            {
                "subject": "/".join(f["key"]),
                "keys": f["keys"],
                "state": {k: f["state"].get(k) for k in f["keys"]},
                "folded": {k: f["folded"].get(k) for k in f["keys"]},
            },
        )
        for f in found
    ]
