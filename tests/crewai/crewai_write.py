"""Write the CrewAI fixture files with the real crewai (run in the CrewAI rig's venv by
tests/support/crewairig.py; a current SQLite swapped in for sqlite3 first).

    python crewai_write.py OUT_DIR

writes OUT_DIR/checkpoints.db (flow checkpoints: two fresh kickoffs on main, a run resumed
from a checkpoint of the first, a fork branch), OUT_DIR/flow_states.db (@persist: two
flows, the first kicked off again with its id) and OUT_DIR/latest_kickoff_task_outputs.db
(a two-task crew with a scripted model), OUT_DIR/crew_checkpoints.db (that crew's
checkpoints), OUT_DIR/routes.db (a @router flow's, listeners on or_ and and_), and prints a JSON summary on stdout's last line.
"""

from __future__ import annotations

import sys

import pysqlite3.dbapi2 as _sqlite  # CrewAI needs SQLite >= 3.45 (jsonb)

sys.modules["sqlite3"] = _sqlite

import json  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

OUT = Path(sys.argv[1]).resolve()
OUT.mkdir(parents=True, exist_ok=True)
os.environ["CREWAI_STORAGE_DIR"] = str(OUT / "storage")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai.flow.persistence.sqlite import SQLiteFlowPersistence  # noqa: E402
from crewai.memory.storage.kickoff_task_outputs_storage import KickoffTaskOutputsSQLiteStorage  # noqa: E402
from crewai.state.checkpoint_config import CheckpointConfig  # noqa: E402
from crewai.state.provider.sqlite_provider import SqliteProvider  # noqa: E402
from crewai_rig_flows import CKPT_EVENTS, PersistedTrip, RoutedTrip, TripFlow, make_crew  # noqa: E402

CK = str(OUT / "checkpoints.db")


def cfg(**kw):
    return CheckpointConfig(location=CK, provider=SqliteProvider(), on_events=CKPT_EVENTS, **kw)


def rows() -> list[tuple[str, str]]:
    con = _sqlite.connect(CK)
    try:
        return con.execute("SELECT id, branch FROM checkpoints ORDER BY rowid").fetchall()
    finally:
        con.close()


summary: dict = {}
TripFlow(checkpoint=cfg()).kickoff(inputs={"city": "Paris"})
first = rows()
summary["paris"] = [i for i, _ in first]
time.sleep(1.1)  # ids and created_at have one-second resolution
TripFlow(checkpoint=cfg()).kickoff(inputs={"city": "Rome", "note": "via Zürich"})
summary["rome"] = [i for i, _ in rows()[len(first) :]]
# a resumed run: the Paris run's first checkpoint, continued on main
before = len(rows())
TripFlow().kickoff(from_checkpoint=cfg(restore_from=f"{CK}#{summary['paris'][0]}"))
summary["resumed"] = [i for i, _ in rows()[before:]]
# a fork of the Rome run's second checkpoint
before = len(rows())
forked = TripFlow.fork(cfg(restore_from=f"{CK}#{summary['rome'][1]}"))
forked.checkpoint = cfg()  # as kickoff(from_checkpoint=...) sets it
forked.kickoff()
new = rows()[before:]
summary["fork"] = [i for i, _ in new]
summary["fork_branch"] = new[0][1] if new else None

# @persist: flow_states
FS = str(OUT / "flow_states.db")
p1 = PersistedTrip(persistence=SQLiteFlowPersistence(FS))
p1.kickoff(inputs={"city": "Oslo", "note": "zephyrine in Zürich"})
uid = p1.state.id
p2 = PersistedTrip(persistence=SQLiteFlowPersistence(FS))
p2.kickoff(inputs={"city": "Lima"})
p3 = PersistedTrip(persistence=SQLiteFlowPersistence(FS))
p3.kickoff(inputs={"id": uid})  # continues the Oslo flow from its newest row
summary["flows"] = [uid, p2.state.id]

# the replay store: a crew with a scripted model
RP = str(OUT / "latest_kickoff_task_outputs.db")
crew = make_crew()
crew._task_output_handler.storage = KickoffTaskOutputsSQLiteStorage(RP)
crew.kickoff(inputs={"topic": "zephyrine", "place": "Zürich"})
summary["tasks"] = [t["task_id"] for t in KickoffTaskOutputsSQLiteStorage(RP).load() or []]
# a flow with a @router and listeners on or_ and and_
RT = str(OUT / "routes.db")
RoutedTrip(
    checkpoint=CheckpointConfig(location=RT, provider=SqliteProvider(), on_events=CKPT_EVENTS)
).kickoff(inputs={"budget": 100})
con = _sqlite.connect(RT)
summary["routes"] = [r[0] for r in con.execute("SELECT id FROM checkpoints ORDER BY rowid")]
con.close()
# a crew's checkpoints (its agent's model a BaseLLM subclass: Crew.from_checkpoint cannot rebuild it)
CC = str(OUT / "crew_checkpoints.db")
crew = make_crew()
crew.checkpoint = CheckpointConfig(location=CC, provider=SqliteProvider(), on_events=["task_completed"])
crew.kickoff(inputs={"topic": "zephyrine"})
con = _sqlite.connect(CC)
summary["crew"] = [r[0] for r in con.execute("SELECT id FROM checkpoints ORDER BY rowid")]
con.close()
from crewai.events.event_bus import crewai_event_bus  # noqa: E402

crewai_event_bus.flush()  # (CrewAI's handlers done: every row written)
print(json.dumps(summary), flush=True)
os._exit(0)  # (the interpreter's teardown of crewai's modules takes seconds: nothing left to do)
