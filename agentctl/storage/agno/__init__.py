"""Agno's session store (`agno` 3.x `SqliteDb` / `PostgresDb`; 2.x for the v2 layout).

Tables (names are Agno's `session_table=` argument, so they are recognised by their
columns): sessions `(session_id, session_type, agent_id, team_id, workflow_id, user_id,
session_data, agent_data, team_data, workflow_data, metadata, summary, created_at,
updated_at)` (epoch seconds; JSON as text on SQLite, JSONB on Postgres) and, from Agno 3,
runs `(run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id,
parent_run_id, status, run_index, run_data, created_at, updated_at)`, named `agno_runs`
next to `agno_sessions`, else `<sessions table>_runs`.

Layouts: "v3" (the runs table), "v2" (Agno 2: the runs as a JSON array in the sessions'
`runs` column; on SQLite every JSON column encoded twice) and "migrated" (both: Agno 3's
migration copies the array into the runs table and keeps it). Reads merge the two as
Agno does (`merge_runs_table_with_legacy_blob`): the array's order first, the table's
copy winning on the same run id, runs only in the table after them.

Mapping (see `store.py`):
- a session is a thread (its `session_id`); one without runs is not;
- a top-level run (no `parent_run_id`) is a step: step N is the N-th in Agno's order
  (`run_index`, `created_at`, `run_id`), from 1; its checkpoint id is the run id;
- a team's member runs (their `parent_run_id` names the team run) and a workflow's step
  runs (`run_data.step_executor_runs`) are shown inside their run;
- a run made by `continue_run(fork=True)` or `regenerate=True` (`forked_from_run_id`)
  has as parent the run before its source: `log` and `tree` draw it as a fork;
- the messages of step N are the conversation as Agno's `get_chat_history` gives it
  (every top-level run's user and assistant messages up to run N); the state is run N's
  `session_state`; the tool results are run N's tools (and its members'), with the run
  itself (input, content, its own messages, status, metrics) under "run".

Writes (`history.py`, on the journal: undo, redo): `rewind` (later runs to an archive
session, or `--hard` deleted; the session_state set to the run's; run_index renumbered;
the legacy array kept consistent), `branch` (a session with copies of the runs, as
`fork_session` writes them), `threads delete`, `edit` (session_state keys; a run's content
and messages in place), `run` (what agno's own `run` in the user's interpreter added:
`runners/agno_child.py`), `prune` (a session's last N runs kept, renumbered, the legacy
array too; sessions not updated for an age deleted). Merge exits 2 naming Agno.

When a database holds several session tables, the one to read is chosen with
`AGENTCTL_AGNO_TABLE=SESSIONS_TABLE` (or the store's `session_table=` option).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from agentctl.errors import SchemaError
from agentctl.storage.contract import Capability, FormatSpec

SESSION_COLUMNS = (
    "session_id",
    "session_type",
    "agent_id",
    "team_id",
    "workflow_id",
    "user_id",
    "session_data",
    "created_at",
    "updated_at",
)
RUN_COLUMNS = (
    "run_id",
    "session_id",
    "run_type",
    "parent_run_id",
    "status",
    "run_index",
    "run_data",
    "created_at",
)


def runs_table_of(sessions_table: str) -> str:
    """The runs table Agno 3 pairs with a sessions table."""
    return "agno_runs" if sessions_table == "agno_sessions" else f"{sessions_table}_runs"


def candidates(tables: Mapping[str, set[str]]) -> list[str]:
    """The sessions tables of the database (not agentctl's own: the journal's trash
    copies the columns), sorted."""
    return sorted(
        t
        for t, cols in tables.items()
        if not t.startswith("agentctl_") and all(c in cols for c in SESSION_COLUMNS)
    )


def layout(tables: Mapping[str, set[str]], sessions_table: str) -> str:
    """ "v3", "v2" or "migrated" of one sessions table; SchemaError when it has neither a
    runs table nor a runs column."""
    runs = tables.get(runs_table_of(sessions_table))
    has_table = runs is not None and all(c in runs for c in RUN_COLUMNS)
    has_column = "runs" in tables[sessions_table]
    if has_table and has_column:
        return "migrated"
    if has_table:
        return "v3"
    if has_column:
        return "v2"
    raise SchemaError(
        f"the Agno sessions table {sessions_table!r} has no runs "
        f"(no table {runs_table_of(sessions_table)!r}, no runs column)"
    )


def choose(tables: Mapping[str, set[str]], asked: str | None = None) -> tuple[str, str]:
    """(sessions table, layout): the table asked for (option, then AGENTCTL_AGNO_TABLE),
    or the only one there is (one with runs preferred); SchemaError otherwise."""
    asked = asked or os.environ.get("AGENTCTL_AGNO_TABLE", "").strip() or None
    found = candidates(tables)
    if asked:
        if asked not in found:
            raise SchemaError(f"no Agno sessions table {asked!r} here (found: {', '.join(found) or 'none'})")
        return asked, layout(tables, asked)
    usable = []
    for t in found:
        try:
            usable.append((t, layout(tables, t)))
        except SchemaError:
            continue
    if not usable:
        raise SchemaError(
            "no Agno session tables here (want a table with columns "
            + ", ".join(SESSION_COLUMNS)
            + " and its runs)"
        )
    if len(usable) > 1:
        raise SchemaError(
            "several Agno session tables here: "
            + ", ".join(t for t, _ in usable)
            + "; choose one with AGENTCTL_AGNO_TABLE=SESSIONS_TABLE"
        )
    return usable[0]


def _matches(tables: Mapping[str, set[str]]) -> bool:
    try:
        choose(tables)
    except SchemaError:
        return bool(candidates(tables)) and len(candidates(tables)) > 1
    return True


FORMAT = FormatSpec(
    name="agno",
    title="Agno sessions",
    description="SqliteDb / PostgresDb session and run tables (v3, v2 and migrated layouts): "
    "a session is a thread, each top-level run a step",
    capabilities=frozenset(
        {
            Capability.READ,
            Capability.SEARCH,
            Capability.FOLLOW,
            Capability.DOCTOR,
            Capability.BACKUP,
            Capability.STATS,
            Capability.COMPARE,
            Capability.REWIND,
            Capability.BRANCH,
            Capability.DELETE,
            Capability.UNDO,
            Capability.REDO,
            Capability.EDIT,
            Capability.RUN,
            Capability.PRUNE,
        }
    ),
    # backup: SQLite's online backup API
    dialects={Capability.BACKUP.value: ("sqlite",)},
    matches=_matches,
    store="agentctl.storage.agno.store:opener",
    history="agentctl.storage.agno.history:AgnoHistory",
    tables=("agno_sessions", "agno_runs"),
)
