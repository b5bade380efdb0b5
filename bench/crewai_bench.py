"""The CrewAI checkpoints bench (issue 37): a 100,000-checkpoint file as CrewAI's
SqliteProvider lays it out (JSONB `data`, a row per checkpoint, branches), then `threads
list`, `show` and `log` timed as whole processes (targets: < 0.3 s each), beside
`python -c pass` and the bundled AgentOS sample's `threads list` (the floor and a known
figure, on a machine shared with other jobs).

    python bench/crewai_bench.py [--db crewai100k.db] [--rows 100000] [--runs 7] [--index]

The file is made once (kept; `--rebuild` makes it again): one `main` branch with a fresh
kickoff root every 5 rows, and forks of 500 rows each taking the rest (`fork/<id>_<6hex>`),
each row's `data` a flow's runtime state about 3 KB long, written with agentctl's JSONB
encoder (what SQLite's jsonb() writes), so no SQLite 3.45 is needed."""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentctl.storage.sql import jsonb  # noqa: E402

DDL = (
    "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, parent_id TEXT, "
    "branch TEXT NOT NULL DEFAULT 'main', data JSONB NOT NULL)"
)


def data(i: int, parent: str | None, branch: str) -> bytes:
    methods = ["plan", "book", "report", "review", "send"][: i % 5 + 1]
    events = {
        f"ev-{i}-{k}": {
            "event": {
                "type": "method_execution_finished",
                "method_name": m,
                "timestamp": "2026-12-06T19:40:22.000000Z",
                "emission_sequence": k,
            },
            "edges": {"parent": [f"ev-{i}-0"]},
        }
        for k, m in enumerate(methods)
    }
    value = {
        "crewai_version": "1.15.30",
        "parent_id": parent,
        "branch": branch,
        "entities": [
            {
                "entity_type": "flow",
                "name": None,
                "max_method_calls": 100,
                "checkpoint_completed_methods": methods,
                "checkpoint_method_outputs": [
                    {"method": m, "output": f"{m} done for trip {i}" * 3} for m in methods
                ],
                "checkpoint_method_counts": {m: 1 for m in methods},
                "checkpoint_state": {
                    "id": f"flow-{i // 5}",
                    "city": f"city {i % 97}",
                    "steps": methods,
                    "note": "x" * 300,
                },
            }
        ],
        "event_record": {"nodes": events},
    }
    return jsonb.encode(value)


def build(db: str, rows: int) -> None:
    if os.path.exists(db):
        os.remove(db)
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(DDL)
    main_rows = rows // 2
    batch = []
    prev: str | None = None
    ids: list[str] = []
    for i in range(rows):
        ts = time.strftime("%Y%m%dT%H%M%S", time.gmtime(1_780_000_000 + i))
        cid = f"{ts}_{i:08x}"
        if i < main_rows:
            branch = "main"
            parent = None if i % 5 == 0 else prev
        else:
            k = (i - main_rows) // 500
            branch = f"fork/{ids[k * 37 % main_rows]}_{k:06x}"
            parent = ids[k * 37 % main_rows] if (i - main_rows) % 500 == 0 else prev
        batch.append((cid, ts, parent, branch, data(i, parent, branch)))
        ids.append(cid)
        prev = cid
        if len(batch) == 2000:
            con.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)", batch)
            batch.clear()
    con.executemany("INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)", batch)
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def timed(argv: list[str], runs: int) -> tuple[float, float, float]:
    """(median wall seconds, min wall, median CPU seconds: user + system, which a machine
    shared with other jobs inflates less than the wall clock)."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    walls, cpus = [], []
    for n in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        took = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {r.stderr.strip()}")
        if n:  # the first run warms the page cache
            walls.append(took)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), min(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="crewai100k.db")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--index", action="store_true", help="add the branch index (doctor --fix-indexes) first")
    args = ap.parse_args()
    if args.rebuild or not os.path.exists(args.db):
        start = time.perf_counter()
        build(args.db, args.rows)
        print(
            f"built {args.db}: {args.rows} rows, {os.path.getsize(args.db) / 1e6:.0f} MB, "
            f"{time.perf_counter() - start:.1f} s"
        )
    if args.index:  # what `agentctl doctor --fix-indexes` creates
        con = sqlite3.connect(args.db)
        con.execute("CREATE INDEX IF NOT EXISTS agentctl_checkpoints_branch ON checkpoints(branch)")
        con.close()
    ac = [sys.executable, "-m", "agentctl", "--db", args.db]
    sample = [sys.executable, "-m", "agentctl", "--db", str(REPO / "sample_db" / "checkpoints.db")]
    for name, argv in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("sample threads", sample + ["threads", "list"]),
        ("threads list", ac + ["threads", "list"]),
        ("show main", ac + ["show", "main"]),
        ("show main~100", ac + ["show", "main~100"]),
        ("log main", ac + ["log", "main"]),
    ):
        med, low, cpu = timed(argv, args.runs)
        print(f"{name:16} wall median {med:.3f} s  min {low:.3f} s  CPU median {cpu:.3f} s")


if __name__ == "__main__":
    main()
