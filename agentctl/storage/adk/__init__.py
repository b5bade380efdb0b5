"""Google ADK's `DatabaseSessionService` store (`google-adk`), on SQLite or Postgres.

Schema v1 (`adk_internal_metadata.schema_version` "1"): `sessions(app_name, user_id,
id, state JSON, create_time, update_time)`, `events(id, app_name, user_id, session_id,
invocation_id, timestamp, event_data JSON)` (the Event model's dump),
`app_states(app_name, state, update_time)`, `user_states(app_name, user_id, state,
update_time)`. The legacy v0 layout (events with pickled `actions`) is read only: its
pickled columns are shown as opaque and never unpickled.

Mapping (see `store.py`):
- a thread is one session, named `APP/USER/SESSION` (app name, user id and session id
  joined by "/"; a name that itself holds "/" is still found, by the whole text);
- an event is a step: step N is the session's N-th event in ADK's own order
  (`timestamp`, then `id`), from 1; the checkpoint id of a step is the event's id
  (uuid4 in ADK; should two sessions hold the same id, it names the event of the first
  session by app, user and session id); a session without events is not a thread;
- the state of step N is the session's state as ADK rebuilds it: the state the session
  started with, as far as it can be recovered, folded with every event's
  `actions.state_delta` up to N, with `app:`/`user:` keys (see `state.py`);
- events render as a transcript: author, text parts, function calls and responses,
  artifact versions, errors, invocation id; events a rewind dropped (ADK's
  `_apply_rewinds`) are tagged `rewound` and, from that rewind on, left out of the
  messages and tool results (the conversation ADK gives the model); a rewind event's
  parent is the step it rewound to (the dropped events are a fork in `tree`).

Writes (`history.py`, schema v1): `rewind` (ADK's way: an appended event that marks
the later invocations rewound and restores the session state; or `--hard`), `branch`
(a new session with the events up to a step), on the journal (undo, redo). `doctor`
(`doctor.py`) reports a session whose state is not its events' fold; `doctor --fix`
repairs it, undoably.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentctl.storage.contract import Capability, FormatSpec

SESSION_COLUMNS = ("app_name", "user_id", "id", "state", "create_time", "update_time")
EVENT_COLUMNS = ("id", "app_name", "user_id", "session_id", "invocation_id", "timestamp")


def layout(tables: Mapping[str, set[str]]) -> str | None:
    """ "v1", "v0" or None (not an ADK database)."""
    sessions = tables.get("sessions")
    events = tables.get("events")
    if sessions is None or events is None:
        return None
    if not all(c in sessions for c in SESSION_COLUMNS) or not all(c in events for c in EVENT_COLUMNS):
        return None
    if "event_data" in events:
        return "v1"
    if "actions" in events and "author" in events:
        return "v0"
    return None


def _matches(tables: Mapping[str, set[str]]) -> bool:
    return layout(tables) is not None


FORMAT = FormatSpec(
    name="adk",
    title="Google ADK sessions",
    description="DatabaseSessionService tables (sessions, events, app_states, user_states): "
    "a session is a thread (APP/USER/SESSION), each event a step with the state "
    "as of that event",
    capabilities=frozenset(
        {
            Capability.READ,
            Capability.SEARCH,
            Capability.FOLLOW,
            Capability.REWIND,
            Capability.BRANCH,
            Capability.UNDO,
            Capability.DOCTOR,
            Capability.BACKUP,
            Capability.EDIT,
            Capability.RUN,
            Capability.REDO,
            Capability.COMPARE,
        }
    ),
    # doctor runs on both (the session-state check; the side search index's part only on
    # SQLite); backup: SQLite's online backup API
    dialects={Capability.BACKUP.value: ("sqlite",)},
    matches=_matches,
    store="agentctl.storage.adk.store:opener",
    history="agentctl.storage.adk.history:ADKHistory",
    tables=("sessions", "events", "app_states", "user_states", "adk_internal_metadata"),
)
