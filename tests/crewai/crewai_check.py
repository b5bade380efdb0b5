"""CrewAI's own view of a file agentctl wrote (run in the CrewAI rig's venv by the tests):

    python crewai_check.py DB list                 crewai_cli's listing of a checkpoints file
    python crewai_check.py DB resume ID [FLOW]     FLOW.from_checkpoint(DB#ID) (TripFlow): the
                                                   restored state, then a kickoff and the rows it wrote
    python crewai_check.py DB load UUID            SQLiteFlowPersistence.load_state(UUID)
    python crewai_check.py DB continue UUID        kickoff(inputs={"id": UUID}) of the @persist flow

Each prints one JSON value on its last line."""

from __future__ import annotations

import sys

import pysqlite3.dbapi2 as _sqlite

sys.modules["sqlite3"] = _sqlite

import json  # noqa: E402

DB, WHAT, ARG = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else None)


def rows() -> list[list]:
    con = _sqlite.connect(DB)
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


if WHAT == "list":
    from crewai_cli.checkpoint_cli import _info_sqlite_latest, _list_sqlite

    latest = _info_sqlite_latest(DB)
    out = {
        "list": _list_sqlite(DB),
        "latest": latest and {k: latest.get(k) for k in ("name", "branch", "parent_id")},
    }
    print(json.dumps(out, default=str))
elif WHAT == "resume":
    import crewai_rig_flows
    from crewai.state.checkpoint_config import CheckpointConfig
    from crewai.state.provider.sqlite_provider import SqliteProvider
    from crewai_rig_flows import CKPT_EVENTS

    def cfg(**kw):
        return CheckpointConfig(location=DB, provider=SqliteProvider(), on_events=CKPT_EVENTS, **kw)

    cls = getattr(crewai_rig_flows, sys.argv[4] if len(sys.argv) > 4 else "TripFlow")
    flow = cls.from_checkpoint(cfg(restore_from=f"{DB}#{ARG}"))
    restored = {"state": flow.state.model_dump(), "completed": sorted(flow._completed_methods)}
    before = len(rows())
    flow.checkpoint = cfg()
    result = flow.kickoff()
    print(
        json.dumps(
            {
                "restored": restored,
                "result": result,
                "final": flow.state.model_dump(),
                "written": rows()[before:],
            }
        )
    )
elif WHAT in ("load", "continue"):
    from crewai.flow.persistence.sqlite import SQLiteFlowPersistence

    if WHAT == "load":
        print(json.dumps(SQLiteFlowPersistence(DB).load_state(ARG)))
    else:
        from crewai_rig_flows import PersistedTrip

        flow = PersistedTrip(persistence=SQLiteFlowPersistence(DB))
        flow.kickoff(inputs={"id": ARG})
        print(json.dumps(flow.state.model_dump()))
