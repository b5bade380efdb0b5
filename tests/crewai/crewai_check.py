"""CrewAI's own view of a file agentctl wrote (run in the CrewAI rig's venv by the tests):

    python crewai_check.py DB list                 crewai_cli's listing of a checkpoints file
    python crewai_check.py DB resume ID [FLOW]     FLOW.from_checkpoint(DB#ID) (TripFlow): the
                                                   restored state, then a kickoff and the rows it wrote
    python crewai_check.py DB load UUID            SQLiteFlowPersistence.load_state(UUID)
    python crewai_check.py DB states UUID...       load_state of each UUID: {uuid: state}
    python crewai_check.py DB continue UUID        kickoff(inputs={"id": UUID}) of the @persist flow
    python crewai_check.py DB tasks                KickoffTaskOutputsSQLiteStorage(DB).load()
    python crewai_check.py DB query SQL            the rows of SQL run by CrewAI's SQLite (json(data))

Each prints one JSON value on its last line.

    python crewai_check.py --serve

imports crewai once and answers requests, one JSON line each on stdin: {"argv": [DB, WHAT,
...], "cwd": DIR}, with one JSON line on stdout: {"ok": value} or {"error": traceback}
(what CrewAI prints goes to stderr). Each request makes its own flows and persistence
objects and waits for CrewAI's event handlers (its checkpoint listener's writes) before
answering: no request sees another's state (tests/support/crewairig.py's `crewai_check`)."""

from __future__ import annotations

import sys

import pysqlite3.dbapi2 as _sqlite

sys.modules["sqlite3"] = _sqlite

import json  # noqa: E402
import os  # noqa: E402
from typing import Any  # noqa: E402


def rows(db: str) -> list[list]:
    con = _sqlite.connect(db)
    try:
        return [
            [r[0], r[1], r[2]]
            for r in con.execute(
                "SELECT id, json_extract(json(data), '$.branch'), json_extract(json(data), '$.parent_id') "
                "FROM checkpoints ORDER BY rowid"
            )
        ]
    finally:
        con.close()


def check(db: str, what: str, *args: str) -> Any:
    """One command's JSON value."""
    arg = args[0] if args else None
    if what == "list":
        from crewai_cli.checkpoint_cli import _info_sqlite_latest, _list_sqlite

        latest = _info_sqlite_latest(db)
        return json.loads(
            json.dumps(
                {
                    "list": _list_sqlite(db),
                    "latest": latest and {k: latest.get(k) for k in ("name", "branch", "parent_id")},
                },
                default=str,
            )
        )
    if what == "resume":
        import crewai_rig_flows
        from crewai.state.checkpoint_config import CheckpointConfig
        from crewai.state.provider.sqlite_provider import SqliteProvider
        from crewai_rig_flows import CKPT_EVENTS

        def cfg(**kw):
            return CheckpointConfig(location=db, provider=SqliteProvider(), on_events=CKPT_EVENTS, **kw)

        cls = getattr(crewai_rig_flows, args[1] if len(args) > 1 else "TripFlow")
        flow = cls.from_checkpoint(cfg(restore_from=f"{db}#{arg}"))
        restored = {"state": flow.state.model_dump(), "completed": sorted(flow._completed_methods)}
        before = len(rows(db))
        flow.checkpoint = cfg()
        result = flow.kickoff()
        flush()
        return {
            "restored": restored,
            "result": result,
            "final": flow.state.model_dump(),
            "written": rows(db)[before:],
        }
    if what in ("load", "states"):
        from crewai.flow.persistence.sqlite import SQLiteFlowPersistence

        persistence = SQLiteFlowPersistence(db)
        if what == "load":
            return persistence.load_state(arg)
        return {u: persistence.load_state(u) for u in args}
    if what == "continue":
        from crewai.flow.persistence.sqlite import SQLiteFlowPersistence
        from crewai_rig_flows import PersistedTrip

        flow = PersistedTrip(persistence=SQLiteFlowPersistence(db))
        flow.kickoff(inputs={"id": arg})
        flush()
        return flow.state.model_dump()
    if what == "tasks":
        from crewai.memory.storage.kickoff_task_outputs_storage import KickoffTaskOutputsSQLiteStorage

        return json.loads(json.dumps(KickoffTaskOutputsSQLiteStorage(db).load(), default=str))
    if what == "query":
        con = _sqlite.connect(db)
        try:
            return [list(r) for r in con.execute(arg)]
        finally:
            con.close()
    raise SystemExit(f"crewai_check.py: no command {what!r}")


def flush() -> None:
    """Wait for CrewAI's event handlers (the checkpoint listener's writes on its threads)."""
    from crewai.events.event_bus import crewai_event_bus

    crewai_event_bus.flush()


def serve() -> None:
    import gc
    import traceback

    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # CrewAI's panels and prints: to stderr, not among the answers
    sys.stdout = sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        os.chdir(request["cwd"])
        os.environ["CREWAI_STORAGE_DIR"] = os.path.join(request["cwd"], "storage")
        try:
            answer = {"ok": check(*request["argv"])}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        try:
            flush()
        finally:
            gc.collect()  # no connection of this request's left open
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(check(*sys.argv[1:])))
